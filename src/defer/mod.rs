//! Layer 1: [`Deferred`], Twisted's promise of a result that is not there yet, with its
//! callback/errback chain, plus [`Failure`], [`DeferredList`] and the small helpers
//! (`succeed`, `fail`, `maybe_deferred`, `gather_results`).
//!
//! This layer may use `reactor` (for [`Clock`](crate::reactor::Clock) in `add_timeout`)
//! and nothing above it.
//!
//! # The chain, typed
//!
//! Twisted's result chain is dynamically typed: each callback may return anything, a
//! `Failure` or another Deferred. Here a `Deferred<T>` carries a `Result<T, Failure>`,
//! and every callback added with [`add_callback`](Deferred::add_callback),
//! [`add_errback`](Deferred::add_errback), [`add_both`](Deferred::add_both) or
//! [`add_callbacks`](Deferred::add_callbacks) returns something [`IntoStep<T>`]:
//!
//! * `Ok(value)` continues down the callback path, `Err(failure)` switches to the
//!   errback path (an errback returning `Ok` switches back);
//! * a `Deferred<T>` pauses this chain until that one fires, then continues with its
//!   result (chaining, at any depth);
//! * a panic inside a callback is caught and becomes a `Failure` holding a
//!   [`PanicError`], as an exception would in Twisted.
//!
//! Changing the type is an explicit step: [`then`](Deferred::then) (or
//! [`map`](Deferred::map)) moves the result into a new `Deferred<U>`. The original chain
//! ends there: its result has been *consumed*.
//!
//! # One value, one owner
//!
//! Twisted hands the same Python object to every chain that looks at a result, and
//! leaves `None` behind where a result was moved on. A `T` here is moved, not shared,
//! so the rule is: **a callback never disappears**. A link that runs after the result
//! was moved on (by `then`, `chain_deferred`, a [`DeferredList`], or by being returned
//! from another chain's callback) runs on the errback path with [`ConsumedError`]; a
//! warning names the call site that added it, and if nothing handles the error it is
//! reported as unhandled like any other failure. Where Twisted's sharing is wanted,
//! [`DeferredList::share_results`] (for `T: Clone`) leaves each member's result in its
//! chain and gives the list a clone — Twisted's exact behaviour, a Deferred may then sit
//! in two lists or twice in one.
//!
//! # Unhandled failures
//!
//! A failure that reaches the end of a chain and is dropped there, or that has nowhere
//! to go (a `then` target cancelled meanwhile), is logged at ERROR as
//! "Unhandled error in Deferred", as Twisted does at garbage collection;
//! [`capture_unhandled`] collects them for tests.
//!
//! # Re-entrancy
//!
//! Deferreds fire synchronously, so callbacks routinely call back into the Deferred that
//! runs them or into whatever fired it. The rule this module follows: **no `RefCell`
//! borrow is held while user code runs**. Each step of the loop borrows the state to
//! take one callback and the current result, releases the borrow, runs the callback,
//! then borrows again to store what it returned. A callback may therefore add callbacks
//! to its own Deferred (they run in the same pass), pause it, cancel it, fire other
//! Deferreds or schedule timers. Calling `callback` on a Deferred that already fired
//! returns [`AlreadyCalledError`] instead of re-entering.
//!
//! Chains waiting on chains resume each other recursively; past a fixed depth the
//! resumption is queued on a per-thread trampoline drained by the outermost running
//! loop, so arbitrarily deep nesting cannot overflow the stack.

mod deferred;
mod failure;
mod helpers;
mod list;
mod unhandled;

pub use deferred::{Deferred, IntoStep, Step};
pub use failure::{
    AlreadyCalledError, CancelledError, ChainedToSelfError, ConsumedError, ErrorType, Failure,
    FirstError, Message, PanicError, TimeoutError, short_type_name,
};
pub use helpers::{fail, maybe_deferred, succeed};
pub use list::{DeferredList, ListResult, gather_results, gather_results_shared};
pub use unhandled::capture_unhandled;
