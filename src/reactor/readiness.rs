//! The reactor's seams for I/O: what a poll reports ([`Readiness`]), who handles it
//! ([`IoHandler`]), a flag a run waits on ([`Fired`]), and how a run fails ([`RunError`]).

use std::cell::Cell;
use std::fmt;
use std::io;
use std::rc::Rc;

use mio::Token;

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
    pub(super) fn from_event(event: &mio::event::Event) -> Self {
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

/// Why [`Reactor::run_until`](super::Reactor::run_until) returned without the awaited event.
#[derive(Debug)]
#[non_exhaustive]
pub enum RunError {
    /// `stop()` was called before the event happened.
    Stopped,
    /// Nothing can ever make progress: no timers, no I/O sources and no other thread
    /// holding a [`ThreadCaller`](super::ThreadCaller). Waiting would block forever.
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
