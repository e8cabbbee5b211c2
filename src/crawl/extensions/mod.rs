//! Built-in extensions: CoreStats, LogStats, CloseSpider, the engine monitor, the
//! feed exporter, AutoThrottle, MemoryUsage and the metrics endpoint. An extension is built with the crawler, connects to signals and lives
//! as long as the crawl.

mod feeds;
mod memusage;
mod metrics;
mod throttle;

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use super::context::CrawlContext;
use super::crawler::Registry;
use super::errors::{DropItem, NotConfigured};
use super::signals::{Signal, SignalArgs};
use crate::defer::Failure;
use crate::reactor::DelayedCall;
use crate::task::LoopingCall;

pub use feeds::{FeedExporter, FeedFormat};
pub use memusage::{MemoryProbe, MemoryUsage};
pub use metrics::Metrics;
pub use throttle::AutoThrottle;

/// Registers every built-in extension.
pub fn register(r: &mut Registry) {
    r.register_extension("trawl.CoreStats", |c| {
        Ok(CoreStats::install(c) as Rc<dyn Any>)
    });
    r.register_extension("trawl.LogStats", |c| {
        Ok(LogStats::install(c)? as Rc<dyn Any>)
    });
    r.register_extension("trawl.CloseSpider", |c| {
        Ok(CloseSpider::install(c)? as Rc<dyn Any>)
    });
    r.register_extension("trawl.EngineMonitor", |c| {
        Ok(EngineMonitor::install(c)? as Rc<dyn Any>)
    });
    r.register_extension("trawl.FeedExporter", |c| {
        Ok(FeedExporter::install(c)? as Rc<dyn Any>)
    });
    r.register_extension("trawl.AutoThrottle", |c| {
        Ok(AutoThrottle::install(c)? as Rc<dyn Any>)
    });
    r.register_extension(
        "trawl.LogCount",
        |c| Ok(LogCount::install(c) as Rc<dyn Any>),
    );
    r.register_extension("trawl.MemoryUsage", |c| {
        Ok(MemoryUsage::install(c)? as Rc<dyn Any>)
    });
    r.register_extension("trawl.Metrics", |c| Ok(Metrics::install(c)? as Rc<dyn Any>));
}

/// Scrapy's `LogCount`: `log_count/<LEVEL>` for the records logged (at or above the log
/// level) while the spider is open. The records are counted by a
/// [`CountingLogger`](crate::crawl::logging::CountingLogger) (the `trawl` command's
/// logger is one); the stats are brought up to date on `spider_closed`, before the final
/// dump.
#[derive(Debug)]
pub struct LogCount {
    at_open: Cell<[(log::Level, u64); 5]>,
}

impl LogCount {
    fn install(crawler: &Rc<CrawlContext>) -> Rc<Self> {
        let me = Rc::new(Self {
            at_open: Cell::new(crate::crawl::logging::record_counts()),
        });
        let m = me.clone();
        crawler.signals.connect(Signal::SpiderOpened, move |_| {
            m.at_open.set(crate::crawl::logging::record_counts());
            Ok(())
        });
        let (c, m) = (Rc::downgrade(crawler), me.clone());
        crawler.signals.connect(Signal::SpiderClosed, move |_| {
            if let Some(c) = c.upgrade() {
                let before = m.at_open.get();
                for (i, (level, now)) in crate::crawl::logging::record_counts()
                    .into_iter()
                    .enumerate()
                {
                    let n = now.saturating_sub(before[i].1);
                    if n > 0 {
                        let key = format!("log_count/{}", crate::crawl::logging::level_name(level));
                        c.stats
                            .inc_value(&key, i64::try_from(n).unwrap_or(i64::MAX));
                    }
                }
            }
            Ok(())
        });
        me
    }
}

fn wall_clock_iso() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    format_utc(now)
}

/// `YYYY-MM-DD HH:MM:SS.ffffff` (UTC) for a Unix time.
pub fn format_utc(unix: f64) -> String {
    let secs = unix.floor() as i64;
    let micros = ((unix - unix.floor()) * 1e6) as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil-from-days (Howard Hinnant).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{micros:06}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Scrapy's `CoreStats`: start/finish time, elapsed seconds, finish reason, item and
/// response counts.
#[derive(Debug)]
pub struct CoreStats {
    start: Cell<f64>,
}

impl CoreStats {
    fn install(crawler: &Rc<CrawlContext>) -> Rc<Self> {
        let me = Rc::new(Self {
            start: Cell::new(0.0),
        });
        let (c, m) = (Rc::downgrade(crawler), me.clone());
        crawler.signals.connect(Signal::SpiderOpened, move |_| {
            if let Some(c) = c.upgrade() {
                m.start.set(c.clock().seconds());
                c.stats.set_value("start_time", wall_clock_iso().into());
            }
            Ok(())
        });
        let (c, m) = (Rc::downgrade(crawler), me.clone());
        crawler.signals.connect(Signal::SpiderClosed, move |args| {
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
        let c = Rc::downgrade(crawler);
        crawler.signals.connect(Signal::ItemScraped, move |_| {
            if let Some(c) = c.upgrade() {
                c.stats.inc("item_scraped_count");
            }
            Ok(())
        });
        let c = Rc::downgrade(crawler);
        crawler.signals.connect(Signal::ResponseReceived, move |_| {
            if let Some(c) = c.upgrade() {
                c.stats.inc("response_received_count");
            }
            Ok(())
        });
        let c = Rc::downgrade(crawler);
        crawler.signals.connect(Signal::ItemDropped, move |args| {
            if let Some(c) = c.upgrade() {
                c.stats.inc("item_dropped_count");
                let kind = match args {
                    SignalArgs::Item {
                        failure: Some(f), ..
                    } if f.check::<DropItem>() => "DropItem".to_owned(),
                    SignalArgs::Item {
                        failure: Some(f), ..
                    } => f.type_name().rsplit("::").next().unwrap_or("").to_owned(),
                    _ => "DropItem".to_owned(),
                };
                c.stats.inc(&format!("item_dropped_reasons_count/{kind}"));
            }
            Ok(())
        });
        me
    }
}

/// Scrapy's `LogStats`: every `LOGSTATS_INTERVAL` seconds, "Crawled N pages (at X
/// pages/min), scraped M items (at Y items/min)".
#[derive(Debug)]
pub struct LogStats {
    task: RefCell<Option<LoopingCall>>,
    opened_at: Cell<f64>,
}

impl LogStats {
    fn install(crawler: &Rc<CrawlContext>) -> Result<Rc<Self>, Failure> {
        let interval = crawler.settings.get_duration("LOGSTATS_INTERVAL")?;
        if interval <= 0.0 {
            return Err(Failure::new(NotConfigured("LOGSTATS_INTERVAL is 0".into())));
        }
        let me = Rc::new(Self {
            task: RefCell::new(None),
            opened_at: Cell::new(0.0),
        });
        let (c, m) = (Rc::downgrade(crawler), me.clone());
        crawler.signals.connect(Signal::SpiderOpened, move |_| {
            let Some(crawler) = c.upgrade() else { return Ok(()) };
            m.opened_at.set(crawler.clock().seconds());
            let last = Rc::new(Cell::new((0i64, 0i64)));
            let weak = Rc::downgrade(&crawler);
            let lc = LoopingCall::new(crawler.clock(), move || {
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
        let (c, m) = (Rc::downgrade(crawler), me.clone());
        crawler.signals.connect(Signal::SpiderClosed, move |_| {
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
    fn install(crawler: &Rc<CrawlContext>) -> Result<Rc<Self>, Failure> {
        let s = &crawler.settings;
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
            let (c, n) = (Rc::downgrade(crawler), since_item.clone());
            crawler.signals.connect(Signal::ResponseReceived, move |_| {
                n.set(n.get() + 1);
                if n.get() >= pages_no_item
                    && let Some(c) = c.upgrade()
                {
                    c.close_spider("closespider_pagecount_no_item");
                }
                Ok(())
            });
            crawler.signals.connect(Signal::ItemScraped, move |_| {
                since_item.set(0);
                Ok(())
            });
        }
        if timeout_no_item > 0.0 {
            let items_in_period = Rc::new(Cell::new(0u64));
            let n = items_in_period.clone();
            crawler.signals.connect(Signal::ItemScraped, move |_| {
                n.set(n.get() + 1);
                Ok(())
            });
            let (c, m) = (Rc::downgrade(crawler), me.clone());
            crawler.signals.connect(Signal::SpiderOpened, move |_| {
                let Some(crawler) = c.upgrade() else {
                    return Ok(());
                };
                log::info!(
                    "Spider will stop when no items are produced after {timeout_no_item} seconds."
                );
                let (weak, n) = (Rc::downgrade(&crawler), items_in_period.clone());
                let lc = LoopingCall::new(crawler.clock(), move || {
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
            let c = Rc::downgrade(crawler);
            crawler.signals.connect(signal, move |_| {
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
            let (c, m) = (Rc::downgrade(crawler), me.clone());
            crawler.signals.connect(Signal::SpiderOpened, move |_| {
                let Some(crawler) = c.upgrade() else {
                    return Ok(());
                };
                let weak = Rc::downgrade(&crawler);
                let call = crawler.clock().call_later(timeout, move || {
                    if let Some(engine) = weak.upgrade().and_then(|c| c.engine()) {
                        let _ = engine.close_spider("closespider_timeout");
                    }
                });
                *m.timer.borrow_mut() = Some(call);
                Ok(())
            });
        }
        let m = me.clone();
        crawler.signals.connect(Signal::SpiderClosed, move |_| {
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

/// The source article's engine monitor, built in: every `ENGINE_MONITOR_INTERVAL`
/// seconds (0 = off) it logs `inprogress`, downloader active/limit, scraper
/// active_size/limit, scheduler pending, backout and idle.
#[derive(Debug)]
pub struct EngineMonitor {
    task: RefCell<Option<LoopingCall>>,
    reports: Cell<u64>,
}

impl EngineMonitor {
    fn install(crawler: &Rc<CrawlContext>) -> Result<Rc<Self>, Failure> {
        let interval = crawler.settings.get_duration("ENGINE_MONITOR_INTERVAL")?;
        if interval <= 0.0 {
            return Err(Failure::new(NotConfigured(
                "ENGINE_MONITOR_INTERVAL is 0".into(),
            )));
        }
        let me = Rc::new(Self {
            task: RefCell::new(None),
            reports: Cell::new(0),
        });
        let (c, m) = (Rc::downgrade(crawler), Rc::downgrade(&me));
        crawler.signals.connect(Signal::SpiderOpened, move |_| {
            let Some(crawler) = c.upgrade() else {
                return Ok(());
            };
            let weak: Weak<CrawlContext> = Rc::downgrade(&crawler);
            let m2 = m.clone();
            let lc = LoopingCall::new(crawler.clock(), move || {
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
        crawler.signals.connect(Signal::SpiderClosed, move |_| {
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

#[cfg(test)]
mod tests {
    #[test]
    fn utc_formatting() {
        assert_eq!(super::format_utc(0.0), "1970-01-01 00:00:00.000000");
        assert_eq!(
            super::format_utc(1_700_000_000.5),
            "2023-11-14 22:13:20.500000"
        );
    }
}
