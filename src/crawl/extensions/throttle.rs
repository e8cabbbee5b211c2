//! AutoThrottle (`AUTOTHROTTLE_ENABLED`, off by default): adjusts each download slot's
//! delay from the latency of its responses, with Scrapy's algorithm
//! (`scrapy/extensions/throttle.py`):
//!
//! * when the spider opens, the default slot delay becomes
//!   `max(DOWNLOAD_DELAY, AUTOTHROTTLE_START_DELAY)`;
//! * on every downloaded response with a `download_latency`:
//!   `target = latency / AUTOTHROTTLE_TARGET_CONCURRENCY`,
//!   `new = max(target, (old + target) / 2)`, clamped to
//!   `[max(DOWNLOAD_DELAY, slot minimum), AUTOTHROTTLE_MAX_DELAY]`;
//! * a non-200 response may raise the delay but never lower it;
//! * meta `autothrottle_dont_adjust_delay` skips a response.
//!
//! The latency is the HTTP client's (request sent → response head parsed), so the
//! algorithm runs unchanged under a `ManualClock` with a scripted handler that sets it.

use std::rc::{Rc, Weak};

use crate::crawl::base::errors::NotConfigured;
use crate::crawl::base::signals::{Signal, SignalArgs};
use crate::crawl::base::slots::slot_key;
use crate::crawl::context::CrawlContext;
use crate::crawl::http::request::Request;
use crate::crawl::http::request::keys;
use crate::crawl::http::response::Response;
use crate::defer::Failure;

/// The AutoThrottle extension.
#[derive(Debug)]
pub struct AutoThrottle {
    ctx: Weak<CrawlContext>,
    target_concurrency: f64,
    min_delay: f64,
    max_delay: f64,
    start_delay: f64,
    debug: bool,
}

impl AutoThrottle {
    /// Builds the extension and connects it to `spider_opened` and
    /// `response_downloaded`.
    ///
    /// # Errors
    ///
    /// [`NotConfigured`] when disabled; an invalid setting (a target concurrency that
    /// is not positive).
    pub fn install(ctx: &Rc<CrawlContext>) -> Result<Rc<Self>, Failure> {
        let s = &ctx.settings;
        if !s.get_bool("AUTOTHROTTLE_ENABLED")? {
            return Err(Failure::new(NotConfigured(
                "AUTOTHROTTLE_ENABLED is off".into(),
            )));
        }
        let target_concurrency = s.get_float("AUTOTHROTTLE_TARGET_CONCURRENCY")?;
        if target_concurrency.is_nan() || target_concurrency <= 0.0 {
            return Err(Failure::msg(format!(
                "AUTOTHROTTLE_TARGET_CONCURRENCY ({target_concurrency}) must be a positive number"
            )));
        }
        let min_delay = s.get_duration("DOWNLOAD_DELAY")?;
        let me = Rc::new(Self {
            ctx: Rc::downgrade(ctx),
            target_concurrency,
            min_delay,
            max_delay: s.get_duration("AUTOTHROTTLE_MAX_DELAY")?,
            start_delay: s.get_duration("AUTOTHROTTLE_START_DELAY")?.max(min_delay),
            debug: s.get_bool("AUTOTHROTTLE_DEBUG")?,
        });
        let m = Rc::downgrade(&me);
        ctx.signals.connect(Signal::SpiderOpened, move |_| {
            if let Some(m) = m.upgrade()
                && let Some(engine) = m.ctx.upgrade().and_then(|c| c.engine())
            {
                engine.downloader().set_default_delay(m.start_delay);
            }
            Ok(())
        });
        let m = Rc::downgrade(&me);
        ctx.signals
            .connect(Signal::ResponseDownloaded, move |args| {
                if let (Some(m), SignalArgs::Response { response, request }) = (m.upgrade(), args) {
                    m.response_downloaded(response, request);
                }
                Ok(())
            });
        Ok(me)
    }

    /// The new delay for a slot at `old` after a response with `latency` and `status`
    /// (`None`: leave it). `floor` is the slot's own minimum (robots.txt Crawl-delay).
    pub fn adjust(&self, old: f64, latency: f64, status: u16, floor: f64) -> Option<f64> {
        let target = latency / self.target_concurrency;
        let new = ((old + target) / 2.0).max(target);
        let new = new.max(self.min_delay).max(floor).min(self.max_delay);
        if status != 200 && new <= old {
            return None;
        }
        Some(new)
    }

    fn response_downloaded(&self, response: &Response, request: &Request) {
        let meta = request.meta();
        let Some(latency) = meta.get_f64(keys::DOWNLOAD_LATENCY) else {
            return;
        };
        if meta.get_bool(keys::AUTOTHROTTLE_DONT_ADJUST_DELAY) {
            return;
        }
        let Some(engine) = self.ctx.upgrade().and_then(|c| c.engine()) else {
            return;
        };
        let key = slot_key(request);
        let downloader = engine.downloader();
        let Some(slot) = downloader.slot_state(&key) else {
            return;
        };
        let old = slot.delay;
        if let Some(new) = self.adjust(old, latency, response.status(), slot.min_delay) {
            downloader.set_slot_delay(&key, new);
            if self.debug {
                let size = response.body().len();
                log::info!(
                    "slot: {key} | conc:{:2} | delay:{:5.0} ms ({:+.0}) | latency:{:5.0} ms | size:{size:6} bytes",
                    slot.transferring,
                    new * 1000.0,
                    (new - old) * 1000.0,
                    latency * 1000.0
                );
            }
        }
    }
}
