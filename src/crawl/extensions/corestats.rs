//! Scrapy's `CoreStats` extension (`scrapy.extensions.corestats`).

use std::cell::Cell;
use std::rc::Rc;

use crate::crawl::base::errors::DropItem;
use crate::crawl::base::signals::{Signal, SignalArgs};
use crate::crawl::context::CrawlContext;

use crate::crawl::util::datetime::wall_clock_iso;

/// Scrapy's `CoreStats`: start/finish time, elapsed seconds, finish reason, item and
/// response counts.
#[derive(Debug)]
pub struct CoreStats {
    start: Cell<f64>,
}

impl CoreStats {
    /// Builds the extension and connects it to the crawl's signals.
    pub fn install(ctx: &Rc<CrawlContext>) -> Rc<Self> {
        let me = Rc::new(Self {
            start: Cell::new(0.0),
        });
        let (c, m) = (Rc::downgrade(ctx), me.clone());
        ctx.signals.connect(Signal::SpiderOpened, move |_| {
            if let Some(c) = c.upgrade() {
                m.start.set(c.clock().seconds());
                c.stats.set_value("start_time", wall_clock_iso().into());
            }
            Ok(())
        });
        let (c, m) = (Rc::downgrade(ctx), me.clone());
        ctx.signals.connect(Signal::SpiderClosed, move |args| {
            if let (Some(c), SignalArgs::SpiderClosed { reason }) = (c.upgrade(), args) {
                let elapsed = c.clock().seconds() - m.start.get();
                c.stats.set_value("finish_time", wall_clock_iso().into());
                c.stats.set_value(
                    "elapsed_time_seconds",
                    ((elapsed * 1e6).round() / 1e6).into(),
                );
                c.stats.set_value("finish_reason", (*reason).into());
                if let Some(r) = c.reactor() {
                    // The worst stall of the reactor loop (work between two polls).
                    let ms = r.max_stall().as_secs_f64() * 1000.0;
                    c.stats
                        .set_value("reactor/max_stall_ms", ((ms * 10.0).round() / 10.0).into());
                }
            }
            Ok(())
        });
        let c = Rc::downgrade(ctx);
        ctx.signals.connect(Signal::ItemScraped, move |_| {
            if let Some(c) = c.upgrade() {
                c.stats.inc("item_scraped_count");
            }
            Ok(())
        });
        let c = Rc::downgrade(ctx);
        ctx.signals.connect(Signal::ResponseReceived, move |_| {
            if let Some(c) = c.upgrade() {
                c.stats.inc("response_received_count");
            }
            Ok(())
        });
        let c = Rc::downgrade(ctx);
        ctx.signals.connect(Signal::ItemDropped, move |args| {
            if let Some(c) = c.upgrade() {
                c.stats.inc("item_dropped_count");
                let kind = match args {
                    SignalArgs::Item {
                        failure: Some(f), ..
                    } if f.check::<DropItem>() => "DropItem".to_owned(),
                    SignalArgs::Item {
                        failure: Some(f), ..
                    } => f.short_type_name().to_owned(),
                    _ => "DropItem".to_owned(),
                };
                c.stats.inc(&format!("item_dropped_reasons_count/{kind}"));
            }
            Ok(())
        });
        me
    }
}
