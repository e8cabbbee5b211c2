//! Scrapy's `DownloadTimeoutMiddleware` (`scrapy.downloadermiddlewares.downloadtimeout`).

use std::rc::Rc;

use crate::crawl::context::CrawlContext;
use crate::crawl::core::downloader::middleware::{DownloaderMiddleware, RequestOutcome};
use crate::crawl::http::request::Request;
use crate::crawl::http::request::keys;
use crate::defer::Failure;

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
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Self, Failure> {
        Ok(Self {
            timeout: ctx.settings.get_duration("DOWNLOAD_TIMEOUT")?,
        })
    }
}

impl DownloaderMiddleware for DownloadTimeoutMiddleware {
    fn process_request(&self, request: &mut Request) -> Result<RequestOutcome, Failure> {
        if self.timeout > 0.0 && !request.meta().contains_key(keys::DOWNLOAD_TIMEOUT) {
            request
                .meta_mut()
                .insert_static(keys::DOWNLOAD_TIMEOUT, self.timeout);
        }
        Ok(RequestOutcome::Continue)
    }
}
