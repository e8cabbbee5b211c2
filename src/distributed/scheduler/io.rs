//! The scheduler's side of the conversation with Redis (when writes go is
//! `flush.rs`'s): enqueues through the prefilter, pops and what their replies mean
//! (leases, re-queued work, bad entries, the idle state, a lost database), the
//! acknowledgements, the poll timer and the heartbeat.

use std::borrow::Cow;
use std::rc::Rc;

use super::shards::Keys;
use super::{Enqueue, Filter, Inner, LEASE_META, Layout, POLL_MAX, POLL_MIN, Remote, client};
use super::{Lease, prefilter};
use crate::client::redis::handle::Topology;
use crate::client::redis::{ReplyError, Value};
use crate::defer::{Deferred, Failure};
use crate::distributed::codec::{decode_compat, decode_native, scored_entry};
use crate::util::from_hex;

impl Inner {
    pub(super) fn filter_name(&self) -> &'static str {
        match &*self.filter.borrow() {
            Filter::Redis(k, _) => k.script_name(),
            Filter::Local(_) => "none",
        }
    }

    /// Whether this worker would start a crawl with 20-byte fingerprints: trawl's own
    /// layout with a SET dupefilter (scrapy-redis's layout keeps its 40 hex digits).
    pub(super) fn raw_fingerprints_wanted(&self) -> bool {
        self.config.layout == Layout::Native && self.set_filter()
    }

    /// Whether the shared dupefilter is a Redis SET.
    fn set_filter(&self) -> bool {
        matches!(&*self.filter.borrow(), Filter::Redis(k, _) if k.script_name() == "set")
    }

    /// Shard `k`'s form of a fingerprint argument: as it is, or its 40 hex digits as
    /// 20 bytes where the shard's dupefilter holds raw fingerprints.
    pub(super) fn wire_fingerprints<'a>(&self, k: usize, enq: &'a [Enqueue]) -> Vec<Cow<'a, [u8]>> {
        let raw = self
            .st
            .borrow()
            .raw_fingerprints
            .get(k)
            .copied()
            .unwrap_or(false);
        enq.iter()
            .map(|e| {
                let fp = e.args[1].as_slice();
                match raw.then(|| from_hex::<20>(fp)).flatten() {
                    Some(b) => Cow::Owned(b.to_vec()),
                    None => Cow::Borrowed(fp),
                }
            })
            .collect()
    }

    pub(super) fn bloom_blocks(&self) -> u64 {
        match &*self.filter.borrow() {
            Filter::Redis(k, _) => k.blocks(),
            Filter::Local(_) => 0,
        }
    }

    /// Shard `k`'s batch: through the prefilter when it pays, else straight to
    /// `ENQUEUE`.
    pub(super) fn send_batch(&self, shards: &Rc<Vec<Keys>>, k: usize, enq: Vec<Enqueue>) {
        if self.should_prefilter(&enq) {
            self.send_prefilter(shards, k, enq);
        } else {
            self.send_enqueue(shards, k, enq, false);
        }
    }

    /// `ENQUEUE` of shard `k`'s batch (`prefiltered`: its duplicates were taken out
    /// before, so its replies say nothing of the share of duplicates).
    pub(super) fn send_enqueue(
        &self,
        shards: &Rc<Vec<Keys>>,
        k: usize,
        mut enq: Vec<Enqueue>,
        prefiltered: bool,
    ) {
        let scripts = crate::distributed::scripts::scripts();
        let keys = &shards[k];
        // By priority group (a stable sort: FIFO within a priority; the replies come
        // in this order). A FIFO or LIFO list keeps the order of arrival: its groups
        // are the runs of one priority.
        if matches!(self.config.queue.get(), "p" | "z") {
            enq.sort_by(|a, b| a.args[2].cmp(&b.args[2]));
        }
        let mut groups: Vec<(&[u8], usize)> = Vec::new();
        for e in &enq {
            match groups.last_mut() {
                Some((score, n)) if *score == e.args[2].as_slice() => *n += 1,
                _ => groups.push((&e.args[2], 1)),
            }
        }
        let counts: Vec<String> = groups.iter().map(|(_, n)| n.to_string()).collect();
        let count = groups.len().to_string();
        let mut argv: Vec<&[u8]> = Vec::with_capacity(4 + 2 * groups.len() + enq.len() * 2);
        argv.push(self.config.queue.get().as_bytes());
        argv.push(self.config.layout.script_name().as_bytes());
        argv.push(self.filter_name().as_bytes());
        argv.push(count.as_bytes());
        for ((score, _), n) in groups.iter().zip(&counts) {
            argv.extend([*score, n.as_bytes()]);
        }
        let fps = self.wire_fingerprints(k, &enq);
        // A list per priority holds its entries behind their score: a popped entry is
        // its own lease value, which puts it back in its list.
        let scored = self.config.queue.get() == "p" && self.config.layout == Layout::Native;
        let payloads: Vec<Cow<'_, [u8]>> = enq
            .iter()
            .map(|e| {
                if scored {
                    Cow::Owned(scored_entry(&e.args[2], &e.args[3]))
                } else {
                    Cow::Borrowed(e.args[3].as_slice())
                }
            })
            .collect();
        for ((e, fp), payload) in enq.iter().zip(&fps).zip(&payloads) {
            // An empty fingerprint: not checked (`dont_filter`).
            let fp: &[u8] = if checked(e) { fp } else { b"" };
            argv.extend([fp, payload]);
        }
        let d = client(self).eval(
            &scripts.enqueue,
            &[&keys.queue, &keys.dupefilter, &keys.meta],
            &argv,
        );
        let me = self.me.clone();
        let queue = keys.queue.clone();
        let _ = d.then(move |r| {
            if let Some(i) = me.upgrade() {
                i.enqueued(&queue, enq, r, prefiltered);
            }
            Ok::<(), Failure>(())
        });
    }

    pub(super) fn enqueued(
        &self,
        queue: &str,
        enq: Vec<Enqueue>,
        r: Result<Value, Failure>,
        prefiltered: bool,
    ) {
        let results: Vec<i64> = match &r {
            Ok(v) => v
                .as_array()
                .map(|a| a.iter().map(|x| x.as_int().unwrap_or(1)).collect())
                .unwrap_or_default(),
            Err(f) => {
                log::error!(
                    "Redis could not store {} requests in {queue}: {f}",
                    enq.len()
                );
                self.stats
                    .inc_value("scheduler/redis/enqueue_errors", enq.len() as i64);
                Vec::new()
            }
        };
        if results.first().copied().unwrap_or(0) > 0 {
            self.wrong_type(queue);
        }
        let mut stored = 0;
        if r.is_ok() {
            let mut st = self.st.borrow_mut();
            for key in enq.iter().filter_map(|e| e.seen_key) {
                st.seen.insert(key);
            }
            if !prefiltered {
                let (mut dups, mut asked) = (0, 0);
                for (i, e) in enq.iter().enumerate() {
                    if checked(e) {
                        asked += 1;
                        dups += usize::from(results.get(i + 1) == Some(&0));
                    }
                }
                st.prefilter.note(dups, asked);
            }
        }
        for (i, e) in enq.into_iter().enumerate() {
            let new = results.get(i + 1).is_none_or(|&n| n != 0);
            if new && r.is_ok() {
                stored += 1;
            } else if r.is_ok() {
                self.log_duplicate(&e.url);
            }
            if let Some(d) = e.answer {
                let _ = d.callback(new && r.is_ok());
            }
        }
        self.stats.inc_value("scheduler/enqueued/redis", stored);
        self.wake.wake();
    }

    pub(super) fn log_duplicate(&self, url: &str) {
        let first = !std::mem::replace(&mut self.st.borrow_mut().dupes_logged, true);
        if self.config.debug {
            log::debug!("Filtered duplicate request: <GET {url}>");
        } else if first {
            log::debug!(
                "Filtered duplicate request: <GET {url}> - no more duplicates will be shown \
                 (see DUPEFILTER_DEBUG to show all duplicates)"
            );
        }
        self.stats.inc("dupefilter/filtered");
    }

    pub(super) fn wrong_type(&self, key: &str) {
        log::error!("Redis key {key} had the wrong type: its DUMP was moved to {key}:bad");
        self.stats.inc("scheduler/redis/wrong_type_keys");
    }

    /// Pops from the next shard in turn (the one queue of a single server); returns
    /// the shard.
    pub(super) fn send_pop(&self, n: usize, seq: u64) -> usize {
        let scripts = crate::distributed::scripts::scripts();
        let shards = self.shards.borrow().clone();
        let now = self.reactor.seconds();
        let (shard, holds, renew) = {
            let mut st = self.st.borrow_mut();
            let k = st.next_shard % shards.len();
            st.next_shard = (k + 1) % shards.len();
            // Holding a lease, this worker knows the crawl is not idle: the script
            // need not count everybody's.
            let holds = !st.leases.is_empty() || !st.buffer.is_empty();
            let renew = renew_due(&mut st.renewed_at, k, now, self.config.lease_ms, n);
            st.pop_token = Some((k, seq));
            (
                k,
                if holds { "0" } else { "1" },
                if renew { "1" } else { "0" },
            )
        };
        let keys = &shards[shard];
        let count = n.to_string();
        let lease = self.config.lease_ms.to_string();
        let token = seq.to_string();
        let d = client(self).eval(
            &scripts.pop,
            &[&keys.queue, &keys.workers, &keys.mine, &keys.meta],
            &[
                self.config.queue.get(),
                &count,
                &self.shared.worker_id,
                &lease,
                &keys.lease_prefix,
                &token,
                holds,
                renew,
            ],
        );
        let me = self.me.clone();
        let _ = d.then(move |r| {
            if let Some(i) = me.upgrade() {
                i.popped(seq, shard, r);
            }
            Ok::<(), Failure>(())
        });
        shard
    }

    pub(super) fn popped(&self, seq: u64, shard: usize, r: Result<Value, Failure>) {
        {
            let mut st = self.st.borrow_mut();
            st.pop_inflight = false;
            st.pop_token = None;
        }
        let shards = self.shards.borrow().clone();
        let keys = &shards[shard];
        let values = match r {
            Ok(Value::Array(a)) => a,
            other => {
                match other {
                    Ok(v) => log::error!("Unexpected reply to a pop from {}: {v:?}", keys.queue),
                    Err(f) => log::warn!("Cannot pop from {}: {f}", keys.queue),
                }
                // The pop may have run and its reply been lost: its leases stay on
                // the server (`RECONCILE` keeps them) until `CLOSE` puts them back.
                self.st.borrow_mut().unanswered.push((shard, seq));
                self.poll_later();
                return;
            }
        };
        if values.first().and_then(Value::as_int) == Some(-1) {
            self.data_lost(&keys.meta);
            return;
        }
        let num = |i: usize| values.get(i).and_then(Value::as_int).unwrap_or(0);
        let (requeued, qlen, leased, fixed) = (num(0), num(1), num(2), num(3));
        log::debug!(
            "Popped {} entries from {} (queue {qlen}, leased {leased}, re-queued {requeued})",
            values.len().saturating_sub(4),
            keys.queue
        );
        if requeued > 0 {
            log::info!(
                "Re-queued {requeued} requests leased by workers that stopped (no heartbeat \
                 within REDIS_LEASE_TIMEOUT)"
            );
            self.stats.inc_value("scheduler/redis/requeued", requeued);
        }
        if fixed > 0 {
            self.wrong_type(&keys.queue);
        }
        let mut got = 0;
        let mut bad = 0;
        {
            let mut st = self.st.borrow_mut();
            // A lease is the pop's token and the entry's place in the reply (a nil,
            // a lease value the script could not read, holds its place).
            let places = values.len().saturating_sub(4);
            let mut empty = Vec::new();
            for (place, v) in values.into_iter().skip(4).enumerate() {
                let place = place + 1;
                let Value::Bulk(member) = v else {
                    empty.push(place);
                    continue;
                };
                let field = (shard, seq, place as u32);
                let decoded = match self.config.layout {
                    Layout::Native => decode_native(&member),
                    Layout::ScrapyRedis => decode_compat(&member),
                };
                match decoded {
                    Ok(mut req) => {
                        req.meta_mut().remove(LEASE_META);
                        st.buffer.push_back((req, field));
                        got += 1;
                    }
                    Err(e) => {
                        let shown =
                            String::from_utf8_lossy(&member[..member.len().min(80)]).into_owned();
                        log::error!(
                            "Undecodable entry in {} ({e}): {shown:?}; moved to {}",
                            keys.queue,
                            keys.bad
                        );
                        st.bad.push((field, member));
                        bad += 1;
                    }
                }
            }
            st.book.popped(shard, seq, places, &empty);
            if let Some(r) = st.remote.get_mut(shard) {
                *r = Some(Remote { seq, qlen, leased });
            }
            // Idle once a pop issued after this worker's last write found every shard
            // empty with nothing leased.
            let mutation = st.mutation_seq;
            let all_idle = st
                .remote
                .iter()
                .all(|r| r.is_some_and(|r| r.seq >= mutation && r.qlen == 0 && r.leased == 0));
            let trusted = st.enq.is_empty()
                && st.turns.is_empty()
                && st.acks.is_empty()
                && st.ready_acks.is_empty()
                && !st.prefilter.busy();
            if trusted && st.buffer.is_empty() && all_idle {
                let now = self.reactor.seconds();
                st.idle_since.get_or_insert(now);
            } else {
                st.idle_since = None;
            }
            if got > 0 {
                st.poll_delay = POLL_MIN;
                st.empty_streak = 0;
            } else {
                st.empty_streak += 1;
            }
        }
        if bad > 0 {
            self.stats.inc_value("scheduler/redis/bad_entries", bad);
            self.schedule_flush();
        }
        if got == 0 {
            let low = self.st.borrow().buffer.len() < self.config.prefetch;
            let streak = self.st.borrow().empty_streak;
            if (qlen > 0 || streak < shards.len()) && low {
                // Entries are there (the pop was a heartbeat, or another worker won
                // the race), or another shard may have some: ask again at once.
                self.want_pop();
            } else {
                self.poll_later();
            }
        }
        self.wake.wake();
    }

    /// Polls again after the current delay (doubling up to 1 s).
    pub(super) fn poll_later(&self) {
        let mut st = self.st.borrow_mut();
        if st.closing || st.lost || st.poll_timer.is_some() {
            return;
        }
        let delay = st.poll_delay;
        st.poll_delay = (delay * 2.0).min(POLL_MAX);
        let me = self.me.clone();
        st.poll_timer = Some(self.reactor.call_later(delay, move || {
            if let Some(i) = me.upgrade() {
                i.st.borrow_mut().poll_timer = None;
                i.want_pop();
            }
        }));
    }

    pub(super) fn data_lost(&self, meta: &str) {
        let first = !std::mem::replace(&mut self.st.borrow_mut().lost, true);
        if !first {
            return;
        }
        log::error!(
            "Redis no longer has this crawl's state ({} is gone): was the server restarted \
             without persistence, or flushed? Closing the spider; the requests it held \
             are lost with the database",
            meta
        );
        self.stats
            .set_value("scheduler/redis/data_lost", true.into());
        self.wake.wake();
        if let Some(ctx) = self.ctx.upgrade()
            && let Some(engine) = ctx.engine()
        {
            let _ = engine.close_spider("redis_data_lost");
        }
    }

    pub(super) fn start_heartbeat(&self) {
        let interval = self.config.lease_ms as f64 / 3000.0;
        let me = self.me.clone();
        let t = self.reactor.call_later(interval, move || {
            if let Some(i) = me.upgrade() {
                i.st.borrow_mut().heartbeat = None;
                if !i.st.borrow().closing {
                    i.want_pop();
                    i.renew_shards();
                    i.start_heartbeat();
                }
            }
        });
        self.st.borrow_mut().heartbeat = Some(t);
    }

    /// Renews this worker's deadline in every shard (`RENEW`; only a cluster has
    /// more than the one the next pop renews): it may hold leases from any of them.
    fn renew_shards(&self) {
        let shards = self.shards.borrow().clone();
        if shards.len() < 2 {
            return;
        }
        let scripts = crate::distributed::scripts::scripts();
        let lease = self.config.lease_ms.to_string();
        for k in shards.iter() {
            let _ = client(self)
                .eval(
                    &scripts.renew,
                    &[&k.workers],
                    &[&self.shared.worker_id, &lease],
                )
                .add_errback(|f| {
                    log::warn!("Cannot renew this worker's leases: {f}");
                    Ok(Value::Nil)
                });
        }
    }

    pub(super) fn is_idle_remote(&self) -> bool {
        let st = self.st.borrow();
        if !st.buffer.is_empty()
            || !st.enq.is_empty()
            || !st.turns.is_empty()
            || !st.acks.is_empty()
            || !st.ready_acks.is_empty()
            || st.prefilter.busy()
            || !st.opened
        {
            return false;
        }
        if st.lost {
            return true;
        }
        let fresh = st
            .remote
            .iter()
            .all(|r| r.is_some_and(|r| r.seq >= st.mutation_seq));
        match st.idle_since {
            Some(since) if fresh => self.reactor.seconds() - since >= self.config.idle_before_close,
            _ => false,
        }
    }

    /// After a reconnection: deletes from this worker's lease hash what it no longer
    /// holds (the `RECONCILE` script). An acknowledgement the old server answered but
    /// lost in a failover would otherwise leave a lease nobody finishes while this
    /// worker lives, and the crawl would never look idle.
    pub(super) fn reconcile_leases(&self) {
        let shards = self.shards.borrow().clone();
        // Held: every pop with a place not acknowledged to the server yet — waiting
        // for the next flush, for a prefilter's reply (their outputs' enqueue goes
        // then) or for a cluster's barrier, or withheld: deleting them now would
        // acknowledge before the outputs are stored — and the pops in flight or
        // unanswered.
        let held = {
            let st = self.st.borrow();
            st.book
                .held(shards.len(), st.pop_token.iter().chain(&st.unanswered))
        };
        let scripts = crate::distributed::scripts::scripts();
        for (keys, held) in shards.iter().zip(held) {
            let stats = self.stats.clone();
            let _ = client(self)
                .eval(&scripts.reconcile, &[&keys.mine], &held)
                .then(move |r| {
                    match r {
                        Ok(v) => {
                            let n = v.as_int().unwrap_or(0);
                            if n > 0 {
                                log::info!(
                                    "Removed {n} leases this worker had finished but the \
                                     server still held (acknowledgements lost in a failover)"
                                );
                                stats.inc_value("scheduler/redis/leases_reconciled", n);
                            }
                        }
                        Err(f) => log::warn!("Cannot reconcile this worker's leases: {f}"),
                    }
                    Ok::<(), Failure>(())
                });
        }
    }
}

/// Whether `e` is checked against the dupefilter (not `dont_filter`).
fn checked(e: &Enqueue) -> bool {
    prefilter::checked(&e.args[0])
}

/// The prefilter's side (`prefilter.rs` says why): asking the dupefilter first, the
/// acknowledgements that wait for it.
impl Inner {
    /// Whether this shard's batch should be prefiltered.
    pub(super) fn should_prefilter(&self, enq: &[Enqueue]) -> bool {
        self.set_filter() && self.st.borrow().prefilter.wanted() && enq.iter().any(checked)
    }

    /// Asks shard `k`'s dupefilter about the batch's fingerprints; the rest of the
    /// batch goes on to `ENQUEUE` when the answer comes.
    pub(super) fn send_prefilter(&self, shards: &Rc<Vec<Keys>>, k: usize, enq: Vec<Enqueue>) {
        let keys = &shards[k];
        let mut argv: Vec<&[u8]> = Vec::with_capacity(2 + enq.len());
        argv.push(b"SMISMEMBER");
        argv.push(keys.dupefilter.as_bytes());
        let fps = self.wire_fingerprints(k, &enq);
        argv.extend(
            enq.iter()
                .zip(&fps)
                .filter(|(e, _)| checked(e))
                .map(|(_, fp)| &fp[..]),
        );
        let d = client(self).command(&argv);
        let id = {
            let mut st = self.st.borrow_mut();
            st.prefilter.next_id += 1;
            let id = st.prefilter.next_id;
            st.prefilter.pending.insert(id);
            id
        };
        let me = self.me.clone();
        let shards = shards.clone();
        let _ = d.then(move |r| {
            if let Some(i) = me.upgrade() {
                i.prefiltered(id, &shards, k, enq, r);
            }
            Ok::<(), Failure>(())
        });
    }

    fn prefiltered(
        &self,
        id: u64,
        shards: &Rc<Vec<Keys>>,
        k: usize,
        enq: Vec<Enqueue>,
        r: Result<Value, Failure>,
    ) {
        let known: Option<Vec<bool>> = match &r {
            Ok(Value::Array(a)) if a.len() == enq.iter().filter(|e| checked(e)).count() => {
                Some(a.iter().map(|v| v.as_int() == Some(1)).collect())
            }
            Ok(other) => {
                log::warn!(
                    "Unexpected reply to SMISMEMBER on {}: {other:?}",
                    shards[k].dupefilter
                );
                None
            }
            Err(f) => {
                if f.downcast_ref::<ReplyError>()
                    .is_some_and(|e| e.message.contains("unknown command"))
                {
                    log::info!(
                        "The Redis server cannot prefilter enqueues ({f}): not trying again"
                    );
                    self.st.borrow_mut().prefilter.off = true;
                }
                None
            }
        };
        let mut rest = Vec::with_capacity(enq.len());
        let mut dups = Vec::new();
        match known {
            Some(known) => {
                let mut flags = known.into_iter();
                for e in enq {
                    if checked(&e) && flags.next().unwrap_or(false) {
                        dups.push(e);
                    } else {
                        rest.push(e);
                    }
                }
                let checked_n = dups.len() + rest.iter().filter(|e| checked(e)).count();
                let mut st = self.st.borrow_mut();
                st.prefilter.note(dups.len(), checked_n);
                for key in dups.iter().filter_map(|e| e.seen_key) {
                    st.seen.insert(key);
                }
            }
            None => rest = enq,
        }
        if !rest.is_empty() {
            // Sent after this worker's pops in flight: only a later pop may say idle.
            {
                let mut st = self.st.borrow_mut();
                st.mutation_seq = st.flush_seq + 1;
            }
            self.send_enqueue(shards, k, rest, true);
        }
        let released = {
            let mut st = self.st.borrow_mut();
            st.prefilter.pending.remove(&id);
            let oldest = st.prefilter.pending.first().copied();
            let (go, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut st.prefilter.held)
                .into_iter()
                .partition(|(last, _)| oldest.is_none_or(|o| o > *last));
            st.prefilter.held = keep;
            go
        };
        // Their outputs' enqueues are issued (this one just now): they go, whatever
        // prefilters came after them.
        for (_, leases) in released {
            self.send_acks_now(leases);
        }
        self.stats
            .inc_value("scheduler/redis/prefiltered", dups.len() as i64);
        for e in dups {
            self.log_duplicate(&e.url);
            if let Some(d) = e.answer {
                let _ = d.callback(false);
            }
        }
        let waiters = {
            let mut st = self.st.borrow_mut();
            if st.prefilter.pending.is_empty() {
                std::mem::take(&mut st.prefilter.waiters)
            } else {
                Vec::new()
            }
        };
        for w in waiters {
            let _ = w.callback(());
        }
        self.wake.wake();
    }

    /// Acknowledges `done` now, or once the prefilters pending now are answered (the
    /// enqueues of their outputs go then).
    pub(super) fn send_acks(&self, done: Vec<Lease>) {
        {
            let mut st = self.st.borrow_mut();
            if let Some(&last) = st.prefilter.pending.last() {
                st.prefilter.held.push((last, done));
                return;
            }
        }
        self.send_acks_now(done);
    }

    /// Acknowledges `done`, whose outputs' enqueues are all issued.
    fn send_acks_now(&self, done: Vec<Lease>) {
        // One server runs commands in the order of its one connection, so the
        // acknowledgements go now, behind the writes before them. A cluster's masters
        // answer independently: they wait until every write issued before (the
        // outputs' enqueues and items, on other masters) is answered, then go with the
        // next flush's writes (one write per master, not two).
        if client(self).topology() == Some(Topology::Cluster) {
            // Kept where `RECONCILE` sees them while they wait.
            let id = {
                let mut st = self.st.borrow_mut();
                st.barrier_seq += 1;
                let id = st.barrier_seq;
                st.barrier_acks.insert(id, done);
                id
            };
            let me = self.me.clone();
            let _ = client(self).barrier().then(move |_| {
                if let Some(i) = me.upgrade() {
                    {
                        let mut st = i.st.borrow_mut();
                        if let Some(done) = st.barrier_acks.remove(&id) {
                            st.ready_acks.extend(done);
                        }
                    }
                    i.schedule_flush();
                }
                Ok::<(), Failure>(())
            });
        } else {
            let shards = self.shards.borrow().clone();
            self.ack(&shards, &done);
        }
    }

    /// Sends the acknowledgements of `done` (`LeaseBook::acked`): per shard, the
    /// marks of pops partly finished, and the deletion of those finished.
    pub(super) fn ack(&self, shards: &[Keys], done: &[Lease]) {
        let per_shard = self.st.borrow_mut().book.acked(done, shards.len());
        for (keys, acks) in shards.iter().zip(per_shard) {
            if !acks.hset.is_empty() {
                let mut hset: Vec<&[u8]> = vec![b"HSET", keys.mine.as_bytes()];
                for (f, marks) in &acks.hset {
                    hset.push(f.as_bytes());
                    hset.push(marks);
                }
                let _ = client(self).command(&hset).add_errback(|f| {
                    log::error!("Cannot acknowledge leases: {f}");
                    Ok(Value::Nil)
                });
            }
            if !acks.hdel.is_empty() {
                let mut hdel: Vec<&[u8]> = vec![b"HDEL", keys.mine.as_bytes()];
                hdel.extend(acks.hdel.iter().map(|f| f.as_bytes()));
                let _ = client(self).command(&hdel).add_errback(|f| {
                    log::error!("Cannot acknowledge leases: {f}");
                    Ok(Value::Nil)
                });
            }
        }
    }

    /// Fires when no prefilter is pending (their enqueues and the acknowledgements
    /// held for them are sent).
    pub(super) fn prefilters_done(&self) -> Deferred<()> {
        let mut st = self.st.borrow_mut();
        if st.prefilter.pending.is_empty() {
            return crate::defer::succeed(());
        }
        let d = Deferred::new();
        st.prefilter.waiters.push(d.clone());
        d
    }
}

/// Whether a pop of `n` to `shard` renews this worker's deadline there (and takes back
/// the leases of workers whose deadline passed): a heartbeat (`n` 0) always does, a pop
/// once a sixth of the lease has passed since the last renewal sent to the shard —
/// well inside the deadline, which the heartbeat, every third of the lease, renews
/// anyway. Marks the renewal as sent.
fn renew_due(renewed_at: &mut Vec<f64>, shard: usize, now: f64, lease_ms: u64, n: usize) -> bool {
    if renewed_at.len() <= shard {
        renewed_at.resize(shard + 1, f64::NEG_INFINITY);
    }
    let due = n == 0 || now - renewed_at[shard] >= lease_ms as f64 / 6000.0;
    if due {
        renewed_at[shard] = now;
    }
    due
}

#[cfg(test)]
mod tests {
    use super::renew_due;

    #[test]
    fn a_pop_renews_once_a_sixth_of_the_lease_has_passed_and_a_heartbeat_always() {
        let mut at = Vec::new();
        // 60 s leases: a renewal is due 10 s after the last one sent to the shard.
        assert!(renew_due(&mut at, 1, 100.0, 60_000, 16), "never renewed");
        assert!(!renew_due(&mut at, 1, 109.9, 60_000, 16));
        assert!(renew_due(&mut at, 0, 109.9, 60_000, 16), "another shard");
        assert!(renew_due(&mut at, 1, 109.9, 60_000, 0), "a heartbeat");
        assert!(!renew_due(&mut at, 1, 119.8, 60_000, 16));
        assert!(renew_due(&mut at, 1, 119.9, 60_000, 16));
    }
}
