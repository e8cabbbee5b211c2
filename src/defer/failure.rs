//! [`Failure`]: the error value that travels down a Deferred's errback path, and the
//! error types the Deferred machinery itself raises.
//!
//! A `Failure` boxes any `std::error::Error`, remembers where it was raised and which
//! callbacks it went through, and can be matched by type: [`Failure::check`] and
//! [`Failure::trap`] are Twisted's `check`/`trap`, done with a downcast.

use std::any::type_name;
use std::cell::RefCell;
use std::error::Error;
use std::fmt;
use std::panic::Location;
use std::rc::Rc;

/// The last segment of a Rust type path, without generic arguments:
/// `trawl::net::tcp::ConnectError` → `ConnectError` (how stats keys and settings name
/// error types, as Scrapy names an exception by its class).
pub fn short_type_name(type_name: &str) -> &str {
    let base = type_name.split('<').next().unwrap_or(type_name);
    base.rsplit("::").next().unwrap_or(base)
}

/// How many callback names a failure's trail keeps (the oldest are kept).
const TRAIL_LIMIT: usize = 16;

/// An error travelling down a Deferred chain: Twisted's `Failure`.
///
/// Cloning is cheap (a reference count): the same failure can be recorded in a
/// `DeferredList` and left in the chain it came from.
///
/// `Failure` deliberately does not implement `std::error::Error` itself, so that any
/// error converts into it with `?` (as `anyhow::Error` does).
///
/// # Examples
///
/// ```
/// use std::io;
/// use trawl::defer::Failure;
///
/// let f = Failure::new(io::Error::new(io::ErrorKind::TimedOut, "slow"));
/// assert!(f.check::<io::Error>());
/// assert_eq!(f.trap::<io::Error>().unwrap().kind(), io::ErrorKind::TimedOut);
/// assert!(f.trap::<std::fmt::Error>().is_err()); // re-raised: it is not that kind
/// ```
#[derive(Clone)]
pub struct Failure {
    inner: Rc<Inner>,
}

struct Inner {
    error: Box<dyn Error + 'static>,
    type_name: &'static str,
    location: &'static Location<'static>,
    trail: RefCell<Vec<&'static str>>,
}

impl Failure {
    /// Wraps an error, recording the caller's location as where it was raised.
    #[track_caller]
    pub fn new<E: Error + 'static>(error: E) -> Self {
        Self::build(Box::new(error), type_name::<E>(), Location::caller())
    }

    /// Wraps an already boxed error.
    #[track_caller]
    pub fn from_boxed(error: Box<dyn Error + 'static>) -> Self {
        Self::build(error, "Box<dyn Error>", Location::caller())
    }

    /// A failure carrying only a message.
    #[track_caller]
    pub fn msg(message: impl Into<String>) -> Self {
        Self::build(
            Box::new(Message(message.into())),
            type_name::<Message>(),
            Location::caller(),
        )
    }

    /// A failure for a caught panic payload.
    #[track_caller]
    pub fn from_panic(payload: &(dyn std::any::Any + Send)) -> Self {
        Self::new(PanicError {
            message: crate::reactor::panic_message(payload),
        })
    }

    fn build(
        error: Box<dyn Error + 'static>,
        type_name: &'static str,
        location: &'static Location<'static>,
    ) -> Self {
        Self {
            inner: Rc::new(Inner {
                error,
                type_name,
                location,
                trail: RefCell::new(Vec::new()),
            }),
        }
    }

    /// The wrapped error.
    pub fn error(&self) -> &(dyn Error + 'static) {
        self.inner.error.as_ref()
    }

    /// Whether the wrapped error is an `E` (Twisted's `check`).
    pub fn check<E: Error + 'static>(&self) -> bool {
        self.inner.error.is::<E>()
    }

    /// The wrapped error as an `E`, if it is one.
    pub fn downcast_ref<E: Error + 'static>(&self) -> Option<&E> {
        self.inner.error.downcast_ref::<E>()
    }

    /// Twisted's `trap`: the wrapped error as an `E`, or this failure again (cheaply
    /// cloned) so that an errback can re-raise anything else with `?`.
    ///
    /// # Errors
    ///
    /// The failure itself, when the error is not an `E`.
    pub fn trap<E: Error + 'static>(&self) -> Result<&E, Failure> {
        self.inner
            .error
            .downcast_ref::<E>()
            .ok_or_else(|| self.clone())
    }

    /// The first `E` in the wrapped error or the chain of its [`source`](Error::source)s.
    ///
    /// Rust has no subclasses; an error that *is a kind of* another wraps it as its
    /// source (an I/O error inside a connection error), so matching through the chain is
    /// the equivalent of Twisted matching a subclass.
    pub fn find<E: Error + 'static>(&self) -> Option<&E> {
        let mut current: Option<&(dyn Error + 'static)> = Some(self.error());
        while let Some(error) = current {
            if let Some(found) = error.downcast_ref::<E>() {
                return Some(found);
            }
            current = error.source();
        }
        None
    }

    /// Twisted's `check(*errorTypes)`: the first of `types` the failure matches, if any.
    ///
    /// ```
    /// use std::io;
    /// use trawl::defer::{CancelledError, ErrorType, Failure, TimeoutError};
    ///
    /// let f = Failure::new(io::Error::other("reset"));
    /// let family = [ErrorType::of::<TimeoutError>(), ErrorType::of::<io::Error>()];
    /// assert_eq!(f.check_any(&family).map(|t| t.name()), Some("std::io::error::Error"));
    /// assert!(f.check_any(&[ErrorType::of::<CancelledError>()]).is_none());
    /// ```
    pub fn check_any(&self, types: &[ErrorType]) -> Option<ErrorType> {
        types.iter().copied().find(|t| (t.matches)(self.error()))
    }

    /// Twisted's `trap(*errorTypes)`: the matching type, or this failure again so that
    /// an errback re-raises anything else with `?`.
    ///
    /// # Errors
    ///
    /// The failure itself, when it matches none of `types`.
    pub fn trap_any(&self, types: &[ErrorType]) -> Result<ErrorType, Failure> {
        self.check_any(types).ok_or_else(|| self.clone())
    }

    /// The Rust type name of the wrapped error (`"Box<dyn Error>"` when boxed upstream).
    pub fn type_name(&self) -> &'static str {
        self.inner.type_name
    }

    /// The wrapped error's type name without its path or generic arguments
    /// (`IgnoreRequest`): what Scrapy's stats keys name as the exception's class
    /// (`spider_exceptions/<name>`, `retry/reason_count/<name>`).
    pub fn short_type_name(&self) -> &'static str {
        short_type_name(self.type_name())
    }

    /// Where the failure was raised.
    pub fn location(&self) -> &'static Location<'static> {
        self.inner.location
    }

    /// The callbacks the failure went through, oldest first (closure type names, which
    /// name the function that added them).
    pub fn trail(&self) -> Vec<&'static str> {
        self.inner.trail.borrow().clone()
    }

    /// Records that the failure went through the callback named `name`.
    pub(crate) fn note(&self, name: &'static str) {
        let mut trail = self.inner.trail.borrow_mut();
        if trail.len() < TRAIL_LIMIT {
            trail.push(name);
        }
    }

    /// Whether two handles refer to the same failure.
    pub fn ptr_eq(&self, other: &Failure) -> bool {
        Rc::ptr_eq(&self.inner, &other.inner)
    }

    /// A multi-line description for logs: the error with its sources, where it was
    /// raised and the trail.
    pub fn describe(&self) -> String {
        let mut out = format!("{}: {}", self.inner.type_name, self.inner.error);
        let mut source = self.inner.error.source();
        while let Some(cause) = source {
            out.push_str(&format!("\n  caused by: {cause}"));
            source = cause.source();
        }
        out.push_str(&format!("\n  raised at {}", self.inner.location));
        let trail = self.inner.trail.borrow();
        if !trail.is_empty() {
            out.push_str("\n  passed through:");
            for name in trail.iter() {
                out.push_str("\n    ");
                out.push_str(name);
            }
        }
        out
    }
}

impl<E: Error + 'static> From<E> for Failure {
    #[track_caller]
    fn from(error: E) -> Self {
        Self::new(error)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner.error, f)
    }
}

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Failure")
            .field("type", &self.inner.type_name)
            .field("error", &self.inner.error.to_string())
            .field("location", &format_args!("{}", self.inner.location))
            .finish()
    }
}

/// One member of an error family for [`Failure::check_any`] / [`Failure::trap_any`].
#[derive(Clone, Copy)]
pub struct ErrorType {
    name: &'static str,
    matches: fn(&(dyn Error + 'static)) -> bool,
}

impl ErrorType {
    /// Matches an `E` exactly.
    pub fn of<E: Error + 'static>() -> Self {
        Self {
            name: type_name::<E>(),
            matches: |e| e.is::<E>(),
        }
    }

    /// Matches an `E` or any error with an `E` in its `source()` chain (Twisted's
    /// subclass match; see [`Failure::find`]).
    pub fn caused_by<E: Error + 'static>() -> Self {
        Self {
            name: type_name::<E>(),
            matches: |e| {
                let mut current = Some(e);
                while let Some(error) = current {
                    if error.is::<E>() {
                        return true;
                    }
                    current = error.source();
                }
                false
            },
        }
    }

    /// The Rust type name of the matched error type.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

impl fmt::Debug for ErrorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ErrorType({})", self.name)
    }
}

/// A plain message error (what [`Failure::msg`] wraps).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message(pub String);

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for Message {}

/// A callback panicked; the panic was caught and turned into this error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PanicError {
    /// The panic message.
    pub message: String,
}

impl fmt::Display for PanicError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "callback panicked: {}", self.message)
    }
}

impl Error for PanicError {}

/// `callback`/`errback` was called on a Deferred that already has a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlreadyCalledError;

impl fmt::Display for AlreadyCalledError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the Deferred has already been called")
    }
}

impl Error for AlreadyCalledError {}

/// The Deferred was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CancelledError;

impl fmt::Display for CancelledError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the Deferred was cancelled")
    }
}

impl Error for CancelledError {}

/// The Deferred did not fire within the time given to `add_timeout`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeoutError {
    /// The timeout, in seconds.
    pub seconds: f64,
}

impl fmt::Display for TimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the Deferred timed out after {} seconds", self.seconds)
    }
}

impl Error for TimeoutError {}

/// A callback returned the very Deferred it was attached to, which could never fire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainedToSelfError;

impl fmt::Display for ChainedToSelfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a callback returned the Deferred it was attached to")
    }
}

impl Error for ChainedToSelfError {}

/// A callback returned (or a chain waited on) a Deferred whose result another chain had
/// already taken (through `then`, `chain_deferred` or a `DeferredList`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsumedError;

impl fmt::Display for ConsumedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the Deferred's result was already taken by another chain")
    }
}

impl Error for ConsumedError {}

/// The first failure in a `DeferredList` with `fire_on_one_errback`, or in
/// `gather_results`.
#[derive(Debug, Clone)]
pub struct FirstError {
    /// Index of the failed Deferred in the list.
    pub index: usize,
    /// Its failure.
    pub failure: Failure,
}

impl fmt::Display for FirstError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FirstError[#{}, {}]", self.index, self.failure)
    }
}

impl Error for FirstError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(self.failure.error())
    }
}
