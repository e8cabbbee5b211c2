//! The HTTP/1.1 client: what Scrapy's `HTTP11DownloadHandler` does with Twisted's
//! `Agent` and `HTTPConnectionPool`, on trawl's reactor.
//!
//! One request, from [`HttpClient::request`] to its Deferred firing:
//!
//! 1. take an idle connection for `(scheme, host, port, proxy)` from the pool, or open
//!    one: resolve the host on the DNS threads, connect (trying each address), send a
//!    `CONNECT` first when tunnelling https through a proxy, wrap in TLS for https;
//! 2. write the request (absolute-form target through a plain http proxy, with
//!    `Proxy-Authorization` from the proxy URL's credentials);
//! 3. feed response bytes to [`ResponseParser`]; on the head record `download_latency`,
//!    check the announced size against `maxsize` (cancelling before any body byte is
//!    read) and set up content decoding; stream body bytes through the decoder, checking
//!    `maxsize` on both the wire and the decoded size and warning once past `warnsize`;
//! 4. at the end, hand a reusable connection back to the pool *before* firing, so the
//!    callback's next request can take it.
//!
//! A timer on the reactor's clock bounds the whole download (`timeout`); cancelling the
//! Deferred aborts the connection. A reused idle connection that turns out dead before
//! any response byte is retried once on a fresh connection, for idempotent methods.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::rc::{Rc, Weak};
use std::sync::Arc;

use url::Url;

use crate::defer::{CancelledError, Deferred, Failure, TimeoutError};
use crate::net::dns::{Resolver, ResolverConfig};
use crate::net::tcp::{TcpTransport, connect_tcp};
use crate::net::{ConnectionLost, Protocol, Transport, tls};
use crate::proto::Headers;
use crate::proto::decode::{ContentDecoder, DecodeError, Encoding};
use crate::proto::http1::{Event, HttpError, Limits, ResponseHead, ResponseParser, encode_request};
use crate::reactor::{DelayedCall, ReactorHandle};

/// One request to send.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    /// The method, upper case.
    pub method: String,
    /// The URL (http or https; the fragment is never sent).
    pub url: Url,
    /// Headers to send, in order.
    pub headers: Headers,
    /// The body.
    pub body: Vec<u8>,
    /// Seconds the whole download may take (`DOWNLOAD_TIMEOUT`, meta `download_timeout`).
    pub timeout: f64,
    /// Largest response body, wire or decoded (`DOWNLOAD_MAXSIZE`; 0 = no limit).
    pub maxsize: u64,
    /// Body size past which a warning is logged once (`DOWNLOAD_WARNSIZE`; 0 = never).
    pub warnsize: u64,
    /// An `http://[user:pass@]host:port` proxy (meta `proxy`).
    pub proxy: Option<Url>,
    /// Verify the server's certificate (on unless a request or setting turns it off).
    pub verify_tls: bool,
    /// Decode `Content-Encoding` (gzip, deflate, br) and drop the header.
    pub decode_content: bool,
    /// Fail when the connection closes before the announced body is complete
    /// (`DOWNLOAD_FAIL_ON_DATALOSS`); otherwise return what arrived, flagged `dataloss`.
    pub fail_on_dataloss: bool,
}

impl HttpRequest {
    /// A GET with trawl's defaults: 180 s timeout, 1 GiB max size, 32 MiB warning size,
    /// verification on, decoding on.
    pub fn get(url: Url) -> Self {
        Self {
            method: "GET".into(),
            url,
            headers: Headers::new(),
            body: Vec::new(),
            timeout: 180.0,
            maxsize: 1024 * 1024 * 1024,
            warnsize: 32 * 1024 * 1024,
            proxy: None,
            verify_tls: true,
            decode_content: true,
            fail_on_dataloss: true,
        }
    }

    fn idempotent(&self) -> bool {
        matches!(
            self.method.as_str(),
            "GET" | "HEAD" | "PUT" | "DELETE" | "OPTIONS" | "TRACE"
        )
    }
}

/// A downloaded response.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    /// The URL requested.
    pub url: Url,
    /// Status code.
    pub status: u16,
    /// Reason phrase.
    pub reason: String,
    /// Headers (without `Content-Encoding` when the body was decoded).
    pub headers: Headers,
    /// The body, decoded.
    pub body: Vec<u8>,
    /// The server's (or proxy's) address.
    pub ip: Option<SocketAddr>,
    /// `"HTTP/1.1"` or `"HTTP/1.0"`.
    pub protocol: &'static str,
    /// Seconds from writing the request to receiving the response head.
    pub latency: f64,
    /// The `Content-Encoding` the body was decoded from, if any.
    pub decoded_from: Option<String>,
    /// Body bytes on the wire (before decoding).
    pub wire_bytes: u64,
    /// Whether the connection was reused from the pool.
    pub reused_connection: bool,
    /// Scrapy-style flags (`"dataloss"`).
    pub flags: Vec<&'static str>,
}

/// The body (wire or decoded) is larger than `maxsize`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseTooLarge {
    /// The URL.
    pub url: String,
    /// The size announced or reached.
    pub size: u64,
    /// The limit.
    pub limit: u64,
}

impl fmt::Display for ResponseTooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Cancelling download of {}: response size ({}) larger than download max size ({})",
            self.url, self.size, self.limit
        )
    }
}

impl std::error::Error for ResponseTooLarge {}

/// The request could not be sent as given (bad URL scheme, invalid header...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidRequest(pub String);

impl fmt::Display for InvalidRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid request: {}", self.0)
    }
}

impl std::error::Error for InvalidRequest {}

/// A proxy refused to open a tunnel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunnelError {
    /// The proxy's status code.
    pub status: u16,
    /// Its reason phrase.
    pub reason: String,
}

impl fmt::Display for TunnelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "could not open CONNECT tunnel with proxy: {} {}",
            self.status, self.reason
        )
    }
}

impl std::error::Error for TunnelError {}

/// Client configuration.
#[derive(Clone)]
pub struct HttpClientConfig {
    /// Idle connections kept per `(scheme, host, port, proxy)` (Scrapy uses
    /// `CONCURRENT_REQUESTS_PER_DOMAIN`, 8).
    pub max_idle_per_key: usize,
    /// Seconds an idle connection is kept (Twisted's pool: 240).
    pub idle_timeout: f64,
    /// TLS client config used when verifying (default: webpki roots).
    pub tls_verify: Arc<rustls::ClientConfig>,
    /// TLS client config used when verification is off.
    pub tls_no_verify: Arc<rustls::ClientConfig>,
    /// DNS settings.
    pub resolver: ResolverConfig,
    /// Response head limits.
    pub limits: Limits,
}

impl HttpClientConfig {
    /// Defaults with the Mozilla root set.
    ///
    /// # Errors
    ///
    /// The TLS provider refused the configuration.
    pub fn new() -> Result<Self, Failure> {
        Ok(Self {
            max_idle_per_key: 8,
            idle_timeout: 240.0,
            tls_verify: tls::client_config_webpki()?,
            tls_no_verify: tls::client_config_dangerous_no_verify()?,
            resolver: ResolverConfig::default(),
            limits: Limits::default(),
        })
    }
}

impl fmt::Debug for HttpClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClientConfig")
            .field("max_idle_per_key", &self.max_idle_per_key)
            .field("idle_timeout", &self.idle_timeout)
            .field("resolver", &self.resolver)
            .finish_non_exhaustive()
    }
}

/// Counters for tests, benchmarks and stats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCounters {
    /// Requests started.
    pub requests: u64,
    /// TCP connections opened.
    pub connections: u64,
    /// Requests sent on a pooled connection.
    pub reused: u64,
    /// Transparent retries after a dead pooled connection.
    pub retries: u64,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct PoolKey {
    https: bool,
    host: String,
    port: u16,
    proxy: Option<String>,
}

struct Inner {
    reactor: ReactorHandle,
    config: HttpClientConfig,
    resolver: Resolver,
    idle: RefCell<HashMap<PoolKey, Vec<Rc<Connection>>>>,
    counters: Cell<ClientCounters>,
    me: Weak<Inner>,
}

/// The HTTP/1.1 client. Cheap to clone.
#[derive(Clone)]
pub struct HttpClient {
    inner: Rc<Inner>,
}

impl HttpClient {
    /// A client on `reactor`.
    pub fn new(reactor: &ReactorHandle, config: HttpClientConfig) -> Self {
        let resolver = Resolver::new(reactor, config.resolver.clone());
        Self {
            inner: Rc::new_cyclic(|me| Inner {
                reactor: reactor.clone(),
                config,
                resolver,
                idle: RefCell::new(HashMap::new()),
                counters: Cell::new(ClientCounters::default()),
                me: me.clone(),
            }),
        }
    }

    /// Starts a download; the Deferred fires with the response or fails with
    /// [`TimeoutError`], [`ResponseTooLarge`], [`HttpError`], [`DecodeError`],
    /// [`crate::net::tcp::ConnectError`], [`crate::net::dns::DnsLookupError`],
    /// [`crate::net::tcp::TlsError`], [`ConnectionLost`] or [`InvalidRequest`].
    /// Cancelling it aborts the download and closes its connection.
    pub fn request(&self, req: HttpRequest) -> Deferred<HttpResponse> {
        let inner = &self.inner;
        inner.count(|c| c.requests += 1);
        let key = match pool_key(&req) {
            Ok(k) => k,
            Err(e) => return crate::defer::fail(e),
        };
        let ctx_cell: Rc<RefCell<Weak<Ctx>>> = Rc::new(RefCell::new(Weak::new()));
        let cell = ctx_cell.clone();
        let result = Deferred::with_canceller(move |_: &Deferred<HttpResponse>| {
            if let Some(ctx) = cell.borrow().upgrade() {
                ctx.fail(Failure::new(CancelledError));
            }
        });
        let ctx = Rc::new(Ctx {
            req,
            key,
            result: result.clone(),
            done: Cell::new(false),
            timer: RefCell::new(None),
            conn: RefCell::new(None),
            connecting: RefCell::new(None),
            retried: Cell::new(false),
        });
        *ctx_cell.borrow_mut() = Rc::downgrade(&ctx);
        let timeout = ctx.req.timeout;
        if timeout > 0.0 && timeout.is_finite() {
            let weak = Rc::downgrade(&ctx);
            let call = inner.reactor.call_later(timeout, move || {
                if let Some(ctx) = weak.upgrade() {
                    ctx.fail(Failure::new(TimeoutError { seconds: timeout }));
                }
            });
            *ctx.timer.borrow_mut() = Some(call);
        }
        inner.dispatch(ctx, true);
        result
    }

    /// Closes every idle connection.
    pub fn close_idle(&self) {
        let all: Vec<Rc<Connection>> = self
            .inner
            .idle
            .borrow_mut()
            .drain()
            .flat_map(|(_, v)| v)
            .collect();
        for conn in all {
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

    /// The DNS resolver this client uses.
    pub fn resolver(&self) -> &Resolver {
        &self.inner.resolver
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
        Some(p) if p.scheme() != "http" => {
            return Err(Failure::new(InvalidRequest(format!(
                "unsupported proxy scheme {:?} (http proxies only)",
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
        let (host, port) = match &ctx.req.proxy {
            Some(p) => match (p.host_str(), p.port_or_known_default()) {
                (Some(h), Some(port)) => (h.to_owned(), port),
                _ => {
                    ctx.fail(Failure::new(InvalidRequest(format!("bad proxy URL {p}"))));
                    return;
                }
            },
            None => (ctx.key.host.clone(), ctx.key.port),
        };
        let Some(me) = self.me.upgrade() else { return };
        let c = ctx.clone();
        let lookup = self.resolver.resolve(&host, port);
        *ctx.connecting.borrow_mut() = Some(Box::new(lookup.clone()));
        let _chain: Deferred<()> = lookup.then(move |r| {
            match r {
                Ok(addrs) => me.connect_any(c, addrs, 0),
                Err(f) => c.fail(f),
            }
            Ok(())
        });
    }

    fn connect_any(self: Rc<Self>, ctx: Rc<Ctx>, addrs: Vec<SocketAddr>, index: usize) {
        if ctx.done.get() {
            return;
        }
        let Some(&addr) = addrs.get(index) else {
            return;
        };
        let direct_tls = ctx.key.https && ctx.req.proxy.is_none();
        let tls_config = if ctx.req.verify_tls {
            self.config.tls_verify.clone()
        } else {
            self.config.tls_no_verify.clone()
        };
        let connecting = connect_tcp(
            &self.reactor,
            addr,
            0.0,
            direct_tls.then(|| (tls_config.clone(), ctx.key.host.as_str())),
        );
        *ctx.connecting.borrow_mut() = Some(Box::new(connecting.clone()));
        let c = ctx.clone();
        let _chain: Deferred<()> = connecting.then(move |r| {
            c.connecting.borrow_mut().take();
            match r {
                Ok(transport) => {
                    self.count(|k| k.connections += 1);
                    if c.done.get() {
                        transport.abort_connection();
                    } else if c.key.https && c.req.proxy.is_some() {
                        self.tunnel(c, transport, tls_config);
                    } else {
                        let conn = Connection::new(&self, transport, c.key.clone());
                        conn.send(c, false);
                    }
                }
                Err(f) if index + 1 < addrs.len() && !c.done.get() => {
                    log::debug!("connect to {addr} failed ({f}); trying the next address");
                    self.connect_any(c, addrs, index + 1);
                }
                Err(f) => c.fail(f),
            }
            Ok(())
        });
    }

    /// Opens a CONNECT tunnel through the proxy, then starts TLS inside it.
    fn tunnel(
        self: Rc<Self>,
        ctx: Rc<Ctx>,
        transport: Rc<TcpTransport>,
        tls_config: Arc<rustls::ClientConfig>,
    ) {
        let target = format!("{}:{}", ctx.key.host, ctx.key.port);
        let mut headers = Headers::new();
        // Credentials for the proxy: the proxy URL's user info, else a
        // `Proxy-Authorization` header on the request (the proxy middleware moves URL
        // credentials there). They go in the CONNECT only, never through the tunnel.
        let auth = ctx
            .req
            .proxy
            .as_ref()
            .and_then(proxy_authorization)
            .or_else(|| {
                ctx.req
                    .headers
                    .get_str("proxy-authorization")
                    .map(str::to_owned)
            });
        if let Some(auth) = auth {
            headers.append("Proxy-Authorization", auth);
        }
        headers.append("Connection", "keep-alive");
        let mut bytes = Vec::new();
        if let Err(e) = encode_request("CONNECT", &target, &target, &headers, b"", &mut bytes) {
            ctx.fail(Failure::new(InvalidRequest(e.to_string())));
            transport.abort_connection();
            return;
        }
        let tunnel = Rc::new(TunnelSetup {
            parser: RefCell::new(ResponseParser::for_connect()),
            buf: RefCell::new(Vec::new()),
            done: Deferred::new(),
        });
        let done = tunnel.done.clone();
        transport.attach(tunnel);
        transport.write(&bytes);
        let c = ctx.clone();
        let t = transport.clone();
        done.add_both(move |r| {
            match r {
                Ok(()) if !c.done.get() => match t.start_tls(tls_config, &c.key.host) {
                    Ok(()) => {
                        let conn = Connection::new(&self, t, c.key.clone());
                        conn.send(c, false);
                    }
                    Err(f) => {
                        t.abort_connection();
                        c.fail(f);
                    }
                },
                Ok(()) => t.abort_connection(),
                Err(f) => {
                    t.abort_connection();
                    c.fail(f);
                }
            }
            Ok(())
        });
    }

    fn put_idle(&self, conn: Rc<Connection>) {
        let max = self.config.max_idle_per_key;
        let accepted = {
            let mut idle = self.idle.borrow_mut();
            let list = idle.entry(conn.key.clone()).or_default();
            if list.len() < max {
                list.push(conn.clone());
                true
            } else {
                false
            }
        };
        if !accepted {
            conn.close();
            return;
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

    fn forget_idle(&self, conn: &Rc<Connection>) {
        let mut idle = self.idle.borrow_mut();
        if let Some(list) = idle.get_mut(&conn.key) {
            list.retain(|c| !Rc::ptr_eq(c, conn));
            if list.is_empty() {
                idle.remove(&conn.key);
            }
        }
    }
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
struct Ctx {
    req: HttpRequest,
    key: PoolKey,
    result: Deferred<HttpResponse>,
    done: Cell<bool>,
    timer: RefCell<Option<DelayedCall>>,
    conn: RefCell<Option<Rc<Connection>>>,
    connecting: RefCell<Option<Box<dyn Cancel>>>,
    retried: Cell<bool>,
}

trait Cancel {
    fn cancel(&self);
}

impl<T: 'static> Cancel for Deferred<T> {
    fn cancel(&self) {
        Deferred::cancel(self);
    }
}

impl Ctx {
    fn finish(&self) -> bool {
        if self.done.replace(true) {
            return false;
        }
        if let Some(t) = self.timer.borrow_mut().take() {
            let _ = t.cancel();
        }
        true
    }

    /// Fails the download, aborting whatever connection or connect attempt carries it.
    fn fail(self: &Rc<Self>, failure: Failure) {
        if !self.finish() {
            return;
        }
        let connecting = self.connecting.borrow_mut().take();
        if let Some(c) = connecting {
            c.cancel();
        }
        let conn = self.conn.borrow_mut().take();
        if let Some(conn) = conn {
            conn.detach_and_abort();
        }
        let _ = self.result.errback(failure);
    }

    fn succeed(self: &Rc<Self>, response: HttpResponse) {
        if !self.finish() {
            return;
        }
        self.conn.borrow_mut().take();
        let _ = self.result.callback(response);
    }

    fn url(&self) -> String {
        self.req.url.as_str().to_owned()
    }
}

/// A persistent HTTP/1.1 connection (one request at a time).
struct Connection {
    transport: Rc<TcpTransport>,
    key: PoolKey,
    client: Weak<Inner>,
    st: RefCell<ConnState>,
    idle_timer: RefCell<Option<DelayedCall>>,
    me: Weak<Connection>,
}

struct ConnState {
    ctx: Option<Rc<Ctx>>,
    parser: ResponseParser,
    buf: Vec<u8>,
    head: Option<ResponseHead>,
    body: Vec<u8>,
    decoder: Option<ContentDecoder>,
    decoded_from: Option<String>,
    any_bytes: bool,
    reused: bool,
    sent_at: f64,
    latency: f64,
    warned: bool,
    closed: bool,
}

/// What `data_received` decided, acted on after its borrow ends.
enum Outcome {
    Complete(bool),
    Fail(Failure),
}

impl Connection {
    fn new(client: &Rc<Inner>, transport: Rc<TcpTransport>, key: PoolKey) -> Rc<Self> {
        let conn = Rc::new_cyclic(|me| Self {
            transport: transport.clone(),
            key,
            client: Rc::downgrade(client),
            st: RefCell::new(ConnState {
                ctx: None,
                parser: ResponseParser::new(false),
                buf: Vec::new(),
                head: None,
                body: Vec::new(),
                decoder: None,
                decoded_from: None,
                any_bytes: false,
                reused: false,
                sent_at: 0.0,
                latency: 0.0,
                warned: false,
                closed: false,
            }),
            idle_timer: RefCell::new(None),
            me: me.clone(),
        });
        transport.attach(conn.clone());
        conn
    }

    fn cancel_idle_timer(&self) {
        if let Some(t) = self.idle_timer.borrow_mut().take() {
            let _ = t.cancel();
        }
    }

    fn now(&self) -> f64 {
        self.client.upgrade().map_or(0.0, |c| c.reactor.seconds())
    }

    fn send(self: &Rc<Self>, ctx: Rc<Ctx>, reused: bool) {
        let req = &ctx.req;
        let mut headers = req.headers.clone();
        let through_proxy = req.proxy.is_some() && !ctx.key.https;
        let target = if through_proxy {
            let mut u = req.url.clone();
            u.set_fragment(None);
            if let Some(auth) = req.proxy.as_ref().and_then(proxy_authorization)
                && !headers.contains("proxy-authorization")
            {
                headers.append("Proxy-Authorization", auth);
            }
            u.to_string()
        } else {
            let mut t = req.url.path().to_owned();
            if let Some(q) = req.url.query() {
                t.push('?');
                t.push_str(q);
            }
            t
        };
        if !through_proxy {
            // Proxy credentials never go to the origin server.
            headers.remove("proxy-authorization");
        }
        let host = match (req.url.host_str(), req.url.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_owned(),
            (None, _) => String::new(),
        };
        let mut bytes = Vec::new();
        if let Err(e) = encode_request(&req.method, &target, &host, &headers, &req.body, &mut bytes)
        {
            ctx.fail(Failure::new(InvalidRequest(e.to_string())));
            if let Some(client) = self.client.upgrade() {
                client.put_idle(self.clone());
            }
            return;
        }
        let head_request = req.method == "HEAD";
        let limits = self
            .client
            .upgrade()
            .map(|c| c.config.limits)
            .unwrap_or_default();
        {
            let mut st = self.st.borrow_mut();
            st.ctx = Some(ctx.clone());
            st.parser = ResponseParser::with_limits(head_request, limits);
            st.buf.clear();
            st.head = None;
            st.body = Vec::new();
            st.decoder = None;
            st.decoded_from = None;
            st.any_bytes = false;
            st.reused = reused;
            st.warned = false;
            st.sent_at = self.now();
        }
        *ctx.conn.borrow_mut() = Some(self.clone());
        self.transport.write(&bytes);
    }

    /// Drops the request and closes the connection (timeout, cancel).
    fn detach_and_abort(&self) {
        {
            let mut st = self.st.borrow_mut();
            st.ctx = None;
            st.closed = true;
        }
        self.transport.abort_connection();
    }

    fn close(&self) {
        self.st.borrow_mut().closed = true;
        self.cancel_idle_timer();
        self.transport.lose_connection();
    }

    /// Handles one parser event; returns an outcome when the response is finished.
    fn on_event(st: &mut ConnState, ctx: &Ctx, event: Event<'_>, now: f64) -> Option<Outcome> {
        match event {
            Event::Head(head) => {
                st.latency = now - st.sent_at;
                let req = &ctx.req;
                if let Some(expected) = head.content_length() {
                    if req.maxsize > 0 && expected > req.maxsize {
                        return Some(Outcome::Fail(Failure::new(ResponseTooLarge {
                            url: ctx.url(),
                            size: expected,
                            limit: req.maxsize,
                        })));
                    }
                    if req.warnsize > 0 && expected > req.warnsize && !st.warned {
                        st.warned = true;
                        log::warn!(
                            "Expected response size ({expected}) larger than download warn size ({}) in request {}.",
                            req.warnsize,
                            ctx.url()
                        );
                    }
                }
                if req.decode_content
                    && let Some(value) = head.headers.get("content-encoding")
                    && let Ok(codings) = Encoding::parse_list(value)
                    && !codings.is_empty()
                {
                    let limit = if req.maxsize > 0 {
                        req.maxsize
                    } else {
                        u64::MAX
                    };
                    st.decoder = Some(ContentDecoder::new(&codings, limit));
                    st.decoded_from = Some(String::from_utf8_lossy(value).into_owned());
                }
                st.head = Some(head);
                None
            }
            Event::Data(data) => {
                let req = &ctx.req;
                let wire = st.parser.body_received();
                if req.maxsize > 0 && wire > req.maxsize {
                    return Some(Outcome::Fail(Failure::new(ResponseTooLarge {
                        url: ctx.url(),
                        size: wire,
                        limit: req.maxsize,
                    })));
                }
                match st.decoder.as_mut() {
                    Some(d) => {
                        if let Err(e) = d.feed(data, &mut st.body) {
                            return Some(Outcome::Fail(decode_failure(e, ctx)));
                        }
                    }
                    None => st.body.extend_from_slice(data),
                }
                let size = (st.body.len() as u64).max(wire);
                if req.warnsize > 0 && size > req.warnsize && !st.warned {
                    st.warned = true;
                    log::warn!(
                        "Received ({size}) bytes larger than download warn size ({}) in request {}.",
                        req.warnsize,
                        ctx.url()
                    );
                }
                None
            }
            Event::End => Some(Outcome::Complete(st.parser.keep_alive())),
        }
    }

    fn complete(self: &Rc<Self>, ctx: Rc<Ctx>, keep_alive: bool, flags: Vec<&'static str>) {
        let (response, reusable) = {
            let mut st = self.st.borrow_mut();
            let Some(mut head) = st.head.take() else {
                drop(st);
                ctx.fail(Failure::new(HttpError::EmptyResponse));
                return;
            };
            let mut body = std::mem::take(&mut st.body);
            if let Some(mut d) = st.decoder.take()
                && let Err(e) = d.finish(&mut body)
            {
                drop(st);
                self.detach_and_abort();
                ctx.fail(decode_failure(e, &ctx));
                return;
            }
            let decoded_from = st.decoded_from.take();
            if decoded_from.is_some() {
                head.headers.remove("content-encoding");
                head.headers.remove("content-length");
            }
            st.ctx = None;
            let reusable = keep_alive && st.buf.is_empty() && !st.closed;
            let response = HttpResponse {
                url: ctx.req.url.clone(),
                status: head.status,
                reason: head.reason,
                headers: head.headers,
                body,
                ip: self.transport.peer(),
                protocol: if head.version == 0 {
                    "HTTP/1.0"
                } else {
                    "HTTP/1.1"
                },
                latency: st.latency,
                decoded_from,
                wire_bytes: st.parser.body_received(),
                reused_connection: st.reused,
                flags,
            };
            (response, reusable)
        };
        if reusable {
            if let Some(client) = self.client.upgrade() {
                client.put_idle(self.clone());
            }
        } else {
            self.close();
        }
        ctx.succeed(response);
    }
}

fn decode_failure(e: DecodeError, ctx: &Ctx) -> Failure {
    match e {
        DecodeError::TooLarge { limit } => Failure::new(ResponseTooLarge {
            url: ctx.url(),
            size: limit.saturating_add(1),
            limit,
        }),
        other => Failure::new(other),
    }
}

impl Protocol for Connection {
    fn connection_made(&self, _transport: Rc<dyn Transport>) {}

    fn data_received(&self, data: &[u8]) {
        let now = self.now();
        let (ctx, outcome) = {
            let mut guard = self.st.borrow_mut();
            let st = &mut *guard;
            let Some(ctx) = st.ctx.clone() else {
                // Bytes while idle: the server is confused; do not reuse.
                st.closed = true;
                drop(guard);
                self.transport.lose_connection();
                return;
            };
            st.any_bytes = true;
            // Parse straight from `data` when nothing is buffered (no copy), otherwise
            // from the buffer with `data` appended.
            let mut buffered = std::mem::take(&mut st.buf);
            let from_buffer = !buffered.is_empty();
            if from_buffer {
                buffered.extend_from_slice(data);
            }
            let input: &[u8] = if from_buffer { &buffered } else { data };
            let mut pos = 0;
            let mut outcome = None;
            while outcome.is_none() {
                match st.parser.parse(&input[pos..]) {
                    Ok((n, event)) => {
                        let progressed = n > 0 || event.is_some();
                        if let Some(ev) = event {
                            outcome = Self::on_event(st, &ctx, ev, now);
                        }
                        pos += n;
                        if !progressed {
                            break;
                        }
                    }
                    Err(e) => outcome = Some(Outcome::Fail(Failure::new(e))),
                }
            }
            let consumed = pos.min(input.len());
            if from_buffer {
                buffered.drain(..consumed);
            } else {
                buffered.clear();
                buffered.extend_from_slice(&data[consumed..]);
            }
            st.buf = buffered;
            (ctx, outcome)
        };
        let Some(me) = self.me.upgrade() else { return };
        match outcome {
            None => {}
            Some(Outcome::Complete(keep_alive)) => me.complete(ctx, keep_alive, Vec::new()),
            Some(Outcome::Fail(f)) => {
                self.detach_and_abort();
                ctx.fail(f);
            }
        }
    }

    fn connection_lost(&self, reason: Failure) {
        let Some(me) = self.me.upgrade() else { return };
        let (ctx, fin, any_bytes, reused, has_head) = {
            let mut st = self.st.borrow_mut();
            st.closed = true;
            let any = st.any_bytes;
            let fin = st.parser.finish(any);
            (st.ctx.clone(), fin, any, st.reused, st.head.is_some())
        };
        self.cancel_idle_timer();
        let Some(ctx) = ctx else {
            // An idle connection went away.
            if let Some(client) = self.client.upgrade() {
                client.forget_idle(&me);
            }
            return;
        };
        match fin {
            Ok(_) => me.complete(ctx, false, Vec::new()),
            Err(HttpError::Incomplete { .. }) if has_head && !ctx.req.fail_on_dataloss => {
                me.complete(ctx, false, vec!["dataloss"]);
            }
            Err(e) => {
                if !any_bytes && reused && ctx.req.idempotent() && !ctx.retried.get() {
                    // The pooled connection was dead: retry once on a fresh one.
                    ctx.retried.set(true);
                    self.st.borrow_mut().ctx = None;
                    ctx.conn.borrow_mut().take();
                    if let Some(client) = self.client.upgrade() {
                        client.count(|c| c.retries += 1);
                        client.dispatch(ctx, false);
                    }
                    return;
                }
                let failure = if any_bytes {
                    Failure::new(e)
                } else if reason.check::<crate::net::ConnectionDone>() {
                    Failure::new(ConnectionLost {
                        reason: "connection closed before any response byte".into(),
                    })
                } else {
                    reason
                };
                ctx.fail(failure);
            }
        }
    }
}

/// Reads a proxy's answer to CONNECT.
struct TunnelSetup {
    parser: RefCell<ResponseParser>,
    buf: RefCell<Vec<u8>>,
    done: Deferred<()>,
}

impl Protocol for TunnelSetup {
    fn connection_made(&self, _transport: Rc<dyn Transport>) {}

    fn data_received(&self, data: &[u8]) {
        let result = {
            let mut buf = self.buf.borrow_mut();
            buf.extend_from_slice(data);
            let mut parser = self.parser.borrow_mut();
            match parser.parse(&buf) {
                Ok((_, Some(Event::Head(head)))) if (200..300).contains(&head.status) => {
                    Some(Ok(()))
                }
                Ok((_, Some(Event::Head(head)))) => Some(Err(Failure::new(TunnelError {
                    status: head.status,
                    reason: head.reason,
                }))),
                Ok(_) => None,
                Err(e) => Some(Err(Failure::new(e))),
            }
        };
        if let Some(r) = result {
            let _ = self.done.resolve(r);
        }
    }

    fn connection_lost(&self, reason: Failure) {
        let _ = self.done.errback(reason);
    }
}
