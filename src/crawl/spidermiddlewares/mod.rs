//! The built-in spider middlewares (Scrapy's `scrapy.spidermiddlewares`), a file each
//! under Scrapy's module names. The crawler registers them under `trawl.<Name>`;
//! `SPIDER_MIDDLEWARES_BASE` orders them.
//!
//! A new one implements [`SpiderMiddleware`](crate::crawl::spidermw::SpiderMiddleware)
//! with a `from_context(&Rc<CrawlContext>)` constructor, and is registered in
//! `crawler/builtins.rs`.

pub mod depth;
pub mod httperror;
pub mod referer;
pub mod urllength;
