//! [`HttpCacheMiddleware`]: the downloader middleware that answers from the cache and
//! stores what the policy lets it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::{Rc, Weak};

use super::policy::{CachePolicy, DummyPolicy, Rfc2616Policy};
use super::storage::FilesystemCacheStorage;

use crate::crawl::base::errors::{IgnoreRequest, NotConfigured};
use crate::crawl::context::CrawlContext;
use crate::crawl::core::downloader::middleware::{
    DownloaderMiddleware, ExceptionOutcome, RequestOutcome, ResponseOutcome,
};

use crate::crawl::http::request::Request;
use crate::crawl::http::request::keys;
use crate::crawl::http::response::Response;
use crate::defer::Failure;
use crate::proto::date::format_http_date;

/// The cache middleware.
pub struct HttpCacheMiddleware {
    ctx: Weak<CrawlContext>,
    policy: Box<dyn CachePolicy>,
    storage: FilesystemCacheStorage,
    ignore_missing: bool,
    download_exceptions: Vec<String>,
    /// Stale cached responses waiting for the server's answer, by fingerprint.
    pending: RefCell<HashMap<[u8; 20], Response>>,
    /// The crawl's `REQUEST_FINGERPRINTER_CLASS`: the cache's keys.
    fingerprinter: Rc<dyn crate::crawl::http::fingerprint::RequestFingerprinter>,
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
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Self, Failure> {
        let s = &ctx.settings;
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
        .join(ctx.spider_name());
        Ok(Self {
            fingerprinter: ctx.fingerprinter(),
            ctx: Rc::downgrade(ctx),
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
        if let Some(c) = self.ctx.upgrade() {
            c.stats.inc(key);
        }
    }

    fn now(&self) -> f64 {
        self.ctx.upgrade().map_or(0.0, |c| c.clock().wall_seconds())
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

impl DownloaderMiddleware for HttpCacheMiddleware {
    fn process_request(&self, request: &mut Request) -> Result<RequestOutcome, Failure> {
        if request.meta().get_bool(keys::DONT_CACHE) {
            return Ok(RequestOutcome::Continue);
        }
        if !self.policy.should_cache_request(request) {
            request
                .meta_mut()
                .insert_static(keys::DONT_CACHE_PRIVATE, true);
            return Ok(RequestOutcome::Continue);
        }
        let fp = self.fingerprinter.fingerprint(request);
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
        if request.meta().get_bool(keys::DONT_CACHE)
            || request.meta().get_bool(keys::DONT_CACHE_PRIVATE)
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
        let fp = self.fingerprinter.fingerprint(request);
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
        let cached = self
            .pending
            .borrow_mut()
            .remove(&self.fingerprinter.fingerprint(request));
        if let Some(cached) = cached
            && self
                .download_exceptions
                .iter()
                .any(|e| e == failure.short_type_name())
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
    use crate::crawl::downloadermiddlewares::httpcache::test_support::resp;

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
}
