//! Every `Request.meta` key trawl's own components read or write, with Scrapy's names
//! (Scrapy's "Request.meta special keys" plus the private ones its middlewares use),
//! and [`KNOWN`], the list a decoded request's keys are matched against so that they
//! come back as static strings (no allocation per key).
//!
//! A component names a key through its constant here, never as a bare string, so the
//! list cannot miss a key some component sets.

/// The depth of a request in links from a start request (`DepthMiddleware`).
pub const DEPTH: &str = "depth";
/// Reset the depth of this request to 0 (`DepthMiddleware`, trawl's own).
pub const DEPTH_RESET: &str = "depth_reset";
/// The download slot the request goes to (`Downloader`; a spider may set it).
pub const DOWNLOAD_SLOT: &str = "download_slot";
/// The per-request download timeout in seconds (`DownloadTimeoutMiddleware`).
pub const DOWNLOAD_TIMEOUT: &str = "download_timeout";
/// Seconds from sending the request to the response's headers (the downloader).
pub const DOWNLOAD_LATENCY: &str = "download_latency";
/// The response size above which the download is cancelled.
pub const DOWNLOAD_MAXSIZE: &str = "download_maxsize";
/// The response size above which a warning is logged.
pub const DOWNLOAD_WARNSIZE: &str = "download_warnsize";
/// Fail (`true`) or flag (`false`) a response cut short.
pub const DOWNLOAD_FAIL_ON_DATALOSS: &str = "download_fail_on_dataloss";
/// A delay before this request is downloaded, in seconds (`Request::with_delay`;
/// Scrapy #802).
pub const DOWNLOAD_DELAY: &str = "download_delay";
/// The absolute time (crawl clock seconds) before which the request is not sent: set
/// by the scheduler from [`DOWNLOAD_DELAY`] and by `RetryMiddleware` from `Retry-After`.
pub const NOT_BEFORE: &str = "not_before";
/// The request came from the spider's `start()` (Scrapy 2.13's `is_start_request`).
pub const IS_START_REQUEST: &str = "is_start_request";
/// The JOBDIR entry a request was read from (the JOBDIR disk queue).
pub const JOB_ID: &str = "_job_id";
/// Do not follow redirects (`RedirectMiddleware`, `MetaRefreshMiddleware`).
pub const DONT_REDIRECT: &str = "dont_redirect";
/// Do not retry (`RetryMiddleware`).
pub const DONT_RETRY: &str = "dont_retry";
/// Do not cache (`HttpCacheMiddleware`).
pub const DONT_CACHE: &str = "dont_cache";
/// `HttpCacheMiddleware`'s note that this request must not be stored.
pub const DONT_CACHE_PRIVATE: &str = "_dont_cache";
/// Do not obey robots.txt for this request (`RobotsTxtMiddleware`).
pub const DONT_OBEY_ROBOTSTXT: &str = "dont_obey_robotstxt";
/// Do not merge cookies from or into the jar (`CookiesMiddleware`).
pub const DONT_MERGE_COOKIES: &str = "dont_merge_cookies";
/// Do not verify the TLS certificate (the HTTP handler).
pub const DONT_VERIFY_SSL: &str = "dont_verify_ssl";
/// The cookie jar's name (`CookiesMiddleware`).
pub const COOKIEJAR: &str = "cookiejar";
/// Pass every response to the callback, whatever its status (`HttpErrorMiddleware`).
pub const HANDLE_HTTPSTATUS_ALL: &str = "handle_httpstatus_all";
/// Statuses passed to the callback (`HttpErrorMiddleware`).
pub const HANDLE_HTTPSTATUS_LIST: &str = "handle_httpstatus_list";
/// Retries so far (`RetryMiddleware`).
pub const RETRY_TIMES: &str = "retry_times";
/// This request's retry limit (`RetryMiddleware`).
pub const MAX_RETRY_TIMES: &str = "max_retry_times";
/// Redirects so far (`RedirectMiddleware`).
pub const REDIRECT_TIMES: &str = "redirect_times";
/// Redirects left before the chain is dropped (`RedirectMiddleware`).
pub const REDIRECT_TTL: &str = "redirect_ttl";
/// The URLs redirected from (`RedirectMiddleware`).
pub const REDIRECT_URLS: &str = "redirect_urls";
/// Why each redirect happened: a status or `meta refresh` (`RedirectMiddleware`).
pub const REDIRECT_REASONS: &str = "redirect_reasons";
/// The referrer policy of this request (`RefererMiddleware`).
pub const REFERRER_POLICY: &str = "referrer_policy";
/// The proxy URL (`HttpProxyMiddleware`).
pub const PROXY: &str = "proxy";
/// The local address to connect from: an IP (`"127.0.0.2"`) or `[ip, port]`
/// (`DOWNLOAD_BIND_ADDRESS` for every request).
pub const BINDADDRESS: &str = "bindaddress";
/// The `Proxy-Authorization` the proxy middleware set (`HttpProxyMiddleware`).
pub const AUTH_PROXY: &str = "_auth_proxy";
/// The scheme whose environment proxy was applied (`HttpProxyMiddleware`).
pub const SCHEME_PROXY: &str = "_scheme_proxy";
/// The slot's proxy key (`HttpProxyMiddleware`).
pub const SLOT_PROXY: &str = "_slot_proxy";
/// Basic-auth user (`HttpAuthMiddleware`).
pub const HTTP_USER: &str = "http_user";
/// Basic-auth password (`HttpAuthMiddleware`).
pub const HTTP_PASS: &str = "http_pass";
/// The domain basic auth is sent to (`HttpAuthMiddleware`).
pub const HTTP_AUTH_DOMAIN: &str = "http_auth_domain";
/// The content encodings a response was decoded from (`HttpCompressionMiddleware`).
pub const DECODED_FROM: &str = "_decoded_from";
/// Leave this request's slot delay alone (`AutoThrottle`).
pub const AUTOTHROTTLE_DONT_ADJUST_DELAY: &str = "autothrottle_dont_adjust_delay";
/// Let this request leave the allowed domains (`OffsiteMiddleware`).
pub const ALLOW_OFFSITE: &str = "allow_offsite";

/// Every key above, sorted by value (looked up by binary search): a decoded request's keys found here are kept as static strings.
pub const KNOWN: &[&str] = &[
    AUTH_PROXY,
    DECODED_FROM,
    DONT_CACHE_PRIVATE,
    JOB_ID,
    SCHEME_PROXY,
    SLOT_PROXY,
    ALLOW_OFFSITE,
    AUTOTHROTTLE_DONT_ADJUST_DELAY,
    BINDADDRESS,
    COOKIEJAR,
    DEPTH,
    DEPTH_RESET,
    DONT_CACHE,
    DONT_MERGE_COOKIES,
    DONT_OBEY_ROBOTSTXT,
    DONT_REDIRECT,
    DONT_RETRY,
    DONT_VERIFY_SSL,
    DOWNLOAD_DELAY,
    DOWNLOAD_FAIL_ON_DATALOSS,
    DOWNLOAD_LATENCY,
    DOWNLOAD_MAXSIZE,
    DOWNLOAD_SLOT,
    DOWNLOAD_TIMEOUT,
    DOWNLOAD_WARNSIZE,
    HANDLE_HTTPSTATUS_ALL,
    HANDLE_HTTPSTATUS_LIST,
    HTTP_AUTH_DOMAIN,
    HTTP_PASS,
    HTTP_USER,
    IS_START_REQUEST,
    MAX_RETRY_TIMES,
    NOT_BEFORE,
    PROXY,
    REDIRECT_REASONS,
    REDIRECT_TIMES,
    REDIRECT_TTL,
    REDIRECT_URLS,
    REFERRER_POLICY,
    RETRY_TIMES,
];

#[cfg(test)]
mod tests {
    use super::KNOWN;

    /// Every `pub const` of this file is in [`KNOWN`]: a key added above and left out
    /// of the list would come back from a queue as an allocated string.
    #[test]
    fn every_key_is_known() {
        let src = include_str!("keys.rs");
        let consts: Vec<&str> = src
            .lines()
            .filter_map(|l| l.strip_prefix("pub const "))
            .filter(|l| l.contains(": &str = \""))
            .filter_map(|l| l.split('"').nth(1))
            .collect();
        assert!(consts.len() > 30, "{consts:?}");
        for c in &consts {
            assert!(KNOWN.contains(c), "{c} is missing from KNOWN");
        }
        assert_eq!(consts.len(), KNOWN.len());
    }
}
