//! [`RedisStatsCollector`] (`trawl.RedisStatsCollector`, alias
//! `scrapy_redis.stats.RedisStatsCollector`): every worker's stats in one hash at
//! `STATS_KEY` (`%(spider)s:stats`).
//!
//! Counters add up across workers (`HINCRBY`), `set_value` overwrites, `max_value` /
//! `min_value` keep the extreme over all workers. Unlike scrapy-redis, which sends a
//! blocking `HEXISTS`+`HINCRBY` round trip for every increment, changes are summed
//! locally and flushed once a second (and at close) in one script call; `get_value`
//! and the final dump answer with this worker's own numbers, at once. With
//! `SCHEDULER_PERSIST` off, the last worker out deletes the hash, as scrapy-redis does
//! at close.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::{Rc, Weak};

use serde_json::Value;

use super::shared::{STATS_KEY, SharedRedis, format_key, new_shared, setting_str};
use crate::client::redis::Value as RedisValue;
use crate::client::redis::handle::Topology;
use crate::crawl::crawler::StatsSetup;
use crate::crawl::errors::NotConfigured;
use crate::crawl::stats::{MemoryStatsCollector, StatsCollector};
use crate::defer::{Deferred, Failure};
use crate::reactor::{DelayedCall, ReactorHandle};
use crate::util::FxHashMap;

#[derive(Default)]
struct Pending {
    inc: FxHashMap<String, i64>,
    set: FxHashMap<String, String>,
    max: FxHashMap<String, i64>,
    min: FxHashMap<String, i64>,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.inc.is_empty() && self.set.is_empty() && self.max.is_empty() && self.min.is_empty()
    }
}

struct Inner {
    local: MemoryStatsCollector,
    shared: Rc<SharedRedis>,
    reactor: ReactorHandle,
    key: String,
    workers_key: String,
    persist: bool,
    pending: RefCell<Pending>,
    timer: RefCell<Option<DelayedCall>>,
    closed: Cell<bool>,
    me: Weak<Inner>,
}

/// Stats shared by every worker in a Redis hash.
pub struct RedisStatsCollector {
    inner: Rc<Inner>,
}

impl std::fmt::Debug for RedisStatsCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStatsCollector")
            .field("key", &self.inner.key)
            .finish_non_exhaustive()
    }
}

fn redis_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl RedisStatsCollector {
    /// The collector for a crawl being set up (its own connection: it is built
    /// before the crawl's context).
    ///
    /// # Errors
    ///
    /// No reactor, or malformed Redis settings.
    pub fn from_setup(setup: &StatsSetup<'_>) -> Result<Self, Failure> {
        let reactor = setup.reactor.ok_or_else(|| {
            Failure::new(NotConfigured(
                "RedisStatsCollector needs a crawl with a reactor".into(),
            ))
        })?;
        let shared = new_shared(reactor, setup.settings)?;
        let template = setting_str(setup.settings, "STATS_KEY", STATS_KEY)?;
        let queue = format_key(
            &setting_str(
                setup.settings,
                "SCHEDULER_QUEUE_KEY",
                super::shared::SCHEDULER_QUEUE_KEY,
            )?,
            setup.spider_name,
        );
        let scripts = super::scripts::scripts();
        shared.client.load_script(&scripts.stats);
        shared.client.load_script(&scripts.stats_close);
        let persist = setup.settings.get_bool("SCHEDULER_PERSIST")?;
        Ok(Self {
            inner: Rc::new_cyclic(|me| Inner {
                local: MemoryStatsCollector::new(),
                shared,
                reactor: reactor.clone(),
                key: format_key(&template, setup.spider_name),
                workers_key: format!("{queue}:workers"),
                persist,
                pending: RefCell::new(Pending::default()),
                timer: RefCell::new(None),
                closed: Cell::new(false),
                me: me.clone(),
            }),
        })
    }

    /// The hash's key.
    pub fn key(&self) -> &str {
        &self.inner.key
    }
}

impl Inner {
    fn changed(&self) {
        if self.closed.get() || self.timer.borrow().is_some() {
            return;
        }
        let me = self.me.clone();
        let t = self.reactor.call_later(1.0, move || {
            if let Some(i) = me.upgrade() {
                i.timer.borrow_mut().take();
                let _ = i.flush();
            }
        });
        *self.timer.borrow_mut() = Some(t);
    }

    /// Sends what changed; the Deferred fires when Redis has it.
    fn flush(&self) -> Deferred<()> {
        let p = std::mem::take(&mut *self.pending.borrow_mut());
        if p.is_empty() {
            return crate::defer::succeed(());
        }
        let mut args: Vec<Vec<u8>> = Vec::new();
        let mut push = |op: &str, k: &str, v: String| {
            args.push(op.as_bytes().to_vec());
            args.push(k.as_bytes().to_vec());
            args.push(v.into_bytes());
        };
        for (k, v) in p.inc {
            push("i", &k, v.to_string());
        }
        for (k, v) in p.set {
            push("s", &k, v);
        }
        for (k, v) in p.max {
            push("max", &k, v.to_string());
        }
        for (k, v) in p.min {
            push("min", &k, v.to_string());
        }
        let scripts = super::scripts::scripts();
        let key = self.key.clone();
        self.shared
            .client
            .eval(&scripts.stats, &[self.key.as_bytes()], &args)
            .then(move |r| {
                match r {
                    Ok(v) if v.as_int() > Some(0) => {
                        log::error!("Redis key {key} was not a hash: moved to {key}:bad");
                    }
                    Ok(_) => {}
                    Err(f) => log::error!("Cannot write the stats to Redis ({key}): {f}"),
                }
                Ok::<(), Failure>(())
            })
    }
}

impl StatsCollector for RedisStatsCollector {
    fn get_value(&self, key: &str) -> Option<Value> {
        self.inner.local.get_value(key)
    }

    fn get_stats(&self) -> BTreeMap<String, Value> {
        self.inner.local.get_stats()
    }

    fn set_value(&self, key: &str, value: Value) {
        self.inner
            .pending
            .borrow_mut()
            .set
            .insert(key.to_owned(), redis_text(&value));
        self.inner.local.set_value(key, value);
        self.inner.changed();
    }

    fn inc_value(&self, key: &str, n: i64) {
        self.inner.local.inc_value(key, n);
        {
            let mut p = self.inner.pending.borrow_mut();
            match p.inc.get_mut(key) {
                Some(v) => *v += n,
                None => {
                    p.inc.insert(key.to_owned(), n);
                }
            }
        }
        self.inner.changed();
    }

    fn max_value(&self, key: &str, value: i64) {
        self.inner.local.max_value(key, value);
        {
            let mut p = self.inner.pending.borrow_mut();
            let e = p.max.entry(key.to_owned()).or_insert(value);
            *e = (*e).max(value);
        }
        self.inner.changed();
    }

    fn min_value(&self, key: &str, value: i64) {
        self.inner.local.min_value(key, value);
        {
            let mut p = self.inner.pending.borrow_mut();
            let e = p.min.entry(key.to_owned()).or_insert(value);
            *e = (*e).min(value);
        }
        self.inner.changed();
    }

    fn clear(&self) {
        self.inner.local.clear();
        *self.inner.pending.borrow_mut() = Pending::default();
    }

    fn close(&self, _reason: &str) -> Deferred<()> {
        let i = self.inner.clone();
        i.closed.set(true);
        if let Some(t) = i.timer.borrow_mut().take() {
            let _ = t.cancel();
        }
        let flushed = i.flush();
        let i2 = i.clone();
        flushed.then(move |_| {
            let scripts = super::scripts::scripts();
            let persist = if i2.persist { "1" } else { "0" };
            let client = &i2.shared.client;
            let closed = if client.topology() == Some(Topology::Cluster) {
                // The stats hash and the workers live on different slots of a cluster:
                // the last worker out has deleted the crawl's record (`Q:meta`) by now,
                // and its absence is what deletes the stats.
                let meta = i2
                    .workers_key
                    .strip_suffix(":workers")
                    .map(|q| format!("{q}:meta"))
                    .unwrap_or_default();
                let (handle, key, keep) = (client.clone(), i2.key.clone(), i2.persist);
                client
                    .command(&["EXISTS", meta.as_str()])
                    .then(move |r| match r {
                        Ok(v) if !keep && v.as_int() == Some(0) => {
                            handle.command(&["DEL", key.as_str()])
                        }
                        Ok(_) => crate::defer::succeed(RedisValue::Integer(0)),
                        Err(f) => crate::defer::fail(f),
                    })
            } else {
                client.eval(
                    &scripts.stats_close,
                    &[i2.key.as_bytes(), i2.workers_key.as_bytes()],
                    &[persist.as_bytes()],
                )
            };
            closed.then(move |r| {
                if let Err(f) = r {
                    log::error!("Cannot close the Redis stats: {f}");
                }
                i2.shared.client.close();
                Ok::<(), Failure>(())
            })
        })
    }
}
