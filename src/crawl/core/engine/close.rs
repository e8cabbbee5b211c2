//! Closing: Scrapy's `close_spider` sequence — wait for the requests in progress, close
//! the downloader, the scraper, the scheduler (its Deferred), send `spider_closed`, dump
//! and close the stats (its Deferred: a collector that writes to Redis flushes first),
//! then stop the engine.

use super::ExecutionEngine;
use crate::crawl::base::signals::{Signal, SignalArgs};
use crate::defer::{Deferred, Failure};

impl ExecutionEngine {
    /// Closes the spider: waits for requests in progress, closes the downloader, the
    /// scraper and the scheduler, sends `spider_closed`, dumps the stats, then stops the
    /// engine.
    pub fn close_spider(&self, reason: &str) -> Deferred<()> {
        let Some(slot) = self.slot() else {
            return crate::defer::fail(Failure::msg("Engine slot not assigned"));
        };
        if let Some(closing) = slot.closing.borrow().clone() {
            let d = Deferred::new();
            closing.add_both({
                let d = d.clone();
                move |r| {
                    let _ = d.callback(());
                    r
                }
            });
            return d;
        }
        log::info!("Closing spider ({reason})");
        let closed = slot.close();
        // What callbacks and start() wait on is cancelled (the slot is closing now):
        // the close does not wait for it; the requests in progress still finish.
        self.cancel_start_wait();
        self.scraper.cancel_waiting(reason);
        let reason = reason.to_owned();
        let me = self.me.clone();
        closed.then(move |r| {
            if let Err(f) = r {
                log::error!("Slot close failure:\n{}", f.describe());
            }
            let Some(engine) = me.upgrade() else {
                return crate::defer::Step::Done(Ok(()));
            };
            engine.downloader.close();
            let me2 = engine.me.clone();
            let reason2 = reason.clone();
            crate::defer::Step::Wait(engine.scraper.close_spider().then(move |r| {
                if let Err(f) = r {
                    log::error!("Scraper close failure:\n{}", f.describe());
                }
                if let Some(engine) = me2.upgrade() {
                    engine.finish_close(&reason2);
                }
                Ok(())
            }))
        })
    }

    pub(super) fn finish_close(&self, reason: &str) {
        let closed = self
            .slot()
            .and_then(|slot| slot.with_scheduler(|s| s.close(reason)))
            .unwrap_or_else(|| crate::defer::succeed(()));
        let me = self.me.clone();
        let reason = reason.to_owned();
        closed.add_both(move |r| {
            if let Err(f) = r {
                log::error!("Scheduler close failure:\n{}", f.describe());
            }
            if let Some(e) = me.upgrade() {
                e.after_scheduler_closed(&reason);
            }
            Ok(())
        });
    }

    pub(super) fn after_scheduler_closed(&self, reason: &str) {
        let Some(ctx) = self.ctx() else {
            return;
        };
        if let Some(job) = ctx.job() {
            // The last commit and a durable point, before the feeds close.
            job.close();
        }
        ctx.signals
            .send_catch_log(Signal::SpiderClosed, SignalArgs::SpiderClosed { reason });
        // What the handlers started (a feed's upload) ends before the stats are dumped.
        let waits = ctx.take_close_waits();
        if waits.is_empty() {
            self.dump_and_close_stats(reason);
            return;
        }
        log::debug!("Waiting for {} spider_closed task(s)", waits.len());
        let me = self.me.clone();
        let reason = reason.to_owned();
        crate::defer::DeferredList::new(waits)
            .consume_errors(true)
            .deferred()
            .add_both(move |r| {
                if let Some(e) = me.upgrade() {
                    e.dump_and_close_stats(&reason);
                }
                r
            });
    }

    fn dump_and_close_stats(&self, reason: &str) {
        let Some(ctx) = self.ctx() else {
            return;
        };
        if ctx.settings.get_bool("STATS_DUMP").unwrap_or(true) {
            log::info!("Dumping trawl stats:\n{}", ctx.stats.format_dump());
        }
        // A collector that writes elsewhere (Redis) flushes before the engine stops.
        let me = self.me.clone();
        let reason_owned = reason.to_owned();
        ctx.stats.close(reason).add_both(move |r| {
            if let Err(f) = r {
                log::error!("Stats collector close failure:\n{}", f.describe());
            }
            if let Some(e) = me.upgrade() {
                e.after_stats_closed(&reason_owned);
            }
            Ok(())
        });
    }

    pub(super) fn after_stats_closed(&self, reason: &str) {
        log::info!("Spider closed ({reason})");
        {
            let mut st = self.state.borrow_mut();
            st.slot = None;
            st.spider_open = false;
            st.start = None;
        }
        // The crawler's spider-closed callback: stop the engine.
        if self.running() {
            self.stop();
        }
    }

    /// Stops the engine (Scrapy's `stop_async`): closes the spider with `shutdown` if it
    /// is open, sends `engine_stopped`, fires the Deferred from `start`.
    pub fn stop(&self) {
        let spider_open = {
            let mut st = self.state.borrow_mut();
            if !st.running {
                return;
            }
            st.running = false;
            st.stopping = true;
            st.spider_open && st.slot.is_some()
        };
        let me = self.me.clone();
        let finish = move || {
            if let Some(e) = me.upgrade() {
                if let Some(c) = e.ctx() {
                    c.signals
                        .send_catch_log(Signal::EngineStopped, SignalArgs::None);
                }
                let closewait = e.state.borrow_mut().closewait.take();
                if let Some(d) = closewait {
                    let _ = d.callback(());
                }
            }
        };
        if spider_open {
            self.close_spider("shutdown").add_both(move |r| {
                finish();
                r
            });
        } else {
            finish();
        }
    }
}
