//! Scrapy's `DefaultHeadersMiddleware` (`scrapy.downloadermiddlewares.defaultheaders`).

use std::rc::Rc;

use crate::crawl::context::CrawlContext;
use crate::crawl::core::downloader::middleware::{DownloaderMiddleware, RequestOutcome};
use crate::crawl::http::request::Request;
use crate::defer::Failure;

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
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Self, Failure> {
        let map = ctx.settings.get_dict("DEFAULT_REQUEST_HEADERS")?;
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
