//! Scrapy's `HttpAuthMiddleware` (`scrapy.downloadermiddlewares.httpauth`): the
//! middleware that attaches credentials, and so must never attach them to the wrong
//! host.
//!
//! `HTTPAUTH_USER` / `HTTPAUTH_PASS` (Scrapy 2.19's names; `HTTP_USER` / `HTTP_PASS`,
//! after the older spider attributes, are accepted too) are sent as
//! `Authorization: Basic` only to `HTTPAUTH_DOMAIN` (or `HTTP_AUTH_DOMAIN`) and its
//! subdomains (a `host:port` domain also pins the port). Without a domain, the first
//! request *with a host* fixes it (Scrapy <= 2.18's behaviour after CVE-2021-41125; 2.19
//! refuses to start instead); `"*"` sends them everywhere, explicitly. Meta
//! `http_user` / `http_pass` (and `http_auth_domain`, default the request's own host)
//! give one request its own credentials.

use std::cell::RefCell;
use std::rc::Rc;

use url::Url;

use crate::crawl::context::CrawlContext;
use crate::crawl::core::downloader::middleware::{DownloaderMiddleware, RequestOutcome};
use crate::crawl::http::request::Request;
use crate::crawl::http::request::keys;
use crate::defer::Failure;

pub(super) fn basic(user: &str, pass: &str) -> String {
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
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Self, Failure> {
        let s = &ctx.settings;
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
        if meta.contains_key(keys::HTTP_USER) || meta.contains_key(keys::HTTP_PASS) {
            let url = request.url().clone();
            let user = meta.get_str(keys::HTTP_USER).unwrap_or("").to_owned();
            let pass = meta.get_str(keys::HTTP_PASS).unwrap_or("").to_owned();
            let allowed = match meta.get_str(keys::HTTP_AUTH_DOMAIN) {
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
}
