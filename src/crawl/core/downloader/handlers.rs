//! Download handlers per URL scheme (`DOWNLOAD_HANDLERS`): `http`/`https` through the
//! reactor's HTTP client, `data:` (RFC 2397) and `file:` as Scrapy has them.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

use bytes::Bytes;

use super::middleware::{DownloadFailure, Downloaded};

use crate::client::http::{
    DownloadObserver, HttpClient, HttpClientConfig, HttpRequest, Observed, Observer,
};
use crate::crawl::base::errors::StopDownload;
use crate::crawl::base::signals::{Signal, SignalArgs};
use crate::crawl::context::CrawlContext;
use crate::crawl::http::request::Request;
use crate::crawl::http::request::keys;
use crate::crawl::http::response::Response;
use crate::crawl::http::response::ResponseBuilder;
use crate::defer::{Deferred, Failure};
use crate::net::dns::ResolverConfig;
use crate::proto::Headers;

/// Turns a request into a response for one URL scheme.
pub trait DownloadHandler {
    /// Downloads `request`.
    fn download_request(&self, request: &Request) -> Deferred<Response>;

    /// Downloads `request`, handed over by the downloader: a failure comes back with
    /// it (`process_exception` and the spider's errback get that request). The
    /// default lends it to [`download_request`](Self::download_request) meanwhile (a
    /// panic in it becomes the failure). A handler that puts the request into its
    /// response and writes to it (`download_latency`) overrides this: with the only
    /// copy in hand, the write copies nothing.
    fn download_owned(&self, request: Request) -> Deferred<Downloaded> {
        let d = match catch_unwind(AssertUnwindSafe(|| self.download_request(&request))) {
            Ok(d) => d,
            Err(panic) => {
                let failure = Failure::from_panic(panic.as_ref());
                return crate::defer::succeed(Err(DownloadFailure { failure, request }));
            }
        };
        d.then(move |r| Ok(r.map_err(|failure| DownloadFailure { failure, request })))
    }

    /// Releases resources (idle connections) when the crawl ends.
    fn close(&self) {}

    /// The address the handler's DNS cache holds for `host`, if it resolved it already
    /// (Scrapy's `dnscache`, which keys slots under `CONCURRENT_REQUESTS_PER_IP`).
    fn cached_ip(&self, host: &str) -> Option<std::net::IpAddr> {
        let _ = host;
        None
    }
}

/// `http` and `https` through [`HttpClient`] (Scrapy's `HTTP11DownloadHandler`).
#[derive(Debug)]
pub struct HttpHandler {
    client: HttpClient,
    ctx: std::rc::Weak<CrawlContext>,
    timeout: f64,
    maxsize: u64,
    warnsize: u64,
    fail_on_dataloss: bool,
    verify: bool,
    decode: bool,
    /// `DOWNLOAD_BIND_ADDRESS`.
    bind: Option<std::net::SocketAddr>,
}

/// A `bindaddress` (meta or `DOWNLOAD_BIND_ADDRESS`) as Scrapy takes it: an IP
/// address (any port) or `[ip, port]`; null or `""` for none. Host names are refused:
/// resolving one would block the reactor, and a source address is an address.
///
/// # Errors
///
/// Anything else, with what was given.
pub fn bind_address(v: &serde_json::Value) -> Result<Option<std::net::SocketAddr>, String> {
    use serde_json::Value;
    let (host, port) = match v {
        Value::Null => return Ok(None),
        Value::String(s) if s.is_empty() => return Ok(None),
        Value::String(s) => (s.as_str(), 0),
        Value::Array(a) if a.len() == 2 => match (a[0].as_str(), a[1].as_u64()) {
            (Some(h), Some(p)) => (
                h,
                u16::try_from(p).map_err(|_| format!("bindaddress port {p} is not a port"))?,
            ),
            _ => return Err(format!("bindaddress {v} is not [\"ip\", port]")),
        },
        _ => {
            return Err(format!(
                "bindaddress {v} is not an IP address or [\"ip\", port]"
            ));
        }
    };
    let ip: std::net::IpAddr = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .map_err(|_| format!("bindaddress {host:?} is not an IP address"))?;
    Ok(Some(std::net::SocketAddr::new(ip, port)))
}

/// `DNS_RESOLVE`: a dict `{host: address or [addresses]}`, a list of curl-style
/// `HOST:ADDRESS` / `HOST:PORT:ADDRESS` strings, or the path of a hosts file.
fn dns_overrides(
    value: Option<&serde_json::Value>,
) -> Result<HashMap<String, Vec<std::net::IpAddr>>, String> {
    use serde_json::Value;
    let mut map: HashMap<String, Vec<std::net::IpAddr>> = HashMap::new();
    let ip = |host: &str, v: &Value| -> Result<std::net::IpAddr, String> {
        v.as_str()
            .and_then(|a| a.trim_start_matches('[').trim_end_matches(']').parse().ok())
            .ok_or_else(|| format!("{host}: {v} is not an IP address"))
    };
    match value {
        None | Some(Value::Null) => {}
        Some(Value::String(path)) if path.is_empty() => {}
        // A JSON dict or list given as text (`-s DNS_RESOLVE='{"a.test": "127.0.0.2"}'`).
        Some(Value::String(text)) if text.starts_with(['{', '[']) => {
            let parsed: Value = serde_json::from_str(text).map_err(|e| format!("{text}: {e}"))?;
            return dns_overrides(Some(&parsed));
        }
        Some(Value::String(path)) => {
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("hosts file {path}: {e}"))?;
            map = crate::net::dns::parse_hosts(&text).map_err(|e| format!("{path}: {e}"))?;
        }
        Some(Value::Object(o)) => {
            for (host, v) in o {
                let ips = match v {
                    Value::Array(a) => a.iter().map(|x| ip(host, x)).collect::<Result<_, _>>()?,
                    _ => vec![ip(host, v)?],
                };
                map.insert(host.to_ascii_lowercase(), ips);
            }
        }
        Some(Value::Array(a)) => {
            for entry in a {
                let entry = entry
                    .as_str()
                    .ok_or_else(|| format!("{entry} is not a HOST:ADDRESS string"))?;
                let (host, ip) = crate::net::dns::parse_resolve_entry(entry)?;
                let ips = map.entry(host).or_default();
                if !ips.contains(&ip) {
                    ips.push(ip);
                }
            }
        }
        Some(other) => {
            return Err(format!(
                "{other} is not a dict, a list of HOST:ADDRESS or a hosts file path"
            ));
        }
    }
    Ok(map)
}

impl HttpHandler {
    /// Builds the handler from the crawler's settings.
    ///
    /// # Errors
    ///
    /// No reactor (a test without I/O), or invalid settings.
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Self, Failure> {
        let reactor = ctx
            .reactor()
            .ok_or_else(|| Failure::msg("the HTTP download handler needs a reactor"))?;
        let s = &ctx.settings;
        let mut config = HttpClientConfig::new()?;
        config.max_idle_per_key = s.get_usize("CONCURRENT_REQUESTS_PER_DOMAIN")?.max(1);
        config.max_idle_total = s.get_usize("DOWNLOAD_MAX_IDLE_CONNECTIONS")?;
        // DOWNLOAD_TLS_MIN_VERSION / DOWNLOAD_TLS_MAX_VERSION, and the deprecated
        // DOWNLOADER_CLIENT_TLS_METHOD ("TLSv1.2": that version only).
        let method = s
            .get_str("DOWNLOADER_CLIENT_TLS_METHOD")?
            .unwrap_or_default();
        let pinned = match method.as_str() {
            "" | "TLS" => None,
            "TLSv1.0" | "TLSv1.1" | "TLSv1.2" => {
                log::warn!(
                    "Setting DOWNLOADER_CLIENT_TLS_METHOD to a non-default value is deprecated, \
                     please use DOWNLOAD_TLS_MIN_VERSION and/or DOWNLOAD_TLS_MAX_VERSION instead."
                );
                Some(method.clone())
            }
            other => {
                return Err(Failure::msg(format!(
                    "Unknown DOWNLOADER_CLIENT_TLS_METHOD value: {other}"
                )));
            }
        };
        let min = s
            .get_str("DOWNLOAD_TLS_MIN_VERSION")?
            .or_else(|| pinned.clone());
        let max = s.get_str("DOWNLOAD_TLS_MAX_VERSION")?.or(pinned);
        let ca_file = s.get_str("DOWNLOAD_TLS_CA_FILE")?.filter(|f| !f.is_empty());
        // DOWNLOADER_CLIENT_TLS_CIPHERS: OpenSSL's cipher list language, for TLS 1.2.
        let ciphers = s
            .get_str("DOWNLOADER_CLIENT_TLS_CIPHERS")?
            .unwrap_or_else(|| "DEFAULT".to_owned());
        let tls12 = if ciphers.trim() == "DEFAULT" {
            None
        } else {
            let suites = crate::net::tls_ciphers::tls12_suites(&ciphers).map_err(Failure::msg)?;
            if suites.is_empty() {
                log::warn!(
                    "DOWNLOADER_CLIENT_TLS_CIPHERS {ciphers:?} names no TLS 1.2 suite trawl \
                     speaks (rustls: ECDHE with AES-GCM or ChaCha20-Poly1305): TLS 1.3 only"
                );
            }
            Some(suites)
        };
        if min.is_some() || max.is_some() || ca_file.is_some() || tls12.is_some() {
            let versions = crate::net::tls::protocol_versions(min.as_deref(), max.as_deref())
                .map_err(Failure::msg)?;
            // DOWNLOAD_TLS_CA_FILE: a private CA trusted besides the Mozilla roots.
            let pem = match &ca_file {
                Some(path) => Some(
                    std::fs::read(path)
                        .map_err(|e| Failure::msg(format!("DOWNLOAD_TLS_CA_FILE {path}: {e}")))?,
                ),
                None => None,
            };
            let (verify, no_verify) =
                crate::net::tls::client_configs(&versions, tls12.as_deref(), pem.as_deref())
                    .map_err(|e| match &ca_file {
                        Some(path) => Failure::msg(format!("DOWNLOAD_TLS_CA_FILE {path}: {e}")),
                        None => Failure::new(e),
                    })?;
            config.tls_verify = verify;
            config.tls_no_verify = no_verify;
        }
        // TLS sessions kept for resumption: a host revisited after its connection
        // closed resumes instead of a full handshake (no certificate exchange).
        let sessions = s.get_usize("TLS_SESSION_CACHE_SIZE")?;
        let with_cache = |c: &std::sync::Arc<rustls::ClientConfig>| {
            let mut c = (**c).clone();
            // TLS_SESSION_CACHE_SIZE counts hosts (one ticket each), least recently
            // used forgotten: rustls' own cache counts tickets, eight per host.
            c.resumption = if sessions == 0 {
                rustls::client::Resumption::disabled()
            } else {
                rustls::client::Resumption::store(std::sync::Arc::new(
                    crate::net::tls_sessions::SessionCache::new(sessions),
                ))
            };
            std::sync::Arc::new(c)
        };
        config.tls_verify = with_cache(&config.tls_verify);
        config.tls_no_verify = with_cache(&config.tls_no_verify);
        config.resolver = ResolverConfig {
            cache_enabled: s.get_bool("DNSCACHE_ENABLED")?,
            cache_size: s.get_usize("DNSCACHE_SIZE")?,
            timeout: s.get_duration("DNS_TIMEOUT")?,
            threads: s.get_usize("REACTOR_THREADPOOL_MAXSIZE")?.max(1),
            negative_ttl: s.get_duration("DNSCACHE_NEGATIVE_TTL")?,
            overrides: std::sync::Arc::new(
                dns_overrides(s.get("DNS_RESOLVE"))
                    .map_err(|e| Failure::msg(format!("DNS_RESOLVE: {e}")))?,
            ),
        };
        Ok(Self {
            client: HttpClient::new(reactor, config),
            ctx: Rc::downgrade(ctx),
            timeout: s.get_duration("DOWNLOAD_TIMEOUT")?,
            maxsize: u64::try_from(s.get_int("DOWNLOAD_MAXSIZE")?).unwrap_or(0),
            warnsize: u64::try_from(s.get_int("DOWNLOAD_WARNSIZE")?).unwrap_or(0),
            fail_on_dataloss: s.get_bool("DOWNLOAD_FAIL_ON_DATALOSS")?,
            verify: s.get_bool("DOWNLOAD_VERIFY_CERTIFICATES")?,
            decode: s.get_bool("COMPRESSION_ENABLED")?,
            bind: match s.get("DOWNLOAD_BIND_ADDRESS") {
                Some(v) => bind_address(v)
                    .map_err(|e| Failure::msg(format!("DOWNLOAD_BIND_ADDRESS: {e}")))?,
                None => None,
            },
        })
    }

    /// The client (for counters).
    pub fn client(&self) -> &HttpClient {
        &self.client
    }

    /// The client's request for `request`.
    fn http_request(&self, request: &Request) -> Result<HttpRequest, Failure> {
        let meta = request.meta();
        let mut url = request.url().clone();
        url.set_fragment(None);
        let proxy = match meta.get_str(keys::PROXY) {
            Some(p) if !p.is_empty() => match url::Url::parse(p) {
                Ok(u) => Some(u),
                Err(e) => return Err(Failure::msg(format!("invalid proxy {p:?}: {e}"))),
            },
            _ => None,
        };
        let bind_address = match meta.get(keys::BINDADDRESS) {
            Some(v) => bind_address(v).map_err(Failure::msg)?.or(self.bind),
            None => self.bind,
        };
        Ok(HttpRequest {
            method: request.method().to_cow(),
            url,
            headers: request.headers().clone(),
            body: request.body().to_vec(),
            body_file: None,
            timeout: meta.get_f64(keys::DOWNLOAD_TIMEOUT).unwrap_or(self.timeout),
            maxsize: meta
                .get_i64(keys::DOWNLOAD_MAXSIZE)
                .and_then(|v| u64::try_from(v).ok())
                .unwrap_or(self.maxsize),
            warnsize: meta
                .get_i64(keys::DOWNLOAD_WARNSIZE)
                .and_then(|v| u64::try_from(v).ok())
                .unwrap_or(self.warnsize),
            proxy,
            verify_tls: self.verify && !meta.get_bool(keys::DONT_VERIFY_SSL),
            decode_content: self.decode,
            bind_address,
            fail_on_dataloss: match meta.get(keys::DOWNLOAD_FAIL_ON_DATALOSS) {
                Some(v) => v.as_bool().unwrap_or(true),
                None => self.fail_on_dataloss,
            },
            observer: None,
        })
    }
}

impl DownloadHandler for HttpHandler {
    fn download_request(&self, request: &Request) -> Deferred<Response> {
        self.download_owned(request.clone())
            .then(|r| r.and_then(|r| r.map_err(|e| e.failure)))
    }

    fn download_owned(&self, request: Request) -> Deferred<Downloaded> {
        let mut http = match self.http_request(&request) {
            Ok(http) => http,
            Err(failure) => {
                return crate::defer::succeed(Err(DownloadFailure { failure, request }));
            }
        };
        // Only a crawl that listens to the streaming signals pays for them.
        let mut stopped: Option<Rc<std::cell::Cell<Option<bool>>>> = None;
        if let Some(c) = self.ctx.upgrade()
            && (c.signals.has_receivers(Signal::HeadersReceived)
                || c.signals.has_receivers(Signal::BytesReceived))
        {
            let flag = stopped.insert(Rc::default()).clone();
            http.observer = Some(Observer(Rc::new(SignalObserver {
                ctx: self.ctx.clone(),
                request: request.clone(),
                stopped: flag,
            })));
        }
        self.client.request(http).then(move |r| {
            let r = match r {
                Ok(r) => r,
                Err(failure) => return Ok(Err(DownloadFailure { failure, request })),
            };
            // The downloader handed its request over and the middleware manager keeps
            // none: these writes copy nothing.
            let mut request = request;
            request
                .meta_mut()
                .insert_static(keys::DOWNLOAD_LATENCY, r.latency);
            let mut flags: Vec<String> = r.flags.iter().map(|f| (*f).to_owned()).collect();
            if let Some(enc) = &r.decoded_from {
                request.meta_mut().insert(keys::DECODED_FROM, enc.as_str());
                flags.retain(|f| f != "decoded");
            }
            let response = ResponseBuilder {
                url: r.url,
                status: r.status,
                headers: r.headers,
                body: Bytes::from(r.body),
                request,
                flags,
                ip: r.ip.map(|a| a.ip()),
                protocol: Some(r.protocol),
            }
            .build();
            match stopped.and_then(|s| s.get()) {
                // Scrapy: `StopDownload(fail=True)` sends the truncated response to the
                // errback, inside the exception.
                Some(true) => {
                    let request = response.request().clone();
                    let failure = Failure::new(StopDownload {
                        fail: true,
                        response: Some(response),
                    });
                    Ok(Err(DownloadFailure { failure, request }))
                }
                _ => Ok(Ok(response)),
            }
        })
    }

    fn close(&self) {
        self.client.close_idle();
        let counters = self.client.counters();
        if counters.tls_handshakes > 0
            && let Some(c) = self.ctx.upgrade()
        {
            let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
            c.stats.set_value(
                "downloader/tls/handshakes",
                n(counters.tls_handshakes).into(),
            );
            c.stats
                .set_value("downloader/tls/resumed", n(counters.tls_resumed).into());
        }
        if let Some(c) = self.ctx.upgrade() {
            let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
            if counters.connections > 0 {
                c.stats
                    .set_value("downloader/connections", n(counters.connections).into());
            }
            // Lookups that went to a resolver thread and the answers the cache gave.
            let (lookups, hits) = self.client.resolver().counters();
            if lookups + hits > 0 {
                c.stats.set_value("dns/lookups", n(lookups).into());
                c.stats.set_value("dns/cache_hits", n(hits).into());
            }
            let negative = self.client.resolver().negative_hits();
            if negative > 0 {
                c.stats
                    .set_value("dns/negative_cache_hits", n(negative).into());
            }
            if counters.idle_evicted > 0 {
                c.stats.set_value(
                    "downloader/connections_idle_evicted",
                    n(counters.idle_evicted).into(),
                );
            }
        }
        let waits = self.client.fd_exhausted_waits();
        if waits > 0
            && let Some(c) = self.ctx.upgrade()
        {
            c.stats.set_value(
                "downloader/fd_exhausted_waits",
                i64::try_from(waits).unwrap_or(i64::MAX).into(),
            );
        }
    }

    fn cached_ip(&self, host: &str) -> Option<std::net::IpAddr> {
        self.client.resolver().cached(host)
    }
}

/// `data:` URLs (RFC 2397).
#[derive(Debug, Clone, Copy, Default)]
pub struct DataUriHandler;

/// The handler of a scheme whose handler could not be built: each request fails with
/// the reason (Scrapy's `NotSupported("Unsupported URL scheme 'x': <why>")`).
#[derive(Debug)]
pub struct UnavailableHandler {
    /// The scheme.
    pub scheme: String,
    /// Why its handler could not be built.
    pub reason: String,
}

impl DownloadHandler for UnavailableHandler {
    fn download_request(&self, _request: &Request) -> Deferred<Response> {
        crate::defer::fail(crate::crawl::base::errors::NotConfigured(format!(
            "Unsupported URL scheme '{}': {}",
            self.scheme, self.reason
        )))
    }
}

impl DownloadHandler for DataUriHandler {
    fn download_request(&self, request: &Request) -> Deferred<Response> {
        let url = request.url().as_str();
        let Some(rest) = url.strip_prefix("data:") else {
            return crate::defer::fail(Failure::msg(format!("not a data: URL: {url}")));
        };
        let Some((meta, data)) = rest.split_once(',') else {
            return crate::defer::fail(Failure::msg(format!(
                "malformed data: URL (no comma): {url}"
            )));
        };
        let (media, base64) = match meta.strip_suffix(";base64") {
            Some(m) => (m, true),
            None => (meta, false),
        };
        let decoded: Vec<u8> = percent_encoding::percent_decode(data.as_bytes()).collect();
        let body = if base64 {
            let text: String = String::from_utf8_lossy(&decoded)
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            match crate::util::base64_decode(&text) {
                Some(b) => b,
                None => return crate::defer::fail(Failure::msg("malformed base64 in data: URL")),
            }
        } else {
            decoded
        };
        let media = if media.is_empty() {
            "text/plain;charset=US-ASCII"
        } else {
            media
        };
        let mut headers = Headers::new();
        headers.append("Content-Type", media);
        crate::defer::succeed(Response::new(request.clone(), 200, headers, body))
    }
}

/// `file:` URLs, read from the local disk.
#[derive(Debug, Clone, Copy, Default)]
pub struct FileHandler;

impl DownloadHandler for FileHandler {
    fn download_request(&self, request: &Request) -> Deferred<Response> {
        let path = match request.url().to_file_path() {
            Ok(p) => p,
            Err(()) => {
                return crate::defer::fail(Failure::msg(format!(
                    "not a local file URL: {}",
                    request.url()
                )));
            }
        };
        match std::fs::read(&path) {
            Ok(body) => {
                crate::defer::succeed(Response::new(request.clone(), 200, Headers::new(), body))
            }
            Err(e) => {
                crate::defer::fail(Failure::msg(format!("cannot read {}: {e}", path.display())))
            }
        }
    }
}

/// Sends `headers_received` / `bytes_received` for one download and stops it when a
/// handler returns [`StopDownload`] (Scrapy's `check_stop_download`).
struct SignalObserver {
    ctx: std::rc::Weak<CrawlContext>,
    request: Request,
    /// `Some(fail)` once a handler stopped the download.
    stopped: Rc<std::cell::Cell<Option<bool>>>,
}

impl SignalObserver {
    fn verdict(&self, results: &[Result<(), Failure>], signal: &str) -> Observed {
        let stop = results.iter().find_map(|r| match r {
            Err(f) => f.downcast_ref::<StopDownload>(),
            Ok(()) => None,
        });
        match stop {
            Some(s) => {
                log::debug!(
                    "Download stopped for {} from a {signal} handler",
                    self.request
                );
                self.stopped.set(Some(s.fail));
                Observed::Stop
            }
            None => Observed::Continue,
        }
    }
}

impl DownloadObserver for SignalObserver {
    fn headers_received(
        &self,
        status: u16,
        headers: &crate::proto::Headers,
        expected: Option<u64>,
    ) -> Observed {
        let Some(c) = self.ctx.upgrade() else {
            return Observed::Continue;
        };
        let results = c.signals.send_catch_log(
            Signal::HeadersReceived,
            SignalArgs::Headers {
                headers,
                status,
                body_length: expected,
                request: &self.request,
            },
        );
        self.verdict(&results, "headers_received")
    }

    fn bytes_received(&self, data: &[u8]) -> Observed {
        let Some(c) = self.ctx.upgrade() else {
            return Observed::Continue;
        };
        let results = c.signals.send_catch_log(
            Signal::BytesReceived,
            SignalArgs::Bytes {
                data,
                request: &self.request,
            },
        );
        self.verdict(&results, "bytes_received")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::success_result_of;

    #[test]
    fn data_uris() {
        let r = success_result_of(
            DataUriHandler.download_request(&Request::get("data:,Hello%2C%20World!").unwrap()),
        );
        assert_eq!(r.body(), b"Hello, World!");
        assert_eq!(
            r.headers().get_str("content-type"),
            Some("text/plain;charset=US-ASCII")
        );
        let r = success_result_of(
            DataUriHandler
                .download_request(&Request::get("data:text/html;base64,PGI+aGk8L2I+").unwrap()),
        );
        assert_eq!(r.body(), b"<b>hi</b>");
        assert_eq!(r.headers().get_str("content-type"), Some("text/html"));
    }
}
