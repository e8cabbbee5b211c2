//! The [`Spider`] trait: what to crawl and how to parse it.
//!
//! Callbacks are dispatched by name (`Request::with_callback("parse_author")`), because
//! requests are data that may sit in a disk or Redis queue. A spider implements
//! [`Spider::callback`] with a `match` on the name; the default handles `"parse"`.
//! `start()` is pulled lazily, one output at a time, as Scrapy 2.13+ does.

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

use serde_json::Value;

use super::outputs::{CallbackResult, Output, Outputs, outputs};
use crate::crawl::http::request::Request;
use crate::crawl::http::response::Response;
use crate::defer::Failure;

/// The spider, shared by the engine and the scraper.
pub type SpiderCell = Rc<RefCell<Box<dyn Spider>>>;

/// No callback with that name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownCallback(pub String);

impl fmt::Display for UnknownCallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the spider has no callback named {:?}", self.0)
    }
}

impl std::error::Error for UnknownCallback {}

/// A spider: Scrapy's `Spider`.
///
/// # Examples
///
/// ```
/// use trawl::crawl::{CallbackResult, Item, Output, Response, Spider};
///
/// struct Quotes;
///
/// impl Spider for Quotes {
///     fn name(&self) -> &str { "quotes" }
///     fn start_urls(&self) -> Vec<String> { vec!["http://127.0.0.1:8000/page/1/".into()] }
///     fn parse(&mut self, response: &Response) -> CallbackResult {
///         let mut out = Vec::new();
///         for q in response.css("div.quote") {
///             out.push(Output::Item(Item::new().with("text", q.css("span.text::text").get())));
///         }
///         if let Some(next) = response.css("li.next a::attr(href)").get() {
///             out.push(Output::Request(response.follow(&next)?));
///         }
///         Ok(out)
///     }
/// }
///
/// let spider: Box<dyn Spider> = Box::new(Quotes);
/// assert_eq!(spider.name(), "quotes");
/// ```
pub trait Spider {
    /// The spider's name.
    fn name(&self) -> &str;

    /// Domains this spider may crawl (subdomains included); empty means any.
    fn allowed_domains(&self) -> Vec<String> {
        Vec::new()
    }

    /// Settings that override the project's (`custom_settings`).
    fn custom_settings(&self) -> Vec<(String, Value)> {
        Vec::new()
    }

    /// Non-2xx statuses this spider's callbacks handle (Scrapy's spider attribute
    /// `handle_httpstatus_list`, read by `HttpErrorMiddleware` after the meta keys and
    /// `HTTPERROR_ALLOW_ALL`, before `HTTPERROR_ALLOWED_CODES`).
    fn handle_httpstatus_list(&self) -> Option<Vec<u16>> {
        None
    }

    /// URLs the default `start()` requests.
    fn start_urls(&self) -> Vec<String> {
        Vec::new()
    }

    /// The initial requests and items, pulled one at a time. The default requests every
    /// start URL with `dont_filter` (as Scrapy's default `start()` does).
    ///
    /// An `Err` ends `start()` as an exception would in Scrapy: a
    /// [`CloseSpider`](crate::crawl::base::errors::CloseSpider) closes the spider with its reason;
    /// anything else is logged, sent as `spider_error`, counted in
    /// `spider_exceptions/<type>`, and the crawl finishes with reason `start_error`.
    fn start(&mut self) -> Outputs {
        let urls = self.start_urls();
        Box::new(urls.into_iter().filter_map(|u| match Request::get(&u) {
            Ok(r) => Some(Ok(Output::Request(r.with_dont_filter(true)))),
            Err(e) => {
                log::error!("Invalid start URL {u:?}: {e}");
                None
            }
        }))
    }

    /// Dispatches a callback by name; the default knows `"parse"`.
    ///
    /// # Errors
    ///
    /// Whatever the callback returns, or [`UnknownCallback`].
    fn callback(&mut self, name: &str, response: &Response) -> CallbackResult {
        match name {
            "parse" => self.parse(response),
            other => Err(Failure::new(UnknownCallback(other.to_owned()))),
        }
    }

    /// Like [`callback`](Self::callback), but lazy: the engine pulls the outputs one at
    /// a time, scheduling requests as they come and keeping at most `CONCURRENT_ITEMS`
    /// items in the pipelines, as Scrapy iterates a callback's generator. Override it for
    /// callbacks that produce many outputs; the default calls `callback`.
    ///
    /// # Errors
    ///
    /// A failure before the first output (one during the iteration is an `Err` item).
    fn callback_outputs(&mut self, name: &str, response: &Response) -> Result<Outputs, Failure> {
        self.callback(name, response).map(outputs)
    }

    /// The default callback.
    ///
    /// # Errors
    ///
    /// The default implementation has nothing to do and says so.
    fn parse(&mut self, _response: &Response) -> CallbackResult {
        Err(Failure::new(UnknownCallback("parse".into())))
    }

    /// Dispatches an errback by name. The default re-raises (the failure is logged).
    ///
    /// # Errors
    ///
    /// The failure itself by default.
    fn errback(&mut self, name: &str, failure: &Failure, _request: &Request) -> CallbackResult {
        let _ = name;
        Err(failure.clone())
    }

    /// Called once the crawler's settings are final (custom settings applied), before
    /// the crawl starts: the place to read settings the spider needs.
    fn settings_ready(&mut self, settings: &crate::crawl::base::settings::Settings) {
        let _ = settings;
    }

    /// Called once with the crawl's context (Scrapy's `spider.crawler`): settings,
    /// signals, stats, clock and the engine handle. A spider that connects to signals
    /// (`spider_idle` for a Redis-fed spider) keeps a weak reference.
    fn set_context(&mut self, ctx: &std::rc::Rc<crate::crawl::context::CrawlContext>) {
        let _ = ctx;
    }

    /// The spider's attributes by name, as Scrapy code reads them off the spider
    /// object: a feed URI's `%(category)s` finds `category` here (the spider's `name`
    /// and `allowed_domains`, and the `-a NAME=VALUE` arguments, are added by the
    /// crawl; an argument wins over an attribute of the same name, as in Scrapy).
    fn attributes(&self) -> serde_json::Map<String, serde_json::Value> {
        serde_json::Map::new()
    }

    /// Called when the spider has been opened.
    fn opened(&mut self) {}

    /// Called when the spider closes, with the reason (Scrapy's `closed`).
    fn closed(&mut self, _reason: &str) {}

    /// The contracts `check` verifies (Scrapy's `@url` / `@returns` / `@scrapes`
    /// docstring contracts): a page per callback and what the callback must return.
    fn contracts(&self) -> Vec<super::contracts::Contract> {
        Vec::new()
    }
}

/// The spider's attributes as the crawl's components see them
/// ([`Spider::attributes`], `name`, `allowed_domains`, then the spider arguments): a
/// resource of the crawl's context.
#[derive(Debug, Clone, Default)]
pub struct SpiderAttributes(pub serde_json::Map<String, serde_json::Value>);
