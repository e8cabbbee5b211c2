//! The helpers around [`Deferred`]: ready-made Deferreds (`succeed`, `fail`,
//! `maybe_deferred`) and `add_timeout`.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

use super::deferred::{Deferred, IntoStep, Step};
use super::failure::{CancelledError, Failure, TimeoutError};
use crate::reactor::Clock;

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
