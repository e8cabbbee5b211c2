//! Opening: the scheduler and the slot are made, `start()` is wrapped by the spider
//! middlewares, the scheduler and the stats collector open, then `spider_opened`; and
//! starting, which sets off both loops.

use super::ExecutionEngine;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

use super::SLOT_HEARTBEAT_INTERVAL;
use super::slot::EngineSlot;
use crate::crawl::base::errors::CloseSpider;
use crate::crawl::base::signals::{Signal, SignalArgs};
use crate::crawl::core::scheduler::Waker;
use crate::crawl::http::request::Request;
use crate::crawl::spiders::outputs::{OutputStack, Outputs};
use crate::defer::{Deferred, Failure};
use crate::task::{CallLaterOnce, LoopingCall};

impl ExecutionEngine {
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
    pub(super) fn open_spider_sync(&self, close_if_idle: bool) -> Result<Deferred<()>, Failure> {
        let ctx = self
            .ctx()
            .ok_or_else(|| Failure::msg("the crawl is gone"))?;
        if self.state.borrow().slot.is_some() {
            return Err(Failure::msg("No free spider slot when opening a spider"));
        }
        log::info!("Spider opened");
        let me = self.me.clone();
        let nextcall = CallLaterOnce::new(ctx.clock(), move || {
            if let Some(e) = me.upgrade() {
                e.start_scheduled_requests();
            }
        });
        let wake = {
            let nc = nextcall.clone();
            Waker::new(move || nc.schedule(0.0))
        };
        let scheduler = (self.build_scheduler)(self.downloader.activity(), wake)?;
        let nc = nextcall.clone();
        let heartbeat = LoopingCall::new(ctx.clock(), move || {
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
            let spider = self.spider.clone();
            let mut s = spider
                .try_borrow_mut()
                .map_err(|_| Failure::msg("the spider is busy while opening"))?;
            s.opened();
            let start = catch_unwind(AssertUnwindSafe(|| s.start()))
                .map_err(|p| Failure::from_panic(p.as_ref()))?;
            let start = self.scraper.spidermw().process_start(start);
            // A resumed job skips the outputs of start() it already processed.
            let skip = ctx.job().map_or(0, |j| j.resumed_start_pos());
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
            st.start = Some(OutputStack::new(start));
        }
        slot.tracks_requests.set(
            slot.with_scheduler(|s| s.tracks_requests())
                .unwrap_or(false),
        );
        let scheduler_open = slot
            .with_scheduler(|s| s.open())
            .unwrap_or_else(|| crate::defer::fail(Failure::msg("the scheduler is busy")));
        let stats = ctx.stats.clone();
        Ok(scheduler_open.then(move |r| match r {
            Ok(()) => crate::defer::Step::Wait(stats.open()),
            Err(f) => crate::defer::Step::Done(Err(f)),
        }))
    }
    /// The scheduler could not open: forget the slot.
    pub(super) fn abandon_open(&self) {
        let mut st = self.state.borrow_mut();
        st.slot = None;
        st.start = None;
    }
    pub(super) fn finish_open(&self) -> Result<(), Failure> {
        let ctx = self
            .ctx()
            .ok_or_else(|| Failure::msg("the crawl is gone"))?;
        self.state.borrow_mut().spider_open = true;
        if let Some(job) = ctx.job() {
            job.start_timer(ctx.clock());
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
        let spider = self.spider.clone();
        ctx.signals.connect(Signal::SpiderClosed, move |args| {
            if let SignalArgs::SpiderClosed { reason } = args {
                match spider.try_borrow_mut() {
                    Ok(mut s) => s.closed(reason),
                    Err(_) => log::error!("the spider is busy: closed() not called"),
                }
            }
            Ok(())
        });
        let results = ctx
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
            ctx.clock().call_later(0.0, move || {
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
        let Some(ctx) = self.ctx() else {
            return crate::defer::fail(Failure::msg("the crawl is gone"));
        };
        {
            let mut st = self.state.borrow_mut();
            if st.starting {
                return crate::defer::fail(Failure::msg("Engine already running"));
            }
            st.start_time = Some(ctx.clock().seconds());
            st.starting = true;
        }
        ctx.signals
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
    pub(super) fn start_request_processing(&self) {
        let Some(slot) = self.slot() else { return };
        slot.nextcall.schedule(0.0);
        if let Err(e) = slot.heartbeat.start(SLOT_HEARTBEAT_INTERVAL, true) {
            log::error!("heartbeat did not start: {e}");
        }
        self.start_loop_running.set(true);
        self.process_start_loop();
    }
}
