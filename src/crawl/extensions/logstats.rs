//! Scrapy's `LogStats` extension (`scrapy.extensions.logstats`).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::crawl::base::errors::NotConfigured;
use crate::crawl::base::signals::Signal;
use crate::crawl::context::CrawlContext;
use crate::defer::Failure;
use crate::task::LoopingCall;

/// Scrapy's `LogStats`: every `LOGSTATS_INTERVAL` seconds, "Crawled N pages (at X
/// pages/min), scraped M items (at Y items/min)".
#[derive(Debug)]
pub struct LogStats {
    task: RefCell<Option<LoopingCall>>,
    opened_at: Cell<f64>,
}

impl LogStats {
    /// Builds the extension and connects it to the crawl's signals.
    pub fn install(ctx: &Rc<CrawlContext>) -> Result<Rc<Self>, Failure> {
        let interval = ctx.settings.get_duration("LOGSTATS_INTERVAL")?;
        if interval <= 0.0 {
            return Err(Failure::new(NotConfigured("LOGSTATS_INTERVAL is 0".into())));
        }
        let me = Rc::new(Self {
            task: RefCell::new(None),
            opened_at: Cell::new(0.0),
        });
        let (c, m) = (Rc::downgrade(ctx), me.clone());
        ctx.signals.connect(Signal::SpiderOpened, move |_| {
            let Some(ctx) = c.upgrade() else { return Ok(()) };
            m.opened_at.set(ctx.clock().seconds());
            let last = Rc::new(Cell::new((0i64, 0i64)));
            let weak = Rc::downgrade(&ctx);
            let lc = LoopingCall::new(ctx.clock(), move || {
                if let Some(c) = weak.upgrade() {
                    let pages = c.stats.get_int("response_received_count");
                    let items = c.stats.get_int("item_scraped_count");
                    let (p0, i0) = last.get();
                    let mult = 60.0 / interval;
                    log::info!(
                        "Crawled {pages} pages (at {} pages/min), scraped {items} items (at {} items/min)",
                        ((pages - p0) as f64 * mult) as i64,
                        ((items - i0) as f64 * mult) as i64
                    );
                    last.set((pages, items));
                }
                Ok(())
            });
            lc.start(interval, true).map_err(Failure::new)?;
            *m.task.borrow_mut() = Some(lc);
            Ok(())
        });
        let (c, m) = (Rc::downgrade(ctx), me.clone());
        ctx.signals.connect(Signal::SpiderClosed, move |_| {
            let task = m.task.borrow_mut().take();
            if let Some(lc) = task
                && lc.running()
            {
                let _ = lc.stop();
            }
            // Scrapy: counts over (finish - start) in whole seconds / 60; None under 1 s.
            if let Some(c) = c.upgrade() {
                let secs = (c.clock().seconds() - m.opened_at.get()).floor();
                let per_minute = |key: &str| -> serde_json::Value {
                    if secs >= 1.0 {
                        (c.stats.get_int(key) as f64 / (secs / 60.0)).into()
                    } else {
                        serde_json::Value::Null
                    }
                };
                let items = per_minute("item_scraped_count");
                let responses = per_minute("response_received_count");
                c.stats.set_value("items_per_minute", items);
                c.stats.set_value("responses_per_minute", responses);
            }
            Ok(())
        });
        Ok(me)
    }
}
