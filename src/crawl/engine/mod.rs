//! The execution engine: Scrapy's `ExecutionEngine` (2.17), section by section as the
//! source article describes it.
//!
//! * **`_Slot`** ([`EngineSlot`]): `inprogress`, `close_if_idle`, `nextcall` (a
//!   [`CallLaterOnce`] around the scheduling loop), the scheduler, and a 5 s heartbeat
//!   [`LoopingCall`] that calls `nextcall.schedule` — the fuse for schedulers that report
//!   pending requests but return none. Closing is two-phase: set `closing`, check at once,
//!   re-check on every removal.
//! * **Two loops.** The start loop pulls *one* output from `spider.start()`, schedules
//!   a pass when there is room, and waits for the next pass before pulling again
//!   (backpressure). The scheduling loop (`start_scheduled_requests`, run by `nextcall`)
//!   drains the scheduler until `needs_backout()` or it returns none, then checks
//!   idleness.
//! * **The per-request chain**, error-isolated at every step:
//!   download → handle downloader output → log → remove from `inprogress` → log →
//!   `nextcall.schedule()` → log. The slot is captured before the chain, so closing the
//!   spider meanwhile is safe.
//! * **Three gates** (`needs_backout`): engine state, the downloader's
//!   `CONCURRENT_REQUESTS`, the scraper's `SCRAPER_SLOT_MAX_ACTIVE_SIZE`.
//! * **Idleness**: scraper idle, downloader idle, `start()` exhausted, scheduler empty;
//!   then `spider_idle`, where a handler can keep the spider open (`DontCloseSpider`) or
//!   close it with a reason (`CloseSpider`), and idleness is checked again after it.

mod close;
mod start;

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::{Rc, Weak};

use super::crawler::Crawler;
use super::downloader::Downloader;
use super::downloader::middleware::{DownloadFailure, DownloadOutput, Fetched};
use super::errors::{CloseSpider, DontCloseSpider, IgnoreRequest};
use super::request::Request;
use super::response::Response;
use super::scheduler::{Enqueued, NextRequest, Scheduler, SchedulerContext, Waker};
use super::scraper::Scraper;
use super::signals::{Signal, SignalArgs};
use super::spider::Outputs;
use crate::defer::{Deferred, Failure};
use crate::task::{CallLaterOnce, LoopingCall};

/// Seconds between heartbeat calls of `nextcall.schedule` (`_SLOT_HEARTBEAT_INTERVAL`).
pub const SLOT_HEARTBEAT_INTERVAL: f64 = 5.0;

/// The engine's per-spider runtime state (Scrapy's `_Slot`).
pub struct EngineSlot {
    closing: RefCell<Option<Deferred<()>>>,
    inprogress: RefCell<crate::util::FxHashSet<u64>>,
    close_if_idle: bool,
    nextcall: CallLaterOnce,
    /// Taken out while the engine calls it, so a re-entrant call finds it busy
    /// instead of a held borrow.
    scheduler: RefCell<Option<Box<dyn Scheduler>>>,
    /// Requests `crawl`ed while the scheduler was busy (a re-entrant call from the
    /// scheduler or its dupefilter): handed over when the outer call returns.
    backlog: RefCell<VecDeque<Request>>,
    /// Enqueue answers still to come (`Enqueued::Later`): the spider is not idle.
    enqueue_pending: Cell<usize>,
    /// Whether the scheduler wants `request_finished` (a JOBDIR, a shared queue).
    tracks_requests: Cell<bool>,
    heartbeat: LoopingCall,
}

impl EngineSlot {
    fn add_request(&self, id: u64) {
        self.inprogress.borrow_mut().insert(id);
    }

    fn remove_request(&self, id: u64) {
        self.inprogress.borrow_mut().remove(&id);
        self.maybe_fire_closing();
    }

    /// Phase one: mark closing; phase two: check at once (it may already be empty).
    fn close(&self) -> Deferred<()> {
        let d = Deferred::new();
        *self.closing.borrow_mut() = Some(d.clone());
        self.maybe_fire_closing();
        d
    }

    fn maybe_fire_closing(&self) {
        let closing = self.closing.borrow().clone();
        let Some(closing) = closing else { return };
        if !self.inprogress.borrow().is_empty() || closing.is_called() {
            return;
        }
        self.nextcall.cancel();
        if self.heartbeat.running() {
            let _ = self.heartbeat.stop();
        }
        let _ = closing.callback(());
    }

    /// Requests taken from the scheduler and not finished.
    pub fn inprogress(&self) -> usize {
        self.inprogress.borrow().len()
    }

    /// Whether the slot is closing.
    pub fn is_closing(&self) -> bool {
        self.closing.borrow().is_some()
    }

    /// Whether the scheduler reports pending requests (a busy scheduler, or requests
    /// waiting in the backlog, count as pending).
    pub fn scheduler_has_pending(&self) -> bool {
        if !self.backlog.borrow().is_empty() || self.enqueue_pending.get() > 0 {
            return true;
        }
        match self.scheduler.try_borrow() {
            Ok(s) => s.as_ref().is_none_or(|s| s.has_pending_requests()),
            Err(_) => true,
        }
    }

    /// Requests waiting in the scheduler.
    pub fn scheduler_len(&self) -> usize {
        self.backlog.borrow().len()
            + self
                .scheduler
                .try_borrow()
                .ok()
                .and_then(|s| s.as_ref().map(|s| s.len()))
                .unwrap_or(0)
    }

    /// Runs `f` on the scheduler with no borrow held; `None` when it is busy (this is
    /// a re-entrant call) or gone.
    fn with_scheduler<R>(&self, f: impl FnOnce(&mut dyn Scheduler) -> R) -> Option<R> {
        let taken = self.scheduler.try_borrow_mut().ok()?.take()?;
        /// Puts the scheduler back even if `f` panics.
        struct Restore<'a>(
            &'a RefCell<Option<Box<dyn Scheduler>>>,
            Option<Box<dyn Scheduler>>,
        );
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                if let (Ok(mut slot), Some(s)) = (self.0.try_borrow_mut(), self.1.take()) {
                    *slot = Some(s);
                }
            }
        }
        let mut guard = Restore(&self.scheduler, Some(taken));
        let scheduler = guard.1.as_deref_mut()?;
        let r = f(scheduler);
        drop(guard);
        Some(r)
    }

    /// The scheduling loop's coalescing switch.
    pub fn nextcall(&self) -> &CallLaterOnce {
        &self.nextcall
    }
}

impl fmt::Debug for EngineSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineSlot")
            .field("inprogress", &self.inprogress())
            .field("closing", &self.is_closing())
            .field("close_if_idle", &self.close_if_idle)
            .finish()
    }
}

struct State {
    slot: Option<Rc<EngineSlot>>,
    spider_open: bool,
    running: bool,
    starting: bool,
    stopping: bool,
    paused: bool,
    start_time: Option<f64>,
    start: Option<Outputs>,
    /// `start()` raised: the crawl finishes with reason `start_error` (Scrapy's
    /// `_start_error`).
    start_error: bool,
    closewait: Option<Deferred<()>>,
    next_id: u64,
}

/// Which outputs of `start()` are processed (for a JOBDIR resume).
#[derive(Default)]
struct StartTrack {
    /// The index of the next output.
    next: Cell<u64>,
    /// Items from `start()` still in the pipelines.
    outstanding: RefCell<std::collections::BTreeSet<u64>>,
}

/// The execution engine.
pub struct ExecutionEngine {
    start_track: StartTrack,
    crawler: Weak<Crawler>,
    downloader: Rc<Downloader>,
    scraper: Rc<Scraper>,
    state: RefCell<State>,
    start_loop_running: Cell<bool>,
    me: Weak<ExecutionEngine>,
}

impl ExecutionEngine {
    /// Builds the downloader and the scraper (once per engine). The scheduler is per
    /// spider: it is created in `open_spider`. If the scraper cannot be built, the
    /// downloader already built is closed.
    ///
    /// # Errors
    ///
    /// A component cannot be built.
    pub fn new(crawler: &Rc<Crawler>) -> Result<Rc<Self>, Failure> {
        let scheduler_name = crawler.settings.get_str("SCHEDULER")?.unwrap_or_default();
        if crawler.scheduler_factory(&scheduler_name).is_none() {
            return Err(Failure::msg(format!(
                "The provided scheduler class ({scheduler_name}) does not implement the scheduler interface (it is not registered)"
            )));
        }
        let downloader = Downloader::new(crawler)?;
        let scraper = match Scraper::new(crawler) {
            Ok(s) => s,
            Err(f) => {
                downloader.close();
                return Err(f);
            }
        };
        let engine = Rc::new_cyclic(|me| Self {
            start_track: StartTrack::default(),
            crawler: Rc::downgrade(crawler),
            downloader,
            scraper,
            state: RefCell::new(State {
                slot: None,
                spider_open: false,
                running: false,
                starting: false,
                stopping: false,
                paused: false,
                start_time: None,
                start: None,
                start_error: false,
                closewait: None,
                next_id: 0,
            }),
            start_loop_running: Cell::new(false),
            me: me.clone(),
        });
        let ops: Rc<dyn super::context::EngineOps> = engine.clone();
        crawler
            .context()
            .engine_handle()
            .set(Some(Rc::downgrade(&ops)));
        Ok(engine)
    }

    fn crawler(&self) -> Option<Rc<Crawler>> {
        self.crawler.upgrade()
    }

    /// The downloader.
    pub fn downloader(&self) -> &Rc<Downloader> {
        &self.downloader
    }

    /// The scraper.
    pub fn scraper(&self) -> &Rc<Scraper> {
        &self.scraper
    }

    /// The slot, while a spider is open.
    pub fn slot(&self) -> Option<Rc<EngineSlot>> {
        self.state.borrow().slot.clone()
    }

    /// Whether the engine is running.
    pub fn running(&self) -> bool {
        self.state.borrow().running
    }

    /// Whether the start iterator is still being consumed.
    pub fn start_pending(&self) -> bool {
        self.state.borrow().start.is_some()
    }

    /// Opens the spider: creates the scheduler and the slot, waits for the scheduler
    /// (and the stats collector) to open, opens the scraper, sends `spider_opened`.
    /// The Deferred fails when a spider is already open, or the scheduler or a
    /// pipeline cannot open.
    pub fn open_spider(&self, close_if_idle: bool) -> Deferred<()> {
        match self.open_spider_sync(close_if_idle) {
            Ok(opening) => {
                let me = self.me.clone();
                opening.then(move |r| {
                    let Some(e) = me.upgrade() else {
                        return crate::defer::Step::Done(Err(Failure::msg("the engine is gone")));
                    };
                    crate::defer::Step::Done(match r {
                        Ok(()) => e.finish_open(),
                        Err(f) => {
                            e.abandon_open();
                            Err(f)
                        }
                    })
                })
            }
            Err(f) => crate::defer::fail(f),
        }
    }

    fn open_spider_sync(&self, close_if_idle: bool) -> Result<Deferred<()>, Failure> {
        let crawler = self
            .crawler()
            .ok_or_else(|| Failure::msg("the crawler is gone"))?;
        if self.state.borrow().slot.is_some() {
            return Err(Failure::msg("No free spider slot when opening a spider"));
        }
        log::info!("Spider opened");
        let scheduler_name = crawler.settings.get_str("SCHEDULER")?.unwrap_or_default();
        let factory = crawler
            .scheduler_factory(&scheduler_name)
            .ok_or_else(|| Failure::msg(format!("unknown SCHEDULER {scheduler_name:?}")))?;
        let me = self.me.clone();
        let nextcall = CallLaterOnce::new(crawler.clock(), move || {
            if let Some(e) = me.upgrade() {
                e.start_scheduled_requests();
            }
        });
        let wake = {
            let nc = nextcall.clone();
            Waker::new(move || nc.schedule(0.0))
        };
        let dupefilter_of = crawler
            .rc()
            .ok_or_else(|| Failure::msg("the crawler is gone"))?;
        let scheduler = factory(
            crawler.context(),
            SchedulerContext {
                activity: self.downloader.activity(),
                wake,
                dupefilter: Rc::new(move || dupefilter_of.build_dupefilter()),
            },
        )?;
        let nc = nextcall.clone();
        let heartbeat = LoopingCall::new(crawler.clock(), move || {
            nc.schedule(0.0);
            Ok(())
        });
        let slot = Rc::new(EngineSlot {
            closing: RefCell::new(None),
            inprogress: RefCell::new(crate::util::FxHashSet::default()),
            close_if_idle,
            nextcall,
            scheduler: RefCell::new(Some(scheduler)),
            backlog: RefCell::new(VecDeque::new()),
            enqueue_pending: Cell::new(0),
            tracks_requests: Cell::new(false),
            heartbeat,
        });
        let start = {
            let spider = crawler.spider().clone();
            let mut s = spider
                .try_borrow_mut()
                .map_err(|_| Failure::msg("the spider is busy while opening"))?;
            s.opened();
            let start = catch_unwind(AssertUnwindSafe(|| s.start()))
                .map_err(|p| Failure::from_panic(p.as_ref()))?;
            let start = self.scraper.spidermw().process_start(start);
            // A resumed job skips the outputs of start() it already processed.
            let skip = crawler.job().map_or(0, |j| j.resumed_start_pos());
            if skip > 0 {
                log::info!("Resuming: skipping the first {skip} outputs of start()");
                self.start_track.next.set(skip);
                Box::new(start.skip(skip as usize)) as Outputs
            } else {
                start
            }
        };
        {
            let mut st = self.state.borrow_mut();
            st.slot = Some(slot.clone());
            st.start = Some(start);
        }
        slot.tracks_requests.set(
            slot.with_scheduler(|s| s.tracks_requests())
                .unwrap_or(false),
        );
        let scheduler_open = slot
            .with_scheduler(|s| s.open())
            .unwrap_or_else(|| crate::defer::fail(Failure::msg("the scheduler is busy")));
        let stats = crawler.stats.clone();
        Ok(scheduler_open.then(move |r| match r {
            Ok(()) => crate::defer::Step::Wait(stats.open()),
            Err(f) => crate::defer::Step::Done(Err(f)),
        }))
    }

    /// The scheduler could not open: forget the slot.
    fn abandon_open(&self) {
        let mut st = self.state.borrow_mut();
        st.slot = None;
        st.start = None;
    }

    fn finish_open(&self) -> Result<(), Failure> {
        let crawler = self
            .crawler()
            .ok_or_else(|| Failure::msg("the crawler is gone"))?;
        self.state.borrow_mut().spider_open = true;
        if let Some(job) = crawler.job() {
            job.start_timer(crawler.clock());
        }
        let me = self.me.clone();
        self.scraper.open_spider(Rc::new(move |request: Request| {
            if let Some(e) = me.upgrade() {
                e.crawl(request);
            }
        }))?;
        let me = self.me.clone();
        self.scraper
            .set_prefetch(Rc::new(move |requests: &[Request]| {
                if let Some(slot) = me.upgrade().and_then(|e| e.slot()) {
                    // A hint: skipped if the scheduler is busy (a re-entrant call).
                    let _ = slot.with_scheduler(|s| s.prefetch(requests));
                }
            }));
        let spider = crawler.spider().clone();
        crawler.signals.connect(Signal::SpiderClosed, move |args| {
            if let SignalArgs::SpiderClosed { reason } = args {
                match spider.try_borrow_mut() {
                    Ok(mut s) => s.closed(reason),
                    Err(_) => log::error!("the spider is busy: closed() not called"),
                }
            }
            Ok(())
        });
        let results = crawler
            .signals
            .send_catch_log(Signal::SpiderOpened, SignalArgs::None);
        // A handler may ask for the spider to be closed (Scrapy honours the request once
        // the spider is open).
        let close = results.iter().find_map(|r| match r {
            Err(f) => f.downcast_ref::<CloseSpider>().map(|c| c.reason.clone()),
            Ok(()) => None,
        });
        if let Some(reason) = close {
            let me = self.me.clone();
            crawler.clock().call_later(0.0, move || {
                if let Some(e) = me.upgrade() {
                    let reason = if reason.is_empty() {
                        "cancelled"
                    } else {
                        &reason
                    };
                    let _ = e.close_spider(reason);
                }
            });
        }
        Ok(())
    }

    /// Starts the engine; the Deferred fires when it stops (Scrapy's `start_async`
    /// returning).
    pub fn start(&self) -> Deferred<()> {
        let Some(crawler) = self.crawler() else {
            return crate::defer::fail(Failure::msg("the crawler is gone"));
        };
        {
            let mut st = self.state.borrow_mut();
            if st.starting {
                return crate::defer::fail(Failure::msg("Engine already running"));
            }
            st.start_time = Some(crawler.clock().seconds());
            st.starting = true;
        }
        crawler
            .signals
            .send_catch_log(Signal::EngineStarted, SignalArgs::None);
        let closewait = Deferred::new();
        {
            let mut st = self.state.borrow_mut();
            if st.stopping || !st.spider_open {
                let _ = closewait.callback(());
                return closewait;
            }
            st.running = true;
            st.closewait = Some(closewait.clone());
        }
        self.start_request_processing();
        closewait
    }

    fn start_request_processing(&self) {
        let Some(slot) = self.slot() else { return };
        slot.nextcall.schedule(0.0);
        if let Err(e) = slot.heartbeat.start(SLOT_HEARTBEAT_INTERVAL, true) {
            log::error!("heartbeat did not start: {e}");
        }
        self.start_loop_running.set(true);
        self.process_start_loop();
    }

    /// Loop B: drain the scheduler until backout or empty, then check idleness.
    pub fn start_scheduled_requests(&self) {
        let Some(slot) = self.slot() else { return };
        if slot.is_closing() || self.state.borrow().paused {
            return;
        }
        if let Some(why) = self
            .crawler()
            .and_then(|c| c.job().and_then(|j| j.failed()))
        {
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

    fn start_scheduled_request(&self, slot: &Rc<EngineSlot>) -> bool {
        let Some(next) = slot.with_scheduler(|s| s.next_request()) else {
            // Busy: this pass runs inside a scheduler call; the outer call's pass
            // (or the backlog drain) follows.
            return false;
        };
        self.drain_backlog(slot);
        let request = match next {
            NextRequest::Ready(r) => r,
            NextRequest::Empty => {
                if let Some(c) = self.crawler() {
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

    fn next_id(&self) -> u64 {
        let mut st = self.state.borrow_mut();
        st.next_id += 1;
        st.next_id
    }

    /// `_download`: add to `inprogress`, fetch, log `Crawled (200)`, send
    /// `response_received`; schedule a pass whatever happens.
    fn download_inner(
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
                && let Some(c) = e.crawler()
            {
                if log::log_enabled!(log::Level::Debug) {
                    let req = resp.request();
                    let referer = req.headers().get_str("referer").unwrap_or("None");
                    let flags = if resp.flags().is_empty() {
                        String::new()
                    } else {
                        format!(" {:?}", resp.flags())
                    };
                    log::debug!(
                        "Crawled ({}) {req} (referer: {referer}){flags}",
                        resp.status()
                    );
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
    fn handle_downloader_output(&self, result: Result<Fetched, Failure>) -> crate::defer::Step<()> {
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

    fn enqueue_scrape(&self, result: Result<Response, Failure>, request: Request) -> Deferred<()> {
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

    fn schedule_request(&self, slot: &Rc<EngineSlot>, request: Request) {
        let Some(crawler) = self.crawler() else {
            return;
        };
        let results = crawler.signals.send_catch_log(
            Signal::RequestScheduled,
            SignalArgs::Request { request: &request },
        );
        if results
            .iter()
            .any(|r| r.as_ref().is_err_and(|f| f.check::<IgnoreRequest>()))
        {
            return;
        }
        let copy = crawler
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
                    crawler.signals.send_catch_log(
                        Signal::RequestDropped,
                        SignalArgs::Request { request: &r },
                    );
                }
            }
            Enqueued::Later(d) => {
                let weak = Rc::downgrade(&crawler);
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
    fn drain_backlog(&self, slot: &Rc<EngineSlot>) {
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

    fn spider_idle(&self) {
        let Some(crawler) = self.crawler() else {
            return;
        };
        let results = crawler
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

    /// Pauses the scheduling loop.
    pub fn pause(&self) {
        self.state.borrow_mut().paused = true;
    }

    /// Resumes the scheduling loop.
    pub fn unpause(&self) {
        self.state.borrow_mut().paused = false;
        if let Some(slot) = self.slot() {
            slot.nextcall.schedule(0.0);
        }
    }

    /// A one-line state report (the engine monitor's line).
    pub fn status_line(&self) -> String {
        let slot = self.slot();
        let scraper = self.scraper.slot();
        format!(
            "[engine] inprogress={} | downloader.active={}/{} | scraper.active_size={}/{} | scheduler.pending={} | backout={} | idle={}",
            slot.as_ref().map_or(0, |s| s.inprogress()),
            self.downloader.active(),
            self.downloader.total_concurrency(),
            scraper.as_ref().map_or(0, |s| s.active_size()),
            scraper.as_ref().map_or(0, |s| s.max_active_size()),
            slot.as_ref().is_some_and(|s| s.scheduler_has_pending()),
            self.needs_backout(),
            self.spider_is_idle(),
        )
    }
}

impl fmt::Debug for ExecutionEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.status_line())
    }
}

impl super::context::EngineOps for ExecutionEngine {
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

    fn downloader(&self) -> Rc<Downloader> {
        self.downloader.clone()
    }

    fn status_line(&self) -> String {
        ExecutionEngine::status_line(self)
    }

    fn gauges(&self) -> super::context::EngineGauges {
        let slot = self.slot();
        let scraper = self.scraper.slot();
        super::context::EngineGauges {
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
