//! The execution engine: Scrapy's `ExecutionEngine` (2.17), section by section as the
//! source article describes it.
//!
//! * **`_Slot`** ([`EngineSlot`]): `inprogress`, `close_if_idle`, `nextcall` (a
//!   [`CallLaterOnce`](crate::task::CallLaterOnce) around the scheduling loop), the scheduler, and a 5 s heartbeat
//!   [`LoopingCall`](crate::task::LoopingCall) that calls `nextcall.schedule` — the fuse for schedulers that report
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

mod chain;
mod close;
mod idle;
mod open;
mod ops;
mod slot;
mod start;

use std::cell::{Cell, RefCell};
use std::fmt;
use std::rc::{Rc, Weak};

use crate::crawl::base::slots::SlotActivity;
use crate::crawl::context::{CrawlContext, EngineOps};
use crate::crawl::core::downloader::Downloader;
use crate::crawl::core::scheduler::{Scheduler, Waker};
use crate::crawl::core::scraper::Scraper;
use crate::crawl::spiders::outputs::{OutputStack, Outputs};
use crate::crawl::spiders::spider::SpiderCell;
use crate::defer::{Deferred, Failure};

pub use slot::EngineSlot;

/// Seconds between heartbeat calls of `nextcall.schedule` (`_SLOT_HEARTBEAT_INTERVAL`).
pub const SLOT_HEARTBEAT_INTERVAL: f64 = 5.0;

struct State {
    slot: Option<Rc<EngineSlot>>,
    spider_open: bool,
    running: bool,
    starting: bool,
    stopping: bool,
    paused: bool,
    start_time: Option<f64>,
    start: Option<OutputStack>,
    /// `start()` yielded an [`Output::Later`](crate::crawl::Output::Later): the start
    /// loop waits for it (cancelled by the close).
    start_wait: Option<Deferred<Outputs>>,
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

/// Builds the scheduler when the spider opens (`SCHEDULER`, with the dupefilter
/// `DUPEFILTER_CLASS` names): the downloader's slot activity and the engine's waker
/// are the engine's part of its
/// [`SchedulerContext`](crate::crawl::core::scheduler::SchedulerContext).
pub type SchedulerBuilder =
    Box<dyn Fn(Rc<SlotActivity>, Waker) -> Result<Box<dyn Scheduler>, Failure>>;

/// What an engine is built from.
pub struct EngineParts {
    /// The crawl's context.
    pub ctx: Rc<CrawlContext>,
    /// The spider.
    pub spider: SpiderCell,
    /// The downloader.
    pub downloader: Rc<Downloader>,
    /// The scraper.
    pub scraper: Rc<Scraper>,
    /// Builds the scheduler in `open_spider`.
    pub scheduler: SchedulerBuilder,
}

impl fmt::Debug for EngineParts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineParts").finish_non_exhaustive()
    }
}

/// The execution engine.
pub struct ExecutionEngine {
    start_track: StartTrack,
    ctx: Weak<CrawlContext>,
    spider: SpiderCell,
    build_scheduler: SchedulerBuilder,
    downloader: Rc<Downloader>,
    scraper: Rc<Scraper>,
    state: RefCell<State>,
    start_loop_running: Cell<bool>,
    /// The crawl's `LOG_FORMATTER` (the `Crawled` line).
    log_formatter: Rc<dyn crate::crawl::base::logformatter::LogFormatter>,
    me: Weak<ExecutionEngine>,
}

impl ExecutionEngine {
    /// An engine over its parts; it registers itself as the context's engine. The
    /// scheduler is per spider: `parts.scheduler` builds it in `open_spider`.
    pub fn new(parts: EngineParts) -> Rc<Self> {
        let EngineParts {
            ctx,
            spider,
            downloader,
            scraper,
            scheduler,
        } = parts;
        let engine = Rc::new_cyclic(|me| Self {
            start_track: StartTrack::default(),
            ctx: Rc::downgrade(&ctx),
            spider,
            build_scheduler: scheduler,
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
                start_wait: None,
                start_error: false,
                closewait: None,
                next_id: 0,
            }),
            start_loop_running: Cell::new(false),
            log_formatter: ctx.log_formatter(),
            me: me.clone(),
        });
        let ops: Rc<dyn EngineOps> = engine.clone();
        ctx.engine_handle().set(Some(Rc::downgrade(&ops)));
        engine
    }

    /// The crawl's context, while the crawl lasts.
    fn ctx(&self) -> Option<Rc<CrawlContext>> {
        self.ctx.upgrade()
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

    fn next_id(&self) -> u64 {
        let mut st = self.state.borrow_mut();
        st.next_id += 1;
        st.next_id
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
