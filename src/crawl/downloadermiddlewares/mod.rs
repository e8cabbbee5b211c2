//! The built-in downloader middlewares (Scrapy's `scrapy.downloadermiddlewares`), a file
//! each under Scrapy's module names, with Scrapy's setting names, meta keys and stats
//! keys. The crawler registers them under `trawl.<Name>` (Scrapy's dotted paths are
//! accepted too); `DOWNLOADER_MIDDLEWARES_BASE` orders them.
//!
//! A new one implements
//! [`DownloaderMiddleware`](crate::crawl::downloader::middleware::DownloaderMiddleware)
//! with a `from_context(&Rc<CrawlContext>)` constructor, and is registered in
//! `crawler/builtins.rs`.

pub mod cookies;
pub mod defaultheaders;
pub mod downloadtimeout;
pub mod httpauth;
pub mod httpcache;
pub mod httpcompression;
pub mod httpproxy;
pub mod offsite;
pub mod redirect;
pub mod retry;
pub mod robotstxt;
pub mod stats;
pub mod useragent;
