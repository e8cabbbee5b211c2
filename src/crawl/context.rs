//! [`CrawlContext`]: what every component of a crawl may reach — settings, signals,
//! stats, the clock, the reactor, the spider's name and domains, and an
//! [`EngineHandle`] with the few engine operations a component may use.
//!
//! The wiring (building components from settings, owning the spider and the engine) is
//! the [`Crawler`](crate::crawl::Crawler)'s; components get this context, never the
//! crawler, and never the engine itself: they reach the engine through [`EngineOps`]
//! and the downloader's slots through [`DownloaderControl`] (`tests/layering.rs` holds
//! the rooms above to it). A spider gets the same context
//! ([`Spider::set_context`](crate::crawl::Spider::set_context)), so a Redis-fed spider
//! can connect to `spider_idle`.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::fmt;
use std::rc::{Rc, Weak};

use crate::crawl::base::logformatter::{LogFormatter, ScrapyLogFormatter};
use crate::crawl::base::settings::Settings;
use crate::crawl::base::signals::Signals;
use crate::crawl::base::stats::StatsCollector;
use crate::crawl::http::fingerprint::{RequestFingerprinter, ScrapyRequestFingerprinter};
use crate::crawl::http::request::Request;
use crate::crawl::http::response::Response;
use crate::crawl::jobdir::{Job, SpiderState};
use crate::defer::{Deferred, Failure};
use crate::reactor::{Clock, ReactorHandle};

/// The engine operations components may use (Scrapy's `crawler.engine.*` calls from
/// middlewares and extensions).
pub trait EngineOps {
    /// Schedules a request (`engine.crawl`).
    fn crawl(&self, request: Request);

    /// Downloads outside the scheduler (`engine.download`): the robots.txt middleware.
    fn download(&self, request: Request) -> Deferred<Response>;

    /// Closes the spider with `reason` (`engine.close_spider`).
    fn close_spider(&self, reason: &str) -> Deferred<()>;

    /// Pauses the scheduling loop.
    fn pause(&self);

    /// Resumes the scheduling loop.
    fn unpause(&self);

    /// Asks for a scheduling pass soon (`slot.nextcall.schedule()`): what a scheduler
    /// calls when a request it had no answer for arrives.
    fn schedule_pass(&self);

    /// The downloader's slots (AutoThrottle, robots.txt `Crawl-delay`, the metrics
    /// endpoint).
    fn downloader(&self) -> Rc<dyn DownloaderControl>;

    /// A one-line state report.
    fn status_line(&self) -> String;

    /// The engine's in-flight figures and backpressure gates, for monitoring.
    fn gauges(&self) -> EngineGauges {
        EngineGauges::default()
    }
}

/// The downloader's slots as components adjust and watch them (Scrapy's components
/// reach `crawler.engine.downloader.slots`): AutoThrottle sets the delays, the
/// robots.txt middleware a `Crawl-delay` floor, the metrics endpoint reads the gauges.
pub trait DownloaderControl {
    /// Sets the delay of new slots (AutoThrottle's start delay).
    fn set_default_delay(&self, secs: f64);

    /// Sets a floor under a slot's delay, now and for the slot made later under that
    /// key (robots.txt `Crawl-delay`).
    fn set_slot_min_delay(&self, key: &str, secs: f64);

    /// Sets a slot's delay (AutoThrottle); no-op for a slot that does not exist.
    fn set_slot_delay(&self, key: &str, secs: f64);

    /// A slot's state, if it exists.
    fn slot_state(&self, key: &str) -> Option<SlotState>;

    /// Every slot's state, by key.
    fn slot_states(&self) -> Vec<(String, SlotState)>;
}

/// One download slot's delays and load.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SlotState {
    /// Seconds between requests.
    pub delay: f64,
    /// The floor of `delay` (robots.txt `Crawl-delay`).
    pub min_delay: f64,
    /// Requests in the slot (queued or transferring).
    pub active: usize,
    /// Requests being transferred.
    pub transferring: usize,
    /// Requests waiting in the slot's queue.
    pub queued: usize,
}

/// What holds a crawl's results between the response that made them and their storage
/// (a feed's write buffer). A shared queue acknowledges a request only after
/// [`CrawlContext::flush_outputs`], so a worker killed after the acknowledgement has
/// lost nothing it acknowledged: its results are with the OS.
pub trait OutputBuffer {
    /// Hands what is buffered to the OS (and to the disk, when the output's policy
    /// asks for it).
    ///
    /// # Errors
    ///
    /// The write (or the sync) failed.
    fn flush_output(&self) -> std::io::Result<()>;

    /// Its name in log lines (a feed's path).
    fn output_name(&self) -> String;
}

/// The engine's in-flight figures and backpressure gates (`status_line` as numbers).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineGauges {
    /// Requests in the engine (scheduled to the downloader, not yet scraped).
    pub inprogress: usize,
    /// Requests in the downloader's slots.
    pub downloader_active: usize,
    /// `CONCURRENT_REQUESTS`.
    pub downloader_concurrency: usize,
    /// Bytes of responses being scraped.
    pub scraper_active_size: usize,
    /// `SCRAPER_SLOT_MAX_ACTIVE_SIZE`.
    pub scraper_max_active_size: usize,
    /// The scheduler has requests waiting.
    pub scheduler_pending: bool,
    /// The engine is holding back new requests (a gate is closed).
    pub needs_backout: bool,
    /// Nothing in flight and nothing pending.
    pub idle: bool,
}

/// A weak handle on the running engine; empty before the engine exists and after it
/// is gone.
#[derive(Default)]
pub struct EngineHandle(RefCell<Option<Weak<dyn EngineOps>>>);

impl EngineHandle {
    /// The engine, while it runs.
    pub fn get(&self) -> Option<Rc<dyn EngineOps>> {
        self.0.borrow().as_ref().and_then(Weak::upgrade)
    }

    pub(crate) fn set(&self, engine: Option<Weak<dyn EngineOps>>) {
        *self.0.borrow_mut() = engine;
    }
}

impl fmt::Debug for EngineHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.get().is_some() {
            "EngineHandle(running)"
        } else {
            "EngineHandle(none)"
        })
    }
}

/// One crawl's shared context.
pub struct CrawlContext {
    /// The settings (frozen once the crawl is set up).
    pub settings: Settings,
    /// The signal manager.
    pub signals: Signals,
    /// The stats collector (`STATS_CLASS`).
    pub stats: Rc<dyn StatsCollector>,
    clock: Clock,
    reactor: Option<ReactorHandle>,
    spider_name: String,
    allowed_domains: Vec<String>,
    engine: EngineHandle,
    job: Option<Rc<Job>>,
    spider_state: Rc<SpiderState>,
    resources: RefCell<Vec<(TypeId, Rc<dyn Any>)>>,
    outputs: RefCell<Vec<Weak<dyn OutputBuffer>>>,
    close_waits: RefCell<Vec<Deferred<()>>>,
    handle_httpstatus_list: RefCell<Option<Vec<u16>>>,
    log_formatter: RefCell<Rc<dyn LogFormatter>>,
    fingerprinter: RefCell<(String, Rc<dyn RequestFingerprinter>)>,
    dropitem_level: std::cell::Cell<log::Level>,
}

impl CrawlContext {
    /// A context; the engine handle starts empty.
    pub fn new(
        settings: Settings,
        stats: Rc<dyn StatsCollector>,
        clock: Clock,
        reactor: Option<ReactorHandle>,
        spider_name: String,
        allowed_domains: Vec<String>,
        job: Option<Rc<Job>>,
    ) -> Self {
        let spider_state = job
            .as_ref()
            .map_or_else(Rc::default, |j| j.spider_state().clone());
        Self {
            settings,
            signals: Signals::new(),
            stats,
            clock,
            reactor,
            spider_name,
            allowed_domains,
            engine: EngineHandle::default(),
            job,
            spider_state,
            resources: RefCell::new(Vec::new()),
            outputs: RefCell::new(Vec::new()),
            close_waits: RefCell::new(Vec::new()),
            handle_httpstatus_list: RefCell::new(None),
            log_formatter: RefCell::new(Rc::new(ScrapyLogFormatter)),
            fingerprinter: RefCell::new((
                crate::crawl::http::fingerprint::DEFAULT_FINGERPRINTER.to_owned(),
                Rc::new(ScrapyRequestFingerprinter::default()),
            )),
            dropitem_level: std::cell::Cell::new(log::Level::Warn),
        }
    }

    /// What the crawl says about pages, items and errors (`LOG_FORMATTER`).
    pub fn log_formatter(&self) -> Rc<dyn LogFormatter> {
        self.log_formatter.borrow().clone()
    }

    /// Sets the log formatter and `DEFAULT_DROPITEM_LOG_LEVEL` (the crawler, from its
    /// settings, before the engine is built).
    pub fn set_log_formatter(&self, formatter: Rc<dyn LogFormatter>, dropitem_level: log::Level) {
        *self.log_formatter.borrow_mut() = formatter;
        self.dropitem_level.set(dropitem_level);
    }

    /// The crawl's request fingerprinter (`REQUEST_FINGERPRINTER_CLASS`): what the
    /// dupefilter, the HTTP cache, the JOBDIR and the media pipelines identify a
    /// request by.
    pub fn fingerprinter(&self) -> Rc<dyn RequestFingerprinter> {
        self.fingerprinter.borrow().1.clone()
    }

    /// The fingerprinter's registered name (`trawl.RequestFingerprinter` by default).
    pub fn fingerprinter_name(&self) -> String {
        self.fingerprinter.borrow().0.clone()
    }

    /// Sets the fingerprinter (the crawler, before the engine is built).
    pub fn set_fingerprinter(&self, name: &str, fingerprinter: Rc<dyn RequestFingerprinter>) {
        *self.fingerprinter.borrow_mut() = (name.to_owned(), fingerprinter);
    }

    /// `DEFAULT_DROPITEM_LOG_LEVEL`.
    pub fn dropitem_level(&self) -> log::Level {
        self.dropitem_level.get()
    }

    /// The crawl's shared `T`, made by `make` on first use: one value per type per
    /// crawl, shared by every component that asks (the distributed layer keeps its one
    /// Redis connection here, so the scheduler, dupefilter, pipeline and spider write
    /// in one order).
    ///
    /// # Errors
    ///
    /// Whatever `make` returns (nothing is stored then).
    pub fn resource<T: Any>(
        &self,
        make: impl FnOnce() -> Result<Rc<T>, Failure>,
    ) -> Result<Rc<T>, Failure> {
        let id = TypeId::of::<T>();
        let found = self
            .resources
            .borrow()
            .iter()
            .find(|(t, _)| *t == id)
            .map(|(_, r)| r.clone());
        if let Some(r) = found {
            return r
                .downcast::<T>()
                .map_err(|_| Failure::msg("internal: a resource of the wrong type"));
        }
        let made = make()?;
        self.resources
            .borrow_mut()
            .push((id, made.clone() as Rc<dyn Any>));
        Ok(made)
    }

    /// Registers an output whose buffer [`flush_outputs`](Self::flush_outputs) empties
    /// (a feed registers each of its files).
    pub fn register_output(&self, output: Weak<dyn OutputBuffer>) {
        self.outputs.borrow_mut().push(output);
    }

    /// Hands every registered output's buffer to the OS: what a shared queue calls
    /// before it acknowledges requests whose results those buffers hold.
    ///
    /// # Errors
    ///
    /// An output could not be written; the others were still flushed. The caller must
    /// not acknowledge then (the requests are fetched again, nothing is lost).
    pub fn flush_outputs(&self) -> Result<(), Failure> {
        let outputs: Vec<Rc<dyn OutputBuffer>> = {
            let mut list = self.outputs.borrow_mut();
            list.retain(|w| w.strong_count() > 0);
            list.iter().filter_map(Weak::upgrade).collect()
        };
        let mut first_error = None;
        for o in outputs {
            if let Err(e) = o.flush_output() {
                log::error!("Cannot write {}: {e}", o.output_name());
                first_error.get_or_insert_with(|| {
                    Failure::msg(format!("cannot write {}: {e}", o.output_name()))
                });
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Work the close waits for: a `spider_closed` handler that starts something
    /// (a feed's upload) hands its Deferred here, and the engine dumps the stats and
    /// stops only when every such Deferred has fired (Scrapy's
    /// `send_catch_log_deferred` for `spider_closed`).
    pub fn wait_before_close(&self, d: Deferred<()>) {
        let mut waits = self.close_waits.borrow_mut();
        waits.retain(|w| !w.is_called());
        waits.push(d);
    }

    /// Takes the Deferreds handed to [`wait_before_close`](Self::wait_before_close).
    pub(crate) fn take_close_waits(&self) -> Vec<Deferred<()>> {
        std::mem::take(&mut *self.close_waits.borrow_mut())
    }

    /// The JOBDIR job, when the crawl has one.
    pub fn job(&self) -> Option<&Rc<Job>> {
        self.job.as_ref()
    }

    /// The spider's state (Scrapy's `spider.state`): kept in the JOBDIR and restored
    /// on resume when there is one, in memory otherwise.
    pub fn spider_state(&self) -> &Rc<SpiderState> {
        &self.spider_state
    }

    /// The clock every timer of this crawl runs on.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The reactor, when the crawl does real I/O.
    pub fn reactor(&self) -> Option<&ReactorHandle> {
        self.reactor.as_ref()
    }

    /// The spider's name.
    pub fn spider_name(&self) -> &str {
        &self.spider_name
    }

    /// The spider's allowed domains.
    pub fn allowed_domains(&self) -> &[String] {
        &self.allowed_domains
    }

    /// The spider's `handle_httpstatus_list` attribute (Scrapy reads it from the spider;
    /// the crawler copies it here from [`Spider::handle_httpstatus_list`](crate::crawl::Spider::handle_httpstatus_list)).
    pub fn spider_handle_httpstatus_list(&self) -> Option<Vec<u16>> {
        self.handle_httpstatus_list.borrow().clone()
    }

    /// Sets the spider's `handle_httpstatus_list` attribute.
    pub fn set_spider_handle_httpstatus_list(&self, codes: Option<Vec<u16>>) {
        *self.handle_httpstatus_list.borrow_mut() = codes;
    }

    /// The engine, while it runs.
    pub fn engine(&self) -> Option<Rc<dyn EngineOps>> {
        self.engine.get()
    }

    /// The engine handle (the wiring sets it).
    pub fn engine_handle(&self) -> &EngineHandle {
        &self.engine
    }

    /// Closes the spider through the engine, if it runs (a no-op otherwise).
    pub fn close_spider(&self, reason: &str) {
        if let Some(e) = self.engine() {
            let _ = e.close_spider(reason);
        }
    }

    /// The reactor, or an error naming what needs it.
    ///
    /// # Errors
    ///
    /// The crawl runs without a reactor (a test with a scripted handler).
    pub fn require_reactor(&self, what: &str) -> Result<&ReactorHandle, Failure> {
        self.reactor
            .as_ref()
            .ok_or_else(|| Failure::msg(format!("{what} needs a reactor")))
    }
}

impl fmt::Debug for CrawlContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CrawlContext")
            .field("spider", &self.spider_name)
            .field("engine", &self.engine)
            .finish()
    }
}
