//! `CookiesMiddleware`: a cookie jar per meta `cookiejar` key (Scrapy's
//! `scrapy.downloadermiddlewares.cookies`).
//!
//! Storage and matching follow RFC 6265 through the `cookie_store` crate (domain and
//! path matching, host-only cookies, `Secure`, `Max-Age`/`Expires`, replacement and
//! removal by an expired cookie); `Set-Cookie` parsing is the `cookie` crate's. trawl
//! adds the public-suffix rule (RFC 6265 §5.3 step 5) with the `psl` crate's compiled
//! list: a cookie whose `Domain` is a public suffix (`co.uk`, `github.io`, an unknown
//! TLD) is ignored unless it equals the request host (GHSA-mfjm-vh54-3f96).
//!
//! As in Scrapy: request `cookies` are stored in the jar as if the request's URL had set
//! them; the request's own `Cookie` header is replaced by what the jar holds for its
//! URL; meta `dont_merge_cookies` skips the jar both ways; `COOKIES_DEBUG` logs what is
//! sent and received. Cookie expiry uses the wall clock (cookie dates are absolute).

use std::cell::RefCell;
use std::rc::Rc;

use cookie_store::{CookieStore, RawCookie};
use url::Url;

use crate::crawl::base::errors::NotConfigured;
use crate::crawl::context::CrawlContext;
use crate::crawl::core::downloader::middleware::{
    DownloaderMiddleware, RequestOutcome, ResponseOutcome,
};
use crate::crawl::http::request::Request;
use crate::crawl::http::request::keys;
use crate::crawl::http::response::Response;
use crate::defer::Failure;
use crate::util::SeededMap;

/// Whether `domain` is a public suffix (the registry's or an unknown TLD).
pub fn is_public_suffix(domain: &str) -> bool {
    let d = domain.trim_matches('.').to_ascii_lowercase();
    if d.is_empty() || d.parse::<std::net::IpAddr>().is_ok() {
        return false;
    }
    psl::suffix_str(&d) == Some(d.as_str())
}

/// One cookie jar (RFC 6265 storage with the public-suffix rule).
#[derive(Debug, Default)]
pub struct CookieJar {
    store: CookieStore,
}

impl CookieJar {
    /// An empty jar.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores one `Set-Cookie` header value received from `url`; `false` when it was
    /// rejected (malformed, wrong domain, public suffix, expired).
    pub fn set_cookie(&mut self, set_cookie: &str, url: &Url) -> bool {
        let Ok(raw) = RawCookie::parse(set_cookie.to_owned()) else {
            return false;
        };
        if let Some(domain) = raw.domain() {
            let host = url.host_str().unwrap_or("");
            if is_public_suffix(domain)
                && !domain.trim_start_matches('.').eq_ignore_ascii_case(host)
            {
                log::debug!(
                    "Ignoring cookie {} for public suffix {domain:?}",
                    raw.name()
                );
                return false;
            }
        }
        self.store.insert_raw(&raw, url).is_ok()
    }

    /// The `name=value` pairs to send to `url`: longer paths first, then by name.
    pub fn cookies_for(&self, url: &Url) -> Vec<(String, String)> {
        let mut found: Vec<(usize, &str, &str)> = self
            .store
            .matches(url)
            .into_iter()
            .map(|c| (c.path.len(), c.name(), c.value()))
            .collect();
        found.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        found
            .into_iter()
            .map(|(_, n, v)| (n.to_owned(), v.to_owned()))
            .collect()
    }

    /// The `Cookie` header value for `url`, if any cookie applies.
    pub fn cookie_header(&self, url: &Url) -> Option<String> {
        let pairs = self.cookies_for(url);
        (!pairs.is_empty()).then(|| {
            pairs
                .iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect::<Vec<_>>()
                .join("; ")
        })
    }

    /// Number of unexpired cookies.
    pub fn len(&self) -> usize {
        self.store.iter_unexpired().count()
    }

    /// Whether the jar holds no unexpired cookie.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Keeps cookies per `cookiejar` key and sends them back.
#[derive(Debug)]
pub struct CookiesMiddleware {
    /// The jar of requests without a `cookiejar` key (most crawls use only this one).
    default_jar: RefCell<CookieJar>,
    /// The jars of the other keys.
    jars: RefCell<SeededMap<String, CookieJar>>,
    debug: bool,
}

/// The key of a `cookiejar` meta value; `None` for the default jar (no value, or null).
fn jar_key(key: Option<&serde_json::Value>) -> Option<String> {
    match key {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(format!("s:{s}")),
        Some(v) => Some(format!("j:{v}")),
    }
}

impl CookiesMiddleware {
    /// Reads `COOKIES_ENABLED` and `COOKIES_DEBUG`.
    ///
    /// # Errors
    ///
    /// [`NotConfigured`] when disabled.
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Self, Failure> {
        let s = &ctx.settings;
        if !s.get_bool("COOKIES_ENABLED")? {
            return Err(Failure::new(NotConfigured("COOKIES_ENABLED is off".into())));
        }
        Ok(Self::new(s.get_bool("COOKIES_DEBUG")?))
    }

    /// A middleware with empty jars.
    pub fn new(debug: bool) -> Self {
        Self {
            default_jar: RefCell::new(CookieJar::new()),
            jars: RefCell::new(SeededMap::default()),
            debug,
        }
    }

    /// Cookies the jar `key` (meta `cookiejar` value, `None` for the default) would
    /// send to `url`.
    pub fn cookies_for(&self, key: Option<&serde_json::Value>, url: &Url) -> Vec<(String, String)> {
        match jar_key(key) {
            None => self.default_jar.borrow().cookies_for(url),
            Some(key) => self
                .jars
                .borrow()
                .get(&key)
                .map(|j| j.cookies_for(url))
                .unwrap_or_default(),
        }
    }

    /// Runs `f` on `request`'s jar (made when it is new). `f` must not call out: the
    /// jars are borrowed while it runs.
    fn with_jar<R>(&self, request: &Request, f: impl FnOnce(&mut CookieJar) -> R) -> R {
        match jar_key(request.meta().get(keys::COOKIEJAR)) {
            None => f(&mut self.default_jar.borrow_mut()),
            Some(key) => f(self.jars.borrow_mut().entry(key).or_default()),
        }
    }
}

impl DownloaderMiddleware for CookiesMiddleware {
    fn process_request(&self, request: &mut Request) -> Result<RequestOutcome, Failure> {
        if request.meta().get_bool(keys::DONT_MERGE_COOKIES) {
            return Ok(RequestOutcome::Continue);
        }
        // The jar is read with the request's own URL (no copy of it): the header is
        // computed before the request's headers are written.
        let header = self.with_jar(request, |jar| {
            let url = request.url();
            let secure = if url.scheme() == "https" {
                "; Secure"
            } else {
                ""
            };
            for (name, value) in request.cookies() {
                // As Scrapy: request cookies on https are Secure (never sent over http).
                if !jar.set_cookie(&format!("{name}={value}{secure}"), url) {
                    log::warn!("Invalid cookie {name:?} in {request}: not stored");
                }
            }
            jar.cookie_header(url)
        });
        request.headers_mut().remove("Cookie");
        if let Some(header) = header {
            if self.debug {
                log::debug!("Sending cookies to: {request}\nCookie: {header}");
            }
            request.headers_mut().set("Cookie", header);
        }
        Ok(RequestOutcome::Continue)
    }

    fn process_response(
        &self,
        request: &Request,
        response: Response,
    ) -> Result<ResponseOutcome, Failure> {
        if request.meta().get_bool(keys::DONT_MERGE_COOKIES) {
            return Ok(ResponseOutcome::Response(response));
        }
        if response.headers().get("Set-Cookie").is_none() {
            return Ok(ResponseOutcome::Response(response));
        }
        let mut received = Vec::new();
        self.with_jar(request, |jar| {
            for value in response.headers().get_all("Set-Cookie") {
                let value = String::from_utf8_lossy(value);
                if jar.set_cookie(&value, response.url()) && self.debug {
                    received.push(value.into_owned());
                }
            }
        });
        if self.debug && !received.is_empty() {
            log::debug!(
                "Received cookies from: {response:?}\n{}",
                received
                    .iter()
                    .map(|c| format!("Set-Cookie: {c}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
        Ok(ResponseOutcome::Response(response))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).expect("test URL")
    }

    #[test]
    fn domain_path_secure_and_host_only_rules() {
        let mut jar = CookieJar::new();
        let from = u("https://www.example.com/a/b");
        assert!(jar.set_cookie("host=1", &from));
        assert!(jar.set_cookie("dom=2; Domain=example.com", &from));
        assert!(jar.set_cookie("path=3; Path=/a", &from));
        assert!(jar.set_cookie("sec=4; Secure; Path=/", &from));
        assert!(
            !jar.set_cookie("other=5; Domain=other.com", &from),
            "foreign domain"
        );
        let names = |url: &str| -> Vec<String> {
            jar.cookies_for(&u(url))
                .into_iter()
                .map(|(n, _)| n)
                .collect()
        };
        // Default path of /a/b is /a; longer paths first, then by name.
        assert_eq!(
            names("https://www.example.com/a/x"),
            ["dom", "host", "path", "sec"]
        );
        assert_eq!(
            names("https://api.example.com/a/x"),
            ["dom"],
            "host-only stays on www"
        );
        assert_eq!(
            names("http://www.example.com/a/"),
            ["dom", "host", "path"],
            "no Secure over http"
        );
        assert_eq!(
            names("https://www.example.com/"),
            ["sec"],
            "path /a does not match /"
        );
        assert_eq!(names("https://example.org/"), Vec::<String>::new());
    }

    #[test]
    fn public_suffix_domains_are_refused() {
        let mut jar = CookieJar::new();
        assert!(!jar.set_cookie("a=1; Domain=co.uk", &u("https://shop.co.uk/")));
        assert!(!jar.set_cookie("a=1; Domain=.github.io", &u("https://me.github.io/")));
        assert!(!jar.set_cookie("a=1; Domain=test", &u("http://site.test/")));
        assert!(jar.set_cookie("a=1; Domain=shop.co.uk", &u("https://shop.co.uk/")));
        assert!(jar.cookies_for(&u("https://other.co.uk/")).is_empty());
        assert!(is_public_suffix("com"));
        assert!(!is_public_suffix("example.com"));
        assert!(!is_public_suffix("127.0.0.1"));
    }

    #[test]
    fn expiry_and_replacement() {
        let mut jar = CookieJar::new();
        let url = u("http://a.test/");
        assert!(jar.set_cookie("s=1", &url));
        assert!(jar.set_cookie("s=2", &url));
        assert_eq!(jar.cookie_header(&url).as_deref(), Some("s=2"));
        jar.set_cookie("s=gone; Max-Age=0", &url);
        assert_eq!(
            jar.cookie_header(&url),
            None,
            "an expired cookie removes the old one"
        );
        jar.set_cookie("t=1; Expires=Thu, 01 Jan 1970 00:00:00 GMT", &url);
        assert_eq!(jar.cookie_header(&url), None);
        assert!(!jar.set_cookie("=\u{0}garbage;;;", &url) || jar.len() <= 1);
    }

    #[test]
    fn middleware_jars_request_cookies_and_headers() {
        let mw = CookiesMiddleware::new(false);
        let mut r = Request::get("http://a.test/")
            .expect("u")
            .with_cookie("c", "1")
            .with_header("Cookie", "manual=1");
        mw.process_request(&mut r).expect("ok");
        assert_eq!(r.headers().get_str("Cookie"), Some("c=1"));
        let mut headers = crate::proto::Headers::new();
        headers.append("Set-Cookie", "sid=abc; Path=/");
        let resp = Response::new(r.clone(), 200, headers, b"".to_vec());
        let _ = mw.process_response(&r, resp).expect("ok");
        let mut next = Request::get("http://a.test/next").expect("u");
        mw.process_request(&mut next).expect("ok");
        assert_eq!(next.headers().get_str("Cookie"), Some("c=1; sid=abc"));
        // Another session sees nothing.
        let mut other = Request::get("http://a.test/next")
            .expect("u")
            .with_meta("cookiejar", 2);
        mw.process_request(&mut other).expect("ok");
        assert!(!other.headers().contains("Cookie"));
        // A null key is the default jar; 2 and "2" are two jars (Python dict keys).
        let mut null = Request::get("http://a.test/next")
            .expect("u")
            .with_meta("cookiejar", serde_json::Value::Null);
        mw.process_request(&mut null).expect("ok");
        assert_eq!(null.headers().get_str("Cookie"), Some("c=1; sid=abc"));
        let mut headers = crate::proto::Headers::new();
        headers.append("Set-Cookie", "two=2");
        let resp = Response::new(other.clone(), 200, headers, b"".to_vec());
        let _ = mw.process_response(&other, resp).expect("ok");
        let url = u("http://a.test/");
        let pairs = |key: Option<serde_json::Value>| {
            let mut names: Vec<String> = mw
                .cookies_for(key.as_ref(), &url)
                .into_iter()
                .map(|(n, _)| n)
                .collect();
            names.sort();
            names
        };
        assert_eq!(pairs(None), ["c", "sid"]);
        assert_eq!(pairs(Some(serde_json::Value::Null)), ["c", "sid"]);
        assert_eq!(pairs(Some(2.into())), ["two"]);
        assert!(pairs(Some("2".into())).is_empty());
        // dont_merge_cookies leaves the header alone.
        let mut raw = Request::get("http://a.test/")
            .expect("u")
            .with_header("Cookie", "mine=1")
            .with_meta("dont_merge_cookies", true);
        mw.process_request(&mut raw).expect("ok");
        assert_eq!(raw.headers().get_str("Cookie"), Some("mine=1"));
    }
}
