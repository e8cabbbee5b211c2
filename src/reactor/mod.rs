//! Layer 0: the event loop. A [`Reactor`] owns a `mio::Poll`, a [`Clock`] with its timer
//! queue, a `slab` of registered I/O sources and a cross-thread call queue woken through
//! a `mio::Waker`.
//!
//! This layer knows nothing of Deferreds, HTTP, Redis or crawling, and must never import
//! them (`tests/layering.rs` checks). Higher layers plug in through three small seams:
//! [`Clock::call_later`] for time, [`IoHandler`] for readiness events, and
//! [`ThreadCaller`] for results computed on other threads.
//!
//! # One iteration
//!
//! 1. run every timer that is due (calls scheduled meanwhile wait for the next iteration,
//!    so a chain of zero-delay calls cannot starve I/O);
//! 2. run calls handed over by other threads;
//! 3. block in `poll` until the next timer is due, an I/O source is ready or another
//!    thread wakes the loop (no timers and no I/O: block indefinitely, using no CPU);
//! 4. dispatch each readiness event to the handler registered under its `Token`.
//!
//! No `RefCell` borrow of reactor state is held while a timer, handler or thread call
//! runs, so any of them may schedule, cancel, register, deregister or stop re-entrantly.

mod clock;
mod thread;

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use mio::event::Source;
use mio::{Events, Interest, Poll, Token};
use slab::Slab;

pub use clock::{Clock, DelayedCall, DelayedCallError, ManualClock};
pub(crate) use clock::{nanos_to_secs, secs_to_nanos};
pub use thread::{Dropped, ThreadCaller, ThreadResult};

use thread::ThreadQueue;

/// The token reserved for the cross-thread waker.
const WAKER_TOKEN: Token = Token(usize::MAX);

/// What became ready on a registered source, as reported by one poll.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Readiness {
    /// The source can be read (or has data, EOF or an error to report).
    pub readable: bool,
    /// The source can be written.
    pub writable: bool,
    /// The peer closed its writing half (EOF follows on read).
    pub read_closed: bool,
    /// The writing half is closed.
    pub write_closed: bool,
    /// The source reported an error.
    pub error: bool,
}

impl Readiness {
    fn from_event(event: &mio::event::Event) -> Self {
        Self {
            readable: event.is_readable(),
            writable: event.is_writable(),
            read_closed: event.is_read_closed(),
            write_closed: event.is_write_closed(),
            error: event.is_error(),
        }
    }
}

/// The owner of a registered I/O source: receives its readiness events.
///
/// Implementations use interior mutability and must not hold a borrow of their own
/// state while calling out (into Deferred callbacks or user protocols): those may call
/// straight back into the handler.
pub trait IoHandler {
    /// Called with the readiness of the source registered under `token`.
    fn ready(&self, token: Token, readiness: Readiness);
}

/// Something the reactor can run until: a Deferred, a flag, a future-like value.
///
/// `defer::Deferred` implements it; the reactor itself only asks whether it has fired.
pub trait Fired {
    /// Whether the awaited event has happened.
    fn has_fired(&self) -> bool;
}

impl Fired for Cell<bool> {
    fn has_fired(&self) -> bool {
        self.get()
    }
}

impl<T: Fired + ?Sized> Fired for Rc<T> {
    fn has_fired(&self) -> bool {
        (**self).has_fired()
    }
}

/// Why [`Reactor::run_until`] returned without the awaited event.
#[derive(Debug)]
#[non_exhaustive]
pub enum RunError {
    /// `stop()` was called before the event happened.
    Stopped,
    /// Nothing can ever make progress: no timers, no I/O sources and no other thread
    /// holding a [`ThreadCaller`]. Waiting would block forever.
    Stalled,
    /// Polling the operating system failed.
    Io(io::Error),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stopped => f.write_str("the reactor was stopped before the awaited event"),
            Self::Stalled => f.write_str(
                "the reactor stalled: nothing is scheduled, registered or pending on another thread",
            ),
            Self::Io(e) => write!(f, "polling failed: {e}"),
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for RunError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

struct Shared {
    clock: Clock,
    registry: mio::Registry,
    sources: RefCell<Slab<Rc<dyn IoHandler>>>,
    threads: Arc<ThreadQueue>,
    thread_calls: RefCell<thread::PendingCalls>,
    stopping: Cell<bool>,
    iterations: Cell<u64>,
    /// The longest stretch of work between two polls (nanoseconds): how long the
    /// reactor was deaf to I/O at worst.
    max_stall: Cell<u64>,
}

/// A cheap, cloneable handle to a reactor: schedule timers, register I/O sources, stop
/// the loop. Protocols and components keep one instead of borrowing the [`Reactor`].
#[derive(Clone)]
pub struct ReactorHandle {
    shared: Rc<Shared>,
}

impl ReactorHandle {
    /// The reactor's clock.
    pub fn clock(&self) -> &Clock {
        &self.shared.clock
    }

    /// The longest time the loop spent working between two polls so far: how long, at
    /// worst, every connection waited for the reactor (`reactor/max_stall_ms`).
    pub fn max_stall(&self) -> Duration {
        Duration::from_nanos(self.shared.max_stall.get())
    }

    /// Now, in seconds since the reactor started.
    pub fn seconds(&self) -> f64 {
        self.shared.clock.seconds()
    }

    /// Schedules `f` to run `delay` seconds from now: [`Clock::call_later`].
    pub fn call_later<F>(&self, delay: f64, f: F) -> DelayedCall
    where
        F: FnOnce() + 'static,
    {
        self.shared.clock.call_later(delay, f)
    }

    /// Asks the loop to return from [`Reactor::run`] after the current iteration.
    pub fn stop(&self) {
        self.shared.stopping.set(true);
    }

    /// Whether [`stop`](Self::stop) was called and the loop has not yet returned.
    pub fn is_stopping(&self) -> bool {
        self.shared.stopping.get()
    }

    /// Registers `source` for `interest`, dispatching its events to `handler`.
    ///
    /// # Errors
    ///
    /// The operating system refused the registration.
    pub fn register<S>(
        &self,
        source: &mut S,
        interest: Interest,
        handler: Rc<dyn IoHandler>,
    ) -> io::Result<Token>
    where
        S: Source + ?Sized,
    {
        let token = {
            let mut sources = self.shared.sources.borrow_mut();
            let entry = sources.vacant_entry();
            let token = Token(entry.key());
            entry.insert(handler);
            token
        };
        if let Err(e) = self.shared.registry.register(source, token, interest) {
            self.shared.sources.borrow_mut().try_remove(token.0);
            return Err(e);
        }
        Ok(token)
    }

    /// Changes the interest of a registered source.
    ///
    /// # Errors
    ///
    /// The operating system refused the change.
    pub fn reregister<S>(&self, source: &mut S, token: Token, interest: Interest) -> io::Result<()>
    where
        S: Source + ?Sized,
    {
        self.shared.registry.reregister(source, token, interest)
    }

    /// Deregisters a source and drops its handler. Pending events for it are discarded.
    ///
    /// # Errors
    ///
    /// The operating system refused the deregistration (the handler is dropped anyway).
    pub fn deregister<S>(&self, source: &mut S, token: Token) -> io::Result<()>
    where
        S: Source + ?Sized,
    {
        let handler = self.shared.sources.borrow_mut().try_remove(token.0);
        let result = self.shared.registry.deregister(source);
        drop(handler);
        result
    }

    /// How many I/O sources are registered.
    pub fn source_count(&self) -> usize {
        self.shared.sources.borrow().len()
    }

    /// A `Send` handle through which other threads hand work to this reactor.
    pub fn thread_caller(&self) -> ThreadCaller {
        ThreadCaller::new(self.shared.threads.clone())
    }

    /// A pair for handing one result from another thread back to this one: a
    /// [`ThreadResult`] (which is `Send`) for the worker, and a callback run on the
    /// reactor thread with the value once it arrives — or with `Err` if the worker
    /// dropped its end without sending (it panicked, say).
    ///
    /// This is the primitive behind `defer_to_thread` and the threaded DNS resolver.
    pub fn expect_from_thread<R, F>(&self, on_result: F) -> ThreadResult<R>
    where
        R: Send + 'static,
        F: FnOnce(Result<R, Dropped>) + 'static,
    {
        let deliver = move |value: Result<thread::Boxed, Dropped>| {
            on_result(
                value.and_then(|boxed| boxed.downcast::<R>().map(|v| *v).map_err(|_| Dropped)),
            );
        };
        let id = self
            .shared
            .thread_calls
            .borrow_mut()
            .insert(Box::new(deliver));
        ThreadResult::new(self.shared.threads.clone(), id)
    }

    /// How many loop iterations have run (a benchmark and diagnostics counter).
    pub fn iterations(&self) -> u64 {
        self.shared.iterations.get()
    }

    fn can_progress(&self) -> bool {
        self.shared.clock.pending_count() > 0
            || !self.shared.sources.borrow().is_empty()
            || !self.shared.thread_calls.borrow().is_empty()
            || self.shared.threads.has_queued()
            || Arc::strong_count(&self.shared.threads) > 1
    }
}

impl fmt::Debug for ReactorHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReactorHandle")
            .field("seconds", &self.seconds())
            .field("timers", &self.shared.clock.pending_count())
            .field("sources", &self.source_count())
            .field("stopping", &self.is_stopping())
            .finish()
    }
}

/// The event loop: Twisted's reactor, on `mio`.
///
/// # Examples
///
/// ```
/// use trawl::reactor::Reactor;
///
/// let mut reactor = Reactor::new().unwrap();
/// let handle = reactor.handle();
/// let h = handle.clone();
/// handle.call_later(0.01, move || h.stop());
/// reactor.run().unwrap();
/// assert!(reactor.seconds() >= 0.01);
/// ```
pub struct Reactor {
    poll: Poll,
    events: Events,
    handle: ReactorHandle,
}

impl Reactor {
    /// A reactor on the monotonic system clock.
    ///
    /// # Errors
    ///
    /// The operating system could not create the poller or the waker.
    pub fn new() -> io::Result<Self> {
        Self::with_clock(Clock::monotonic())
    }

    /// A reactor whose timers run on `clock`. With a manual clock, time moves only when
    /// the test advances it; the loop then polls I/O without waiting for timers.
    ///
    /// # Errors
    ///
    /// The operating system could not create the poller or the waker.
    pub fn with_clock(clock: Clock) -> io::Result<Self> {
        let poll = Poll::new()?;
        let waker = mio::Waker::new(poll.registry(), WAKER_TOKEN)?;
        let registry = poll.registry().try_clone()?;
        let shared = Shared {
            clock,
            registry,
            sources: RefCell::new(Slab::new()),
            threads: Arc::new(ThreadQueue::new(waker)),
            thread_calls: RefCell::new(thread::PendingCalls::default()),
            stopping: Cell::new(false),
            iterations: Cell::new(0),
            max_stall: Cell::new(0),
        };
        Ok(Self {
            poll,
            events: Events::with_capacity(1024),
            handle: ReactorHandle {
                shared: Rc::new(shared),
            },
        })
    }

    /// A handle for scheduling and registering from anywhere on this thread.
    pub fn handle(&self) -> ReactorHandle {
        self.handle.clone()
    }

    /// The reactor's clock.
    pub fn clock(&self) -> &Clock {
        self.handle.clock()
    }

    /// Now, in seconds since the reactor started.
    pub fn seconds(&self) -> f64 {
        self.handle.seconds()
    }

    /// Schedules `f` to run `delay` seconds from now.
    pub fn call_later<F>(&self, delay: f64, f: F) -> DelayedCall
    where
        F: FnOnce() + 'static,
    {
        self.handle.call_later(delay, f)
    }

    /// Asks the loop to return after the current iteration.
    pub fn stop(&self) {
        self.handle.stop();
    }

    /// Runs the loop until [`stop`](ReactorHandle::stop) is called.
    ///
    /// # Errors
    ///
    /// Polling the operating system failed.
    pub fn run(&mut self) -> io::Result<()> {
        self.handle.shared.stopping.set(false);
        while !self.handle.shared.stopping.get() {
            self.iterate(None)?;
        }
        self.handle.shared.stopping.set(false);
        Ok(())
    }

    /// Runs the loop until `event` has fired (a Deferred has a result, say).
    ///
    /// # Errors
    ///
    /// [`RunError::Stopped`] if `stop()` was called first, [`RunError::Stalled`] if
    /// nothing could ever fire it, [`RunError::Io`] if polling failed.
    pub fn run_until<E: Fired>(&mut self, event: &E) -> Result<(), RunError> {
        self.handle.shared.stopping.set(false);
        loop {
            if event.has_fired() {
                return Ok(());
            }
            if self.handle.shared.stopping.get() {
                self.handle.shared.stopping.set(false);
                return Err(RunError::Stopped);
            }
            if !self.handle.can_progress() {
                return Err(RunError::Stalled);
            }
            self.iterate(Some(event as &dyn Fired))?;
        }
    }

    /// Runs one iteration: due timers, thread calls, one poll (waiting at most
    /// `max_wait`, or until the next timer), then readiness dispatch.
    ///
    /// # Errors
    ///
    /// Polling the operating system failed.
    pub fn run_once(&mut self, max_wait: Option<Duration>) -> io::Result<()> {
        self.iterate_with(max_wait, None)
    }

    fn iterate(&mut self, until: Option<&dyn Fired>) -> io::Result<()> {
        self.iterate_with(None, until)
    }

    fn iterate_with(
        &mut self,
        max_wait: Option<Duration>,
        until: Option<&dyn Fired>,
    ) -> io::Result<()> {
        let shared = self.handle.shared.clone();
        shared.iterations.set(shared.iterations.get() + 1);
        let work_started = std::time::Instant::now();

        let clock = &shared.clock;
        if !clock.is_manual() {
            clock.run_due(clock.now_nanos(), true);
        }
        self.run_thread_calls();

        let finished = shared.stopping.get() || until.is_some_and(|e| e.has_fired());
        let mut timeout = if finished {
            Some(Duration::ZERO)
        } else if clock.is_manual() {
            max_wait
        } else {
            clock.time_until_next()
        };
        if let Some(cap) = max_wait {
            timeout = Some(timeout.map_or(cap, |t| t.min(cap)));
        }

        let before_poll = std::time::Instant::now();
        let result = self.poll.poll(&mut self.events, timeout);
        let after_poll = std::time::Instant::now();
        match result {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
            Err(e) => return Err(e),
        }

        for event in self.events.iter() {
            let token = event.token();
            if token == WAKER_TOKEN {
                continue; // the thread queue is drained at the top of each iteration
            }
            let handler = shared.sources.borrow().get(token.0).cloned();
            let Some(handler) = handler else { continue };
            let readiness = Readiness::from_event(event);
            if let Err(panic) = catch_unwind(AssertUnwindSafe(|| handler.ready(token, readiness))) {
                log::error!(
                    "Unhandled panic in an I/O handler: {}",
                    panic_message(panic.as_ref())
                );
            }
        }
        if shared.threads.has_queued() {
            self.run_thread_calls();
        }
        let busy = (before_poll - work_started) + after_poll.elapsed();
        let busy = u64::try_from(busy.as_nanos()).unwrap_or(u64::MAX);
        if busy > shared.max_stall.get() {
            shared.max_stall.set(busy);
        }
        Ok(())
    }

    fn run_thread_calls(&self) {
        let shared = &self.handle.shared;
        for message in shared.threads.drain() {
            let call = match message {
                thread::Message::Call(f) => {
                    let handle = self.handle.clone();
                    Box::new(move || f(&handle)) as Box<dyn FnOnce()>
                }
                thread::Message::Result(id, value) => {
                    let Some(deliver) = shared.thread_calls.borrow_mut().try_remove(id) else {
                        continue;
                    };
                    Box::new(move || deliver(value))
                }
            };
            if let Err(panic) = catch_unwind(AssertUnwindSafe(call)) {
                log::error!(
                    "Unhandled panic in a call from another thread: {}",
                    panic_message(panic.as_ref())
                );
            }
        }
    }
}

impl fmt::Debug for Reactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Reactor").field(&self.handle).finish()
    }
}

/// The message of a caught panic payload, for logs and Failures.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}
