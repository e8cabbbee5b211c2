//! One request in flight ([`Ctx`]): what its timer, its canceller and the connection
//! carrying it share; the pool key it is sent under; the proxy credentials it carries.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use url::Url;

use super::types::{HttpRequest, HttpResponse};
use crate::defer::{Deferred, Failure};
use crate::reactor::DelayedCall;

/// Where a request may be sent again: scheme, host, port, proxy and the local
/// address it leaves from.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub(super) struct PoolKey {
    pub(super) https: bool,
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) proxy: Option<String>,
    pub(super) bind: Option<std::net::SocketAddr>,
}

/// `Basic` credentials from a proxy URL's user info (percent-decoded), if it has any.
pub fn proxy_authorization(proxy: &Url) -> Option<String> {
    if proxy.username().is_empty() && proxy.password().is_none() {
        return None;
    }
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    let credentials = format!(
        "{}:{}",
        decode(proxy.username()),
        decode(proxy.password().unwrap_or(""))
    );
    Some(format!(
        "Basic {}",
        crate::util::base64_encode(credentials.as_bytes())
    ))
}

/// Per-request state shared by the timer, the canceller and the connection.
pub(super) struct Ctx {
    pub(super) req: HttpRequest,
    pub(super) key: PoolKey,
    pub(super) result: Deferred<HttpResponse>,
    pub(super) done: Cell<bool>,
    pub(super) timer: RefCell<Option<DelayedCall>>,
    /// The connection carrying it, to abort (a [`Connection`](super::connection::Connection)).
    pub(super) conn: RefCell<Option<Rc<dyn Cancel>>>,
    pub(super) connecting: RefCell<Option<Box<dyn Cancel>>>,
    pub(super) retried: Cell<bool>,
    /// Times this request waited for a file descriptor.
    pub(super) fd_waits: Cell<u32>,
}

pub(super) trait Cancel {
    /// Stops it.
    fn cancel(&self);
}

impl<T: 'static> Cancel for Deferred<T> {
    fn cancel(&self) {
        Deferred::cancel(self);
    }
}

impl Cancel for DelayedCall {
    fn cancel(&self) {
        let _ = DelayedCall::cancel(self);
    }
}

impl Ctx {
    pub(super) fn finish(&self) -> bool {
        if self.done.replace(true) {
            return false;
        }
        if let Some(t) = self.timer.borrow_mut().take() {
            let _ = t.cancel();
        }
        true
    }

    /// Fails the download, aborting whatever connection or connect attempt carries it.
    pub(super) fn fail(self: &Rc<Self>, failure: Failure) {
        if !self.finish() {
            return;
        }
        let connecting = self.connecting.borrow_mut().take();
        if let Some(c) = connecting {
            c.cancel();
        }
        let conn = self.conn.borrow_mut().take();
        if let Some(conn) = conn {
            conn.cancel();
        }
        let _ = self.result.errback(failure);
    }

    pub(super) fn succeed(self: &Rc<Self>, response: HttpResponse) {
        if !self.finish() {
            return;
        }
        self.conn.borrow_mut().take();
        let _ = self.result.callback(response);
    }

    pub(super) fn url(&self) -> String {
        self.req.url.as_str().to_owned()
    }
}
