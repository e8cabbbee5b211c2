//! The fixture HTTP(S) server that tests, examples and benchmarks crawl: the generated
//! [`Site`] plus behaviour routes for everything a downloader must survive.
//!
//! It runs on trawl's own reactor — on a background thread with [`FixtureServer::start`]
//! (so a test's client reactor and the server never block each other), or on the
//! caller's reactor with [`serve`] (`trawl serve`). Keep-alive, pipelining-safe,
//! HTTP and HTTPS (a test CA is embedded: [`TEST_CA_PEM`]).
//!
//! # Routes
//!
//! | path | answer |
//! |---|---|
//! | `/index.html`, `/s/BBB/IIIII.html` | generated pages (`?` queries ignored) |
//! | `/page/N/`, `/author/SLUG/` | the quotes tutorial section |
//! | `/robots.txt` (or `FixtureOptions::robots`), `/sitemap.xml`, `/sitemap.xml.gz`, `/sitemap-index.xml` | as named |
//! | `/status/CODE` | that status, a short body |
//! | `/redirect/CODE?to=URL` | `Location: URL` (default a page) |
//! | `/redirect-chain/N` | N redirects, then a page |
//! | `/redirect-loop` | redirects to itself |
//! | `/delay/MS` | the page after MS milliseconds |
//! | `/gzip`, `/deflate`, `/deflate-raw`, `/br` | an encoded page (`Content-Encoding`) |
//! | `/chunked?n=K` | a chunked body in K chunks |
//! | `/cut` | `Content-Length: 1000`, 100 bytes, then close |
//! | `/reset` | the connection is aborted without an answer |
//! | `/close` | answer with `Connection: close` |
//! | `/http10` | an HTTP/1.0 answer delimited by closing |
//! | `/drip?bytes=N&ms=T` | N bytes, one every T milliseconds |
//! | `/big?size=N`, `/big-chunked?size=N` | N bytes, with or without a length |
//! | `/bomb/gzip\|deflate\|br?size=N` | compressed zeros expanding to N bytes (100 MB) |
//! | `/set-cookie?name=value&...` | one `Set-Cookie` per query pair |
//! | `/set-cookie-raw?c=HEADER&c=...` | one `Set-Cookie: HEADER` per `c` (attributes included) |
//! | `/links?to=URL&to=...&policy=P` | an HTML page linking to each `to`; `Referrer-Policy: P` if given |
//! | `/echo` | the request (method, target, headers, body) as text |
//! | `/flaky/N?key=K` | 503 for the first N requests with that key, then 200 |
//! | `/meta-refresh?to=URL&delay=S` | an HTML meta refresh |
//! | `/api/quotes?page=N`, or POST `{"page": N}` as JSON | the tutorial's quotes as JSON (`JsonRequest`'s content type required for POST) |
//! | `/api/authors/SLUG` | `{"name", "slug", "born"}` of an author (what the author page shows), 404 for an unknown one |
//! | `/media/index.html`, `/media/files/NAME`, `/media/redirect/NAME` | items linking to files, the files (`testing::media`) |
//! | `/login` (GET: a form with a CSRF token and a `session` cookie; POST: checks them, password `secret`), `/account` | a login flow (`testing::login`) |

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::broad::{BroadOptions, BroadSite};
use super::reply::{Reply, Req, form_decode, reason};
use super::site::Site;
use crate::defer::Failure;
use crate::net::tcp::{ListeningPort, listen_tcp};
use crate::net::{Protocol, Transport, tls};
use crate::reactor::{Reactor, ReactorHandle, ThreadCaller};

/// The test CA that signed [`TEST_SERVER_CERT_PEM`] (for `localhost`, `127.0.0.1`,
/// `::1`, `fixture.test`, `*.fixture.test`).
pub const TEST_CA_PEM: &[u8] = include_bytes!("certs/ca.pem");
/// The fixture server's certificate.
pub const TEST_SERVER_CERT_PEM: &[u8] = include_bytes!("certs/server.pem");
/// The fixture server's private key (test only).
pub const TEST_SERVER_KEY_PEM: &[u8] = include_bytes!("certs/server.key");
/// A self-signed certificate for `localhost` from no trusted CA (the "wrong
/// certificate" in TLS tests).
pub const OTHER_CERT_PEM: &[u8] = include_bytes!("certs/other.pem");
/// Its private key.
pub const OTHER_KEY_PEM: &[u8] = include_bytes!("certs/other.key");

/// How to run a fixture server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixtureOptions {
    /// Generated pages (2,000).
    pub pages: usize,
    /// Serve HTTPS with the embedded test certificate.
    pub tls: bool,
    /// Serve HTTPS with the untrusted [`OTHER_CERT_PEM`] instead.
    pub untrusted_cert: bool,
    /// With `tls`: speak only this TLS version (`"TLSv1.2"` or `"TLSv1.3"`).
    pub tls_only: Option<&'static str>,
    /// Record every request target (for exactly-once checks).
    pub record: bool,
    /// Address to bind (`127.0.0.1:0`).
    pub addr: SocketAddr,
    /// Replaces the site's robots.txt: (status, body); status 0 resets the connection.
    pub robots: Option<(u16, String)>,
}

impl Default for FixtureOptions {
    fn default() -> Self {
        Self {
            pages: 2000,
            tls: false,
            untrusted_cert: false,
            tls_only: None,
            record: false,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            robots: None,
        }
    }
}

/// Counters shared with the server thread.
#[derive(Debug, Default)]
pub struct FixtureStats {
    requests: AtomicU64,
    connections: AtomicU64,
    targets: Mutex<HashMap<String, u32>>,
    /// Notified at every request (for [`wait_for_requests`](Self::wait_for_requests)).
    progress: (Mutex<u64>, std::sync::Condvar),
}

impl FixtureStats {
    /// Requests answered (or aborted) so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// How often each request target was requested (with `record`).
    pub fn targets(&self) -> HashMap<String, u32> {
        self.targets.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Blocks until at least `n` requests were answered in total, or `timeout`
    /// passes; returns whether they were (a test's way to act "mid-crawl" without
    /// sleeping a fixed time).
    pub fn wait_for_requests(&self, n: u64, timeout: std::time::Duration) -> bool {
        let (lock, cond) = &self.progress;
        let Ok(guard) = lock.lock() else {
            return false;
        };
        cond.wait_timeout_while(guard, timeout, |count| *count < n)
            .map(|(count, _)| *count >= n)
            .unwrap_or(false)
    }

    fn answered(&self) {
        let n = self.requests.fetch_add(1, Ordering::Relaxed) + 1;
        let (lock, cond) = &self.progress;
        if let Ok(mut count) = lock.lock() {
            *count = n;
        }
        cond.notify_all();
    }
}

/// A fixture server on its own thread and reactor; stopped on drop.
pub struct FixtureServer {
    addr: SocketAddr,
    tls: bool,
    stats: Arc<FixtureStats>,
    caller: ThreadCaller,
    thread: Option<JoinHandle<()>>,
    pages: usize,
    broad: Option<BroadSite>,
}

impl FixtureServer {
    /// Starts a server with `options` on a background thread.
    ///
    /// # Errors
    ///
    /// Binding failed, or the TLS setup did.
    pub fn start(options: FixtureOptions) -> io::Result<Self> {
        let tls = options.tls || options.untrusted_cert;
        let pages = options.pages;
        Self::start_with(tls, pages, move |handle, stats| {
            serve(handle, &options, stats)
        })
    }

    /// Starts the broad fixture (`options.hosts` sites on their own loopback addresses)
    /// on a background thread; [`broad_site`](Self::broad_site) has its start URLs and
    /// hosts file, [`addr`](Self::addr) is host 0's address.
    ///
    /// # Errors
    ///
    /// Binding one of the addresses failed, or the TLS setup did.
    pub fn start_broad(options: BroadOptions) -> io::Result<Self> {
        let tls = options.tls;
        Self::start_with(tls, 0, move |handle, stats| {
            serve_broad(handle, &options, stats)
        })
    }

    fn start_with(
        tls: bool,
        pages: usize,
        serve_it: impl FnOnce(&ReactorHandle, Arc<FixtureStats>) -> io::Result<Served> + Send + 'static,
    ) -> io::Result<Self> {
        let stats = Arc::new(FixtureStats::default());
        let (tx, rx) = std::sync::mpsc::channel();
        let thread_stats = stats.clone();
        let thread = std::thread::Builder::new()
            .name("trawl-fixture".into())
            .spawn(move || {
                let setup = (|| -> io::Result<(Reactor, Served)> {
                    let reactor = Reactor::new()?;
                    let served = serve_it(&reactor.handle(), thread_stats)?;
                    Ok((reactor, served))
                })();
                match setup {
                    Ok((mut reactor, served)) => {
                        let _ = tx.send(Ok((
                            served.local_addr(),
                            served.broad_site(),
                            reactor.handle().thread_caller(),
                        )));
                        if let Err(e) = reactor.run() {
                            log::error!("fixture server reactor failed: {e}");
                        }
                        served.close();
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                    }
                }
            })?;
        let (addr, broad, caller) = rx
            .recv()
            .map_err(|_| io::Error::other("fixture server thread died during start-up"))??;
        Ok(Self {
            addr,
            tls,
            stats,
            caller,
            thread: Some(thread),
            pages,
            broad,
        })
    }

    /// A plain-HTTP server with `pages` pages that records request targets.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub fn with_pages(pages: usize) -> io::Result<Self> {
        Self::start(FixtureOptions {
            pages,
            record: true,
            ..FixtureOptions::default()
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http(s)://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        format!(
            "{}://{}",
            if self.tls { "https" } else { "http" },
            self.addr
        )
    }

    /// The absolute URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base(), path)
    }

    /// The site this server generates.
    pub fn site(&self) -> Site {
        Site::new(self.pages, self.base())
    }

    /// The broad fixture's site (with its port), for a server from
    /// [`start_broad`](Self::start_broad).
    pub fn broad_site(&self) -> Option<&BroadSite> {
        self.broad.as_ref()
    }

    /// Counters.
    pub fn stats(&self) -> &FixtureStats {
        &self.stats
    }

    /// Stops the server and waits for its thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.caller.call_from_thread(|h| h.stop());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for FixtureServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl fmt::Debug for FixtureServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FixtureServer")
            .field("base", &self.base())
            .field("pages", &self.pages)
            .finish()
    }
}

/// A fixture being served on some reactor.
pub struct Served {
    /// One listener, or one per broad host (never empty).
    ports: Vec<Rc<ListeningPort>>,
    shared: Rc<RefCell<Option<Rc<Shared>>>>,
}

impl Served {
    /// The bound address (host 0's, for the broad fixture).
    pub fn local_addr(&self) -> SocketAddr {
        self.ports[0].local_addr()
    }

    /// The broad fixture's site, with the port it serves on.
    pub fn broad_site(&self) -> Option<BroadSite> {
        self.shared.borrow().as_ref().and_then(|s| s.broad.clone())
    }

    /// Stops listening and aborts every open connection.
    pub fn close(&self) {
        for port in &self.ports {
            port.stop_listening();
        }
        let conns: Vec<Rc<ServerConn>> = self
            .shared
            .borrow()
            .as_ref()
            .map(|s| {
                s.conns
                    .borrow()
                    .iter()
                    .filter_map(std::rc::Weak::upgrade)
                    .collect()
            })
            .unwrap_or_default();
        for conn in conns {
            conn.closed.set(true);
            if let Some(t) = conn.transport() {
                t.abort_connection();
            }
        }
    }
}

impl fmt::Debug for Served {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Served")
            .field("addr", &self.local_addr())
            .finish()
    }
}

/// Serves the fixture on `reactor` (the caller runs it), for `trawl serve`.
///
/// # Errors
///
/// Binding failed, or the TLS setup did.
pub fn serve(
    reactor: &ReactorHandle,
    options: &FixtureOptions,
    stats: Arc<FixtureStats>,
) -> io::Result<Served> {
    let tls_config = if options.untrusted_cert {
        Some(tls::server_config_from_pem(OTHER_CERT_PEM, OTHER_KEY_PEM).map_err(io::Error::other)?)
    } else if options.tls {
        let versions =
            tls::protocol_versions(options.tls_only, options.tls_only).map_err(io::Error::other)?;
        Some(
            tls::server_config_from_pem_with_versions(
                TEST_SERVER_CERT_PEM,
                TEST_SERVER_KEY_PEM,
                &versions,
            )
            .map_err(io::Error::other)?,
        )
    } else {
        None
    };
    // Bind first to learn the port the absolute links must carry.
    let scheme = if tls_config.is_some() {
        "https"
    } else {
        "http"
    };
    let shared_cell: Rc<RefCell<Option<Rc<Shared>>>> = Rc::new(RefCell::new(None));
    let port = listen(reactor, options.addr, tls_config, &shared_cell, &stats, 0)?;
    let base = format!("{scheme}://{}", port.local_addr());
    *shared_cell.borrow_mut() = Some(Rc::new(Shared {
        conns: RefCell::new(Vec::new()),
        site: Site::new(options.pages, base),
        broad: None,
        reactor: reactor.clone(),
        stats,
        record: options.record,
        robots: options.robots.clone(),
        flaky: RefCell::new(HashMap::new()),
        bombs: RefCell::new(HashMap::new()),
    }));
    Ok(Served {
        ports: vec![port],
        shared: shared_cell,
    })
}

/// Serves the broad fixture on `reactor`: host `i` on `BroadSite::addr(i)`, all on one
/// port (`options.port`, or the one the first address got).
///
/// # Errors
///
/// An address could not be bound (the message names it), or the TLS setup failed.
pub fn serve_broad(
    reactor: &ReactorHandle,
    options: &BroadOptions,
    stats: Arc<FixtureStats>,
) -> io::Result<Served> {
    let tls_config = if options.tls {
        // Stateless tickets: one shared config serves every host, and its session
        // cache (256) would forget most of 10,000 hosts' sessions.
        let config = tls::server_config_from_pem(TEST_SERVER_CERT_PEM, TEST_SERVER_KEY_PEM)
            .map_err(io::Error::other)?;
        Some(tls::with_session_tickets(&config).map_err(io::Error::other)?)
    } else {
        None
    };
    let mut site = BroadSite::new(options.clone());
    let shared_cell: Rc<RefCell<Option<Rc<Shared>>>> = Rc::new(RefCell::new(None));
    let mut ports = Vec::with_capacity(site.hosts());
    let mut port = options.port;
    for i in 0..site.hosts() {
        let addr = BroadSite::socket_addr(i, port);
        let listening = listen(reactor, addr, tls_config.clone(), &shared_cell, &stats, i)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))?;
        port = listening.local_addr().port();
        ports.push(listening);
    }
    site = BroadSite::new(BroadOptions {
        port,
        ..site.options().clone()
    });
    let shared = Rc::new(Shared {
        conns: RefCell::new(Vec::new()),
        site: Site::new(0, site.origin(0)),
        broad: Some(site),
        reactor: reactor.clone(),
        stats,
        record: false,
        robots: None,
        flaky: RefCell::new(HashMap::new()),
        bombs: RefCell::new(HashMap::new()),
    });
    sweep_idle(Rc::downgrade(&shared));
    *shared_cell.borrow_mut() = Some(shared);
    Ok(Served {
        ports,
        shared: shared_cell,
    })
}

/// Seconds the broad fixture keeps an idle keep-alive connection (Apache's
/// `KeepAliveTimeout`): a crawler that keeps every connection (Scrapy) would otherwise
/// hold one per host, and 10,000 hosts' listeners and connections exceed the usual
/// 20,000 descriptors.
pub const BROAD_KEEPALIVE_TIMEOUT: f64 = 5.0;

fn reactor_now(cell: &Rc<RefCell<Option<Rc<Shared>>>>) -> f64 {
    cell.borrow().as_ref().map_or(0.0, |s| s.reactor.seconds())
}

/// Every second, closes the connections idle for [`BROAD_KEEPALIVE_TIMEOUT`].
fn sweep_idle(shared: std::rc::Weak<Shared>) {
    let Some(s) = shared.upgrade() else { return };
    let now = s.reactor.seconds();
    let idle: Vec<Rc<ServerConn>> = {
        let mut conns = s.conns.borrow_mut();
        conns.retain(|c| c.strong_count() > 0);
        conns
            .iter()
            .filter_map(std::rc::Weak::upgrade)
            .filter(|c| !c.busy.get() && now - c.last_active.get() >= BROAD_KEEPALIVE_TIMEOUT)
            .collect()
    };
    for conn in idle {
        conn.closed.set(true);
        if let Some(t) = conn.transport() {
            t.lose_connection();
        }
    }
    s.reactor.call_later(1.0, move || sweep_idle(shared));
}

/// Listens on `addr` for connections served by `cell`'s fixture as host `host`.
fn listen(
    reactor: &ReactorHandle,
    addr: SocketAddr,
    tls_config: Option<Arc<rustls::ServerConfig>>,
    cell: &Rc<RefCell<Option<Rc<Shared>>>>,
    stats: &Arc<FixtureStats>,
    host: usize,
) -> io::Result<Rc<ListeningPort>> {
    let cell = cell.clone();
    let st = stats.clone();
    listen_tcp(
        reactor,
        addr,
        move |peer| {
            st.connections.fetch_add(1, Ordering::Relaxed);
            let shared = cell.borrow().clone();
            let conn = Rc::new_cyclic(|me| ServerConn {
                shared: shared.clone(),
                transport: RefCell::new(None),
                buf: RefCell::new(Vec::new()),
                busy: Cell::new(false),
                closed: Cell::new(false),
                peer,
                host,
                last_active: Cell::new(reactor_now(&cell)),
                me: me.clone(),
            });
            if let Some(shared) = shared {
                let mut conns = shared.conns.borrow_mut();
                conns.retain(|c| c.strong_count() > 0);
                conns.push(Rc::downgrade(&conn));
            }
            let conn: Rc<dyn Protocol> = conn;
            conn
        },
        tls_config,
    )
}

/// Compressed bomb bodies by `(encoding, decoded size)`.
type BombCache = HashMap<(String, u64), Rc<Vec<u8>>>;

pub(super) struct Shared {
    conns: RefCell<Vec<std::rc::Weak<ServerConn>>>,
    pub(super) site: Site,
    /// The broad fixture's sites (routes by the connection's host instead).
    broad: Option<BroadSite>,
    pub(super) reactor: ReactorHandle,
    pub(super) stats: Arc<FixtureStats>,
    record: bool,
    pub(super) robots: Option<(u16, String)>,
    pub(super) flaky: RefCell<HashMap<String, u32>>,
    pub(super) bombs: RefCell<BombCache>,
}

struct ServerConn {
    shared: Option<Rc<Shared>>,
    transport: RefCell<Option<Rc<dyn Transport>>>,
    buf: RefCell<Vec<u8>>,
    /// A delayed or dripping answer is in progress: later requests wait.
    busy: Cell<bool>,
    closed: Cell<bool>,
    /// The client's address.
    peer: std::net::SocketAddr,
    /// Which broad fixture host was connected to (0 otherwise).
    host: usize,
    /// When the last bytes arrived (reactor seconds): the broad fixture closes
    /// connections idle for [`BROAD_KEEPALIVE_TIMEOUT`].
    last_active: Cell<f64>,
    me: std::rc::Weak<ServerConn>,
}

impl ServerConn {
    fn shared(&self) -> Option<Rc<Shared>> {
        self.shared.clone()
    }

    fn transport(&self) -> Option<Rc<dyn Transport>> {
        self.transport.borrow().clone()
    }

    /// Parses one complete request from the buffer, if there is one.
    fn next_request(&self) -> Result<Option<Req>, ()> {
        let mut buf = self.buf.borrow_mut();
        let mut slots = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Request::new(&mut slots);
        let head_len = match parsed.parse(&buf) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => {
                return if buf.len() > 64 * 1024 {
                    Err(())
                } else {
                    Ok(None)
                };
            }
            Err(_) => return Err(()),
        };
        let headers: Vec<(String, String)> = parsed
            .headers
            .iter()
            .map(|h| {
                (
                    h.name.to_owned(),
                    String::from_utf8_lossy(h.value).into_owned(),
                )
            })
            .collect();
        let length: usize = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.trim().parse().ok())
            .unwrap_or(0);
        if buf.len() < head_len + length {
            return Ok(None);
        }
        let target = parsed.path.unwrap_or("/").to_owned();
        let method = parsed.method.unwrap_or("GET").to_owned();
        let version = parsed.version.unwrap_or(1);
        let body = buf[head_len..head_len + length].to_vec();
        buf.drain(..head_len + length);
        drop(buf);
        let (path, query) = match target.split_once('?') {
            Some((p, q)) => (p.to_owned(), q),
            None => (target.clone(), ""),
        };
        // Absolute-form targets (proxy-style) are served by path.
        let path = match path.find("://") {
            Some(i) => path[i + 3..]
                .find('/')
                .map_or_else(|| "/".to_owned(), |j| path[i + 3 + j..].to_owned()),
            None => path,
        };
        let query = query
            .split('&')
            .filter(|kv| !kv.is_empty())
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                (form_decode(k), form_decode(v))
            })
            .collect();
        Ok(Some(Req {
            method,
            target,
            path,
            query,
            headers,
            body,
            version,
            peer: Some(self.peer),
        }))
    }

    fn process(self: &Rc<Self>) {
        while !self.busy.get() && !self.closed.get() {
            let req = match self.next_request() {
                Ok(Some(r)) => r,
                Ok(None) => return,
                Err(()) => {
                    if let Some(t) = self.transport() {
                        t.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                        t.lose_connection();
                    }
                    self.closed.set(true);
                    return;
                }
            };
            let Some(shared) = self.shared() else { return };
            shared.stats.answered();
            if shared.record
                && let Ok(mut targets) = shared.stats.targets.lock()
            {
                *targets.entry(req.target.clone()).or_insert(0) += 1;
            }
            let head_only = req.method == "HEAD";
            let close = req.wants_close();
            let reply = match &shared.broad {
                Some(broad) => broad.route(self.host, &req),
                None => shared.route(&req),
            };
            self.send(reply, head_only, close);
        }
    }

    fn send(self: &Rc<Self>, reply: Reply, head_only: bool, client_close: bool) {
        let Some(t) = self.transport() else { return };
        match reply {
            Reply::Full {
                status,
                headers,
                body,
                close,
            } => {
                let close = close || client_close;
                let mut out = Vec::with_capacity(body.len() + 256);
                let _ = write!(out, "HTTP/1.1 {status} {}\r\n", reason(status));
                for (k, v) in &headers {
                    let _ = write!(out, "{k}: {v}\r\n");
                }
                let _ = write!(out, "Content-Length: {}\r\n", body.len());
                if close {
                    out.extend_from_slice(b"Connection: close\r\n");
                }
                out.extend_from_slice(b"\r\n");
                if !head_only {
                    out.extend_from_slice(&body);
                }
                t.write(&out);
                if close {
                    self.closed.set(true);
                    t.lose_connection();
                }
            }
            Reply::Chunked {
                status,
                headers,
                chunks,
            } => {
                let mut out = Vec::new();
                let _ = write!(out, "HTTP/1.1 {status} {}\r\n", reason(status));
                for (k, v) in &headers {
                    let _ = write!(out, "{k}: {v}\r\n");
                }
                out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
                if !head_only {
                    for c in &chunks {
                        let _ = write!(out, "{:x};fixture=1\r\n", c.len());
                        out.extend_from_slice(c);
                        out.extend_from_slice(b"\r\n");
                    }
                    out.extend_from_slice(b"0\r\nX-Trailer: done\r\n\r\n");
                }
                t.write(&out);
                if client_close {
                    self.closed.set(true);
                    t.lose_connection();
                }
            }
            Reply::Raw(bytes) => {
                t.write(&bytes);
                self.closed.set(true);
                t.lose_connection();
            }
            Reply::Reset => {
                self.closed.set(true);
                t.abort_connection();
            }
            Reply::Delay(ms, inner) => {
                let Some(shared) = self.shared() else { return };
                self.busy.set(true);
                let me = self.clone();
                shared.reactor.call_later(ms as f64 / 1000.0, move || {
                    me.busy.set(false);
                    if !me.closed.get() {
                        me.send(*inner, head_only, client_close);
                        me.process();
                    }
                });
            }
            Reply::Drip {
                head,
                bytes,
                interval_ms,
            } => {
                let Some(shared) = self.shared() else { return };
                t.write(&head);
                self.busy.set(true);
                drip(
                    self.clone(),
                    shared.reactor.clone(),
                    bytes,
                    interval_ms as f64 / 1000.0,
                );
            }
        }
    }
}

fn drip(conn: Rc<ServerConn>, reactor: ReactorHandle, left: u64, interval: f64) {
    if conn.closed.get() {
        return;
    }
    if left == 0 {
        conn.busy.set(false);
        conn.process();
        return;
    }
    let r = reactor.clone();
    reactor.call_later(interval, move || {
        if let Some(t) = conn.transport() {
            if conn.closed.get() {
                return;
            }
            t.write(b"d");
        }
        drip(conn, r, left - 1, interval);
    });
}

impl Protocol for ServerConn {
    fn connection_made(&self, transport: Rc<dyn Transport>) {
        *self.transport.borrow_mut() = Some(transport);
    }

    fn data_received(&self, data: &[u8]) {
        if let Some(shared) = &self.shared {
            self.last_active.set(shared.reactor.seconds());
        }
        self.buf.borrow_mut().extend_from_slice(data);
        if let Some(me) = self.me.upgrade() {
            me.process();
        }
    }

    fn connection_lost(&self, _reason: Failure) {
        self.closed.set(true);
        self.transport.borrow_mut().take();
    }
}
