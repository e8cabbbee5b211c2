//! The helpers around [`Deferred`]: ready-made Deferreds (`succeed`, `fail`,
//! `maybe_deferred`), `add_timeout`, and the report of unhandled failures.

use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

use super::{CancelledError, Deferred, Failure, IntoStep, Step, TimeoutError};
use crate::reactor::Clock;

thread_local! {
    /// Failures collected by [`capture_unhandled`] instead of only being logged.
    static CAPTURED: RefCell<Option<Vec<Failure>>> = const { RefCell::new(None) };
}

/// Reports a failure nothing handled (Twisted's "Unhandled error in Deferred").
pub(crate) fn report_unhandled(failure: &Failure, context: &str) {
    log::error!(
        "Unhandled error in Deferred{context}:\n{}",
        failure.describe()
    );
    CAPTURED.with(|c| {
        if let Some(list) = c.borrow_mut().as_mut() {
            list.push(failure.clone());
        }
    });
}

/// Runs `f` and returns its value with every failure reported as unhandled meanwhile on
/// this thread (they are still logged). For tests: a failure must never vanish.
///
/// # Examples
///
/// ```
/// use trawl::defer::{Deferred, Failure, capture_unhandled};
///
/// let ((), unhandled) = capture_unhandled(|| {
///     let d: Deferred<i32> = Deferred::new();
///     d.errback(Failure::msg("nobody listens")).unwrap();
/// }); // d is dropped holding its failure
/// assert_eq!(unhandled.len(), 1);
/// ```
pub fn capture_unhandled<R>(f: impl FnOnce() -> R) -> (R, Vec<Failure>) {
    let previous = CAPTURED.with(|c| c.borrow_mut().replace(Vec::new()));
    let value = f();
    let captured = CAPTURED.with(|c| std::mem::replace(&mut *c.borrow_mut(), previous));
    (value, captured.unwrap_or_default())
}

impl<T: 'static> Deferred<T> {
    /// Cancels the Deferred with [`TimeoutError`] unless it fires within `seconds` on
    /// `clock` (Twisted's `addTimeout`). The conversion applies at this point of the
    /// chain: callbacks added later see `TimeoutError` rather than `CancelledError`.
    pub fn add_timeout(&self, seconds: f64, clock: &Clock) -> &Self {
        self.add_timeout_with(seconds, clock, cancelled_to_timed_out)
    }

    /// [`add_timeout`](Self::add_timeout) with Twisted's `onTimeoutCancel`: when the
    /// timeout fired, `on_timeout_cancel` receives the result at this point of the chain
    /// (usually the `CancelledError`, but a canceller may have fired it otherwise) and
    /// the timeout, and decides the result. A cancellation from elsewhere, or a result
    /// in time, passes through untouched.
    pub fn add_timeout_with<F>(&self, seconds: f64, clock: &Clock, on_timeout_cancel: F) -> &Self
    where
        F: FnOnce(Result<T, Failure>, f64) -> Result<T, Failure> + 'static,
    {
        let timed_out = Rc::new(Cell::new(false));
        let flag = timed_out.clone();
        let target = self.clone();
        let call = clock.call_later(seconds, move || {
            flag.set(true);
            target.cancel();
        });
        self.add_both(move |r: Result<T, Failure>| {
            if timed_out.get() {
                on_timeout_cancel(r, seconds)
            } else {
                r
            }
        });
        self.add_both(move |r: Result<T, Failure>| {
            if call.active() {
                let _ = call.cancel();
            }
            r
        })
    }

    /// A copy of the result the chain holds, without consuming it (Twisted's
    /// `d.result`, for tests and debugging). `None` while pending, paused, running or
    /// once consumed.
    pub fn result(&self) -> Option<Result<T, Failure>>
    where
        T: Clone,
    {
        let s = self.inner.borrow();
        if s.running || s.waiting {
            return None;
        }
        s.result.clone()
    }
}

/// Twisted's `_cancelledToTimedOutError`: a `CancelledError` becomes a `TimeoutError`.
fn cancelled_to_timed_out<T>(r: Result<T, Failure>, seconds: f64) -> Result<T, Failure> {
    match r {
        Err(f) if f.check::<CancelledError>() => Err(Failure::new(TimeoutError { seconds })),
        other => other,
    }
}

/// A Deferred that has already succeeded with `value`.
pub fn succeed<T: 'static>(value: T) -> Deferred<T> {
    let d = Deferred::new();
    let _ = d.callback(value);
    d
}

/// A Deferred that has already failed with `failure`.
#[track_caller]
pub fn fail<T: 'static>(failure: impl Into<Failure>) -> Deferred<T> {
    let d = Deferred::new();
    let _ = d.errback(failure);
    d
}

/// Calls `f` and returns its outcome as a Deferred (Twisted's `maybeDeferred`): a result
/// becomes an already-fired Deferred, a returned Deferred is returned as is, and a panic
/// becomes a failed Deferred.
pub fn maybe_deferred<T, F, R>(f: F) -> Deferred<T>
where
    T: 'static,
    F: FnOnce() -> R,
    R: IntoStep<T>,
{
    match catch_unwind(AssertUnwindSafe(|| f().into_step())) {
        Ok(Step::Done(r)) => {
            let d = Deferred::new();
            let _ = d.resolve(r);
            d
        }
        Ok(Step::Wait(d)) => d,
        Err(panic) => fail(Failure::from_panic(panic.as_ref())),
    }
}
