//! Scrapy's `UserAgentMiddleware` (`scrapy.downloadermiddlewares.useragent`).

use std::rc::Rc;

use crate::crawl::context::CrawlContext;
use crate::crawl::core::downloader::middleware::{DownloaderMiddleware, RequestOutcome};
use crate::crawl::http::request::Request;
use crate::defer::Failure;

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
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Self, Failure> {
        Ok(Self {
            user_agent: ctx.settings.get_str("USER_AGENT")?.unwrap_or_default(),
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
