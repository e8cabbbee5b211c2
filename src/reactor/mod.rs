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
mod handle;
mod panic;
mod readiness;
pub mod scope;

use std::cell::{Cell, RefCell};
use std::fmt;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use mio::{Events, Poll, Token};
use slab::Slab;

pub use clock::{Clock, DelayedCall, DelayedCallError, ManualClock};
pub(crate) use clock::{nanos_to_secs, secs_to_nanos};
pub use handle::{Dropped, ReactorHandle, ThreadCaller, ThreadResult};
pub use panic::panic_message;
pub use readiness::{Fired, IoHandler, Readiness, RunError};
pub use scope::ScopeId;

use handle::{Message, PendingCalls, Shared, ThreadQueue};

/// The token reserved for the cross-thread waker.
const WAKER_TOKEN: Token = Token(usize::MAX);

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
            thread_calls: RefCell::new(PendingCalls::default()),
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
            let Some((handler, scope)) = handler else {
                continue;
            };
            let readiness = Readiness::from_event(event);
            let _scope = scope.enter();
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
                Message::Call(f) => {
                    let handle = self.handle.clone();
                    Box::new(move || f(&handle)) as Box<dyn FnOnce()>
                }
                Message::Result(id, value) => {
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
