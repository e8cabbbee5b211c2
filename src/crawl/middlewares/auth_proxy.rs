//! `HttpAuthMiddleware` and `HttpProxyMiddleware`: the two middlewares that attach
//! credentials, and so the two that must never attach them to the wrong host.
//!
//! * HttpAuth: `HTTPAUTH_USER` / `HTTPAUTH_PASS` (Scrapy 2.19's names; `HTTP_USER` /
//!   `HTTP_PASS`, after the older spider attributes, are accepted too) are sent as
//!   `Authorization: Basic` only to `HTTPAUTH_DOMAIN` (or `HTTP_AUTH_DOMAIN`) and its
//!   subdomains (a `host:port` domain also pins the port). Without a domain, the first request *with a host* fixes it (Scrapy ≤ 2.18's
//!   behaviour after CVE-2021-41125; 2.19 refuses to start instead); `"*"` sends them
//!   everywhere, explicitly. Meta `http_user` / `http_pass` (and `http_auth_domain`,
//!   default the request's own host) give one request its own credentials.
//! * HttpProxy: meta `proxy` (with `user:pass@` credentials moved into a
//!   `Proxy-Authorization` header), else `http_proxy` / `https_proxy` from the
//!   environment minus `no_proxy` hosts. `Proxy-Authorization` is remembered with the
//!   proxy it belongs to (meta `_auth_proxy`) and removed when the request's proxy
//!   changes (GHSA-9x8m-2xpf-crp3); a proxy picked from the environment is marked
//!   `_scheme_proxy` so a scheme-changing redirect re-resolves it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use url::Url;

use crate::crawl::Request;
use crate::crawl::context::CrawlContext;
use crate::crawl::downloader::middleware::{DownloaderMiddleware, RequestOutcome};
use crate::crawl::errors::NotConfigured;
use crate::defer::Failure;

fn basic(user: &str, pass: &str) -> String {
    format!(
        "Basic {}",
        crate::util::base64_encode(format!("{user}:{pass}").as_bytes())
    )
}

/// Whether `host` is `domain` or one of its subdomains (w3lib's
/// `url_is_from_any_domain`).
pub fn host_in_domain(host: &str, domain: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let domain = domain.trim_start_matches('.').to_ascii_lowercase();
    host == domain
        || (host.len() > domain.len()
            && host.ends_with(&domain)
            && host.as_bytes()[host.len() - domain.len() - 1] == b'.')
}

/// Where credentials may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthDomain {
    /// Not fixed yet: the first request with a host decides.
    FirstRequest,
    /// This domain (host or `host:port`) and its subdomains.
    Domain(String),
    /// Every host (`"*"`).
    Any,
}

/// Sends HTTP basic credentials to one domain.
#[derive(Debug)]
pub struct HttpAuthMiddleware {
    auth: Option<String>,
    domain: RefCell<AuthDomain>,
}

/// The URL's host, with the port when the URL names one (Scrapy compares netlocs).
fn netloc(url: &Url) -> Option<String> {
    let host = url.host_str()?.to_ascii_lowercase();
    Some(match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host,
    })
}

/// Whether credentials for `domain` may go to `url`: `host:port` pins the port; a
/// bare domain matches its host (and subdomains) on any port.
fn domain_allows(domain: &str, url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    match domain.rsplit_once(':') {
        Some((d, port)) if port.chars().all(|c| c.is_ascii_digit()) && !d.contains(':') => {
            url.port_or_known_default()
                .map(|p| p.to_string())
                .as_deref()
                == Some(port)
                && host_in_domain(host, d)
        }
        _ => host_in_domain(host, domain),
    }
}

impl HttpAuthMiddleware {
    /// Reads `HTTPAUTH_USER` / `HTTPAUTH_PASS` / `HTTPAUTH_DOMAIN` (or the `HTTP_USER`
    /// / `HTTP_PASS` / `HTTP_AUTH_DOMAIN` aliases).
    ///
    /// # Errors
    ///
    /// An invalid setting.
    pub fn from_crawler(crawler: &Rc<CrawlContext>) -> Result<Self, Failure> {
        let s = &crawler.settings;
        let first = |a: &str, b: &str| -> Result<Option<String>, Failure> {
            Ok(match s.get_str(a)? {
                Some(v) if !v.is_empty() => Some(v),
                _ => s.get_str(b)?.filter(|v| !v.is_empty()),
            })
        };
        let user = first("HTTPAUTH_USER", "HTTP_USER")?.unwrap_or_default();
        let pass = first("HTTPAUTH_PASS", "HTTP_PASS")?.unwrap_or_default();
        let domain = match first("HTTPAUTH_DOMAIN", "HTTP_AUTH_DOMAIN")? {
            Some(d) if d == "*" => AuthDomain::Any,
            Some(d) => AuthDomain::Domain(d.to_ascii_lowercase()),
            None => AuthDomain::FirstRequest,
        };
        let auth = (!user.is_empty() || !pass.is_empty()).then(|| basic(&user, &pass));
        Ok(Self {
            auth,
            domain: RefCell::new(domain),
        })
    }

    /// Credentials for `domain`.
    pub fn new(user: &str, pass: &str, domain: AuthDomain) -> Self {
        Self {
            auth: Some(basic(user, pass)),
            domain: RefCell::new(domain),
        }
    }
}

impl DownloaderMiddleware for HttpAuthMiddleware {
    fn process_request(&self, request: &mut Request) -> Result<RequestOutcome, Failure> {
        if request.headers().contains("Authorization") {
            return Ok(RequestOutcome::Continue);
        }
        // Per-request credentials (meta), for this request's own host by default.
        let meta = request.meta();
        if meta.contains_key("http_user") || meta.contains_key("http_pass") {
            let url = request.url().clone();
            let user = meta.get_str("http_user").unwrap_or("").to_owned();
            let pass = meta.get_str("http_pass").unwrap_or("").to_owned();
            let allowed = match meta.get_str("http_auth_domain") {
                Some("*") | None => true,
                Some(d) => domain_allows(&d.to_ascii_lowercase(), &url),
            };
            if allowed {
                request
                    .headers_mut()
                    .set("Authorization", basic(&user, &pass));
            }
            return Ok(RequestOutcome::Continue);
        }
        let Some(auth) = &self.auth else {
            return Ok(RequestOutcome::Continue);
        };
        let url = request.url();
        let mut domain = self.domain.borrow_mut();
        if *domain == AuthDomain::FirstRequest {
            // Only a request with a host may fix the domain (a `data:` URL must not
            // open the credentials to everyone).
            match netloc(url) {
                Some(n) => *domain = AuthDomain::Domain(n),
                None => return Ok(RequestOutcome::Continue),
            }
        }
        let send = match &*domain {
            AuthDomain::Any => true,
            AuthDomain::Domain(d) => domain_allows(d, url),
            AuthDomain::FirstRequest => false,
        };
        drop(domain);
        if send {
            request.headers_mut().set("Authorization", auth);
        }
        Ok(RequestOutcome::Continue)
    }
}

/// A proxy: its URL without credentials, and the `Proxy-Authorization` value.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Proxy {
    url: String,
    creds: Option<String>,
}

/// `HTTPPROXY_AUTH_ENCODING`: how proxy credentials become bytes before base64.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AuthEncoding {
    /// Scrapy's default, `latin-1`: one byte per character up to U+00FF.
    Latin1,
    /// `utf-8`.
    Utf8,
}

impl AuthEncoding {
    fn from_name(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "latin-1" | "latin1" | "iso-8859-1" | "iso8859-1" | "l1" => Some(Self::Latin1),
            "utf-8" | "utf8" => Some(Self::Utf8),
            _ => None,
        }
    }

    fn encode(self, text: &str) -> Option<Vec<u8>> {
        match self {
            Self::Utf8 => Some(text.as_bytes().to_vec()),
            Self::Latin1 => text
                .chars()
                .map(|c| u8::try_from(u32::from(c)).ok())
                .collect(),
        }
    }
}

fn parse_proxy(raw: &str, default_scheme: &str, encoding: AuthEncoding) -> Result<Proxy, String> {
    let raw = raw.trim();
    let with_scheme = if raw.contains("://") {
        raw.to_owned()
    } else {
        format!("{default_scheme}://{raw}")
    };
    let mut url = Url::parse(&with_scheme).map_err(|e| e.to_string())?;
    url.host_str().ok_or("no host")?;
    // Scrapy sends credentials only when there is a user name.
    let creds = if url.username().is_empty() {
        None
    } else {
        // Scrapy: unquote the user info (UTF-8), then encode it with the setting.
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        };
        let text = format!(
            "{}:{}",
            decode(url.username()),
            decode(url.password().unwrap_or(""))
        );
        let bytes = encoding.encode(&text).ok_or_else(|| {
            "the proxy credentials cannot be encoded in HTTPPROXY_AUTH_ENCODING (latin-1)"
                .to_owned()
        })?;
        Some(format!("Basic {}", crate::util::base64_encode(&bytes)))
    };
    let _ = url.set_username("");
    let _ = url.set_password(None);
    let mut s = format!("{}://{}", url.scheme(), url.host_str().ok_or("no host")?);
    if let Some(p) = url.port() {
        s.push_str(&format!(":{p}"));
    }
    Ok(Proxy { url: s, creds })
}

/// The `no_proxy` rules: `*`, or host suffixes with an optional port.
#[derive(Debug, Clone, Default)]
struct NoProxy {
    all: bool,
    entries: Vec<(String, Option<u16>)>,
}

impl NoProxy {
    fn parse(v: &str) -> Self {
        let mut n = Self::default();
        for e in v.split([',', ' ']).map(str::trim).filter(|e| !e.is_empty()) {
            if e == "*" {
                n.all = true;
                continue;
            }
            let (host, port) = match e.rsplit_once(':') {
                Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) && !h.contains(':') => {
                    (h, p.parse().ok())
                }
                _ => (e, None),
            };
            n.entries
                .push((host.trim_start_matches('.').to_ascii_lowercase(), port));
        }
        n
    }

    fn bypass(&self, url: &Url) -> bool {
        if self.all {
            return true;
        }
        let host = url.host_str().unwrap_or("");
        let port = url.port_or_known_default();
        self.entries
            .iter()
            .any(|(h, p)| host_in_domain(host, h) && p.is_none_or(|p| Some(p) == port))
    }
}

/// Routes requests through proxies (meta `proxy` or the environment).
#[derive(Debug)]
pub struct HttpProxyMiddleware {
    proxies: HashMap<String, Proxy>,
    no_proxy: NoProxy,
    encoding: AuthEncoding,
}

impl HttpProxyMiddleware {
    /// Reads `HTTPPROXY_ENABLED`, `HTTPPROXY_AUTH_ENCODING` (`latin-1` or `utf-8`) and
    /// the `http_proxy` / `https_proxy` / `no_proxy` environment variables (lower case
    /// first, then upper case).
    ///
    /// # Errors
    ///
    /// [`NotConfigured`] when disabled; an encoding other than latin-1 or utf-8.
    pub fn from_crawler(crawler: &Rc<CrawlContext>) -> Result<Self, Failure> {
        let s = &crawler.settings;
        if !s.get_bool("HTTPPROXY_ENABLED")? {
            return Err(Failure::new(NotConfigured(
                "HTTPPROXY_ENABLED is off".into(),
            )));
        }
        let name = s
            .get_str("HTTPPROXY_AUTH_ENCODING")?
            .unwrap_or_else(|| "latin-1".to_owned());
        let encoding = AuthEncoding::from_name(&name).ok_or_else(|| {
            Failure::new(crate::crawl::settings::SettingsError {
                name: "HTTPPROXY_AUTH_ENCODING".into(),
                reason: format!("{name:?}: trawl supports latin-1 and utf-8"),
            })
        })?;
        let env = |name: &str| {
            std::env::var(name)
                .ok()
                .or_else(|| std::env::var(name.to_ascii_uppercase()).ok())
        };
        Ok(Self::build(&env, encoding))
    }

    /// Builds the middleware from an environment lookup (for tests), with Scrapy's
    /// default `latin-1` credentials encoding.
    pub fn with_env(env: impl Fn(&str) -> Option<String>) -> Self {
        Self::build(&env, AuthEncoding::Latin1)
    }

    fn build(env: &dyn Fn(&str) -> Option<String>, encoding: AuthEncoding) -> Self {
        let mut proxies = HashMap::new();
        for scheme in ["http", "https"] {
            if let Some(v) = env(&format!("{scheme}_proxy")).filter(|v| !v.trim().is_empty()) {
                match parse_proxy(&v, "http", encoding) {
                    Ok(p) => {
                        proxies.insert(scheme.to_owned(), p);
                    }
                    Err(e) => log::warn!("Ignoring invalid {scheme}_proxy {v:?}: {e}"),
                }
            }
        }
        Self {
            proxies,
            no_proxy: NoProxy::parse(&env("no_proxy").unwrap_or_default()),
            encoding,
        }
    }
}

impl DownloaderMiddleware for HttpProxyMiddleware {
    fn process_request(&self, request: &mut Request) -> Result<RequestOutcome, Failure> {
        let mut scheme_proxy = false;
        let chosen: Option<Proxy> = match request.meta().get("proxy") {
            Some(serde_json::Value::String(p)) if !p.is_empty() => {
                match parse_proxy(p, "http", self.encoding) {
                    Ok(p) => Some(p),
                    Err(e) => {
                        return Err(Failure::msg(format!("invalid proxy in meta: {p:?}: {e}")));
                    }
                }
            }
            Some(_) => None, // an explicit null/empty: no proxy
            None => {
                let url = request.url();
                match self.proxies.get(url.scheme()) {
                    Some(p) if !self.no_proxy.bypass(url) => {
                        scheme_proxy = true;
                        Some(p.clone())
                    }
                    _ => None,
                }
            }
        };
        let meta = request.meta_mut();
        if scheme_proxy {
            meta.insert_static("_scheme_proxy", true);
        }
        let proxy_url = chosen.as_ref().map(|p| p.url.clone());
        match &proxy_url {
            Some(u) => {
                meta.insert_static("proxy", u.as_str());
            }
            None => {
                if meta.get("proxy").is_some_and(|v| !v.is_null()) {
                    meta.insert_static("proxy", serde_json::Value::Null);
                }
            }
        }
        let auth_proxy = meta.get_str("_auth_proxy").map(str::to_owned);
        if let Some(creds) = chosen.as_ref().and_then(|p| p.creds.clone()) {
            request.headers_mut().set("Proxy-Authorization", creds);
            request
                .meta_mut()
                .insert_static("_auth_proxy", proxy_url.unwrap_or_default());
        } else if let Some(auth_proxy) = auth_proxy {
            if proxy_url.as_deref() != Some(auth_proxy.as_str()) {
                request.headers_mut().remove("Proxy-Authorization");
                request.meta_mut().remove("_auth_proxy");
            }
        } else if request.headers().contains("Proxy-Authorization") {
            match proxy_url {
                Some(u) => {
                    request.meta_mut().insert_static("_auth_proxy", u);
                }
                None => {
                    request.headers_mut().remove("Proxy-Authorization");
                }
            }
        }
        Ok(RequestOutcome::Continue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(url: &str) -> Request {
        Request::get(url).expect("test URL")
    }

    #[test]
    fn auth_goes_to_its_domain_only() {
        let mw = HttpAuthMiddleware::new("u", "p", AuthDomain::Domain("example.com".into()));
        for (url, expect) in [
            ("http://example.com/", true),
            ("https://sub.example.com/", true),
            ("http://example.com:8080/", true),
            ("http://example.com.evil.test/", false),
            ("http://notexample.com/", false),
            ("http://other.test/robots.txt", false),
        ] {
            let mut r = req(url);
            mw.process_request(&mut r).expect("ok");
            assert_eq!(r.headers().contains("Authorization"), expect, "{url}");
        }
    }

    #[test]
    fn auth_domain_defaults_to_the_first_request() {
        let mw = HttpAuthMiddleware::new("u", "p", AuthDomain::FirstRequest);
        // A hostless first request does not open the credentials to everyone.
        let mut data = req("data:text/plain,hello");
        mw.process_request(&mut data).expect("ok");
        assert!(!data.headers().contains("Authorization"));
        let mut first = req("http://first.test/");
        mw.process_request(&mut first).expect("ok");
        assert_eq!(first.headers().get_str("Authorization"), Some("Basic dTpw"));
        let mut other = req("http://second.test/");
        mw.process_request(&mut other).expect("ok");
        assert!(!other.headers().contains("Authorization"));
    }

    #[test]
    fn per_request_credentials_from_meta() {
        let mw = HttpAuthMiddleware::new("u", "p", AuthDomain::Domain("a.test".into()));
        let mut r = req("http://b.test/")
            .with_meta("http_user", "x")
            .with_meta("http_pass", "y");
        mw.process_request(&mut r).expect("ok");
        assert_eq!(
            r.headers().get_str("Authorization"),
            Some(basic("x", "y").as_str())
        );
        let mut r = req("http://b.test/")
            .with_meta("http_user", "x")
            .with_meta("http_auth_domain", "c.test");
        mw.process_request(&mut r).expect("ok");
        assert!(!r.headers().contains("Authorization"));
    }

    #[test]
    fn meta_proxy_credentials_move_into_a_header() {
        let mw = HttpProxyMiddleware::with_env(|_| None);
        let mut r =
            req("http://site.test/").with_meta("proxy", "http://us%40r:p%3Ass@proxy.test:3128");
        mw.process_request(&mut r).expect("ok");
        assert_eq!(r.meta().get_str("proxy"), Some("http://proxy.test:3128"));
        assert_eq!(
            r.headers().get_str("Proxy-Authorization"),
            Some(basic("us@r", "p:ss").as_str())
        );
        assert_eq!(
            r.meta().get_str("_auth_proxy"),
            Some("http://proxy.test:3128")
        );
        // The user changes the proxy: the old credentials must not go to the new one.
        r.meta_mut().insert("proxy", "http://other-proxy.test:8080");
        mw.process_request(&mut r).expect("ok");
        assert!(!r.headers().contains("Proxy-Authorization"));
        assert_eq!(
            r.meta().get_str("proxy"),
            Some("http://other-proxy.test:8080")
        );
    }

    #[test]
    fn a_user_header_is_bound_to_the_proxy_it_was_set_for() {
        let mw = HttpProxyMiddleware::with_env(|_| None);
        let mut r = req("http://site.test/")
            .with_meta("proxy", "http://proxy.test:3128")
            .with_header("Proxy-Authorization", "Basic abc");
        mw.process_request(&mut r).expect("ok");
        assert!(r.headers().contains("Proxy-Authorization"));
        r.meta_mut().insert("proxy", serde_json::Value::Null);
        mw.process_request(&mut r).expect("ok");
        assert!(!r.headers().contains("Proxy-Authorization"));
    }

    #[test]
    fn environment_proxies_and_no_proxy() {
        let env = |n: &str| match n {
            "http_proxy" => Some("http://envuser:envpass@proxy.test:3128".to_owned()),
            "https_proxy" => Some("proxy-s.test:3129".to_owned()),
            "no_proxy" => Some("internal.test, .corp.test:8080".to_owned()),
            _ => None,
        };
        let mw = HttpProxyMiddleware::with_env(env);
        let mut r = req("http://site.test/");
        mw.process_request(&mut r).expect("ok");
        assert_eq!(r.meta().get_str("proxy"), Some("http://proxy.test:3128"));
        assert!(r.meta().get_bool("_scheme_proxy"));
        assert!(r.headers().contains("Proxy-Authorization"));
        let mut r = req("https://site.test/");
        mw.process_request(&mut r).expect("ok");
        assert_eq!(r.meta().get_str("proxy"), Some("http://proxy-s.test:3129"));
        assert!(!r.headers().contains("Proxy-Authorization"));
        for bypassed in [
            "http://internal.test/",
            "http://a.internal.test/",
            "http://x.corp.test:8080/",
        ] {
            let mut r = req(bypassed);
            mw.process_request(&mut r).expect("ok");
            assert!(r.meta().get("proxy").is_none(), "{bypassed}");
        }
        let mut r = req("http://x.corp.test/");
        mw.process_request(&mut r).expect("ok");
        assert!(r.meta().get("proxy").is_some(), "no_proxy port must match");
    }
}
