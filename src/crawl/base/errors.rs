//! The exceptions of Scrapy's control flow, as error types a component returns inside a
//! `Failure`: [`IgnoreRequest`], [`DropItem`], [`CloseSpider`], [`DontCloseSpider`],
//! [`NotConfigured`].

use std::fmt;

/// A downloader middleware dropped the request (Scrapy's `IgnoreRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IgnoreRequest(pub String);

impl fmt::Display for IgnoreRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str("request ignored")
        } else {
            f.write_str(&self.0)
        }
    }
}

impl std::error::Error for IgnoreRequest {}

/// An item pipeline dropped the item (Scrapy's `DropItem`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DropItem {
    /// Why.
    pub message: String,
    /// The level of its `Dropped:` line (Scrapy's `DropItem(log_level=...)`); `None`:
    /// `DEFAULT_DROPITEM_LOG_LEVEL`.
    pub log_level: Option<String>,
}

impl DropItem {
    /// Drops an item, saying why.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            log_level: None,
        }
    }

    /// The level its line is logged at (`"INFO"`, `"DEBUG"`...).
    #[must_use]
    pub fn with_log_level(mut self, level: &str) -> Self {
        self.log_level = Some(level.to_owned());
        self
    }
}

impl fmt::Display for DropItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DropItem {}

/// Close the spider with this reason (raised by callbacks or `spider_idle` handlers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloseSpider {
    /// The finish reason (`finished`, `closespider_timeout`...).
    pub reason: String,
}

impl CloseSpider {
    /// A `CloseSpider` with a reason.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

impl fmt::Display for CloseSpider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "close spider: {}", self.reason)
    }
}

impl std::error::Error for CloseSpider {}

/// Keep the spider open although it is idle (raised by `spider_idle` handlers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DontCloseSpider;

impl fmt::Display for DontCloseSpider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("don't close the spider")
    }
}

impl std::error::Error for DontCloseSpider {}

/// A component is disabled by its settings (skipped with a debug line).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NotConfigured(pub String);

impl fmt::Display for NotConfigured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not configured: {}", self.0)
    }
}

impl std::error::Error for NotConfigured {}

/// Returned by a `headers_received` or `bytes_received` handler to stop a download
/// (Scrapy's `StopDownload`): the response completes with the body received so far,
/// flagged `download_stopped`. With `fail` (Scrapy's default) the request's errback gets
/// this error with the response in `response`; without, the callback gets the response.
#[derive(Debug, Clone)]
pub struct StopDownload {
    /// Send the response to the errback (true) or the callback (false).
    pub fail: bool,
    /// The truncated response (set by the download handler).
    pub response: Option<crate::crawl::http::response::Response>,
}

impl StopDownload {
    /// Stop, and send the response to the errback (Scrapy's default `fail=True`).
    pub fn fail() -> Self {
        Self {
            fail: true,
            response: None,
        }
    }

    /// Stop, and send the truncated response to the callback.
    pub fn keep() -> Self {
        Self {
            fail: false,
            response: None,
        }
    }
}

impl fmt::Display for StopDownload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("download stopped by a signal handler")
    }
}

impl std::error::Error for StopDownload {}
