//! Built-in downloader and spider middlewares, with Scrapy's setting names, meta keys
//! and stats keys, registered under `trawl.<Name>` (Scrapy's dotted paths are accepted
//! too).

mod auth_proxy;
mod basics;
mod compression;
mod cookies;
mod httpcache;
mod redirect;
mod referer;
mod retry;
mod robotstxt;
mod spider;

use std::rc::Rc;

use super::crawler::Registry;
use super::downloader::middleware::DownloaderMiddleware;
use super::spidermw::SpiderMiddleware;

pub use auth_proxy::{AuthDomain, HttpAuthMiddleware, HttpProxyMiddleware, host_in_domain};
pub use basics::{
    DefaultHeadersMiddleware, DownloadTimeoutMiddleware, DownloaderStats, OffsiteMiddleware,
    UserAgentMiddleware,
};
pub use compression::{ACCEPTED_ENCODINGS, HttpCompressionMiddleware};
pub use cookies::{CookieJar, CookiesMiddleware, is_public_suffix};
pub use httpcache::{
    CachePolicy, DummyPolicy, FilesystemCacheStorage, HttpCacheMiddleware, Rfc2616Policy, data_path,
};
pub use redirect::{
    MetaRefreshMiddleware, RedirectMiddleware, build_redirect_request, get_meta_refresh,
    redirect_target,
};
pub use referer::{RefererMiddleware, ReferrerPolicy, fix_redirect_referer};
pub use retry::{
    DEFAULT_RETRY_EXCEPTIONS, RetryMiddleware, RetryOptions, failure_reason, get_retry_request,
    short_type_name,
};
pub use robotstxt::{ROBOTS_PRIORITY, RobotsTxtMiddleware};
pub use spider::{DepthMiddleware, HttpError, HttpErrorMiddleware, UrlLengthMiddleware};

/// Registers every built-in middleware.
pub fn register(r: &mut Registry) {
    r.register_downloader_middleware("trawl.OffsiteMiddleware", |c| {
        Ok(Rc::new(OffsiteMiddleware::from_crawler(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.RobotsTxtMiddleware", |c| {
        Ok(RobotsTxtMiddleware::from_crawler(c)? as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.HttpAuthMiddleware", |c| {
        Ok(Rc::new(HttpAuthMiddleware::from_crawler(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.RetryMiddleware", |c| {
        Ok(Rc::new(RetryMiddleware::from_crawler(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.MetaRefreshMiddleware", |c| {
        Ok(Rc::new(MetaRefreshMiddleware::from_crawler(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.HttpCompressionMiddleware", |c| {
        Ok(Rc::new(HttpCompressionMiddleware::from_crawler(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.RedirectMiddleware", |c| {
        Ok(Rc::new(RedirectMiddleware::from_crawler(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.CookiesMiddleware", |c| {
        Ok(Rc::new(CookiesMiddleware::from_crawler(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.HttpProxyMiddleware", |c| {
        Ok(Rc::new(HttpProxyMiddleware::from_crawler(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.HttpCacheMiddleware", |c| {
        Ok(Rc::new(HttpCacheMiddleware::from_crawler(c)?) as Rc<dyn DownloaderMiddleware>)
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
    r.register_spider_middleware("trawl.RefererMiddleware", |c| {
        Ok(Rc::new(RefererMiddleware::from_crawler(c)?) as Rc<dyn SpiderMiddleware>)
    });
    r.register_spider_middleware("trawl.UrlLengthMiddleware", |c| {
        Ok(Rc::new(UrlLengthMiddleware::from_crawler(c)?) as Rc<dyn SpiderMiddleware>)
    });
    r.register_spider_middleware("trawl.DepthMiddleware", |c| {
        Ok(Rc::new(DepthMiddleware::from_crawler(c)?) as Rc<dyn SpiderMiddleware>)
    });
}
