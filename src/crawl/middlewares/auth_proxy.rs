//! `HttpAuthMiddleware` and `HttpProxyMiddleware`: the two middlewares that attach
//! credentials, and so the two that must never attach them to the wrong host.
//!
//! * HttpAuth: `HTTP_USER` / `HTTP_PASS` (Scrapy's spider attributes `http_user` /
//!   `http_pass`, here set through the spider's `custom_settings` or the project) are
//!   sent as `Authorization: Basic` only to `HTTP_AUTH_DOMAIN` and its subdomains. When
//!   that setting is missing, the domain of the first request is used (Scrapy's
//!   behaviour since CVE-2021-41125); `"*"` sends them everywhere, explicitly.
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

use crate::client::base64;
use crate::client::http::proxy_authorization;
use crate::crawl::Request;
use crate::crawl::crawler::Crawler;
use crate::crawl::downloader::middleware::{DownloaderMiddleware, RequestOutcome};
use crate::crawl::errors::NotConfigured;
use crate::defer::Failure;

fn basic(user: &str, pass: &str) -> String {
    format!("Basic {}", base64(format!("{user}:{pass}").as_bytes()))
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

/// Sends HTTP basic credentials to one domain.
#[derive(Debug)]
pub struct HttpAuthMiddleware {
    auth: String,
    /// `None` until the first request fixes it; `Some("")` = every domain.
    domain: RefCell<Option<String>>,
}

impl HttpAuthMiddleware {
    /// Reads `HTTP_USER`, `HTTP_PASS`, `HTTP_AUTH_DOMAIN`.
    ///
    /// # Errors
    ///
    /// [`NotConfigured`] without credentials.
    pub fn from_crawler(crawler: &Rc<Crawler>) -> Result<Self, Failure> {
        let s = &crawler.settings;
        let user = s.get_str("HTTP_USER")?.unwrap_or_default();
        let pass = s.get_str("HTTP_PASS")?.unwrap_or_default();
        if user.is_empty() && pass.is_empty() {
            return Err(Failure::new(NotConfigured(
                "no HTTP_USER / HTTP_PASS".into(),
            )));
        }
        let domain = match s.get_str("HTTP_AUTH_DOMAIN")? {
            Some(d) if d == "*" => Some(String::new()),
            Some(d) if !d.is_empty() => Some(d.to_ascii_lowercase()),
            _ => None,
        };
        Ok(Self::new(&user, &pass, domain))
    }

    /// Credentials for `domain` (`None`: the first request's domain; `Some("")`: all).
    pub fn new(user: &str, pass: &str, domain: Option<String>) -> Self {
        Self {
            auth: basic(user, pass),
            domain: RefCell::new(domain),
        }
    }
}

impl DownloaderMiddleware for HttpAuthMiddleware {
    fn process_request(&self, request: &mut Request) -> Result<RequestOutcome, Failure> {
        if request.headers().contains("Authorization") {
            return Ok(RequestOutcome::Continue);
        }
        let host = request.url().host_str().unwrap_or("").to_owned();
        let mut domain = self.domain.borrow_mut();
        let domain = domain.get_or_insert_with(|| host.to_ascii_lowercase());
        if domain.is_empty() || host_in_domain(&host, domain) {
            request.headers_mut().set("Authorization", &self.auth);
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

fn parse_proxy(raw: &str, default_scheme: &str) -> Option<Proxy> {
    let raw = raw.trim();
    let with_scheme = if raw.contains("://") {
        raw.to_owned()
    } else {
        format!("{default_scheme}://{raw}")
    };
    let mut url = Url::parse(&with_scheme).ok()?;
    url.host_str()?;
    let creds = proxy_authorization(&url);
    let _ = url.set_username("");
    let _ = url.set_password(None);
    let mut s = format!("{}://{}", url.scheme(), url.host_str()?);
    if let Some(p) = url.port() {
        s.push_str(&format!(":{p}"));
    }
    Some(Proxy { url: s, creds })
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
}

impl HttpProxyMiddleware {
    /// Reads `HTTPPROXY_ENABLED` and the `http_proxy` / `https_proxy` / `no_proxy`
    /// environment variables (lower case first, then upper case).
    ///
    /// # Errors
    ///
    /// [`NotConfigured`] when disabled.
    pub fn from_crawler(crawler: &Rc<Crawler>) -> Result<Self, Failure> {
        if !crawler.settings.get_bool("HTTPPROXY_ENABLED")? {
            return Err(Failure::new(NotConfigured(
                "HTTPPROXY_ENABLED is off".into(),
            )));
        }
        let env = |name: &str| {
            std::env::var(name)
                .ok()
                .or_else(|| std::env::var(name.to_ascii_uppercase()).ok())
        };
        Ok(Self::with_env(|n| env(n)))
    }

    /// Builds the middleware from an environment lookup (for tests).
    pub fn with_env(env: impl Fn(&str) -> Option<String>) -> Self {
        let mut proxies = HashMap::new();
        for scheme in ["http", "https"] {
            if let Some(v) = env(&format!("{scheme}_proxy")).filter(|v| !v.trim().is_empty()) {
                match parse_proxy(&v, "http") {
                    Some(p) => {
                        proxies.insert(scheme.to_owned(), p);
                    }
                    None => log::warn!("Ignoring invalid {scheme}_proxy {v:?}"),
                }
            }
        }
        Self {
            proxies,
            no_proxy: NoProxy::parse(&env("no_proxy").unwrap_or_default()),
        }
    }
}

impl DownloaderMiddleware for HttpProxyMiddleware {
    fn process_request(&self, request: &mut Request) -> Result<RequestOutcome, Failure> {
        let mut scheme_proxy = false;
        let chosen: Option<Proxy> = match request.meta().get("proxy") {
            Some(serde_json::Value::String(p)) if !p.is_empty() => match parse_proxy(p, "http") {
                Some(p) => Some(p),
                None => {
                    return Err(Failure::msg(format!("invalid proxy in meta: {p:?}")));
                }
            },
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
        let mw = HttpAuthMiddleware::new("u", "p", Some("example.com".into()));
        for (url, expect) in [
            ("http://example.com/", true),
            ("http://sub.example.com/", true),
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
        let mw = HttpAuthMiddleware::new("u", "p", None);
        let mut first = req("http://first.test/");
        mw.process_request(&mut first).expect("ok");
        assert_eq!(first.headers().get_str("Authorization"), Some("Basic dTpw"));
        let mut other = req("http://second.test/");
        mw.process_request(&mut other).expect("ok");
        assert!(!other.headers().contains("Authorization"));
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
