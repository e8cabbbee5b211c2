//! The HTTP client's request, response, error and configuration types.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use url::Url;

use crate::defer::Failure;
use crate::net::dns::ResolverConfig;
use crate::net::tls;
use crate::proto::Headers;
use crate::proto::http1::Limits;

/// One request to send.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    /// The method, upper case (borrowed for the standard ones).
    pub method: std::borrow::Cow<'static, str>,
    /// The URL (http or https; the fragment is never sent).
    pub url: Url,
    /// Headers to send, in order.
    pub headers: Headers,
    /// The body.
    pub body: Vec<u8>,
    /// A body read from a file range instead of `body`, streamed one 64 KiB chunk at
    /// a time (an upload of a large file keeps memory flat). The connection is not
    /// reused after it (`Connection: close`): a server that answers before the whole
    /// body is sent must not see the rest as the next request.
    pub body_file: Option<BodyFile>,
    /// Seconds the whole download may take (`DOWNLOAD_TIMEOUT`, meta `download_timeout`).
    pub timeout: f64,
    /// Largest response body, wire or decoded (`DOWNLOAD_MAXSIZE`; 0 = no limit).
    pub maxsize: u64,
    /// Body size past which a warning is logged once (`DOWNLOAD_WARNSIZE`; 0 = never).
    pub warnsize: u64,
    /// A proxy (meta `proxy`): `http://`, `https://`, `socks5://` or `socks5h://`,
    /// `[user:pass@]host:port`.
    pub proxy: Option<Url>,
    /// Verify the server's certificate (on unless a request or setting turns it off).
    pub verify_tls: bool,
    /// Decode `Content-Encoding` (gzip, deflate, br, zstd) and drop the header.
    pub decode_content: bool,
    /// The local address to connect from (meta `bindaddress`,
    /// `DOWNLOAD_BIND_ADDRESS`); port 0 for any. Connections are pooled per address.
    pub bind_address: Option<std::net::SocketAddr>,
    /// Fail when the connection closes before the announced body is complete
    /// (`DOWNLOAD_FAIL_ON_DATALOSS`); otherwise return what arrived, flagged `dataloss`.
    pub fail_on_dataloss: bool,
    /// Told about the headers and each piece of the body as they arrive, and may stop
    /// the download (Scrapy's `headers_received` / `bytes_received` signals).
    pub observer: Option<Observer>,
}

/// A request body that is a range of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyFile {
    /// The file.
    pub path: std::path::PathBuf,
    /// Where the body starts.
    pub offset: u64,
    /// How many bytes it has.
    pub len: u64,
}

/// What a [`DownloadObserver`] wants after seeing part of a download.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observed {
    /// Go on downloading.
    Continue,
    /// Stop here: the response completes now with the body received so far, flagged
    /// `download_stopped`, and the connection is closed.
    Stop,
}

/// Watches a download as it arrives. Called with no borrow of the connection held: an
/// observer may do anything, cancel the download included.
pub trait DownloadObserver {
    /// The status line and headers arrived; `expected` is the announced body length.
    fn headers_received(&self, status: u16, headers: &Headers, expected: Option<u64>) -> Observed;
    /// A piece of the body arrived, as on the wire (before content decoding).
    fn bytes_received(&self, data: &[u8]) -> Observed;
}

/// A [`DownloadObserver`] on an [`HttpRequest`].
#[derive(Clone)]
pub struct Observer(pub std::rc::Rc<dyn DownloadObserver>);

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Observer")
    }
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
            body_file: None,
            timeout: 180.0,
            maxsize: 1024 * 1024 * 1024,
            warnsize: 32 * 1024 * 1024,
            proxy: None,
            verify_tls: true,
            decode_content: true,
            bind_address: None,
            fail_on_dataloss: true,
            observer: None,
        }
    }

    pub(super) fn idempotent(&self) -> bool {
        matches!(
            &*self.method,
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

/// Client configuration.
#[derive(Clone)]
pub struct HttpClientConfig {
    /// Idle connections kept per `(scheme, host, port, proxy)` (Scrapy uses
    /// `CONCURRENT_REQUESTS_PER_DOMAIN`, 8).
    pub max_idle_per_key: usize,
    /// Seconds an idle connection is kept (Twisted's pool: 240).
    pub idle_timeout: f64,
    /// Idle connections kept in all (trawl's `DOWNLOAD_MAX_IDLE_CONNECTIONS`, 1,024; 0:
    /// no limit, as Twisted): past it the connection idle the longest is closed, so a
    /// crawl of 10,000 hosts does not hold 10,000 sockets and their TLS buffers.
    pub max_idle_total: usize,
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
            max_idle_total: 1024,
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
            .field("max_idle_total", &self.max_idle_total)
            .field("resolver", &self.resolver)
            .finish_non_exhaustive()
    }
}

/// A download did not finish within its timeout (Scrapy: "Getting `<url>` took longer
/// than `<n>` seconds."). Its source is the [`TimeoutError`](crate::defer::TimeoutError).
#[derive(Debug, Clone)]
pub struct DownloadTimeout {
    /// The URL requested.
    pub url: String,
    /// The timeout, in seconds (`DOWNLOAD_TIMEOUT` or meta `download_timeout`).
    pub seconds: f64,
    source: crate::defer::TimeoutError,
}

impl DownloadTimeout {
    /// A timeout of `seconds` for `url`.
    pub fn new(url: impl Into<String>, seconds: f64) -> Self {
        Self {
            url: url.into(),
            seconds,
            source: crate::defer::TimeoutError { seconds },
        }
    }
}

impl std::fmt::Display for DownloadTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Getting {} took longer than {} seconds (DOWNLOAD_TIMEOUT / meta download_timeout)",
            self.url, self.seconds
        )
    }
}

impl std::error::Error for DownloadTimeout {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
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
    /// Connection attempts that found no file descriptor (EMFILE/ENFILE) and waited.
    pub fd_exhausted_waits: u64,
    /// TLS handshakes completed.
    pub tls_handshakes: u64,
    /// Of which resumed an earlier session (no certificate exchange).
    pub tls_resumed: u64,
    /// Idle connections closed to stay within `max_idle_total`.
    pub idle_evicted: u64,
}
