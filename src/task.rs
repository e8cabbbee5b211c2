//! Layer 1: repeating and coalescing calls on a [`Clock`] — Twisted's `LoopingCall` and
//! `deferLater`, and Scrapy's `CallLaterOnce` (the switch that turns any number of
//! "time to work" requests in one tick into a single run of the engine's loop).
//!
//! Everything here takes its clock as a parameter, so tests drive it with a
//! [`ManualClock`](crate::reactor::ManualClock) and never sleep.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

use crate::defer::{Deferred, Failure, IntoStep, Step, maybe_deferred};
use crate::reactor::{Clock, DelayedCall};

/// Why a [`LoopingCall`] could not be started or stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoopingCallError {
    /// `start` on a loop that is already running.
    AlreadyRunning,
    /// `stop` on a loop that is not running.
    NotRunning,
    /// A negative or NaN interval.
    InvalidInterval,
}

impl fmt::Display for LoopingCallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AlreadyRunning => f.write_str("the LoopingCall is already running"),
            Self::NotRunning => f.write_str("the LoopingCall is not running"),
            Self::InvalidInterval => f.write_str("the LoopingCall interval must be >= 0"),
        }
    }
}

impl std::error::Error for LoopingCallError {}

type LoopFn = Box<dyn FnMut(u64) -> Step<()>>;

struct LoopState {
    running: bool,
    interval: u64,
    start_time: u64,
    run_at_start: bool,
    call: Option<DelayedCall>,
    deferred: Option<Deferred<()>>,
    /// `with_count`: when the function last ran (`None`: not yet).
    last_time: Option<u64>,
}

struct LoopInner {
    clock: Clock,
    func: RefCell<Option<LoopFn>>,
    counts: bool,
    state: RefCell<LoopState>,
}

/// Calls a function repeatedly, every `interval` seconds: Twisted's `LoopingCall`.
///
/// * [`start`](Self::start) returns a Deferred that fires when [`stop`](Self::stop) is
///   called, or fails (and the loop stops) when the function fails or panics.
/// * The function may return a `Deferred<()>`; the next call is scheduled only once it
///   fires.
/// * When a call takes longer than the interval, the missed intervals are skipped: the
///   next call lands on the next multiple of the interval after the start time.
///   [`with_count`](Self::with_count) reports how many intervals elapsed instead.
///
/// # Examples
///
/// ```
/// use std::{cell::Cell, rc::Rc};
/// use trawl::reactor::ManualClock;
/// use trawl::task::LoopingCall;
///
/// let clock = ManualClock::new();
/// let n = Rc::new(Cell::new(0));
/// let c = n.clone();
/// let lc = LoopingCall::new(&clock, move || { c.set(c.get() + 1); Ok(()) });
/// let done = lc.start(1.0, true).unwrap();
/// clock.pump(&[1.0, 1.0, 1.0]);
/// assert_eq!(n.get(), 4); // at 0, 1, 2 and 3 seconds
/// lc.stop().unwrap();
/// assert!(done.has_result());
/// ```
#[derive(Clone)]
pub struct LoopingCall {
    inner: Rc<LoopInner>,
}

impl LoopingCall {
    /// A loop calling `f` on `clock`.
    pub fn new<F, R>(clock: &Clock, mut f: F) -> Self
    where
        F: FnMut() -> R + 'static,
        R: IntoStep<()>,
    {
        Self::build(clock, Box::new(move |_| f().into_step()), false)
    }

    /// A loop calling `f` with the number of intervals that elapsed since its previous
    /// call (1 normally, more when calls were skipped): Twisted's `withCount`.
    pub fn with_count<F, R>(clock: &Clock, mut f: F) -> Self
    where
        F: FnMut(u64) -> R + 'static,
        R: IntoStep<()>,
    {
        Self::build(clock, Box::new(move |n| f(n).into_step()), true)
    }

    fn build(clock: &Clock, func: LoopFn, counts: bool) -> Self {
        Self {
            inner: Rc::new(LoopInner {
                clock: clock.clone(),
                func: RefCell::new(Some(func)),
                counts,
                state: RefCell::new(LoopState {
                    running: false,
                    interval: 0,
                    start_time: 0,
                    run_at_start: false,
                    call: None,
                    deferred: None,
                    last_time: None,
                }),
            }),
        }
    }

    /// Starts calling every `interval` seconds; with `now`, the first call happens
    /// immediately, otherwise after one interval.
    ///
    /// # Errors
    ///
    /// [`LoopingCallError::AlreadyRunning`] or [`LoopingCallError::InvalidInterval`].
    pub fn start(&self, interval: f64, now: bool) -> Result<Deferred<()>, LoopingCallError> {
        if interval.is_nan() || interval < 0.0 {
            return Err(LoopingCallError::InvalidInterval);
        }
        let deferred = Deferred::new();
        let start_time = self.inner.clock.now_nanos();
        {
            let mut s = self.inner.state.borrow_mut();
            if s.running {
                return Err(LoopingCallError::AlreadyRunning);
            }
            s.running = true;
            s.interval = crate::reactor::secs_to_nanos(interval);
            s.start_time = start_time;
            s.run_at_start = now;
            s.deferred = Some(deferred.clone());
            s.last_time = None;
        }
        if now {
            Self::fire(&self.inner);
        } else {
            Self::schedule_from(&self.inner, start_time);
        }
        Ok(deferred)
    }

    /// Stops the loop; the Deferred from `start` fires (at once, or when a call that is
    /// still waiting on its own Deferred finishes).
    ///
    /// # Errors
    ///
    /// [`LoopingCallError::NotRunning`].
    pub fn stop(&self) -> Result<(), LoopingCallError> {
        let (call, deferred) = {
            let mut s = self.inner.state.borrow_mut();
            if !s.running {
                return Err(LoopingCallError::NotRunning);
            }
            s.running = false;
            match s.call.take() {
                Some(call) => (Some(call), s.deferred.take()),
                None => (None, None), // a call is in flight; its completion fires the Deferred
            }
        };
        if let Some(call) = call {
            let _ = call.cancel();
        }
        if let Some(d) = deferred {
            let _ = d.callback(());
        }
        Ok(())
    }

    /// Skips the next call and restarts the interval timer from now (Twisted's
    /// `LoopingCall.reset`). Does nothing while a call is waiting on its Deferred.
    ///
    /// # Errors
    ///
    /// [`LoopingCallError::NotRunning`].
    pub fn reset(&self) -> Result<(), LoopingCallError> {
        let call = {
            let mut s = self.inner.state.borrow_mut();
            if !s.running {
                return Err(LoopingCallError::NotRunning);
            }
            s.call.take()
        };
        if let Some(call) = call {
            let _ = call.cancel();
            let now = self.inner.clock.now_nanos();
            self.inner.state.borrow_mut().start_time = now;
            Self::schedule_from(&self.inner, now);
        }
        Ok(())
    }

    /// Whether the loop is running.
    pub fn running(&self) -> bool {
        self.inner.state.borrow().running
    }

    /// The interval in seconds (0 before the first start).
    pub fn interval(&self) -> f64 {
        crate::reactor::nanos_to_secs(self.inner.state.borrow().interval)
    }

    fn fire(inner: &Rc<LoopInner>) {
        inner.state.borrow_mut().call = None;
        let count = if inner.counts {
            Self::elapsed_intervals(inner)
        } else {
            1
        };
        if count == 0 {
            // with_count: called again within the same interval; nothing to report.
            Self::after_call(inner, Ok(()));
            return;
        }
        let func = inner.func.borrow_mut().take();
        let Some(mut func) = func else {
            // Re-entered while the function runs; nothing to do.
            return;
        };
        let d: Deferred<()> = maybe_deferred(|| func(count));
        *inner.func.borrow_mut() = Some(func);
        let me = inner.clone();
        d.add_both(move |r| {
            Self::after_call(&me, r);
            Ok(())
        });
    }

    fn after_call(inner: &Rc<LoopInner>, result: Result<(), Failure>) {
        match result {
            Ok(()) => {
                let running = inner.state.borrow().running;
                if running {
                    Self::schedule_from(inner, inner.clock.now_nanos());
                } else {
                    let d = inner.state.borrow_mut().deferred.take();
                    if let Some(d) = d {
                        let _ = d.callback(());
                    }
                }
            }
            Err(failure) => {
                let d = {
                    let mut s = inner.state.borrow_mut();
                    s.running = false;
                    s.deferred.take()
                };
                match d {
                    Some(d) => {
                        let _ = d.errback(failure);
                    }
                    None => log::error!("LoopingCall failed after stop:\n{}", failure.describe()),
                }
            }
        }
    }

    fn elapsed_intervals(inner: &Rc<LoopInner>) -> u64 {
        let now = inner.clock.now_nanos();
        let mut s = inner.state.borrow_mut();
        if s.interval == 0 {
            s.last_time = Some(now);
            return 1;
        }
        let last = s.last_time.unwrap_or_else(|| {
            if s.run_at_start {
                s.start_time.wrapping_sub(s.interval)
            } else {
                s.start_time
            }
        });
        let interval_of =
            |t: u64| (t.wrapping_sub(s.start_time) as i64).div_euclid(s.interval as i64);
        let count = interval_of(now) - interval_of(last);
        if count > 0 {
            s.last_time = Some(now);
            count as u64
        } else {
            0
        }
    }

    fn schedule_from(inner: &Rc<LoopInner>, when: u64) {
        let delay = {
            let s = inner.state.borrow();
            if s.interval == 0 {
                0
            } else {
                let running_for = when.saturating_sub(s.start_time);
                s.interval - running_for % s.interval
            }
        };
        let me = inner.clone();
        let call = inner
            .clock
            .call_at_nanos(when.saturating_add(delay), move || Self::fire(&me));
        inner.state.borrow_mut().call = Some(call);
    }
}

impl fmt::Debug for LoopingCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopingCall")
            .field("running", &self.running())
            .field("interval", &self.interval())
            .finish()
    }
}

/// The function a [`CallLaterOnce`] runs.
type OnceFn<T> = Box<dyn FnMut() -> Result<T, Failure>>;

struct OnceInner<T: 'static> {
    clock: Clock,
    func: RefCell<Option<OnceFn<T>>>,
    call: RefCell<Option<DelayedCall>>,
    waiters: RefCell<Vec<Deferred<()>>>,
    runs: Cell<u64>,
}

/// Schedules a function for the next reactor iteration, but only if it is not already
/// scheduled: Scrapy's `CallLaterOnce` (`scrapy/utils/reactor.py`).
///
/// The engine's `nextcall` is one of these: enqueues, finished downloads, removals and
/// the heartbeat all call [`schedule`](Self::schedule), and however many calls land in
/// one tick, the scheduling loop runs once. Running first clears the pending handle, so
/// the function may schedule itself again.
///
/// As in Scrapy, the [`wait`](Self::wait)ers are released only by a run that succeeds:
/// a failing (or panicking) function is reported as an unhandled error and leaves them
/// waiting for the next run. [`call`](Self::call) runs the function directly and
/// returns its outcome (Scrapy's `__call__`).
///
/// # Examples
///
/// ```
/// use std::{cell::Cell, rc::Rc};
/// use trawl::reactor::ManualClock;
/// use trawl::task::CallLaterOnce;
///
/// let clock = ManualClock::new();
/// let runs = Rc::new(Cell::new(0));
/// let r = runs.clone();
/// let nextcall = CallLaterOnce::new(&clock, move || r.set(r.get() + 1));
/// for _ in 0..100 {
///     nextcall.schedule(0.0);
/// }
/// clock.advance(0.0);
/// assert_eq!(runs.get(), 1);
/// ```
pub struct CallLaterOnce<T: 'static = ()> {
    inner: Rc<OnceInner<T>>,
}

impl<T: 'static> Clone for CallLaterOnce<T> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl CallLaterOnce<()> {
    /// Wraps `f`; nothing is scheduled yet.
    pub fn new<F>(clock: &Clock, mut f: F) -> Self
    where
        F: FnMut() + 'static,
    {
        Self::fallible(clock, move || {
            f();
            Ok(())
        })
    }
}

impl<T: 'static> CallLaterOnce<T> {
    /// Wraps a function that returns a value or fails; a failed run keeps the waiters
    /// waiting. A scheduled run drops the value; [`call`](Self::call) returns it.
    pub fn fallible<F>(clock: &Clock, f: F) -> Self
    where
        F: FnMut() -> Result<T, Failure> + 'static,
    {
        Self {
            inner: Rc::new(OnceInner {
                clock: clock.clone(),
                func: RefCell::new(Some(Box::new(f))),
                call: RefCell::new(None),
                waiters: RefCell::new(Vec::new()),
                runs: Cell::new(0),
            }),
        }
    }

    /// Schedules a run `delay` seconds from now unless one is already pending.
    pub fn schedule(&self, delay: f64) {
        if self.inner.call.borrow().is_some() {
            return;
        }
        let me = self.inner.clone();
        let call = self.inner.clock.call_later(delay, move || {
            if let Err(failure) = Self::run(&me) {
                log::error!(
                    "Unhandled error in a CallLaterOnce function:\n{}",
                    failure.describe()
                );
            }
        });
        *self.inner.call.borrow_mut() = Some(call);
    }

    /// Cancels the pending run, if any (a later `schedule` schedules again).
    pub fn cancel(&self) {
        let call = self.inner.call.borrow_mut().take();
        if let Some(call) = call {
            let _ = call.cancel();
        }
    }

    /// Whether a run is pending.
    pub fn is_scheduled(&self) -> bool {
        self.inner.call.borrow().is_some()
    }

    /// A Deferred that fires (on the following iteration) after the next run.
    pub fn wait(&self) -> Deferred<()> {
        let d = Deferred::new();
        self.inner.waiters.borrow_mut().push(d.clone());
        d
    }

    /// How many times the function has run.
    pub fn runs(&self) -> u64 {
        self.inner.runs.get()
    }

    /// Runs the function now and returns its outcome (Scrapy's `__call__`): the pending
    /// handle is forgotten (not cancelled, as in Scrapy), and on success the waiters are
    /// released on the next iteration.
    ///
    /// # Errors
    ///
    /// The function's failure (a panic becomes a [`PanicError`](crate::defer::PanicError));
    /// a call from inside the function itself fails instead of recursing.
    pub fn call(&self) -> Result<T, Failure> {
        Self::run(&self.inner)
    }

    fn run(inner: &Rc<OnceInner<T>>) -> Result<T, Failure> {
        inner.call.borrow_mut().take();
        let func = inner.func.borrow_mut().take();
        let Some(mut func) = func else {
            return Err(Failure::msg(
                "CallLaterOnce: the function called itself re-entrantly",
            ));
        };
        inner.runs.set(inner.runs.get() + 1);
        let outcome = catch_unwind(AssertUnwindSafe(&mut func))
            .unwrap_or_else(|panic| Err(Failure::from_panic(panic.as_ref())));
        *inner.func.borrow_mut() = Some(func);
        let value = outcome?;
        let waiters = std::mem::take(&mut *inner.waiters.borrow_mut());
        for d in waiters {
            inner.clock.call_later(0.0, move || {
                let _ = d.callback(());
            });
        }
        Ok(value)
    }
}

impl<T: 'static> fmt::Debug for CallLaterOnce<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallLaterOnce")
            .field("scheduled", &self.is_scheduled())
            .field("runs", &self.runs())
            .finish()
    }
}

/// Calls `f` after `seconds` on `clock` and fires with its outcome (Twisted's
/// `deferLater`). Cancelling the Deferred before then cancels the call.
pub fn defer_later<T, F, R>(clock: &Clock, seconds: f64, f: F) -> Deferred<T>
where
    T: 'static,
    F: FnOnce() -> R + 'static,
    R: IntoStep<T>,
{
    let call_slot: Rc<RefCell<Option<DelayedCall>>> = Rc::new(RefCell::new(None));
    let slot = call_slot.clone();
    let d = Deferred::with_canceller(move |_: &Deferred<T>| {
        if let Some(call) = slot.borrow_mut().take() {
            let _ = call.cancel();
        }
    });
    let target = d.clone();
    let call = clock.call_later(seconds, move || {
        let inner = maybe_deferred(f);
        inner.chain_deferred(&target);
    });
    *call_slot.borrow_mut() = Some(call);
    d
}
