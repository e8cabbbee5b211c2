//! When the scheduler's writes go: a flush sends the writes whose shard's turn it is
//! (`turns.rs`) and the pop the buffer wants, in one round trip; the flush timer is set
//! for when the first shard's writes cannot wait longer for a pop. What is sent and
//! what the replies mean is `io.rs`'s.

use super::{Enqueue, Inner, Lease, client, shard_of};
use crate::client::redis::Value;

impl Inner {
    /// A flush for what can wait (enqueues above the buffer's low-water mark,
    /// acknowledgements, quarantined entries): when the first shard's writes could
    /// have to go without a pop (`turns.rs`), `REDIS_FLUSH_DELAY` from now at the
    /// soonest.
    pub(super) fn schedule_flush(&self) {
        let at = self.writes_deadline();
        let now = self.reactor.seconds();
        self.schedule_flush_in((at - now).max(self.config.flush_delay));
    }

    /// The earliest moment a write arriving now could have to go alone.
    fn writes_deadline(&self) -> f64 {
        let st = self.st.borrow();
        let (n, interval, grace) = self.pacing(&st);
        st.turns.earliest_deadline(n, interval, grace)
    }

    /// The shard count, how long after a shard's last writes the next are due
    /// (`REDIS_FLUSH_DELAY` × the count) and how long due ones then wait for a pop.
    fn pacing(&self, st: &super::State) -> (usize, f64, f64) {
        let n = self.shards.borrow().len().max(1);
        let delay = self.config.flush_delay;
        (n, delay * n as f64, st.turns.grace(n, delay))
    }

    /// A flush at the latest `delay` seconds from now (an earlier one already due
    /// stands; a later one is brought forward).
    fn schedule_flush_in(&self, delay: f64) {
        let mut st = self.st.borrow_mut();
        if st.closing {
            return;
        }
        let due = self.reactor.seconds() + delay;
        if let Some(t) = &st.flush_timer {
            if st.flush_due <= due {
                return;
            }
            if t.reset(delay).is_ok() {
                st.flush_due = due;
                return;
            }
        }
        let me = self.me.clone();
        st.flush_due = due;
        st.flush_timer = Some(self.reactor.call_later(delay, move || {
            if let Some(i) = me.upgrade() {
                i.st.borrow_mut().flush_timer = None;
                i.flush();
            }
        }));
    }

    /// The buffer's low-water mark: below it a pop goes at once (half of
    /// `REDIS_PREFETCH`, rounded up).
    pub(super) fn low_water(&self) -> usize {
        self.config.prefetch.div_ceil(2)
    }

    /// Whether the buffer is below its low-water mark.
    pub(super) fn buffer_low(&self) -> bool {
        self.st.borrow().buffer.len() < self.low_water()
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
        self.schedule_flush_in(0.0);
    }

    /// Sends the writes whose turn it is (`turns.rs`), then a pop if one is wanted: one
    /// round trip.
    pub(super) fn flush(&self) {
        self.flush_turn(false);
    }

    /// A flush; with `all`, of every shard's writes whatever their turn (before
    /// `CLOSE`).
    pub(super) fn flush_turn(&self, all: bool) {
        let (enq, acks, ready, bad, pop, seq) = {
            let mut st = self.st.borrow_mut();
            if !st.opened {
                // The shards are known once open: everything waits for it.
                return;
            }
            let (n, interval, grace) = self.pacing(&st);
            st.flush_seq += 1;
            let seq = st.flush_seq;
            let pop = if st.pop_inflight || !std::mem::take(&mut st.pop_wanted) {
                None
            } else {
                st.pop_inflight = true;
                Some(self.config.prefetch.saturating_sub(st.buffer.len()))
            };
            for e in std::mem::take(&mut st.enq) {
                let k = if n == 1 {
                    0
                } else {
                    shard_of(shard_key(&e), n)
                };
                st.turns.push(k, e.epoch, e);
            }
            let other = other_writes(&st, n);
            let now = self.reactor.seconds();
            let mut turn = if all {
                vec![true; n]
            } else {
                st.turns.overdue(n, now, interval, grace, &other)
            };
            // A pop takes its shard's writes when they are due, or when the worker may
            // need them (they may be what it pops); alone, they wait: fewer and larger
            // batches, read by the server in the pop's wake-up.
            let k = st.next_shard % n;
            if !all
                && pop.is_some_and(|want| {
                    st.turns.waits(k, &other)
                        && (st.turns.due(k, now, interval, &other) || !pop_goes_alone(&st, want))
                })
            {
                turn[k] = true;
            }
            if pop.is_some() {
                st.turns.popped(now);
            }
            let enq = st.turns.take(&turn);
            let ready = take_turn(&mut st.ready_acks, |l| turn[l.0 % n]);
            let bad = take_turn(&mut st.bad, |(l, _)| turn[l.0 % n]);
            for (k, _) in turn.iter().enumerate().filter(|(_, t)| **t) {
                st.turns.sent(k, now);
            }
            // The acknowledgements wait for a flush with writes (not a pop alone).
            let acks = if pop.is_none() || turn.contains(&true) {
                let taken = std::mem::take(&mut st.acks);
                st.turns.add_wave(seq, taken);
                st.turns.release()
            } else {
                Vec::new()
            };
            if !enq.is_empty() || !ready.is_empty() || !bad.is_empty() || !acks.is_empty() {
                st.mutation_seq = seq;
            }
            // Writes left: a flush when the first cannot wait longer for a pop (the
            // shards this turn took have no acknowledgements or entries left).
            let other: Vec<bool> = other.iter().zip(&turn).map(|(o, t)| *o && !t).collect();
            let mut next = st.turns.next_deadline(n, interval, grace, &other);
            if !st.acks.is_empty() {
                // Acknowledgements a pop left: a wave by the first deadline.
                let due = st.turns.earliest_deadline(n, interval, grace);
                next = Some(next.map_or(due, |d| d.min(due)));
            }
            if let Some(due) = next {
                drop(st);
                self.schedule_flush_in((due - now).max(0.0));
            }
            (enq, acks, ready, bad, pop, seq)
        };
        let shards = self.shards.borrow().clone();
        if !ready.is_empty() {
            self.ack(&shards, &ready);
        }
        let first_batch = enq.first().map(|(k, _)| *k);
        for (k, batch) in enq {
            self.send_batch(&shards, k, batch);
        }
        for (k, keys) in shards.iter().enumerate() {
            let mut rpush: Vec<&[u8]> = vec![b"RPUSH", keys.bad.as_bytes()];
            rpush.extend(
                bad.iter()
                    .filter(|((s, _, _), _)| *s == k)
                    .map(|(_, m)| m.as_slice()),
            );
            if rpush.len() > 2 {
                let _ = client(self).command(&rpush).add_errback(|f| {
                    log::error!("Cannot move bad entries to the :bad list: {f}");
                    Ok(Value::Nil)
                });
            }
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
            // Never acknowledged: `CLOSE` puts them back (`RECONCILE` must not delete
            // them meanwhile).
            self.st.borrow_mut().withheld.extend(acks);
            Vec::new()
        } else {
            acks
        };
        if !acks.is_empty() || !bad.is_empty() {
            let mut done: Vec<Lease> = acks;
            done.extend(bad.into_iter().map(|(lease, _)| lease));
            self.send_acks(done);
        }
        // The shard this flush writes to (its pop's, else its first batch's): what
        // rides along reaches that master in the same write.
        let wrote = pop.map(|n| self.send_pop(n, seq)).or(first_batch);
        if shards.len() > 1
            && let Some(k) = wrote
        {
            let now = self.reactor.seconds();
            self.shared.shard_writes.writing(k, shards.len(), now);
        }
    }
}

/// What decides a request's shard: its fingerprint (its URL without one).
fn shard_key(e: &Enqueue) -> &[u8] {
    if e.args[1].is_empty() {
        e.url.as_bytes()
    } else {
        e.args[1].as_slice()
    }
}

/// Which of `n` shards have acknowledgements or quarantined entries waiting.
fn other_writes(st: &super::State, n: usize) -> Vec<bool> {
    let mut other = vec![false; n];
    for &(k, _, _) in st.ready_acks.iter().chain(st.bad.iter().map(|(l, _)| l)) {
        if let Some(o) = other.get_mut(k) {
            *o = true;
        }
    }
    other
}

/// Takes the entries of `v` that `this_turn` picks, keeping the others in order.
fn take_turn<T>(v: &mut Vec<T>, this_turn: impl Fn(&T) -> bool) -> Vec<T> {
    let (taken, kept) = std::mem::take(v).into_iter().partition(this_turn);
    *v = kept;
    taken
}

/// Whether a pop of `n` may go without this worker's pending writes: the shard it goes
/// to held at least `n` at the last pop, and that pop found something (a worker short
/// of work sends what it enqueued with its pop: it may be what the pop finds).
fn pop_goes_alone(st: &super::State, n: usize) -> bool {
    let next = st.remote.get(st.next_shard % st.remote.len().max(1));
    st.empty_streak == 0 && next.copied().flatten().is_some_and(|r| r.qlen >= n as i64)
}
