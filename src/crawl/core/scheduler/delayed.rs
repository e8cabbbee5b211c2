//! [`DelayedQueue`]: requests with a not-before time (Scrapy #802, never merged there),
//! earliest first, and the timer that wakes the engine for the earliest.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fmt;

use crate::crawl::http::request::Request;
use crate::crawl::http::request::keys;

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
        if let Some(at) = request.meta().get_f64(keys::NOT_BEFORE) {
            return Some(at);
        }
        let delay = request.meta().get_f64(keys::DOWNLOAD_DELAY)?;
        if !(delay > 0.0 && delay.is_finite()) {
            return None;
        }
        let at = now + delay;
        request.meta_mut().insert_static(keys::NOT_BEFORE, at);
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
