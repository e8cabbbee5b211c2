//! Opening and closing the scheduler's Redis state: on one server the `OPEN` and
//! `CLOSE` scripts on the queue's keys; on a Redis Cluster the crawl's record first
//! (`OPEN_CRAWL` on `Q:meta`: the shard count, fixed for the life of the crawl), then
//! `OPEN` / `CLOSE` on every shard, each on its own master.

use std::rc::Rc;

use super::{Filter, Inner, client, shards};
use crate::client::redis::handle::Topology;
use crate::client::redis::{ReplyError, Value};
use crate::defer::{Deferred, DeferredList, Failure};
use crate::distributed::dupefilter::FilterKind;

/// Turns the scripts' configuration errors into plain messages.
fn plain(f: Failure) -> Failure {
    match f.downcast_ref::<ReplyError>() {
        Some(e)
            if matches!(
                e.kind(),
                "TRAWLLAYOUT" | "TRAWLFINGERPRINTER" | "TRAWLSHARDS"
            ) =>
        {
            Failure::msg(e.message.clone())
        }
        _ => f,
    }
}

/// Waits for every Deferred; their results in order.
fn all(ds: Vec<Deferred<Value>>) -> Deferred<Vec<Result<Value, Failure>>> {
    DeferredList::new(ds)
        .consume_errors(true)
        .deferred()
        .then(|r| Ok::<_, Failure>(r?.into_all().unwrap_or_default()))
}

impl Inner {
    /// Opens the crawl's state, once the client knows what it talks to.
    pub(super) fn open(self: &Rc<Self>) -> Deferred<()> {
        let weak = Rc::downgrade(self);
        let hook = weak.clone();
        client(self).on_connect(move || {
            if let Some(i) = hook.upgrade()
                && i.st.borrow().opened
            {
                // A new connection may be to another server (a replica promoted by a
                // failover): what the old one answered about fingerprints may be lost
                // with its last writes, so the seen cache starts again.
                i.st.borrow_mut().seen.clear();
                i.reconcile_leases();
                i.want_pop();
            }
        });
        client(self).when_ready().then(move |t| {
            let Some(i) = weak.upgrade() else {
                return crate::defer::fail(Failure::msg("the scheduler is gone"));
            };
            match t {
                Ok(Topology::Cluster) => i.open_cluster(),
                Ok(_) => {
                    if i.config.shards.is_some_and(|n| n > 1) {
                        log::warn!(
                            "SCHEDULER_SHARDS is for a Redis Cluster; one server keeps one queue"
                        );
                    }
                    i.open_shards()
                }
                Err(f) => crate::defer::fail(f),
            }
        })
    }

    /// On a cluster: the shard count (set, recorded, or the masters'), the crawl's
    /// record, then the shards.
    fn open_cluster(self: &Rc<Self>) -> Deferred<()> {
        if self.keys.queue.contains('{') || self.keys.dupefilter.contains('{') {
            return crate::defer::fail(Failure::msg(format!(
                "on a Redis Cluster the queue and dupefilter keys ({}, {}) must not hold a \
                 hash tag ({{...}}): trawl tags each shard's keys itself",
                self.keys.queue, self.keys.dupefilter
            )));
        }
        let count = match (self.config.shards, client(self).cluster()) {
            (Some(n), _) => crate::defer::succeed(n),
            // The masters of the client's own slot table (no `CLUSTER SLOTS` more).
            (None, Some(cluster)) => cluster.when_table().then(move |r| {
                r?;
                Ok::<usize, Failure>(cluster.masters().len().clamp(1, shards::MAX_SHARDS))
            }),
            (None, None) => crate::defer::fail(Failure::msg(
                "the Redis client is not a cluster client (detected as one)",
            )),
        };
        let weak = Rc::downgrade(self);
        count.then(move |n| {
            let Some(i) = weak.upgrade() else {
                return crate::defer::fail(Failure::msg("the scheduler is gone"));
            };
            let n = match n {
                Ok(n) => n,
                Err(f) => return crate::defer::fail(f),
            };
            let scripts = crate::distributed::scripts::scripts();
            let flush = if i.config.flush_on_start { "1" } else { "0" };
            let explicit = if i.config.shards.is_some() { "1" } else { "0" };
            let shards_arg = n.to_string();
            let d = client(&i).eval(
                &scripts.open_crawl,
                &[&i.keys.meta],
                &[
                    flush,
                    i.config.queue.get(),
                    i.config.layout.script_name(),
                    &i.config.fingerprinter,
                    &shards_arg,
                    explicit,
                ],
            );
            let weak = Rc::downgrade(&i);
            d.then(move |r| {
                let Some(i) = weak.upgrade() else {
                    return crate::defer::fail(Failure::msg("the scheduler is gone"));
                };
                let n = match r.map_err(plain) {
                    Ok(v) => v
                        .as_int()
                        .and_then(|n| usize::try_from(n).ok())
                        .unwrap_or(n),
                    Err(f) => return crate::defer::fail(f),
                };
                if !(1..=shards::MAX_SHARDS).contains(&n) {
                    return crate::defer::fail(Failure::msg(format!(
                        "{} records {n} shards, outside 1..={}",
                        i.keys.meta,
                        shards::MAX_SHARDS
                    )));
                }
                let keys = shards::shard_keys(&i.keys, n, &i.shared.worker_id);
                log::info!(
                    "Redis Cluster: the crawl's queue and dupefilter are in {n} shards ({} ...)",
                    keys[0].queue
                );
                *i.shards.borrow_mut() = Rc::new(keys);
                {
                    let mut st = i.st.borrow_mut();
                    st.remote = vec![None; n];
                    st.raw_fingerprints = vec![false; n];
                }
                i.open_shards()
            })
        })
    }

    /// `OPEN` on every shard (the one queue of a single server).
    fn open_shards(self: &Rc<Self>) -> Deferred<()> {
        let scripts = crate::distributed::scripts::scripts();
        let flush = if self.config.flush_on_start { "1" } else { "0" };
        let lease = self.config.lease_ms.to_string();
        let blocks = self.bloom_blocks().to_string();
        let fingerprints = if self.raw_fingerprints_wanted() {
            "raw"
        } else {
            "hex"
        };
        let shards = self.shards.borrow().clone();
        let ds: Vec<Deferred<Value>> = shards
            .iter()
            .map(|k| {
                client(self).eval(
                    &scripts.open,
                    &[&k.meta, &k.queue, &k.dupefilter, &k.workers],
                    &[
                        flush,
                        &self.shared.worker_id,
                        &lease,
                        self.config.queue.get(),
                        self.config.layout.script_name(),
                        &blocks,
                        &self.config.fingerprinter,
                        fingerprints,
                    ],
                )
            })
            .collect();
        let weak = Rc::downgrade(self);
        all(ds).then(move |r| {
            let i = weak
                .upgrade()
                .ok_or_else(|| Failure::msg("the scheduler is gone"))?;
            let mut queued = 0;
            let mut raw = Vec::with_capacity(shards.len());
            for (k, r) in shards.iter().zip(r?) {
                let v = r.map_err(plain)?;
                let num = |n: usize| v.as_array().and_then(|a| a.get(n)).and_then(Value::as_int);
                queued += num(0).unwrap_or(0);
                let recorded = v
                    .as_array()
                    .and_then(|a| a.get(2))
                    .and_then(Value::as_bytes);
                if recorded == Some(b"z".as_slice()) && i.config.queue.get() == "p" {
                    log::info!(
                        "{} is a priority queue in one sorted set (the crawl was begun \
                         that way): going on with it",
                        k.queue
                    );
                    i.config.queue.set("z");
                }
                let recorded = v
                    .as_array()
                    .and_then(|a| a.get(3))
                    .and_then(Value::as_bytes);
                raw.push(recorded == Some(b"raw".as_slice()));
                if num(1).unwrap_or(0) > 0 {
                    i.wrong_type(&k.queue);
                }
            }
            if queued > 0 {
                log::info!("Resuming crawl ({queued} requests scheduled)");
            }
            {
                let mut st = i.st.borrow_mut();
                st.raw_fingerprints = raw;
                st.opened = true;
            }
            i.start_heartbeat();
            if let Filter::Redis(
                FilterKind::Bloom {
                    bits,
                    hashes,
                    capacity,
                    rate,
                },
                _,
            ) = &*i.filter.borrow()
            {
                i.stats
                    .set_value("dupefilter/bloom/capacity", (*capacity).into());
                i.stats
                    .set_value("dupefilter/bloom/error_rate", (*rate).into());
                i.stats.set_value("dupefilter/bloom/bits", (*bits).into());
                i.stats
                    .set_value("dupefilter/bloom/hashes", (*hashes).into());
            }
            i.want_pop();
            i.schedule_flush();
            Ok::<(), Failure>(())
        })
    }

    /// `CLOSE` on every shard: this worker's leases go back, and the last worker out
    /// deletes the crawl when nothing persists (on a cluster the crawl's record too,
    /// once every shard is cleared).
    pub(super) fn close_shards(self: &Rc<Self>) -> Deferred<()> {
        // On a cluster the last acknowledgements wait for the writes before them on
        // other masters: they go first, or `CLOSE` would put their leases back.
        // Prefiltered enqueues, and the acknowledgements held for them, go first too —
        // for at most the command timeout (Redis down: `CLOSE` puts the held leases
        // back when it gets through).
        let me = self.clone();
        let waited = self.prefilters_done();
        let timeout = client(self).config().command_timeout;
        if timeout > 0.0 {
            waited.add_timeout(timeout, self.reactor.clock());
        }
        waited.then(move |_| {
            client(&me).barrier().then(move |_| {
                let ready = std::mem::take(&mut me.st.borrow_mut().ready_acks);
                if !ready.is_empty() {
                    let shards = me.shards.borrow().clone();
                    me.ack(&shards, &ready);
                }
                me.send_close()
            })
        })
    }

    fn send_close(self: &Rc<Self>) -> Deferred<()> {
        let scripts = crate::distributed::scripts::scripts();
        let persist = if self.config.persist { "1" } else { "0" };
        let blocks = self.bloom_blocks().to_string();
        let shards = self.shards.borrow().clone();
        let sharded = client(self).topology() == Some(Topology::Cluster);
        let timeout = client(self).config().command_timeout;
        let ds: Vec<Deferred<Value>> = shards
            .iter()
            .map(|k| {
                let d = client(self).eval(
                    &scripts.close,
                    &[&k.workers, &k.mine, &k.queue, &k.dupefilter, &k.meta],
                    &[
                        self.shared.worker_id.as_str(),
                        persist,
                        self.config.queue.get(),
                        &k.lease_prefix,
                        &blocks,
                    ],
                );
                if timeout > 0.0 {
                    d.add_timeout(timeout, self.reactor.clock());
                }
                d
            })
            .collect();
        let i2 = self.clone();
        all(ds).then(move |r| {
            let results = r.unwrap_or_default();
            let mut requeued = 0;
            let mut cleared = 0;
            let mut failed = None;
            for r in &results {
                match r {
                    Ok(v) => {
                        let num =
                            |k: usize| v.as_array().and_then(|a| a.get(k)).and_then(Value::as_int);
                        requeued += num(0).unwrap_or(0);
                        cleared += usize::from(num(2) == Some(1));
                    }
                    Err(f) => failed = Some(f.to_string()),
                }
            }
            if requeued > 0 {
                log::info!(
                    "Returned {requeued} unfinished requests to {}",
                    i2.keys.queue
                );
                i2.stats.inc_value("scheduler/redis/returned", requeued);
            }
            if let Some(f) = failed {
                log::error!(
                    "Could not return this worker's leases to {} ({f}); other workers will \
                     re-queue them after REDIS_LEASE_TIMEOUT",
                    i2.keys.queue
                );
            }
            if cleared > 0 && cleared == results.len() && !sharded {
                log::info!(
                    "Last worker out: deleted {} and its dupefilter (SCHEDULER_PERSIST is off)",
                    i2.keys.queue
                );
            }
            record_counters(&i2);
            if !sharded || i2.config.persist {
                return crate::defer::succeed(());
            }
            // On a cluster each shard is cleared by the last worker to close it, and two
            // workers closing together may each clear some: whoever finishes closing
            // last finds every shard's meta gone (both have closed everywhere by then)
            // and deletes the crawl's record.
            let checks: Vec<Deferred<Value>> = shards
                .iter()
                .map(|k| client(&i2).command(&["EXISTS", k.meta.as_str()]))
                .collect();
            let i3 = i2.clone();
            all(checks).then(move |r| {
                let gone = r.is_ok_and(|v| {
                    v.iter()
                        .all(|x| x.as_ref().is_ok_and(|v| v.as_int() == Some(0)))
                });
                if !gone {
                    return crate::defer::succeed(());
                }
                log::info!(
                    "Last worker out: deleted {} and its dupefilter (SCHEDULER_PERSIST is off)",
                    i3.keys.queue
                );
                client(&i3)
                    .command(&["DEL", i3.keys.meta.as_str()])
                    .then(|_| Ok::<(), Failure>(()))
            })
        })
    }
}

/// The client's traffic counters into the crawl's stats.
fn record_counters(i: &Inner) {
    let c = client(i).counters();
    let s = &i.stats;
    s.set_value("redis/commands", c.commands.into());
    s.set_value("redis/round_trips", c.round_trips.into());
    s.set_value("redis/bytes_sent", c.bytes_sent.into());
    s.set_value("redis/bytes_received", c.bytes_received.into());
    s.set_value("redis/reconnects", c.connects.saturating_sub(1).into());
}
