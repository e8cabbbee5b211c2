//! [`RedisPipeline`] (`trawl.RedisPipeline`, alias
//! `scrapy_redis.pipelines.RedisPipeline`): each item `RPUSH`ed to `REDIS_ITEMS_KEY`
//! (`%(spider)s:items`) as the JSON scrapy-redis writes, through the crawl's shared
//! connection. The item moves on when Redis has it (the command's reply), so a lease
//! is acknowledged only after its items are stored, and a Redis outage holds items
//! (bounded by the scraper's limits) instead of losing them.
//!
//! Items handed over within `REDIS_FLUSH_DELAY` (20 ms; 0 = one reactor turn) go to
//! Redis in one plain `RPUSH` of at most [`MAX_BATCH`] values: what Redis spends per
//! item is then one argument, not a script call (the fixture crawl's 4.5 items per
//! page, one script call each, were 36% of the server's time). Only a key of the
//! wrong type takes the `PUSH_LIST` script, which moves it aside. The list's order is
//! the order the items reached the pipeline.
//!
//! With `REDIS_ITEMS_SHARDS = N` (default 1) the items go to N lists instead,
//! `<key>:{<tag>}` with the hash tags of the scheduler's shards (`s<i>.<j>`), one
//! push to each in turn: on a Redis Cluster they lie on different masters (the same
//! masters as the scheduler's shards when N is the shard count), so a fleet's items do
//! not all load one master. Consumers read every list; order holds within each.
//!
//! When N is the scheduler's shard count, the items ride its writes
//! (`SharedRedis::shard_writes`): a batch that has waited `REDIS_FLUSH_DELAY` goes with
//! the scheduler's next commands to a shard, to that shard's list, which lies on the
//! same master: the master reads both in one wake-up instead of one each. A batch no
//! scheduler write takes goes alone, to the next list in turn, after N + 1 delays.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::codec::python_json;
use super::shared::{
    DEFAULT_FLUSH_DELAY, REDIS_ITEMS_KEY, SharedRedis, format_key, setting_secs, setting_str,
    shared_client,
};
use crate::client::redis::{ReplyError, Value};
use crate::crawl::context::CrawlContext;
use crate::crawl::item::Item;
use crate::crawl::pipeline::{ItemOutcome, ItemPipeline};
use crate::crawl::response::Response;
use crate::defer::{Deferred, Failure, Step};
use crate::distributed::scheduler::{MAX_SHARDS, shard_tag};
use crate::reactor::{DelayedCall, ReactorHandle};

/// The most items one push carries (the `PUSH_LIST` fallback's `unpack` has a Lua
/// stack limit of about 8,000 values).
pub const MAX_BATCH: usize = 1000;

/// Stores items in a Redis list.
pub struct RedisPipeline {
    shared: Rc<SharedRedis>,
    keys: Rc<[Rc<str>]>,
    /// The list the next push goes to.
    next: Rc<Cell<usize>>,
    reactor: ReactorHandle,
    batch: Rc<RefCell<Batch>>,
    /// `REDIS_FLUSH_DELAY`: how long an item may wait for others to share its push.
    delay: f64,
    /// Whether the scheduler's writes have been offered for the lists (see the module
    /// text): a batch then waits longer for one before it goes alone.
    riding: Rc<Cell<bool>>,
}

/// Items waiting for the next flush.
#[derive(Default)]
struct Batch {
    json: Vec<Vec<u8>>,
    waiting: Vec<(Item, Deferred<Item>)>,
    timer: Option<DelayedCall>,
    /// When the first waiting item came (reactor seconds).
    since: f64,
}

impl std::fmt::Debug for RedisPipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisPipeline")
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

impl RedisPipeline {
    /// The pipeline from the crawl's settings.
    ///
    /// # Errors
    ///
    /// The Redis settings are malformed: `REDIS_ITEMS_SHARDS` not between 1 and
    /// [`MAX_SHARDS`], or above 1 with a key that has a hash tag of its own.
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Self, Failure> {
        let template = setting_str(&ctx.settings, "REDIS_ITEMS_KEY", REDIS_ITEMS_KEY)?;
        let key = format_key(&template, ctx.spider_name());
        let n = match ctx.settings.get("REDIS_ITEMS_SHARDS") {
            Some(_) => ctx
                .settings
                .get_usize("REDIS_ITEMS_SHARDS")
                .map_err(Failure::new)?,
            None => 1,
        };
        if !(1..=MAX_SHARDS).contains(&n) {
            return Err(Failure::msg(format!(
                "REDIS_ITEMS_SHARDS must be between 1 and {MAX_SHARDS}, not {n}"
            )));
        }
        if n > 1 && key.contains('{') {
            return Err(Failure::msg(format!(
                "REDIS_ITEMS_KEY {key:?} has a hash tag of its own: with REDIS_ITEMS_SHARDS = \
                 {n} each list gets the tag of its shard"
            )));
        }
        let keys: Rc<[Rc<str>]> = if n == 1 {
            Rc::from(vec![Rc::from(key)])
        } else {
            (0..n)
                .map(|i| Rc::from(format!("{key}:{{{}}}", shard_tag(i, n))))
                .collect()
        };
        if n > 1 {
            log::info!("Items go to {n} lists: {}", keys.join(", "));
        }
        let delay = setting_secs(&ctx.settings, "REDIS_FLUSH_DELAY", DEFAULT_FLUSH_DELAY)?;
        let shared = shared_client(ctx)?;
        let reactor = ctx
            .reactor()
            .ok_or_else(|| Failure::msg("RedisPipeline needs a crawl with a reactor"))?
            .clone();
        shared
            .client
            .load_script(&super::scripts::scripts().push_list);
        let batch: Rc<RefCell<Batch>> = Rc::default();
        let riding: Rc<Cell<bool>> = Rc::default();
        if n > 1 {
            // Weak: the client holds the rider (the pipeline's batch timer holds the
            // client).
            let (weak, keys, batch, riding) = (
                Rc::downgrade(&shared),
                keys.clone(),
                Rc::downgrade(&batch),
                riding.clone(),
            );
            shared.shard_writes.ride(Rc::new(move |shard, shards, now| {
                let (Some(shared), Some(batch)) = (weak.upgrade(), batch.upgrade()) else {
                    return;
                };
                if shards != keys.len() {
                    return;
                }
                riding.set(true);
                let ready = {
                    let b = batch.borrow();
                    !b.json.is_empty() && now - b.since >= delay
                };
                if ready {
                    flush(&shared, &keys[shard], &batch);
                }
            }));
        }
        Ok(Self {
            shared,
            keys,
            next: Rc::default(),
            reactor,
            batch,
            delay,
            riding,
        })
    }

    /// The key (the first list's with `REDIS_ITEMS_SHARDS` above 1).
    pub fn key(&self) -> &str {
        &self.keys[0]
    }

    /// Every list the items go to.
    pub fn keys(&self) -> Vec<String> {
        self.keys.iter().map(|k| k.to_string()).collect()
    }
}

impl ItemPipeline for RedisPipeline {
    fn process_item(
        &self,
        item: Item,
        _response: Option<&Response>,
    ) -> Result<ItemOutcome, Failure> {
        let json = python_json(&serde_json::Value::Object(item.0.clone()), false);
        let d = Deferred::new();
        let mut b = self.batch.borrow_mut();
        b.json.push(json.into_bytes());
        b.waiting.push((item, d.clone()));
        if b.json.len() >= MAX_BATCH {
            drop(b);
            flush(&self.shared, &self.next_key(), &self.batch);
        } else if b.timer.is_none() {
            b.since = self.reactor.seconds();
            // Riding the scheduler's writes, a batch waits for one up to N + 1 delays.
            let wait = if self.riding.get() {
                self.delay * (self.keys.len() + 1) as f64
            } else {
                self.delay
            };
            let (shared, batch) = (self.shared.clone(), self.batch.clone());
            let (keys, next) = (self.keys.clone(), self.next.clone());
            b.timer = Some(self.reactor.call_later(wait, move || {
                batch.borrow_mut().timer = None;
                flush(&shared, &take_next(&keys, &next), &batch);
            }));
        }
        Ok(ItemOutcome::Wait(d))
    }
}

impl RedisPipeline {
    fn next_key(&self) -> Rc<str> {
        take_next(&self.keys, &self.next)
    }
}

/// The list the next push goes to (and moves the turn on).
fn take_next(keys: &[Rc<str>], next: &Cell<usize>) -> Rc<str> {
    let i = next.get() % keys.len().max(1);
    next.set(i + 1);
    keys[i].clone()
}

/// Sends the waiting items in one `RPUSH`; each item's Deferred fires with the reply
/// (the item) or its failure.
fn flush(shared: &SharedRedis, key: &Rc<str>, batch: &RefCell<Batch>) {
    let (json, waiting) = {
        let mut b = batch.borrow_mut();
        if let Some(t) = b.timer.take() {
            let _ = t.cancel();
        }
        (std::mem::take(&mut b.json), std::mem::take(&mut b.waiting))
    };
    if json.is_empty() {
        return;
    }
    let key = key.clone();
    let mut args: Vec<&[u8]> = Vec::with_capacity(2 + json.len());
    args.push(b"RPUSH");
    args.push(key.as_bytes());
    args.extend(json.iter().map(Vec::as_slice));
    // A plain RPUSH (no script: a script's arguments cost the server more than the
    // push); only a key of the wrong type takes the repairing script.
    let client = shared.client.clone();
    let retry_key = key.clone();
    let _ = shared
        .client
        .command(&args)
        .then(move |r: Result<Value, Failure>| match r {
            Err(f)
                if f.downcast_ref::<ReplyError>()
                    .is_some_and(|e| e.kind() == "WRONGTYPE") =>
            {
                let scripts = super::scripts::scripts();
                Step::Wait(client.eval(&scripts.push_list, &[retry_key.as_bytes()], &json))
            }
            other => Step::Done(other),
        })
        .then(move |r: Result<Value, Failure>| {
            match r {
                Ok(v) => {
                    if v.as_array().and_then(|a| a.get(1)).and_then(Value::as_int) > Some(0) {
                        log::error!("Redis key {key} was not a list: moved to {key}:bad");
                    }
                    for (item, d) in waiting {
                        let _ = d.callback(item);
                    }
                }
                Err(f) => {
                    for (_, d) in waiting {
                        let _ = d.errback(f.clone());
                    }
                }
            }
            Ok::<(), Failure>(())
        });
}
