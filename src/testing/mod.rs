//! Test doubles shipped for users, as `twisted.internet.testing` and trial do: a
//! [`ManualClock`], helpers that read a Deferred's result synchronously
//! ([`success_result_of`], [`failure_result_of`], [`assert_no_result`]) and
//! [`StringTransport`], an in-memory transport for protocol tests — plus the servers
//! tests crawl and store into: the [`FixtureServer`] site and a real [`RedisServer`] —
//! and a [`TempDir`] for a test's files.
//!
//! The helpers panic with a clear message when the expectation does not hold: they are
//! assertions, meant for tests.

pub mod broad;
pub mod fixture;
pub mod hostile;
pub mod login;
pub mod media;
pub mod redis_cluster;
pub mod redis_load;
pub mod redis_server;
mod reply;
mod routes;
pub mod site;
pub mod spiders;
pub mod tempdir;

use std::cell::{Cell, RefCell};
use std::fmt;
use std::net::SocketAddr;
use std::rc::Rc;

use crate::defer::{Deferred, Failure};
use crate::net::{Protocol, Transport};

pub use crate::reactor::ManualClock;
use crate::reactor::{Fired, Reactor};
pub use broad::{BroadOptions, BroadSite};
pub use fixture::{FixtureOptions, FixtureServer};
pub use redis_cluster::RedisCluster;
pub use redis_server::{RedisServer, RedisServerOptions};
pub use site::{Site, author_slug};
pub use tempdir::TempDir;

/// The value of a Deferred that has already succeeded (trial's `successResultOf`). The
/// result is taken out: the Deferred is consumed.
///
/// # Panics
///
/// If the Deferred has no result yet, or failed.
#[track_caller]
pub fn success_result_of<T: 'static>(d: Deferred<T>) -> T {
    match d.take_result() {
        Some(Ok(value)) => value,
        Some(Err(failure)) => panic!(
            "success result expected on {d:?}, found failure result instead:\n{}",
            failure.describe()
        ),
        None => panic!("success result expected on {d:?}, found no result instead"),
    }
}

/// The failure of a Deferred that has already failed (trial's `failureResultOf`). The
/// failure is taken out, so it is not logged as unhandled.
///
/// # Panics
///
/// If the Deferred has no result yet, or succeeded.
#[track_caller]
pub fn failure_result_of<T: 'static>(d: Deferred<T>) -> Failure {
    match d.take_result() {
        Some(Err(failure)) => failure,
        Some(Ok(_)) => panic!("failure result expected on {d:?}, found success result instead"),
        None => panic!("failure result expected on {d:?}, found no result instead"),
    }
}

/// Asserts that a Deferred has no result yet (trial's `assertNoResult`).
///
/// # Panics
///
/// If it has one.
#[track_caller]
pub fn assert_no_result<T: 'static>(d: &Deferred<T>) {
    assert!(
        !d.has_result(),
        "expected no result on {d:?}, found a result instead"
    );
}

/// Runs `reactor` until `event` fires, for at most `secs` seconds of the reactor's
/// clock: a test that waits on a live server fails with a message naming what it waited
/// for instead of hanging when the server never answers.
///
/// # Panics
///
/// If `event` has not fired within `secs`, or the reactor stalls or stops first.
#[track_caller]
pub fn run_within<E: Fired>(reactor: &mut Reactor, event: &E, secs: f64, what: &str) {
    let timed_out = Rc::new(Cell::new(false));
    let flag = timed_out.clone();
    let handle = reactor.handle();
    let timer = reactor.call_later(secs, move || {
        flag.set(true);
        handle.stop();
    });
    let outcome = reactor.run_until(event);
    if timer.active() {
        let _ = timer.cancel();
    }
    assert!(
        !timed_out.get(),
        "gave up after {secs} s waiting for {what}"
    );
    if let Err(e) = outcome {
        panic!("the reactor ended before {what}: {e:?}");
    }
}

/// An in-memory [`Transport`] that records what a protocol does to it: Twisted's
/// `StringTransport`.
///
/// # Examples
///
/// ```
/// use std::rc::Rc;
/// use trawl::net::Transport;
/// use trawl::testing::StringTransport;
///
/// let t = Rc::new(StringTransport::new());
/// t.write(b"GET / HTTP/1.1\r\n");
/// t.lose_connection();
/// assert_eq!(t.value(), b"GET / HTTP/1.1\r\n");
/// assert!(t.disconnecting());
/// ```
#[derive(Default)]
pub struct StringTransport {
    written: RefCell<Vec<u8>>,
    disconnecting: Cell<bool>,
    aborted: Cell<bool>,
    paused: Cell<bool>,
    peer: Option<SocketAddr>,
    host: Option<SocketAddr>,
    protocol: RefCell<Option<Rc<dyn Protocol>>>,
    producer: RefCell<Option<Rc<dyn Fn()>>>,
    me: RefCell<std::rc::Weak<StringTransport>>,
}

impl StringTransport {
    /// A transport with no addresses.
    pub fn new() -> Self {
        Self::default()
    }

    /// A transport reporting these addresses.
    pub fn with_addresses(host: SocketAddr, peer: SocketAddr) -> Self {
        Self {
            host: Some(host),
            peer: Some(peer),
            ..Self::default()
        }
    }

    /// Connects `protocol` to a new transport (calls `connection_made`) and returns it.
    pub fn connect(protocol: &dyn Protocol) -> Rc<Self> {
        let transport = Self::new_rc();
        protocol.connection_made(transport.clone());
        transport
    }

    /// A shared transport, ready for [`Transport::attach`] (which needs to hand the
    /// protocol an `Rc` of it).
    pub fn new_rc() -> Rc<Self> {
        let t = Rc::new(Self::new());
        *t.me.borrow_mut() = Rc::downgrade(&t);
        t
    }

    /// Delivers bytes from the peer to the attached protocol.
    pub fn deliver(&self, data: &[u8]) {
        let p = self.protocol.borrow().clone();
        if let Some(p) = p {
            p.data_received(data);
        }
    }

    /// The peer closes: the attached protocol's `connection_lost` with `reason`.
    pub fn close_from_peer(&self, reason: Failure) {
        self.disconnecting.set(true);
        let p = self.protocol.borrow_mut().take();
        if let Some(p) = p {
            p.connection_lost(reason);
        }
    }

    /// Everything written so far.
    pub fn value(&self) -> Vec<u8> {
        self.written.borrow().clone()
    }

    /// Forgets what was written so far.
    pub fn clear(&self) {
        self.written.borrow_mut().clear();
    }

    /// Whether `lose_connection` (or `abort_connection`) was called.
    pub fn disconnecting(&self) -> bool {
        self.disconnecting.get()
    }

    /// Whether `abort_connection` was called.
    pub fn aborted(&self) -> bool {
        self.aborted.get()
    }

    /// Whether the protocol paused reading.
    pub fn producer_paused(&self) -> bool {
        self.paused.get()
    }

    /// Calls the registered pull producer once, as a drained write buffer would;
    /// `false` when none is registered.
    pub fn resume_producer(&self) -> bool {
        let producer = self.producer.borrow().clone();
        producer.is_some_and(|p| {
            p();
            true
        })
    }
}

impl Transport for StringTransport {
    fn write(&self, data: &[u8]) {
        if !self.disconnecting.get() {
            self.written.borrow_mut().extend_from_slice(data);
        }
    }

    fn lose_connection(&self) {
        self.disconnecting.set(true);
    }

    fn abort_connection(&self) {
        self.disconnecting.set(true);
        self.aborted.set(true);
    }

    fn pause_producing(&self) {
        self.paused.set(true);
    }

    fn resume_producing(&self) {
        self.paused.set(false);
    }

    fn peer(&self) -> Option<SocketAddr> {
        self.peer
    }

    fn host(&self) -> Option<SocketAddr> {
        self.host
    }

    fn attach(&self, protocol: Rc<dyn Protocol>) {
        *self.protocol.borrow_mut() = Some(protocol.clone());
        let me = self.me.borrow().upgrade();
        if let Some(me) = me {
            protocol.connection_made(me);
        }
    }

    fn is_closed(&self) -> bool {
        self.disconnecting.get()
    }

    fn register_producer(&self, producer: Rc<dyn Fn()>) {
        *self.producer.borrow_mut() = Some(producer);
    }

    fn unregister_producer(&self) {
        self.producer.borrow_mut().take();
    }
}

impl fmt::Debug for StringTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StringTransport")
            .field("written", &self.written.borrow().len())
            .field("disconnecting", &self.disconnecting.get())
            .field("aborted", &self.aborted.get())
            .finish()
    }
}
