//! Scrapy's `LogCount` extension (`scrapy.extensions.logcount`).

use std::cell::Cell;
use std::rc::Rc;

use crate::crawl::base::signals::Signal;
use crate::crawl::context::CrawlContext;

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
    /// Builds the extension and connects it to the crawl's signals.
    pub fn install(ctx: &Rc<CrawlContext>) -> Rc<Self> {
        let me = Rc::new(Self {
            at_open: Cell::new(crate::crawl::base::logging::record_counts()),
        });
        let m = me.clone();
        ctx.signals.connect(Signal::SpiderOpened, move |_| {
            m.at_open.set(crate::crawl::base::logging::record_counts());
            Ok(())
        });
        let (c, m) = (Rc::downgrade(ctx), me.clone());
        ctx.signals.connect(Signal::SpiderClosed, move |_| {
            if let Some(c) = c.upgrade() {
                let before = m.at_open.get();
                for (i, (level, now)) in crate::crawl::base::logging::record_counts()
                    .into_iter()
                    .enumerate()
                {
                    let n = now.saturating_sub(before[i].1);
                    if n > 0 {
                        let key = format!(
                            "log_count/{}",
                            crate::crawl::base::logging::level_name(level)
                        );
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
