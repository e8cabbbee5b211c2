//! The HTTP/1.1 client: what Scrapy's `HTTP11DownloadHandler` does with Twisted's
//! `Agent` and `HTTPConnectionPool`, on trawl's reactor.
//!
//! One request, from [`HttpClient::request`] to its Deferred firing:
//!
//! 1. take an idle connection for `(scheme, host, port, proxy)` from the pool, or open
//!    one: resolve the host on the DNS threads, connect (trying each address), go
//!    through the proxy if any (`CONNECT` for https through an http or https proxy, the
//!    SOCKS5 handshake), wrap in TLS for https;
//! 2. write the request (absolute-form target for http through an http or https proxy,
//!    with `Proxy-Authorization` from the proxy URL's credentials);
//! 3. feed response bytes to [`ResponseParser`](crate::proto::http1::ResponseParser); on the head record `download_latency`,
//!    check the announced size against `maxsize` (cancelling before any body byte is
//!    read) and set up content decoding; stream body bytes through the decoder, checking
//!    `maxsize` on both the wire and the decoded size and warning once past `warnsize`;
//! 4. at the end, hand a reusable connection back to the pool *before* firing, so the
//!    callback's next request can take it.
//!
//! A timer on the reactor's clock bounds the whole download (`timeout`); cancelling the
//! Deferred aborts the connection. A reused idle connection that turns out dead before
//! any response byte is retried once on a fresh connection, for idempotent methods.
//!
//! The code is in three parts: this file (the client and its pool: which connection
//! carries a request, timeouts, cancellation, the dead-connection retry),
//! `connection.rs` (the exchange on one connection, over any `Transport`), and
//! `types.rs`. Connecting — DNS, addresses, proxy tunnels, TLS — is
//! [`crate::net::Connector`]'s; a test may replace it ([`HttpClient::with_connect`]) to
//! run the client over `StringTransport`s without a socket.

mod connection;
mod exchange;
mod types;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt;
use std::rc::{Rc, Weak};

use crate::defer::{CancelledError, Deferred, Failure};
use crate::net::dns::Resolver;
use crate::net::{
    Connector, ConnectorConfig, Endpoint, ProxyEndpoint, ProxyKind, TlsOptions, Transport,
};
use crate::proto::http1::Limits;
use crate::reactor::ReactorHandle;
use crate::util::SeededMap;
use connection::{Connection, Pool};
pub use exchange::proxy_authorization;
use exchange::{Ctx, PoolKey};

pub use crate::net::TunnelError;
pub use types::{
    BodyFile, ClientCounters, DownloadObserver, DownloadTimeout, HttpClientConfig, HttpRequest,
    HttpResponse, InvalidRequest, Observed, Observer, ResponseTooLarge,
};

/// Opens a transport to an endpoint (the [`Connector`] by default).
pub type ConnectFn = Rc<dyn Fn(&Endpoint) -> Deferred<Rc<dyn Transport>>>;

struct Inner {
    reactor: ReactorHandle,
    config: HttpClientConfig,
    connector: Connector,
    connect: ConnectFn,
    /// Idle connections by origin (and proxy): keyed by names from the network, so
    /// hashed with a per-process, per-map seed ([`SeededMap`]).
    idle: RefCell<SeededMap<PoolKey, Vec<Rc<Connection>>>>,
    /// Every idle connection by when it went idle (its `idle_seq`): the first is
    /// closed when more than `max_idle_total` are idle.
    idle_order: RefCell<BTreeMap<u64, Weak<Connection>>>,
    /// The last `idle_seq` handed out.
    idle_seq: Cell<u64>,
    counters: Cell<ClientCounters>,
    /// The out-of-descriptors warning was logged.
    fd_warned: Cell<bool>,
    me: Weak<Inner>,
}

impl Pool for Inner {
    fn seconds(&self) -> f64 {
        self.reactor.seconds()
    }

    fn limits(&self) -> Limits {
        self.config.limits
    }

    fn put_idle(&self, conn: Rc<Connection>) {
        Inner::put_idle(self, conn);
    }

    fn forget_idle(&self, conn: &Rc<Connection>) {
        Inner::forget_idle(self, conn);
    }

    fn retry(&self, ctx: Rc<Ctx>) {
        self.count(|c| c.retries += 1);
        self.dispatch(ctx, false);
    }

    fn tls_handshake(&self, resumed: bool) {
        self.count(|c| {
            c.tls_handshakes += 1;
            c.tls_resumed += u64::from(resumed);
        });
    }
}

/// The HTTP/1.1 client. Cheap to clone.
#[derive(Clone)]
pub struct HttpClient {
    inner: Rc<Inner>,
}

impl HttpClient {
    /// A client on `reactor`, connecting through a [`Connector`].
    pub fn new(reactor: &ReactorHandle, config: HttpClientConfig) -> Self {
        Self::build(reactor, config, None)
    }

    /// A client whose connections come from `connect` (a test double, for instance
    /// handing out `StringTransport`s).
    pub fn with_connect(
        reactor: &ReactorHandle,
        config: HttpClientConfig,
        connect: ConnectFn,
    ) -> Self {
        Self::build(reactor, config, Some(connect))
    }

    fn build(
        reactor: &ReactorHandle,
        config: HttpClientConfig,
        connect: Option<ConnectFn>,
    ) -> Self {
        let connector = Connector::new(
            reactor,
            ConnectorConfig {
                tls_verify: config.tls_verify.clone(),
                tls_no_verify: config.tls_no_verify.clone(),
                connect_timeout: 0.0,
                resolver: config.resolver.clone(),
            },
        );
        let connect = connect.unwrap_or_else(|| {
            let c = connector.clone();
            Rc::new(move |e: &Endpoint| c.connect(e))
        });
        Self {
            inner: Rc::new_cyclic(|me| Inner {
                reactor: reactor.clone(),
                config,
                connector,
                connect,
                idle: RefCell::new(SeededMap::default()),
                idle_order: RefCell::new(BTreeMap::new()),
                idle_seq: Cell::new(0),
                counters: Cell::new(ClientCounters::default()),
                fd_warned: Cell::new(false),
                me: me.clone(),
            }),
        }
    }

    /// Starts a download; the Deferred fires with the response or fails with
    /// [`DownloadTimeout`], [`ResponseTooLarge`], [`HttpError`](crate::proto::http1::HttpError),
    /// [`DecodeError`](crate::proto::decode::DecodeError),
    /// [`crate::net::tcp::ConnectError`], [`crate::net::dns::DnsLookupError`],
    /// [`crate::net::tcp::TlsError`], [`ConnectionLost`](crate::net::ConnectionLost) or [`InvalidRequest`].
    /// Cancelling it aborts the download and closes its connection.
    pub fn request(&self, req: HttpRequest) -> Deferred<HttpResponse> {
        let inner = &self.inner;
        inner.count(|c| c.requests += 1);
        let key = match pool_key(&req) {
            Ok(k) => k,
            Err(e) => return crate::defer::fail(e),
        };
        // The canceller reaches the transfer through a weak reference made with it.
        let ctx = Rc::new_cyclic(|me: &Weak<Ctx>| {
            let me = me.clone();
            let d = Deferred::with_canceller(move |_: &Deferred<HttpResponse>| {
                if let Some(ctx) = me.upgrade() {
                    ctx.fail(Failure::new(CancelledError));
                }
            });
            Ctx {
                req,
                key,
                result: d,
                done: Cell::new(false),
                timer: RefCell::new(None),
                conn: RefCell::new(None),
                connecting: RefCell::new(None),
                retried: Cell::new(false),
                fd_waits: Cell::new(0),
            }
        });
        let result = ctx.result.clone();
        let timeout = ctx.req.timeout;
        if timeout > 0.0 && timeout.is_finite() {
            let weak = Rc::downgrade(&ctx);
            let call = inner.reactor.call_later(timeout, move || {
                if let Some(ctx) = weak.upgrade() {
                    ctx.fail(Failure::new(DownloadTimeout::new(ctx.url(), timeout)));
                }
            });
            *ctx.timer.borrow_mut() = Some(call);
        }
        inner.dispatch(ctx, true);
        result
    }

    /// Closes every idle connection.
    pub fn close_idle(&self) {
        for conn in self.inner.take_all_idle() {
            conn.close();
        }
    }

    /// Idle connections currently pooled.
    pub fn idle_connections(&self) -> usize {
        self.inner.idle.borrow().values().map(Vec::len).sum()
    }

    /// Counters since creation.
    pub fn counters(&self) -> ClientCounters {
        self.inner.counters.get()
    }

    /// Connection attempts that waited for a file descriptor (EMFILE/ENFILE).
    pub fn fd_exhausted_waits(&self) -> u64 {
        self.inner.counters.get().fd_exhausted_waits
    }

    /// The DNS resolver this client uses.
    pub fn resolver(&self) -> &Resolver {
        self.inner.connector.resolver()
    }
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient")
            .field("counters", &self.counters())
            .field("idle", &self.idle_connections())
            .finish()
    }
}

fn pool_key(req: &HttpRequest) -> Result<PoolKey, Failure> {
    let https = match req.url.scheme() {
        "http" => false,
        "https" => true,
        other => {
            return Err(Failure::new(InvalidRequest(format!(
                "unsupported URL scheme {other:?}"
            ))));
        }
    };
    let host = req
        .url
        .host_str()
        .ok_or_else(|| Failure::new(InvalidRequest(format!("no host in {}", req.url))))?
        .to_ascii_lowercase();
    let port = req
        .url
        .port_or_known_default()
        .ok_or_else(|| Failure::new(InvalidRequest(format!("no port for {}", req.url))))?;
    let proxy = match &req.proxy {
        Some(p) if ProxyKind::from_scheme(p.scheme()).is_none() => {
            return Err(Failure::new(InvalidRequest(format!(
                "unsupported proxy scheme {:?} (http, https, socks5 and socks5h proxies)",
                p.scheme()
            ))));
        }
        Some(p) => Some(p.as_str().to_owned()),
        None => None,
    };
    Ok(PoolKey {
        https,
        host,
        port,
        proxy,
        bind: req.bind_address,
    })
}

impl Inner {
    fn count(&self, f: impl FnOnce(&mut ClientCounters)) {
        let mut c = self.counters.get();
        f(&mut c);
        self.counters.set(c);
    }

    /// Sends `ctx` on a pooled connection if one is idle (and `may_reuse`), else opens one.
    fn dispatch(&self, ctx: Rc<Ctx>, may_reuse: bool) {
        if may_reuse {
            let conn = {
                let mut idle = self.idle.borrow_mut();
                let list = idle.get_mut(&ctx.key);
                let mut found = None;
                if let Some(list) = list {
                    while let Some(c) = list.pop() {
                        self.unlist(&c);
                        if !c.transport.is_closed() {
                            found = Some(c);
                            break;
                        }
                    }
                }
                found
            };
            if let Some(conn) = conn {
                conn.cancel_idle_timer();
                self.count(|c| c.reused += 1);
                conn.send(ctx, true);
                return;
            }
        }
        self.open(ctx);
    }

    fn open(&self, ctx: Rc<Ctx>) {
        let proxy = match &ctx.req.proxy {
            Some(p) => match (
                ProxyKind::from_scheme(p.scheme()),
                p.host_str(),
                // SOCKS's port, 1080, is not one the url crate knows.
                p.port_or_known_default()
                    .or_else(|| p.scheme().starts_with("socks").then_some(1080)),
            ) {
                (Some(kind), Some(h), Some(port)) => Some(ProxyEndpoint {
                    kind,
                    host: h.trim_start_matches('[').trim_end_matches(']').to_owned(),
                    port,
                    verify: ctx.req.verify_tls,
                    // Credentials for the proxy: the proxy URL's user info, else a
                    // `Proxy-Authorization` header on the request (the proxy
                    // middleware moves URL credentials there). They go in the CONNECT
                    // only, never through the tunnel.
                    authorization: proxy_authorization(p).or_else(|| {
                        ctx.req
                            .headers
                            .get_str("proxy-authorization")
                            .map(str::to_owned)
                    }),
                }),
                _ => {
                    ctx.fail(Failure::new(InvalidRequest(format!("bad proxy URL {p}"))));
                    return;
                }
            },
            None => None,
        };
        let endpoint = Endpoint {
            host: ctx.key.host.clone(),
            port: ctx.key.port,
            tls: ctx.key.https.then_some(TlsOptions {
                verify: ctx.req.verify_tls,
            }),
            proxy,
            bind: ctx.key.bind,
        };
        let Some(me) = self.me.upgrade() else { return };
        let connecting = (self.connect)(&endpoint);
        *ctx.connecting.borrow_mut() = Some(Box::new(connecting.clone()));
        let c = ctx.clone();
        let _chain: Deferred<()> = connecting.then(move |r| {
            c.connecting.borrow_mut().take();
            match r {
                Ok(transport) => {
                    me.count(|k| k.connections += 1);
                    if c.done.get() {
                        transport.abort_connection();
                    } else {
                        let pool: Weak<dyn Pool> = Rc::downgrade(&me) as Weak<dyn Pool>;
                        let conn = Connection::new(pool, transport, c.key.clone());
                        conn.send(c, false);
                    }
                }
                Err(f) if f.check::<crate::net::tcp::DescriptorsExhausted>() && !c.done.get() => {
                    me.wait_for_descriptor(c, &f);
                }
                Err(f) => c.fail(f),
            }
            Ok(())
        });
    }

    /// Out of file descriptors: backpressure, not a failure. Idle pooled connections
    /// hold descriptors nobody uses, so they are closed; the request goes back to the
    /// pool after a short, growing pause (a connection of its own host may have come
    /// back meanwhile). Its download timeout still runs.
    fn wait_for_descriptor(&self, ctx: Rc<Ctx>, failure: &Failure) {
        self.count(|k| k.fd_exhausted_waits += 1);
        if !self.fd_warned.replace(true) {
            log::warn!(
                "Out of file descriptors ({failure}): requests wait for one to free \
                 (raise `ulimit -n` or lower CONCURRENT_REQUESTS)"
            );
        }
        for conn in self.take_all_idle() {
            conn.close();
        }
        let n = ctx.fd_waits.get();
        ctx.fd_waits.set(n.saturating_add(1));
        let delay = (0.01 * f64::from(1u32 << n.min(7))).min(1.0);
        let me = self.me.clone();
        let c = ctx.clone();
        let call = self.reactor.clock().call_later(delay, move || {
            if let Some(me) = me.upgrade()
                && !c.done.get()
            {
                me.dispatch(c, true);
            }
        });
        *ctx.connecting.borrow_mut() = Some(Box::new(call));
    }

    fn put_idle(&self, conn: Rc<Connection>) {
        let max = self.config.max_idle_per_key;
        let accepted = {
            let mut idle = self.idle.borrow_mut();
            // The key is copied only for a key with no idle list yet.
            match idle.get_mut(&conn.key) {
                Some(list) if list.len() >= max => false,
                Some(list) => {
                    list.push(conn.clone());
                    true
                }
                None if max == 0 => false,
                None => {
                    idle.insert(conn.key.clone(), vec![conn.clone()]);
                    true
                }
            }
        };
        if !accepted {
            conn.close();
            return;
        }
        let seq = self.idle_seq.get() + 1;
        self.idle_seq.set(seq);
        conn.idle_seq.set(seq);
        let over = {
            let mut order = self.idle_order.borrow_mut();
            order.insert(seq, Rc::downgrade(&conn));
            let max = self.config.max_idle_total;
            if max > 0 && order.len() > max {
                order.pop_first().map(|(_, oldest)| oldest)
            } else {
                None
            }
        };
        // The connection idle the longest makes room (closed outside the borrow).
        if let Some(oldest) = over.and_then(|w| w.upgrade()) {
            oldest.idle_seq.set(0);
            self.forget_idle(&oldest);
            oldest.close();
            self.count(|c| c.idle_evicted += 1);
        }
        let weak = Rc::downgrade(&conn);
        let me = self.me.clone();
        let call = self.reactor.call_later(self.config.idle_timeout, move || {
            if let (Some(conn), Some(client)) = (weak.upgrade(), me.upgrade()) {
                client.forget_idle(&conn);
                conn.close();
            }
        });
        *conn.idle_timer.borrow_mut() = Some(call);
    }

    /// Takes `conn` out of the idle order.
    fn unlist(&self, conn: &Connection) {
        let seq = conn.idle_seq.replace(0);
        if seq != 0 {
            self.idle_order.borrow_mut().remove(&seq);
        }
    }

    /// Every idle connection, out of the pool.
    fn take_all_idle(&self) -> Vec<Rc<Connection>> {
        self.idle_order.borrow_mut().clear();
        let all: Vec<Rc<Connection>> = self
            .idle
            .borrow_mut()
            .drain()
            .flat_map(|(_, v)| v)
            .collect();
        for conn in &all {
            conn.idle_seq.set(0);
        }
        all
    }

    fn forget_idle(&self, conn: &Rc<Connection>) {
        self.unlist(conn);
        let mut idle = self.idle.borrow_mut();
        if let Some(list) = idle.get_mut(&conn.key) {
            list.retain(|c| !Rc::ptr_eq(c, conn));
            if list.is_empty() {
                idle.remove(&conn.key);
            }
        }
    }
}
