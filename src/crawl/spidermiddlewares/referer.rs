//! `RefererMiddleware`: sets `Referer` on requests a callback yields, following the
//! W3C Referrer Policy (Scrapy's `scrapy.spidermiddlewares.referer`).
//!
//! The policy for a request is, in order: meta `referrer_policy`; the response's
//! `Referrer-Policy` header (the last token that names a policy; unknown tokens are
//! ignored, never guessed at — GHSA-cwxj-rr6w-m6w7); `REFERRER_POLICY`. Scrapy's
//! default (`scrapy-default`) is `no-referrer-when-downgrade` that also sends nothing
//! from `file:`/`s3:` pages. Redirected requests have their `Referer` re-checked
//! against the new URL ([`fix_redirect_referer`], called by the redirect middlewares).

use std::cell::RefCell;
use std::rc::Rc;

use url::Url;

use crate::crawl::base::errors::NotConfigured;
use crate::crawl::context::CrawlContext;
use crate::crawl::core::spidermw::SpiderMiddleware;
use crate::crawl::http::request::Request;
use crate::crawl::http::request::keys;
use crate::crawl::http::response::Response;
use crate::crawl::http::response::ResponseId;
use crate::defer::Failure;

/// A referrer policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReferrerPolicy {
    /// `no-referrer`
    NoReferrer,
    /// `no-referrer-when-downgrade`
    NoReferrerWhenDowngrade,
    /// `same-origin`
    SameOrigin,
    /// `origin`
    Origin,
    /// `strict-origin`
    StrictOrigin,
    /// `origin-when-cross-origin`
    OriginWhenCrossOrigin,
    /// `strict-origin-when-cross-origin`
    StrictOriginWhenCrossOrigin,
    /// `unsafe-url`
    UnsafeUrl,
    /// Scrapy's `DefaultReferrerPolicy` (`scrapy-default`).
    ScrapyDefault,
}

impl ReferrerPolicy {
    /// Parses a policy name (W3C names, `scrapy-default`, or Scrapy's class paths).
    /// Unknown names are `None`.
    pub fn from_name(name: &str) -> Option<Self> {
        let n = name.trim().to_ascii_lowercase();
        let n = n.rsplit('.').next().unwrap_or(&n).to_owned();
        Some(match n.as_str() {
            "no-referrer" | "noreferrerpolicy" => Self::NoReferrer,
            "no-referrer-when-downgrade" | "noreferrerwhendowngradepolicy" => {
                Self::NoReferrerWhenDowngrade
            }
            "same-origin" | "sameoriginpolicy" => Self::SameOrigin,
            "origin" | "originpolicy" => Self::Origin,
            "strict-origin" | "strictoriginpolicy" => Self::StrictOrigin,
            "origin-when-cross-origin" | "originwhencrossoriginpolicy" => {
                Self::OriginWhenCrossOrigin
            }
            "strict-origin-when-cross-origin" | "strictoriginwhencrossoriginpolicy" => {
                Self::StrictOriginWhenCrossOrigin
            }
            "unsafe-url" | "unsafeurlpolicy" => Self::UnsafeUrl,
            "scrapy-default" | "defaultreferrerpolicy" | "" => Self::ScrapyDefault,
            _ => return None,
        })
    }

    /// The policy a `Referrer-Policy` header names: its last valid token, if any.
    pub fn from_header(value: &str) -> Option<Self> {
        value
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            // `scrapy-default` and class paths are settings, not header values.
            .filter(|t| !t.contains('.'))
            .filter_map(|t| Self::from_name(t).filter(|p| *p != Self::ScrapyDefault))
            .next_back()
    }

    /// The `Referer` value to send for a request to `to` from a page at `from`.
    pub fn referrer(self, from: &Url, to: &Url) -> Option<String> {
        self.referrer_from(&Referrers::new(from.clone()), to)
            .map(str::to_owned)
    }

    /// [`referrer`](Self::referrer) with the page's stripped forms computed once for
    /// all the requests it yields.
    pub fn referrer_from<'a>(self, from: &'a Referrers, to: &Url) -> Option<&'a str> {
        self.decide(from, tls_scheme(to.scheme()), || to)
    }

    /// [`referrer_from`](Self::referrer_from) for a request: its URL is parsed only
    /// when the policy compares origins (the scheme of Scrapy's string decides a
    /// downgrade; `safe_url_string` lower-cases it as the `url` crate does).
    pub fn referrer_for<'a>(self, from: &'a Referrers, to: &Request) -> Option<&'a str> {
        let text = to.url_str().as_bytes();
        // The scheme is short: a loop to the first `:` costs less than a `memchr` call.
        let scheme = text
            .iter()
            .position(|&b| b == b':')
            .map_or(&b""[..], |i| &text[..i]);
        self.decide(from, tls_scheme_bytes(scheme), || to.url())
    }

    /// The decision for a request to `to` (whose scheme is `to_tls`, or not) from
    /// `from`.
    fn decide<'a, 'u>(
        self,
        from: &'a Referrers,
        to_tls: bool,
        to: impl Fn() -> &'u Url,
    ) -> Option<&'a str> {
        let page = &from.page;
        if from.opaque {
            return None;
        }
        let full = || from.full();
        let origin = || from.origin();
        let same_origin = || same_origin(page, to());
        let downgrade = from.tls && !to_tls;
        match self {
            Self::NoReferrer => None,
            Self::NoReferrerWhenDowngrade => (!downgrade).then(full).flatten(),
            Self::ScrapyDefault => {
                if from.s3 || downgrade {
                    None
                } else {
                    full()
                }
            }
            Self::SameOrigin => same_origin().then(full).flatten(),
            Self::Origin => origin(),
            Self::StrictOrigin => (!downgrade).then(origin).flatten(),
            Self::OriginWhenCrossOrigin => {
                if same_origin() {
                    full()
                } else {
                    origin()
                }
            }
            Self::StrictOriginWhenCrossOrigin => {
                if same_origin() {
                    full()
                } else if downgrade {
                    None
                } else {
                    origin()
                }
            }
            Self::UnsafeUrl => full(),
        }
    }
}

/// A page's URL as a referrer, stripped once: in full (no credentials, no fragment) and
/// as its origin, each computed on first use.
#[derive(Debug)]
pub struct Referrers {
    page: Url,
    full: std::cell::OnceCell<Option<String>>,
    origin: std::cell::OnceCell<Option<String>>,
    /// The page's scheme, read once for all the requests it yields: `file`, `data`,
    /// `about` or `blob` (no referrer under any policy); TLS-protected; `s3`.
    opaque: bool,
    tls: bool,
    s3: bool,
    /// The page URL has a host and nothing to strip: it is its own full referrer
    /// (no copy).
    as_is: bool,
}

impl Referrers {
    /// The referrer forms of `page`.
    pub fn new(page: Url) -> Self {
        let scheme = page.scheme();
        let opaque = matches!(scheme, "file" | "data" | "about" | "blob");
        let (tls, s3) = (tls_scheme(scheme), scheme == "s3");
        let as_is = page.has_host()
            && page.username().is_empty()
            && page.password().is_none()
            && page.fragment().is_none();
        Self {
            as_is,
            page,
            full: std::cell::OnceCell::new(),
            origin: std::cell::OnceCell::new(),
            opaque,
            tls,
            s3,
        }
    }

    fn full(&self) -> Option<&str> {
        if self.as_is {
            return Some(self.page.as_str());
        }
        self.full
            .get_or_init(|| strip_url(&self.page, false))
            .as_deref()
    }

    fn origin(&self) -> Option<&str> {
        self.origin
            .get_or_init(|| strip_url(&self.page, true))
            .as_deref()
    }
}

/// `a.origin() == b.origin()` without building the origins (two allocations per
/// request): tuple origins (the schemes the `url` crate gives one) compare scheme,
/// host and port; any other origin is opaque and equal to nothing (`blob:` URLs take
/// the origin of the URL they wrap).
fn same_origin(a: &Url, b: &Url) -> bool {
    if a.scheme() == "blob" || b.scheme() == "blob" {
        // The origin of the URL inside: rare enough to build.
        return a.origin() == b.origin();
    }
    let tuple = |u: &Url| matches!(u.scheme(), "http" | "https" | "ftp" | "ws" | "wss");
    tuple(a)
        && tuple(b)
        && a.scheme() == b.scheme()
        && a.host() == b.host()
        && a.port_or_known_default() == b.port_or_known_default()
}

fn tls_scheme(scheme: &str) -> bool {
    tls_scheme_bytes(scheme.as_bytes())
}

fn tls_scheme_bytes(scheme: &[u8]) -> bool {
    matches!(scheme, b"https" | b"ftps" | b"wss")
}

/// The URL as a referrer: no credentials, no fragment; `origin_only` keeps
/// `scheme://host[:port]/`.
fn strip_url(u: &Url, origin_only: bool) -> Option<String> {
    u.host_str()?;
    let mut u = u.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.set_fragment(None);
    if origin_only {
        u.set_path("/");
        u.set_query(None);
    }
    Some(u.into())
}

/// Re-checks a redirected request's `Referer` against its new URL with its policy
/// (meta `referrer_policy`, else `default`): removed or replaced when the policy says so.
pub fn fix_redirect_referer(request: &mut Request, default: ReferrerPolicy) {
    let Some(current) = request.headers().get_str("Referer").map(str::to_owned) else {
        return;
    };
    let Ok(parent) = Url::parse(&current) else {
        return;
    };
    let policy = request
        .meta()
        .get_str(keys::REFERRER_POLICY)
        .and_then(ReferrerPolicy::from_name)
        .unwrap_or(default);
    match policy.referrer(&parent, request.url()) {
        Some(r) if r == current => {}
        Some(r) => request.headers_mut().set("Referer", r),
        None => {
            request.headers_mut().remove("Referer");
        }
    }
}

/// The `REFERRER_POLICY` setting, when `REFERER_ENABLED`.
///
/// # Errors
///
/// An unknown policy name.
pub fn default_policy(ctx: &CrawlContext) -> Result<Option<ReferrerPolicy>, Failure> {
    let s = &ctx.settings;
    if !s.get_bool("REFERER_ENABLED")? {
        return Ok(None);
    }
    let name = s.get_str("REFERRER_POLICY")?.unwrap_or_default();
    ReferrerPolicy::from_name(&name)
        .map(Some)
        .ok_or_else(|| Failure::msg(format!("REFERRER_POLICY: unknown policy {name:?}")))
}

/// Sets `Referer` on the requests callbacks yield.
#[derive(Debug)]
pub struct RefererMiddleware {
    default: ReferrerPolicy,
    /// The last page's referrer forms and `Referrer-Policy`, computed once for all the
    /// requests it yields.
    page: RefCell<Option<(ResponseId, Option<ReferrerPolicy>, Referrers)>>,
}

impl RefererMiddleware {
    /// Reads `REFERER_ENABLED` and `REFERRER_POLICY`.
    ///
    /// # Errors
    ///
    /// [`NotConfigured`] when disabled; an unknown policy.
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Self, Failure> {
        match default_policy(ctx)? {
            Some(default) => Ok(Self::new(default)),
            None => Err(Failure::new(NotConfigured("REFERER_ENABLED is off".into()))),
        }
    }

    /// A middleware with `default` as the policy.
    pub fn new(default: ReferrerPolicy) -> Self {
        Self {
            default,
            page: RefCell::new(None),
        }
    }
}

impl SpiderMiddleware for RefererMiddleware {
    fn per_output(&self) -> bool {
        true
    }

    fn get_processed_request(&self, r: &mut Request, response: Option<&Response>) -> bool {
        let Some(response) = response else {
            return true;
        };
        if r.headers().contains("Referer") {
            return true;
        }
        let mut page = self.page.borrow_mut();
        if !page.as_ref().is_some_and(|(id, ..)| id.is(response)) {
            *page = None;
        }
        let (_, header_policy, from) = page.get_or_insert_with(|| {
            let header_policy = response
                .headers()
                .get_str("Referrer-Policy")
                .and_then(ReferrerPolicy::from_header);
            (
                response.id(),
                header_policy,
                Referrers::new(response.url().clone()),
            )
        });
        let policy = r
            .meta()
            .get_str(keys::REFERRER_POLICY)
            .and_then(ReferrerPolicy::from_name)
            .or(*header_policy)
            .unwrap_or(self.default);
        if let Some(value) = policy.referrer_for(from, r) {
            r.headers_mut().set("Referer", value);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crawl::core::spidermw::SpiderMiddlewareManager;
    use crate::crawl::spiders::outputs::Output;
    use ReferrerPolicy as P;

    #[test]
    fn a_page_with_nothing_to_strip_is_its_own_full_referrer() {
        for url in [
            "http://a.test/x",
            "http://a.test/x?q=1",
            "http://a.test/x#frag",
            "http://a.test/x#",
            "http://user@a.test/x",
            "http://:pw@a.test/x",
            "http://user:pw@a.test/x?q#f",
            "https://a.test:8443/",
            "file:///tmp/a",
            "data:text/plain,x",
            "about:blank",
        ] {
            let page = Url::parse(url).expect("test URL");
            let from = Referrers::new(page.clone());
            assert_eq!(from.full(), strip_url(&page, false).as_deref(), "{url}");
        }
    }

    #[test]
    fn same_origin_agrees_with_the_url_crates_origins() {
        let urls = [
            "http://a.test/x",
            "http://a.test:80/y?q",
            "http://A.TEST/",
            "https://a.test/",
            "https://a.test:443/z",
            "http://a.test:8080/",
            "http://b.test/",
            "http://sub.a.test/",
            "ftp://a.test/",
            "ws://a.test/",
            "wss://a.test:443/",
            "file:///tmp/a",
            "data:text/plain,x",
            "blob:http://a.test/uuid",
            "s3://bucket/key",
            "http://[::1]/",
            "http://[::1]:80/",
            "http://127.0.0.1/",
            "http://user:pw@a.test/",
        ];
        for a in urls {
            for b in urls {
                let (ua, ub) = (u(a), u(b));
                assert_eq!(
                    same_origin(&ua, &ub),
                    ua.origin() == ub.origin(),
                    "{a} vs {b}"
                );
            }
        }
    }

    fn u(s: &str) -> Url {
        Url::parse(s).expect("test URL")
    }

    #[test]
    fn policies_follow_the_w3c_table() {
        let from = u("https://user:pw@a.test/page?q=1#frag");
        let same = u("https://a.test/other");
        let cross = u("https://b.test/");
        let down = u("http://a.test/");
        let full = Some("https://a.test/page?q=1".to_owned());
        let origin = Some("https://a.test/".to_owned());
        let cases = [
            (P::NoReferrer, [None, None, None]),
            (
                P::NoReferrerWhenDowngrade,
                [full.clone(), full.clone(), None],
            ),
            (P::ScrapyDefault, [full.clone(), full.clone(), None]),
            (P::SameOrigin, [full.clone(), None, None]),
            (P::Origin, [origin.clone(), origin.clone(), origin.clone()]),
            (P::StrictOrigin, [origin.clone(), origin.clone(), None]),
            (
                P::OriginWhenCrossOrigin,
                [full.clone(), origin.clone(), origin.clone()],
            ),
            (
                P::StrictOriginWhenCrossOrigin,
                [full.clone(), origin.clone(), None],
            ),
            (P::UnsafeUrl, [full.clone(), full.clone(), full.clone()]),
        ];
        for (policy, [s, c, d]) in cases {
            assert_eq!(policy.referrer(&from, &same), s, "{policy:?} same-origin");
            assert_eq!(policy.referrer(&from, &cross), c, "{policy:?} cross-origin");
            assert_eq!(policy.referrer(&from, &down), d, "{policy:?} downgrade");
        }
        assert_eq!(
            P::ScrapyDefault.referrer(&u("file:///tmp/x.html"), &same),
            None
        );
    }

    #[test]
    fn header_values_unknown_tokens_are_ignored() {
        assert_eq!(P::from_header("no-referrer"), Some(P::NoReferrer));
        assert_eq!(
            P::from_header("unsafe-url, bogus-policy"),
            Some(P::UnsafeUrl),
            "the last *valid* token wins"
        );
        assert_eq!(P::from_header("bogus"), None);
        assert_eq!(
            P::from_header("scrapy.spidermiddlewares.referer.UnsafeUrlPolicy"),
            None,
            "class paths are for settings, not for servers"
        );
        assert_eq!(P::from_header("scrapy-default"), None);
    }

    #[test]
    fn the_middleware_uses_meta_then_header_then_default() {
        let mw = RefererMiddleware::new(P::ScrapyDefault);
        let page = Request::get("https://a.test/p").expect("u");
        let mut headers = crate::proto::Headers::new();
        headers.append("Referrer-Policy", "origin");
        let resp = Response::new(page.clone(), 200, headers, b"".to_vec());
        let outs = vec![
            Output::Request(Request::get("https://a.test/x").expect("u")),
            Output::Request(
                Request::get("https://a.test/y")
                    .expect("u")
                    .with_meta("referrer_policy", "no-referrer"),
            ),
            Output::Request(
                Request::get("https://a.test/z")
                    .expect("u")
                    .with_header("Referer", "custom"),
            ),
        ];
        let manager = SpiderMiddlewareManager::new(vec![("referer".into(), Rc::new(mw))]);
        let referers = |resp: &Response, outs: Vec<Output>| -> Vec<Option<String>> {
            manager
                .process_output(
                    Some(resp),
                    &page,
                    crate::crawl::spiders::outputs::outputs(outs),
                )
                .map(|o| match o.expect("no failure") {
                    Output::Request(r) => r.headers().get_str("Referer").map(str::to_owned),
                    Output::Item(_) | Output::Later(_) => None,
                })
                .collect()
        };
        assert_eq!(
            referers(&resp, outs),
            [Some("https://a.test/".into()), None, Some("custom".into())]
        );
        // The page's forms and policy are kept for its requests only: another response
        // for the same URL, with another header, gets its own.
        let mut headers = crate::proto::Headers::new();
        headers.append("Referrer-Policy", "unsafe-url");
        let again = Response::new(page.clone(), 200, headers, b"".to_vec());
        let x = || {
            vec![Output::Request(
                Request::get("https://a.test/x").expect("u"),
            )]
        };
        assert_eq!(referers(&again, x()), [Some("https://a.test/p".into())]);
        assert_eq!(referers(&resp, x()), [Some("https://a.test/".into())]);
        // No response (start requests, an errback's outputs): nothing set.
        let starts: Vec<Output> = manager
            .process_start(crate::crawl::spiders::outputs::outputs(x()))
            .collect::<Result<_, _>>()
            .expect("no failure");
        assert!(matches!(&starts[..], [Output::Request(r)] if !r.headers().contains("Referer")));
    }

    #[test]
    fn redirects_recheck_the_referer() {
        let mut r = Request::get("http://b.test/")
            .expect("u")
            .with_header("Referer", "https://a.test/secret");
        fix_redirect_referer(&mut r, P::ScrapyDefault);
        assert!(
            !r.headers().contains("Referer"),
            "https → http after a redirect"
        );
        let mut r = Request::get("https://b.test/")
            .expect("u")
            .with_header("Referer", "https://a.test/secret")
            .with_meta("referrer_policy", "origin");
        fix_redirect_referer(&mut r, P::ScrapyDefault);
        assert_eq!(r.headers().get_str("Referer"), Some("https://a.test/"));
    }
}
