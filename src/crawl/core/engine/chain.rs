//! The per-request chain, error-isolated at every step: download → handle the
//! downloader's output → log → remove from `inprogress` → log → `nextcall.schedule()` →
//! log; and `crawl`, which hands a request to the scheduler (re-entrant calls wait in
//! the slot's backlog).

use super::ExecutionEngine;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

use super::slot::EngineSlot;
use crate::crawl::base::errors::IgnoreRequest;
use crate::crawl::base::signals::{Signal, SignalArgs};
use crate::crawl::core::downloader::middleware::{DownloadFailure, DownloadOutput, Fetched};
use crate::crawl::core::scheduler::{Enqueued, NextRequest};
use crate::crawl::http::request::Request;
use crate::crawl::http::response::Response;
use crate::defer::{Deferred, Failure};

impl ExecutionEngine {
    pub(super) fn start_scheduled_request(&self, slot: &Rc<EngineSlot>) -> bool {
        let Some(next) = slot.with_scheduler(|s| s.next_request()) else {
            // Busy: this pass runs inside a scheduler call; the outer call's pass
            // (or the backlog drain) follows.
            return false;
        };
        self.drain_backlog(slot);
        let request = match next {
            NextRequest::Ready(r) => r,
            NextRequest::Empty => {
                if let Some(c) = self.ctx() {
                    c.signals
                        .send_catch_log(Signal::SchedulerEmpty, SignalArgs::None);
                }
                return false;
            }
            NextRequest::Pending => return false,
        };
        let id = self.next_id();
        let finished = slot.tracks_requests.get().then(|| request.clone());
        let d = self.download_inner(request, id, slot);
        let me = self.me.clone();
        // No copy of the request is kept: a failure comes back with the request the
        // middlewares wrote to (a copy held here would make their first write copy
        // the request's meta and headers).
        let handled: Deferred<()> = d.then(move |result| match me.upgrade() {
            Some(engine) => engine.handle_downloader_output(result),
            None => crate::defer::Step::Done(Ok(())),
        });
        // The slot is captured now: closing the spider meanwhile is safe.
        let s1 = slot.clone();
        let s2 = slot.clone();
        // Scrapy's chain: errback (log), both (remove from the slot), errback (log),
        // both (next pass), errback (log). Each errback-then-both pair is one link
        // here — the same steps, and three links fit the Deferred's inline room where
        // five spilled to the heap for every request.
        handled
            .add_both(move |r| {
                if let Err(f) = r {
                    log::info!("Error while handling downloader output:\n{}", f.describe());
                }
                // The scheduler's hook is user code: the request leaves `inprogress`
                // whatever it does, and its failure goes to the next link's log.
                let hook = finished.as_ref().map(|r| {
                    catch_unwind(AssertUnwindSafe(|| {
                        s1.with_scheduler(|s| s.request_finished(r))
                    }))
                });
                s1.remove_request(id);
                match hook {
                    Some(Err(panic)) => Err(Failure::from_panic(panic.as_ref())),
                    _ => Ok(()),
                }
            })
            .add_both(move |r| {
                if let Err(f) = r {
                    log::info!("Error while removing request from slot:\n{}", f.describe());
                }
                s2.nextcall.schedule(0.0);
                Ok(())
            })
            .add_errback(|f| {
                log::info!("Error while scheduling new request:\n{}", f.describe());
                Ok(())
            });
        true
    }
    /// `_download`: add to `inprogress`, fetch, log `Crawled (200)`, send
    /// `response_received`; schedule a pass whatever happens.
    pub(super) fn download_inner(
        &self,
        request: Request,
        id: u64,
        slot: &Rc<EngineSlot>,
    ) -> Deferred<Fetched> {
        slot.add_request(id);
        let d = self.downloader.fetch(request);
        let me = self.me.clone();
        let s = slot.clone();
        d.add_both(move |r| {
            if let (Ok(Ok(DownloadOutput::Response(resp))), Some(e)) = (&r, me.upgrade())
                && let Some(c) = e.ctx()
            {
                if let Some(line) = e.log_formatter.crawled(resp.request(), resp) {
                    line.log(module_path!());
                }
                c.signals.send_catch_log(
                    Signal::ResponseReceived,
                    SignalArgs::Response {
                        response: resp,
                        request: resp.request(),
                    },
                );
            }
            s.nextcall.schedule(0.0);
            r
        });
        d
    }
    /// Routes what the downloader produced: a request goes back through `crawl` (and so
    /// the dupefilter), releasing its slot at once; a response or failure goes to the
    /// scraper.
    pub(super) fn handle_downloader_output(
        &self,
        result: Result<Fetched, Failure>,
    ) -> crate::defer::Step<()> {
        match result {
            Ok(Ok(DownloadOutput::Request(r))) => {
                self.crawl(r);
                crate::defer::Step::Done(Ok(()))
            }
            Ok(Ok(DownloadOutput::Response(resp))) => {
                let req = resp.request().clone();
                crate::defer::Step::Wait(self.enqueue_scrape(Ok(resp), req))
            }
            Ok(Err(DownloadFailure { failure, request })) => {
                crate::defer::Step::Wait(self.enqueue_scrape(Err(failure), request))
            }
            // Only a link of the engine's or the downloader's own chain can fail this
            // way (the middleware chain hands its failures back with the request):
            // the next link logs it.
            Err(f) => crate::defer::Step::Done(Err(f)),
        }
    }
    pub(super) fn enqueue_scrape(
        &self,
        result: Result<Response, Failure>,
        request: Request,
    ) -> Deferred<()> {
        let d = self.scraper.enqueue_scrape(result, request);
        d.add_errback(|f| {
            log::error!("Error while enqueuing scrape:\n{}", f.describe());
            Ok(())
        });
        d
    }
    /// Schedules a request (Scrapy's `engine.crawl`): `request_scheduled`, the
    /// scheduler (`request_dropped` if it refuses), then a scheduling pass.
    pub fn crawl(&self, request: Request) {
        let Some(slot) = self.slot() else {
            log::error!("Dropping {request}: no spider is open");
            return;
        };
        self.schedule_request(&slot, request);
        slot.nextcall.schedule(0.0);
    }
    pub(super) fn schedule_request(&self, slot: &Rc<EngineSlot>, request: Request) {
        let Some(ctx) = self.ctx() else {
            return;
        };
        let results = ctx.signals.send_catch_log(
            Signal::RequestScheduled,
            SignalArgs::Request { request: &request },
        );
        if results
            .iter()
            .any(|r| r.as_ref().is_err_and(|f| f.check::<IgnoreRequest>()))
        {
            return;
        }
        let copy = ctx
            .signals
            .has_receivers(Signal::RequestDropped)
            .then(|| request.clone());
        let mut request = Some(request);
        let answer = slot.with_scheduler(|s| {
            request
                .take()
                .map_or(Enqueued::Accepted, |r| s.enqueue_request(r))
        });
        let Some(answer) = answer else {
            // Re-entrant (the scheduler or its dupefilter called `crawl`): queue it
            // for when the outer call returns. Nothing is lost.
            if let Some(r) = request {
                slot.backlog.borrow_mut().push_back(r);
            }
            return;
        };
        match answer {
            Enqueued::Accepted => {}
            Enqueued::Dropped => {
                if let Some(r) = copy {
                    ctx.signals.send_catch_log(
                        Signal::RequestDropped,
                        SignalArgs::Request { request: &r },
                    );
                }
            }
            Enqueued::Later(d) => {
                let weak = Rc::downgrade(&ctx);
                let nextcall = slot.nextcall.clone();
                slot.enqueue_pending.set(slot.enqueue_pending.get() + 1);
                let s = slot.clone();
                d.add_both(move |r| {
                    s.enqueue_pending
                        .set(s.enqueue_pending.get().saturating_sub(1));
                    match r {
                        Ok(true) => {}
                        Ok(false) => {
                            if let (Some(c), Some(r)) = (weak.upgrade(), copy) {
                                c.signals.send_catch_log(
                                    Signal::RequestDropped,
                                    SignalArgs::Request { request: &r },
                                );
                            }
                        }
                        Err(f) => {
                            log::error!("Error while scheduling a request:\n{}", f.describe());
                            if let Some(c) = weak.upgrade() {
                                c.stats.inc("scheduler/enqueue_errors");
                            }
                        }
                    }
                    // Every completion path schedules the next pass.
                    nextcall.schedule(0.0);
                    Ok(false)
                });
            }
        }
        self.drain_backlog(slot);
    }
    /// Hands the requests `crawl`ed during a scheduler call to the scheduler.
    pub(super) fn drain_backlog(&self, slot: &Rc<EngineSlot>) {
        loop {
            let next = slot.backlog.borrow_mut().pop_front();
            let Some(r) = next else { break };
            if slot.scheduler.try_borrow().is_ok_and(|s| s.is_none()) {
                // Still busy (we are inside its call): the outer call drains.
                slot.backlog.borrow_mut().push_front(r);
                break;
            }
            self.schedule_request(slot, r);
        }
    }
    /// Downloads a request outside the scheduler (Scrapy's `engine.download`, used by
    /// middlewares such as robots.txt): follows redirects the middlewares return, keeps
    /// the request in `inprogress` meanwhile.
    pub fn download(&self, request: Request) -> Deferred<Response> {
        let Some(slot) = self.slot() else {
            return crate::defer::fail(Failure::msg("No open spider to crawl"));
        };
        let id = self.next_id();
        let d = self.download_inner(request, id, &slot);
        let me = self.me.clone();
        let s = slot.clone();
        let out: Deferred<Response> = d.then(move |r| match r {
            Ok(Ok(DownloadOutput::Response(resp))) => crate::defer::Step::Done(Ok(resp)),
            Ok(Ok(DownloadOutput::Request(next))) => match me.upgrade() {
                Some(e) => crate::defer::Step::Wait(e.download(next)),
                None => crate::defer::Step::Done(Err(Failure::msg("the engine is gone"))),
            },
            Ok(Err(DownloadFailure { failure, .. })) | Err(failure) => {
                crate::defer::Step::Done(Err(failure))
            }
        });
        out.add_both(move |r| {
            s.remove_request(id);
            r
        });
        out
    }
}
