//! Scrapy's `HttpErrorMiddleware` (`scrapy.spidermiddlewares.httperror`).

use std::fmt;
use std::rc::{Rc, Weak};

use crate::crawl::context::CrawlContext;
use crate::crawl::core::spidermw::SpiderMiddleware;
use crate::crawl::http::request::keys;
use crate::crawl::http::response::Response;
use crate::crawl::spiders::outputs::Output;
use crate::defer::Failure;

/// A response with a status the spider does not handle (Scrapy's `HttpError`).
#[derive(Debug, Clone)]
pub struct HttpError {
    /// The response's status.
    pub status: u16,
    /// Its URL.
    pub url: String,
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Ignoring non-200 response ({} {})",
            self.status, self.url
        )
    }
}

impl std::error::Error for HttpError {}

/// Filters out unsuccessful (non-2xx) responses before the callback, unless allowed —
/// in Scrapy's order — by meta `handle_httpstatus_all`, meta `handle_httpstatus_list`
/// (which then decides alone), `HTTPERROR_ALLOW_ALL`, the spider's
/// [`handle_httpstatus_list`](crate::crawl::Spider::handle_httpstatus_list), or
/// `HTTPERROR_ALLOWED_CODES`. Stats `httperror/response_ignored_count` and
/// `httperror/response_ignored_status_count/<code>`.
#[derive(Debug)]
pub struct HttpErrorMiddleware {
    ctx: Weak<CrawlContext>,
    allow_all: bool,
    allowed: Vec<i64>,
}

impl HttpErrorMiddleware {
    /// Reads the settings.
    ///
    /// # Errors
    ///
    /// Invalid settings.
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Self, Failure> {
        Ok(Self {
            ctx: Rc::downgrade(ctx),
            allow_all: ctx.settings.get_bool("HTTPERROR_ALLOW_ALL")?,
            allowed: ctx.settings.get_int_list("HTTPERROR_ALLOWED_CODES")?,
        })
    }
}

impl SpiderMiddleware for HttpErrorMiddleware {
    fn process_spider_input(&self, response: &Response) -> Result<(), Failure> {
        let status = response.status();
        if (200..300).contains(&status) {
            return Ok(());
        }
        let meta = response.meta();
        if meta.get_bool(keys::HANDLE_HTTPSTATUS_ALL) {
            return Ok(());
        }
        let status_i64 = i64::from(status);
        let listed = match meta.get(keys::HANDLE_HTTPSTATUS_LIST) {
            Some(serde_json::Value::Array(codes)) => {
                codes.iter().any(|c| c.as_i64() == Some(status_i64))
            }
            Some(_) => false,
            None if self.allow_all => true,
            None => match self
                .ctx
                .upgrade()
                .and_then(|c| c.spider_handle_httpstatus_list())
            {
                Some(codes) => codes.contains(&status),
                None => self.allowed.contains(&status_i64),
            },
        };
        if listed {
            return Ok(());
        }
        Err(Failure::new(HttpError {
            status,
            url: response.url().to_string(),
        }))
    }

    fn process_spider_exception(
        &self,
        response: &Response,
        failure: &Failure,
    ) -> Option<Vec<Output>> {
        let e = failure.downcast_ref::<HttpError>()?;
        if let Some(c) = self.ctx.upgrade() {
            c.stats.inc("httperror/response_ignored_count");
            c.stats.inc(&format!(
                "httperror/response_ignored_status_count/{}",
                e.status
            ));
        }
        log::info!(
            "Ignoring response {response:?}: HTTP status code is not handled or not allowed"
        );
        Some(Vec::new())
    }
}
