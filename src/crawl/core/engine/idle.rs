//! The scheduling loop (`nextcall`'s pass): drain the scheduler until a gate closes
//! (`needs_backout`) or it has nothing, then check idleness and send `spider_idle`.

use super::ExecutionEngine;

use crate::crawl::base::errors::{CloseSpider, DontCloseSpider};
use crate::crawl::base::signals::{Signal, SignalArgs};

impl ExecutionEngine {
    /// Loop B: drain the scheduler until backout or empty, then check idleness.
    pub fn start_scheduled_requests(&self) {
        let Some(slot) = self.slot() else { return };
        if slot.is_closing() || self.state.borrow().paused {
            return;
        }
        if let Some(why) = self.ctx().and_then(|c| c.job().and_then(|j| j.failed())) {
            log::error!("Closing the spider: the JOBDIR cannot be written ({why})");
            let _ = self.close_spider("jobdir_error");
            return;
        }
        while !self.needs_backout() {
            if !self.start_scheduled_request(&slot) {
                break;
            }
        }
        if slot.close_if_idle && self.spider_is_idle() {
            self.spider_idle();
        }
    }
    /// The three gates.
    pub fn needs_backout(&self) -> bool {
        let st = self.state.borrow();
        !st.running
            || st.slot.as_ref().is_none_or(|s| s.is_closing())
            || self.downloader.needs_backout()
            || self.scraper.needs_backout()
    }
    /// Scraper idle, downloader idle, `start()` done, scheduler empty.
    pub fn spider_is_idle(&self) -> bool {
        let Some(slot) = self.slot() else { return true };
        if !self.scraper.is_idle() {
            return false;
        }
        if self.downloader.active() > 0 {
            return false;
        }
        if self.state.borrow().start.is_some() {
            return false;
        }
        !slot.scheduler_has_pending()
    }
    pub(super) fn spider_idle(&self) {
        let Some(ctx) = self.ctx() else {
            return;
        };
        let results = ctx
            .signals
            .send_catch_log(Signal::SpiderIdle, SignalArgs::None);
        let mut close_reason = None;
        for r in &results {
            if let Err(f) = r {
                if f.check::<DontCloseSpider>() {
                    return;
                }
                if let Some(c) = f.downcast_ref::<CloseSpider>() {
                    close_reason = Some(c.reason.clone());
                }
            }
        }
        // Handlers may have scheduled requests: check again.
        if self.spider_is_idle() {
            let default = if self.state.borrow().start_error {
                "start_error"
            } else {
                "finished"
            };
            let _ = self.close_spider(close_reason.as_deref().unwrap_or(default));
        }
    }
}
