//! Built-in spider middlewares: HttpError, UrlLength, Depth.

use std::fmt;
use std::rc::{Rc, Weak};

use crate::crawl::context::CrawlContext;
use crate::crawl::errors::NotConfigured;
use crate::crawl::spider::Output;
use crate::crawl::spidermw::SpiderMiddleware;
use crate::crawl::{Request, Response};
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

/// Filters out unsuccessful (non-2xx) responses before the callback, unless allowed by
/// `HTTPERROR_ALLOWED_CODES`, `HTTPERROR_ALLOW_ALL` or meta `handle_httpstatus_list` /
/// `handle_httpstatus_all`. Stats `httperror/response_ignored_count` and
/// `httperror/response_ignored_status_count/<code>`.
#[derive(Debug)]
pub struct HttpErrorMiddleware {
    crawler: Weak<CrawlContext>,
    allow_all: bool,
    allowed: Vec<i64>,
}

impl HttpErrorMiddleware {
    /// Reads the settings.
    ///
    /// # Errors
    ///
    /// Invalid settings.
    pub fn from_crawler(crawler: &Rc<CrawlContext>) -> Result<Self, Failure> {
        Ok(Self {
            crawler: Rc::downgrade(crawler),
            allow_all: crawler.settings.get_bool("HTTPERROR_ALLOW_ALL")?,
            allowed: crawler.settings.get_int_list("HTTPERROR_ALLOWED_CODES")?,
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
        if meta.get_bool("handle_httpstatus_all") {
            return Ok(());
        }
        let listed = match meta.get("handle_httpstatus_list") {
            Some(serde_json::Value::Array(codes)) => {
                codes.iter().any(|c| c.as_i64() == Some(i64::from(status)))
            }
            _ => self.allow_all || self.allowed.contains(&i64::from(status)),
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
        if let Some(c) = self.crawler.upgrade() {
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

/// Drops requests whose URL is longer than `URLLENGTH_LIMIT` (2083). Stats
/// `urllength/request_ignored_count`.
#[derive(Debug)]
pub struct UrlLengthMiddleware {
    crawler: Weak<CrawlContext>,
    limit: usize,
}

impl UrlLengthMiddleware {
    /// Reads `URLLENGTH_LIMIT`; 0 disables it.
    ///
    /// # Errors
    ///
    /// [`NotConfigured`] when the limit is 0.
    pub fn from_crawler(crawler: &Rc<CrawlContext>) -> Result<Self, Failure> {
        let limit = crawler.settings.get_usize("URLLENGTH_LIMIT")?;
        if limit == 0 {
            return Err(Failure::new(NotConfigured("URLLENGTH_LIMIT is 0".into())));
        }
        Ok(Self {
            crawler: Rc::downgrade(crawler),
            limit,
        })
    }
}

impl SpiderMiddleware for UrlLengthMiddleware {
    fn process_spider_output(
        &self,
        _response: Option<&Response>,
        _request: &Request,
        mut outputs: Vec<Output>,
    ) -> Vec<Output> {
        outputs.retain(|o| match o {
            Output::Request(r) if r.url().as_str().len() > self.limit => {
                log::info!("Ignoring link (url length > {}): {}", self.limit, r.url());
                if let Some(c) = self.crawler.upgrade() {
                    c.stats.inc("urllength/request_ignored_count");
                }
                false
            }
            _ => true,
        });
        outputs
    }
}

/// Tracks request depth in meta `depth`, drops requests past `DEPTH_LIMIT`, adjusts
/// priority by `DEPTH_PRIORITY`, and records `request_depth_max` (and, with
/// `DEPTH_STATS_VERBOSE`, `request_depth_count/<n>`).
#[derive(Debug)]
pub struct DepthMiddleware {
    crawler: Weak<CrawlContext>,
    max_depth: i64,
    priority: i64,
    verbose: bool,
}

impl DepthMiddleware {
    /// Reads the settings.
    ///
    /// # Errors
    ///
    /// Invalid settings.
    pub fn from_crawler(crawler: &Rc<CrawlContext>) -> Result<Self, Failure> {
        let s = &crawler.settings;
        Ok(Self {
            crawler: Rc::downgrade(crawler),
            max_depth: s.get_int("DEPTH_LIMIT")?,
            priority: s.get_int("DEPTH_PRIORITY")?,
            verbose: s.get_bool("DEPTH_STATS_VERBOSE")?,
        })
    }
}

impl SpiderMiddleware for DepthMiddleware {
    fn process_spider_output(
        &self,
        response: Option<&Response>,
        request: &Request,
        mut outputs: Vec<Output>,
    ) -> Vec<Output> {
        let parent = response.map_or(request, |r| r.request());
        let depth = parent.meta().get_i64("depth").unwrap_or(0) + 1;
        let crawler = self.crawler.upgrade();
        if parent.meta().get("depth").is_none()
            && let Some(c) = &crawler
            && self.verbose
        {
            c.stats.inc("request_depth_count/0");
        }
        let mut kept = 0i64;
        outputs.retain_mut(|o| {
            let Output::Request(r) = o else { return true };
            r.meta_mut().insert_static("depth", depth);
            if self.priority != 0 {
                let p = i64::from(r.priority()) - depth * self.priority;
                r.set_priority(i32::try_from(p).unwrap_or(r.priority()));
            }
            if self.max_depth > 0 && depth > self.max_depth {
                log::debug!("Ignoring link (depth > {}): {}", self.max_depth, r.url());
                return false;
            }
            kept += 1;
            true
        });
        if kept > 0
            && let Some(c) = &crawler
        {
            if self.verbose {
                c.stats
                    .inc_value(&format!("request_depth_count/{depth}"), kept);
            }
            c.stats.max_value("request_depth_max", depth);
        }
        outputs
    }
}
