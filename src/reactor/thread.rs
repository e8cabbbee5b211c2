//! Handing work from other threads to the reactor thread (Twisted's
//! `callFromThread`): a mutex-protected queue plus a `mio::Waker` that interrupts the
//! poll. Worker threads never touch reactor state; they enqueue a message and wake the
//! loop, which runs it on its own thread at the top of the next iteration.

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, MutexGuard};

use slab::Slab;

use super::ReactorHandle;

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
}

impl ThreadCaller {
    pub(super) fn new(queue: Arc<ThreadQueue>) -> Self {
        Self { queue }
    }

    /// Runs `f` on the reactor thread, at the top of its next iteration, waking it if it
    /// is blocked in poll. Calls run in the order they were made.
    pub fn call_from_thread<F>(&self, f: F)
    where
        F: FnOnce(&ReactorHandle) + Send + 'static,
    {
        self.queue.push(Message::Call(Box::new(f)));
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
