//! [`RedisScheduler`] (`SCHEDULER = "trawl.RedisScheduler"`, alias
//! `scrapy_redis.scheduler.Scheduler`): the request queue shared by every worker.
//!
//! # Keys (all derived from `SCHEDULER_QUEUE_KEY`, `%(spider)s:requests` = `Q`)
//!
//! | key | type | holds |
//! |---|---|---|
//! | `Q` | ZSET: the priorities (score = member = −priority) that have entries | the priority queue's index (trawl's layout) |
//! | `Q:p:<score>` | LIST (`RPUSH` / pop from the head) | the entries of one priority, FIFO |
//! | `Q` | ZSET (score = −priority) of entries, or LIST (FIFO / LIFO) | the queue (scrapy-redis's layout; FIFO / LIFO queues) |
//! | `Q:meta` | HASH | `created`, `mode`, `layout`, `seq` (the FIFO sequence), `queued` (entries in the `Q:p:*` lists) |
//! | `Q:workers` | ZSET | worker id → lease deadline (server ms) |
//! | `Q:leases:<worker>` | HASH | `<pop token>` → its entries' `"<score> <entry>"` (a MessagePack array); `<pop token>:a` → the places acknowledged (`1` each) |
//! | `Q:bad` | LIST | entries that could not be decoded, `DUMP`s of wrong-typed keys |
//!
//! # The lease protocol
//!
//! A pop (the `POP` script) moves entries from the queue into the popping worker's
//! lease hash (one field per pop, `leases.rs`), in one step; a worker acknowledges a
//! request (its place marked, the pop's field deleted with the last) once its response
//! and every output of its callback are stored — the enqueue script calls, the
//! pipeline's `RPUSH`es are issued before the ack on the same connection. A heartbeat
//! every `REDIS_LEASE_TIMEOUT / 3`, and a pop once a sixth of it has passed since the
//! last, renew the worker's deadline and put back the leases of workers whose deadline
//! passed. A worker killed mid-crawl thus
//! loses nothing: what it held is fetched again by another (at most its leases are
//! fetched twice); an ack after the lease was taken back is a no-op.
//!
//! # Talking to Redis without blocking
//!
//! Enqueues and acks are batched: a shard's writes are due `REDIS_FLUSH_DELAY` (20 ms)
//! × the shard count after its last ones, then go with the next pop to that shard, or
//! alone after a grace of two pop rounds (`turns.rs`). A pop goes at once when the
//! local buffer falls below half of `REDIS_PREFETCH`, with its shard's writes when
//! they are due or the queue it pops from ran short, alone otherwise. `next_request`
//! never waits: it answers from the buffer or says `Pending` and wakes the engine when
//! the pop returns. While the queue is empty the scheduler polls on a timer (10 ms
//! doubling to 1 s), never `BRPOP`.
//! `has_pending_requests` is true until a pop issued after this worker's last write
//! saw an empty queue and no lease held by anyone, for `SCHEDULER_IDLE_BEFORE_CLOSE`
//! seconds. During an outage nothing is pulled, writes wait in the client, and the
//! crawl carries on when Redis is back; if Redis comes back without the crawl's keys,
//! the spider closes with `redis_data_lost`.

mod flush;
mod io;
mod leases;
mod open;
mod prefilter;
mod seen;
mod shards;
mod turns;

use leases::{Lease, LeaseBook};
pub use seen::{DEFAULT_CACHE as DEFAULT_DUPEFILTER_CACHE, SeenCache};
use shards::Keys;
pub use shards::{MAX_SHARDS, shard_of, tag as shard_tag};

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::{Rc, Weak};

use crate::client::redis::handle::RedisHandle;
use crate::crawl::context::CrawlContext;
use crate::crawl::dupefilter::{DupeFilter, Seen};
use crate::crawl::errors::NotConfigured;
use crate::crawl::record;
use crate::crawl::request::Request;
use crate::crawl::scheduler::{Enqueued, NextRequest, Scheduler, SchedulerContext, Waker};
use crate::crawl::settings::{Priority, Settings};
use crate::crawl::stats::StatsCollector;
use crate::defer::{Deferred, Failure};
use crate::distributed::codec::encode_compat;
use crate::distributed::dupefilter::{FilterKind, RedisDupeFilter};
use crate::distributed::shared::{
    DEFAULT_FLUSH_DELAY, DEFAULT_LEASE_TIMEOUT, SCHEDULER_QUEUE_KEY, SharedRedis, format_key,
    setting_secs, setting_str, shared_client,
};
use crate::reactor::{DelayedCall, ReactorHandle};
use crate::util::FxHashMap;

/// The meta key holding a request's lease (a number local to this worker).
pub const LEASE_META: &str = "_redis_lease";

const POLL_MIN: f64 = 0.01;
const POLL_MAX: f64 = 1.0;

/// The queue's order (`SCHEDULER_QUEUE_CLASS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueMode {
    /// `PriorityQueue`: a ZSET, highest priority first, FIFO among equals.
    Priority,
    /// `FifoQueue`: a LIST, `LPUSH` / `RPOP`.
    Fifo,
    /// `LifoQueue`: a LIST, `LPUSH` / `LPOP`.
    Lifo,
}

impl QueueMode {
    /// From a `SCHEDULER_QUEUE_CLASS` value (scrapy-redis paths, trawl names or
    /// `priority` / `fifo` / `lifo`).
    ///
    /// # Errors
    ///
    /// An unknown class.
    pub fn from_setting(name: &str) -> Result<Self, String> {
        let class = name.rsplit('.').next().unwrap_or(name).to_ascii_lowercase();
        match class.as_str() {
            "priorityqueue" | "spiderpriorityqueue" | "redispriorityqueue" | "priority" => {
                Ok(Self::Priority)
            }
            "fifoqueue" | "spiderqueue" | "redisfifoqueue" | "fifo" => Ok(Self::Fifo),
            "lifoqueue" | "spiderstack" | "redislifoqueue" | "lifo" => Ok(Self::Lifo),
            _ => Err(format!("unknown SCHEDULER_QUEUE_CLASS {name:?}")),
        }
    }

    /// The scripts' name for this queue in `layout`: a priority queue is a FIFO list
    /// per priority (`p`) in trawl's own layout, a sorted set (`z`) in scrapy-redis's.
    fn script_name(self, layout: Layout) -> &'static str {
        match (self, layout) {
            (Self::Priority, Layout::Native) => "p",
            (Self::Priority, Layout::ScrapyRedis) => "z",
            (Self::Fifo, _) => "fifo",
            (Self::Lifo, _) => "lifo",
        }
    }
}

/// How entries are written (`SCHEDULER_SERIALIZER`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// trawl's request record (with a FIFO sequence prefix in a sorted set or a single
    /// list; the default).
    Native,
    /// scrapy-redis's layout with `trawl_redis_serializer` JSON, shared with Python
    /// workers (leases hold for trawl's pops only).
    ScrapyRedis,
}

impl Layout {
    fn script_name(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::ScrapyRedis => "compat",
        }
    }
}

/// How duplicates are filtered.
enum Filter {
    /// Inside the enqueue script.
    Redis(
        FilterKind,
        Option<Rc<dyn crate::crawl::fingerprint::RequestFingerprinter>>,
    ),
    /// A local dupefilter (`DUPEFILTER_CLASS` is not a Redis one).
    Local(Box<dyn DupeFilter>),
}

struct Enqueue {
    /// `dont_filter`, fingerprint, score, payload: the script's four arguments.
    args: [Vec<u8>; 4],
    url: String,
    answer: Option<Deferred<bool>>,
    /// The fingerprint's seen-cache key (a request the shared dupefilter checks).
    seen_key: Option<u128>,
    /// The flush count when it arrived (`turns.rs`).
    epoch: u64,
}

#[derive(Debug, Clone, Copy)]
struct Remote {
    seq: u64,
    qlen: i64,
    leased: i64,
}

#[derive(Default)]
struct State {
    buffer: VecDeque<(Request, Lease)>,
    leases: FxHashMap<u64, Lease>,
    next_lease: u64,
    /// Requests since the last flush, not yet routed to their shard.
    enq: Vec<Enqueue>,
    /// Requests and acknowledgements waiting for their shard's turn (`turns.rs`).
    turns: turns::Turns<Enqueue>,
    acks: Vec<Lease>,
    /// On a cluster: acknowledgements whose outputs are answered, to go with their
    /// shard's next writes.
    ready_acks: Vec<Lease>,
    bad: Vec<(Lease, Vec<u8>)>,
    flush_timer: Option<DelayedCall>,
    /// When `flush_timer` fires (reactor seconds).
    flush_due: f64,
    pop_inflight: bool,
    pop_wanted: bool,
    flush_seq: u64,
    mutation_seq: u64,
    /// What the last pop from each shard said.
    remote: Vec<Option<Remote>>,
    /// Whether each shard's SET dupefilter holds fingerprints as 20 raw bytes (its
    /// meta hash says `fingerprints = raw`) rather than 40 hex digits.
    raw_fingerprints: Vec<bool>,
    /// The shard the next pop goes to.
    next_shard: usize,
    /// When this worker's deadline was last renewed in each shard (reactor seconds,
    /// as sent): a pop renews it again once a sixth of the lease has passed.
    renewed_at: Vec<f64>,
    /// Pops in a row that found nothing (one per shard before polling slows down).
    empty_streak: usize,
    idle_since: Option<f64>,
    poll_delay: f64,
    poll_timer: Option<DelayedCall>,
    heartbeat: Option<DelayedCall>,
    opened: bool,
    closing: bool,
    lost: bool,
    dupes_logged: bool,
    /// Fingerprints the shared dupefilter is known to hold.
    seen: SeenCache,
    /// The prefilter's state (`prefilter.rs`).
    prefilter: prefilter::PrefilterState,
    /// On a cluster: acknowledgements waiting for `barrier()`, by id.
    barrier_acks: FxHashMap<u64, Vec<Lease>>,
    barrier_seq: u64,
    /// Acknowledgements withheld because the outputs could not be written: never sent.
    withheld: Vec<Lease>,
    /// The pops this worker holds leases from, with their acknowledgements as sent.
    book: LeaseBook,
    /// The pop in flight: its shard and token.
    pop_token: Option<(usize, u64)>,
    /// Pops that got no reply (an error, the connection lost for good): their leases,
    /// if they ran, stay for `CLOSE` to put back.
    unanswered: Vec<(usize, u64)>,
}

struct Config {
    /// The queue's structure as the scripts name it (`QueueMode::script_name`); a
    /// crawl begun with the sorted-set priority queue (`z`) goes on in it.
    queue: Cell<&'static str>,
    layout: Layout,
    persist: bool,
    flush_on_start: bool,
    idle_before_close: f64,
    lease_ms: u64,
    prefetch: usize,
    /// `REDIS_FLUSH_DELAY`: how long, per shard, enqueues and acknowledgements wait
    /// for others before they are due to go with the next pop (a pop the buffer needs
    /// goes at once).
    flush_delay: f64,
    debug: bool,
    /// `REQUEST_FINGERPRINTER_CLASS` (recorded in, and checked against, the meta hash).
    fingerprinter: String,
    /// `SCHEDULER_SHARDS` when set (on a cluster; the masters' count otherwise).
    shards: Option<usize>,
}

struct Inner {
    ctx: Weak<CrawlContext>,
    stats: Rc<dyn StatsCollector>,
    shared: Rc<SharedRedis>,
    reactor: ReactorHandle,
    /// The single-server keys (on a cluster: the crawl's meta hash and the names
    /// the shards' keys are made from).
    keys: Keys,
    /// The keys of each shard: one shard, `keys` itself, on a single server.
    shards: RefCell<Rc<Vec<Keys>>>,
    config: Config,
    filter: RefCell<Filter>,
    wake: Waker,
    st: RefCell<State>,
    me: Weak<Inner>,
}

/// The shared Redis queue.
pub struct RedisScheduler {
    inner: Rc<Inner>,
}

impl std::fmt::Debug for RedisScheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisScheduler")
            .field("queue", &self.inner.keys.queue)
            .field("worker", &self.inner.shared.worker_id)
            .finish_non_exhaustive()
    }
}

fn layout_from(settings: &Settings) -> Result<Layout, Failure> {
    match settings.get_str("SCHEDULER_SERIALIZER")?.as_deref() {
        None | Some("" | "trawl.record" | "record") => Ok(Layout::Native),
        Some("trawl_redis_serializer" | "json") => Ok(Layout::ScrapyRedis),
        Some(other) if other.contains("pickle") => Err(Failure::new(NotConfigured(format!(
            "SCHEDULER_SERIALIZER {other:?}: trawl never reads or writes pickle (anyone who \
             can write to Redis could run code); use \"trawl_redis_serializer\" on the \
             Python side and here"
        )))),
        Some(other) => Err(Failure::msg(format!(
            "unknown SCHEDULER_SERIALIZER {other:?} (use the default request record or \
             \"trawl_redis_serializer\")"
        ))),
    }
}

impl RedisScheduler {
    /// The scheduler from the crawl's settings: `SCHEDULER_QUEUE_KEY`,
    /// `SCHEDULER_QUEUE_CLASS`, `SCHEDULER_SERIALIZER`, `SCHEDULER_PERSIST`,
    /// `SCHEDULER_FLUSH_ON_START`, `SCHEDULER_IDLE_BEFORE_CLOSE`,
    /// `REDIS_LEASE_TIMEOUT` (60 s), `REDIS_PREFETCH` (`CONCURRENT_REQUESTS`),
    /// `REDIS_DUPEFILTER_CACHE` (fingerprints remembered locally, 1,000,000), and the
    /// dupefilter `DUPEFILTER_CLASS` names (a Redis one unless the user chose
    /// another).
    ///
    /// # Errors
    ///
    /// A malformed setting or no reactor.
    pub fn from_context(ctx: &Rc<CrawlContext>, sctx: SchedulerContext) -> Result<Self, Failure> {
        let s = &ctx.settings;
        let spider = ctx.spider_name();
        let queue = format_key(
            &setting_str(s, "SCHEDULER_QUEUE_KEY", SCHEDULER_QUEUE_KEY)?,
            spider,
        );
        let mode = QueueMode::from_setting(&setting_str(
            s,
            "SCHEDULER_QUEUE_CLASS",
            "scrapy_redis.queue.PriorityQueue",
        )?)
        .map_err(Failure::msg)?;
        let shared = shared_client(ctx)?;
        let reactor = ctx
            .reactor()
            .cloned()
            .ok_or_else(|| Failure::new(NotConfigured("no reactor".into())))?;
        // A Redis dupefilter unless the user named another one.
        let df: Box<dyn DupeFilter> = if s.priority("DUPEFILTER_CLASS") == Some(Priority::Default) {
            Box::new(RedisDupeFilter::from_context(ctx)?)
        } else {
            (sctx.dupefilter)()?
        };
        let (filter, df_key) = match df
            .as_any()
            .and_then(|a| a.downcast_ref::<RedisDupeFilter>())
        {
            Some(r) => (
                Filter::Redis(r.kind().clone(), r.fingerprinter()),
                r.key().to_owned(),
            ),
            None => (Filter::Local(df), String::new()),
        };
        let idle = s.get_float("SCHEDULER_IDLE_BEFORE_CLOSE")?;
        if idle < 0.0 {
            return Err(Failure::msg(
                "SCHEDULER_IDLE_BEFORE_CLOSE must not be negative",
            ));
        }
        let lease = setting_secs(s, "REDIS_LEASE_TIMEOUT", DEFAULT_LEASE_TIMEOUT)?.max(1.0);
        let prefetch = if s.get("REDIS_PREFETCH").is_some() {
            s.get_usize("REDIS_PREFETCH")?
        } else {
            s.get_usize("CONCURRENT_REQUESTS")?
        }
        .max(1);
        let shards = if s.get("SCHEDULER_SHARDS").is_some() {
            let n = s.get_usize("SCHEDULER_SHARDS")?;
            if !(1..=MAX_SHARDS).contains(&n) {
                return Err(Failure::msg(format!(
                    "SCHEDULER_SHARDS must be between 1 and {MAX_SHARDS}, not {n}"
                )));
            }
            Some(n)
        } else {
            None
        };
        let seen_cap = if s.get("REDIS_DUPEFILTER_CACHE").is_some() {
            s.get_usize("REDIS_DUPEFILTER_CACHE")?
        } else {
            DEFAULT_DUPEFILTER_CACHE
        };
        let worker = shared.worker_id.clone();
        let keys = Keys {
            meta: format!("{queue}:meta"),
            workers: format!("{queue}:workers"),
            lease_prefix: format!("{queue}:leases:"),
            mine: format!("{queue}:leases:{worker}"),
            bad: format!("{queue}:bad"),
            dupefilter: df_key,
            queue,
        };
        let scripts = crate::distributed::scripts::scripts();
        for sc in [
            &scripts.open,
            &scripts.enqueue,
            &scripts.pop,
            &scripts.close,
            &scripts.reconcile,
            &scripts.open_crawl,
            &scripts.renew,
        ] {
            shared.client.load_script(sc);
        }
        let layout = layout_from(s)?;
        let config = Config {
            queue: Cell::new(mode.script_name(layout)),
            layout,
            fingerprinter: ctx.fingerprinter_name(),
            persist: s.get_bool("SCHEDULER_PERSIST")?,
            flush_on_start: s.get_bool("SCHEDULER_FLUSH_ON_START")?,
            idle_before_close: idle,
            lease_ms: (lease * 1000.0) as u64,
            prefetch,
            flush_delay: setting_secs(s, "REDIS_FLUSH_DELAY", DEFAULT_FLUSH_DELAY)?,
            debug: s.get_bool("DUPEFILTER_DEBUG")?,
            shards,
        };
        Ok(Self {
            inner: Rc::new_cyclic(|me| Inner {
                ctx: Rc::downgrade(ctx),
                stats: ctx.stats.clone(),
                shared,
                reactor,
                shards: RefCell::new(Rc::new(vec![keys.clone()])),
                keys,
                config,
                filter: RefCell::new(filter),
                wake: sctx.wake,
                st: RefCell::new(State {
                    poll_delay: POLL_MIN,
                    remote: vec![None],
                    seen: SeenCache::new(seen_cap),
                    ..State::default()
                }),
                me: me.clone(),
            }),
        })
    }

    /// The queue key.
    pub fn queue_key(&self) -> &str {
        &self.inner.keys.queue
    }

    /// This worker's id (the owner of its leases).
    pub fn worker_id(&self) -> &str {
        &self.inner.shared.worker_id
    }

    /// The queue length and whether leases are held, as of the last pop from each
    /// shard: 0 when no worker held a lease, a positive number when some did (a lower
    /// bound of their count), `-1` when the shard did not look (its queue was not
    /// empty, or this worker held leases). `None` before every shard answered a pop.
    pub fn remote_counts(&self) -> Option<(i64, i64)> {
        let st = self.inner.st.borrow();
        let mut sum = (0, 0);
        for r in &st.remote {
            let r = (*r)?;
            sum.0 += r.qlen;
            sum.1 = if sum.1 < 0 || r.leased < 0 {
                -1
            } else {
                sum.1 + r.leased
            };
        }
        Some(sum)
    }

    /// The shards' queue keys (one, the queue key itself, on a single server).
    pub fn shard_queues(&self) -> Vec<String> {
        self.inner
            .shards
            .borrow()
            .iter()
            .map(|k| k.queue.clone())
            .collect()
    }

    /// Requests popped and not yet acknowledged by this worker (buffered or in
    /// progress).
    pub fn leases_held(&self) -> usize {
        let st = self.inner.st.borrow();
        st.leases.len() + st.buffer.len()
    }
}

fn client(inner: &Inner) -> &RedisHandle {
    &inner.shared.client
}

impl Scheduler for RedisScheduler {
    fn open(&mut self) -> Deferred<()> {
        self.inner.open()
    }

    fn close(&mut self, reason: &str) -> Deferred<()> {
        let i = self.inner.clone();
        {
            let mut st = i.st.borrow_mut();
            for t in [
                st.poll_timer.take(),
                st.heartbeat.take(),
                st.flush_timer.take(),
            ]
            .into_iter()
            .flatten()
            {
                let _ = t.cancel();
            }
        }
        // Acks still batched go first (without a pop: `CLOSE` would put back what it
        // leased).
        i.st.borrow_mut().pop_wanted = false;
        i.flush_turn(true);
        i.st.borrow_mut().closing = true;
        log::debug!("Closing the Redis scheduler ({reason})");
        let closed = i.close_shards();
        if let Filter::Local(df) = &mut *i.filter.borrow_mut() {
            let _ = df.close(reason);
        }
        closed
    }

    fn has_pending_requests(&self) -> bool {
        let i = &self.inner;
        if i.is_idle_remote() {
            return false;
        }
        // Not known to be idle: make sure a fresh look is on its way.
        let need = {
            let st = i.st.borrow();
            st.opened && !st.pop_inflight && st.poll_timer.is_none() && st.buffer.is_empty()
        };
        if need {
            i.want_pop();
        }
        true
    }

    fn enqueue_request(&mut self, mut request: Request) -> Enqueued {
        let i = self.inner.clone();
        request.meta_mut().remove(LEASE_META);
        let mut answer = None;
        let mut seen_key = None;
        let (flag, fp) = if request.dont_filter() {
            ("1", String::new())
        } else {
            let mut filter = i.filter.borrow_mut();
            match &mut *filter {
                Filter::Redis(kind, custom) => {
                    let fp = kind.argument(&request, custom.as_deref());
                    let key = SeenCache::key(&fp);
                    if i.st.borrow().seen.contains(key) {
                        drop(filter);
                        i.stats.inc("scheduler/redis/dupefilter_cached");
                        i.log_duplicate(request.url().as_str());
                        return Enqueued::Dropped;
                    }
                    let d = Deferred::new();
                    answer = Some(d);
                    seen_key = Some(key);
                    ("0", fp)
                }
                Filter::Local(df) => match df.request_seen(&request) {
                    Seen::New => ("1", String::new()),
                    Seen::Duplicate => {
                        df.log(&request, &*i.stats);
                        return Enqueued::Dropped;
                    }
                    Seen::Later(d) => {
                        drop(filter);
                        let me = Rc::downgrade(&i);
                        return Enqueued::Later(d.then(move |seen| {
                            let seen = seen.unwrap_or(false);
                            if !seen && let Some(i) = me.upgrade() {
                                let mut r = request;
                                r.set_dont_filter(true);
                                let mut s = RedisScheduler { inner: i };
                                let _ = s.enqueue_request(r);
                            }
                            Ok::<bool, Failure>(!seen)
                        }));
                    }
                },
            }
        };
        let payload = match i.config.layout {
            Layout::Native => record::encode(&request),
            Layout::ScrapyRedis => encode_compat(&request).into_bytes(),
        };
        let score = (-i64::from(request.priority())).to_string();
        let url = request.url().as_str().to_owned();
        let result = match &answer {
            Some(d) => Enqueued::Later(d.clone()),
            None => Enqueued::Accepted,
        };
        {
            let mut st = i.st.borrow_mut();
            let epoch = st.flush_seq;
            st.enq.push(Enqueue {
                args: [flag.into(), fp.into_bytes(), score.into_bytes(), payload],
                url,
                answer,
                seen_key,
                epoch,
            });
            st.idle_since = None;
        }
        // Below the low-water mark the worker may be starving: pop now (the new
        // requests may be what it pops). Above it the enqueue waits for the flush
        // (`REDIS_FLUSH_DELAY`); a pop per enqueue had cost the server a `POP` per page
        // on a throttled crawl, whose pages complete one by one.
        if i.buffer_low() {
            i.want_pop();
        } else {
            i.schedule_flush();
        }
        result
    }

    fn next_request(&mut self) -> NextRequest {
        let i = &self.inner;
        let (next, low, empty) = {
            let mut st = i.st.borrow_mut();
            if st.lost || st.closing {
                return NextRequest::Empty;
            }
            match st.buffer.pop_front() {
                Some((mut req, lease)) => {
                    st.next_lease += 1;
                    let id = st.next_lease;
                    st.leases.insert(id, lease);
                    req.meta_mut().insert_static(LEASE_META, id);
                    (Some(req), st.buffer.len() < i.low_water(), false)
                }
                None => (None, true, true),
            }
        };
        if let Some(req) = next {
            i.stats.inc("scheduler/dequeued/redis");
            if low {
                i.want_pop();
            }
            return NextRequest::Ready(req);
        }
        debug_assert!(empty);
        let polling = i.st.borrow().poll_timer.is_some();
        if !polling {
            i.want_pop();
        }
        if i.is_idle_remote() {
            NextRequest::Empty
        } else {
            NextRequest::Pending
        }
    }

    fn len(&self) -> usize {
        let st = self.inner.st.borrow();
        st.buffer.len()
            + st.remote
                .iter()
                .flatten()
                .map(|r| r.qlen.max(0) as usize)
                .sum::<usize>()
    }

    fn tracks_requests(&self) -> bool {
        true
    }

    fn request_finished(&mut self, request: &Request) {
        let Some(id) = request.meta().get_i64(LEASE_META) else {
            return;
        };
        let field = self.inner.st.borrow_mut().leases.remove(&(id as u64));
        if let Some(f) = field {
            self.inner.st.borrow_mut().acks.push(f);
            self.inner.schedule_flush();
        }
    }
}
