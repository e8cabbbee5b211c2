//! `HttpCacheMiddleware` (`HTTPCACHE_ENABLED`, off by default): a filesystem cache of
//! responses with Scrapy's two policies (`scrapy.extensions.httpcache`), the feature
//! Scrapy users lean on while they develop a spider.
//!
//! # Storage (`trawl.FilesystemCacheStorage`)
//!
//! `HTTPCACHE_DIR` (relative paths are under `.trawl/` in the working directory, as
//! Scrapy's are under `.scrapy/`), then the spider name, then the request fingerprint:
//! `<dir>/<spider>/<fp[0..2]>/<fp>/` with the files Scrapy writes — `meta` (JSON here:
//! url, method, status, response_url, timestamp; Scrapy writes a Python repr and a
//! pickle), `request_headers` / `response_headers` (raw `Name: value` lines),
//! `request_body` / `response_body`. `HTTPCACHE_GZIP` gzips each file. An entry is
//! written into a temporary directory and renamed into place, so a crash never leaves a
//! half-written entry; an entry that cannot be read is logged, counted
//! (`httpcache/corrupt`) and treated as a miss. `HTTPCACHE_EXPIRATION_SECS` (0: never)
//! is checked against the entry's timestamp on the crawler's clock.
//!
//! # Policies (`HTTPCACHE_POLICY`)
//!
//! * `trawl.DummyPolicy`: everything is cached (except `HTTPCACHE_IGNORE_HTTP_CODES`
//!   and `HTTPCACHE_IGNORE_SCHEMES`) and always fresh.
//! * `trawl.RFC2616Policy`: Cache-Control (`no-store`, `no-cache`, `max-age`,
//!   `max-stale`, `must-revalidate`), Expires, the Last-Modified heuristic (10% of the
//!   age), conditional revalidation (`If-None-Match` / `If-Modified-Since`, 304 keeps
//!   the cached response), and a cached response served when the server answers 5xx.
//!
//! Stats: `httpcache/hit`, `miss`, `ignore`, `firsthand`, `revalidate`, `invalidate`,
//! `store`, `uncacheable`, `errorrecovery`, `corrupt`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::rc::{Rc, Weak};

use bytes::Bytes;
use serde_json::{Value, json};

use super::retry::failure_reason;
use crate::crawl::base::errors::{IgnoreRequest, NotConfigured};
use crate::crawl::context::CrawlContext;
use crate::crawl::core::downloader::middleware::{
    DownloaderMiddleware, ExceptionOutcome, RequestOutcome, ResponseOutcome,
};
use crate::crawl::http::fingerprint::{FingerprintOptions, fingerprint};
use crate::crawl::http::request::Request;
use crate::crawl::http::response::Response;
use crate::crawl::http::response::ResponseBuilder;
use crate::defer::Failure;
use crate::proto::Headers;
use crate::proto::date::{format_http_date, parse_http_date};

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
    ignore_schemes: Vec<String>,
    ignore_http_codes: Vec<u16>,
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
    ignore_schemes: Vec<String>,
    always_store: bool,
    ignore_response_cache_controls: Vec<String>,
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

/// The filesystem storage.
#[derive(Debug, Clone)]
pub struct FilesystemCacheStorage {
    dir: PathBuf,
    gzip: bool,
    expiration: f64,
}

fn raw_headers(h: &Headers) -> Vec<u8> {
    let mut out = Vec::new();
    for (n, v) in h.iter() {
        out.extend_from_slice(n);
        out.extend_from_slice(b": ");
        out.extend_from_slice(v);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn parse_raw_headers(raw: &[u8]) -> Headers {
    let mut h = Headers::new();
    for line in raw.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(colon) = line.iter().position(|&b| b == b':') {
            let name = &line[..colon];
            let value = line[colon + 1..].trim_ascii();
            if !name.is_empty() {
                h.append(name, value);
            }
        }
    }
    h
}

impl FilesystemCacheStorage {
    /// A storage under `dir` (already including the spider name).
    pub fn new(dir: PathBuf, gzip: bool, expiration: f64) -> Self {
        Self {
            dir,
            gzip,
            expiration,
        }
    }

    /// The entry directory for a fingerprint.
    pub fn entry_dir(&self, fp: &[u8; 20]) -> PathBuf {
        let h = crate::util::to_hex(fp);
        self.dir.join(&h[..2]).join(h)
    }

    fn write_file(&self, path: &Path, data: &[u8]) -> std::io::Result<()> {
        let mut f = fs::File::create(path)?;
        if self.gzip {
            let mut enc = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
            enc.write_all(data)?;
            enc.finish()?.sync_data()
        } else {
            f.write_all(data)?;
            f.sync_data()
        }
    }

    fn read_file(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        let raw = fs::read(path)?;
        if self.gzip {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(&raw[..]).read_to_end(&mut out)?;
            Ok(out)
        } else {
            Ok(raw)
        }
    }

    /// Stores `response` for `request` at wall time `now`.
    ///
    /// # Errors
    ///
    /// The filesystem refused.
    pub fn store(
        &self,
        fp: &[u8; 20],
        request: &Request,
        response: &Response,
        now: f64,
    ) -> std::io::Result<()> {
        let final_dir = self.entry_dir(fp);
        let parent = final_dir.parent().unwrap_or(&self.dir).to_path_buf();
        fs::create_dir_all(&parent)?;
        let tmp = parent.join(format!(
            ".{}.tmp-{}",
            crate::util::to_hex(fp),
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir(&tmp)?;
        let meta = json!({
            "url": request.url().as_str(),
            "method": request.method().as_str(),
            "status": response.status(),
            "response_url": response.url().as_str(),
            "timestamp": now,
        });
        self.write_file(&tmp.join("meta"), meta.to_string().as_bytes())?;
        self.write_file(
            &tmp.join("request_headers"),
            &raw_headers(request.headers()),
        )?;
        self.write_file(&tmp.join("request_body"), request.body())?;
        self.write_file(
            &tmp.join("response_headers"),
            &raw_headers(response.headers()),
        )?;
        self.write_file(&tmp.join("response_body"), response.body())?;
        let _ = fs::remove_dir_all(&final_dir);
        fs::rename(&tmp, &final_dir)
    }

    /// The cached response for `request`, if there is a fresh-enough entry.
    ///
    /// # Errors
    ///
    /// The entry exists but cannot be read (corrupt): callers treat it as a miss.
    pub fn retrieve(
        &self,
        fp: &[u8; 20],
        request: &Request,
        now: f64,
    ) -> Result<Option<Response>, String> {
        let dir = self.entry_dir(fp);
        let meta = match self.read_file(&dir.join("meta")) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", dir.display())),
        };
        let meta: Value =
            serde_json::from_slice(&meta).map_err(|e| format!("{}/meta: {e}", dir.display()))?;
        let timestamp = meta.get("timestamp").and_then(Value::as_f64).unwrap_or(0.0);
        if self.expiration > 0.0 && now - timestamp > self.expiration {
            return Ok(None);
        }
        let status = meta
            .get("status")
            .and_then(Value::as_u64)
            .and_then(|s| u16::try_from(s).ok())
            .ok_or_else(|| format!("{}/meta: no status", dir.display()))?;
        let url = meta
            .get("response_url")
            .and_then(Value::as_str)
            .and_then(|u| url::Url::parse(u).ok())
            .unwrap_or_else(|| request.url().clone());
        let headers = self
            .read_file(&dir.join("response_headers"))
            .map_err(|e| format!("{}/response_headers: {e}", dir.display()))?;
        let body = self
            .read_file(&dir.join("response_body"))
            .map_err(|e| format!("{}/response_body: {e}", dir.display()))?;
        Ok(Some(
            ResponseBuilder {
                url,
                status,
                headers: parse_raw_headers(&headers),
                body: Bytes::from(body),
                request: request.clone(),
                flags: vec!["cached".into()],
                ip: None,
                protocol: None,
            }
            .build(),
        ))
    }
}

/// The cache middleware.
pub struct HttpCacheMiddleware {
    crawler: Weak<CrawlContext>,
    policy: Box<dyn CachePolicy>,
    storage: FilesystemCacheStorage,
    ignore_missing: bool,
    download_exceptions: Vec<String>,
    /// Stale cached responses waiting for the server's answer, by fingerprint.
    pending: RefCell<HashMap<[u8; 20], Response>>,
}

impl std::fmt::Debug for HttpCacheMiddleware {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpCacheMiddleware")
            .field("storage", &self.storage)
            .finish()
    }
}

/// Scrapy's `data_path`: relative paths go under `.trawl/`.
pub fn data_path(path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        Path::new(".trawl").join(p)
    }
}

impl HttpCacheMiddleware {
    /// Reads the `HTTPCACHE_*` settings.
    ///
    /// # Errors
    ///
    /// [`NotConfigured`] when disabled; an unknown policy or storage; invalid settings.
    pub fn from_crawler(crawler: &Rc<CrawlContext>) -> Result<Self, Failure> {
        let s = &crawler.settings;
        if !s.get_bool("HTTPCACHE_ENABLED")? {
            return Err(Failure::new(NotConfigured(
                "HTTPCACHE_ENABLED is off".into(),
            )));
        }
        let strings = |name: &str| -> Result<Vec<String>, Failure> {
            Ok(s.get_list(name)?
                .into_iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect())
        };
        let ignore_schemes = strings("HTTPCACHE_IGNORE_SCHEMES")?;
        let policy_name = s.get_str("HTTPCACHE_POLICY")?.unwrap_or_default();
        let policy: Box<dyn CachePolicy> =
            match crate::crawl::base::settings::normalize_component(&policy_name).as_str() {
                "trawl.DummyPolicy" => Box::new(DummyPolicy {
                    ignore_schemes,
                    ignore_http_codes: s
                        .get_int_list("HTTPCACHE_IGNORE_HTTP_CODES")?
                        .into_iter()
                        .filter_map(|c| u16::try_from(c).ok())
                        .collect(),
                }),
                "trawl.RFC2616Policy" => Box::new(Rfc2616Policy {
                    ignore_schemes,
                    always_store: s.get_bool("HTTPCACHE_ALWAYS_STORE")?,
                    ignore_response_cache_controls: strings(
                        "HTTPCACHE_IGNORE_RESPONSE_CACHE_CONTROLS",
                    )?,
                }),
                other => {
                    return Err(Failure::msg(format!(
                        "HTTPCACHE_POLICY: unknown policy {other:?} (DummyPolicy or RFC2616Policy)"
                    )));
                }
            };
        let storage_name = s.get_str("HTTPCACHE_STORAGE")?.unwrap_or_default();
        if crate::crawl::base::settings::normalize_component(&storage_name)
            != "trawl.FilesystemCacheStorage"
        {
            return Err(Failure::msg(format!(
                "HTTPCACHE_STORAGE: unknown storage {storage_name:?} (FilesystemCacheStorage)"
            )));
        }
        let dir = data_path(
            &s.get_str("HTTPCACHE_DIR")?
                .unwrap_or_else(|| "httpcache".into()),
        )
        .join(crawler.spider_name());
        Ok(Self {
            crawler: Rc::downgrade(crawler),
            policy,
            storage: FilesystemCacheStorage::new(
                dir,
                s.get_bool("HTTPCACHE_GZIP")?,
                s.get_duration("HTTPCACHE_EXPIRATION_SECS")?,
            ),
            ignore_missing: s.get_bool("HTTPCACHE_IGNORE_MISSING")?,
            download_exceptions: strings("RETRY_EXCEPTIONS")?,
            pending: RefCell::new(HashMap::new()),
        })
    }

    fn inc(&self, key: &str) {
        if let Some(c) = self.crawler.upgrade() {
            c.stats.inc(key);
        }
    }

    fn now(&self) -> f64 {
        self.crawler
            .upgrade()
            .map_or(0.0, |c| c.clock().wall_seconds())
    }

    fn cache_response(&self, fp: &[u8; 20], response: &Response, request: &Request) {
        if self.policy.should_cache_response(response, request) {
            self.inc("httpcache/store");
            if let Err(e) = self.storage.store(fp, request, response, self.now()) {
                log::error!("Could not store {request} in the HTTP cache: {e}");
                self.inc("httpcache/store_error");
            }
        } else {
            self.inc("httpcache/uncacheable");
        }
    }
}

/// The cached response with the headers of a 304 that validated it (except the ones
/// describing the 304's own, empty, body).
fn freshen(cached: &Response, not_modified: &Response) -> Response {
    let mut b = cached.to_builder();
    let skip = |n: &[u8]| {
        [
            &b"content-length"[..],
            b"content-encoding",
            b"transfer-encoding",
            b"connection",
        ]
        .iter()
        .any(|s| n.eq_ignore_ascii_case(s))
    };
    let mut replaced: Vec<Vec<u8>> = Vec::new();
    for (name, value) in not_modified.headers().iter() {
        if skip(name) {
            continue;
        }
        if !replaced.iter().any(|r| r.eq_ignore_ascii_case(name)) {
            b.headers.remove(name);
            replaced.push(name.to_vec());
        }
        b.headers.append(name, value);
    }
    // Stored 1xx warnings go once the response is validated.
    let warnings: Vec<Vec<u8>> = b
        .headers
        .get_all("Warning")
        .filter(|v| !v.starts_with(b"1"))
        .map(<[u8]>::to_vec)
        .collect();
    b.headers.remove("Warning");
    for w in warnings {
        b.headers.append("Warning", w);
    }
    b.build()
}

fn fp_of(request: &Request) -> [u8; 20] {
    fingerprint(request, &FingerprintOptions::default())
}

impl DownloaderMiddleware for HttpCacheMiddleware {
    fn process_request(&self, request: &mut Request) -> Result<RequestOutcome, Failure> {
        if request.meta().get_bool("dont_cache") {
            return Ok(RequestOutcome::Continue);
        }
        if !self.policy.should_cache_request(request) {
            request.meta_mut().insert_static("_dont_cache", true);
            return Ok(RequestOutcome::Continue);
        }
        let fp = fp_of(request);
        let now = self.now();
        let cached = match self.storage.retrieve(&fp, request, now) {
            Ok(c) => c,
            Err(e) => {
                log::warn!("Ignoring a corrupt HTTP cache entry for {request}: {e}");
                self.inc("httpcache/corrupt");
                None
            }
        };
        let Some(cached) = cached else {
            self.inc("httpcache/miss");
            if self.ignore_missing {
                self.inc("httpcache/ignore");
                return Err(Failure::new(IgnoreRequest(format!(
                    "Ignored request not in cache: {request}"
                ))));
            }
            return Ok(RequestOutcome::Continue);
        };
        if self.policy.is_cached_response_fresh(&cached, request, now) {
            self.inc("httpcache/hit");
            return Ok(RequestOutcome::Response(cached));
        }
        self.pending.borrow_mut().insert(fp, cached);
        Ok(RequestOutcome::Continue)
    }

    fn process_response(
        &self,
        request: &Request,
        response: Response,
    ) -> Result<ResponseOutcome, Failure> {
        if request.meta().get_bool("dont_cache")
            || request.meta().get_bool("_dont_cache")
            || response.flags().iter().any(|f| f == "cached")
        {
            return Ok(ResponseOutcome::Response(response));
        }
        // RFC 2616 requires a Date; add one so freshness can be computed later.
        let response = if response.headers().contains("Date") {
            response
        } else {
            let mut b = response.to_builder();
            b.headers
                .set("Date", format_http_date(self.now().floor() as i64));
            b.build()
        };
        let fp = fp_of(request);
        let Some(cached) = self.pending.borrow_mut().remove(&fp) else {
            self.inc("httpcache/firsthand");
            self.cache_response(&fp, &response, request);
            return Ok(ResponseOutcome::Response(response));
        };
        if self
            .policy
            .is_cached_response_valid(&cached, &response, request)
        {
            self.inc("httpcache/revalidate");
            if response.status() == 304 {
                // RFC 9111 §4.3.4: the 304's headers freshen the stored response, which
                // is stored again, so the next request need not revalidate at once.
                let fresh = freshen(&cached, &response);
                self.cache_response(&fp, &fresh, request);
                return Ok(ResponseOutcome::Response(fresh));
            }
            return Ok(ResponseOutcome::Response(cached));
        }
        self.inc("httpcache/invalidate");
        self.cache_response(&fp, &response, request);
        Ok(ResponseOutcome::Response(response))
    }

    fn process_exception(
        &self,
        request: &Request,
        failure: &Failure,
    ) -> Result<ExceptionOutcome, Failure> {
        let cached = self.pending.borrow_mut().remove(&fp_of(request));
        if let Some(cached) = cached
            && self.download_exceptions.contains(&failure_reason(failure))
        {
            self.inc("httpcache/errorrecovery");
            return Ok(ExceptionOutcome::Response(cached));
        }
        Ok(ExceptionOutcome::Continue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(url: &str) -> Request {
        Request::get(url).expect("test URL")
    }

    fn resp(status: u16, headers: &[(&str, &str)]) -> Response {
        let mut h = Headers::new();
        for (n, v) in headers {
            h.append(n, v);
        }
        Response::new(req("http://a.test/"), status, h, b"body".to_vec())
    }

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

    #[test]
    fn a_304_freshens_the_cached_headers() {
        let cached = resp(
            200,
            &[
                ("Date", "old"),
                ("ETag", "\"v1\""),
                ("Content-Length", "4"),
                ("Warning", "110 stale"),
            ],
        );
        let not_modified = resp(
            304,
            &[
                ("Date", "new"),
                ("Cache-Control", "max-age=60"),
                ("Content-Length", "0"),
            ],
        );
        let fresh = freshen(&cached, &not_modified);
        assert_eq!(fresh.status(), 200);
        assert_eq!(fresh.body(), b"body");
        assert_eq!(fresh.headers().get_str("Date"), Some("new"));
        assert_eq!(fresh.headers().get_str("Cache-Control"), Some("max-age=60"));
        assert_eq!(fresh.headers().get_str("ETag"), Some("\"v1\""));
        assert_eq!(fresh.headers().get_str("Content-Length"), Some("4"));
        assert_eq!(fresh.headers().get_str("Warning"), None);
    }

    #[test]
    fn storage_round_trip_gzip_expiry_and_corruption() {
        let tmp = std::env::temp_dir().join(format!("trawl-httpcache-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        for gzip in [false, true] {
            let st = FilesystemCacheStorage::new(tmp.join(format!("g{gzip}")), gzip, 100.0);
            let r = req("http://a.test/page?x=1");
            let fp = fp_of(&r);
            let response = resp(
                203,
                &[
                    ("Content-Type", "text/html"),
                    ("Set-Cookie", "a=1"),
                    ("Set-Cookie", "b=2"),
                ],
            );
            st.store(&fp, &r, &response, 50.0).expect("store");
            let got = st.retrieve(&fp, &r, 60.0).expect("read").expect("hit");
            assert_eq!(got.status(), 203);
            assert_eq!(got.body(), b"body");
            assert_eq!(got.headers().get_all("Set-Cookie").count(), 2);
            assert_eq!(got.flags(), ["cached"]);
            assert!(
                st.retrieve(&fp, &r, 151.0).expect("read").is_none(),
                "expired"
            );
            fs::write(st.entry_dir(&fp).join("meta"), b"\x00garbage").expect("corrupt it");
            assert!(st.retrieve(&fp, &r, 60.0).is_err());
        }
        let _ = fs::remove_dir_all(&tmp);
    }
}
