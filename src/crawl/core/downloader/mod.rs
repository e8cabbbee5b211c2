//! The downloader: per-domain slots with concurrency and delays, the downloader
//! middleware chain, and download handlers per scheme (Scrapy's
//! `scrapy/core/downloader/__init__.py`).
//!
//! A request's path: `fetch` counts it in `active` (the engine's concurrency gate), runs
//! the middleware chain, which calls `enqueue` → the request waits in its slot's queue
//! until the slot has a free transfer slot and its delay has passed → the handler
//! downloads it → `response_downloaded` → back through the middlewares.
//!
//! Slots are keyed by the `download_slot` meta key, else the host name (or the resolved
//! IP with `CONCURRENT_REQUESTS_PER_IP`). A slot with a delay starts at most one request
//! per pass (no bursts); the delay is jittered by `DOWNLOAD_DELAY_JITTER` (0.5: between
//! 0.5× and 1.5×) unless `RANDOMIZE_DOWNLOAD_DELAY` is false. Idle slots are garbage
//! collected every 60 s. All timing runs on the crawler's clock, so tests drive it with a
//! `ManualClock`.

pub mod handlers;
pub mod middleware;

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use crate::util::SeededMap;
use std::fmt;
use std::rc::{Rc, Weak};

use serde_json::Value;

use crate::crawl::base::signals::{Signal, SignalArgs};
use crate::crawl::base::slots::SlotActivity;
use crate::crawl::context::{CrawlContext, DownloaderControl, SlotState};
use crate::crawl::http::request::Request;
use crate::crawl::http::request::keys;
use crate::crawl::http::response::retry_after_seconds;
use crate::defer::{Deferred, Failure};
use crate::reactor::DelayedCall;
use crate::task::LoopingCall;
use handlers::DownloadHandler;
use middleware::{
    DownloadFailure, DownloadFn, Downloaded, DownloaderMiddleware, DownloaderMiddlewareManager,
    Fetched,
};

/// One download slot (Scrapy's `downloader.Slot`).
pub struct Slot {
    /// Concurrent transfers allowed.
    pub concurrency: usize,
    /// Seconds between requests (AutoThrottle adjusts it).
    pub delay: Cell<f64>,
    /// A floor for `delay` (robots.txt `Crawl-delay` with `ROBOTSTXT_CRAWL_DELAY`);
    /// AutoThrottle never goes below it.
    pub min_delay: Cell<f64>,
    /// The magnitude of the random variation of the delay: `delay × (1 ± jitter)`.
    jitter: f64,
    active: Cell<usize>,
    transferring: Cell<usize>,
    queue: RefCell<VecDeque<(Request, Deferred<Downloaded>)>>,
    lastseen: Cell<f64>,
    /// No transfer starts before this time (crawler clock seconds): a `Retry-After`.
    resume_at: Cell<f64>,
    latercall: RefCell<Option<DelayedCall>>,
    /// The slot's key, shared with each request's bookkeeping (no copy per request).
    key: Rc<str>,
}

impl Slot {
    fn new(key: Rc<str>, concurrency: usize, delay: f64, jitter: f64) -> Self {
        Self {
            key,
            concurrency: concurrency.max(1),
            delay: Cell::new(delay),
            min_delay: Cell::new(0.0),
            jitter,
            active: Cell::new(0),
            transferring: Cell::new(0),
            queue: RefCell::new(VecDeque::new()),
            lastseen: Cell::new(f64::NEG_INFINITY),
            resume_at: Cell::new(f64::NEG_INFINITY),
            latercall: RefCell::new(None),
        }
    }

    /// Requests in this slot (queued or transferring).
    pub fn active(&self) -> usize {
        self.active.get()
    }

    /// Requests being transferred.
    pub fn transferring(&self) -> usize {
        self.transferring.get()
    }

    /// Requests waiting in the queue.
    pub fn queued(&self) -> usize {
        self.queue.borrow().len()
    }

    /// Its delays and load, as components see them.
    pub fn state(&self) -> SlotState {
        SlotState {
            delay: self.delay.get(),
            min_delay: self.min_delay.get(),
            active: self.active(),
            transferring: self.transferring(),
            queued: self.queued(),
        }
    }

    fn free_transfer_slots(&self) -> usize {
        self.concurrency.saturating_sub(self.transferring.get())
    }
}

impl fmt::Debug for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Slot(concurrency={}, delay={:.2}, jitter={}, active={}, queue={}, transferring={}, lastseen={:.3})",
            self.concurrency,
            self.delay.get(),
            self.jitter,
            self.active.get(),
            self.queue.borrow().len(),
            self.transferring.get(),
            self.lastseen.get()
        )
    }
}

/// The downloader.
pub struct Downloader {
    ctx: Weak<CrawlContext>,
    middleware: Rc<DownloaderMiddlewareManager>,
    handlers: SeededMap<String, Rc<dyn DownloadHandler>>,
    slots: RefCell<SeededMap<String, Rc<Slot>>>,
    active: Cell<usize>,
    /// `CONCURRENT_REQUESTS`; 0 means no limit (Scrapy).
    total_concurrency: usize,
    /// `RETRY_AFTER_MAX`: the longest `Retry-After` a slot honours (0: ignored).
    retry_after_max: f64,
    domain_concurrency: usize,
    delay: Cell<f64>,
    min_delays: RefCell<SeededMap<String, f64>>,
    jitter: f64,
    slot_overrides: serde_json::Map<String, Value>,
    activity: Rc<SlotActivity>,
    slot_gc: RefCell<Option<LoopingCall>>,
    rng: Cell<u64>,
    /// The download function handed to the middleware manager with every request:
    /// made once (it holds only a weak reference to the downloader).
    download_fn: std::cell::OnceCell<DownloadFn>,
    me: Weak<Downloader>,
}

impl Downloader {
    /// A downloader over `middlewares` (in `DOWNLOADER_MIDDLEWARES` order) and the
    /// download handlers by URL scheme, configured by the context's settings.
    ///
    /// # Errors
    ///
    /// An invalid setting.
    pub fn new(
        ctx: &Rc<CrawlContext>,
        middlewares: Vec<(String, Rc<dyn DownloaderMiddleware>)>,
        handlers: SeededMap<String, Rc<dyn DownloadHandler>>,
    ) -> Result<Rc<Self>, Failure> {
        let s = &ctx.settings;
        let seed = ctx.clock().now_nanos() ^ 0x9E37_79B9_7F4A_7C15;
        let total_concurrency = s.get_usize("CONCURRENT_REQUESTS")?;
        let per_ip = s.get_usize("CONCURRENT_REQUESTS_PER_IP")?;
        if per_ip > 0 {
            log::warn!(
                "CONCURRENT_REQUESTS_PER_IP is deprecated in Scrapy 2.19; trawl still keys \
                 slots by IP address (use DOWNLOAD_SLOTS or meta download_slot instead)"
            );
        }
        let domain_concurrency = if per_ip > 0 {
            per_ip
        } else {
            s.get_usize("CONCURRENT_REQUESTS_PER_DOMAIN")?.max(1)
        };
        let delay = s.get_duration("DOWNLOAD_DELAY")?;
        let retry_after_max = s.get_duration("RETRY_AFTER_MAX")?;
        let jitter = default_jitter(s)?;
        let slot_overrides = s.get_dict("DOWNLOAD_SLOTS")?;
        let d = Rc::new_cyclic(|me| Self {
            ctx: Rc::downgrade(ctx),
            middleware: DownloaderMiddlewareManager::new(middlewares),
            handlers,
            slots: RefCell::new(SeededMap::default()),
            active: Cell::new(0),
            total_concurrency,
            retry_after_max,
            domain_concurrency,
            delay: Cell::new(delay),
            min_delays: RefCell::new(SeededMap::default()),
            jitter,
            slot_overrides,
            activity: Rc::new(SlotActivity::default()),
            slot_gc: RefCell::new(None),
            rng: Cell::new(seed | 1),
            download_fn: std::cell::OnceCell::new(),
            me: me.clone(),
        });
        if per_ip > 0 {
            // Scrapy: `dnscache.get(hostname, hostname)` — the address once resolved.
            let handlers = d.handlers.clone();
            d.activity.set_key_fn(Rc::new(move |r: &Request| {
                if let Some(slot) = r.meta().get_str(keys::DOWNLOAD_SLOT) {
                    return slot.to_owned();
                }
                let host = r.url().host_str().unwrap_or("").to_ascii_lowercase();
                handlers
                    .get(r.url().scheme())
                    .and_then(|h| h.cached_ip(&host))
                    .map_or(host, |ip| ip.to_string())
            }));
        }
        let weak = Rc::downgrade(&d);
        let gc = LoopingCall::new(ctx.clock(), move || {
            if let Some(d) = weak.upgrade() {
                d.slot_gc(60.0);
            }
            Ok(())
        });
        if let Err(e) = gc.start(60.0, false) {
            log::error!("slot GC did not start: {e}");
        }
        *d.slot_gc.borrow_mut() = Some(gc);
        Ok(d)
    }

    /// The shared per-slot activity counts.
    pub fn activity(&self) -> Rc<SlotActivity> {
        self.activity.clone()
    }

    /// Requests between `fetch` and its result.
    pub fn active(&self) -> usize {
        self.active.get()
    }

    /// `CONCURRENT_REQUESTS`.
    pub fn total_concurrency(&self) -> usize {
        self.total_concurrency
    }

    /// The downloader's concurrency gate.
    pub fn needs_backout(&self) -> bool {
        // Scrapy: a total concurrency of 0 means no limit.
        self.total_concurrency > 0 && self.active.get() >= self.total_concurrency
    }

    /// The slot for `key`, if it exists.
    pub fn slot(&self, key: &str) -> Option<Rc<Slot>> {
        self.slots.borrow().get(key).cloned()
    }

    /// Every slot key.
    pub fn slot_keys(&self) -> Vec<String> {
        self.slots.borrow().keys().cloned().collect()
    }

    /// The delay new slots start with (`DOWNLOAD_DELAY`; AutoThrottle sets its start
    /// delay here when the spider opens).
    pub fn set_default_delay(&self, secs: f64) {
        self.delay.set(secs.max(0.0));
    }

    /// The delay new slots start with.
    pub fn default_delay(&self) -> f64 {
        self.delay.get()
    }

    /// Starts no transfer in slot `key` for `secs` seconds (a `Retry-After`: the whole
    /// host waits, not only the retried request).
    pub fn pause_slot(&self, key: &str, secs: f64) {
        if !(secs.is_finite() && secs > 0.0) {
            return;
        }
        let until = self.now() + secs;
        let slot = self.slots.borrow().get(key).cloned();
        if let Some(slot) = slot
            && until > slot.resume_at.get()
        {
            slot.resume_at.set(until);
            // A timer armed for an earlier start is replaced by one at the new time.
            let call = slot.latercall.borrow_mut().take();
            if let Some(call) = call {
                let _ = call.cancel();
            }
            self.process_queue(&slot);
        }
    }

    /// Sets a minimum delay for slot `key`, now and for the slot's future incarnations
    /// (robots.txt `Crawl-delay`).
    pub fn set_slot_min_delay(&self, key: &str, secs: f64) {
        if !(secs.is_finite() && secs >= 0.0) {
            return;
        }
        self.min_delays.borrow_mut().insert(key.to_owned(), secs);
        if let Some(slot) = self.slots.borrow().get(key) {
            slot.min_delay.set(secs);
            if slot.delay.get() < secs {
                slot.delay.set(secs);
            }
        }
    }

    /// The middleware names in order.
    pub fn middleware_names(&self) -> Vec<String> {
        self.middleware
            .names()
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    fn ctx(&self) -> Option<Rc<CrawlContext>> {
        self.ctx.upgrade()
    }

    fn now(&self) -> f64 {
        self.ctx().map_or(0.0, |c| c.clock().seconds())
    }

    fn random_unit(&self) -> f64 {
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    }

    fn get_slot(&self, request: &mut Request) -> (Rc<str>, Rc<Slot>) {
        // An existing slot is found with the key borrowed from the request; the key
        // is copied only for a new slot.
        let existing = {
            let key = self.activity.slot_key(request);
            match self.slots.borrow().get(&*key) {
                Some(slot) => Ok(slot.clone()),
                None => Err(key.into_owned()),
            }
        };
        let slot = match existing {
            Ok(slot) => slot,
            Err(key) => self.new_slot(key),
        };
        if !request.meta().contains_key(keys::DOWNLOAD_SLOT) {
            request
                .meta_mut()
                .insert_static(keys::DOWNLOAD_SLOT, &*slot.key);
        }
        (slot.key.clone(), slot)
    }

    /// A slot for `key`, with the settings' and the overrides' concurrency and delay.
    fn new_slot(&self, key: String) -> Rc<Slot> {
        let overrides = self.slot_overrides.get(&key).and_then(Value::as_object);
        let conc = overrides
            .and_then(|o| o.get("concurrency"))
            .and_then(Value::as_u64)
            .map_or(self.domain_concurrency, |c| c as usize);
        let delay = overrides
            .and_then(|o| o.get("delay"))
            .and_then(Value::as_f64)
            .unwrap_or(self.delay.get());
        let min_delay = self.min_delays.borrow().get(&key).copied().unwrap_or(0.0);
        let delay = delay.max(min_delay);
        let jitter = overrides.map_or(self.jitter, |o| slot_jitter(o, self.jitter));
        let slot = Rc::new(Slot::new(Rc::from(key.as_str()), conc, delay, jitter));
        slot.min_delay.set(min_delay);
        self.slots.borrow_mut().insert(key, slot.clone());
        slot
    }

    /// Downloads `request` through the middlewares (Scrapy's `Downloader.fetch`). A
    /// failure comes back as `Err` with the request the middlewares wrote to.
    pub fn fetch(&self, request: Request) -> Deferred<Fetched> {
        self.active.set(self.active.get() + 1);
        let download = self
            .download_fn
            .get_or_init(|| {
                let me = self.me.clone();
                Rc::new(move |request: Request| match me.upgrade() {
                    Some(d) => d.enqueue(request),
                    None => {
                        let failure = Failure::msg("the downloader is gone");
                        crate::defer::succeed(Err(DownloadFailure { failure, request }))
                    }
                })
            })
            .clone();
        let d = self.middleware.download(request, download);
        let me = self.me.clone();
        d.add_both(move |r| {
            if let Some(d) = me.upgrade() {
                d.active.set(d.active.get().saturating_sub(1));
            }
            r
        });
        d
    }

    /// Scrapy's `_enqueue_request`: `download_slot` is written to the request, which
    /// waits in the slot's queue.
    fn enqueue(&self, mut request: Request) -> Deferred<Downloaded> {
        let (key, slot) = self.get_slot(&mut request);
        slot.active.set(slot.active.get() + 1);
        self.activity.add(&key, 1);
        if let Some(c) = self.ctx()
            && c.signals.has_receivers(Signal::RequestReachedDownloader)
        {
            c.signals.send_catch_log(
                Signal::RequestReachedDownloader,
                SignalArgs::Request { request: &request },
            );
        }
        let d = Deferred::new();
        slot.queue.borrow_mut().push_back((request, d.clone()));
        let me = self.me.clone();
        let s = slot.clone();
        d.add_both(move |r| {
            s.active.set(s.active.get().saturating_sub(1));
            if s.active.get() == 0 {
                // An idle slot gives its queue's buffer back: a broad crawl keeps
                // thousands of slots until the slot GC (3 MB at 10,000 hosts).
                let mut q = s.queue.borrow_mut();
                if q.is_empty() {
                    q.shrink_to_fit();
                }
            }
            if let Some(dl) = me.upgrade() {
                dl.activity.add(&key, -1);
            }
            r
        });
        self.process_queue(&slot);
        d
    }

    fn slot_delay(&self, slot: &Slot) -> f64 {
        let delay = slot.delay.get();
        if delay > 0.0 && slot.jitter > 0.0 {
            // Scrapy: delay × (1 + uniform(-jitter, jitter)), floored at 0.
            let variation = slot.jitter * (2.0 * self.random_unit() - 1.0);
            (delay * (1.0 + variation)).max(0.0)
        } else {
            delay
        }
    }

    fn process_queue(&self, slot: &Rc<Slot>) {
        if slot.latercall.borrow().is_some() {
            return;
        }
        let now = self.now();
        let delay = self.slot_delay(slot);
        let paused_for = slot.resume_at.get() - now;
        if paused_for > 0.0 || delay > 0.0 {
            let penalty = (delay - now + slot.lastseen.get()).max(paused_for);
            // Compare at the clock's resolution: a float remainder that rounds to 0 ns
            // would reschedule "now" forever.
            if crate::reactor::secs_to_nanos(penalty) > 0 {
                let Some(ctx) = self.ctx() else {
                    return;
                };
                let me = self.me.clone();
                let s = slot.clone();
                let call = ctx.clock().call_later(penalty, move || {
                    s.latercall.borrow_mut().take();
                    if let Some(d) = me.upgrade() {
                        d.process_queue(&s);
                    }
                });
                *slot.latercall.borrow_mut() = Some(call);
                return;
            }
        }
        while slot.free_transfer_slots() > 0 {
            let next = slot.queue.borrow_mut().pop_front();
            let Some((request, d)) = next else { break };
            slot.lastseen.set(now);
            self.download(slot, request, d);
            if delay > 0.0 {
                // Prevent bursts: the next request waits for the delay again.
                self.process_queue(slot);
                break;
            }
        }
    }

    fn download(&self, slot: &Rc<Slot>, request: Request, d: Deferred<Downloaded>) {
        slot.transferring.set(slot.transferring.get() + 1);
        // The `url` crate's scheme is lower-case already: looked up as it is.
        let handler = self.handlers.get(request.url().scheme()).cloned();
        let result = match handler {
            // The handler gets the request and hands it back with a failure. A panic
            // of a handler's own `download_owned` loses it (the default one, around
            // `download_request`, catches its panics): the failure then reaches the
            // engine's log, not the errback.
            Some(h) => {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h.download_owned(request)))
                    .unwrap_or_else(|p| crate::defer::fail(Failure::from_panic(p.as_ref())))
            }
            None => {
                let failure = Failure::new(crate::crawl::base::errors::NotConfigured(format!(
                    "Unsupported URL scheme '{}': no handler available for that scheme",
                    request.url().scheme()
                )));
                crate::defer::succeed(Err(DownloadFailure { failure, request }))
            }
        };
        let me = self.me.clone();
        let s = slot.clone();
        let _chain: Deferred<()> = result.then(move |r| {
            s.transferring.set(s.transferring.get().saturating_sub(1));
            if let Some(dl) = me.upgrade() {
                if let (Ok(Ok(resp)), Some(c)) = (&r, dl.ctx())
                    && c.signals.has_receivers(Signal::ResponseDownloaded)
                {
                    c.signals.send_catch_log(
                        Signal::ResponseDownloaded,
                        SignalArgs::Response {
                            response: resp,
                            request: resp.request(),
                        },
                    );
                }
                // A 429/503 with Retry-After holds the whole slot, before it starts
                // its next request (the retry itself is delayed by the retry middleware).
                if let (Ok(Ok(resp)), Some(c)) = (&r, dl.ctx())
                    && let Some(wait) =
                        retry_after_seconds(resp, c.clock().wall_seconds(), dl.retry_after_max)
                {
                    let until = dl.now() + wait;
                    if until > s.resume_at.get() {
                        s.resume_at.set(until);
                    }
                }
                // Scrapy's `finish_transferring`: after `response_downloaded`, before
                // the slot's next transfer, with the request the handler handed back
                // (the response's, or the failure's).
                let request = match &r {
                    Ok(Ok(resp)) => Some(resp.request()),
                    Ok(Err(failed)) => Some(&failed.request),
                    Err(_) => None,
                };
                if let (Some(request), Some(c)) = (request, dl.ctx())
                    && c.signals.has_receivers(Signal::RequestLeftDownloader)
                {
                    c.signals.send_catch_log(
                        Signal::RequestLeftDownloader,
                        SignalArgs::Request { request },
                    );
                }
                dl.process_queue(&s);
            }
            let _ = d.resolve(r);
            Ok(())
        });
    }

    fn slot_gc(&self, age: f64) {
        let mintime = self.now() - age;
        self.slots
            .borrow_mut()
            .retain(|_, s| s.active.get() > 0 || s.lastseen.get() + s.delay.get() >= mintime);
    }

    /// Stops the slot GC, cancels delayed queue runs and closes the handlers.
    pub fn close(&self) {
        if let Some(gc) = self.slot_gc.borrow_mut().take()
            && gc.running()
        {
            let _ = gc.stop();
        }
        for slot in self.slots.borrow().values() {
            if let Some(c) = slot.latercall.borrow_mut().take() {
                let _ = c.cancel();
            }
        }
        for h in self.handlers.values() {
            h.close();
        }
    }
}

impl fmt::Debug for Downloader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Downloader")
            .field("active", &self.active.get())
            .field("total_concurrency", &self.total_concurrency)
            .field("slots", &self.slots.borrow().len())
            .finish()
    }
}

/// Scrapy's `_default_jitter`: `DOWNLOAD_DELAY_JITTER`, unless the deprecated
/// `RANDOMIZE_DOWNLOAD_DELAY` was set at a higher priority (then ±50% or none).
fn default_jitter(s: &crate::crawl::base::settings::Settings) -> Result<f64, Failure> {
    let randomize_priority = s.priority("RANDOMIZE_DOWNLOAD_DELAY");
    let jitter = s.get_float("DOWNLOAD_DELAY_JITTER")?.max(0.0);
    let Some(rp) =
        randomize_priority.filter(|p| *p > crate::crawl::base::settings::Priority::Default)
    else {
        return Ok(jitter);
    };
    log::warn!(
        "The RANDOMIZE_DOWNLOAD_DELAY setting is deprecated, use DOWNLOAD_DELAY_JITTER \
         instead: it takes the magnitude of the random variation as a number, e.g. 0.5 for \
         the ±50% that RANDOMIZE_DOWNLOAD_DELAY enables, or 0 to disable it."
    );
    if Some(rp) > s.priority("DOWNLOAD_DELAY_JITTER") {
        Ok(if s.get_bool("RANDOMIZE_DOWNLOAD_DELAY")? {
            0.5
        } else {
            0.0
        })
    } else {
        Ok(jitter)
    }
}

/// Scrapy's `_slot_jitter`: a `DOWNLOAD_SLOTS` entry's `jitter`, its deprecated
/// `randomize_delay` (±50% or none), or `default`.
fn slot_jitter(slot: &serde_json::Map<String, Value>, default: f64) -> f64 {
    if let Some(j) = slot.get("jitter").and_then(Value::as_f64) {
        return j.max(0.0);
    }
    match slot.get("randomize_delay") {
        Some(v) => {
            log::warn!(
                "The randomize_delay key of the DOWNLOAD_SLOTS setting is deprecated, use \
                 jitter instead"
            );
            if v.as_bool().unwrap_or(false) {
                0.5
            } else {
                0.0
            }
        }
        None => default,
    }
}

impl DownloaderControl for Downloader {
    fn set_default_delay(&self, secs: f64) {
        Downloader::set_default_delay(self, secs);
    }

    fn set_slot_min_delay(&self, key: &str, secs: f64) {
        Downloader::set_slot_min_delay(self, key, secs);
    }

    fn set_slot_delay(&self, key: &str, secs: f64) {
        if let Some(slot) = self.slot(key) {
            slot.delay.set(secs);
        }
    }

    fn slot_state(&self, key: &str) -> Option<SlotState> {
        self.slot(key).map(|s| s.state())
    }

    fn slot_states(&self) -> Vec<(String, SlotState)> {
        self.slots
            .borrow()
            .iter()
            .map(|(k, s)| (k.clone(), s.state()))
            .collect()
    }
}
