//! Layer 5: Scrapy's engine, on trawl's reactor.
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
//! [`Crawler`] holds one crawl's settings, signals, stats and clock and builds every
//! component from settings by name; [`ExecutionEngine`](engine::ExecutionEngine) runs the
//! two loops and the error-isolated per-request chain; see `DESIGN.md` for the data flow
//! of one request.
//!
//! This layer may use everything below it (reactor, defer, task, proto, net, client)
//! and never the distributed or CLI layers.

mod basehref;
mod canonical;
pub mod context;
pub mod contracts;
pub mod crawler;
pub mod crawlspider;
pub mod downloader;
pub mod dupefilter;
pub mod engine;
pub mod errors;
pub mod extensions;
pub mod fingerprint;
mod form;
mod html4_entities;
pub mod item;
pub mod jobdir;
pub mod kinds;
pub mod linkextract;
pub mod logging;
mod metarefresh;
pub mod middlewares;
pub mod pipeline;
pub mod pyjson;
pub mod record;
pub mod request;
pub mod response;
pub mod robots;
pub mod scheduler;
pub mod scraper;
pub mod seen;
mod select_re;
mod selection;
pub mod settings;
pub mod signals;
pub mod sitemap;
pub mod spider;
pub mod spidermw;
pub mod stats;

use std::rc::Rc;

pub use canonical::{canonicalize_url, safe_url_string, safe_url_string_encoded, urljoin};
pub use context::{CrawlContext, EngineOps};
pub use contracts::Contract;
pub use crawler::{Crawler, Registry};
pub use crawlspider::{CrawlSpider, Rule};
pub use form::FormOptions;
pub use item::Item;
pub use kinds::{FormRequest, JsonRequest};
pub use linkextract::{Link, LinkExtractor};
pub use request::{Meta, Method, Request};
pub use response::Response;
pub use selection::Selection;
pub use settings::{Priority, Settings};
pub use sitemap::SitemapSpider;
pub use spider::{CallbackResult, Output, Outputs, Spider, outputs};

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
