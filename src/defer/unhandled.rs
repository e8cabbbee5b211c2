//! Failures nothing handled: reported (Twisted's "Unhandled error in Deferred") and,
//! for tests, captured.

use std::cell::RefCell;

use super::failure::Failure;

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
