//! Scrapy's `HttpProxyMiddleware` (`scrapy.downloadermiddlewares.httpproxy`): meta
//! `proxy` (with `user:pass@` credentials moved into a `Proxy-Authorization` header),
//! else `http_proxy` / `https_proxy` (or `all_proxy`) from the environment minus
//! `no_proxy` hosts. Any proxy URL may be `http://`, `https://`, `socks5://` or
//! `socks5h://`; the credentials of a SOCKS5 proxy travel in the same header, which the
//! connector turns into the RFC 1929 user name and password.
//! `Proxy-Authorization` is remembered with the proxy it belongs to (meta
//! `_auth_proxy`) and removed when the request's proxy changes (GHSA-9x8m-2xpf-crp3);
//! a proxy picked from the environment is marked `_scheme_proxy` so a scheme-changing
//! redirect re-resolves it.

use std::collections::HashMap;
use std::rc::Rc;

use url::Url;

use super::httpauth::host_in_domain;
use crate::crawl::base::errors::NotConfigured;
use crate::crawl::context::CrawlContext;
use crate::crawl::core::downloader::middleware::{DownloaderMiddleware, RequestOutcome};
use crate::crawl::http::request::Request;
use crate::crawl::http::request::keys;
use crate::defer::Failure;

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
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Self, Failure> {
        let s = &ctx.settings;
        if !s.get_bool("HTTPPROXY_ENABLED")? {
            return Err(Failure::new(NotConfigured(
                "HTTPPROXY_ENABLED is off".into(),
            )));
        }
        let name = s
            .get_str("HTTPPROXY_AUTH_ENCODING")?
            .unwrap_or_else(|| "latin-1".to_owned());
        let encoding = AuthEncoding::from_name(&name).ok_or_else(|| {
            Failure::new(crate::crawl::base::settings::SettingsError {
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
            // `all_proxy` for a scheme without its own (curl's rule; Scrapy, through
            // urllib's getproxies, would ignore it).
            let own = env(&format!("{scheme}_proxy")).filter(|v| !v.trim().is_empty());
            if let Some(v) = own.or_else(|| env("all_proxy").filter(|v| !v.trim().is_empty())) {
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
        let chosen: Option<Proxy> = match request.meta().get(keys::PROXY) {
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
            meta.insert_static(keys::SCHEME_PROXY, true);
        }
        let proxy_url = chosen.as_ref().map(|p| p.url.clone());
        match &proxy_url {
            Some(u) => {
                meta.insert_static(keys::PROXY, u.as_str());
            }
            None => {
                if meta.get(keys::PROXY).is_some_and(|v| !v.is_null()) {
                    meta.insert_static(keys::PROXY, serde_json::Value::Null);
                }
            }
        }
        let auth_proxy = meta.get_str(keys::AUTH_PROXY).map(str::to_owned);
        if let Some(creds) = chosen.as_ref().and_then(|p| p.creds.clone()) {
            request.headers_mut().set("Proxy-Authorization", creds);
            request
                .meta_mut()
                .insert_static(keys::AUTH_PROXY, proxy_url.unwrap_or_default());
        } else if let Some(auth_proxy) = auth_proxy {
            if proxy_url.as_deref() != Some(auth_proxy.as_str()) {
                request.headers_mut().remove("Proxy-Authorization");
                request.meta_mut().remove(keys::AUTH_PROXY);
            }
        } else if request.headers().contains("Proxy-Authorization") {
            match proxy_url {
                Some(u) => {
                    request.meta_mut().insert_static(keys::AUTH_PROXY, u);
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
    use crate::crawl::downloadermiddlewares::httpauth::basic;

    fn req(url: &str) -> Request {
        Request::get(url).expect("test URL")
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

    #[test]
    fn all_proxy_serves_schemes_without_their_own() {
        let env = |n: &str| match n {
            "https_proxy" => Some("https://tls-proxy.test:8443".to_owned()),
            "all_proxy" => Some("socks5h://u:p@socks.test:1080".to_owned()),
            "no_proxy" => Some("skip.test".to_owned()),
            _ => None,
        };
        let mw = HttpProxyMiddleware::with_env(env);
        let mut r = req("http://site.test/");
        mw.process_request(&mut r).expect("ok");
        assert_eq!(r.meta().get_str("proxy"), Some("socks5h://socks.test:1080"));
        assert_eq!(
            r.headers().get_str("Proxy-Authorization"),
            Some(basic("u", "p").as_str())
        );
        let mut r = req("https://site.test/");
        mw.process_request(&mut r).expect("ok");
        assert_eq!(
            r.meta().get_str("proxy"),
            Some("https://tls-proxy.test:8443")
        );
        let mut r = req("http://skip.test/");
        mw.process_request(&mut r).expect("ok");
        assert!(r.meta().get("proxy").is_none());
    }
}
