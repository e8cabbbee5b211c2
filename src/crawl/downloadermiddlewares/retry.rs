//! `RetryMiddleware` and the public [`get_retry_request`] helper (Scrapy's
//! `scrapy.downloadermiddlewares.retry`).
//!
//! A response whose status is in `RETRY_HTTP_CODES`, or a download failure whose type is
//! in `RETRY_EXCEPTIONS`, is retried up to `RETRY_TIMES` (meta `max_retry_times`) times:
//! a copy of the request with meta `retry_times` + 1, `dont_filter` set and the priority
//! moved by `RETRY_PRIORITY_ADJUST`. Meta `dont_retry` opts out. Stats `retry/count`,
//! `retry/reason_count/<reason>`, `retry/max_reached`.

use std::rc::{Rc, Weak};

use serde_json::Value;

use crate::crawl::base::errors::NotConfigured;
use crate::crawl::base::settings::Settings;
use crate::crawl::base::stats::StatsCollector;
use crate::crawl::context::CrawlContext;
use crate::crawl::core::downloader::middleware::{
    DownloaderMiddleware, ExceptionOutcome, ResponseOutcome,
};
use crate::crawl::http::request::Request;
use crate::crawl::http::request::keys;
use crate::crawl::http::response::Response;
use crate::defer::{Failure, short_type_name};
use crate::proto::http1::status_message;

/// The failure types retried by default (`RETRY_EXCEPTIONS`), by short type name: the
/// counterparts of Twisted's timeout, DNS, connection and `ResponseFailed` errors and of
/// Scrapy's `TunnelError`, and a SOCKS5 proxy's refusal (`Socks5Error`).
pub const DEFAULT_RETRY_EXCEPTIONS: &[&str] = &[
    "TimeoutError",
    "DownloadTimeout",
    "DnsLookupError",
    "ConnectError",
    "ConnectionDone",
    "ConnectionLost",
    "HttpError",
    "TlsError",
    "TunnelError",
    "Socks5Error",
    "Error", // std::io::Error
];

/// Options of [`get_retry_request`]; `None` means "from meta, else settings".
#[derive(Debug, Clone, Default)]
pub struct RetryOptions {
    /// Overrides meta `max_retry_times` and `RETRY_TIMES`.
    pub max_retry_times: Option<i64>,
    /// Overrides `RETRY_PRIORITY_ADJUST`.
    pub priority_adjust: Option<i32>,
    /// The stats prefix (`"retry"`).
    pub stats_base_key: Option<String>,
}

/// Scrapy's `get_retry_request`: a copy of `request` to retry, or `None` (logged at
/// error level, `retry/max_reached` counted) when it has been retried enough. Spiders
/// call it from callbacks to retry on their own conditions.
pub fn get_retry_request(
    request: &Request,
    settings: &Settings,
    stats: &dyn StatsCollector,
    reason: &str,
    options: &RetryOptions,
) -> Option<Request> {
    let retry_times = request.meta().get_i64(keys::RETRY_TIMES).unwrap_or(0) + 1;
    let max = options
        .max_retry_times
        .or_else(|| request.meta().get_i64(keys::MAX_RETRY_TIMES))
        .unwrap_or_else(|| settings.get_int("RETRY_TIMES").unwrap_or(2));
    let base = options.stats_base_key.as_deref().unwrap_or("retry");
    if retry_times <= max {
        log::debug!("Retrying {request} (failed {retry_times} times): {reason}");
        let mut new = request.clone();
        new.meta_mut().insert_static(keys::RETRY_TIMES, retry_times);
        new.set_dont_filter(true);
        let adjust = options.priority_adjust.unwrap_or_else(|| {
            settings
                .get_int("RETRY_PRIORITY_ADJUST")
                .ok()
                .and_then(|v| i32::try_from(v).ok())
                .unwrap_or(-1)
        });
        new.set_priority(request.priority().saturating_add(adjust));
        stats.inc(&format!("{base}/count"));
        stats.inc(&format!("{base}/reason_count/{reason}"));
        Some(new)
    } else {
        stats.inc(&format!("{base}/max_reached"));
        log::error!("Gave up retrying {request} (failed {retry_times} times): {reason}");
        None
    }
}

/// Retries failed downloads and responses with retryable statuses.
#[derive(Debug)]
pub struct RetryMiddleware {
    ctx: Weak<CrawlContext>,
    codes: Vec<u16>,
    exceptions: Vec<String>,
    /// `RETRY_AFTER_MAX`: the longest `Retry-After` honoured (0: the header is ignored).
    retry_after_max: f64,
}

impl RetryMiddleware {
    /// Reads `RETRY_ENABLED`, `RETRY_HTTP_CODES`, `RETRY_EXCEPTIONS`.
    ///
    /// # Errors
    ///
    /// [`NotConfigured`] when disabled; an invalid setting.
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Self, Failure> {
        let s = &ctx.settings;
        if !s.get_bool("RETRY_ENABLED")? {
            return Err(Failure::new(NotConfigured("RETRY_ENABLED is off".into())));
        }
        let codes = s
            .get_int_list("RETRY_HTTP_CODES")?
            .into_iter()
            .filter_map(|c| u16::try_from(c).ok())
            .collect();
        let exceptions = s
            .get_list("RETRY_EXCEPTIONS")?
            .into_iter()
            .filter_map(|v| match v {
                Value::String(s) => Some(short_type_name(&s).to_owned()),
                _ => None,
            })
            .collect();
        Ok(Self {
            ctx: Rc::downgrade(ctx),
            codes,
            exceptions,
            retry_after_max: s.get_duration("RETRY_AFTER_MAX")?,
        })
    }

    fn retry(&self, request: &Request, reason: &str) -> Option<Request> {
        let c = self.ctx.upgrade()?;
        get_retry_request(
            request,
            &c.settings,
            &*c.stats,
            reason,
            &RetryOptions::default(),
        )
    }
}

impl DownloaderMiddleware for RetryMiddleware {
    fn process_response(
        &self,
        request: &Request,
        response: Response,
    ) -> Result<ResponseOutcome, Failure> {
        if request.meta().get_bool(keys::DONT_RETRY) || !self.codes.contains(&response.status()) {
            return Ok(ResponseOutcome::Response(response));
        }
        match self.retry(request, &status_message(response.status())) {
            Some(mut r) => {
                // Retry-After (Scrapy ignores it: scrapy#3849): the retry waits that
                // long, and so does every request to the same download slot.
                if let Some(c) = self.ctx.upgrade()
                    && let Some(wait) = crate::crawl::http::response::retry_after_seconds(
                        &response,
                        c.clock().wall_seconds(),
                        self.retry_after_max,
                    )
                {
                    r.meta_mut()
                        .remove(crate::crawl::http::request::keys::NOT_BEFORE);
                    r = r.with_delay(wait);
                    c.stats.inc("retry/retry_after_count");
                    log::debug!("Retry-After {wait} s from {request}: the retry waits");
                }
                Ok(ResponseOutcome::Request(r))
            }
            None => Ok(ResponseOutcome::Response(response)),
        }
    }

    fn process_exception(
        &self,
        request: &Request,
        failure: &Failure,
    ) -> Result<ExceptionOutcome, Failure> {
        let reason = failure.short_type_name();
        if request.meta().get_bool(keys::DONT_RETRY) || !self.exceptions.iter().any(|e| e == reason)
        {
            return Ok(ExceptionOutcome::Continue);
        }
        Ok(match self.retry(request, reason) {
            Some(r) => ExceptionOutcome::Request(r),
            None => ExceptionOutcome::Continue,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names() {
        assert_eq!(
            short_type_name("trawl::net::tcp::ConnectError"),
            "ConnectError"
        );
        assert_eq!(short_type_name("std::io::error::Error"), "Error");
        assert_eq!(short_type_name("Box<dyn Error>"), "Box");
        assert_eq!(short_type_name("Plain"), "Plain");
    }

    #[test]
    fn retry_request_counts_and_gives_up() {
        let settings = Settings::new();
        let stats = crate::crawl::base::stats::MemoryStatsCollector::new();
        let r = Request::get("http://a.test/")
            .expect("url")
            .with_priority(5);
        let opts = RetryOptions::default();
        let r1 = get_retry_request(&r, &settings, &stats, "503 Service Unavailable", &opts)
            .expect("first retry");
        assert_eq!(r1.meta().get_i64("retry_times"), Some(1));
        assert!(r1.dont_filter());
        assert_eq!(r1.priority(), 4);
        let r2 = get_retry_request(&r1, &settings, &stats, "503 Service Unavailable", &opts)
            .expect("second retry");
        assert_eq!(r2.priority(), 3);
        assert!(
            get_retry_request(&r2, &settings, &stats, "503 Service Unavailable", &opts).is_none()
        );
        assert_eq!(stats.get_int("retry/count"), 2);
        assert_eq!(
            stats.get_int("retry/reason_count/503 Service Unavailable"),
            2
        );
        assert_eq!(stats.get_int("retry/max_reached"), 1);
        let r = r.with_meta("max_retry_times", 0);
        assert!(get_retry_request(&r, &settings, &stats, "x", &opts).is_none());
    }
}
