//! The metrics endpoint's HTTP server: one request per connection (`Connection: close`),
//! a head over 16 KiB refused, an optional bearer token checked in constant time, the
//! answer from an [`Endpoint`].

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use crate::defer::Failure;
use crate::net::{Protocol, Transport};

/// The largest request head accepted.
const MAX_HEAD: usize = 16 * 1024;

/// What answers a request: status, content type, body.
pub(super) trait Endpoint {
    /// The answer to one request head.
    fn answer(&self, head: &httparse::Request<'_, '_>) -> (u16, &'static str, Vec<u8>);
}

/// Whether the request carries `token` (`Authorization: Bearer` or `?token=`); every
/// request is authorized without one.
pub(super) fn authorized(head: &httparse::Request<'_, '_>, token: Option<&str>) -> bool {
    let Some(token) = token else {
        return true;
    };
    let bearer = head
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("authorization"))
        .and_then(|h| std::str::from_utf8(h.value).ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|v| constant_time_eq(v.trim().as_bytes(), token.as_bytes()));
    let query = head
        .path
        .and_then(|p| p.split_once('?'))
        .is_some_and(|(_, q)| {
            url::form_urlencoded::parse(q.as_bytes())
                .any(|(k, v)| k == "token" && constant_time_eq(v.as_bytes(), token.as_bytes()))
        });
    bearer || query
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// One connection: read a request head, answer, close.
pub(super) struct Conn {
    endpoint: Weak<dyn Endpoint>,
    buf: RefCell<Vec<u8>>,
    transport: RefCell<Option<Rc<dyn Transport>>>,
    done: Cell<bool>,
}

impl Conn {
    /// A connection that `endpoint` answers.
    pub(super) fn new(endpoint: Weak<dyn Endpoint>) -> Rc<Self> {
        Rc::new(Self {
            endpoint,
            buf: RefCell::new(Vec::new()),
            transport: RefCell::new(None),
            done: Cell::new(false),
        })
    }

    fn reply(&self, status: u16, content_type: &str, body: &[u8], head_only: bool) {
        let reason = crate::proto::http1::reason_phrase(status).unwrap_or("");
        let mut out = format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
             Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        if !head_only {
            out.extend_from_slice(body);
        }
        let transport = self.transport.borrow().clone();
        if let Some(t) = transport {
            t.write(&out);
            t.lose_connection();
        }
        self.done.set(true);
    }
}

impl Protocol for Conn {
    fn connection_made(&self, transport: Rc<dyn Transport>) {
        *self.transport.borrow_mut() = Some(transport);
    }

    fn data_received(&self, data: &[u8]) {
        if self.done.get() {
            return;
        }
        let answer = {
            let mut buf = self.buf.borrow_mut();
            buf.extend_from_slice(data);
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut req = httparse::Request::new(&mut headers);
            match req.parse(&buf) {
                Ok(httparse::Status::Complete(_)) => {
                    let head_only = req.method == Some("HEAD");
                    match self.endpoint.upgrade() {
                        Some(m) => {
                            let (status, ct, body) = m.answer(&req);
                            Some((status, ct, body, head_only))
                        }
                        None => Some((503, "text/plain", b"closing\n".to_vec(), false)),
                    }
                }
                Ok(httparse::Status::Partial) if buf.len() <= MAX_HEAD => None,
                Ok(httparse::Status::Partial) => Some((
                    431,
                    "text/plain",
                    b"request head too large\n".to_vec(),
                    false,
                )),
                Err(e) => Some((
                    400,
                    "text/plain",
                    format!("bad request: {e}\n").into_bytes(),
                    false,
                )),
            }
        };
        if let Some((status, ct, body, head_only)) = answer {
            self.reply(status, ct, &body, head_only);
        }
    }

    fn connection_lost(&self, _reason: Failure) {
        self.transport.borrow_mut().take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_in_constant_time() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
