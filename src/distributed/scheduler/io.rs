//! The scheduler's side of the conversation with Redis: batching enqueues, acks and
//! quarantined entries into one flush per reactor turn, pops and what their replies
//! mean (leases, re-queued work, bad entries, the idle state, a lost database), the
//! poll timer and the heartbeat.

use super::{
    Enqueue, Filter, Inner, LEASE_META, Layout, POLL_MAX, POLL_MIN, Remote, client, sha1_hex,
};
use crate::client::redis::Value;
use crate::defer::Failure;
use crate::distributed::codec::{decode_compat, decode_native};

impl Inner {
    pub(super) fn filter_name(&self) -> &'static str {
        match &*self.filter.borrow() {
            Filter::Redis(k, _) => k.script_name(),
            Filter::Local(_) => "none",
        }
    }

    pub(super) fn bloom_blocks(&self) -> u64 {
        match &*self.filter.borrow() {
            Filter::Redis(k, _) => k.blocks(),
            Filter::Local(_) => 0,
        }
    }

    pub(super) fn schedule_flush(&self) {
        let mut st = self.st.borrow_mut();
        if st.flush_timer.is_some() || st.closing {
            return;
        }
        let me = self.me.clone();
        st.flush_timer = Some(self.reactor.call_later(0.0, move || {
            if let Some(i) = me.upgrade() {
                i.st.borrow_mut().flush_timer = None;
                i.flush();
            }
        }));
    }

    /// Asks for a pop in the next flush. Its size is decided then: what the buffer
    /// lacks of `REDIS_PREFETCH` (0 for a pure heartbeat when the buffer is full).
    pub(super) fn want_pop(&self) {
        {
            let mut st = self.st.borrow_mut();
            if st.pop_inflight || st.lost {
                return;
            }
            st.pop_wanted = true;
        }
        self.schedule_flush();
    }

    /// Sends the batched enqueues, acks and quarantined entries, then a pop if one is
    /// wanted: one round trip.
    pub(super) fn flush(&self) {
        let (enq, acks, bad, pop, seq) = {
            let mut st = self.st.borrow_mut();
            st.flush_seq += 1;
            let seq = st.flush_seq;
            let enq = std::mem::take(&mut st.enq);
            let acks = std::mem::take(&mut st.acks);
            let bad = std::mem::take(&mut st.bad);
            if !enq.is_empty() || !acks.is_empty() || !bad.is_empty() {
                st.mutation_seq = seq;
            }
            let pop = if st.pop_inflight || !std::mem::take(&mut st.pop_wanted) {
                None
            } else {
                st.pop_inflight = true;
                Some(self.config.prefetch.saturating_sub(st.buffer.len()))
            };
            (enq, acks, bad, pop, seq)
        };
        if !enq.is_empty() {
            self.send_enqueues(enq);
        }
        if !bad.is_empty() {
            let mut rpush: Vec<&[u8]> = vec![b"RPUSH", self.keys.bad.as_bytes()];
            rpush.extend(bad.iter().map(|(_, m)| m.as_slice()));
            let _ = client(self).command(&rpush).add_errback(|f| {
                log::error!("Cannot move bad entries to the :bad list: {f}");
                Ok(Value::Nil)
            });
        }
        // A request is acknowledged once the items it produced are with the OS: a
        // worker killed after the acknowledgement has lost nothing it acknowledged. If a
        // feed cannot be written the acknowledgements are withheld; the leases run out
        // and the requests are fetched again.
        let acks = if !acks.is_empty()
            && let Some(ctx) = self.ctx.upgrade()
            && let Err(f) = ctx.flush_outputs()
        {
            log::error!("Withholding {} acknowledgements: {f}", acks.len());
            ctx.stats
                .inc_value("scheduler/redis/acks_withheld", acks.len() as i64);
            Vec::new()
        } else {
            acks
        };
        if !acks.is_empty() || !bad.is_empty() {
            let mut hdel: Vec<&[u8]> = vec![b"HDEL", self.keys.mine.as_bytes()];
            hdel.extend(acks.iter().map(String::as_bytes));
            hdel.extend(bad.iter().map(|(f, _)| f.as_bytes()));
            let _ = client(self).command(&hdel).add_errback(|f| {
                log::error!("Cannot acknowledge leases: {f}");
                Ok(Value::Nil)
            });
        }
        if let Some(n) = pop {
            self.send_pop(n, seq);
        }
    }

    pub(super) fn send_enqueues(&self, enq: Vec<Enqueue>) {
        let scripts = crate::distributed::scripts::scripts();
        let mut argv: Vec<&[u8]> = Vec::with_capacity(3 + enq.len() * 4);
        argv.push(self.config.mode.script_name().as_bytes());
        argv.push(self.config.layout.script_name().as_bytes());
        argv.push(self.filter_name().as_bytes());
        for e in &enq {
            argv.extend(e.args.iter().map(Vec::as_slice));
        }
        let d = client(self).eval(
            &scripts.enqueue,
            &[&self.keys.queue, &self.keys.dupefilter, &self.keys.meta],
            &argv,
        );
        let me = self.me.clone();
        let _ = d.then(move |r| {
            if let Some(i) = me.upgrade() {
                i.enqueued(enq, r);
            }
            Ok::<(), Failure>(())
        });
    }

    pub(super) fn enqueued(&self, enq: Vec<Enqueue>, r: Result<Value, Failure>) {
        let results: Vec<i64> = match &r {
            Ok(v) => v
                .as_array()
                .map(|a| a.iter().map(|x| x.as_int().unwrap_or(1)).collect())
                .unwrap_or_default(),
            Err(f) => {
                log::error!(
                    "Redis could not store {} requests in {}: {f}",
                    enq.len(),
                    self.keys.queue
                );
                self.stats
                    .inc_value("scheduler/redis/enqueue_errors", enq.len() as i64);
                Vec::new()
            }
        };
        if results.first().copied().unwrap_or(0) > 0 {
            self.wrong_type(&self.keys.queue);
        }
        let mut stored = 0;
        if r.is_ok() {
            let mut st = self.st.borrow_mut();
            for key in enq.iter().filter_map(|e| e.seen_key) {
                st.seen.insert(key);
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

    pub(super) fn send_pop(&self, n: usize, seq: u64) {
        let scripts = crate::distributed::scripts::scripts();
        let count = n.to_string();
        let lease = self.config.lease_ms.to_string();
        let token = seq.to_string();
        let d = client(self).eval(
            &scripts.pop,
            &[
                &self.keys.queue,
                &self.keys.workers,
                &self.keys.mine,
                &self.keys.meta,
            ],
            &[
                self.config.mode.script_name(),
                &count,
                &self.shared.worker_id,
                &lease,
                &self.keys.lease_prefix,
                &token,
            ],
        );
        let me = self.me.clone();
        let _ = d.then(move |r| {
            if let Some(i) = me.upgrade() {
                i.popped(seq, r);
            }
            Ok::<(), Failure>(())
        });
    }

    pub(super) fn popped(&self, seq: u64, r: Result<Value, Failure>) {
        self.st.borrow_mut().pop_inflight = false;
        let values = match r {
            Ok(Value::Array(a)) => a,
            Ok(other) => {
                log::error!(
                    "Unexpected reply to a pop from {}: {other:?}",
                    self.keys.queue
                );
                self.poll_later();
                return;
            }
            Err(f) => {
                log::warn!("Cannot pop from {}: {f}", self.keys.queue);
                self.poll_later();
                return;
            }
        };
        if values.first().and_then(Value::as_int) == Some(-1) {
            self.data_lost();
            return;
        }
        let num = |i: usize| values.get(i).and_then(Value::as_int).unwrap_or(0);
        let (requeued, qlen, leased, fixed) = (num(0), num(1), num(2), num(3));
        log::debug!(
            "Popped {} entries from {} (queue {qlen}, leased {leased}, re-queued {requeued})",
            values.len().saturating_sub(4),
            self.keys.queue
        );
        if requeued > 0 {
            log::info!(
                "Re-queued {requeued} requests leased by workers that stopped (no heartbeat \
                 within REDIS_LEASE_TIMEOUT)"
            );
            self.stats.inc_value("scheduler/redis/requeued", requeued);
        }
        if fixed > 0 {
            self.wrong_type(&self.keys.queue);
        }
        let mut got = 0;
        let mut bad = 0;
        {
            let mut st = self.st.borrow_mut();
            for v in values.into_iter().skip(4) {
                let Value::Bulk(member) = v else { continue };
                let field = sha1_hex(&member);
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
                            self.keys.queue,
                            self.keys.bad
                        );
                        st.bad.push((field, member));
                        bad += 1;
                    }
                }
            }
            st.remote = Some(Remote { seq, qlen, leased });
            let trusted = seq >= st.mutation_seq && st.enq.is_empty() && st.acks.is_empty();
            if trusted && st.buffer.is_empty() && qlen == 0 && leased == 0 {
                let now = self.reactor.seconds();
                st.idle_since.get_or_insert(now);
            } else {
                st.idle_since = None;
            }
            if got > 0 {
                st.poll_delay = POLL_MIN;
            }
        }
        if bad > 0 {
            self.stats.inc_value("scheduler/redis/bad_entries", bad);
            self.schedule_flush();
        }
        if got == 0 {
            let low = self.st.borrow().buffer.len() < self.config.prefetch;
            if qlen > 0 && low {
                // Entries are there (the pop was a heartbeat, or another worker won
                // the race): ask again at once.
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

    pub(super) fn data_lost(&self) {
        let first = !std::mem::replace(&mut self.st.borrow_mut().lost, true);
        if !first {
            return;
        }
        log::error!(
            "Redis no longer has this crawl's state ({} is gone): was the server restarted \
             without persistence, or flushed? Closing the spider; the requests it held \
             are lost with the database",
            self.keys.meta
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
                    i.start_heartbeat();
                }
            }
        });
        self.st.borrow_mut().heartbeat = Some(t);
    }

    pub(super) fn is_idle_remote(&self) -> bool {
        let st = self.st.borrow();
        if !st.buffer.is_empty() || !st.enq.is_empty() || !st.acks.is_empty() || !st.opened {
            return false;
        }
        if st.lost {
            return true;
        }
        match (st.remote, st.idle_since) {
            (Some(r), Some(since)) if r.seq >= st.mutation_seq => {
                self.reactor.seconds() - since >= self.config.idle_before_close
            }
            _ => false,
        }
    }

    /// After a reconnection: deletes from this worker's lease hash what it no longer
    /// holds (the `RECONCILE` script). An acknowledgement the old server answered but
    /// lost in a failover would otherwise leave a lease nobody finishes while this
    /// worker lives, and the crawl would never look idle.
    pub(super) fn reconcile_leases(&self) {
        let held: Vec<String> = {
            let st = self.st.borrow();
            st.leases
                .values()
                .cloned()
                .chain(st.buffer.iter().map(|(_, f)| f.clone()))
                .collect()
        };
        let scripts = crate::distributed::scripts::scripts();
        let stats = self.stats.clone();
        let _ = client(self)
            .eval(&scripts.reconcile, &[&self.keys.mine], &held)
            .then(move |r| {
                match r {
                    Ok(v) => {
                        let n = v.as_int().unwrap_or(0);
                        if n > 0 {
                            log::info!(
                                "Removed {n} leases this worker had finished but the server \
                                 still held (acknowledgements lost in a failover)"
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
