//! Scrapy's crawl framework on trawl's reactor: the engine, the scheduler, the
//! downloader, the scraper, the built-in middlewares and extensions, spiders and JOBDIR.
//!
//! ```text
//!   Spider.start() ──(one at a time)──> engine.crawl ──> Scheduler (dupefilter, queues)
//!                                                            │ next_request
//!                                                            v
//!   Scraper <── DownloadOutput ── Downloader (middlewares, slots, handlers) <── engine
//!      │ callbacks (spider middlewares)
//!      ├── requests ──> engine.crawl
//!      └── items ─────> item pipelines ──> item_scraped (feeds, stats)
//! ```
//!
//! # Rooms, bottom up
//!
//! Each room may use the rooms below it and never one above (`tests/layering.rs`):
//!
//! | room | holds |
//! |---|---|
//! | `util` | URL canonicalisation, Python-compatible JSON, the varint codec, HTML entities, the `<base>` and meta-refresh scans, robots.txt, the sitemap parser, fingerprint sets |
//! | `http` | [`Request`] (its meta keys, record format, JSON and form kinds), [`Response`], fingerprints, selectors |
//! | `linkextract` | [`LinkExtractor`] |
//! | `base` | settings, stats, signals, errors, items, logging, download-slot keys |
//! | `loader` | [`ItemLoader`](loader::ItemLoader) and itemloaders' processors |
//! | `jobdir` | the JOBDIR journal, its lock and its records |
//! | `context` | [`CrawlContext`]: what every component may reach |
//! | `spiders` | the [`Spider`] trait, outputs, contracts, [`CrawlSpider`], [`SitemapSpider`], [`CsvFeedSpider`] |
//! | `core` | dupefilters, item pipelines, spider-middleware manager, scheduler and queues, downloader, scraper, engine |
//! | `spidermiddlewares`, `downloadermiddlewares` | the built-in middlewares, a file each |
//! | `extensions` | the built-in extensions, a file each |
//! | `pipelines` | the built-in item pipelines that store what items point to (`FilesPipeline`) |
//! | `crawler` | [`Crawler`]: the wiring, the [`Registry`] and the built-in registrations |
//!
//! The internal rooms `util`, `http`, `base` and `core` are private; their modules
//! are public below under Scrapy's names (`trawl::crawl::scheduler`,
//! `trawl::crawl::signals`, ...), and the everyday types at this module's root.
//!
//! This layer may use everything below it (reactor, defer, task, proto, net, client,
//! html) and never the distributed or CLI layers.

mod base;
pub mod context;
mod core;
pub mod crawler;
pub mod downloadermiddlewares;
pub mod extensions;
mod http;
pub mod jobdir;
pub mod linkextract;
pub mod loader;
pub mod pipelines;
pub mod spidermiddlewares;
pub mod spiders;
mod util;

pub use self::base::{
    errors, item, logformatter, logging, logoutput, settings, signals, slots, stats,
};
pub use self::core::{downloader, dupefilter, engine, pipeline, scheduler, scraper, spidermw};
pub use self::http::request::{keys, record};
pub use self::http::{encoding, fingerprint, request, response, selector};
pub use self::util::{datetime, pycsv, pyjson, pylogfmt, robots, seen, sitemap};

pub use self::base::item::Item;
pub use self::base::settings::{Priority, Settings};
pub use self::context::{CrawlContext, EngineOps};
pub use self::crawler::process::{CrawlerProcess, CrawlerRunner};
pub use self::crawler::shutdown::ShutdownSignals;
pub use self::crawler::{Crawler, Registry};
pub use self::http::request::curl::{CurlRequest, curl_to_request_kwargs};
pub use self::http::request::curl_args::CurlError;
pub use self::http::request::error::KindError;
pub use self::http::request::form::{FormOptions, FormRequest};
pub use self::http::request::json_request::JsonRequest;
pub use self::http::request::{Meta, Method, Request};
pub use self::http::response::{FollowError, Response};
pub use self::http::selector::Selection;
pub use self::linkextract::{Link, LinkExtractor};
pub use self::spiders::{
    CallbackResult, Contract, CrawlSpider, CsvFeed, CsvFeedSpider, Later, Output, Outputs, Rule,
    SitemapSpider, Spider, XmlFeed, XmlFeedSpider, XmlIterator, later, outputs,
};
pub use self::util::canonical::{
    canonicalize_url, safe_url_string, safe_url_string_encoded, urljoin,
};

use std::rc::Rc;

use crate::defer::Failure;
use crate::reactor::Reactor;

/// Runs `spider` to completion on a new reactor with `settings` and the built-in
/// components; returns the crawler (for its stats) once the spider has closed.
///
/// # Errors
///
/// The crawl could not be set up (invalid settings, a component failed to build) or
/// the reactor failed.
pub fn run_spider(spider: Box<dyn Spider>, settings: Settings) -> Result<Rc<Crawler>, Failure> {
    run_spider_with(spider, settings, Registry::with_builtins())
}

/// [`run_spider`] with a custom component registry (user middlewares, pipelines).
///
/// # Errors
///
/// As [`run_spider`].
pub fn run_spider_with(
    spider: Box<dyn Spider>,
    settings: Settings,
    registry: Registry,
) -> Result<Rc<Crawler>, Failure> {
    let mut reactor = Reactor::new().map_err(Failure::new)?;
    let handle = reactor.handle();
    let crawler = Crawler::new(
        spider,
        settings,
        handle.clock().clone(),
        Some(handle),
        registry,
    )?;
    let done = crawler.crawl();
    reactor.run_until(&done).map_err(Failure::new)?;
    if let Some(Err(f)) = done.take_result() {
        return Err(f);
    }
    Ok(crawler)
}
