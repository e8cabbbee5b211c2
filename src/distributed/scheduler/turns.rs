//! When each shard's writes go, and what waits for its turn. A worker's writes to a
//! shard (its requests, acknowledgements, quarantined entries) are due
//! `REDIS_FLUSH_DELAY` × the shard count after the last ones: from then they go with
//! the next pop to that shard, which the server reads in the same wake-up, or alone
//! once a grace of two pop rounds over the shards has passed too (two delays a shard
//! at least, the time between pops counted up to [`GAP_CAP`]; none with a delay of
//! 0). A pop takes its shard's writes before they are due when the worker may need
//! them (its queue ran short). One server thus gets a worker's writes with a pop
//! every delay or so; each of a cluster's S masters once per S delays or S pops, a
//! batch as large as one server's, so a master answers 1/S of the calls one server
//! would, not as many (the items pipeline's pushes, one list per flush in turn, keep
//! the same rhythm).
//!
//! A request waits for its shard's turn, in arrival order, with the flush epoch it
//! arrived in (the flush count then). An acknowledgement must not reach Redis before
//! the outputs of its request are issued: the acknowledgements a flush takes form a
//! wave, released once no request that arrived before that flush still waits for its
//! shard's turn (then the prefilter, and on a cluster the barrier, hold them as
//! before).

use std::collections::VecDeque;

use super::leases::Lease;

/// The writes waiting for their shard's turn.
#[derive(Debug)]
pub(super) struct Turns<T> {
    /// Per shard: its requests in arrival order, each with its epoch.
    pending: Vec<Vec<(u64, T)>>,
    /// Acknowledgements by the epoch of the flush that took them.
    waves: VecDeque<(u64, Vec<Lease>)>,
    /// When each shard's writes last went (reactor seconds).
    sent_at: Vec<f64>,
    /// The mean time between this worker's pops (seconds, at most [`GAP_CAP`]).
    pop_gap: f64,
    /// When the last pop went.
    last_pop: Option<f64>,
}

/// The longest time between pops the grace counts: a worker that pops seldom (a
/// throttled crawl, an idle poll) still sends its writes within a fraction of a
/// second.
const GAP_CAP: f64 = 0.25;

impl<T> Default for Turns<T> {
    fn default() -> Self {
        Turns {
            pending: Vec::new(),
            waves: VecDeque::new(),
            sent_at: Vec::new(),
            pop_gap: 0.0,
            last_pop: None,
        }
    }
}

impl<T> Turns<T> {
    /// Queues `item`, which arrived in `epoch`, for `shard`'s turn.
    pub(super) fn push(&mut self, shard: usize, epoch: u64, item: T) {
        if self.pending.len() <= shard {
            self.pending.resize_with(shard + 1, Vec::new);
        }
        self.pending[shard].push((epoch, item));
    }

    /// Whether requests wait for `shard`'s turn.
    fn has_requests(&self, shard: usize) -> bool {
        self.pending.get(shard).is_some_and(|p| !p.is_empty())
    }

    /// Whether anything waits: requests, or acknowledgements for them.
    pub(super) fn is_empty(&self) -> bool {
        self.waves.is_empty() && self.pending.iter().all(Vec::is_empty)
    }

    /// Whether shard `k` has writes waiting: requests, or `other` ones
    /// (acknowledgements, quarantined entries).
    pub(super) fn waits(&self, k: usize, other: &[bool]) -> bool {
        self.has_requests(k) || other.get(k).copied().unwrap_or(false)
    }

    /// When shard `k`'s writes are due.
    fn due_at(&self, k: usize, interval: f64) -> f64 {
        self.sent_at.get(k).copied().unwrap_or(f64::NEG_INFINITY) + interval
    }

    /// Whether shard `k` has writes waiting that are due at `now`: a pop to it takes
    /// them along.
    pub(super) fn due(&self, k: usize, now: f64, interval: f64, other: &[bool]) -> bool {
        self.waits(k, other) && self.due_at(k, interval) <= now
    }

    /// Notes a pop sent at `now` (the gap between pops sets the grace).
    pub(super) fn popped(&mut self, now: f64) {
        if let Some(last) = self.last_pop {
            let gap = (now - last).clamp(0.0, GAP_CAP);
            self.pop_gap = 0.8 * self.pop_gap + 0.2 * gap;
        }
        self.last_pop = Some(now);
    }

    /// How long due writes of `n` shards wait for a pop to their shard: two rounds of
    /// pops over the shards, two delays at least (0 with no delay).
    pub(super) fn grace(&self, n: usize, delay: f64) -> f64 {
        if delay <= 0.0 {
            return 0.0;
        }
        2.0 * n as f64 * delay.max(self.pop_gap)
    }

    /// Which of `n` shards have writes waiting that cannot wait longer at `now`: due
    /// `interval` after the last ones, then `grace` more.
    pub(super) fn overdue(
        &self,
        n: usize,
        now: f64,
        interval: f64,
        grace: f64,
        other: &[bool],
    ) -> Vec<bool> {
        (0..n)
            .map(|k| self.waits(k, other) && self.due_at(k, interval) + grace <= now)
            .collect()
    }

    /// When the first of `n` shards with writes waiting cannot wait longer; `None`
    /// when none waits.
    pub(super) fn next_deadline(
        &self,
        n: usize,
        interval: f64,
        grace: f64,
        other: &[bool],
    ) -> Option<f64> {
        (0..n)
            .filter(|&k| self.waits(k, other))
            .map(|k| self.due_at(k, interval) + grace)
            .min_by(f64::total_cmp)
    }

    /// The first moment a write arriving now could have to go alone: the earliest
    /// deadline of `n` shards, were they all waiting.
    pub(super) fn earliest_deadline(&self, n: usize, interval: f64, grace: f64) -> f64 {
        (0..n)
            .map(|k| self.due_at(k, interval) + grace)
            .fold(f64::INFINITY, f64::min)
    }

    /// Marks shard `k`'s writes as gone at `now`.
    pub(super) fn sent(&mut self, k: usize, now: f64) {
        if self.sent_at.len() <= k {
            self.sent_at.resize(k + 1, f64::NEG_INFINITY);
        }
        self.sent_at[k] = now;
    }

    /// Takes the requests waiting for the shards `turn` picks: per shard, in arrival
    /// order.
    pub(super) fn take(&mut self, turn: &[bool]) -> Vec<(usize, Vec<T>)> {
        let mut out = Vec::new();
        for (k, p) in self.pending.iter_mut().enumerate() {
            if turn.get(k).copied().unwrap_or(false) && !p.is_empty() {
                out.push((k, std::mem::take(p).into_iter().map(|(_, t)| t).collect()));
            }
        }
        out
    }

    /// Adds the acknowledgements taken by the flush of `epoch`.
    pub(super) fn add_wave(&mut self, epoch: u64, acks: Vec<Lease>) {
        if !acks.is_empty() {
            self.waves.push_back((epoch, acks));
        }
    }

    /// The acknowledgements free to go: those of the waves no waiting request arrived
    /// before (every output of theirs has been taken).
    pub(super) fn release(&mut self) -> Vec<Lease> {
        let oldest = self
            .pending
            .iter()
            .filter_map(|p| p.first().map(|(e, _)| *e))
            .min();
        let mut out = Vec::new();
        while let Some((epoch, _)) = self.waves.front() {
            if oldest.is_some_and(|o| o < *epoch) {
                break;
            }
            if let Some((_, acks)) = self.waves.pop_front() {
                out.extend(acks);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_takes_its_shards_requests_in_order_and_leaves_the_others() {
        let mut t = Turns::default();
        t.push(0, 1, "a");
        t.push(2, 1, "b");
        t.push(0, 2, "c");
        assert_eq!(t.take(&[true, true, false]), vec![(0, vec!["a", "c"])]);
        assert!(!t.has_requests(0) && t.has_requests(2) && !t.is_empty());
        assert_eq!(t.take(&[true, true, true]), vec![(2, vec!["b"])]);
        assert!(t.is_empty());
    }

    #[test]
    fn due_writes_wait_for_a_pop_to_their_shard_until_the_grace_runs_out() {
        let mut t = Turns::default();
        let none = [false; 3];
        t.push(1, 1, ());
        t.push(2, 1, ());
        // Never sent: due at once, the shards with writes only.
        assert!(t.due(1, 10.0, 0.06, &none) && t.due(2, 10.0, 0.06, &none));
        assert!(!t.due(0, 10.0, 0.06, &none));
        t.take(&[false, true, false]);
        t.sent(1, 10.0);
        t.push(1, 2, ());
        assert!(!t.due(1, 10.05, 0.06, &none) && t.due(1, 10.06, 0.06, &none));
        // No pop came: shard 2's writes go alone once the grace has passed too.
        assert_eq!(
            t.overdue(3, 10.0, 0.06, 0.12, &none),
            vec![false, false, true]
        );
        t.take(&[false, false, true]);
        t.sent(2, 10.0);
        assert_eq!(
            t.next_deadline(3, 0.06, 0.12, &none),
            Some(10.0 + 0.06 + 0.12)
        );
        assert_eq!(t.overdue(3, 10.17, 0.06, 0.12, &none), vec![false; 3]);
        assert_eq!(
            t.overdue(3, 10.18, 0.06, 0.12, &none),
            vec![false, true, false]
        );
        // Acknowledgements or quarantined entries of a shard are writes too.
        t.take(&[true; 3]);
        assert_eq!(t.next_deadline(3, 0.06, 0.12, &none), None);
        assert!(t.due(0, 10.2, 0.06, &[true, false, false]));
    }

    #[test]
    fn the_grace_is_two_rounds_of_pops_over_the_shards() {
        let mut t: Turns<()> = Turns::default();
        // Pops every 50 ms (slower than the 20 ms delay): 2 × 3 × ~50 ms.
        for i in 0..40 {
            t.popped(i as f64 * 0.05);
        }
        assert!(
            (t.grace(3, 0.02) - 0.3).abs() < 0.001,
            "{}",
            t.grace(3, 0.02)
        );
        // Pops faster than the delay: two delays a shard.
        let mut fast: Turns<()> = Turns::default();
        for i in 0..40 {
            fast.popped(i as f64 * 0.005);
        }
        assert!((fast.grace(3, 0.02) - 0.12).abs() < 1e-9);
        // A pause (idle polls) counts as GAP_CAP at most; no delay, no grace.
        t.popped(100.0);
        assert!(t.grace(1, 0.02) <= 2.0 * GAP_CAP + 1e-9);
        assert_eq!(t.grace(3, 0.0), 0.0);
    }

    #[test]
    fn a_wave_waits_for_every_request_that_arrived_before_it() {
        let mut t = Turns::default();
        // Outputs of the pages finished before flush 3 wait on shards 0 and 1.
        t.push(0, 2, ());
        t.push(1, 2, ());
        t.add_wave(3, vec![(0, 7, 1)]);
        // Flush 3 took shard 0's: shard 1's still wait, and so does the wave.
        t.take(&[true, false]);
        assert!(t.release().is_empty());
        // A request that arrived after the wave does not hold it.
        t.push(0, 3, ());
        t.add_wave(4, vec![(1, 8, 2)]);
        t.take(&[false, true]);
        assert_eq!(t.release(), vec![(0, 7, 1)]);
        // The second wave (flush 4) waits for shard 0's request of epoch 3.
        t.take(&[true, false]);
        assert_eq!(t.release(), vec![(1, 8, 2)]);
        assert!(t.is_empty());
    }

    #[test]
    fn with_nothing_waiting_a_wave_goes_at_once() {
        let mut t: Turns<()> = Turns::default();
        t.add_wave(5, vec![(0, 1, 1), (0, 1, 2)]);
        t.add_wave(6, Vec::new());
        assert_eq!(t.release(), vec![(0, 1, 1), (0, 1, 2)]);
        assert!(t.is_empty());
    }
}
