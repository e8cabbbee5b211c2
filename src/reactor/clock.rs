//! Time: the [`Clock`] every timer-driven part of trawl takes, the timer queue behind it,
//! [`DelayedCall`] handles (Twisted's `IDelayedCall`) and the [`ManualClock`] used by
//! deterministic tests (Twisted's `task.Clock`).
//!
//! One timer machinery serves both time sources. A [`Clock`] is a cheap, cloneable handle
//! (an `Rc`) to a timer queue plus a time source that is either the monotonic system
//! clock (what a [`Reactor`](super::Reactor) runs on) or a manually advanced counter
//! (what [`ManualClock::advance`] moves). Code that schedules work takes a `&Clock` and
//! never knows which one it got.
//!
//! # Implementation notes
//!
//! Times are integer nanoseconds since the clock's epoch, so `advance(0.1)` three times
//! lands exactly on `0.3` (Twisted's float arithmetic does not). The API speaks float
//! seconds, as Twisted and Scrapy's settings do.
//!
//! Pending calls live in a radix heap keyed by due time (see [`TimerQueue`]); a global
//! schedule counter `seq` breaks ties, so calls due at the same time run in the order
//! they were scheduled. Each call is an `Rc<TimerCell>` shared by its queue entry and
//! every [`DelayedCall`] handle. Cancelling marks the cell and removes the entry at once
//! when it is the newest in its bucket (schedule-then-cancel, the timeout pattern);
//! otherwise the stale entry is skipped when it surfaces, and the buckets are compacted
//! when more than half of the entries are stale (Twisted's `base.py` does the same with
//! its `_cancellations` counter). `reset` and `delay` push a fresh entry with a new
//! `seq`. Schedule is O(1), cancel O(1) amortized, pop amortized O(log max-key).
//!
//! While a reactor runs its due calls, newly scheduled calls are *staged* and only join
//! the heap when the pass ends, so a call scheduled with delay 0 runs on the next
//! iteration, after I/O has been polled (Twisted's `_newTimedCalls`). [`ManualClock`]
//! does not stage: `advance` runs everything whose time has come, including calls
//! scheduled during the advance, as `task.Clock.advance` does.

use super::scope::ScopeId;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Nanoseconds in one second.
const NANOS_PER_SEC: f64 = 1_000_000_000.0;

/// Converts float seconds to whole nanoseconds, clamping negatives and NaN to zero and
/// infinity to the far future.
pub(crate) fn secs_to_nanos(secs: f64) -> u64 {
    if secs.is_nan() || secs <= 0.0 {
        return 0;
    }
    let nanos = (secs * NANOS_PER_SEC).round();
    if nanos >= u64::MAX as f64 {
        u64::MAX
    } else {
        nanos as u64
    }
}

/// Converts nanoseconds to float seconds.
pub(crate) fn nanos_to_secs(nanos: u64) -> f64 {
    nanos as f64 / NANOS_PER_SEC
}

/// Why a [`DelayedCall`] could not be cancelled, reset or delayed.
///
/// These are Twisted's `AlreadyCancelled` and `AlreadyCalled` exceptions; here they are
/// values, never panics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DelayedCallError {
    /// The call already ran (or is running right now).
    AlreadyCalled,
    /// The call was cancelled before it ran.
    AlreadyCancelled,
}

impl fmt::Display for DelayedCallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AlreadyCalled => f.write_str("the delayed call has already been called"),
            Self::AlreadyCancelled => f.write_str("the delayed call has already been cancelled"),
        }
    }
}

impl std::error::Error for DelayedCallError {}

/// Lifecycle of one scheduled call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Pending,
    Called,
    Cancelled,
}

/// The shared state of one scheduled call: its status, due time and function. The
/// function is stored inline (an unsized tail), so a call costs one allocation.
struct TimerCell<F: ?Sized = dyn Callable> {
    status: Cell<Status>,
    /// Due time in nanoseconds since the clock's epoch.
    when: Cell<u64>,
    /// The `seq` of the queue entry that currently represents this call; older entries
    /// for the same cell (left behind by `reset`/`delay`) are stale.
    seq: Cell<u64>,
    /// The scope current when the call was scheduled: it runs in it.
    scope: ScopeId,
    func: F,
}

/// A stored call, run or dropped at most once.
trait Callable {
    /// Moves the function out and runs it (nothing if it already ran or was dropped).
    fn run(&self);
    /// Drops the function without running it.
    fn discard(&self);
}

impl<G: FnOnce()> Callable for Cell<Option<G>> {
    fn run(&self) {
        if let Some(g) = Cell::take(self) {
            g();
        }
    }

    fn discard(&self) {
        drop(Cell::take(self));
    }
}

/// One queue entry: a due time (the queue key), the `seq` that makes it current, and
/// the call it stands for.
struct Entry {
    /// Queue key: the due time, clamped to be no earlier than the last popped key.
    key: u64,
    seq: u64,
    /// Goes before the entries already queued for its time (a call moved later).
    front: bool,
    cell: Rc<TimerCell>,
}

impl Entry {
    fn is_live(&self) -> bool {
        self.cell.status.get() == Status::Pending && self.cell.seq.get() == self.seq
    }
}

/// Number of radix buckets: bucket 0 holds keys equal to `last`, bucket `i` (1..=64)
/// keys whose highest bit differing from `last` is bit `i - 1`.
const BUCKETS: usize = 65;

fn bucket_of(key: u64, last: u64) -> usize {
    if key == last {
        0
    } else {
        64 - (key ^ last).leading_zeros() as usize
    }
}

/// The timer store: a radix heap (a monotone priority queue) with lazy cancellation.
///
/// Timer keys never go below the last key popped (a call is never due before "now"), so
/// a radix heap applies: push is O(1), pop is amortized O(log(max key)) with each entry
/// moved at most a few times, and all the moving is sequential memory work. Entries with
/// equal keys always share a bucket and keep their insertion order, so equal due times
/// pop first-in, first-out.
struct TimerQueue {
    buckets: Vec<VecDeque<Entry>>,
    /// The key bucket 0 holds; every entry's key is >= it, and it is <= now.
    last: u64,
    /// `(bucket, min key)` of the lowest non-empty bucket above 0, when known.
    min_cache: Option<(usize, u64)>,
    /// Entries in the buckets, stale ones included.
    len: usize,
    /// Calls scheduled while a reactor pass runs due calls; they join after it.
    staged: Vec<Entry>,
    staging: bool,
    next_seq: u64,
    /// Entries in the buckets that no longer represent a pending call.
    stale: usize,
    /// Pending (not cancelled, not called) calls.
    pending: usize,
}

impl TimerQueue {
    fn new() -> Self {
        Self {
            buckets: (0..BUCKETS).map(|_| VecDeque::new()).collect(),
            last: 0,
            min_cache: None,
            len: 0,
            staged: Vec::new(),
            staging: false,
            next_seq: 0,
            stale: 0,
            pending: 0,
        }
    }

    fn push(&mut self, cell: Rc<TimerCell>, front: bool) {
        let seq = self.next_seq;
        self.next_seq += 1;
        cell.seq.set(seq);
        let entry = Entry {
            key: cell.when.get(),
            seq,
            front,
            cell,
        };
        if self.staging {
            self.staged.push(entry);
        } else {
            self.insert(entry);
        }
    }

    fn insert(&mut self, mut entry: Entry) {
        entry.key = entry.key.max(self.last);
        let b = bucket_of(entry.key, self.last);
        if let Some((ci, cmin)) = self.min_cache {
            if b < ci {
                self.min_cache = None;
            } else if b == ci && entry.key < cmin {
                self.min_cache = Some((ci, entry.key));
            }
        }
        if entry.front {
            self.buckets[b].push_front(entry);
        } else {
            self.buckets[b].push_back(entry);
        }
        self.len += 1;
    }

    /// Removes the entry for `cell` if it is the newest in its bucket (the common
    /// "schedule, then cancel soon" case); otherwise records that one entry went stale.
    fn forget(&mut self, when: u64, seq: u64) {
        let key = when.max(self.last);
        let bucket = &mut self.buckets[bucket_of(key, self.last)];
        if bucket.back().is_some_and(|e| e.seq == seq) {
            bucket.pop_back();
            self.len -= 1;
            return;
        }
        if self.staged.last().is_some_and(|e| e.seq == seq) {
            self.staged.pop();
            return;
        }
        self.stale += 1;
        if self.stale > 64 && self.stale * 2 > self.len {
            for bucket in &mut self.buckets {
                bucket.retain(Entry::is_live);
            }
            self.min_cache = None;
            self.len = self.buckets.iter().map(VecDeque::len).sum();
            self.stale = 0;
        }
    }

    /// The bucket holding the earliest entry and that entry's key, moving nothing:
    /// `last` must never pass "now", or calls scheduled before the earliest pending
    /// one would be clamped to its later time. Drops stale entries at the front of
    /// bucket 0; the lowest other bucket's minimum is cached.
    fn lowest(&mut self) -> Option<(usize, u64)> {
        while let Some(front) = self.buckets[0].front() {
            if front.is_live() {
                return Some((0, self.last));
            }
            self.buckets[0].pop_front();
            self.len -= 1;
            self.stale = self.stale.saturating_sub(1);
        }
        if let Some((i, min)) = self.min_cache
            && !self.buckets[i].is_empty()
        {
            return Some((i, min));
        }
        let i = (1..BUCKETS).find(|&i| !self.buckets[i].is_empty())?;
        let min = self.buckets[i].iter().map(|e| e.key).min()?;
        self.min_cache = Some((i, min));
        Some((i, min))
    }

    /// The earliest pending key (possibly a cancelled call's: a harmless early wake).
    fn peek_key(&mut self) -> Option<u64> {
        self.lowest().map(|(_, key)| key)
    }

    /// Pops the earliest live call due at or before `now`, marking it called.
    fn pop_due(&mut self, now: u64) -> Option<Rc<TimerCell>> {
        loop {
            let (i, min) = self.lowest()?;
            if min > now {
                return None;
            }
            if i == 0 {
                let entry = self.buckets[0].pop_front()?;
                self.len -= 1;
                entry.cell.status.set(Status::Called);
                self.pending = self.pending.saturating_sub(1);
                return Some(entry.cell);
            }
            // Redistribute bucket i around its minimum (which is due, so `last` stays
            // <= now). Keys alone decide: liveness is checked only at the front of
            // bucket 0, so this pass never touches the (randomly placed) cells. The
            // bucket is drained in place and keeps its allocation.
            self.last = min;
            self.min_cache = None;
            let (lower, upper) = self.buckets.split_at_mut(i);
            for e in upper[0].drain(..) {
                lower[bucket_of(e.key, min)].push_back(e);
            }
        }
    }

    fn unstage(&mut self) {
        self.staging = false;
        for entry in std::mem::take(&mut self.staged) {
            self.insert(entry);
        }
    }

    fn live_entries(&self) -> impl Iterator<Item = &Entry> {
        self.buckets
            .iter()
            .flatten()
            .chain(self.staged.iter())
            .filter(|e| e.is_live())
    }
}

/// Where a clock's "now" comes from.
enum TimeSource {
    /// The monotonic epoch and the wall-clock time (UNIX seconds) at that epoch.
    Monotonic(Instant, f64),
    Manual(Cell<u64>),
}

struct ClockInner {
    source: TimeSource,
    queue: RefCell<TimerQueue>,
}

/// A handle to a time source and its timer queue: Twisted's `IReactorTime`.
///
/// Cloning is cheap and every clone drives the same timers. The reactor owns a monotonic
/// clock ([`Reactor::clock`](super::Reactor::clock)); tests use a [`ManualClock`].
///
/// # Examples
///
/// ```
/// use std::{cell::Cell, rc::Rc};
/// use trawl::reactor::ManualClock;
///
/// let clock = ManualClock::new();
/// let fired = Rc::new(Cell::new(false));
/// let f = fired.clone();
/// let call = clock.call_later(1.5, move || f.set(true));
/// clock.advance(1.0);
/// assert!(!fired.get() && call.active());
/// clock.advance(0.5);
/// assert!(fired.get() && !call.active());
/// ```
#[derive(Clone)]
pub struct Clock {
    inner: Rc<ClockInner>,
}

impl Clock {
    /// A clock on the system's monotonic time, starting at 0.0 seconds now.
    pub fn monotonic() -> Self {
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        Self::with_source(TimeSource::Monotonic(Instant::now(), wall))
    }

    fn manual() -> Self {
        Self::with_source(TimeSource::Manual(Cell::new(0)))
    }

    fn with_source(source: TimeSource) -> Self {
        Self {
            inner: Rc::new(ClockInner {
                source,
                queue: RefCell::new(TimerQueue::new()),
            }),
        }
    }

    /// Whether this clock is a [`ManualClock`] (time moves only when advanced).
    pub fn is_manual(&self) -> bool {
        matches!(self.inner.source, TimeSource::Manual(_))
    }

    /// Now, in nanoseconds since the clock's epoch.
    pub(crate) fn now_nanos(&self) -> u64 {
        match &self.inner.source {
            TimeSource::Monotonic(epoch, _) => {
                u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
            }
            TimeSource::Manual(now) => now.get(),
        }
    }

    /// Now, in seconds since the clock's epoch (Twisted's `seconds()`).
    pub fn seconds(&self) -> f64 {
        nanos_to_secs(self.now_nanos())
    }

    /// Wall-clock time in UNIX seconds, advancing with this clock: the real clock's
    /// start time plus [`seconds`](Self::seconds); a [`ManualClock`] starts at the UNIX
    /// epoch (0.0). Absolute times that outlive the process (a request's not-before
    /// time in a disk or Redis queue, a cache entry's age) use this.
    pub fn wall_seconds(&self) -> f64 {
        match &self.inner.source {
            TimeSource::Monotonic(_, wall) => wall + self.seconds(),
            TimeSource::Manual(_) => self.seconds(),
        }
    }

    /// Schedules `f` to run `delay` seconds from now (Twisted's `callLater`).
    ///
    /// A negative or NaN delay means "as soon as possible". Calls due at the same time
    /// run in the order they were scheduled. The returned handle can cancel, reset or
    /// delay the call; dropping it does not cancel anything.
    pub fn call_later<F>(&self, delay: f64, f: F) -> DelayedCall
    where
        F: FnOnce() + 'static,
    {
        self.call_at_nanos(self.now_nanos().saturating_add(secs_to_nanos(delay)), f)
    }

    /// Schedules `f` at an absolute time in seconds since the clock's epoch.
    pub fn call_at<F>(&self, when: f64, f: F) -> DelayedCall
    where
        F: FnOnce() + 'static,
    {
        self.call_at_nanos(secs_to_nanos(when), f)
    }

    pub(crate) fn call_at_nanos<F>(&self, when: u64, f: F) -> DelayedCall
    where
        F: FnOnce() + 'static,
    {
        let cell: Rc<TimerCell> = Rc::new(TimerCell {
            status: Cell::new(Status::Pending),
            when: Cell::new(when),
            seq: Cell::new(0),
            scope: ScopeId::current(),
            func: Cell::new(Some(f)),
        });
        let mut queue = self.inner.queue.borrow_mut();
        queue.pending += 1;
        queue.push(cell.clone(), false);
        DelayedCall {
            clock: self.clone(),
            cell,
        }
    }

    /// Every pending call, earliest first (Twisted's `getDelayedCalls`).
    pub fn get_delayed_calls(&self) -> Vec<DelayedCall> {
        let queue = self.inner.queue.borrow();
        let mut live: Vec<&Entry> = queue.live_entries().collect();
        live.sort_by_key(|e| (e.key, e.seq));
        live.into_iter()
            .map(|e| DelayedCall {
                clock: self.clone(),
                cell: e.cell.clone(),
            })
            .collect()
    }

    /// How many calls are pending (scheduled, not yet run or cancelled).
    pub fn pending_count(&self) -> usize {
        self.inner.queue.borrow().pending
    }

    /// Time until the earliest pending call: `None` when nothing is scheduled, zero when
    /// something is already due. The reactor uses it as its poll timeout.
    pub fn time_until_next(&self) -> Option<Duration> {
        let when = self.inner.queue.borrow_mut().peek_key()?;
        Some(Duration::from_nanos(when.saturating_sub(self.now_nanos())))
    }

    /// Runs every call due at `now`. With `stage`, calls scheduled meanwhile wait for the
    /// next pass (reactor semantics); without, they run too if due (`task.Clock`).
    /// Returns how many calls ran. No borrow is held while a call runs.
    pub(crate) fn run_due(&self, now: u64, stage: bool) -> usize {
        if stage {
            self.inner.queue.borrow_mut().staging = true;
        }
        let mut ran = 0;
        loop {
            let next = self.inner.queue.borrow_mut().pop_due(now);
            let Some(cell) = next else { break };
            ran += 1;
            let _scope = cell.scope.enter();
            if !stage {
                // task.Clock: an exception escapes `advance`; later calls stay pending.
                cell.func.run();
                continue;
            }
            if let Err(panic) = catch_unwind(AssertUnwindSafe(|| cell.func.run())) {
                log::error!(
                    "Unhandled panic in a delayed call: {}",
                    super::panic::panic_message(panic.as_ref())
                );
            }
        }
        if stage {
            self.inner.queue.borrow_mut().unstage();
        }
        ran
    }

    fn cancel_cell(&self, cell: &TimerCell) -> Result<(), DelayedCallError> {
        match cell.status.get() {
            Status::Called => Err(DelayedCallError::AlreadyCalled),
            Status::Cancelled => Err(DelayedCallError::AlreadyCancelled),
            Status::Pending => {
                cell.status.set(Status::Cancelled);
                {
                    let mut queue = self.inner.queue.borrow_mut();
                    queue.pending = queue.pending.saturating_sub(1);
                    queue.forget(cell.when.get(), cell.seq.get());
                }
                // Dropped after the borrow ends: the closure's captures may run Drop
                // code that schedules or cancels other calls.
                cell.func.discard();
                Ok(())
            }
        }
    }

    /// Moves a pending call to `when`, in `task.Clock`'s order: the calls list is kept
    /// sorted by a stable sort, so a call moved later goes before the calls already due
    /// at its new time, a call moved earlier after them, and one left at its time keeps
    /// its place.
    fn reschedule(&self, cell: &Rc<TimerCell>, when: u64) {
        let (old_when, old_seq) = (cell.when.get(), cell.seq.get());
        if when == old_when {
            return;
        }
        let mut queue = self.inner.queue.borrow_mut();
        cell.when.set(when);
        queue.push(cell.clone(), when > old_when);
        queue.forget(old_when, old_seq);
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Clock")
            .field("manual", &self.is_manual())
            .field("seconds", &self.seconds())
            .field("pending", &self.pending_count())
            .finish()
    }
}

/// A handle to one scheduled call: Twisted's `IDelayedCall`.
///
/// Handles are cheap to clone; all clones refer to the same call. Dropping a handle does
/// not cancel the call.
#[derive(Clone)]
pub struct DelayedCall {
    clock: Clock,
    cell: Rc<TimerCell>,
}

impl DelayedCall {
    /// Cancels the call.
    ///
    /// # Errors
    ///
    /// [`DelayedCallError::AlreadyCalled`] if it ran (or is running),
    /// [`DelayedCallError::AlreadyCancelled`] if it was cancelled before.
    pub fn cancel(&self) -> Result<(), DelayedCallError> {
        self.clock.cancel_cell(&self.cell)
    }

    /// Reschedules the call to run `secs` seconds from now.
    ///
    /// # Errors
    ///
    /// As [`cancel`](Self::cancel) when the call is no longer pending.
    pub fn reset(&self, secs: f64) -> Result<(), DelayedCallError> {
        self.check_pending()?;
        let when = self.clock.now_nanos().saturating_add(secs_to_nanos(secs));
        self.clock.reschedule(&self.cell, when);
        Ok(())
    }

    /// Pushes the call `secs` seconds later than currently scheduled (earlier if
    /// negative, but never before the clock's epoch).
    ///
    /// # Errors
    ///
    /// As [`cancel`](Self::cancel) when the call is no longer pending.
    pub fn delay(&self, secs: f64) -> Result<(), DelayedCallError> {
        self.check_pending()?;
        let current = self.cell.when.get();
        let when = if secs >= 0.0 {
            current.saturating_add(secs_to_nanos(secs))
        } else {
            current.saturating_sub(secs_to_nanos(-secs))
        };
        self.clock.reschedule(&self.cell, when);
        Ok(())
    }

    /// Whether the call is still pending: neither run nor cancelled.
    pub fn active(&self) -> bool {
        self.cell.status.get() == Status::Pending
    }

    /// Whether the call has run (or is running).
    pub fn called(&self) -> bool {
        self.cell.status.get() == Status::Called
    }

    /// Whether the call was cancelled.
    pub fn cancelled(&self) -> bool {
        self.cell.status.get() == Status::Cancelled
    }

    /// When the call is (or was) due, in seconds since the clock's epoch.
    pub fn get_time(&self) -> f64 {
        nanos_to_secs(self.cell.when.get())
    }

    fn check_pending(&self) -> Result<(), DelayedCallError> {
        match self.cell.status.get() {
            Status::Pending => Ok(()),
            Status::Called => Err(DelayedCallError::AlreadyCalled),
            Status::Cancelled => Err(DelayedCallError::AlreadyCancelled),
        }
    }
}

impl fmt::Debug for DelayedCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayedCall")
            .field("time", &self.get_time())
            .field("status", &self.cell.status.get())
            .finish()
    }
}

/// A clock whose time moves only when told to: Twisted's `task.Clock`.
///
/// It dereferences to [`Clock`], so anything that takes a `&Clock` (LoopingCall,
/// CallLaterOnce, `add_timeout`, the crawl engine) runs on it unchanged, and a test
/// drives it with [`advance`](Self::advance) instead of sleeping.
///
/// # Examples
///
/// ```
/// use std::{cell::RefCell, rc::Rc};
/// use trawl::reactor::ManualClock;
///
/// let clock = ManualClock::new();
/// let log = Rc::new(RefCell::new(Vec::new()));
/// for (delay, name) in [(2.0, "b"), (1.0, "a"), (2.0, "c")] {
///     let log = log.clone();
///     clock.call_later(delay, move || log.borrow_mut().push(name));
/// }
/// clock.pump(&[1.0, 1.0]);
/// assert_eq!(*log.borrow(), ["a", "b", "c"]);
/// assert!(clock.get_delayed_calls().is_empty());
/// ```
#[derive(Clone)]
pub struct ManualClock {
    clock: Clock,
}

impl ManualClock {
    /// A manual clock at 0.0 seconds with nothing scheduled.
    pub fn new() -> Self {
        Self {
            clock: Clock::manual(),
        }
    }

    /// The [`Clock`] handle to give to code under test.
    pub fn clock(&self) -> Clock {
        self.clock.clone()
    }

    /// Moves time forward by `secs` and runs every call whose time has come, in time
    /// order, including calls scheduled during the advance whose time has also come.
    /// While they run, [`seconds`](Clock::seconds) already reads the new time.
    ///
    /// Returns how many calls ran. A negative or NaN amount advances by zero (still
    /// running calls that are already due).
    ///
    /// # Panics
    ///
    /// A panic in a call escapes `advance`, as an exception escapes `task.Clock.advance`:
    /// the test sees it, and the calls due after it stay pending (the next `advance`
    /// runs them). The reactor, by contrast, logs a panicking call and goes on.
    pub fn advance(&self, secs: f64) -> usize {
        let TimeSource::Manual(now) = &self.clock.inner.source else {
            return 0;
        };
        // As in `task.Clock.advance`: time jumps to the target first, then every call due
        // by then runs, earliest first; calls scheduled meanwhile join the queue at once.
        let target = now.get().saturating_add(secs_to_nanos(secs));
        now.set(target);
        self.clock.run_due(target, false)
    }

    /// Advances by each amount in turn (Twisted's `pump`).
    pub fn pump(&self, timings: &[f64]) -> usize {
        timings.iter().map(|&t| self.advance(t)).sum()
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl std::ops::Deref for ManualClock {
    type Target = Clock;

    fn deref(&self) -> &Clock {
        &self.clock
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ManualClock").field(&self.clock).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nanos_conversion_is_exact_for_decimal_steps() {
        assert_eq!(secs_to_nanos(0.1) * 3, secs_to_nanos(0.3));
        assert_eq!(secs_to_nanos(-1.0), 0);
        assert_eq!(secs_to_nanos(f64::NAN), 0);
        assert_eq!(secs_to_nanos(f64::INFINITY), u64::MAX);
    }

    #[test]
    fn compaction_keeps_live_entries() {
        let clock = ManualClock::new();
        let calls: Vec<_> = (0..1000)
            .map(|i| clock.call_later(i as f64, || {}))
            .collect();
        for call in calls.iter().skip(1).step_by(2) {
            call.cancel().unwrap();
        }
        for call in calls.iter().skip(2).step_by(4) {
            call.cancel().unwrap();
        }
        assert_eq!(clock.pending_count(), 250);
        assert_eq!(clock.get_delayed_calls().len(), 250);
        assert_eq!(clock.advance(1000.0), 250);
    }
}
