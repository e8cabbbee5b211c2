//! Scrapy's `scrapy.core`: the dupefilters, the item pipeline manager, the spider
//! middleware manager, the scheduler and its queues, the downloader, the scraper and
//! the engine that drives them.

pub mod downloader;
pub mod dupefilter;
pub mod engine;
pub mod pipeline;
pub mod scheduler;
pub mod scraper;
pub mod spidermw;
