//! The engine monitor: a periodic log line of the engine's in-flight figures and
//! backpressure gates.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use crate::crawl::base::errors::NotConfigured;
use crate::crawl::base::signals::Signal;
use crate::crawl::context::CrawlContext;
use crate::defer::Failure;
use crate::task::LoopingCall;

/// The source article's engine monitor, built in: every `ENGINE_MONITOR_INTERVAL`
/// seconds (0 = off) it logs `inprogress`, downloader active/limit, scraper
/// active_size/limit, scheduler pending, backout and idle.
#[derive(Debug)]
pub struct EngineMonitor {
    task: RefCell<Option<LoopingCall>>,
    reports: Cell<u64>,
}

impl EngineMonitor {
    /// Builds the extension and connects it to the crawl's signals.
    pub fn install(ctx: &Rc<CrawlContext>) -> Result<Rc<Self>, Failure> {
        let interval = ctx.settings.get_duration("ENGINE_MONITOR_INTERVAL")?;
        if interval <= 0.0 {
            return Err(Failure::new(NotConfigured(
                "ENGINE_MONITOR_INTERVAL is 0".into(),
            )));
        }
        let me = Rc::new(Self {
            task: RefCell::new(None),
            reports: Cell::new(0),
        });
        let (c, m) = (Rc::downgrade(ctx), Rc::downgrade(&me));
        ctx.signals.connect(Signal::SpiderOpened, move |_| {
            let Some(ctx) = c.upgrade() else {
                return Ok(());
            };
            let weak: Weak<CrawlContext> = Rc::downgrade(&ctx);
            let m2 = m.clone();
            let lc = LoopingCall::new(ctx.clock(), move || {
                if let Some(engine) = weak.upgrade().and_then(|c| c.engine()) {
                    log::info!("{}", engine.status_line());
                    if let Some(m) = m2.upgrade() {
                        m.reports.set(m.reports.get() + 1);
                    }
                }
                Ok(())
            });
            lc.start(interval, false).map_err(Failure::new)?;
            if let Some(m) = m.upgrade() {
                *m.task.borrow_mut() = Some(lc);
            }
            Ok(())
        });
        let m = me.clone();
        ctx.signals.connect(Signal::SpiderClosed, move |_| {
            if let Some(lc) = m.task.borrow_mut().take()
                && lc.running()
            {
                let _ = lc.stop();
            }
            Ok(())
        });
        Ok(me)
    }

    /// How many reports were logged.
    pub fn reports(&self) -> u64 {
        self.reports.get()
    }
}
