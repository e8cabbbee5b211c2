//! The scheduler interface ([`Scheduler`], Scrapy's `BaseScheduler`) and the default
//! scheduler: dupefilter first, then priority queues of memory queues.
//!
//! Priority queues (`SCHEDULER_PRIORITY_QUEUE`):
//! * `trawl.ScrapyPriorityQueue`: one queue per priority, highest priority first;
//! * `trawl.DownloaderAwarePriorityQueue` (Scrapy's default since 2.14): one priority
//!   queue per download slot; pops from the slot with the fewest active downloads,
//!   round-robin among ties, so one busy host cannot starve the others.
//!
//! Within a priority, requests from `start()` (meta `is_start_request`) wait in their
//! own queues (`SCHEDULER_START_MEMORY_QUEUE`, FIFO) and non-start requests pop first;
//! others use `SCHEDULER_MEMORY_QUEUE` (LIFO by default, depth-first as in Scrapy).
//!
//! Per-request delays (Scrapy #802, never merged there): a request with meta
//! `download_delay` (`Request::with_delay`) gets an absolute `not_before` time (wall
//! seconds on the crawler's clock) when it is enqueued, and waits in a [`DelayedQueue`]
//! — not in a download slot, so it holds no concurrency and blocks nothing behind it.
//! A timer wakes the engine when the earliest one is due; `has_pending_requests` stays
//! true meanwhile, so the spider does not close. The time is absolute and kept in the
//! request's meta, so it survives any queue the request is serialised into.
//!
//! The disk queue seam: `enqueue_request` tries `push_disk` before memory and
//! `next_request` pops memory before disk, as Scrapy does; the JOBDIR issue fills it in.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, HashMap, VecDeque};
use std::fmt;
use std::rc::Rc;

use super::crawler::Crawler;
use super::downloader::{SlotActivity, slot_key};
use super::dupefilter::RfpDupeFilter;
use super::request::Request;
use crate::defer::Failure;

/// The meta key of a request's relative delay in seconds (`Request::with_delay`).
pub const DOWNLOAD_DELAY_META: &str = "download_delay";

/// The meta key of a request's absolute not-before time (wall seconds).
pub const NOT_BEFORE: &str = "not_before";

/// The meta key marking requests that came from `start()`.
pub const IS_START_REQUEST: &str = "is_start_request";

/// What a scheduler must do (Scrapy's `BaseScheduler`). The engine calls these methods
/// and nothing else.
pub trait Scheduler {
    /// The spider is opening.
    ///
    /// # Errors
    ///
    /// The scheduler cannot open (a queue directory, a Redis server...); the crawl
    /// does not start.
    fn open(&mut self) -> Result<(), Failure> {
        Ok(())
    }

    /// The spider is closing with `reason`.
    ///
    /// # Errors
    ///
    /// Logged; closing goes on.
    fn close(&mut self, reason: &str) -> Result<(), Failure> {
        let _ = reason;
        Ok(())
    }

    /// Whether requests are waiting. May be true while `next_request` returns `None`
    /// (a shared queue another process is filling): the engine's 5 s heartbeat keeps
    /// asking.
    fn has_pending_requests(&self) -> bool;

    /// Takes a request; `false` means it was dropped (a duplicate), and the engine sends
    /// `request_dropped`.
    fn enqueue_request(&mut self, request: Request) -> bool;

    /// The next request to download, if one is ready.
    fn next_request(&mut self) -> Option<Request>;

    /// Requests waiting (for monitoring).
    fn len(&self) -> usize;

    /// Whether no request is waiting.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What the engine hands a scheduler factory besides the crawler.
#[derive(Clone)]
pub struct SchedulerContext {
    /// Active downloads per slot (for the downloader-aware queue).
    pub activity: Rc<SlotActivity>,
}

impl fmt::Debug for SchedulerContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SchedulerContext")
    }
}

/// A memory queue: LIFO or FIFO.
#[derive(Debug)]
struct MemQueue {
    items: VecDeque<Request>,
    lifo: bool,
}

impl MemQueue {
    fn new(lifo: bool) -> Self {
        Self {
            items: VecDeque::new(),
            lifo,
        }
    }

    fn push(&mut self, r: Request) {
        self.items.push_back(r);
    }

    fn pop(&mut self) -> Option<Request> {
        if self.lifo {
            self.items.pop_back()
        } else {
            self.items.pop_front()
        }
    }
}

/// Scrapy's `ScrapyPriorityQueue`: queues by priority, highest first; at one priority,
/// non-start requests before start requests.
#[derive(Debug)]
pub struct PriorityQueue {
    queues: BTreeMap<i32, (MemQueue, MemQueue)>,
    lifo: bool,
    start_lifo: bool,
    len: usize,
}

impl PriorityQueue {
    fn new(lifo: bool, start_lifo: bool) -> Self {
        Self {
            queues: BTreeMap::new(),
            lifo,
            start_lifo,
            len: 0,
        }
    }

    fn push(&mut self, r: Request) {
        let (lifo, start_lifo) = (self.lifo, self.start_lifo);
        let entry = self
            .queues
            .entry(r.priority())
            .or_insert_with(|| (MemQueue::new(lifo), MemQueue::new(start_lifo)));
        if r.meta().get_bool(IS_START_REQUEST) {
            entry.1.push(r);
        } else {
            entry.0.push(r);
        }
        self.len += 1;
    }

    fn pop(&mut self) -> Option<Request> {
        let (&prio, entry) = self.queues.iter_mut().next_back()?;
        let r = entry.0.pop().or_else(|| entry.1.pop());
        if entry.0.items.is_empty() && entry.1.items.is_empty() {
            self.queues.remove(&prio);
        }
        if r.is_some() {
            self.len -= 1;
        }
        r
    }

    fn len(&self) -> usize {
        self.len
    }
}

/// Scrapy's `DownloaderAwarePriorityQueue`.
#[derive(Debug)]
struct DownloaderAwareQueue {
    slots: HashMap<String, PriorityQueue>,
    /// Slots in round-robin order.
    order: VecDeque<String>,
    activity: Rc<SlotActivity>,
    lifo: bool,
    start_lifo: bool,
    len: usize,
}

impl DownloaderAwareQueue {
    fn push(&mut self, r: Request) {
        let key = slot_key(&r);
        let (lifo, start_lifo) = (self.lifo, self.start_lifo);
        let q = self.slots.entry(key.clone()).or_insert_with(|| {
            self.order.push_back(key.clone());
            PriorityQueue::new(lifo, start_lifo)
        });
        q.push(r);
        self.len += 1;
    }

    fn pop(&mut self) -> Option<Request> {
        // The slot with the fewest active downloads; ties go round-robin.
        let mut best: Option<(usize, usize)> = None;
        for (pos, key) in self.order.iter().enumerate() {
            let active = self.activity.active(key);
            if best.is_none_or(|(a, _)| active < a) {
                best = Some((active, pos));
            }
        }
        let (_, pos) = best?;
        let key = self.order.remove(pos)?;
        let q = self.slots.get_mut(&key)?;
        let r = q.pop();
        if q.len() == 0 {
            self.slots.remove(&key);
        } else {
            self.order.push_back(key);
        }
        if r.is_some() {
            self.len -= 1;
        }
        r
    }
}

#[derive(Debug)]
enum Queues {
    Plain(PriorityQueue),
    DownloaderAware(DownloaderAwareQueue),
}

impl Queues {
    fn push(&mut self, r: Request) {
        match self {
            Self::Plain(q) => q.push(r),
            Self::DownloaderAware(q) => q.push(r),
        }
    }

    fn pop(&mut self) -> Option<Request> {
        match self {
            Self::Plain(q) => q.pop(),
            Self::DownloaderAware(q) => q.pop(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Self::Plain(q) => q.len(),
            Self::DownloaderAware(q) => q.len,
        }
    }
}

struct Delayed {
    at: f64,
    seq: u64,
    request: Request,
}

impl PartialEq for Delayed {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Delayed {}

impl PartialOrd for Delayed {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Delayed {
    // A min-heap on (at, seq) through BinaryHeap's max-heap.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .at
            .total_cmp(&self.at)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// Requests waiting for their not-before time, earliest first (ties in arrival order),
/// with the timer that wakes the engine for the earliest. Shared by every scheduler
/// that honours per-request delays.
#[derive(Default)]
pub struct DelayedQueue {
    heap: BinaryHeap<Delayed>,
    seq: u64,
    timer: Option<(f64, crate::reactor::DelayedCall)>,
}

impl fmt::Debug for DelayedQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayedQueue")
            .field("len", &self.heap.len())
            .field("next", &self.heap.peek().map(|d| d.at))
            .finish()
    }
}

impl DelayedQueue {
    /// The not-before time of `request` at wall time `now`: meta `not_before`, else
    /// `now + download_delay` (then written to `not_before`), else `None`.
    pub fn not_before(request: &mut Request, now: f64) -> Option<f64> {
        if let Some(at) = request.meta().get_f64(NOT_BEFORE) {
            return Some(at);
        }
        let delay = request.meta().get_f64(DOWNLOAD_DELAY_META)?;
        if !(delay > 0.0 && delay.is_finite()) {
            return None;
        }
        let at = now + delay;
        request.meta_mut().insert_static(NOT_BEFORE, at);
        Some(at)
    }

    /// Holds `request` until `at`.
    pub fn push(&mut self, at: f64, request: Request) {
        self.seq += 1;
        self.heap.push(Delayed {
            at,
            seq: self.seq,
            request,
        });
    }

    /// The earliest request whose time has come by `now`.
    pub fn pop_due(&mut self, now: f64) -> Option<Request> {
        if self.heap.peek()?.at <= now {
            self.heap.pop().map(|d| d.request)
        } else {
            None
        }
    }

    /// Requests waiting.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether none is waiting.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Arms (or re-arms earlier) the wake-up timer for the earliest request: at that
    /// time `wake` runs (the engine's `nextcall.schedule`).
    pub fn arm(&mut self, clock: &crate::reactor::Clock, wake: impl FnOnce() + 'static) {
        let Some(next) = self.heap.peek().map(|d| d.at) else {
            if let Some((_, call)) = self.timer.take() {
                let _ = call.cancel();
            }
            return;
        };
        if let Some((at, call)) = &self.timer {
            if call.active() && *at <= next {
                return;
            }
            let _ = call.cancel();
        }
        let delay = (next - clock.wall_seconds()).max(0.0);
        self.timer = Some((next, clock.call_later(delay, wake)));
    }

    /// Cancels the timer (the scheduler is closing).
    pub fn close(&mut self) {
        if let Some((_, call)) = self.timer.take() {
            let _ = call.cancel();
        }
    }
}

/// The default scheduler (Scrapy's `scrapy.core.scheduler.Scheduler`), memory queues.
pub struct DefaultScheduler {
    crawler: std::rc::Weak<Crawler>,
    dupefilter: RfpDupeFilter,
    mqs: Queues,
    delayed: DelayedQueue,
    debug: bool,
}

fn is_lifo(name: &str) -> Result<bool, Failure> {
    match super::settings::normalize_component(name).as_str() {
        "trawl.LifoMemoryQueue" => Ok(true),
        "trawl.FifoMemoryQueue" => Ok(false),
        other => Err(Failure::msg(format!(
            "unknown memory queue {other:?} (LifoMemoryQueue or FifoMemoryQueue)"
        ))),
    }
}

impl DefaultScheduler {
    /// Builds the scheduler from settings.
    ///
    /// # Errors
    ///
    /// Unknown queue classes or invalid settings.
    pub fn from_crawler(crawler: &Rc<Crawler>, ctx: SchedulerContext) -> Result<Self, Failure> {
        let s = &crawler.settings;
        let lifo = is_lifo(&s.get_str("SCHEDULER_MEMORY_QUEUE")?.unwrap_or_default())?;
        let start_lifo = is_lifo(
            &s.get_str("SCHEDULER_START_MEMORY_QUEUE")?
                .unwrap_or_default(),
        )?;
        let pq = s.get_str("SCHEDULER_PRIORITY_QUEUE")?.unwrap_or_default();
        let mqs = match super::settings::normalize_component(&pq).as_str() {
            "trawl.ScrapyPriorityQueue" => Queues::Plain(PriorityQueue::new(lifo, start_lifo)),
            "trawl.DownloaderAwarePriorityQueue" => Queues::DownloaderAware(DownloaderAwareQueue {
                slots: HashMap::new(),
                order: VecDeque::new(),
                activity: ctx.activity,
                lifo,
                start_lifo,
                len: 0,
            }),
            other => {
                return Err(Failure::msg(format!(
                    "unknown SCHEDULER_PRIORITY_QUEUE {other:?}"
                )));
            }
        };
        Ok(Self {
            crawler: Rc::downgrade(crawler),
            dupefilter: RfpDupeFilter::from_settings(s)?,
            mqs,
            delayed: DelayedQueue::default(),
            debug: s.get_bool("SCHEDULER_DEBUG")?,
        })
    }

    /// The dupefilter.
    pub fn dupefilter(&self) -> &RfpDupeFilter {
        &self.dupefilter
    }

    fn inc(&self, key: &str) {
        if let Some(c) = self.crawler.upgrade() {
            c.stats.inc(key);
        }
    }

    fn wall_now(&self) -> f64 {
        self.crawler
            .upgrade()
            .map_or(0.0, |c| c.clock().wall_seconds())
    }

    fn arm_delayed(&mut self) {
        let Some(c) = self.crawler.upgrade() else {
            return;
        };
        let weak = self.crawler.clone();
        self.delayed.arm(c.clock(), move || {
            if let Some(slot) = weak
                .upgrade()
                .and_then(|c| c.engine())
                .and_then(|e| e.slot())
            {
                slot.nextcall().schedule(0.0);
            }
        });
    }

    /// Requests waiting for their not-before time.
    pub fn delayed_len(&self) -> usize {
        self.delayed.len()
    }
}

impl Scheduler for DefaultScheduler {
    fn close(&mut self, reason: &str) -> Result<(), Failure> {
        self.dupefilter.close(reason);
        self.delayed.close();
        Ok(())
    }

    fn has_pending_requests(&self) -> bool {
        self.mqs.len() > 0 || !self.delayed.is_empty()
    }

    fn enqueue_request(&mut self, request: Request) -> bool {
        if !request.dont_filter() && self.dupefilter.request_seen(&request) {
            if let Some(c) = self.crawler.upgrade() {
                self.dupefilter.log(&request, &c.stats);
            }
            return false;
        }
        let mut request = request;
        // It may wait long: keep only what it needs.
        request.shrink_to_fit();
        // Only requests that ask for a delay pay for reading the clock.
        let delayed = !request.meta().is_empty()
            && (request.meta().contains_key(NOT_BEFORE)
                || request.meta().contains_key(DOWNLOAD_DELAY_META));
        let now = if delayed { self.wall_now() } else { 0.0 };
        if delayed
            && let Some(at) = DelayedQueue::not_before(&mut request, now)
            && at > now
        {
            if self.debug {
                log::debug!("Scheduler: {request} waits {:.3} s", at - now);
            }
            self.delayed.push(at, request);
            self.arm_delayed();
            self.inc("scheduler/enqueued/delayed");
            self.inc("scheduler/enqueued");
            return true;
        }
        if self.debug {
            log::debug!("Scheduler: enqueued {request} in memory");
        }
        self.mqs.push(request);
        self.inc("scheduler/enqueued/memory");
        self.inc("scheduler/enqueued");
        true
    }

    fn next_request(&mut self) -> Option<Request> {
        if !self.delayed.is_empty() {
            let now = self.wall_now();
            let mut moved = false;
            while let Some(r) = self.delayed.pop_due(now) {
                self.mqs.push(r);
                moved = true;
            }
            if moved {
                self.arm_delayed();
            }
        }
        let r = self.mqs.pop()?;
        self.inc("scheduler/dequeued/memory");
        self.inc("scheduler/dequeued");
        Some(r)
    }

    fn len(&self) -> usize {
        self.mqs.len() + self.delayed.len()
    }
}

impl fmt::Debug for DefaultScheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DefaultScheduler")
            .field("pending", &self.mqs.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(url: &str, prio: i32) -> Request {
        Request::get(url).unwrap().with_priority(prio)
    }

    #[test]
    fn priority_order_lifo_and_start_queues() {
        let mut q = PriorityQueue::new(true, false);
        q.push(req("http://a/1", 0));
        q.push(req("http://a/2", 0));
        q.push(req("http://a/hi", 5));
        q.push(req("http://a/s1", 0).with_meta(IS_START_REQUEST, true));
        q.push(req("http://a/s2", 0).with_meta(IS_START_REQUEST, true));
        let order: Vec<String> = std::iter::from_fn(|| q.pop())
            .map(|r| r.url().path().to_owned())
            .collect();
        assert_eq!(order, ["/hi", "/2", "/1", "/s1", "/s2"]);
    }

    #[test]
    fn downloader_aware_prefers_idle_slots_round_robin() {
        let activity = Rc::new(SlotActivity::default());
        let mut q = DownloaderAwareQueue {
            slots: HashMap::new(),
            order: VecDeque::new(),
            activity: activity.clone(),
            lifo: false,
            start_lifo: false,
            len: 0,
        };
        for host in ["a", "b", "c"] {
            for i in 0..2 {
                q.push(req(&format!("http://{host}/{i}"), 0));
            }
        }
        activity.add("a", 3);
        let hosts: Vec<String> = (0..4)
            .filter_map(|_| q.pop())
            .map(|r| r.url().host_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            hosts,
            ["b", "c", "b", "c"],
            "busy slot a waits, b and c alternate"
        );
        assert_eq!(q.pop().unwrap().url().host_str(), Some("a"));
    }
}
