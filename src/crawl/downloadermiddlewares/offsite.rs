//! Scrapy's `OffsiteMiddleware` (`scrapy.downloadermiddlewares.offsite`).

use std::collections::HashSet;
use std::rc::{Rc, Weak};

use crate::crawl::base::errors::{IgnoreRequest, NotConfigured};
use crate::crawl::context::CrawlContext;
use crate::crawl::core::downloader::middleware::{DownloaderMiddleware, RequestOutcome};
use crate::crawl::http::request::Request;
use crate::crawl::http::request::keys;
use crate::defer::Failure;

/// Drops requests for hosts outside the spider's `allowed_domains` (subdomains allowed);
/// `dont_filter` and meta `allow_offsite` bypass it. Stats `offsite/domains`,
/// `offsite/filtered`. (Scrapy 2.11+ runs it as a downloader middleware, so it applies
/// to every request, callbacks or not.)
#[derive(Debug)]
pub struct OffsiteMiddleware {
    ctx: Weak<CrawlContext>,
    domains: Vec<String>,
    seen: std::cell::RefCell<HashSet<String>>,
}

impl OffsiteMiddleware {
    /// Reads the spider's `allowed_domains`; disabled when it is empty.
    ///
    /// # Errors
    ///
    /// [`NotConfigured`] without allowed domains.
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Self, Failure> {
        let mut domains = Vec::new();
        for d in ctx.allowed_domains() {
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
            ctx: Rc::downgrade(ctx),
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
        if request.dont_filter() || request.meta().get_bool(keys::ALLOW_OFFSITE) {
            return Ok(RequestOutcome::Continue);
        }
        let host = request.url().host_str().unwrap_or("");
        if self.allowed(host) {
            return Ok(RequestOutcome::Continue);
        }
        if let Some(c) = self.ctx.upgrade() {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsite_hosts_match_their_domain_and_its_subdomains_in_any_case() {
        // Scrapy's host regex: `^(.*\.)?(example\.com|b\.test)$`, case-insensitive,
        // on the host with trailing dots removed (the domains are stored lower-case).
        let m = OffsiteMiddleware {
            ctx: Weak::new(),
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
