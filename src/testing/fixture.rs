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

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

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
}

/// A fixture server on its own thread and reactor; stopped on drop.
pub struct FixtureServer {
    addr: SocketAddr,
    tls: bool,
    stats: Arc<FixtureStats>,
    caller: ThreadCaller,
    thread: Option<JoinHandle<()>>,
    pages: usize,
}

impl FixtureServer {
    /// Starts a server with `options` on a background thread.
    ///
    /// # Errors
    ///
    /// Binding failed, or the TLS setup did.
    pub fn start(options: FixtureOptions) -> io::Result<Self> {
        let stats = Arc::new(FixtureStats::default());
        let (tx, rx) = std::sync::mpsc::channel();
        let thread_stats = stats.clone();
        let opts = options.clone();
        let thread = std::thread::Builder::new()
            .name("trawl-fixture".into())
            .spawn(move || {
                let setup = (|| -> io::Result<(Reactor, Served)> {
                    let reactor = Reactor::new()?;
                    let served = serve(&reactor.handle(), &opts, thread_stats)?;
                    Ok((reactor, served))
                })();
                match setup {
                    Ok((mut reactor, served)) => {
                        let _ =
                            tx.send(Ok((served.local_addr(), reactor.handle().thread_caller())));
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
        let (addr, caller) = rx
            .recv()
            .map_err(|_| io::Error::other("fixture server thread died during start-up"))??;
        Ok(Self {
            addr,
            tls: options.tls || options.untrusted_cert,
            stats,
            caller,
            thread: Some(thread),
            pages: options.pages,
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
    port: Rc<ListeningPort>,
    shared: Rc<RefCell<Option<Rc<Shared>>>>,
}

impl Served {
    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.port.local_addr()
    }

    /// Stops listening and aborts every open connection.
    pub fn close(&self) {
        self.port.stop_listening();
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
        Some(
            tls::server_config_from_pem(TEST_SERVER_CERT_PEM, TEST_SERVER_KEY_PEM)
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
    let cell = shared_cell.clone();
    let st = stats.clone();
    let port = listen_tcp(
        reactor,
        options.addr,
        move |_peer| {
            st.connections.fetch_add(1, Ordering::Relaxed);
            let shared = cell.borrow().clone();
            let conn = Rc::new_cyclic(|me| ServerConn {
                shared: shared.clone(),
                transport: RefCell::new(None),
                buf: RefCell::new(Vec::new()),
                busy: Cell::new(false),
                closed: Cell::new(false),
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
    )?;
    let base = format!("{scheme}://{}", port.local_addr());
    *shared_cell.borrow_mut() = Some(Rc::new(Shared {
        conns: RefCell::new(Vec::new()),
        site: Site::new(options.pages, base),
        reactor: reactor.clone(),
        stats,
        record: options.record,
        robots: options.robots.clone(),
        flaky: RefCell::new(HashMap::new()),
        bombs: RefCell::new(HashMap::new()),
    }));
    Ok(Served {
        port,
        shared: shared_cell,
    })
}

/// Compressed bomb bodies by `(encoding, decoded size)`.
type BombCache = HashMap<(String, u64), Rc<Vec<u8>>>;

struct Shared {
    conns: RefCell<Vec<std::rc::Weak<ServerConn>>>,
    site: Site,
    reactor: ReactorHandle,
    stats: Arc<FixtureStats>,
    record: bool,
    robots: Option<(u16, String)>,
    flaky: RefCell<HashMap<String, u32>>,
    bombs: RefCell<BombCache>,
}

struct ServerConn {
    shared: Option<Rc<Shared>>,
    transport: RefCell<Option<Rc<dyn Transport>>>,
    buf: RefCell<Vec<u8>>,
    /// A delayed or dripping answer is in progress: later requests wait.
    busy: Cell<bool>,
    closed: Cell<bool>,
    me: std::rc::Weak<ServerConn>,
}

/// A parsed request.
struct Req {
    method: String,
    target: String,
    path: String,
    query: Vec<(String, String)>,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    version: u8,
}

impl Req {
    fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn param_u64(&self, name: &str, default: u64) -> u64 {
        self.param(name)
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }

    fn wants_close(&self) -> bool {
        let conn = self
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("connection"))
            .map(|(_, v)| v.to_ascii_lowercase());
        match conn.as_deref() {
            Some(v) if v.contains("close") => true,
            Some(v) if v.contains("keep-alive") => false,
            _ => self.version == 0,
        }
    }
}

/// What to send back.
enum Reply {
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
        close: bool,
    },
    Chunked {
        status: u16,
        headers: Vec<(String, String)>,
        chunks: Vec<Vec<u8>>,
    },
    /// Raw bytes, then close.
    Raw(Vec<u8>),
    Delay(u64, Box<Reply>),
    Drip {
        head: Vec<u8>,
        bytes: u64,
        interval_ms: u64,
    },
    Reset,
}

fn reason(status: u16) -> &'static str {
    crate::proto::http1::reason_phrase(status).unwrap_or("Status")
}

fn set_cookies(values: Vec<String>) -> Reply {
    let mut headers: Vec<(String, String)> = values
        .into_iter()
        .map(|v| ("Set-Cookie".to_owned(), v))
        .collect();
    headers.push(("Content-Type".into(), "text/plain".into()));
    Reply::Full {
        status: 200,
        headers,
        body: b"cookies set".to_vec(),
        close: false,
    }
}

fn html(status: u16, body: String) -> Reply {
    Reply::Full {
        status,
        headers: vec![("Content-Type".into(), "text/html; charset=utf-8".into())],
        body: body.into_bytes(),
        close: false,
    }
}

fn text(status: u16, body: impl Into<String>) -> Reply {
    Reply::Full {
        status,
        headers: vec![("Content-Type".into(), "text/plain; charset=utf-8".into())],
        body: body.into().into_bytes(),
        close: false,
    }
}

fn redirect(status: u16, location: &str) -> Reply {
    Reply::Full {
        status,
        headers: vec![
            ("Location".into(), location.to_owned()),
            ("Content-Type".into(), "text/html".into()),
        ],
        body: format!("<a href=\"{location}\">moved</a>").into_bytes(),
        close: false,
    }
}

/// `application/x-www-form-urlencoded` decoding: `+` is a space, then percent-decoding.
fn form_decode(s: &str) -> String {
    let spaced = s.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced)
        .decode_utf8_lossy()
        .into_owned()
}

fn compress(encoding: &str, data: &[u8]) -> io::Result<Vec<u8>> {
    match encoding {
        "gzip" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(data)?;
            e.finish()
        }
        "deflate" => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(data)?;
            e.finish()
        }
        "deflate-raw" => {
            let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(data)?;
            e.finish()
        }
        _ => {
            let mut out = Vec::new();
            {
                let mut w = brotli::CompressorWriter::new(&mut out, 64 * 1024, 1, 22);
                w.write_all(data)?;
            }
            Ok(out)
        }
    }
}

impl Shared {
    fn route(&self, req: &Req) -> Reply {
        let path = req.path.as_str();
        let site = &self.site;
        if path == "/" || path == "/index.html" {
            return html(200, site.render_index());
        }
        if let Some(i) = site.page_number(path) {
            return html(200, site.render_page(i));
        }
        let mut parts = path.trim_start_matches('/').splitn(3, '/');
        let first = parts.next().unwrap_or("");
        let second = parts.next().unwrap_or("");
        match first {
            "robots.txt" => match &self.robots {
                None => text(200, site.robots()),
                Some((0, _)) => Reply::Reset,
                Some((status, body)) => text(*status, body.clone()),
            },
            "sitemap.xml" => Reply::Full {
                status: 200,
                headers: vec![("Content-Type".into(), "application/xml".into())],
                body: site.sitemap().into_bytes(),
                close: false,
            },
            "sitemap.xml.gz" => match compress("gzip", site.sitemap().as_bytes()) {
                Ok(body) => Reply::Full {
                    status: 200,
                    headers: vec![("Content-Type".into(), "application/x-gzip".into())],
                    body,
                    close: false,
                },
                Err(e) => text(500, e.to_string()),
            },
            "sitemap-index.xml" => Reply::Full {
                status: 200,
                headers: vec![("Content-Type".into(), "application/xml".into())],
                body: format!(
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n\
                     <sitemap><loc>{0}/sitemap.xml</loc></sitemap>\n<sitemap><loc>{0}/sitemap.xml.gz</loc></sitemap>\n</sitemapindex>\n",
                    site.base
                )
                .into_bytes(),
                close: false,
            },
            "page" => match second.parse::<usize>().ok().and_then(|n| site.render_list_page(n)) {
                Some(body) => html(200, body),
                None => html(404, "<h1>No quotes found!</h1>".into()),
            },
            "author" => match site.render_author(second) {
                Some(body) => html(200, body),
                None => html(404, "<h1>Unknown author</h1>".into()),
            },
            "status" => {
                let code = second.parse().unwrap_or(500);
                text(code, format!("status {code}\n"))
            }
            "redirect" => {
                let code = second.parse().unwrap_or(302);
                let to = req.param("to").map_or_else(|| Site::page_path(0), str::to_owned);
                redirect(code, &to)
            }
            "redirect-chain" => match second.parse::<u32>().unwrap_or(0) {
                0 => html(200, site.render_page(0)),
                n => redirect(302, &format!("/redirect-chain/{}", n - 1)),
            },
            "redirect-loop" => redirect(302, "/redirect-loop"),
            "delay" => {
                let ms = second.parse().unwrap_or(100);
                Reply::Delay(ms, Box::new(html(200, site.render_page(1))))
            }
            "gzip" | "deflate" | "deflate-raw" | "br" => {
                let body = site.render_page(2);
                match compress(first, body.as_bytes()) {
                    Ok(encoded) => Reply::Full {
                        status: 200,
                        headers: vec![
                            ("Content-Type".into(), "text/html; charset=utf-8".into()),
                            (
                                "Content-Encoding".into(),
                                if first == "deflate-raw" { "deflate".into() } else { first.to_owned() },
                            ),
                        ],
                        body: encoded,
                        close: false,
                    },
                    Err(e) => text(500, e.to_string()),
                }
            }
            "chunked" => {
                let body = site.render_page(3).into_bytes();
                let n = req.param_u64("n", 5).clamp(1, 1000) as usize;
                let size = body.len().div_ceil(n).max(1);
                Reply::Chunked {
                    status: 200,
                    headers: vec![("Content-Type".into(), "text/html; charset=utf-8".into())],
                    chunks: body.chunks(size).map(<[u8]>::to_vec).collect(),
                }
            }
            "cut" => {
                let mut raw = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n".to_vec();
                raw.extend(std::iter::repeat_n(b'x', 100));
                Reply::Raw(raw)
            }
            "reset" => Reply::Reset,
            "close" => Reply::Full {
                status: 200,
                headers: vec![("Content-Type".into(), "text/plain".into())],
                body: b"closing after this".to_vec(),
                close: true,
            },
            "http10" => {
                let mut raw = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n".to_vec();
                raw.extend_from_slice(b"an HTTP/1.0 body delimited by the connection closing");
                Reply::Raw(raw)
            }
            "drip" => {
                let bytes = req.param_u64("bytes", 10).min(10_000);
                let ms = req.param_u64("ms", 100);
                Reply::Drip {
                    head: format!("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {bytes}\r\n\r\n").into_bytes(),
                    bytes,
                    interval_ms: ms,
                }
            }
            "big" => {
                let size = req.param_u64("size", 1 << 20).min(1 << 31) as usize;
                Reply::Full {
                    status: 200,
                    headers: vec![("Content-Type".into(), "application/octet-stream".into())],
                    body: vec![b'b'; size],
                    close: false,
                }
            }
            "big-chunked" => {
                let size = req.param_u64("size", 1 << 20).min(1 << 31) as usize;
                let chunk = vec![b'c'; 64 * 1024];
                let mut chunks = vec![chunk; size / (64 * 1024)];
                if !size.is_multiple_of(64 * 1024) {
                    chunks.push(vec![b'c'; size % (64 * 1024)]);
                }
                Reply::Chunked {
                    status: 200,
                    headers: vec![("Content-Type".into(), "application/octet-stream".into())],
                    chunks,
                }
            }
            "bomb" => {
                let size = req.param_u64("size", 100_000_000).min(4 << 30);
                let encoding = match second {
                    "gzip" | "deflate" | "deflate-raw" | "br" => second,
                    _ => "gzip",
                };
                let key = (encoding.to_owned(), size);
                let cached = self.bombs.borrow().get(&key).cloned();
                let body = match cached {
                    Some(b) => b,
                    None => {
                        let zeros = vec![0u8; size as usize];
                        match compress(encoding, &zeros) {
                            Ok(b) => {
                                let b = Rc::new(b);
                                self.bombs.borrow_mut().insert(key, b.clone());
                                b
                            }
                            Err(e) => return text(500, e.to_string()),
                        }
                    }
                };
                Reply::Full {
                    status: 200,
                    headers: vec![
                        ("Content-Type".into(), "text/html".into()),
                        (
                            "Content-Encoding".into(),
                            if encoding == "deflate-raw" { "deflate".into() } else { encoding.to_owned() },
                        ),
                    ],
                    body: (*body).clone(),
                    close: false,
                }
            }
            "set-cookie" => set_cookies(
                req.query
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect(),
            ),
            "set-cookie-raw" => set_cookies(
                req.query
                    .iter()
                    .filter(|(k, _)| k == "c")
                    .map(|(_, v)| v.clone())
                    .collect(),
            ),
            "links" => {
                let mut body = String::from("<html><head><title>links</title></head><body>\n");
                for (k, v) in &req.query {
                    if k == "to" {
                        let v = v.replace('&', "&amp;").replace('"', "&quot;");
                        body.push_str(&format!("<a href=\"{v}\">{v}</a>\n"));
                    }
                }
                body.push_str("</body></html>\n");
                let mut headers = vec![("Content-Type".to_owned(), "text/html; charset=utf-8".to_owned())];
                if let Some(p) = req.param("policy") {
                    headers.push(("Referrer-Policy".into(), p.to_owned()));
                }
                Reply::Full {
                    status: 200,
                    headers,
                    body: body.into_bytes(),
                    close: false,
                }
            }
            "echo" => {
                let mut out = format!("{} {}\n", req.method, req.target);
                for (k, v) in &req.headers {
                    out.push_str(&format!("{k}: {v}\n"));
                }
                out.push('\n');
                out.push_str(&String::from_utf8_lossy(&req.body));
                text(200, out)
            }
            "flaky" => {
                let failures: u32 = second.parse().unwrap_or(1);
                let key = req.param("key").unwrap_or("default").to_owned();
                let mut flaky = self.flaky.borrow_mut();
                let seen = flaky.entry(key).or_insert(0);
                *seen += 1;
                if *seen <= failures {
                    text(503, "try again later\n")
                } else {
                    html(200, site.render_page(4))
                }
            }
            "meta-refresh" => {
                let to = req.param("to").unwrap_or("/index.html");
                let delay = req.param("delay").unwrap_or("0");
                html(
                    200,
                    format!("<html><head><meta http-equiv=\"refresh\" content=\"{delay}; url={to}\"></head><body>refresh</body></html>"),
                )
            }
            _ => html(404, "<h1>Not Found</h1>".into()),
        }
    }
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
            shared.stats.requests.fetch_add(1, Ordering::Relaxed);
            if shared.record
                && let Ok(mut targets) = shared.stats.targets.lock()
            {
                *targets.entry(req.target.clone()).or_insert(0) += 1;
            }
            let head_only = req.method == "HEAD";
            let close = req.wants_close();
            let reply = shared.route(&req);
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
