//! The prefilter: asking the shared SET dupefilter which fingerprints it holds
//! (`SMISMEMBER`, a plain command) before sending the requests themselves, when most
//! of what this worker sends turns out to be duplicates — a fleet crawling a site
//! whose links other workers have mostly met already. A duplicate then costs the
//! server one set lookup instead of a script's four arguments (the payload included)
//! and its Lua handling: about half the server's time per link, measured. The
//! requests it does not hold go on to `ENQUEUE`, which checks again atomically (another
//! worker may have stored one since), so the prefilter never decides alone that a
//! request is new.
//!
//! The cost is one more round trip for the enqueues, and ordering: a lease's
//! acknowledgement must reach the server after the enqueue of the request's outputs,
//! which now waits for the prefilter's reply. Acknowledgements issued while prefilters
//! are pending wait for them (`held`), then take the usual path.
//!
//! Whether to prefilter follows the share of duplicates among this worker's checked
//! requests, recent batches weighing most ([`SHARE_WEIGHT`]), the first batch setting
//! it (a worker joining a crawl whose links are mostly known prefilters from its second
//! batch on, not after a run-in from zero): on above one half ([`PREFILTER_ABOVE`]),
//! off below. A worker alone on a crawl meets its duplicates in
//! its seen cache and sends mostly new requests: it does not prefilter.

use std::collections::BTreeSet;

use super::leases::Lease;
use crate::defer::Deferred;

/// The weight of a batch's duplicate share in the running share.
pub(super) const SHARE_WEIGHT: f64 = 0.2;

/// Prefilter while more than this share of the checked requests are duplicates (the
/// break-even measured on redis-server 7.0: a duplicate costs ~1.1 µs in `SMISMEMBER`
/// against ~2.4 µs in `ENQUEUE`, so prefiltering pays from ~45% duplicates).
pub(super) const PREFILTER_ABOVE: f64 = 0.5;

/// What the scheduler keeps for the prefilter.
#[derive(Default)]
pub(super) struct PrefilterState {
    /// The running share of duplicates among the checked requests (`None` before the
    /// first batch).
    pub(super) share: Option<f64>,
    /// Prefilters awaiting their reply, by id.
    pub(super) pending: BTreeSet<u64>,
    pub(super) next_id: u64,
    /// Acknowledgements waiting for the prefilters pending when they were issued: the
    /// newest of those ids, and the leases.
    pub(super) held: Vec<(u64, Vec<Lease>)>,
    /// The server cannot answer `SMISMEMBER` (before Redis 6.2): never again.
    pub(super) off: bool,
    /// Fired when no prefilter is pending (the scheduler closing).
    pub(super) waiters: Vec<Deferred<()>>,
}

impl PrefilterState {
    /// Whether acknowledgements or prefilters are still on their way.
    pub(super) fn busy(&self) -> bool {
        !self.pending.is_empty() || !self.held.is_empty()
    }

    /// Whether to prefilter now.
    pub(super) fn wanted(&self) -> bool {
        !self.off && self.share.is_some_and(|s| s > PREFILTER_ABOVE)
    }

    /// Counts a batch's `dups` among its `checked` requests into the running share.
    pub(super) fn note(&mut self, dups: usize, checked: usize) {
        if checked > 0 {
            let batch = dups as f64 / checked as f64;
            self.share = Some(match self.share {
                Some(s) => s * (1.0 - SHARE_WEIGHT) + batch * SHARE_WEIGHT,
                None => batch,
            });
        }
    }
}

/// Whether a request with this `dont_filter` argument is checked against the
/// dupefilter.
pub(super) fn checked(dont_filter: &[u8]) -> bool {
    dont_filter != b"1"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_batch_sets_the_share_and_later_ones_move_it() {
        let mut p = PrefilterState::default();
        assert!(!p.wanted());
        p.note(0, 0);
        assert!(!p.wanted(), "a batch with nothing checked says nothing");
        p.note(15, 16);
        assert!(p.wanted(), "mostly duplicates from the first batch on");
        for _ in 0..3 {
            p.note(0, 16);
        }
        assert!(!p.wanted(), "three new batches turn it off");
        let mut alone = PrefilterState::default();
        alone.note(1, 16);
        assert!(!alone.wanted());
    }
}
