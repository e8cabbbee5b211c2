//! The scraper: feeds responses (and download failures) to the spider through the spider
//! middlewares, routes the outputs — requests back to the engine, items to the item
//! pipelines — and keeps the memory gate (Scrapy's `scrapy/core/scraper.py`).
//!
//! # The memory gate
//!
//! Each response counts `max(len(body), 1024)` bytes in `active_size` from the moment it
//! is queued until its outputs (items included) are fully processed; while
//! `active_size > SCRAPER_SLOT_MAX_ACTIVE_SIZE` (5,000,000) the engine stops starting
//! downloads. Items from one response are processed at most `CONCURRENT_ITEMS` (100) at
//! a time.
//!
//! # Waiting callbacks
//!
//! An [`Output::Later`] stops the pull: the response stays active (counted by the
//! memory gate) while its Deferred runs; what it fires with goes through the spider
//! middlewares' `process_spider_output` and is processed before the outputs after it;
//! its failure is an error raised at that point of the iteration
//! (`process_spider_exception`, then `spider_error`). Closing the spider cancels the
//! Deferreds still waiting (logged once).

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::{Rc, Weak};

use super::pipeline::ItemPipelineManager;
use super::spidermw::SpiderMiddlewareManager;
use crate::crawl::base::errors::{CloseSpider, DropItem, IgnoreRequest};
use crate::crawl::base::item::Item;
use crate::crawl::base::signals::{Signal, SignalArgs};
use crate::crawl::context::CrawlContext;
use crate::crawl::core::pipeline::ItemPipeline;
use crate::crawl::core::spidermw::SpiderMiddleware;
use crate::crawl::http::request::Request;
use crate::crawl::http::response::Response;
use crate::crawl::spiders::outputs::outputs as ready;
use crate::crawl::spiders::outputs::{CallbackResult, Later, Output, OutputStack, Outputs};
use crate::crawl::spiders::spider::SpiderCell;
use crate::defer::{CancelledError, Deferred, Failure, PanicError};

/// Bytes a response counts at least in the memory gate.
pub const MIN_RESPONSE_SIZE: usize = 1024;

type Queued = (Result<Response, Failure>, Request, Deferred<()>);

/// Where the scraper sends requests from callbacks (the engine's `crawl`).
pub type CrawlFn = Rc<dyn Fn(Request)>;

/// Where a run of requests about to be scheduled is announced (the engine passes it to
/// the scheduler's [`prefetch`](super::scheduler::Scheduler::prefetch)).
pub type PrefetchFn = Rc<dyn Fn(&[Request])>;

/// The scraper's per-spider state (Scrapy's scraper `Slot`).
pub struct ScraperSlot {
    queue: RefCell<VecDeque<Queued>>,
    active: Cell<usize>,
    active_size: Cell<usize>,
    itemproc_size: Cell<usize>,
    max_active_size: usize,
    closing: RefCell<Option<Deferred<()>>>,
    /// Callbacks' Deferreds being waited for, by wait number (cancelled at close).
    waiting: RefCell<HashMap<u64, Deferred<Outputs>>>,
    next_wait: Cell<u64>,
    /// Set when the close cancelled the waits: their `CancelledError` is not an error.
    cancelled: Cell<bool>,
}

impl ScraperSlot {
    fn new(max_active_size: usize) -> Self {
        Self {
            queue: RefCell::new(VecDeque::new()),
            active: Cell::new(0),
            active_size: Cell::new(0),
            itemproc_size: Cell::new(0),
            max_active_size,
            closing: RefCell::new(None),
            waiting: RefCell::new(HashMap::new()),
            next_wait: Cell::new(0),
            cancelled: Cell::new(false),
        }
    }

    /// Callbacks waiting on a Deferred.
    pub fn waiting(&self) -> usize {
        self.waiting.borrow().len()
    }

    /// Responses being scraped (queued or with outputs in progress).
    pub fn active(&self) -> usize {
        self.active.get()
    }

    /// Bytes counted by the memory gate.
    pub fn active_size(&self) -> usize {
        self.active_size.get()
    }

    /// `SCRAPER_SLOT_MAX_ACTIVE_SIZE`.
    pub fn max_active_size(&self) -> usize {
        self.max_active_size
    }

    /// Items in the pipelines.
    pub fn itemproc_size(&self) -> usize {
        self.itemproc_size.get()
    }

    /// Whether nothing is being scraped.
    pub fn is_idle(&self) -> bool {
        self.active.get() == 0 && self.queue.borrow().is_empty()
    }

    /// The memory gate.
    pub fn needs_backout(&self) -> bool {
        self.active_size.get() > self.max_active_size
    }

    fn size_of(result: &Result<Response, Failure>) -> usize {
        match result {
            Ok(r) => r.body().len().max(MIN_RESPONSE_SIZE),
            Err(_) => MIN_RESPONSE_SIZE,
        }
    }
}

impl fmt::Debug for ScraperSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScraperSlot")
            .field("active", &self.active.get())
            .field("active_size", &self.active_size.get())
            .field("itemproc_size", &self.itemproc_size.get())
            .finish()
    }
}

/// The scraper.
pub struct Scraper {
    ctx: Weak<CrawlContext>,
    spider: SpiderCell,
    spidermw: SpiderMiddlewareManager,
    itemproc: Rc<ItemPipelineManager>,
    concurrent_items: usize,
    max_active_size: usize,
    slot: RefCell<Option<Rc<ScraperSlot>>>,
    /// Where requests from callbacks go (the engine's `crawl`).
    crawl: RefCell<Option<CrawlFn>>,
    /// Where a run of them is announced first.
    prefetch: RefCell<Option<PrefetchFn>>,
    /// The run of requests being taken from an output (its buffer is kept).
    batch: RefCell<Vec<Request>>,
    me: Weak<Scraper>,
}

impl Scraper {
    /// Builds the scraper, spider middlewares and pipelines.
    ///
    /// # Errors
    ///
    /// Invalid settings or components.
    pub fn new(
        ctx: &Rc<CrawlContext>,
        spider: SpiderCell,
        spider_mws: Vec<(String, Rc<dyn SpiderMiddleware>)>,
        pipelines: Vec<(String, Rc<dyn ItemPipeline>)>,
    ) -> Result<Rc<Self>, Failure> {
        let s = &ctx.settings;
        Ok(Rc::new_cyclic(|me| Self {
            ctx: Rc::downgrade(ctx),
            spider,
            spidermw: SpiderMiddlewareManager::new(spider_mws),
            itemproc: ItemPipelineManager::new(pipelines),
            concurrent_items: s.get_usize("CONCURRENT_ITEMS").unwrap_or(100).max(1),
            max_active_size: s
                .get_usize("SCRAPER_SLOT_MAX_ACTIVE_SIZE")
                .unwrap_or(5_000_000),
            slot: RefCell::new(None),
            crawl: RefCell::new(None),
            prefetch: RefCell::new(None),
            batch: RefCell::new(Vec::new()),
            me: me.clone(),
        }))
    }

    /// The slot, while a spider is open.
    pub fn slot(&self) -> Option<Rc<ScraperSlot>> {
        self.slot.borrow().clone()
    }

    /// The spider middlewares.
    pub fn spidermw(&self) -> &SpiderMiddlewareManager {
        &self.spidermw
    }

    /// Opens the spider: a fresh slot, the pipelines' `open_spider`. `crawl` is where
    /// requests from callbacks go.
    ///
    /// # Errors
    ///
    /// A pipeline failed to open.
    pub fn open_spider(&self, crawl: Rc<dyn Fn(Request)>) -> Result<(), Failure> {
        *self.slot.borrow_mut() = Some(Rc::new(ScraperSlot::new(self.max_active_size)));
        *self.crawl.borrow_mut() = Some(crawl);
        self.itemproc.open_spider()
    }

    /// Sets where a run of requests from a callback's output is announced before they
    /// go to `crawl` one by one (see `pump`).
    pub fn set_prefetch(&self, prefetch: PrefetchFn) {
        *self.prefetch.borrow_mut() = Some(prefetch);
    }

    /// Closes the spider once everything in progress is scraped.
    pub fn close_spider(&self) -> Deferred<()> {
        let Some(slot) = self.slot() else {
            return crate::defer::succeed(());
        };
        let closing = Deferred::new();
        *slot.closing.borrow_mut() = Some(closing.clone());
        self.check_if_closing(&slot);
        let itemproc = self.itemproc.clone();
        let me = self.me.clone();
        closing.add_both(move |r| {
            itemproc.close_spider();
            if let Some(s) = me.upgrade() {
                s.crawl.borrow_mut().take();
            }
            r
        });
        closing
    }

    /// Cancels the Deferreds callbacks are waiting for (the spider is closing with
    /// `reason`); logs once how many. Their responses then finish as their cancelled
    /// iterations end.
    pub fn cancel_waiting(&self, reason: &str) {
        let Some(slot) = self.slot() else {
            return;
        };
        slot.cancelled.set(true);
        let waiting: Vec<Deferred<Outputs>> =
            slot.waiting.borrow_mut().drain().map(|(_, d)| d).collect();
        if waiting.is_empty() {
            return;
        }
        log::info!(
            "Cancelling {} callback(s) waiting on a Deferred: the spider is closing ({reason})",
            waiting.len()
        );
        if let Some(ctx) = self.ctx() {
            ctx.stats
                .inc_value("scraper/cancelled_waits", waiting.len() as i64);
        }
        for d in waiting {
            d.cancel();
        }
    }

    fn check_if_closing(&self, slot: &ScraperSlot) {
        if slot.is_idle() {
            let closing = slot.closing.borrow_mut().take();
            if let Some(d) = closing {
                let _ = d.callback(());
            }
        }
    }

    /// Whether nothing is being scraped.
    pub fn is_idle(&self) -> bool {
        self.slot().is_none_or(|s| s.is_idle())
    }

    /// The memory gate.
    pub fn needs_backout(&self) -> bool {
        self.slot().is_some_and(|s| s.needs_backout())
    }

    fn ctx(&self) -> Option<Rc<CrawlContext>> {
        self.ctx.upgrade()
    }

    /// Queues a download result for scraping; fires when its outputs are processed.
    pub fn enqueue_scrape(
        &self,
        result: Result<Response, Failure>,
        request: Request,
    ) -> Deferred<()> {
        let Some(slot) = self.slot() else {
            return crate::defer::fail(Failure::msg("the scraper has no open spider"));
        };
        let size = ScraperSlot::size_of(&result);
        let d = Deferred::new();
        slot.active.set(slot.active.get() + 1);
        slot.active_size.set(slot.active_size.get() + size);
        slot.queue
            .borrow_mut()
            .push_back((result, request, d.clone()));
        let me = self.me.clone();
        let s = slot.clone();
        d.add_both(move |r| {
            s.active.set(s.active.get().saturating_sub(1));
            s.active_size.set(s.active_size.get().saturating_sub(size));
            if let Some(scraper) = me.upgrade() {
                scraper.check_if_closing(&s);
                scraper.scrape_next(&s);
            }
            r
        })
        .add_errback(|f| {
            log::error!("Scraper bug processing a request:\n{}", f.describe());
            Ok(())
        });
        self.scrape_next(&slot);
        d
    }

    fn scrape_next(&self, slot: &Rc<ScraperSlot>) {
        loop {
            let next = slot.queue.borrow_mut().pop_front();
            let Some((result, request, d)) = next else {
                break;
            };
            // A panicking middleware must not leave the slot counting this response
            // forever (the spider would never be idle).
            let scraped = catch_unwind(AssertUnwindSafe(|| self.scrape(result, request)))
                .unwrap_or_else(|p| crate::defer::fail(Failure::from_panic(p.as_ref())));
            scraped.chain_deferred(&d);
        }
    }

    /// Runs the spider on one result and processes its outputs.
    fn scrape(&self, result: Result<Response, Failure>, request: Request) -> Deferred<()> {
        let Some(_crawler) = self.ctx() else {
            return crate::defer::succeed(());
        };
        let spider = self.spider.clone();
        match result {
            Ok(response) => {
                let outputs = match self.spidermw.process_input(&response) {
                    Ok(()) => call_callback(&spider, &request, &response),
                    Err(f) => self.call_errback_or_fail(&spider, &request, f).map(ready),
                };
                let outputs = match outputs {
                    Ok(o) => Ok(o),
                    Err(f) => match self.spidermw.process_exception(&response, &f) {
                        Some(o) => Ok(ready(o)),
                        None => Err(f),
                    },
                };
                match outputs {
                    Ok(outputs) => {
                        let outputs =
                            self.spidermw
                                .process_output(Some(&response), &request, outputs);
                        self.handle_output(outputs, request, Some(response))
                    }
                    Err(f) => {
                        self.handle_spider_error(&f, &request, Some(&response));
                        crate::defer::succeed(())
                    }
                }
            }
            Err(failure) => {
                if request.errback().is_none() {
                    self.log_download_error(&failure, &request);
                    return crate::defer::succeed(());
                }
                match self.call_errback_or_fail(&spider, &request, failure) {
                    Ok(outputs) => {
                        let outputs = self.spidermw.process_output(None, &request, ready(outputs));
                        self.handle_output(outputs, request, None)
                    }
                    Err(f) => {
                        self.handle_spider_error(&f, &request, None);
                        crate::defer::succeed(())
                    }
                }
            }
        }
    }

    fn call_errback_or_fail(
        &self,
        spider: &SpiderCell,
        request: &Request,
        failure: Failure,
    ) -> CallbackResult {
        let Some(name) = request.errback() else {
            return Err(failure);
        };
        let Ok(mut s) = spider.try_borrow_mut() else {
            return Err(Failure::msg("the spider is busy (re-entrant errback)"));
        };
        catch_unwind(AssertUnwindSafe(|| s.errback(name, &failure, request)))
            .unwrap_or_else(|p| Err(Failure::from_panic(p.as_ref())))
    }

    fn log_download_error(&self, failure: &Failure, request: &Request) {
        if failure.check::<IgnoreRequest>() {
            log::debug!("Ignoring {request}: {failure}");
            return;
        }
        let Some(ctx) = self.ctx() else {
            return;
        };
        let errmsg = failure.to_string();
        if let Some(line) = ctx
            .log_formatter()
            .download_error(failure, request, Some(&errmsg))
        {
            line.log(module_path!());
        }
    }

    fn handle_spider_error(
        &self,
        failure: &Failure,
        request: &Request,
        response: Option<&Response>,
    ) {
        let Some(ctx) = self.ctx() else {
            return;
        };
        if let Some(close) = failure.downcast_ref::<CloseSpider>() {
            // Scrapy's scraper: CloseSpider from a callback or errback closes the spider.
            let reason = if close.reason.is_empty() {
                "cancelled"
            } else {
                close.reason.as_str()
            };
            ctx.close_spider(reason);
            return;
        }
        // The failure follows the line, as Scrapy's traceback (`exc_info`) does.
        if let Some(mut line) = ctx.log_formatter().spider_error(failure, request, response) {
            line.message.push('\n');
            line.message.push_str(&failure.describe());
            line.log(module_path!());
        }
        let kind = failure.short_type_name();
        ctx.stats.inc("spider_exceptions/count");
        ctx.stats.inc(&format!("spider_exceptions/{kind}"));
        ctx.signals.send_catch_log(
            Signal::SpiderError,
            SignalArgs::SpiderError {
                failure,
                response,
                request: Some(request),
            },
        );
    }

    /// Pulls `outputs` lazily, as Scrapy iterates a callback's output: requests go to the
    /// engine as they come, items into the pipelines with at most `CONCURRENT_ITEMS` in
    /// flight (the iterator waits while they are full). Fires when every output is
    /// processed.
    fn handle_output(
        &self,
        outputs: Outputs,
        request: Request,
        response: Option<Response>,
    ) -> Deferred<()> {
        let run = Rc::new(OutputRun {
            outputs: RefCell::new(Some(OutputStack::new(outputs))),
            in_flight: Cell::new(0),
            pumping: Cell::new(false),
            exhausted: Cell::new(false),
            waiting: Cell::new(false),
            done: Deferred::new(),
            response,
            request,
        });
        if let Some(me) = self.me.upgrade() {
            me.pump(&run);
        }
        run.done.clone()
    }

    /// Pulls outputs while there is room for items. Re-entrant calls (a pipeline that
    /// finished synchronously) return at once: the running loop sees the room.
    fn pump(self: &Rc<Self>, run: &Rc<OutputRun>) {
        if run.pumping.replace(true) {
            return;
        }
        let crawl = self.crawl.borrow().clone();
        // Consecutive requests are taken as a run of at most 2 × CONCURRENT_ITEMS + 1,
        // announced together, then scheduled one by one in order. Scrapy's asyncio
        // path reads as far ahead: its scraper fills a queue of 2 × CONCURRENT_ITEMS
        // from the output, and holds one more, before its workers schedule the first
        // (`_parallel_asyncio`; recorded in tests/data/scraper/output_runs.json).
        let mut batch = std::mem::take(&mut *self.batch.borrow_mut());
        let batch_max = 2 * self.concurrent_items + 1;
        while !run.exhausted.get()
            && !run.waiting.get()
            && run.in_flight.get() < self.concurrent_items
        {
            let Some(mut iter) = run.outputs.borrow_mut().take() else {
                run.exhausted.set(true);
                break;
            };
            // No borrow is held while the spider's or a middleware's iterator runs.
            let next = catch_unwind(AssertUnwindSafe(|| iter.next()))
                .unwrap_or_else(|p| Some(Err(Failure::from_panic(p.as_ref()))));
            if let Some(Ok(Output::Request(r))) = next {
                *run.outputs.borrow_mut() = Some(iter);
                batch.push(r);
                if batch.len() >= batch_max {
                    self.schedule_run(crawl.as_ref(), &mut batch, &run.request);
                }
                continue;
            }
            // Anything else comes after the requests before it.
            self.schedule_run(crawl.as_ref(), &mut batch, &run.request);
            match next {
                None => run.exhausted.set(true),
                // Taken into the run above.
                Some(Ok(Output::Request(_))) => {}
                Some(Ok(Output::Item(item))) if self.itemproc.is_empty() => {
                    // No pipelines: Scrapy's chain would fire at once (`itemproc_size`
                    // up and down again before the signal); finish it here, without
                    // building the Deferreds.
                    *run.outputs.borrow_mut() = Some(iter);
                    self.itemproc_finished(Ok(item), None, run.response.as_ref());
                }
                Some(Ok(Output::Item(item))) => {
                    *run.outputs.borrow_mut() = Some(iter);
                    run.in_flight.set(run.in_flight.get() + 1);
                    let d = self.start_itemproc(item, run.response.clone());
                    let (me, r) = (self.clone(), run.clone());
                    d.add_both(move |_| {
                        r.in_flight.set(r.in_flight.get() - 1);
                        me.pump(&r);
                        Ok(())
                    });
                }
                Some(Ok(Output::Later(later))) => {
                    *run.outputs.borrow_mut() = Some(iter);
                    self.wait_for(run, later);
                }
                Some(Err(f)) => {
                    drop(iter);
                    self.iteration_failed(run, &f);
                }
            }
        }
        self.schedule_run(crawl.as_ref(), &mut batch, &run.request);
        *self.batch.borrow_mut() = batch;
        run.pumping.set(false);
        if run.exhausted.get()
            && run.in_flight.get() == 0
            && !run.waiting.get()
            && !run.done.is_called()
        {
            let _ = run.done.callback(());
        }
    }

    /// An exception mid-iteration: the outputs so far stand, the rest of the iteration
    /// is abandoned, and `process_spider_exception` may replace it (Scrapy's spider
    /// middleware chain).
    fn iteration_failed(&self, run: &OutputRun, f: &Failure) {
        let handled = run
            .response
            .as_ref()
            .and_then(|resp| self.spidermw.process_exception(resp, f));
        match handled {
            Some(outputs) => *run.outputs.borrow_mut() = Some(OutputStack::new(ready(outputs))),
            None => {
                run.outputs.borrow_mut().take();
                self.handle_spider_error(f, &run.request, run.response.as_ref());
                run.exhausted.set(true);
            }
        }
    }

    /// Stops pulling `run` until `later` fires: what it fires with goes through the
    /// spider middlewares and comes first; a failure is an exception raised here; a
    /// cancellation by the close ends the iteration quietly.
    fn wait_for(self: &Rc<Self>, run: &Rc<OutputRun>, later: Later) {
        let Some(slot) = self.slot() else {
            run.outputs.borrow_mut().take();
            run.exhausted.set(true);
            return;
        };
        let id = slot.next_wait.get();
        slot.next_wait.set(id + 1);
        let d = later.0;
        if slot.cancelled.get() {
            // Closing already: nothing new is waited for.
            d.cancel();
        } else {
            slot.waiting.borrow_mut().insert(id, d.clone());
        }
        run.waiting.set(true);
        let (me, r, s) = (self.me.clone(), run.clone(), slot);
        let _ = d.then(move |result| {
            s.waiting.borrow_mut().remove(&id);
            r.waiting.set(false);
            let Some(scraper) = me.upgrade() else {
                return Ok(());
            };
            match result {
                Ok(outputs) => {
                    let outputs =
                        scraper
                            .spidermw
                            .process_output(r.response.as_ref(), &r.request, outputs);
                    match r.outputs.borrow_mut().as_mut() {
                        Some(stack) => stack.push_front(outputs),
                        None => {
                            // Cannot happen: the run waits with its iteration kept.
                            log::debug!("outputs after an abandoned iteration dropped");
                        }
                    }
                }
                Err(f) if f.check::<CancelledError>() && s.cancelled.get() => {
                    r.outputs.borrow_mut().take();
                    r.exhausted.set(true);
                }
                Err(f) => scraper.iteration_failed(&r, &f),
            }
            scraper.pump(&r);
            Ok(())
        });
    }

    /// Schedules a run of requests from `from`'s output, in order, after announcing a
    /// run of more than one (no borrow is held while the engine runs).
    fn schedule_run(&self, crawl: Option<&CrawlFn>, batch: &mut Vec<Request>, from: &Request) {
        if batch.is_empty() {
            return;
        }
        let Some(c) = crawl else {
            for r in batch.drain(..) {
                log::error!("Dropping {r} from {from}: the spider is closed");
            }
            return;
        };
        if batch.len() > 1 {
            let prefetch = self.prefetch.borrow().clone();
            if let Some(p) = prefetch {
                p(batch);
            }
        }
        for r in batch.drain(..) {
            c(r);
        }
    }

    /// Runs one item through the pipelines and sends `item_scraped`, `item_dropped` or
    /// `item_error` (used for items from `start()` too).
    pub fn start_itemproc(&self, item: Item, response: Option<Response>) -> Deferred<()> {
        let slot = self.slot();
        if let Some(s) = &slot {
            s.itemproc_size.set(s.itemproc_size.get() + 1);
        }
        let me = self.me.clone();
        let original = if self.itemproc.is_empty() {
            None
        } else {
            Some(item.clone())
        };
        let resp = response.clone();
        self.itemproc.process_item(item, response).then(move |r| {
            if let Some(s) = &slot {
                s.itemproc_size.set(s.itemproc_size.get().saturating_sub(1));
            }
            if let Some(scraper) = me.upgrade() {
                scraper.itemproc_finished(r, original, resp.as_ref());
            }
            Ok(())
        })
    }

    /// Scrapy's `_itemproc_finished` (after `itemproc_size` is decremented):
    /// `item_scraped`, `item_dropped` or `item_error`. `original` is the item as it
    /// entered the pipelines (what a failure reports).
    fn itemproc_finished(
        &self,
        r: Result<Item, Failure>,
        original: Option<Item>,
        resp: Option<&Response>,
    ) {
        let Some(ctx) = self.ctx() else {
            return;
        };
        match r {
            Ok(item) => {
                if let Some(line) = ctx.log_formatter().scraped(&item, resp, ctx.spider_name()) {
                    line.log(module_path!());
                }
                ctx.signals.send_catch_log(
                    Signal::ItemScraped,
                    SignalArgs::Item {
                        item: &item,
                        response: resp,
                        failure: None,
                    },
                );
            }
            Err(f) => {
                let item = original.unwrap_or_default();
                if let Some(drop) = f.downcast_ref::<DropItem>() {
                    if let Some(line) =
                        ctx.log_formatter()
                            .dropped(&item, drop, resp, ctx.dropitem_level())
                    {
                        line.log(module_path!());
                    }
                    ctx.signals.send_catch_log(
                        Signal::ItemDropped,
                        SignalArgs::Item {
                            item: &item,
                            response: resp,
                            failure: Some(&f),
                        },
                    );
                } else {
                    if let Some(mut line) = ctx.log_formatter().item_error(&item, &f, resp) {
                        line.message.push('\n');
                        line.message.push_str(&f.describe());
                        line.log(module_path!());
                    }
                    ctx.signals.send_catch_log(
                        Signal::ItemError,
                        SignalArgs::Item {
                            item: &item,
                            response: resp,
                            failure: Some(&f),
                        },
                    );
                }
            }
        }
    }
}

/// One callback's outputs being processed.
struct OutputRun {
    outputs: RefCell<Option<OutputStack>>,
    in_flight: Cell<usize>,
    pumping: Cell<bool>,
    exhausted: Cell<bool>,
    /// Pulling waits for an [`Output::Later`].
    waiting: Cell<bool>,
    done: Deferred<()>,
    response: Option<Response>,
    request: Request,
}

/// Calls the request's callback (by name; `parse` by default), catching panics.
fn call_callback(
    spider: &SpiderCell,
    request: &Request,
    response: &Response,
) -> Result<Outputs, Failure> {
    let name = request.callback().unwrap_or("parse");
    let Ok(mut s) = spider.try_borrow_mut() else {
        return Err(Failure::msg("the spider is busy (re-entrant callback)"));
    };
    catch_unwind(AssertUnwindSafe(|| s.callback_outputs(name, response))).unwrap_or_else(|p| {
        Err(Failure::new(PanicError {
            message: crate::reactor::panic_message(p.as_ref()),
        }))
    })
}

impl fmt::Debug for Scraper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scraper")
            .field("slot", &self.slot())
            .finish()
    }
}
