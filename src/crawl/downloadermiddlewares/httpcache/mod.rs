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

mod middleware;
mod policy;
mod storage;

pub use middleware::{HttpCacheMiddleware, data_path};
pub use policy::{CachePolicy, DummyPolicy, Rfc2616Policy};
pub use storage::FilesystemCacheStorage;

/// What the tests of the policies, the storage and the middleware build requests and
/// responses with.
#[cfg(test)]
mod test_support {
    use crate::crawl::http::request::Request;
    use crate::crawl::http::response::Response;
    use crate::proto::Headers;

    pub(super) fn req(url: &str) -> Request {
        Request::get(url).expect("test URL")
    }

    pub(super) fn resp(status: u16, headers: &[(&str, &str)]) -> Response {
        let mut h = Headers::new();
        for (n, v) in headers {
            h.append(n, v);
        }
        Response::new(req("http://a.test/"), status, h, b"body".to_vec())
    }
}
