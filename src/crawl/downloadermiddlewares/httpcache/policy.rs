//! The cache policies (`HTTPCACHE_POLICY`, Scrapy's `scrapy.extensions.httpcache`):
//! [`DummyPolicy`] caches everything, [`Rfc2616Policy`] follows the HTTP caching rules.

use std::collections::HashMap;

use crate::crawl::http::request::Request;
use crate::crawl::http::response::Response;
use crate::proto::date::parse_http_date;

/// A parsed `Cache-Control` header: directive → optional value (names lower-cased).
fn parse_cache_control(value: Option<&str>) -> HashMap<String, Option<String>> {
    let mut out = HashMap::new();
    for part in value.unwrap_or("").split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        match part.split_once('=') {
            Some((k, v)) => out.insert(
                k.trim().to_ascii_lowercase(),
                Some(v.trim().trim_matches('"').to_owned()),
            ),
            None => out.insert(part.to_ascii_lowercase(), None),
        };
    }
    out
}

fn max_age(cc: &HashMap<String, Option<String>>) -> Option<f64> {
    cc.get("max-age")?
        .as_deref()?
        .parse::<i64>()
        .ok()
        .map(|v| v.max(0) as f64)
}

/// What a cache policy decides.
pub trait CachePolicy {
    /// Whether to look the request up (and store its response).
    fn should_cache_request(&self, request: &Request) -> bool;
    /// Whether to store this response.
    fn should_cache_response(&self, response: &Response, request: &Request) -> bool;
    /// Whether a cached response can be used without asking the server; may add
    /// validators to `request` when it cannot.
    fn is_cached_response_fresh(&self, cached: &Response, request: &mut Request, now: f64) -> bool;
    /// Whether the cached response stands after the server's new answer.
    fn is_cached_response_valid(
        &self,
        cached: &Response,
        response: &Response,
        request: &Request,
    ) -> bool;
}

/// Caches everything; everything cached is fresh.
#[derive(Debug, Clone, Default)]
pub struct DummyPolicy {
    pub(super) ignore_schemes: Vec<String>,
    pub(super) ignore_http_codes: Vec<u16>,
}

impl CachePolicy for DummyPolicy {
    fn should_cache_request(&self, request: &Request) -> bool {
        !self
            .ignore_schemes
            .iter()
            .any(|s| s == request.url().scheme())
    }

    fn should_cache_response(&self, response: &Response, _request: &Request) -> bool {
        !self.ignore_http_codes.contains(&response.status())
    }

    fn is_cached_response_fresh(&self, _: &Response, _: &mut Request, _: f64) -> bool {
        true
    }

    fn is_cached_response_valid(&self, _: &Response, _: &Response, _: &Request) -> bool {
        true
    }
}

/// RFC 2616 caching, as Scrapy's `RFC2616Policy` (itself modelled on Firefox's).
#[derive(Debug, Clone, Default)]
pub struct Rfc2616Policy {
    pub(super) ignore_schemes: Vec<String>,
    pub(super) always_store: bool,
    pub(super) ignore_response_cache_controls: Vec<String>,
}

/// One year: the freshness of 300/301/308 responses without other information.
const MAXAGE: f64 = 3600.0 * 24.0 * 365.0;

impl Rfc2616Policy {
    fn response_cc(&self, r: &Response) -> HashMap<String, Option<String>> {
        let mut cc = parse_cache_control(r.headers().get_str("Cache-Control"));
        for k in &self.ignore_response_cache_controls {
            cc.remove(&k.to_ascii_lowercase());
        }
        cc
    }

    fn date_of(r: &Response, now: f64) -> f64 {
        r.headers()
            .get_str("Date")
            .and_then(parse_http_date)
            .map_or(now, |d| d as f64)
    }

    fn freshness_lifetime(&self, r: &Response, now: f64) -> f64 {
        let cc = self.response_cc(r);
        if let Some(age) = max_age(&cc) {
            return age;
        }
        let date = Self::date_of(r, now);
        if let Some(expires) = r.headers().get_str("Expires") {
            // An unparsable Expires is a time in the past (RFC 2616 §14.21).
            return parse_http_date(expires).map_or(0.0, |e| (e as f64 - date).max(0.0));
        }
        if let Some(lm) = r
            .headers()
            .get_str("Last-Modified")
            .and_then(parse_http_date)
            && lm as f64 <= date
        {
            return (date - lm as f64) / 10.0;
        }
        if matches!(r.status(), 300 | 301 | 308) {
            return MAXAGE;
        }
        0.0
    }

    fn current_age(r: &Response, now: f64) -> f64 {
        let date = Self::date_of(r, now);
        let mut age = if now > date { now - date } else { 0.0 };
        if let Some(a) = r
            .headers()
            .get_str("Age")
            .and_then(|a| a.trim().parse::<i64>().ok())
        {
            age = age.max(a as f64);
        }
        age
    }
}

impl CachePolicy for Rfc2616Policy {
    fn should_cache_request(&self, request: &Request) -> bool {
        if self
            .ignore_schemes
            .iter()
            .any(|s| s == request.url().scheme())
        {
            return false;
        }
        !parse_cache_control(request.headers().get_str("Cache-Control")).contains_key("no-store")
    }

    fn should_cache_response(&self, response: &Response, _request: &Request) -> bool {
        let cc = self.response_cc(response);
        if cc.contains_key("no-store") || response.status() == 304 {
            return false;
        }
        if self.always_store {
            return true;
        }
        let h = response.headers();
        if cc.contains_key("max-age") || h.contains("Expires") {
            return true;
        }
        match response.status() {
            300 | 301 | 308 => true,
            200 | 203 | 401 => h.contains("Last-Modified") || h.contains("ETag"),
            _ => false,
        }
    }

    fn is_cached_response_fresh(&self, cached: &Response, request: &mut Request, now: f64) -> bool {
        let cc = self.response_cc(cached);
        let ccreq = parse_cache_control(request.headers().get_str("Cache-Control"));
        if cc.contains_key("no-cache") || ccreq.contains_key("no-cache") {
            return false;
        }
        let mut lifetime = self.freshness_lifetime(cached, now);
        let age = Self::current_age(cached, now);
        if let Some(req_max) = max_age(&ccreq) {
            lifetime = lifetime.min(req_max);
        }
        if age < lifetime {
            return true;
        }
        if let Some(stale) = ccreq.get("max-stale")
            && !cc.contains_key("must-revalidate")
        {
            match stale {
                None => return true,
                Some(v) => {
                    if let Ok(v) = v.parse::<i64>()
                        && age < lifetime + v.max(0) as f64
                    {
                        return true;
                    }
                }
            }
        }
        // Stale: revalidate with the validators we have.
        if let Some(lm) = cached.headers().get_str("Last-Modified") {
            request.headers_mut().set("If-Modified-Since", lm);
        }
        if let Some(etag) = cached.headers().get_str("ETag") {
            request.headers_mut().set("If-None-Match", etag);
        }
        false
    }

    fn is_cached_response_valid(
        &self,
        cached: &Response,
        response: &Response,
        _: &Request,
    ) -> bool {
        if response.status() >= 500 && !self.response_cc(cached).contains_key("must-revalidate") {
            return true;
        }
        response.status() == 304
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crawl::downloadermiddlewares::httpcache::test_support::{req, resp};

    use crate::proto::date::format_http_date;

    #[test]
    fn cache_control_parsing() {
        let cc = parse_cache_control(Some("max-age=60, no-cache, private=\"x\""));
        assert_eq!(max_age(&cc), Some(60.0));
        assert!(cc.contains_key("no-cache"));
        assert_eq!(cc.get("private"), Some(&Some("x".into())));
    }

    #[test]
    fn rfc2616_freshness() {
        let p = Rfc2616Policy::default();
        let now = 1_000_000.0;
        let date = format_http_date(1_000_000 - 30);
        let fresh = resp(200, &[("Date", &date), ("Cache-Control", "max-age=60")]);
        let stale = resp(
            200,
            &[
                ("Date", &date),
                ("Cache-Control", "max-age=10"),
                ("ETag", "\"v1\""),
            ],
        );
        let mut r = req("http://a.test/");
        assert!(p.is_cached_response_fresh(&fresh, &mut r, now));
        assert!(!p.is_cached_response_fresh(&stale, &mut r, now));
        assert_eq!(
            r.headers().get_str("If-None-Match"),
            Some("\"v1\""),
            "validator set"
        );
        let mut r = req("http://a.test/").with_header("Cache-Control", "max-stale=100");
        assert!(p.is_cached_response_fresh(&stale, &mut r, now));
        // Last-Modified heuristic: fresh for a tenth of the age at download time.
        let lm = format_http_date(1_000_000 - 1030);
        let heuristic = resp(200, &[("Date", &date), ("Last-Modified", &lm)]);
        assert!(
            p.is_cached_response_fresh(&heuristic, &mut req("http://a.test/"), now),
            "30 < 1000/10"
        );
        let lm = format_http_date(1_000_000 - 230);
        let heuristic = resp(200, &[("Date", &date), ("Last-Modified", &lm)]);
        let mut r = req("http://a.test/");
        assert!(
            !p.is_cached_response_fresh(&heuristic, &mut r, now),
            "30 ≥ 200/10"
        );
        assert_eq!(r.headers().get_str("If-Modified-Since"), Some(lm.as_str()));
        let bad_expires = resp(200, &[("Date", &date), ("Expires", "0")]);
        assert!(!p.is_cached_response_fresh(&bad_expires, &mut req("http://a.test/"), now));
        assert!(p.is_cached_response_fresh(
            &resp(301, &[("Date", &date)]),
            &mut req("http://a.test/"),
            now
        ));
    }

    #[test]
    fn rfc2616_what_to_store_and_validate() {
        let p = Rfc2616Policy::default();
        let r = req("http://a.test/");
        assert!(!p.should_cache_response(&resp(200, &[("Cache-Control", "no-store")]), &r));
        assert!(!p.should_cache_response(&resp(304, &[("Cache-Control", "max-age=5")]), &r));
        assert!(p.should_cache_response(&resp(200, &[("ETag", "x")]), &r));
        assert!(
            !p.should_cache_response(&resp(200, &[]), &r),
            "no validator, no expiry"
        );
        assert!(
            !p.should_cache_request(
                &req("http://a.test/").with_header("Cache-Control", "no-store")
            )
        );
        let cached = resp(200, &[]);
        assert!(p.is_cached_response_valid(&cached, &resp(304, &[]), &r));
        assert!(p.is_cached_response_valid(&cached, &resp(503, &[]), &r));
        assert!(!p.is_cached_response_valid(&cached, &resp(200, &[]), &r));
        let strict = resp(200, &[("Cache-Control", "must-revalidate")]);
        assert!(!p.is_cached_response_valid(&strict, &resp(503, &[]), &r));
    }
}
