//! Scrapy's `DownloaderStats` (`scrapy.downloadermiddlewares.stats`).

use std::rc::{Rc, Weak};

use crate::crawl::base::errors::NotConfigured;
use crate::crawl::context::CrawlContext;
use crate::crawl::core::downloader::middleware::{
    DownloaderMiddleware, ExceptionOutcome, RequestOutcome, ResponseOutcome,
};
use crate::crawl::http::request::Request;
use crate::crawl::http::response::Response;
use crate::defer::Failure;

/// Counts requests, responses and exceptions by method, status and type, with bytes
/// (`downloader/request_count`, `downloader/response_status_count/200`...).
#[derive(Debug)]
pub struct DownloaderStats {
    ctx: Weak<CrawlContext>,
}

impl DownloaderStats {
    /// Enabled by `DOWNLOADER_STATS`.
    ///
    /// # Errors
    ///
    /// [`NotConfigured`] when disabled.
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Self, Failure> {
        if !ctx.settings.get_bool("DOWNLOADER_STATS")? {
            return Err(Failure::new(NotConfigured(
                "DOWNLOADER_STATS is off".into(),
            )));
        }
        Ok(Self {
            ctx: Rc::downgrade(ctx),
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
        if let Some(c) = self.ctx.upgrade() {
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
        if let Some(c) = self.ctx.upgrade() {
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
        if let Some(c) = self.ctx.upgrade() {
            let kind = failure.short_type_name();
            c.stats.inc("downloader/exception_count");
            c.stats
                .inc(&format!("downloader/exception_type_count/{kind}"));
        }
        Ok(ExceptionOutcome::Continue)
    }
}
