//! [`ReactorHandle`]: the cheap, cloneable handle on a reactor that protocols and
//! components keep (timers, I/O registration, stopping), and the calls that cross
//! threads into the reactor: a [`ThreadCaller`] hands a closure to the reactor thread,
//! a [`ThreadResult`] sends one value back to a waiting callback.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::io;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use mio::event::Source;
use mio::{Interest, Token};
use slab::Slab;

use super::clock::Clock;
use super::clock::DelayedCall;
use super::readiness::IoHandler;
use super::scope::ScopeId;
use std::marker::PhantomData;
use std::sync::{Mutex, MutexGuard};

/// A value computed on another thread, boxed for the trip.
pub(super) type Boxed = Box<dyn Any + Send>;

/// What a worker thread sends.
pub(super) enum Message {
    /// Run a closure on the reactor thread.
    Call(Box<dyn FnOnce(&ReactorHandle) + Send>),
    /// Deliver the result for a pending [`ThreadResult`].
    Result(usize, Result<Boxed, Dropped>),
}

/// Reactor-side callbacks waiting for a [`ThreadResult`], by id.
pub(super) type PendingCalls = Slab<Box<dyn FnOnce(Result<Boxed, Dropped>)>>;

/// The cross-thread queue shared by the reactor and every [`ThreadCaller`].
pub(super) struct ThreadQueue {
    queue: Mutex<Vec<Message>>,
    waker: mio::Waker,
}

impl ThreadQueue {
    pub(super) fn new(waker: mio::Waker) -> Self {
        Self {
            queue: Mutex::new(Vec::new()),
            waker,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Message>> {
        // A worker that panicked while holding the lock leaves the Vec intact.
        self.queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn push(&self, message: Message) {
        let was_empty = {
            let mut queue = self.lock();
            let was_empty = queue.is_empty();
            queue.push(message);
            was_empty
        };
        if was_empty && let Err(e) = self.waker.wake() {
            log::error!("Could not wake the reactor from another thread: {e}");
        }
    }

    pub(super) fn drain(&self) -> Vec<Message> {
        std::mem::take(&mut *self.lock())
    }

    pub(super) fn has_queued(&self) -> bool {
        !self.lock().is_empty()
    }
}

/// A `Send + Clone` handle for running closures on the reactor thread from any thread.
#[derive(Clone)]
pub struct ThreadCaller {
    queue: Arc<ThreadQueue>,
    /// The scope current where the caller was made: its calls run in it.
    scope: ScopeId,
}

impl ThreadCaller {
    pub(super) fn new(queue: Arc<ThreadQueue>) -> Self {
        Self {
            queue,
            scope: ScopeId::current(),
        }
    }

    /// Runs `f` on the reactor thread, at the top of its next iteration, waking it if it
    /// is blocked in poll. Calls run in the order they were made, in the scope the
    /// caller was made in.
    pub fn call_from_thread<F>(&self, f: F)
    where
        F: FnOnce(&ReactorHandle) + Send + 'static,
    {
        let scope = self.scope;
        self.queue
            .push(Message::Call(Box::new(move |h: &ReactorHandle| {
                let _scope = scope.enter();
                f(h);
            })));
    }
}

impl fmt::Debug for ThreadCaller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadCaller").finish_non_exhaustive()
    }
}

/// The worker's end of [`ReactorHandle::expect_from_thread`]: send one value back.
///
/// Dropping it without sending delivers [`Dropped`] instead, so the reactor side never
/// waits forever for a worker that panicked.
pub struct ThreadResult<R: Send + 'static> {
    queue: Arc<ThreadQueue>,
    id: usize,
    sent: bool,
    _value: PhantomData<fn(R)>,
}

impl<R: Send + 'static> ThreadResult<R> {
    pub(super) fn new(queue: Arc<ThreadQueue>, id: usize) -> Self {
        Self {
            queue,
            id,
            sent: false,
            _value: PhantomData,
        }
    }

    /// Sends the value to the reactor thread.
    pub fn send(mut self, value: R) {
        self.sent = true;
        self.queue
            .push(Message::Result(self.id, Ok(Box::new(value))));
    }
}

impl<R: Send + 'static> Drop for ThreadResult<R> {
    fn drop(&mut self) {
        if !self.sent {
            self.queue.push(Message::Result(self.id, Err(Dropped)));
        }
    }
}

impl<R: Send + 'static> fmt::Debug for ThreadResult<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadResult")
            .field("id", &self.id)
            .finish()
    }
}

/// The worker dropped its [`ThreadResult`] without sending a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dropped;

impl fmt::Display for Dropped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the worker thread ended without sending its result")
    }
}

impl std::error::Error for Dropped {}

pub(super) struct Shared {
    pub(super) clock: Clock,
    pub(super) registry: mio::Registry,
    /// Each source's handler and the scope it was registered in.
    pub(super) sources: RefCell<Slab<(Rc<dyn IoHandler>, ScopeId)>>,
    pub(super) threads: Arc<ThreadQueue>,
    pub(super) thread_calls: RefCell<PendingCalls>,
    pub(super) stopping: Cell<bool>,
    pub(super) iterations: Cell<u64>,
    /// The longest stretch of work between two polls (nanoseconds): how long the
    /// reactor was deaf to I/O at worst.
    pub(super) max_stall: Cell<u64>,
}

/// A cheap, cloneable handle to a reactor: schedule timers, register I/O sources, stop
/// the loop. Protocols and components keep one instead of borrowing the [`Reactor`](super::Reactor).
#[derive(Clone)]
pub struct ReactorHandle {
    pub(super) shared: Rc<Shared>,
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

    /// Asks the loop to return from [`Reactor::run`](super::Reactor::run) after the current iteration.
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
            entry.insert((handler, ScopeId::current()));
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
        let scope = ScopeId::current();
        let deliver = move |value: Result<Boxed, Dropped>| {
            let _scope = scope.enter();
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

    pub(super) fn can_progress(&self) -> bool {
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
