//! Built-in downloader and spider middlewares, with Scrapy's setting names, meta keys
//! and stats keys, registered under `trawl.<Name>` (Scrapy's dotted paths are accepted
//! too).

mod basics;
mod spider;

use std::rc::Rc;

use super::crawler::Registry;
use super::downloader::middleware::DownloaderMiddleware;
use super::spidermw::SpiderMiddleware;

pub use basics::{
    DefaultHeadersMiddleware, DownloadTimeoutMiddleware, DownloaderStats, OffsiteMiddleware,
    UserAgentMiddleware,
};
pub use spider::{DepthMiddleware, HttpError, HttpErrorMiddleware, UrlLengthMiddleware};

/// Registers every built-in middleware.
pub fn register(r: &mut Registry) {
    r.register_downloader_middleware("trawl.OffsiteMiddleware", |c| {
        Ok(Rc::new(OffsiteMiddleware::from_crawler(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.DownloadTimeoutMiddleware", |c| {
        Ok(Rc::new(DownloadTimeoutMiddleware::from_crawler(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.DefaultHeadersMiddleware", |c| {
        Ok(Rc::new(DefaultHeadersMiddleware::from_crawler(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.UserAgentMiddleware", |c| {
        Ok(Rc::new(UserAgentMiddleware::from_crawler(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.DownloaderStats", |c| {
        Ok(Rc::new(DownloaderStats::from_crawler(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_spider_middleware("trawl.HttpErrorMiddleware", |c| {
        Ok(Rc::new(HttpErrorMiddleware::from_crawler(c)?) as Rc<dyn SpiderMiddleware>)
    });
    r.register_spider_middleware("trawl.UrlLengthMiddleware", |c| {
        Ok(Rc::new(UrlLengthMiddleware::from_crawler(c)?) as Rc<dyn SpiderMiddleware>)
    });
    r.register_spider_middleware("trawl.DepthMiddleware", |c| {
        Ok(Rc::new(DepthMiddleware::from_crawler(c)?) as Rc<dyn SpiderMiddleware>)
    });
}
