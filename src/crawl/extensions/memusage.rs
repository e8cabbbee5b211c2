//! Scrapy's `MemoryUsage` extension: the process's peak resident set size in
//! `memusage/startup` and `memusage/max`, a warning once past `MEMUSAGE_WARNING_MB`
//! (`memusage/warning_reached`), and the spider closed with `memusage_exceeded` past
//! `MEMUSAGE_LIMIT_MB` (`memusage/limit_reached`), checked every
//! `MEMUSAGE_CHECK_INTERVAL_SECONDS`. Like Scrapy's `ru_maxrss`, the figure is the peak
//! (Linux `VmHWM`), not the current size. Mail notification is not offered.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::crawl::base::errors::NotConfigured;
use crate::crawl::base::signals::Signal;
use crate::crawl::context::CrawlContext;
use crate::defer::Failure;
use crate::task::LoopingCall;

/// Where the extension reads the process's memory (bytes); `None` if unavailable.
pub type MemoryProbe = Rc<dyn Fn() -> Option<u64>>;

const MIB: u64 = 1024 * 1024;

/// Scrapy's `MemoryUsage` (see the module documentation).
pub struct MemoryUsage {
    probe: MemoryProbe,
    limit: u64,
    warning: u64,
    warned: Cell<bool>,
    task: RefCell<Option<LoopingCall>>,
}

impl std::fmt::Debug for MemoryUsage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryUsage")
            .field("limit", &self.limit)
            .field("warning", &self.warning)
            .finish()
    }
}

impl MemoryUsage {
    /// The extension reading the process's peak RSS.
    ///
    /// # Errors
    ///
    /// [`NotConfigured`] when `MEMUSAGE_ENABLED` is off or the platform has no peak RSS;
    /// invalid settings.
    pub fn install(ctx: &Rc<CrawlContext>) -> Result<Rc<Self>, Failure> {
        if crate::util::peak_rss().is_none() {
            return Err(Failure::new(NotConfigured(
                "MemoryUsage: no peak RSS on this platform".into(),
            )));
        }
        Self::with_probe(ctx, Rc::new(crate::util::peak_rss))
    }

    /// The extension reading memory through `probe` (for tests and other platforms).
    ///
    /// # Errors
    ///
    /// [`NotConfigured`] when `MEMUSAGE_ENABLED` is off; invalid settings.
    pub fn with_probe(ctx: &Rc<CrawlContext>, probe: MemoryProbe) -> Result<Rc<Self>, Failure> {
        let s = &ctx.settings;
        if !s.get_bool("MEMUSAGE_ENABLED")? {
            return Err(Failure::new(NotConfigured(
                "MEMUSAGE_ENABLED is off".into(),
            )));
        }
        let mb = |name: &str| -> Result<u64, Failure> {
            Ok(u64::try_from(s.get_int(name)?.max(0)).unwrap_or(0) * MIB)
        };
        let interval = s.get_duration("MEMUSAGE_CHECK_INTERVAL_SECONDS")?;
        let me = Rc::new(Self {
            probe,
            limit: mb("MEMUSAGE_LIMIT_MB")?,
            warning: mb("MEMUSAGE_WARNING_MB")?,
            warned: Cell::new(false),
            task: RefCell::new(None),
        });
        let (c, m) = (Rc::downgrade(ctx), me.clone());
        ctx.signals.connect(Signal::SpiderOpened, move |_| {
            let Some(ctx) = c.upgrade() else {
                return Ok(());
            };
            if let Some(size) = (m.probe)() {
                ctx.stats.set_value("memusage/startup", size.into());
            }
            if interval <= 0.0 {
                return m.check(&ctx);
            }
            let (weak, ext) = (Rc::downgrade(&ctx), m.clone());
            let lc = LoopingCall::new(ctx.clock(), move || match weak.upgrade() {
                Some(c) => ext.check(&c),
                None => Ok(()),
            });
            lc.start(interval, true).map_err(Failure::new)?;
            *m.task.borrow_mut() = Some(lc);
            Ok(())
        });
        let m = me.clone();
        ctx.signals.connect(Signal::SpiderClosed, move |_| {
            let task = m.task.borrow_mut().take();
            if let Some(lc) = task
                && lc.running()
            {
                let _ = lc.stop();
            }
            Ok(())
        });
        Ok(me)
    }

    /// One check: `memusage/max`, then the limit, then the warning.
    fn check(&self, ctx: &Rc<CrawlContext>) -> Result<(), Failure> {
        let Some(size) = (self.probe)() else {
            return Ok(());
        };
        ctx.stats
            .max_value("memusage/max", i64::try_from(size).unwrap_or(i64::MAX));
        if self.limit > 0 {
            if size > self.limit {
                ctx.stats.set_value("memusage/limit_reached", 1.into());
                log::error!(
                    "Memory usage exceeded {}MiB. Shutting down trawl...",
                    self.limit / MIB
                );
                ctx.close_spider("memusage_exceeded");
            } else {
                log::info!("Peak memory usage is {}MiB", size / MIB);
            }
        }
        if self.warning > 0 && !self.warned.get() && size > self.warning {
            self.warned.set(true);
            ctx.stats.set_value("memusage/warning_reached", 1.into());
            log::warn!("Memory usage reached {}MiB", self.warning / MIB);
        }
        Ok(())
    }
}
