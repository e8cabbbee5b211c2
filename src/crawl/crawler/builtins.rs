//! The built-in components, registered under their `trawl.` names (the names the
//! `*_BASE` settings use; Scrapy's dotted paths resolve to them).

use std::any::Any;
use std::rc::Rc;

use super::registry::Registry;
use crate::crawl::base::stats::{DummyStatsCollector, MemoryStatsCollector, StatsCollector};
use crate::crawl::core::downloader::handlers::{
    DataUriHandler, DownloadHandler, FileHandler, HttpHandler,
};
use crate::crawl::core::downloader::middleware::DownloaderMiddleware;
use crate::crawl::core::dupefilter::{BaseDupeFilter, BloomDupeFilter, DupeFilter, RfpDupeFilter};
use crate::crawl::core::pipeline::ItemPipeline;
use crate::crawl::core::scheduler::{DefaultScheduler, Scheduler};
use crate::crawl::core::spidermw::SpiderMiddleware;
use crate::crawl::downloadermiddlewares::cookies::CookiesMiddleware;
use crate::crawl::downloadermiddlewares::defaultheaders::DefaultHeadersMiddleware;
use crate::crawl::downloadermiddlewares::downloadtimeout::DownloadTimeoutMiddleware;
use crate::crawl::downloadermiddlewares::httpauth::HttpAuthMiddleware;
use crate::crawl::downloadermiddlewares::httpcache::HttpCacheMiddleware;
use crate::crawl::downloadermiddlewares::httpcompression::HttpCompressionMiddleware;
use crate::crawl::downloadermiddlewares::httpproxy::HttpProxyMiddleware;
use crate::crawl::downloadermiddlewares::offsite::OffsiteMiddleware;
use crate::crawl::downloadermiddlewares::redirect::{MetaRefreshMiddleware, RedirectMiddleware};
use crate::crawl::downloadermiddlewares::retry::RetryMiddleware;
use crate::crawl::downloadermiddlewares::robotstxt::RobotsTxtMiddleware;
use crate::crawl::downloadermiddlewares::stats::DownloaderStats;
use crate::crawl::downloadermiddlewares::useragent::UserAgentMiddleware;
use crate::crawl::extensions::closespider::CloseSpider;
use crate::crawl::extensions::corestats::CoreStats;
use crate::crawl::extensions::enginemonitor::EngineMonitor;
use crate::crawl::extensions::feedexport::FeedExporter;
use crate::crawl::extensions::logcount::LogCount;
use crate::crawl::extensions::logstats::LogStats;
use crate::crawl::extensions::memusage::MemoryUsage;
use crate::crawl::extensions::metrics::Metrics;
use crate::crawl::extensions::throttle::AutoThrottle;
use crate::crawl::pipelines::FilesPipeline;
use crate::crawl::spidermiddlewares::depth::DepthMiddleware;
use crate::crawl::spidermiddlewares::httperror::HttpErrorMiddleware;
use crate::crawl::spidermiddlewares::referer::RefererMiddleware;
use crate::crawl::spidermiddlewares::urllength::UrlLengthMiddleware;

impl Registry {
    /// A registry of the built-in components.
    pub fn with_builtins() -> Self {
        let mut r = Self::default();
        register_middlewares(&mut r);
        register_extensions(&mut r);
        register_core(&mut r);
        r.register_pipeline("trawl.FilesPipeline", |c| {
            Ok(FilesPipeline::from_context(c)? as Rc<dyn ItemPipeline>)
        });
        r.register_pipeline("trawl.ImagesPipeline", |c| {
            Ok(FilesPipeline::images(c)? as Rc<dyn ItemPipeline>)
        });
        r
    }
}

/// The built-in downloader and spider middlewares.
fn register_middlewares(r: &mut Registry) {
    r.register_downloader_middleware("trawl.OffsiteMiddleware", |c| {
        Ok(Rc::new(OffsiteMiddleware::from_context(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.RobotsTxtMiddleware", |c| {
        Ok(RobotsTxtMiddleware::from_context(c)? as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.HttpAuthMiddleware", |c| {
        Ok(Rc::new(HttpAuthMiddleware::from_context(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.RetryMiddleware", |c| {
        Ok(Rc::new(RetryMiddleware::from_context(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.MetaRefreshMiddleware", |c| {
        Ok(Rc::new(MetaRefreshMiddleware::from_context(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.HttpCompressionMiddleware", |c| {
        Ok(Rc::new(HttpCompressionMiddleware::from_context(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.RedirectMiddleware", |c| {
        Ok(Rc::new(RedirectMiddleware::from_context(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.CookiesMiddleware", |c| {
        Ok(Rc::new(CookiesMiddleware::from_context(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.HttpProxyMiddleware", |c| {
        Ok(Rc::new(HttpProxyMiddleware::from_context(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.HttpCacheMiddleware", |c| {
        Ok(Rc::new(HttpCacheMiddleware::from_context(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.DownloadTimeoutMiddleware", |c| {
        Ok(Rc::new(DownloadTimeoutMiddleware::from_context(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.DefaultHeadersMiddleware", |c| {
        Ok(Rc::new(DefaultHeadersMiddleware::from_context(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.UserAgentMiddleware", |c| {
        Ok(Rc::new(UserAgentMiddleware::from_context(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_downloader_middleware("trawl.DownloaderStats", |c| {
        Ok(Rc::new(DownloaderStats::from_context(c)?) as Rc<dyn DownloaderMiddleware>)
    });
    r.register_spider_middleware("trawl.HttpErrorMiddleware", |c| {
        Ok(Rc::new(HttpErrorMiddleware::from_context(c)?) as Rc<dyn SpiderMiddleware>)
    });
    r.register_spider_middleware("trawl.RefererMiddleware", |c| {
        Ok(Rc::new(RefererMiddleware::from_context(c)?) as Rc<dyn SpiderMiddleware>)
    });
    r.register_spider_middleware("trawl.UrlLengthMiddleware", |c| {
        Ok(Rc::new(UrlLengthMiddleware::from_context(c)?) as Rc<dyn SpiderMiddleware>)
    });
    r.register_spider_middleware("trawl.DepthMiddleware", |c| {
        Ok(Rc::new(DepthMiddleware::from_context(c)?) as Rc<dyn SpiderMiddleware>)
    });
}

/// The built-in extensions.
fn register_extensions(r: &mut Registry) {
    r.register_extension("trawl.CoreStats", |c| {
        Ok(CoreStats::install(c) as Rc<dyn Any>)
    });
    r.register_extension("trawl.LogStats", |c| {
        Ok(LogStats::install(c)? as Rc<dyn Any>)
    });
    r.register_extension("trawl.CloseSpider", |c| {
        Ok(CloseSpider::install(c)? as Rc<dyn Any>)
    });
    r.register_extension("trawl.EngineMonitor", |c| {
        Ok(EngineMonitor::install(c)? as Rc<dyn Any>)
    });
    r.register_extension("trawl.FeedExporter", |c| {
        Ok(FeedExporter::install(c)? as Rc<dyn Any>)
    });
    r.register_extension("trawl.AutoThrottle", |c| {
        Ok(AutoThrottle::install(c)? as Rc<dyn Any>)
    });
    r.register_extension(
        "trawl.LogCount",
        |c| Ok(LogCount::install(c) as Rc<dyn Any>),
    );
    r.register_extension("trawl.MemoryUsage", |c| {
        Ok(MemoryUsage::install(c)? as Rc<dyn Any>)
    });
    r.register_extension("trawl.Metrics", |c| Ok(Metrics::install(c)? as Rc<dyn Any>));
}

/// The built-in scheduler, dupefilters, stats collectors and download handlers.
fn register_core(r: &mut Registry) {
    r.register_scheduler("trawl.Scheduler", |c, ctx| {
        Ok(Box::new(DefaultScheduler::from_context(c, ctx)?) as Box<dyn Scheduler>)
    });
    r.register_dupefilter("trawl.RFPDupeFilter", |c| {
        Ok(Box::new(
            RfpDupeFilter::from_settings(&c.settings)?
                .with_fingerprinter(c.fingerprinter())
                .with_job(c.job().cloned()),
        ) as Box<dyn DupeFilter>)
    });
    r.register_dupefilter("trawl.BloomDupeFilter", |c| {
        Ok(Box::new(BloomDupeFilter::from_context(c)?) as Box<dyn DupeFilter>)
    });
    r.register_dupefilter("trawl.BaseDupeFilter", |_| {
        Ok(Box::new(BaseDupeFilter) as Box<dyn DupeFilter>)
    });
    r.register_stats("trawl.MemoryStatsCollector", |_| {
        Ok(Rc::new(MemoryStatsCollector::new()) as Rc<dyn StatsCollector>)
    });
    r.register_stats("trawl.DummyStatsCollector", |_| {
        Ok(Rc::new(DummyStatsCollector) as Rc<dyn StatsCollector>)
    });
    r.register_fingerprinter("trawl.RequestFingerprinter", |s| {
        // Scrapy's REQUEST_FINGERPRINTER settings have no include_headers knob: the
        // default is the plain fingerprint.
        let _ = s;
        Ok(
            Rc::new(crate::crawl::http::fingerprint::ScrapyRequestFingerprinter::default())
                as Rc<dyn crate::crawl::http::fingerprint::RequestFingerprinter>,
        )
    });
    r.register_log_formatter("trawl.LogFormatter", |_| {
        Ok(
            Rc::new(crate::crawl::base::logformatter::ScrapyLogFormatter)
                as Rc<dyn crate::crawl::base::logformatter::LogFormatter>,
        )
    });
    r.register_handler("trawl.HTTPDownloadHandler", |c| {
        Ok(Rc::new(HttpHandler::from_context(c)?) as Rc<dyn DownloadHandler>)
    });
    r.register_handler("trawl.DataURIDownloadHandler", |_| {
        Ok(Rc::new(DataUriHandler) as Rc<dyn DownloadHandler>)
    });
    r.register_handler("trawl.FileDownloadHandler", |_| {
        Ok(Rc::new(FileHandler) as Rc<dyn DownloadHandler>)
    });
}
