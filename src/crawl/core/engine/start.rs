//! The start loop: Scrapy 2.13's `_start_request_processing` — `start()` pulled one
//! output at a time between scheduling passes (none while the engine needs to back
//! out), its errors handled as Scrapy's `_process_start_next` does, and the job told
//! how far `start()` got (a JOBDIR resume skips what was processed). An
//! [`Output::Later`] from `start()` (Scrapy 2.13's `async def start()` awaiting) pauses
//! the loop until it fires; everything else goes on meanwhile.

use super::ExecutionEngine;
use crate::crawl::base::errors::CloseSpider;
use crate::crawl::base::signals::{Signal, SignalArgs};
use crate::crawl::http::request::keys;
use crate::crawl::spiders::outputs::{Later, Output, Outputs};
use crate::defer::{CancelledError, Failure};
use std::panic::{AssertUnwindSafe, catch_unwind};

impl ExecutionEngine {
    /// Loop A: one output from `start()`, then wait for a scheduling pass.
    pub(super) fn process_start_loop(&self) {
        let proceed = {
            let st = self.state.borrow();
            st.start.is_some() && st.start_wait.is_none() && st.spider_open && st.running
        };
        if !proceed {
            self.start_loop_running.set(false);
            return;
        }
        let Some(slot) = self.slot() else {
            self.start_loop_running.set(false);
            return;
        };
        if self.needs_backout() {
            // No room: wait for a scheduling pass (a download or a scrape finishing,
            // or the heartbeat) before pulling. Scrapy pulls on here, one output per
            // reactor turn, so a huge start() piles up in the scheduler; trawl stays
            // lazy.
            let me = self.me.clone();
            slot.nextcall.wait().add_callback(move |()| {
                if let Some(e) = me.upgrade() {
                    e.process_start_loop();
                }
                Ok(())
            });
            return;
        }
        self.process_start_next();
        if !self.needs_backout() {
            slot.nextcall.schedule(0.0);
        }
        let wait = slot.nextcall.wait();
        let me = self.me.clone();
        wait.add_callback(move |()| {
            if let Some(e) = me.upgrade() {
                e.process_start_loop();
            }
            Ok(())
        });
    }

    pub(super) fn process_start_next(&self) {
        let next = {
            let mut st = self.state.borrow_mut();
            let Some(mut start) = st.start.take() else {
                return;
            };
            drop(st);
            let item = catch_unwind(AssertUnwindSafe(|| start.next()))
                .unwrap_or_else(|panic| Some(Err(Failure::from_panic(panic.as_ref()))));
            match item {
                Some(Ok(output)) => {
                    self.state.borrow_mut().start = Some(start);
                    Some(output)
                }
                Some(Err(failure)) => {
                    drop(start);
                    self.start_failed(&failure);
                    None
                }
                None => None,
            }
        };
        let index = self.start_track.next.get();
        match next {
            Some(Output::Request(mut request)) => {
                self.start_track.next.set(index + 1);
                request
                    .meta_mut()
                    .insert_static(keys::IS_START_REQUEST, true);
                self.crawl(request);
                self.start_progress();
            }
            Some(Output::Later(later)) => self.start_wait_for(later),
            Some(Output::Item(item)) => {
                self.start_track.next.set(index + 1);
                self.start_track.outstanding.borrow_mut().insert(index);
                let me = self.me.clone();
                self.scraper.start_itemproc(item, None).add_both(move |r| {
                    if let Some(e) = me.upgrade() {
                        e.start_track.outstanding.borrow_mut().remove(&index);
                        e.start_progress();
                    }
                    r
                });
                if let Some(slot) = self.slot() {
                    slot.nextcall.schedule(0.0);
                }
            }
            None => {}
        }
    }

    /// Pauses the start loop until `later` fires: its outputs (through the spider
    /// middlewares' `process_start`) come before the rest of `start()`; a failure is
    /// `start()` raising; a cancellation by the close ends `start()` quietly.
    fn start_wait_for(&self, later: Later) {
        let d = later.0;
        self.state.borrow_mut().start_wait = Some(d.clone());
        let me = self.me.clone();
        let _ = d.then(move |r: Result<Outputs, Failure>| {
            let Some(e) = me.upgrade() else {
                return Ok(());
            };
            e.state.borrow_mut().start_wait = None;
            match r {
                Ok(outputs) => {
                    let outputs = e.scraper.spidermw().process_start(outputs);
                    if let Some(start) = e.state.borrow_mut().start.as_mut() {
                        start.push_front(outputs);
                    }
                }
                Err(f) => {
                    e.state.borrow_mut().start = None;
                    let closing = e.slot().is_none_or(|s| s.is_closing());
                    if !(f.check::<CancelledError>() && closing) {
                        e.start_failed(&f);
                    }
                }
            }
            // Resume the loop (it stopped while waiting) and let idleness be checked.
            if !e.start_loop_running.replace(true) {
                e.process_start_loop();
            }
            if let Some(slot) = e.slot() {
                slot.nextcall.schedule(0.0);
            }
            Ok(())
        });
    }

    /// Cancels a wait of `start()` (the spider is closing).
    pub(super) fn cancel_start_wait(&self) {
        let wait = self.state.borrow_mut().start_wait.take();
        if let Some(d) = wait {
            log::info!("Cancelling the Deferred start() is waiting on: the spider is closing");
            d.cancel();
        }
    }

    /// `start()` raised (Scrapy's `_process_start_next`): `CloseSpider` closes the spider
    /// with its reason; anything else is logged, sent as `spider_error`, counted, and
    /// makes `start_error` the finish reason.
    pub(super) fn start_failed(&self, failure: &Failure) {
        let Some(ctx) = self.ctx() else {
            return;
        };
        if let Some(close) = failure.downcast_ref::<CloseSpider>() {
            let reason = if close.reason.is_empty() {
                "cancelled"
            } else {
                close.reason.as_str()
            };
            let _ = self.close_spider(reason);
            return;
        }
        self.state.borrow_mut().start_error = true;
        log::error!(
            "Error while reading start items and requests: {}",
            failure.describe()
        );
        ctx.signals.send_catch_log(
            Signal::SpiderError,
            SignalArgs::SpiderError {
                failure,
                response: None,
                request: None,
            },
        );
        let kind = failure.short_type_name();
        ctx.stats.inc("spider_exceptions/count");
        ctx.stats.inc(&format!("spider_exceptions/{kind}"));
        if let Some(slot) = self.slot() {
            slot.nextcall.schedule(0.0);
        }
    }

    /// Tells the job how many outputs of `start()` are fully processed (a resume skips
    /// them): every output before the first item still in the pipelines.
    pub(super) fn start_progress(&self) {
        let Some(job) = self.ctx().and_then(|c| c.job().cloned()) else {
            return;
        };
        let done = self
            .start_track
            .outstanding
            .borrow()
            .iter()
            .next()
            .copied()
            .unwrap_or(self.start_track.next.get());
        job.set_start_pos(done);
    }
}
