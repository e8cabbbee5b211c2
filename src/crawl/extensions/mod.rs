//! The built-in extensions (Scrapy's `scrapy.extensions`), a file each. An extension is
//! built with the crawler, connects to signals and lives as long as the crawl; the
//! crawler registers them under `trawl.<Name>` and `EXTENSIONS_BASE` lists them.
//!
//! A new one has an `install(&Rc<CrawlContext>)` constructor that connects its signal
//! handlers (returning [`NotConfigured`](crate::crawl::errors::NotConfigured) to stay
//! off), and is registered in `crawler/builtins.rs`.

pub mod closespider;
pub mod corestats;
pub mod enginemonitor;
pub mod feedexport;
pub mod logcount;
pub mod logstats;
pub mod memusage;
pub mod metrics;
pub mod throttle;
