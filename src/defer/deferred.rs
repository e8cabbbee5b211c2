//! [`Deferred`]: Twisted's Deferred, typed — a result that will arrive, and the
//! chain of callbacks and errbacks it goes through (the module's documentation tells
//! how the chain runs).

use std::any::type_name;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::panic::{AssertUnwindSafe, Location, catch_unwind};
use std::rc::Rc;

use super::failure::{
    AlreadyCalledError, CancelledError, ChainedToSelfError, ConsumedError, Failure,
};
use super::unhandled::report_unhandled;
use crate::reactor::Fired;

/// What a callback hands back to the chain: a result now, or a Deferred to wait for.
pub enum Step<T: 'static> {
    /// Continue with this result.
    Done(Result<T, Failure>),
    /// Pause until this Deferred fires, then continue with its result.
    Wait(Deferred<T>),
}

impl<T: 'static> fmt::Debug for Step<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Done(Ok(_)) => f.write_str("Step::Done(Ok(..))"),
            Self::Done(Err(e)) => write!(f, "Step::Done(Err({e}))"),
            Self::Wait(d) => write!(f, "Step::Wait({d:?})"),
        }
    }
}

/// Anything a callback may return: `Result<T, Failure>`, a `Deferred<T>`, or a [`Step`].
pub trait IntoStep<T: 'static> {
    /// Converts into a [`Step`].
    fn into_step(self) -> Step<T>;
}

impl<T: 'static> IntoStep<T> for Result<T, Failure> {
    fn into_step(self) -> Step<T> {
        Step::Done(self)
    }
}

impl<T: 'static> IntoStep<T> for Deferred<T> {
    fn into_step(self) -> Step<T> {
        Step::Wait(self)
    }
}

impl<T: 'static> IntoStep<T> for Step<T> {
    fn into_step(self) -> Step<T> {
        self
    }
}

/// What running one link produced.
pub(super) enum Next<T: 'static> {
    Value(Result<T, Failure>),
    Chain(Deferred<T>),
    /// The link moved the result elsewhere (`then`, a chained outer Deferred, a list).
    Moved,
}

impl<T: 'static> From<Step<T>> for Next<T> {
    fn from(step: Step<T>) -> Self {
        match step {
            Step::Done(r) => Self::Value(r),
            Step::Wait(d) => Self::Chain(d),
        }
    }
}

/// A canceller given to [`Deferred::with_canceller`].
type CancelFn<T> = Box<dyn FnOnce(&Deferred<T>)>;

/// What `cancel()` calls before falling back to `CancelledError`.
enum Canceller<T: 'static> {
    /// A canceller given to [`Deferred::with_canceller`].
    Call(CancelFn<T>),
    /// Cancel the Deferred this one was made from ([`Deferred::then`]): a handle to
    /// its state, so a `then` allocates no closure for its canceller.
    Source(Rc<dyn CancelDyn>),
}

/// One entry of the chain: a callback/errback pair folded into one closure.
pub(super) type Link<T> = Box<dyn FnOnce(Result<T, Failure>) -> Next<T>>;

/// Type-erased "cancel the Deferred I am waiting on", implemented by a Deferred's
/// shared state itself: holding one is a reference count, not an allocation.
trait CancelDyn {
    fn cancel_dyn(self: Rc<Self>);
}

impl<T: 'static> CancelDyn for RefCell<State<T>> {
    fn cancel_dyn(self: Rc<Self>) {
        Deferred { inner: self }.cancel();
    }
}

struct State<T: 'static> {
    /// The current result; `None` before firing, while a callback runs, and once
    /// consumed.
    result: Option<Result<T, Failure>>,
    called: bool,
    /// The result was moved to another chain; later links run with [`ConsumedError`].
    consumed: bool,
    /// The ConsumedError warning was logged for this Deferred.
    warned_consumed: bool,
    /// `pause()` calls not yet undone.
    paused: u32,
    /// Waiting on a Deferred a callback returned (Twisted counts this in `paused`).
    waiting: bool,
    running: bool,
    /// The chain. The first four links live inline: most Deferreds carry a few, and
    /// every Deferred would otherwise allocate its list on its first link.
    links: smallvec::SmallVec<[Option<Link<T>>; 4]>,
    next: usize,
    /// The Deferred this one waits on (a callback returned it).
    chained_to: Option<Rc<dyn CancelDyn>>,
    canceller: Option<Canceller<T>>,
    suppress_already_called: bool,
}

impl<T: 'static> Drop for State<T> {
    fn drop(&mut self) {
        if let Some(Err(failure)) = &self.result {
            report_unhandled(failure, "");
        }
    }
}

/// A result that is not there yet, with a chain of callbacks to process it: Twisted's
/// `Deferred`.
///
/// Cloning gives another handle to the same Deferred (an `Rc`), which is how callbacks
/// reach the Deferred that runs them.
///
/// # Examples
///
/// ```
/// use trawl::defer::{Deferred, Failure};
/// use trawl::testing::success_result_of;
///
/// let d = Deferred::new();
/// d.add_callback(|x: i32| Ok(x * 2))
///     .add_callback(|x| if x > 10 { Err(Failure::msg("too big")) } else { Ok(x) })
///     .add_errback(|_f| Ok(-1)); // recover: back on the callback path
/// d.callback(7).unwrap();
/// assert_eq!(success_result_of(d), -1);
/// ```
pub struct Deferred<T: 'static> {
    inner: Rc<RefCell<State<T>>>,
}

impl<T: 'static> Clone for Deferred<T> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

thread_local! {
    /// How many `run_callbacks` loops are active on this thread.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    /// Resumptions postponed because the nesting was too deep.
    static TRAMPOLINE: RefCell<VecDeque<Box<dyn FnOnce()>>> = const { RefCell::new(VecDeque::new()) };
}

/// Past this many nested chain resumptions, resume through the trampoline.
const MAX_NESTING: usize = 48;

/// Restores the nesting depth even if something unwinds.
struct DepthGuard(usize);

impl Drop for DepthGuard {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(self.0));
    }
}

impl<T: 'static> Deferred<T> {
    /// A Deferred with no result yet and no canceller.
    pub fn new() -> Self {
        Self {
            inner: Rc::new(RefCell::new(State {
                result: None,
                called: false,
                consumed: false,
                warned_consumed: false,
                paused: 0,
                waiting: false,
                running: false,
                links: smallvec::SmallVec::new(),
                next: 0,
                chained_to: None,
                canceller: None,
                suppress_already_called: false,
            })),
        }
    }

    /// A Deferred whose [`cancel`](Self::cancel) first calls `canceller` (which should
    /// abort the work and may fire the Deferred itself).
    pub fn with_canceller<F>(canceller: F) -> Self
    where
        F: FnOnce(&Deferred<T>) + 'static,
    {
        let d = Self::new();
        d.inner.borrow_mut().canceller = Some(Canceller::Call(Box::new(canceller)));
        d
    }

    /// Fires the Deferred with a value: the callback chain starts running now.
    ///
    /// # Errors
    ///
    /// [`AlreadyCalledError`] if it already fired. (After a `cancel()` without a
    /// canceller, the first late `callback` is silently ignored, as in Twisted.)
    pub fn callback(&self, value: T) -> Result<(), AlreadyCalledError> {
        self.start_run(Ok(value))
    }

    /// Fires the Deferred with a failure: the errback chain starts running now.
    ///
    /// # Errors
    ///
    /// [`AlreadyCalledError`] if it already fired.
    #[track_caller]
    pub fn errback(&self, failure: impl Into<Failure>) -> Result<(), AlreadyCalledError> {
        self.start_run(Err(failure.into()))
    }

    /// Fires with a complete `Result`.
    ///
    /// # Errors
    ///
    /// [`AlreadyCalledError`] if it already fired.
    pub fn resolve(&self, result: Result<T, Failure>) -> Result<(), AlreadyCalledError> {
        self.start_run(result)
    }

    fn start_run(&self, result: Result<T, Failure>) -> Result<(), AlreadyCalledError> {
        let canceller = {
            let mut s = self.inner.borrow_mut();
            if s.called {
                if s.suppress_already_called {
                    s.suppress_already_called = false;
                    return Ok(());
                }
                return Err(AlreadyCalledError);
            }
            s.called = true;
            s.result = Some(result);
            s.canceller.take()
        };
        drop(canceller);
        self.run_callbacks();
        Ok(())
    }

    /// Fires with what a callback returned: a result, or a Deferred to adopt.
    fn fire_step(&self, step: Step<T>) -> Result<(), AlreadyCalledError> {
        match step {
            Step::Done(r) => self.start_run(r),
            Step::Wait(other) => {
                let canceller = {
                    let mut s = self.inner.borrow_mut();
                    if s.called {
                        return Err(AlreadyCalledError);
                    }
                    s.called = true;
                    s.running = true;
                    s.canceller.take()
                };
                drop(canceller);
                self.chain_to(other);
                self.run_callbacks();
                Ok(())
            }
        }
    }

    /// Adds a callback/errback pair (Twisted's `addCallbacks`): `callback` runs on
    /// success, `errback` on failure; whichever runs decides the next result.
    #[track_caller]
    pub fn add_callbacks<C, E, R1, R2>(&self, callback: C, errback: E) -> &Self
    where
        C: FnOnce(T) -> R1 + 'static,
        R1: IntoStep<T>,
        E: FnOnce(Failure) -> R2 + 'static,
        R2: IntoStep<T>,
    {
        self.push_link(Box::new(move |r| match r {
            Ok(v) => note_failure(callback(v).into_step(), type_name::<C>()),
            Err(f) => note_failure(errback(f).into_step(), type_name::<E>()),
        }))
    }

    /// Adds a callback for the success path; a failure passes it by.
    #[track_caller]
    pub fn add_callback<C, R>(&self, callback: C) -> &Self
    where
        C: FnOnce(T) -> R + 'static,
        R: IntoStep<T>,
    {
        self.push_link(Box::new(move |r| match r {
            Ok(v) => note_failure(callback(v).into_step(), type_name::<C>()),
            Err(f) => {
                f.note(type_name::<C>());
                Next::Value(Err(f))
            }
        }))
    }

    /// Adds an errback for the failure path; a success passes it by.
    #[track_caller]
    pub fn add_errback<E, R>(&self, errback: E) -> &Self
    where
        E: FnOnce(Failure) -> R + 'static,
        R: IntoStep<T>,
    {
        self.push_link(Box::new(move |r| match r {
            Ok(v) => Next::Value(Ok(v)),
            Err(f) => note_failure(errback(f).into_step(), type_name::<E>()),
        }))
    }

    /// Adds one function for both paths; it receives the `Result`.
    #[track_caller]
    pub fn add_both<F, R>(&self, f: F) -> &Self
    where
        F: FnOnce(Result<T, Failure>) -> R + 'static,
        R: IntoStep<T>,
    {
        self.push_link(Box::new(move |r| {
            note_failure(f(r).into_step(), type_name::<F>())
        }))
    }

    /// Moves this chain's result into a new `Deferred<U>` through `f`, which sees both
    /// paths: the type-changing step of a chain.
    ///
    /// This chain ends here (its result is consumed); continue on the returned
    /// Deferred. Cancelling the returned Deferred cancels this one.
    pub fn then<U, F, R>(self, f: F) -> Deferred<U>
    where
        U: 'static,
        F: FnOnce(Result<T, Failure>) -> R + 'static,
        R: IntoStep<U>,
    {
        let out = Deferred::<U>::new();
        let source: Rc<dyn CancelDyn> = self.inner.clone();
        out.inner.borrow_mut().canceller = Some(Canceller::Source(source));
        let target = out.clone();
        self.push_link(Box::new(move |r| {
            let step = catch_unwind(AssertUnwindSafe(|| f(r).into_step()))
                .unwrap_or_else(|panic| Step::Done(Err(Failure::from_panic(panic.as_ref()))));
            if let Step::Done(Err(failure)) = &step {
                failure.note(type_name::<F>());
            }
            let failure = match &step {
                Step::Done(Err(f)) => Some(f.clone()),
                _ => None,
            };
            if target.fire_step(step).is_err() {
                // The target was cancelled while this chain was paused or waiting: its
                // result has nowhere to go. A failure must not vanish.
                match failure {
                    Some(f) => report_unhandled(&f, " (then(): the target was cancelled)"),
                    None => log::debug!("then(): the target Deferred had already fired"),
                }
            }
            Next::Moved
        }));
        out
    }

    /// Maps a success to a new type; a failure passes through unchanged.
    pub fn map<U, F>(self, f: F) -> Deferred<U>
    where
        U: 'static,
        F: FnOnce(T) -> U + 'static,
    {
        self.then(move |r| r.map(f))
    }

    /// Sends this chain's result on to `other`, which fires with it (Twisted's
    /// `chainDeferred`). This chain's result is consumed.
    #[track_caller]
    pub fn chain_deferred(&self, other: &Deferred<T>) -> &Self {
        let other = other.clone();
        self.push_link(Box::new(move |r| {
            let failure = r.as_ref().err().cloned();
            if other.resolve(r).is_err() {
                match failure {
                    Some(f) => report_unhandled(&f, " (chain_deferred(): the target had fired)"),
                    None => log::debug!("chain_deferred(): the target Deferred had already fired"),
                }
            }
            Next::Moved
        }))
    }

    /// Stops the chain from running until [`unpause`](Self::unpause); pauses nest.
    ///
    /// As in Twisted, the flag is checked when a pass over the chain starts: called from
    /// inside a callback, the callbacks already in the chain still run in this pass; the
    /// ones added later wait for `unpause`.
    pub fn pause(&self) {
        self.inner.borrow_mut().paused += 1;
    }

    /// Undoes one [`pause`](Self::pause); the chain continues when none is left.
    ///
    /// Unpausing never ends a wait on a Deferred a callback returned: that wait ends when
    /// that Deferred fires (an extra `unpause` is ignored; Twisted would hand the next
    /// callback the inner Deferred itself and corrupt its pause count).
    pub fn unpause(&self) {
        let resume = {
            let mut s = self.inner.borrow_mut();
            s.paused = s.paused.saturating_sub(1);
            s.paused == 0 && s.called && !s.waiting
        };
        if resume {
            self.run_callbacks();
        }
    }

    /// Cancels the Deferred (Twisted's `cancel`).
    ///
    /// Not yet fired: the canceller (if any) runs; if the Deferred still has not fired,
    /// it errbacks with [`CancelledError`]. Waiting on a chained Deferred: that one is
    /// cancelled instead. Already fired: nothing happens.
    pub fn cancel(&self) {
        let (canceller, chained) = {
            let mut s = self.inner.borrow_mut();
            if s.called {
                (None, s.chained_to.clone())
            } else {
                let canceller = s.canceller.take();
                if canceller.is_none() {
                    s.suppress_already_called = true;
                }
                (canceller, None)
            }
        };
        if let Some(inner) = chained {
            inner.cancel_dyn();
            return;
        }
        if self.is_called() {
            return;
        }
        if let Some(canceller) = canceller
            && let Err(panic) = catch_unwind(AssertUnwindSafe(|| match canceller {
                Canceller::Call(f) => f(self),
                Canceller::Source(source) => source.cancel_dyn(),
            }))
        {
            log::error!(
                "Unhandled panic in a Deferred canceller: {}",
                crate::reactor::panic_message(panic.as_ref())
            );
        }
        if !self.is_called() {
            let _ = self.errback(Failure::new(CancelledError));
        }
    }

    /// Whether `callback`/`errback` has been called (Twisted's `called`), even if the
    /// chain is paused or waiting on another Deferred.
    pub fn is_called(&self) -> bool {
        self.inner.borrow().called
    }

    /// Whether the chain is paused (by `pause()` or waiting on a chained Deferred).
    pub fn is_paused(&self) -> bool {
        let s = self.inner.borrow();
        s.paused > 0 || s.waiting
    }

    /// The pause depth, counted as Twisted's `paused` attribute: outstanding `pause()`
    /// calls, plus one while waiting on a Deferred a callback returned.
    pub fn pause_count(&self) -> u32 {
        let s = self.inner.borrow();
        s.paused + u32::from(s.waiting)
    }

    /// Whether the chain has run to its end and holds a result (not consumed).
    pub fn has_result(&self) -> bool {
        let s = self.inner.borrow();
        s.called && s.paused == 0 && !s.waiting && !s.running && s.result.is_some()
    }

    /// Takes the result out of a Deferred whose chain has run to its end, consuming it.
    /// `None` if it has no result yet (or it was consumed already).
    pub fn take_result(&self) -> Option<Result<T, Failure>> {
        let mut s = self.inner.borrow_mut();
        if !s.called || s.paused > 0 || s.waiting || s.running {
            return None;
        }
        let r = s.result.take();
        if r.is_some() {
            s.consumed = true;
        }
        r
    }

    /// Whether two handles refer to the same Deferred.
    pub fn ptr_eq(&self, other: &Deferred<T>) -> bool {
        Rc::ptr_eq(&self.inner, &other.inner)
    }

    /// A copy of the failure the chain currently holds, without consuming it (for tests
    /// and debugging; `None` while pending, paused, on success, or once consumed).
    pub fn failure(&self) -> Option<Failure> {
        let s = self.inner.borrow();
        match &s.result {
            Some(Err(f)) if !s.running => Some(f.clone()),
            _ => None,
        }
    }

    #[track_caller]
    pub(super) fn push_link(&self, link: Link<T>) -> &Self {
        let run_now = {
            let mut s = self.inner.borrow_mut();
            if s.consumed && s.result.is_none() && !s.running && !s.warned_consumed {
                s.warned_consumed = true;
                log::warn!(
                    "{}: callback added to a Deferred whose result was already moved on \
                     (then / chain_deferred / a DeferredList / returned from a callback); \
                     it runs with ConsumedError",
                    Location::caller()
                );
            }
            s.links.push(Some(link));
            s.called
        };
        if run_now {
            self.run_callbacks();
        }
        self
    }

    fn run_callbacks(&self) {
        let depth = DEPTH.with(Cell::get);
        let _guard = DepthGuard(depth);
        DEPTH.with(|d| d.set(depth + 1));
        self.run_links();
        if depth == 0 {
            // The outermost loop on this thread drains postponed resumptions.
            while let Some(job) = TRAMPOLINE.with(|t| t.borrow_mut().pop_front()) {
                job();
            }
        }
    }

    fn run_links(&self) {
        // Twisted checks `paused` when a pass starts, not between callbacks: a callback
        // that pauses its own Deferred lets the rest of this pass run.
        let mut pass_started = false;
        loop {
            let (link, arg) = {
                let mut s = self.inner.borrow_mut();
                if !s.called || s.running || s.waiting || (!pass_started && s.paused > 0) {
                    return;
                }
                pass_started = true;
                if s.next >= s.links.len() {
                    s.links.clear();
                    s.next = 0;
                    return;
                }
                let index = s.next;
                s.next += 1;
                let Some(link) = s.links[index].take() else {
                    continue;
                };
                let arg = match s.result.take() {
                    Some(arg) => arg,
                    None => {
                        // The result was moved on: the link runs on the errback path
                        // with ConsumedError rather than being dropped silently.
                        if !s.warned_consumed {
                            s.warned_consumed = true;
                            log::warn!(
                                "a callback was waiting on a Deferred whose result was moved \
                                 on (then / chain_deferred / a DeferredList / returned from \
                                 a callback); it runs with ConsumedError"
                            );
                        }
                        Err(Failure::new(ConsumedError))
                    }
                };
                s.running = true;
                (link, arg)
            };
            let next = match catch_unwind(AssertUnwindSafe(move || link(arg))) {
                Ok(next) => next,
                Err(panic) => Next::Value(Err(Failure::from_panic(panic.as_ref()))),
            };
            match next {
                Next::Value(r) => {
                    let mut s = self.inner.borrow_mut();
                    s.running = false;
                    s.result = Some(r);
                }
                Next::Moved => {
                    let mut s = self.inner.borrow_mut();
                    s.running = false;
                    s.consumed = true;
                }
                Next::Chain(inner) => self.chain_to(inner),
            }
        }
    }

    /// Makes this chain wait for `inner` (which a callback returned). Called with
    /// `running` set; clears it.
    fn chain_to(&self, inner: Deferred<T>) {
        if Rc::ptr_eq(&self.inner, &inner.inner) {
            let mut s = self.inner.borrow_mut();
            s.running = false;
            s.result = Some(Err(Failure::new(ChainedToSelfError)));
            return;
        }
        // Fast path: the inner Deferred already has its final result; take it.
        let taken = {
            let mut is = inner.inner.borrow_mut();
            if is.called
                && is.paused == 0
                && !is.waiting
                && !is.running
                && is.next >= is.links.len()
            {
                let r = is.result.take();
                is.consumed = true;
                Some(r.unwrap_or_else(|| Err(Failure::new(ConsumedError))))
            } else {
                None
            }
        };
        if let Some(r) = taken {
            let mut s = self.inner.borrow_mut();
            s.running = false;
            s.result = Some(r);
            return;
        }
        {
            let mut s = self.inner.borrow_mut();
            s.running = false;
            s.waiting = true;
            s.chained_to = Some(inner.inner.clone());
        }
        let outer = self.clone();
        inner.push_link(Box::new(move |r| {
            outer.resume_from_chain(r);
            Next::Moved
        }));
    }

    fn resume_from_chain(self, r: Result<T, Failure>) {
        let chained = {
            let mut s = self.inner.borrow_mut();
            s.result = Some(r);
            s.waiting = false;
            s.chained_to.take()
        };
        drop(chained);
        if DEPTH.with(Cell::get) >= MAX_NESTING {
            TRAMPOLINE.with(|t| {
                t.borrow_mut()
                    .push_back(Box::new(move || self.run_callbacks()))
            });
        } else {
            self.run_callbacks();
        }
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

/// Records the callback's name on a failure it returned.
fn note_failure<T: 'static>(step: Step<T>, name: &'static str) -> Next<T> {
    if let Step::Done(Err(f)) = &step {
        f.note(name);
    }
    step.into()
}

impl<T: 'static> Default for Deferred<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: 'static> Fired for Deferred<T> {
    fn has_fired(&self) -> bool {
        let s = self.inner.borrow();
        s.called && s.paused == 0 && !s.waiting && !s.running
    }
}

impl<T: 'static> fmt::Debug for Deferred<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Ok(s) = self.inner.try_borrow() else {
            return f.write_str("Deferred { <running> }");
        };
        let state = match (&s.result, s.called, s.paused, s.consumed) {
            (_, false, _, _) => "pending".to_owned(),
            (_, true, _, true) => "consumed".to_owned(),
            (_, true, p, _) if p > 0 || s.waiting => "paused".to_owned(),
            (Some(Ok(_)), true, _, _) => "success".to_owned(),
            (Some(Err(e)), true, _, _) => format!("failure: {e}"),
            (None, true, _, _) => "running".to_owned(),
        };
        write!(f, "Deferred {{ {state} }}")
    }
}
