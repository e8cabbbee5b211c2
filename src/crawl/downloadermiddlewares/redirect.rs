//! `RedirectMiddleware` (HTTP 301/302/303/307/308) and `MetaRefreshMiddleware`
//! (`<meta http-equiv="refresh">`), with Scrapy's meta keys, settings and the security
//! rules of its advisories.
//!
//! * Method and body: 307/308 and HEAD keep them; 301/302 turn a POST into a GET, 303
//!   turns anything but GET/HEAD into a GET, and a meta refresh is always a GET; a GET
//!   built this way has no body and no `Content-Type`/`-Length`/`-Encoding`/
//!   `-Language`/`-Location` headers.
//! * Targets: `Location` is made safe, resolved against the request URL (protocol-
//!   relative `//host/path` takes the request's scheme); anything but `http`/`https`
//!   (`file:`, `data:`, `ftp:`...) is not followed: the 3xx (or refresh page) itself
//!   goes on to the spider, as in Scrapy.
//! * Credentials: `Authorization` is dropped when the scheme, host or port changes
//!   (CVE-2024-3574, CVE-2024-1968); `Cookie` when the host changes or the scheme changes
//!   to anything but https (CVE-2022-0577); request cookies are not carried over (the
//!   cookie middleware re-adds what the jar allows for the new URL). A proxy chosen from
//!   the environment for the old scheme is dropped with its `Proxy-Authorization` when
//!   the scheme changes (GHSA-jm3v-qxmh-hxwv), so the proxy middleware picks again.
//! * Bookkeeping: meta `redirect_times`, `redirect_ttl`, `redirect_urls`,
//!   `redirect_reasons`; `REDIRECT_MAX_TIMES` (20) and `REDIRECT_PRIORITY_ADJUST` (+2);
//!   `dont_filter` is inherited, so a loop back to a seen URL stops at the dupefilter,
//!   and a chain that keeps visiting the same URLs stops at the maximum — both logged.
//! * Opt-outs: meta `dont_redirect`, `handle_httpstatus_list` / `handle_httpstatus_all`
//!   naming the status.

use std::rc::{Rc, Weak};

use serde_json::Value;
use url::Url;

use crate::crawl::base::errors::{IgnoreRequest, NotConfigured};
use crate::crawl::context::CrawlContext;
use crate::crawl::core::downloader::middleware::{DownloaderMiddleware, ResponseOutcome};
use crate::crawl::http::request::Method;
use crate::crawl::http::request::Request;
use crate::crawl::http::request::keys;
use crate::crawl::http::response::Response;
use crate::crawl::spidermiddlewares::referer::{ReferrerPolicy, fix_redirect_referer};
use crate::defer::Failure;

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" | "ws" => Some(80),
        "https" | "wss" => Some(443),
        _ => None,
    }
}

/// Builds the request for a redirect from `request` to `url`, applying the credential
/// rules above. `to_get` turns it into a bodiless GET.
pub fn build_redirect_request(request: &Request, url: Url, to_get: bool) -> Request {
    let old = request.url();
    let mut r = request.replace_url(url);
    r.set_cookies(Vec::new());
    if to_get {
        r.set_method(Method::Get);
        r.set_body(Vec::new());
        let h = r.headers_mut();
        for name in [
            "Content-Type",
            "Content-Length",
            "Content-Encoding",
            "Content-Language",
            "Content-Location",
        ] {
            h.remove(name);
        }
    }
    let new = r.url().clone();
    let scheme_changed = old.scheme() != new.scheme();
    if scheme_changed && r.meta().contains_key(keys::SCHEME_PROXY) {
        let m = r.meta_mut();
        m.remove(keys::SCHEME_PROXY);
        m.remove(keys::PROXY);
        m.remove(keys::DOWNLOAD_SLOT);
        m.remove(keys::SLOT_PROXY);
        m.remove(keys::AUTH_PROXY);
        r.headers_mut().remove("Proxy-Authorization");
    }
    let host_changed = old.host_str() != new.host_str();
    let port_of = |u: &Url| u.port().or_else(|| default_port(u.scheme()));
    if r.headers().contains("Cookie")
        && (host_changed || (scheme_changed && new.scheme() != "https"))
    {
        r.headers_mut().remove("Cookie");
    }
    if r.headers().contains("Authorization")
        && (host_changed || scheme_changed || port_of(old) != port_of(&new))
    {
        r.headers_mut().remove("Authorization");
    }
    r
}

fn handled_status(request: &Request, status: u16) -> bool {
    let m = request.meta();
    if m.get_bool(keys::HANDLE_HTTPSTATUS_ALL) {
        return true;
    }
    matches!(m.get(keys::HANDLE_HTTPSTATUS_LIST), Some(Value::Array(codes))
        if codes.iter().any(|c| c.as_u64() == Some(u64::from(status))))
}

/// The redirect bookkeeping shared by both middlewares (Scrapy's `_redirect`).
#[derive(Debug)]
struct Redirector {
    ctx: Weak<CrawlContext>,
    max_times: i64,
    priority_adjust: i32,
    /// The default referrer policy, when the Referer middleware is on.
    referrer_policy: Option<ReferrerPolicy>,
}

impl Redirector {
    fn from_context(ctx: &Rc<CrawlContext>) -> Result<Self, Failure> {
        let s = &ctx.settings;
        Ok(Self {
            ctx: Rc::downgrade(ctx),
            max_times: s.get_int("REDIRECT_MAX_TIMES")?,
            priority_adjust: i32::try_from(s.get_int("REDIRECT_PRIORITY_ADJUST")?).map_err(
                |_| Failure::msg("REDIRECT_PRIORITY_ADJUST is out of range for a priority"),
            )?,
            referrer_policy: crate::crawl::spidermiddlewares::referer::default_policy(ctx)?,
        })
    }

    fn redirect(
        &self,
        mut redirected: Request,
        request: &Request,
        reason: Value,
        response: Response,
    ) -> Result<ResponseOutcome, Failure> {
        if !matches!(redirected.url().scheme(), "http" | "https") {
            // As Scrapy (GHSA-23j4-mw76-5v7h): not followed; the response itself goes on.
            log::warn!(
                "Not following the redirect from {request} to {}: unsupported scheme",
                redirected.url()
            );
            if let Some(c) = self.ctx.upgrade() {
                c.stats.inc("redirect/unsupported_scheme");
            }
            return Ok(ResponseOutcome::Response(response));
        }
        let ttl = request
            .meta()
            .get_i64(keys::REDIRECT_TTL)
            .unwrap_or(self.max_times);
        let times = request.meta().get_i64(keys::REDIRECT_TIMES).unwrap_or(0) + 1;
        let mut urls: Vec<Value> = match request.meta().get(keys::REDIRECT_URLS) {
            Some(Value::Array(a)) => a.clone(),
            _ => Vec::new(),
        };
        urls.push(Value::from(request.url().as_str()));
        if ttl > 0 && times <= self.max_times {
            let mut reasons: Vec<Value> = match request.meta().get(keys::REDIRECT_REASONS) {
                Some(Value::Array(a)) => a.clone(),
                _ => Vec::new(),
            };
            reasons.push(reason.clone());
            let m = redirected.meta_mut();
            m.insert_static(keys::REDIRECT_TIMES, times);
            m.insert_static(keys::REDIRECT_TTL, ttl - 1);
            m.insert_static(keys::REDIRECT_URLS, urls);
            m.insert_static(keys::REDIRECT_REASONS, reasons);
            redirected.set_dont_filter(request.dont_filter());
            redirected.set_priority(request.priority().saturating_add(self.priority_adjust));
            if let Some(policy) = self.referrer_policy {
                fix_redirect_referer(&mut redirected, policy);
            }
            log::debug!("Redirecting ({reason}) to {redirected} from {request}");
            if let Some(c) = self.ctx.upgrade() {
                c.stats.inc("redirect/count");
            }
            return Ok(ResponseOutcome::Request(redirected));
        }
        let looped = urls
            .iter()
            .any(|u| u.as_str() == Some(redirected.url().as_str()));
        let why = if looped {
            "redirect loop"
        } else {
            "max redirections reached"
        };
        log::error!(
            "Discarding {request}: {why} (after {} redirects)",
            times - 1
        );
        if let Some(c) = self.ctx.upgrade() {
            c.stats.inc("redirect/max_reached");
        }
        Err(Failure::new(IgnoreRequest(why.into())))
    }
}

/// Follows HTTP redirects.
#[derive(Debug)]
pub struct RedirectMiddleware {
    inner: Redirector,
}

impl RedirectMiddleware {
    /// Reads `REDIRECT_ENABLED`, `REDIRECT_MAX_TIMES`, `REDIRECT_PRIORITY_ADJUST`.
    ///
    /// # Errors
    ///
    /// [`NotConfigured`] when disabled; invalid settings.
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Self, Failure> {
        if !ctx.settings.get_bool("REDIRECT_ENABLED")? {
            return Err(Failure::new(NotConfigured(
                "REDIRECT_ENABLED is off".into(),
            )));
        }
        Ok(Self {
            inner: Redirector::from_context(ctx)?,
        })
    }
}

impl DownloaderMiddleware for RedirectMiddleware {
    fn process_response(
        &self,
        request: &Request,
        response: Response,
    ) -> Result<ResponseOutcome, Failure> {
        let status = response.status();
        if !matches!(status, 301 | 302 | 303 | 307 | 308)
            || request.meta().get_bool(keys::DONT_REDIRECT)
            || handled_status(request, status)
        {
            return Ok(ResponseOutcome::Response(response));
        }
        let Some(location) = response.headers().get("Location") else {
            return Ok(ResponseOutcome::Response(response));
        };
        let target = redirect_target(request, location);
        let target = match target {
            Ok(t) => t,
            Err(e) => {
                let location = String::from_utf8_lossy(location);
                log::error!("Ignoring redirect from {request}: bad Location {location:?}: {e}");
                if let Some(c) = self.inner.ctx.upgrade() {
                    c.stats.inc("redirect/bad_location");
                }
                return Ok(ResponseOutcome::Response(response));
            }
        };
        let method = request.method();
        let to_get = match status {
            307 | 308 => false,
            _ if *method == Method::Head => false,
            301 | 302 => *method == Method::Post,
            _ => *method != Method::Get, // 303
        };
        let mut redirected = build_redirect_request(request, target.url().clone(), to_get);
        redirected.set_scrapy_url(target.url_str());
        self.inner
            .redirect(redirected, request, Value::from(status), response)
    }
}

/// Follows `<meta http-equiv="refresh" content="N; url=...">` with a delay below
/// `METAREFRESH_MAXDELAY`, outside `METAREFRESH_IGNORE_TAGS`.
#[derive(Debug)]
pub struct MetaRefreshMiddleware {
    inner: Redirector,
    max_delay: f64,
    ignore_tags: Vec<String>,
}

impl MetaRefreshMiddleware {
    /// Reads `METAREFRESH_ENABLED`, `METAREFRESH_MAXDELAY`, `METAREFRESH_IGNORE_TAGS`
    /// and the redirect settings.
    ///
    /// # Errors
    ///
    /// [`NotConfigured`] when disabled; invalid settings.
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Self, Failure> {
        let s = &ctx.settings;
        if !s.get_bool("METAREFRESH_ENABLED")? || !s.get_bool("REDIRECT_ENABLED")? {
            return Err(Failure::new(NotConfigured(
                "METAREFRESH_ENABLED is off".into(),
            )));
        }
        let ignore_tags = s
            .get_list("METAREFRESH_IGNORE_TAGS")?
            .into_iter()
            .filter_map(|v| v.as_str().map(str::to_ascii_lowercase))
            .collect();
        Ok(Self {
            inner: Redirector::from_context(ctx)?,
            max_delay: s.get_float("METAREFRESH_MAXDELAY")?,
            ignore_tags,
        })
    }
}

/// Where Scrapy 2.19's `RedirectMiddleware` sends a request for a `Location` value (raw
/// header bytes): UTF-8 with invalid bytes percent-encoded, `safe_url_string`, a
/// protocol-relative value (`//host/p`) given the request's scheme, `urljoin` against
/// the request's URL, then the new request's own `safe_url_string`. Its URL text
/// ([`Request::url_str`]) is Scrapy's `request.url` (`tests/url_reference.rs`, recorded
/// by `tests/data/urls/gen_redirects.py`).
///
/// # Errors
///
/// A location Scrapy cannot make a request of (a bad port, no scheme after joining).
pub fn redirect_target(request: &Request, location: &[u8]) -> Result<Request, String> {
    use crate::crawl::util::canonical::{decode_utf8_percentencode, safe_url_string, urljoin};
    let decoded = decode_utf8_percentencode(location);
    let safe = safe_url_string(&decoded).map_err(|e| e.to_string())?;
    let safe = if location.starts_with(b"//") {
        format!(
            "{}://{}",
            request.url().scheme(),
            safe.trim_start_matches('/')
        )
    } else {
        safe
    };
    let joined = urljoin(request.url_str(), &safe).map_err(|e| e.to_string())?;
    Request::get(&joined).map_err(|e| e.to_string())
}

/// Scrapy's `get_meta_refresh` (w3lib 2.5.0's scan, `crawl::metarefresh`): the first
/// `<meta>` outside comments and `ignore_tags` whose `http-equiv` holds `refresh` and
/// whose `content` reads `N; url=...`, as (delay, absolute URL as w3lib returns it),
/// found in the first 4,096 characters of the page only — a 50 MB page is never read
/// whole for it. The URL is made safe in the page's encoding and joined to the page's
/// base URL (its `<base href>`, if any).
pub fn get_meta_refresh(response: &Response, ignore_tags: &[String]) -> Option<(f64, String)> {
    let (delay, url) = crate::crawl::util::metarefresh::meta_refresh(response.head(), ignore_tags)?;
    // w3lib: `urljoin(baseurl, safe_url_string(url, encoding))`.
    let safe =
        crate::crawl::util::canonical::safe_url_string_encoded(&url, response.encoding()).ok()?;
    Some((delay, response.urljoin_str(&safe).ok()?))
}

impl DownloaderMiddleware for MetaRefreshMiddleware {
    fn process_response(
        &self,
        request: &Request,
        response: Response,
    ) -> Result<ResponseOutcome, Failure> {
        if request.meta().get_bool(keys::DONT_REDIRECT)
            || *request.method() == Method::Head
            || !matches!(request.url().scheme(), "http" | "https")
            || !response.is_html()
        {
            return Ok(ResponseOutcome::Response(response));
        }
        let Some((delay, url)) = get_meta_refresh(&response, &self.ignore_tags) else {
            return Ok(ResponseOutcome::Response(response));
        };
        if delay >= self.max_delay {
            return Ok(ResponseOutcome::Response(response));
        }
        let target = match Request::get(&url) {
            Ok(t) => t,
            Err(e) => {
                log::error!("Ignoring meta refresh from {request}: bad URL {url:?}: {e}");
                return Ok(ResponseOutcome::Response(response));
            }
        };
        // As Scrapy: a refresh is a GET, whatever the page was answering.
        let mut redirected = build_redirect_request(request, target.url().clone(), true);
        redirected.set_scrapy_url(target.url_str());
        self.inner
            .redirect(redirected, request, Value::from("meta refresh"), response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Headers;

    fn req(url: &str) -> Request {
        Request::get(url).expect("test URL")
    }

    #[test]
    fn credentials_follow_the_rules() {
        let r = req("https://a.test/x")
            .with_header("Authorization", "Basic xyz")
            .with_header("Cookie", "a=1");
        let same = build_redirect_request(&r, Url::parse("https://a.test/y").expect("u"), false);
        assert!(same.headers().contains("Authorization"));
        assert!(same.headers().contains("Cookie"));
        let other = build_redirect_request(&r, Url::parse("https://b.test/y").expect("u"), false);
        assert!(!other.headers().contains("Authorization"));
        assert!(!other.headers().contains("Cookie"));
        let down = build_redirect_request(&r, Url::parse("http://a.test/y").expect("u"), false);
        assert!(!down.headers().contains("Authorization"));
        assert!(
            !down.headers().contains("Cookie"),
            "https → http drops Cookie"
        );
        let port =
            build_redirect_request(&r, Url::parse("https://a.test:8443/y").expect("u"), false);
        assert!(!port.headers().contains("Authorization"));
        assert!(
            port.headers().contains("Cookie"),
            "cookies ignore ports (RFC 6265)"
        );
        let r = req("http://a.test/x").with_header("Cookie", "a=1");
        let up = build_redirect_request(&r, Url::parse("https://a.test/y").expect("u"), false);
        assert!(
            up.headers().contains("Cookie"),
            "an upgrade to https keeps Cookie"
        );
    }

    #[test]
    fn to_get_drops_body_and_content_headers() {
        let r = req("http://a.test/form")
            .with_method("POST")
            .with_body(b"a=1".to_vec())
            .with_header("Content-Type", "application/x-www-form-urlencoded")
            .with_header("X-Keep", "1");
        let g = build_redirect_request(&r, Url::parse("http://a.test/done").expect("u"), true);
        assert_eq!(*g.method(), Method::Get);
        assert!(g.body().is_empty());
        assert!(!g.headers().contains("Content-Type"));
        assert!(g.headers().contains("X-Keep"));
    }

    #[test]
    fn env_proxy_is_dropped_on_scheme_change() {
        let r = req("http://a.test/")
            .with_meta("proxy", "http://proxy.test:3128")
            .with_meta("_scheme_proxy", true)
            .with_header("Proxy-Authorization", "Basic cHJveHk=");
        let s = build_redirect_request(&r, Url::parse("https://a.test/").expect("u"), false);
        assert!(s.meta().get("proxy").is_none());
        assert!(!s.headers().contains("Proxy-Authorization"));
        let same = build_redirect_request(&r, Url::parse("http://a.test/2").expect("u"), false);
        assert!(same.meta().get("proxy").is_some());
    }

    #[test]
    fn meta_refresh_is_looked_for_in_the_first_4096_characters_only() {
        let resp = |html: &str| {
            Response::new(
                req("http://a.test/dir/page"),
                200,
                Headers::new(),
                html.as_bytes().to_vec(),
            )
        };
        let early = format!(
            "<html><head><meta http-equiv=\"refresh\" content=\"0; url=/a\"></head><body>{}",
            "x".repeat(10_000_000)
        );
        assert!(get_meta_refresh(&resp(&early), &[]).is_some());
        let late = format!(
            "<html><body>{}<meta http-equiv=\"refresh\" content=\"0; url=/b\">",
            "x".repeat(5_000)
        );
        let late = resp(&late);
        assert!(
            get_meta_refresh(&late, &[]).is_none(),
            "as Scrapy: past 4,096"
        );
        assert!(
            late.document_if_parsed().is_none(),
            "the page's DOM is not built"
        );
    }

    #[test]
    fn meta_refresh_content_forms() {
        let resp = |html: &str| {
            Response::new(
                req("http://a.test/dir/page"),
                200,
                Headers::new(),
                html.as_bytes().to_vec(),
            )
        };
        let none: [String; 0] = [];
        let r = resp(r#"<meta http-equiv="refresh" content="5; url=/next">"#);
        let (d, u) = get_meta_refresh(&r, &none).expect("refresh");
        assert_eq!(d, 5.0);
        assert_eq!(u.as_str(), "http://a.test/next");
        let r = resp(r#"<META HTTP-EQUIV="Refresh" CONTENT="0;URL='other.html'">"#);
        let (d, u) = get_meta_refresh(&r, &none).expect("refresh");
        assert_eq!(d, 0.0);
        assert_eq!(u.as_str(), "http://a.test/dir/other.html");
        let r = resp(r#"<meta http-equiv="refresh" content="30">"#);
        assert!(
            get_meta_refresh(&r, &none).is_none(),
            "no URL: a reload, not a redirect"
        );
        let r = resp(r#"<noscript><meta http-equiv="refresh" content="0; url=/js"></noscript>"#);
        assert!(get_meta_refresh(&r, &["noscript".to_owned()]).is_none());
        assert!(get_meta_refresh(&r, &none).is_some());
        let r = resp(r#"<meta http-equiv="refresh" content="0; url=file:///etc/passwd">"#);
        let (_, u) = get_meta_refresh(&r, &none).expect("parsed");
        assert!(
            u.starts_with("file:"),
            "parsed; the middleware refuses it: {u}"
        );
    }
}
