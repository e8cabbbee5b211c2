//! Scrapy's `CloseSpider` extension (`scrapy.extensions.closespider`).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::crawl::base::errors::NotConfigured;
use crate::crawl::base::signals::Signal;
use crate::crawl::context::CrawlContext;
use crate::defer::Failure;
use crate::reactor::DelayedCall;
use crate::task::LoopingCall;

/// Scrapy's `CloseSpider`: close after `CLOSESPIDER_TIMEOUT` seconds, or once
/// `CLOSESPIDER_ITEMCOUNT` items, `CLOSESPIDER_PAGECOUNT` responses or
/// `CLOSESPIDER_ERRORCOUNT` spider errors were seen; with
/// `CLOSESPIDER_PAGECOUNT_NO_ITEM`, once that many responses came in since the last item
/// (`closespider_pagecount_no_item`); with `CLOSESPIDER_TIMEOUT_NO_ITEM`, at the end of
/// a period of that many seconds without an item (`closespider_timeout_no_item`; fixed
/// periods, as in Scrapy).
#[derive(Debug)]
pub struct CloseSpider {
    timer: RefCell<Option<DelayedCall>>,
    no_item_task: RefCell<Option<LoopingCall>>,
}

impl CloseSpider {
    /// Builds the extension and connects it to the crawl's signals.
    pub fn install(ctx: &Rc<CrawlContext>) -> Result<Rc<Self>, Failure> {
        let s = &ctx.settings;
        let timeout = s.get_duration("CLOSESPIDER_TIMEOUT")?;
        let counts = [
            (
                Signal::ItemScraped,
                s.get_int("CLOSESPIDER_ITEMCOUNT")?,
                "closespider_itemcount",
            ),
            (
                Signal::ResponseReceived,
                s.get_int("CLOSESPIDER_PAGECOUNT")?,
                "closespider_pagecount",
            ),
            (
                Signal::SpiderError,
                s.get_int("CLOSESPIDER_ERRORCOUNT")?,
                "closespider_errorcount",
            ),
        ];
        let pages_no_item = s.get_int("CLOSESPIDER_PAGECOUNT_NO_ITEM")?;
        let timeout_no_item = s.get_duration("CLOSESPIDER_TIMEOUT_NO_ITEM")?;
        if timeout <= 0.0
            && timeout_no_item <= 0.0
            && pages_no_item <= 0
            && counts.iter().all(|(_, n, _)| *n <= 0)
        {
            return Err(Failure::new(NotConfigured("no CLOSESPIDER_* limit".into())));
        }
        let me = Rc::new(Self {
            timer: RefCell::new(None),
            no_item_task: RefCell::new(None),
        });
        if pages_no_item > 0 {
            let since_item = Rc::new(Cell::new(0i64));
            let (c, n) = (Rc::downgrade(ctx), since_item.clone());
            ctx.signals.connect(Signal::ResponseReceived, move |_| {
                n.set(n.get() + 1);
                if n.get() >= pages_no_item
                    && let Some(c) = c.upgrade()
                {
                    c.close_spider("closespider_pagecount_no_item");
                }
                Ok(())
            });
            ctx.signals.connect(Signal::ItemScraped, move |_| {
                since_item.set(0);
                Ok(())
            });
        }
        if timeout_no_item > 0.0 {
            let items_in_period = Rc::new(Cell::new(0u64));
            let n = items_in_period.clone();
            ctx.signals.connect(Signal::ItemScraped, move |_| {
                n.set(n.get() + 1);
                Ok(())
            });
            let (c, m) = (Rc::downgrade(ctx), me.clone());
            ctx.signals.connect(Signal::SpiderOpened, move |_| {
                let Some(ctx) = c.upgrade() else {
                    return Ok(());
                };
                log::info!(
                    "Spider will stop when no items are produced after {timeout_no_item} seconds."
                );
                let (weak, n) = (Rc::downgrade(&ctx), items_in_period.clone());
                let lc = LoopingCall::new(ctx.clock(), move || {
                    if n.get() >= 1 {
                        n.set(0);
                    } else if let Some(c) = weak.upgrade() {
                        log::info!(
                            "Closing spider since no items were produced in the last \
                             {timeout_no_item} seconds."
                        );
                        c.close_spider("closespider_timeout_no_item");
                    }
                    Ok(())
                });
                lc.start(timeout_no_item, false).map_err(Failure::new)?;
                *m.no_item_task.borrow_mut() = Some(lc);
                Ok(())
            });
        }
        for (signal, limit, reason) in counts {
            if limit <= 0 {
                continue;
            }
            let seen = Cell::new(0i64);
            let c = Rc::downgrade(ctx);
            ctx.signals.connect(signal, move |_| {
                seen.set(seen.get() + 1);
                if seen.get() == limit
                    && let Some(engine) = c.upgrade().and_then(|c| c.engine())
                {
                    let _ = engine.close_spider(reason);
                }
                Ok(())
            });
        }
        if timeout > 0.0 {
            let (c, m) = (Rc::downgrade(ctx), me.clone());
            ctx.signals.connect(Signal::SpiderOpened, move |_| {
                let Some(ctx) = c.upgrade() else {
                    return Ok(());
                };
                let weak = Rc::downgrade(&ctx);
                let call = ctx.clock().call_later(timeout, move || {
                    if let Some(engine) = weak.upgrade().and_then(|c| c.engine()) {
                        let _ = engine.close_spider("closespider_timeout");
                    }
                });
                *m.timer.borrow_mut() = Some(call);
                Ok(())
            });
        }
        let m = me.clone();
        ctx.signals.connect(Signal::SpiderClosed, move |_| {
            let timer = m.timer.borrow_mut().take();
            if let Some(t) = timer {
                let _ = t.cancel();
            }
            let task = m.no_item_task.borrow_mut().take();
            if let Some(lc) = task
                && lc.running()
            {
                let _ = lc.stop();
            }
            Ok(())
        });
        Ok(me)
    }
}
