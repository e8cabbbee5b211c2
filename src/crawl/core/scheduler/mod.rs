//! The scheduler contract ([`Scheduler`], Scrapy's `BaseScheduler`, asynchronous where
//! it must be) and the default scheduler: the dupefilter first, then the disk queues
//! (JOBDIR) or the memory priority queues.
//!
//! # The contract
//!
//! The engine calls `open`, `enqueue_request`, `next_request`, `has_pending_requests`,
//! `len` and `close`, and nothing else, and never while it holds a borrow of anything:
//! a scheduler may call back into the engine (`crawl` from a dupefilter) and loses
//! nothing (the engine queues re-entrant requests and hands them over when the outer
//! call returns).
//!
//! * `open` / `close` return a Deferred: a scheduler may connect to Redis or fsync a
//!   journal first. The engine starts after `open` fires and sends `spider_closed`
//!   after `close` fires.
//! * `enqueue_request` answers [`Enqueued::Accepted`] or [`Enqueued::Dropped`] at once
//!   when the answer is local (no Deferred is allocated per request on that path), or
//!   [`Enqueued::Later`] with a `Deferred<bool>` when it is not (a Redis `SADD`).
//! * `next_request` answers [`NextRequest::Ready`], [`NextRequest::Empty`] (the engine
//!   sends `scheduler_empty`), or [`NextRequest::Pending`]: "nothing now; I will wake
//!   you" — the scheduler calls [`Waker::wake`] (from [`SchedulerContext`]) when a
//!   request arrives, e.g. when a background prefetch from Redis completes. The 5 s
//!   heartbeat remains a safety net, not the mechanism.
//!
//! # The default scheduler
//!
//! Priority queues (`SCHEDULER_PRIORITY_QUEUE`, see [`queues`]) over memory queues
//! (`SCHEDULER_MEMORY_QUEUE`, LIFO by default; requests from `start()` in
//! `SCHEDULER_START_MEMORY_QUEUE`, FIFO) — and, with `JOBDIR`, over disk queues
//! (`SCHEDULER_DISK_QUEUE`): `enqueue_request` tries the disk queue before memory and
//! `next_request` pops memory before disk, as Scrapy does. The dupefilter is any
//! [`DupeFilter`] (`DUPEFILTER_CLASS`).
//!
//! Per-request delays (Scrapy #802, never merged there): a request with meta
//! `download_delay` (`Request::with_delay`) gets an absolute `not_before` time (wall
//! seconds on the crawl's clock) when it is enqueued, and waits in a [`DelayedQueue`]
//! — not in a download slot, so it holds no concurrency and blocks nothing behind it.
//! A timer wakes the engine when the earliest one is due; `has_pending_requests` stays
//! true meanwhile, so the spider does not close. The time is absolute and kept in the
//! request's meta, so it survives any queue the request is serialised into.

mod delayed;
pub mod diskqueue;
pub mod memqueue;
pub mod pqueues;
pub mod queues;

use std::cell::RefCell;
use std::fmt;
use std::rc::{Rc, Weak};

pub use delayed::DelayedQueue;
pub use queues::{QueueFactory, QueueKey, RequestQueue};

use crate::crawl::base::slots::SlotActivity;
use crate::crawl::context::CrawlContext;
use crate::crawl::core::dupefilter::{DupeFilter, Seen};
use crate::crawl::http::request::Request;
use crate::crawl::http::request::keys;
use crate::defer::{Deferred, Failure};

/// A scheduler's answer to `enqueue_request`.
#[derive(Debug)]
pub enum Enqueued {
    /// Stored.
    Accepted,
    /// Refused (a duplicate): the engine sends `request_dropped`.
    Dropped,
    /// The answer comes later: `true` = stored, `false` = dropped.
    Later(Deferred<bool>),
}

/// A scheduler's answer to `next_request`.
#[derive(Debug)]
pub enum NextRequest {
    /// Download this.
    Ready(Request),
    /// Nothing is queued (the engine sends `scheduler_empty`).
    Empty,
    /// Nothing now; the scheduler will [`wake`](Waker::wake) the engine when a request
    /// is ready.
    Pending,
}

/// What a scheduler must do (Scrapy's `BaseScheduler`). The engine calls these methods
/// and nothing else.
pub trait Scheduler {
    /// The spider is opening; the crawl starts when the Deferred fires (a failure
    /// stops it before it starts).
    fn open(&mut self) -> Deferred<()> {
        crate::defer::succeed(())
    }

    /// The spider is closing with `reason`; `spider_closed` is sent when the Deferred
    /// fires (a failure is logged and closing goes on).
    fn close(&mut self, reason: &str) -> Deferred<()> {
        let _ = reason;
        crate::defer::succeed(())
    }

    /// Whether requests are waiting. May be true while `next_request` answers
    /// `Pending` (a shared queue another process is filling).
    fn has_pending_requests(&self) -> bool;

    /// Takes a request.
    fn enqueue_request(&mut self, request: Request) -> Enqueued;

    /// A hint: `requests` are about to be enqueued, in this order (a run of requests
    /// from one callback's output). The default scheduler passes it to its dupefilter,
    /// which fingerprints them and starts loading their seen-set slots together. What
    /// [`enqueue_request`](Self::enqueue_request) does does not change.
    fn prefetch(&mut self, requests: &[Request]) {
        let _ = requests;
    }

    /// The next request to download.
    fn next_request(&mut self) -> NextRequest;

    /// Requests waiting (for monitoring).
    fn len(&self) -> usize;

    /// Whether no request is waiting.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether [`request_finished`](Self::request_finished) should be called (the
    /// engine keeps a copy of each request only then).
    fn tracks_requests(&self) -> bool {
        false
    }

    /// A request this scheduler handed out is finished: its response (or failure) and
    /// every output of its callback have been processed — requests scheduled, items
    /// through the pipelines. A JOBDIR marks it DONE; a shared queue acknowledges its
    /// lease.
    fn request_finished(&mut self, request: &Request) {
        let _ = request;
    }
}

/// Schedules an engine pass: what a scheduler calls when a request it answered
/// `Pending` (or `Later`) for becomes ready.
#[derive(Clone)]
pub struct Waker(Rc<dyn Fn()>);

impl Waker {
    /// A waker running `f`.
    pub fn new(f: impl Fn() + 'static) -> Self {
        Self(Rc::new(f))
    }

    /// Asks the engine for a scheduling pass (coalesced: cheap to call often).
    pub fn wake(&self) {
        (self.0)();
    }
}

impl fmt::Debug for Waker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Waker")
    }
}

/// Builds the dupefilter named by `DUPEFILTER_CLASS`.
pub type DupeFilterBuilder = Rc<dyn Fn() -> Result<Box<dyn DupeFilter>, Failure>>;

/// What the engine hands a scheduler factory besides the crawl context.
#[derive(Clone)]
pub struct SchedulerContext {
    /// Active downloads per slot (for the downloader-aware queue).
    pub activity: Rc<SlotActivity>,
    /// Wakes the engine for a scheduling pass.
    pub wake: Waker,
    /// Builds the dupefilter `DUPEFILTER_CLASS` names.
    pub dupefilter: DupeFilterBuilder,
}

impl fmt::Debug for SchedulerContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SchedulerContext")
    }
}

/// The queues of the default scheduler, shared with the callbacks of a dupefilter
/// answering later.
struct Queues {
    mqs: Box<dyn RequestQueue>,
    dqs: Option<Box<dyn RequestQueue>>,
    delayed: DelayedQueue,
}

/// The default scheduler (Scrapy's `scrapy.core.scheduler.Scheduler`).
pub struct DefaultScheduler {
    ctx: Weak<CrawlContext>,
    job: Option<Rc<crate::crawl::jobdir::Job>>,
    dupefilter: Box<dyn DupeFilter>,
    queues: Rc<RefCell<Queues>>,
    wake: Waker,
    debug: bool,
}

impl DefaultScheduler {
    /// Builds the scheduler (and its dupefilter) from settings.
    ///
    /// # Errors
    ///
    /// Unknown queue or dupefilter classes, or invalid settings.
    pub fn from_context(ctx: &Rc<CrawlContext>, sctx: SchedulerContext) -> Result<Self, Failure> {
        let s = &ctx.settings;
        let lifo = queues::memory_queue_is_lifo(
            &s.get_str("SCHEDULER_MEMORY_QUEUE")?.unwrap_or_default(),
        )?;
        let start_lifo = queues::memory_queue_is_lifo(
            &s.get_str("SCHEDULER_START_MEMORY_QUEUE")?
                .unwrap_or_default(),
        )?;
        let pq = s.get_str("SCHEDULER_PRIORITY_QUEUE")?.unwrap_or_default();
        let mqs = pqueues::priority_queue(
            &pq,
            memqueue::memory_queues(lifo, start_lifo),
            sctx.activity.clone(),
        )?;
        let dupefilter = (sctx.dupefilter)()?;
        let job = ctx.job().cloned();
        let dqs = match &job {
            Some(job) => {
                let aware = match crate::crawl::base::settings::normalize_component(&pq).as_str() {
                    "trawl.DownloaderAwarePriorityQueue" => Some(sctx.activity.clone()),
                    _ => None,
                };
                let mut q = diskqueue::JobQueue::new(
                    job.clone(),
                    queues::disk_queue_is_lifo(
                        &s.get_str("SCHEDULER_DISK_QUEUE")?.unwrap_or_default(),
                    )?,
                    queues::disk_queue_is_lifo(
                        &s.get_str("SCHEDULER_START_DISK_QUEUE")?.unwrap_or_default(),
                    )?,
                    aware,
                );
                if let Some(rec) = job.take_recovered() {
                    q.restore(&rec.pending, &rec.slots)?;
                }
                Some(Box::new(q) as Box<dyn RequestQueue>)
            }
            None => None,
        };
        Ok(Self {
            ctx: Rc::downgrade(ctx),
            job,
            dupefilter,
            queues: Rc::new(RefCell::new(Queues {
                mqs,
                dqs,
                delayed: DelayedQueue::default(),
            })),
            wake: sctx.wake,
            debug: s.get_bool("SCHEDULER_DEBUG")?,
        })
    }

    /// The dupefilter.
    pub fn dupefilter(&self) -> &dyn DupeFilter {
        &*self.dupefilter
    }

    /// Requests waiting for their not-before time.
    pub fn delayed_len(&self) -> usize {
        self.queues.borrow().delayed.len()
    }

    /// Stores an accepted request: delayed, disk, else memory. No borrow is held
    /// while anything outside the queues runs.
    fn push(
        queues: &Rc<RefCell<Queues>>,
        ctx: &Weak<CrawlContext>,
        wake: &Waker,
        debug: bool,
        mut request: Request,
    ) {
        let ctx = ctx.upgrade();
        let inc = |key: &str| {
            if let Some(c) = &ctx {
                c.stats.inc(key);
            }
        };
        // It may wait long: keep only what it needs.
        request.shrink_to_fit();
        // Only requests that ask for a delay pay for reading the clock.
        let delayed = !request.meta().is_empty()
            && (request.meta().contains_key(keys::NOT_BEFORE)
                || request.meta().contains_key(keys::DOWNLOAD_DELAY));
        if delayed {
            let now = ctx.as_ref().map_or(0.0, |c| c.clock().wall_seconds());
            if let Some(at) = DelayedQueue::not_before(&mut request, now)
                && at > now
            {
                if debug {
                    log::debug!("Scheduler: {request} waits {:.3} s", at - now);
                }
                let mut q = queues.borrow_mut();
                q.delayed.push(at, request);
                if let Some(c) = &ctx {
                    let wake = wake.clone();
                    q.delayed.arm(c.clock(), move || wake.wake());
                }
                drop(q);
                inc("scheduler/enqueued/delayed");
                inc("scheduler/enqueued");
                return;
            }
        }
        let mut q = queues.borrow_mut();
        if let Some(dqs) = q.dqs.as_mut() {
            let copy = request.clone();
            match dqs.push(request) {
                Ok(()) => {
                    drop(q);
                    if debug {
                        log::debug!("Scheduler: enqueued {copy} on disk");
                    }
                    inc("scheduler/enqueued/disk");
                    inc("scheduler/enqueued");
                    return;
                }
                Err(f) => {
                    log::error!("Unable to push {copy} to the disk queue ({f}): kept in memory");
                    inc("scheduler/unserializable");
                    request = copy;
                }
            }
        }
        if debug {
            log::debug!("Scheduler: enqueued {request} in memory");
        }
        // Memory queues do not fail.
        let _ = q.mqs.push(request);
        drop(q);
        inc("scheduler/enqueued/memory");
        inc("scheduler/enqueued");
    }
}

impl Scheduler for DefaultScheduler {
    fn open(&mut self) -> Deferred<()> {
        self.dupefilter.open()
    }

    fn close(&mut self, reason: &str) -> Deferred<()> {
        {
            let mut q = self.queues.borrow_mut();
            q.delayed.close();
            if let Err(f) = q.mqs.close() {
                log::error!("Closing the memory queues: {f}");
            }
            if let Some(dqs) = q.dqs.as_mut()
                && let Err(f) = dqs.close()
            {
                log::error!("Closing the disk queues: {f}");
            }
        }
        self.dupefilter.close(reason)
    }

    fn has_pending_requests(&self) -> bool {
        let q = self.queues.borrow();
        !q.mqs.is_empty() || q.dqs.as_ref().is_some_and(|d| !d.is_empty()) || !q.delayed.is_empty()
    }

    fn enqueue_request(&mut self, request: Request) -> Enqueued {
        if !request.dont_filter() {
            match self.dupefilter.request_seen(&request) {
                Seen::New => {}
                Seen::Duplicate => {
                    if let Some(c) = self.ctx.upgrade() {
                        self.dupefilter.log(&request, &*c.stats);
                    }
                    return Enqueued::Dropped;
                }
                Seen::Later(d) => {
                    // The dupefilter answers later: store then (its log is not
                    // reachable from here; the count is).
                    let queues = self.queues.clone();
                    let ctx = self.ctx.clone();
                    let wake = self.wake.clone();
                    let debug = self.debug;
                    return Enqueued::Later(d.then(move |seen| match seen {
                        Ok(true) => {
                            if let Some(c) = ctx.upgrade() {
                                c.stats.inc("dupefilter/filtered");
                            }
                            crate::defer::Step::Done(Ok(false))
                        }
                        Ok(false) => {
                            Self::push(&queues, &ctx, &wake, debug, request);
                            crate::defer::Step::Done(Ok(true))
                        }
                        Err(f) => crate::defer::Step::Done(Err(f)),
                    }));
                }
            }
        }
        Self::push(&self.queues, &self.ctx, &self.wake, self.debug, request);
        Enqueued::Accepted
    }

    fn prefetch(&mut self, requests: &[Request]) {
        self.dupefilter
            .prefetch(&mut requests.iter().filter(|r| !r.dont_filter()));
    }

    fn next_request(&mut self) -> NextRequest {
        let ctx = self.ctx.upgrade();
        let mut q = self.queues.borrow_mut();
        if !q.delayed.is_empty() {
            let now = ctx.as_ref().map_or(0.0, |c| c.clock().wall_seconds());
            let mut moved = false;
            while let Some(r) = q.delayed.pop_due(now) {
                let _ = q.mqs.push(r);
                moved = true;
            }
            if moved && let Some(c) = &ctx {
                let wake = self.wake.clone();
                q.delayed.arm(c.clock(), move || wake.wake());
            }
        }
        let (r, kind) = match q.mqs.pop() {
            Ok(Some(r)) => (Some(r), "memory"),
            _ => match q.dqs.as_mut().map(|d| d.pop()) {
                Some(Ok(Some(r))) => (Some(r), "disk"),
                Some(Err(f)) => {
                    drop(q);
                    log::error!("Unable to pop from the disk queue: {f}");
                    if let Some(c) = &ctx {
                        c.stats.inc("scheduler/disk_errors");
                    }
                    return NextRequest::Empty;
                }
                _ => (None, ""),
            },
        };
        let pending = !q.delayed.is_empty();
        drop(q);
        let Some(r) = r else {
            // Requests waiting for their time: the delayed queue's timer wakes us.
            return if pending {
                NextRequest::Pending
            } else {
                NextRequest::Empty
            };
        };
        if let Some(c) = &ctx {
            c.stats.inc(if kind == "disk" {
                "scheduler/dequeued/disk"
            } else {
                "scheduler/dequeued/memory"
            });
            c.stats.inc("scheduler/dequeued");
        }
        NextRequest::Ready(r)
    }

    fn len(&self) -> usize {
        let q = self.queues.borrow();
        q.mqs.len() + q.dqs.as_ref().map_or(0, |d| d.len()) + q.delayed.len()
    }

    fn tracks_requests(&self) -> bool {
        self.job.is_some()
    }

    fn request_finished(&mut self, request: &Request) {
        if let Some(job) = &self.job
            && let Some(id) = request
                .meta()
                .get(keys::JOB_ID)
                .and_then(serde_json::Value::as_u64)
        {
            job.request_done(id);
        }
    }
}

impl fmt::Debug for DefaultScheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DefaultScheduler")
            .field("pending", &self.len())
            .finish()
    }
}
