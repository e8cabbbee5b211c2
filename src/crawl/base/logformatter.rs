//! What the crawl says about each page, item and error (Scrapy's `LogFormatter`,
//! selected by `LOG_FORMATTER`): the `Crawled`, `Scraped from`, `Dropped`, `Error
//! processing`, `Spider error processing` and `Error downloading` lines, each with its
//! level — or `None` to say nothing. The trait's methods are Scrapy's messages
//! (tests/logging_reference.rs checks them against Scrapy 2.19's); implement the ones
//! to change, register the formatter by name (`Registry::register_log_formatter`) and
//! name it in `LOG_FORMATTER`, e.g. to log items at DEBUG without their body.

use crate::crawl::base::errors::DropItem;
use crate::crawl::base::item::Item;
use crate::crawl::http::request::Request;
use crate::crawl::http::response::Response;
use crate::crawl::util::pyjson::python_repr;
use crate::defer::Failure;

/// One line to log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// Its level.
    pub level: log::Level,
    /// The message.
    pub message: String,
}

impl LogEntry {
    /// A line at `level`.
    pub fn new(level: log::Level, message: impl Into<String>) -> Self {
        Self {
            level,
            message: message.into(),
        }
    }

    /// Logs it under `target` (the module the line is about).
    pub fn log(&self, target: &str) {
        log::log!(target: target, self.level, "{}", self.message);
    }
}

/// Scrapy's `LogFormatter`: each method returns the line to log, or `None` for none.
/// The defaults are Scrapy's; they build a line only when its level is enabled, so a
/// quiet crawl formats nothing.
pub trait LogFormatter {
    /// A response arrived (`Crawled (200) <GET url> (referer: None)`, DEBUG).
    fn crawled(&self, request: &Request, response: &Response) -> Option<LogEntry> {
        if !log::log_enabled!(log::Level::Debug) {
            return None;
        }
        let referer = referer(request);
        Some(LogEntry::new(
            log::Level::Debug,
            format!(
                "Crawled ({}) {request}{} (referer: {referer}){}",
                response.status(),
                flags(request.flags()),
                flags(response.flags()),
            ),
        ))
    }

    /// An item went through the pipelines (`Scraped from <200 url>` and the item,
    /// DEBUG). `response` is `None` for an item from `start()` or an errback; `spider`
    /// names the source then (`<spider>.start`).
    fn scraped(&self, item: &Item, response: Option<&Response>, spider: &str) -> Option<LogEntry> {
        if !log::log_enabled!(log::Level::Debug) {
            return None;
        }
        let src = match response {
            Some(r) => format!("{r:?}"),
            None => format!("{spider}.start"),
        };
        Some(LogEntry::new(
            log::Level::Debug,
            format!("Scraped from {src}\n{}", item_repr(item)),
        ))
    }

    /// A pipeline dropped an item (`Dropped: reason` and the item): at the drop's own
    /// level, else `default_level` (`DEFAULT_DROPITEM_LOG_LEVEL`, WARNING).
    fn dropped(
        &self,
        item: &Item,
        drop: &DropItem,
        response: Option<&Response>,
        default_level: log::Level,
    ) -> Option<LogEntry> {
        let _ = response;
        let level = drop
            .log_level
            .as_deref()
            .and_then(crate::crawl::base::logging::level_from_name)
            .unwrap_or(default_level);
        if !log::log_enabled!(level) {
            return None;
        }
        Some(LogEntry::new(
            level,
            format!("Dropped: {}\n{}", drop.message, item_repr(item)),
        ))
    }

    /// A pipeline failed on an item (`Error processing` and the item, ERROR; the
    /// failure follows on its own lines).
    fn item_error(
        &self,
        item: &Item,
        failure: &Failure,
        response: Option<&Response>,
    ) -> Option<LogEntry> {
        let _ = (failure, response);
        Some(LogEntry::new(
            log::Level::Error,
            format!("Error processing {}", item_repr(item)),
        ))
    }

    /// A callback or errback failed (`Spider error processing <GET url> (referer: …)`,
    /// ERROR; the failure follows).
    fn spider_error(
        &self,
        failure: &Failure,
        request: &Request,
        response: Option<&Response>,
    ) -> Option<LogEntry> {
        let _ = (failure, response);
        Some(LogEntry::new(
            log::Level::Error,
            format!(
                "Spider error processing {request} (referer: {})",
                referer(request)
            ),
        ))
    }

    /// A download failed and the request has no errback (`Error downloading <GET url>`,
    /// with `: errmsg` when there is one; ERROR).
    fn download_error(
        &self,
        failure: &Failure,
        request: &Request,
        errmsg: Option<&str>,
    ) -> Option<LogEntry> {
        let _ = failure;
        Some(LogEntry::new(
            log::Level::Error,
            match errmsg.filter(|m| !m.is_empty()) {
                Some(m) => format!("Error downloading {request}: {m}"),
                None => format!("Error downloading {request}"),
            },
        ))
    }
}

/// Scrapy's own messages (`scrapy.logformatter.LogFormatter`; `trawl.LogFormatter`).
#[derive(Debug, Default, Clone, Copy)]
pub struct ScrapyLogFormatter;

impl LogFormatter for ScrapyLogFormatter {}

/// The request's `Referer` as Scrapy prints it (`None` without one; bytes that are not
/// UTF-8 replaced).
fn referer(request: &Request) -> String {
    request.headers().get("referer").map_or_else(
        || "None".to_owned(),
        |v| String::from_utf8_lossy(v).into_owned(),
    )
}

/// A flags list as Python prints it (`['cached']`), with the space before it; nothing
/// when empty.
fn flags(flags: &[String]) -> String {
    if flags.is_empty() {
        return String::new();
    }
    let list: Vec<serde_json::Value> = flags.iter().map(|f| f.as_str().into()).collect();
    format!(" {}", python_repr(&serde_json::Value::Array(list)))
}

/// An item as Scrapy prints a dict item (`str(dict)`).
fn item_repr(item: &Item) -> String {
    python_repr(&serde_json::Value::Object(item.0.clone()))
}
