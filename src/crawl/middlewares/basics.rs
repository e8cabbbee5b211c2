//! The small downloader middlewares every crawl needs: Offsite, DownloadTimeout,
//! DefaultHeaders, UserAgent and DownloaderStats.

use std::collections::HashSet;
use std::rc::{Rc, Weak};

use crate::crawl::context::CrawlContext;
use crate::crawl::downloader::middleware::{
    DownloaderMiddleware, ExceptionOutcome, RequestOutcome, ResponseOutcome,
};
use crate::crawl::errors::{IgnoreRequest, NotConfigured};
use crate::crawl::{Request, Response};
use crate::defer::Failure;

/// Drops requests for hosts outside the spider's `allowed_domains` (subdomains allowed);
/// `dont_filter` and meta `allow_offsite` bypass it. Stats `offsite/domains`,
/// `offsite/filtered`. (Scrapy 2.11+ runs it as a downloader middleware, so it applies
/// to every request, callbacks or not.)
#[derive(Debug)]
pub struct OffsiteMiddleware {
    crawler: Weak<CrawlContext>,
    domains: Vec<String>,
    seen: std::cell::RefCell<HashSet<String>>,
}

impl OffsiteMiddleware {
    /// Reads the spider's `allowed_domains`; disabled when it is empty.
    ///
    /// # Errors
    ///
    /// [`NotConfigured`] without allowed domains.
    pub fn from_crawler(crawler: &Rc<CrawlContext>) -> Result<Self, Failure> {
        let mut domains = Vec::new();
        for d in crawler.allowed_domains() {
            let d = d.trim().trim_start_matches('.').to_ascii_lowercase();
            if d.is_empty() {
                continue;
            }
            if d.contains("://") || d.contains('/') {
                log::warn!(
                    "allowed_domains accepts only domains, not URLs. Ignoring URL entry {d} in allowed_domains."
                );
                continue;
            }
            // Ports are not part of the host: "example.com:8080" allows example.com.
            domains.push(d.split(':').next().unwrap_or(&d).to_owned());
        }
        if domains.is_empty() {
            return Err(Failure::new(NotConfigured("no allowed_domains".into())));
        }
        Ok(Self {
            crawler: Rc::downgrade(crawler),
            domains,
            seen: Default::default(),
        })
    }

    fn allowed(&self, host: &str) -> bool {
        // The domains are lower-case: the host is compared with its ASCII case
        // ignored, which is comparing its lower-cased copy without making one.
        let host = host.trim_end_matches('.').as_bytes();
        self.domains.iter().any(|d| {
            let d = d.as_bytes();
            host.eq_ignore_ascii_case(d)
                || (host.len() > d.len()
                    && host[host.len() - d.len()..].eq_ignore_ascii_case(d)
                    && host[host.len() - d.len() - 1] == b'.')
        })
    }
}

impl DownloaderMiddleware for OffsiteMiddleware {
    fn process_request(&self, request: &mut Request) -> Result<RequestOutcome, Failure> {
        if request.dont_filter() || request.meta().get_bool("allow_offsite") {
            return Ok(RequestOutcome::Continue);
        }
        let host = request.url().host_str().unwrap_or("");
        if self.allowed(host) {
            return Ok(RequestOutcome::Continue);
        }
        if let Some(c) = self.crawler.upgrade() {
            if self.seen.borrow_mut().insert(host.to_owned()) {
                log::debug!("Filtered offsite request to {host:?}: {request}");
                c.stats.inc("offsite/domains");
            }
            c.stats.inc("offsite/filtered");
        }
        Err(Failure::new(IgnoreRequest(format!(
            "offsite request to {host}"
        ))))
    }
}

/// Sets meta `download_timeout` from `DOWNLOAD_TIMEOUT` when a request has none.
#[derive(Debug)]
pub struct DownloadTimeoutMiddleware {
    timeout: f64,
}

impl DownloadTimeoutMiddleware {
    /// Reads `DOWNLOAD_TIMEOUT`.
    ///
    /// # Errors
    ///
    /// An invalid setting.
    pub fn from_crawler(crawler: &Rc<CrawlContext>) -> Result<Self, Failure> {
        Ok(Self {
            timeout: crawler.settings.get_duration("DOWNLOAD_TIMEOUT")?,
        })
    }
}

impl DownloaderMiddleware for DownloadTimeoutMiddleware {
    fn process_request(&self, request: &mut Request) -> Result<RequestOutcome, Failure> {
        if self.timeout > 0.0 && !request.meta().contains_key("download_timeout") {
            request
                .meta_mut()
                .insert_static("download_timeout", self.timeout);
        }
        Ok(RequestOutcome::Continue)
    }
}

/// Adds `DEFAULT_REQUEST_HEADERS` to requests that lack them.
#[derive(Debug)]
pub struct DefaultHeadersMiddleware {
    headers: Vec<(String, String)>,
}

impl DefaultHeadersMiddleware {
    /// Reads `DEFAULT_REQUEST_HEADERS`.
    ///
    /// # Errors
    ///
    /// A malformed setting.
    pub fn from_crawler(crawler: &Rc<CrawlContext>) -> Result<Self, Failure> {
        let map = crawler.settings.get_dict("DEFAULT_REQUEST_HEADERS")?;
        let headers = map
            .into_iter()
            .filter_map(|(k, v)| match v {
                serde_json::Value::String(s) => Some((k, s)),
                serde_json::Value::Null => None,
                other => Some((k, other.to_string())),
            })
            .collect();
        Ok(Self { headers })
    }
}

impl DownloaderMiddleware for DefaultHeadersMiddleware {
    fn process_request(&self, request: &mut Request) -> Result<RequestOutcome, Failure> {
        for (k, v) in &self.headers {
            request.headers_mut().set_default(k, v);
        }
        Ok(RequestOutcome::Continue)
    }
}

/// Sets `User-Agent` from `USER_AGENT` when a request has none.
#[derive(Debug)]
pub struct UserAgentMiddleware {
    user_agent: String,
}

impl UserAgentMiddleware {
    /// Reads `USER_AGENT`.
    ///
    /// # Errors
    ///
    /// A malformed setting.
    pub fn from_crawler(crawler: &Rc<CrawlContext>) -> Result<Self, Failure> {
        Ok(Self {
            user_agent: crawler.settings.get_str("USER_AGENT")?.unwrap_or_default(),
        })
    }
}

impl DownloaderMiddleware for UserAgentMiddleware {
    fn process_request(&self, request: &mut Request) -> Result<RequestOutcome, Failure> {
        if !self.user_agent.is_empty() {
            request
                .headers_mut()
                .set_default("User-Agent", &self.user_agent);
        }
        Ok(RequestOutcome::Continue)
    }
}

/// Counts requests, responses and exceptions by method, status and type, with bytes
/// (`downloader/request_count`, `downloader/response_status_count/200`...).
#[derive(Debug)]
pub struct DownloaderStats {
    crawler: Weak<CrawlContext>,
}

impl DownloaderStats {
    /// Enabled by `DOWNLOADER_STATS`.
    ///
    /// # Errors
    ///
    /// [`NotConfigured`] when disabled.
    pub fn from_crawler(crawler: &Rc<CrawlContext>) -> Result<Self, Failure> {
        if !crawler.settings.get_bool("DOWNLOADER_STATS")? {
            return Err(Failure::new(NotConfigured(
                "DOWNLOADER_STATS is off".into(),
            )));
        }
        Ok(Self {
            crawler: Rc::downgrade(crawler),
        })
    }
}

/// Approximate size on the wire of a request (Scrapy's `get_header_size` +
/// `request_httprepr`).
fn request_size(request: &Request) -> usize {
    let target = request.url().path().len() + request.url().query().map_or(0, |q| q.len() + 1);
    let headers: usize = request
        .headers()
        .iter()
        .map(|(n, v)| n.len() + v.len() + 4)
        .sum();
    request.method().as_str().len()
        + 1
        + target
        + 11
        + 6
        + request.url().host_str().map_or(0, str::len)
        + 2
        + headers
        + 2
        + request.body().len()
}

impl DownloaderMiddleware for DownloaderStats {
    fn process_request(&self, request: &mut Request) -> Result<RequestOutcome, Failure> {
        if let Some(c) = self.crawler.upgrade() {
            c.stats.inc("downloader/request_count");
            c.stats
                .inc_joined("downloader/request_method_count/", request.method());
            c.stats
                .inc_value("downloader/request_bytes", request_size(request) as i64);
        }
        Ok(RequestOutcome::Continue)
    }

    fn process_response(
        &self,
        _request: &Request,
        response: Response,
    ) -> Result<ResponseOutcome, Failure> {
        if let Some(c) = self.crawler.upgrade() {
            c.stats.inc("downloader/response_count");
            c.stats
                .inc_joined("downloader/response_status_count/", response.status());
            let headers: usize = response
                .headers()
                .iter()
                .map(|(n, v)| n.len() + v.len() + 4)
                .sum();
            c.stats.inc_value(
                "downloader/response_bytes",
                (response.body().len() + headers + 17) as i64,
            );
        }
        Ok(ResponseOutcome::Response(response))
    }

    fn process_exception(
        &self,
        _request: &Request,
        failure: &Failure,
    ) -> Result<ExceptionOutcome, Failure> {
        if let Some(c) = self.crawler.upgrade() {
            let kind = failure.type_name().rsplit("::").next().unwrap_or("Failure");
            c.stats.inc("downloader/exception_count");
            c.stats
                .inc(&format!("downloader/exception_type_count/{kind}"));
        }
        Ok(ExceptionOutcome::Continue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsite_hosts_match_their_domain_and_its_subdomains_in_any_case() {
        // Scrapy's host regex: `^(.*\.)?(example\.com|b\.test)$`, case-insensitive,
        // on the host with trailing dots removed (the domains are stored lower-case).
        let m = OffsiteMiddleware {
            crawler: Weak::new(),
            domains: vec!["example.com".into(), "b.test".into()],
            seen: Default::default(),
        };
        for (host, allowed) in [
            ("example.com", true),
            ("EXAMPLE.com", true),
            ("www.Example.COM", true),
            ("example.com.", true),
            ("a.b.test..", true),
            ("notexample.com", false),
            ("example.com.evil", false),
            (".example.com", true),
            ("xample.com", false),
            ("", false),
            ("b.test\u{e9}", false),
        ] {
            assert_eq!(m.allowed(host), allowed, "{host}");
        }
    }
}
