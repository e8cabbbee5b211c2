//! The engine operations components reach through the context ([`EngineOps`]).

use super::ExecutionEngine;
use crate::crawl::context::DownloaderControl;
use std::rc::Rc;

use crate::crawl::context::{EngineGauges, EngineOps};
use crate::crawl::http::request::Request;
use crate::crawl::http::response::Response;
use crate::defer::Deferred;

impl EngineOps for ExecutionEngine {
    fn crawl(&self, request: Request) {
        ExecutionEngine::crawl(self, request);
    }

    fn download(&self, request: Request) -> Deferred<Response> {
        ExecutionEngine::download(self, request)
    }

    fn close_spider(&self, reason: &str) -> Deferred<()> {
        ExecutionEngine::close_spider(self, reason)
    }

    fn pause(&self) {
        ExecutionEngine::pause(self);
    }

    fn unpause(&self) {
        ExecutionEngine::unpause(self);
    }

    fn schedule_pass(&self) {
        if let Some(slot) = self.slot() {
            slot.nextcall.schedule(0.0);
        }
    }

    fn downloader(&self) -> Rc<dyn DownloaderControl> {
        self.downloader.clone()
    }

    fn status_line(&self) -> String {
        ExecutionEngine::status_line(self)
    }

    fn gauges(&self) -> EngineGauges {
        let slot = self.slot();
        let scraper = self.scraper.slot();
        EngineGauges {
            inprogress: slot.as_ref().map_or(0, |s| s.inprogress()),
            downloader_active: self.downloader.active(),
            downloader_concurrency: self.downloader.total_concurrency(),
            scraper_active_size: scraper.as_ref().map_or(0, |s| s.active_size()),
            scraper_max_active_size: scraper.as_ref().map_or(0, |s| s.max_active_size()),
            scheduler_pending: slot.as_ref().is_some_and(|s| s.scheduler_has_pending()),
            needs_backout: self.needs_backout(),
            idle: self.spider_is_idle(),
        }
    }
}
