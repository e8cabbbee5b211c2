//! Scrapy's `UrlLengthMiddleware` (`scrapy.spidermiddlewares.urllength`), processing
//! outputs one at a time ([`SpiderMiddleware::per_output`]).

use std::rc::{Rc, Weak};

use crate::crawl::base::errors::NotConfigured;
use crate::crawl::context::CrawlContext;
use crate::crawl::core::spidermw::SpiderMiddleware;
use crate::crawl::http::request::Request;
use crate::crawl::http::response::Response;
use crate::defer::Failure;

/// Drops requests whose URL is longer than `URLLENGTH_LIMIT` (2083). Stats
/// `urllength/request_ignored_count`.
#[derive(Debug)]
pub struct UrlLengthMiddleware {
    ctx: Weak<CrawlContext>,
    limit: usize,
}

impl UrlLengthMiddleware {
    /// Reads `URLLENGTH_LIMIT`; 0 disables it.
    ///
    /// # Errors
    ///
    /// [`NotConfigured`] when the limit is 0.
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Self, Failure> {
        let limit = ctx.settings.get_usize("URLLENGTH_LIMIT")?;
        if limit == 0 {
            return Err(Failure::new(NotConfigured("URLLENGTH_LIMIT is 0".into())));
        }
        Ok(Self {
            ctx: Rc::downgrade(ctx),
            limit,
        })
    }
}

impl SpiderMiddleware for UrlLengthMiddleware {
    fn per_output(&self) -> bool {
        true
    }

    // Start requests are filtered too (Scrapy's `get_processed_request` sees them).
    fn get_processed_request(&self, r: &mut Request, _response: Option<&Response>) -> bool {
        // Scrapy: `len(request.url)`.
        if r.url_str().len() <= self.limit {
            return true;
        }
        log::info!(
            "Ignoring link (url length > {}): {}",
            self.limit,
            r.url_str()
        );
        if let Some(c) = self.ctx.upgrade() {
            c.stats.inc("urllength/request_ignored_count");
        }
        false
    }
}
