//! The Redis client on trawl's reactor: commands answered with Deferreds, pipelined on
//! one connection, never blocking the reactor.
//!
//! # How a command travels
//!
//! [`RedisClient::command`] encodes the command ([`crate::proto::resp`]) into the send
//! queue and returns a `Deferred<Value>`. Everything queued during one reactor turn is
//! written in one `write` at the end of the turn (a zero-delay timer): one round trip
//! for however many commands the crawl issued in that turn. Replies come back in order
//! and fire the Deferreds in order; a server error reply fails its Deferred with
//! [`ReplyError`].
//!
//! # Connections, outages and retries
//!
//! The client connects lazily through the shared [`Connector`] (`rediss://` is TLS over
//! rustls), sends `AUTH` and `SELECT` and loads the registered scripts (`SCRIPT LOAD`)
//! before anything else, and only then writes queued commands. When the connection is
//! lost — the server went away, a reply did not come within
//! [`RedisConfig::command_timeout`], a protocol error — commands already written and
//! not answered are put back at the front of the queue in their order and sent again
//! on the next connection (redis-py's `retry_on_timeout`: at-least-once; callers make
//! their commands idempotent, which the distributed layer's scripts are), unless sent
//! with [`RedisClient::command_once`]. Reconnection waits a capped exponential backoff
//! with jitter ([`RedisConfig::backoff_initial`] doubling up to
//! [`RedisConfig::backoff_max`], each delay drawn from its upper half). While
//! disconnected, up to [`RedisConfig::max_buffered`] commands wait; past that, new ones
//! fail at once with [`BufferFull`]. A handshake error (`AUTH`, `SELECT`) fails every
//! waiting command with the server's reply, since sending them would run them as the
//! wrong user or in the wrong database.
//!
//! # Sentinel
//!
//! With a `redis+sentinel://host:port,host:port/master[/db]` URL
//! ([`RedisConfig::sentinel`]) every connection starts by asking the sentinels in turn
//! for the master's address (`SENTINEL get-master-addr-by-name`; the one that answered
//! is asked first next time), then connects to it. Meanwhile one sentinel connection
//! stays subscribed to `+switch-master`: when a failover of the master is announced the
//! client drops its connection to the old master, ignores its later replies and sends
//! what was in flight again to the announced one. Without an announcement (no sentinel
//! reachable) a failover is still followed on the next reconnection: the old master's
//! connection is lost, or it answers writes with `READONLY` (demoted to a replica) or
//! `NOREPLICAS` (`min-replicas-to-write` and its replica gone), and the client asks
//! the sentinels again.
//!
//! # Scripts
//!
//! [`Script`]s are run with `EVALSHA`; they are loaded on every new connection, and
//! should the server answer `NOSCRIPT` anyway (someone ran `SCRIPT FLUSH`), the client
//! sends `EVAL` with the source. That fallback runs after the commands sent since, so
//! the ordering guarantee below does not hold across a `SCRIPT FLUSH`.
//!
//! # Ordering
//!
//! Commands run on the server in the order they were issued on one client, across
//! reconnections (the retried ones go first). The distributed scheduler relies on it:
//! a lease is acknowledged after the commands that stored the request's outputs.

pub mod cluster;
mod config;
mod connection;
pub mod handle;
mod sentinel;
mod sentinel_link;
mod sentinel_mode;
mod types;

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::rc::{Rc, Weak};

use crate::defer::{Deferred, Failure, TimeoutError};
use crate::net::{Connector, ConnectorConfig, Endpoint, Transport};
use crate::proto::resp::encode_command;
use crate::reactor::{DelayedCall, ReactorHandle};
use connection::{Connection, Replies};
use sentinel_link::SentinelWatch;

pub use crate::proto::resp::Value;
pub use config::{RedisConfig, RedisUrlError, SentinelConfig, mask_password};
pub use types::{
    BufferFull, ClientClosed, RedisConnectionError, RedisCounters, ReplyError, Script,
};

/// Opens a transport to an endpoint (the [`Connector`] by default; a test may hand out
/// `StringTransport`s).
pub type ConnectFn = Rc<dyn Fn(&Endpoint) -> Deferred<Rc<dyn Transport>>>;

/// Where a reply goes.
enum Sink {
    /// A command's Deferred.
    One(Deferred<Value>),
    /// The last of several replies (`MULTI` … `EXEC`: the `EXEC` reply).
    Last(Deferred<Value>),
    /// A handshake step (`AUTH`, `SELECT`, `SCRIPT LOAD`).
    Handshake(&'static str),
}

/// A command (or transaction) on its way.
struct Pending {
    bytes: Vec<u8>,
    commands: u64,
    replies: usize,
    got: usize,
    sink: Sink,
    retry: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Not connected, nothing tried yet (or waiting for work after a handshake error).
    Idle,
    Connecting,
    Handshaking,
    Ready,
    /// Waiting to reconnect.
    Backoff,
    Closed,
}

struct State {
    phase: Phase,
    conn: Option<Rc<Connection>>,
    generation: u64,
    queue: VecDeque<Pending>,
    inflight: VecDeque<Pending>,
    flush_timer: Option<DelayedCall>,
    reply_timer: Option<DelayedCall>,
    backoff_timer: Option<DelayedCall>,
    connecting: Option<Deferred<Rc<dyn Transport>>>,
    attempts: u32,
    rng: u64,
    counters: RedisCounters,
    scripts: Vec<Script>,
    last_error: Option<String>,
    /// Why the client itself dropped the current connection (a reply timeout).
    abort_reason: Option<String>,
    /// The current connection answered `READONLY` (Sentinel mode: a failover demoted
    /// it); its later replies are ignored and what it had in flight is sent again.
    demoted: bool,
    /// The sentinels in the order to ask them (the last one that answered first).
    sentinel_order: Vec<usize>,
    /// Sentinel mode: the master's address the current connection was made to (or
    /// is being made to), once known.
    master: Option<(String, u16)>,
    /// Sentinel mode: a new master announced by the sentinels, for the next
    /// connection to use without asking.
    announced: Option<(String, u16)>,
    /// Sentinel mode: the subscription to `+switch-master`, from the first connection.
    watch: Option<SentinelWatch>,
}

impl State {
    fn cancel_timers(&mut self) {
        for t in [
            self.flush_timer.take(),
            self.reply_timer.take(),
            self.backoff_timer.take(),
        ]
        .into_iter()
        .flatten()
        {
            let _ = t.cancel();
        }
    }
}

pub(crate) struct Inner {
    reactor: ReactorHandle,
    config: RedisConfig,
    connect: ConnectFn,
    st: RefCell<State>,
    on_connect: RefCell<Vec<Rc<dyn Fn()>>>,
    on_down: RefCell<Vec<Rc<dyn Fn()>>>,
    received: Cell<u64>,
    me: Weak<Inner>,
}

/// A Redis client. Cheap to clone; clones share the connection.
#[derive(Clone)]
pub struct RedisClient {
    inner: Rc<Inner>,
}

impl fmt::Debug for RedisClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.inner.st.borrow();
        f.debug_struct("RedisClient")
            .field("server", &self.inner.config.display())
            .field("phase", &st.phase)
            .field("queued", &st.queue.len())
            .field("inflight", &st.inflight.len())
            .finish()
    }
}

impl RedisClient {
    /// A client for `config`, connecting through its own [`Connector`].
    ///
    /// # Errors
    ///
    /// The TLS configuration could not be built.
    pub fn new(reactor: &ReactorHandle, config: RedisConfig) -> Result<Self, Failure> {
        let mut cc = ConnectorConfig::new()?;
        cc.connect_timeout = config.connect_timeout;
        let connector = Connector::new(reactor, cc);
        Ok(Self::with_connector(reactor, config, &connector))
    }

    /// A client for `config` connecting through `connector` (shared with the HTTP
    /// client: one DNS cache, one TLS configuration).
    pub fn with_connector(
        reactor: &ReactorHandle,
        config: RedisConfig,
        connector: &Connector,
    ) -> Self {
        let c = connector.clone();
        Self::with_connect(reactor, config, Rc::new(move |e: &Endpoint| c.connect(e)))
    }

    /// A client whose connections come from `connect`.
    pub fn with_connect(reactor: &ReactorHandle, config: RedisConfig, connect: ConnectFn) -> Self {
        let seed = (reactor.clock().wall_seconds().to_bits() ^ 0x9E37_79B9_7F4A_7C15) | 1;
        let sentinels = config.sentinel.as_ref().map_or(0, |s| s.sentinels.len());
        Self {
            inner: Rc::new_cyclic(|me| Inner {
                reactor: reactor.clone(),
                config,
                connect,
                st: RefCell::new(State {
                    phase: Phase::Idle,
                    conn: None,
                    generation: 0,
                    queue: VecDeque::new(),
                    inflight: VecDeque::new(),
                    flush_timer: None,
                    reply_timer: None,
                    backoff_timer: None,
                    connecting: None,
                    attempts: 0,
                    rng: seed,
                    counters: RedisCounters::default(),
                    scripts: Vec::new(),
                    last_error: None,
                    abort_reason: None,
                    demoted: false,
                    sentinel_order: (0..sentinels).collect(),
                    master: None,
                    announced: None,
                    watch: None,
                }),
                on_connect: RefCell::new(Vec::new()),
                on_down: RefCell::new(Vec::new()),
                received: Cell::new(0),
                me: me.clone(),
            }),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &RedisConfig {
        &self.inner.config
    }

    /// Sends a command; retried on the next connection if this one is lost before the
    /// reply.
    pub fn command<A: AsRef<[u8]>>(&self, args: &[A]) -> Deferred<Value> {
        self.send(args, true)
    }

    /// Sends a command that is not retried: if the connection is lost before the
    /// reply, the Deferred fails with [`RedisConnectionError`].
    pub fn command_once<A: AsRef<[u8]>>(&self, args: &[A]) -> Deferred<Value> {
        self.send(args, false)
    }

    fn send<A: AsRef<[u8]>>(&self, args: &[A], retry: bool) -> Deferred<Value> {
        let mut bytes =
            Vec::with_capacity(16 + args.iter().map(|a| a.as_ref().len() + 16).sum::<usize>());
        encode_command(args, &mut bytes);
        let d = Deferred::new();
        self.inner.submit(Pending {
            bytes,
            commands: 1,
            replies: 1,
            got: 0,
            sink: Sink::One(d.clone()),
            retry,
        });
        d
    }

    /// Runs `commands` in a `MULTI` … `EXEC` transaction; the Deferred fires with the
    /// `EXEC` reply (an array of the commands' replies, each of which may be an
    /// error value; `Nil` if a `WATCH` aborted it).
    pub fn transaction<A: AsRef<[u8]>>(&self, commands: &[Vec<A>]) -> Deferred<Value> {
        let mut bytes = Vec::new();
        encode_command(&["MULTI"], &mut bytes);
        for c in commands {
            encode_command(c, &mut bytes);
        }
        encode_command(&["EXEC"], &mut bytes);
        let d = Deferred::new();
        self.inner.submit(Pending {
            bytes,
            commands: commands.len() as u64 + 2,
            replies: commands.len() + 2,
            got: 0,
            sink: Sink::Last(d.clone()),
            retry: true,
        });
        d
    }

    /// Loads `script` on every connection from now on (`SCRIPT LOAD` in the
    /// handshake), so `EVALSHA` finds it.
    pub fn load_script(&self, script: &Script) {
        let send_now = {
            let mut st = self.inner.st.borrow_mut();
            if st.scripts.iter().any(|s| s.sha() == script.sha()) {
                return;
            }
            st.scripts.push(script.clone());
            matches!(st.phase, Phase::Ready | Phase::Handshaking)
        };
        if send_now {
            let _ = self
                .command(&["SCRIPT", "LOAD", script.source()])
                .add_errback(|f| {
                    log::error!("Redis SCRIPT LOAD failed: {f}");
                    Ok(Value::Nil)
                });
        }
    }

    /// Runs `script` with `keys` and `args` (`EVALSHA`, then `EVAL` on `NOSCRIPT`).
    pub fn eval<K: AsRef<[u8]>, A: AsRef<[u8]>>(
        &self,
        script: &Script,
        keys: &[K],
        args: &[A],
    ) -> Deferred<Value> {
        let mut argv: Vec<&[u8]> = Vec::with_capacity(3 + keys.len() + args.len());
        let numkeys = keys.len().to_string();
        argv.push(b"EVALSHA");
        argv.push(script.sha().as_bytes());
        argv.push(numkeys.as_bytes());
        argv.extend(keys.iter().map(AsRef::as_ref));
        argv.extend(args.iter().map(AsRef::as_ref));
        let first = self.command(&argv);
        let me = self.clone();
        let script = script.clone();
        argv[0] = b"EVAL";
        argv[1] = script.source().as_bytes();
        let fallback: Vec<Vec<u8>> = argv.iter().map(|a| a.to_vec()).collect();
        first.then(move |r| match r {
            Err(f)
                if f.downcast_ref::<ReplyError>()
                    .is_some_and(|e| e.kind() == "NOSCRIPT") =>
            {
                log::debug!("Redis NOSCRIPT for {}: sending EVAL", script.sha());
                me.command(&fallback)
            }
            Err(f) => crate::defer::fail(f),
            Ok(v) => crate::defer::succeed(v),
        })
    }

    /// Calls `f` whenever a connection is lost or an attempt to connect fails (the
    /// client is then waiting to reconnect). The cluster client uses it to send a
    /// dead master's commands elsewhere.
    pub fn on_down(&self, f: impl Fn() + 'static) {
        self.inner.on_down.borrow_mut().push(Rc::new(f));
    }

    /// Calls `f` after every successful connection handshake (the first one
    /// included): where a user re-checks the server's state after an outage.
    pub fn on_connect(&self, f: impl Fn() + 'static) {
        self.inner.on_connect.borrow_mut().push(Rc::new(f));
    }

    /// Whether a connection is up and past its handshake.
    pub fn is_connected(&self) -> bool {
        self.inner.st.borrow().phase == Phase::Ready
    }

    /// Commands queued or awaiting replies.
    pub fn pending(&self) -> usize {
        let st = self.inner.st.borrow();
        st.queue.len() + st.inflight.len()
    }

    /// The counters.
    pub fn counters(&self) -> RedisCounters {
        let mut c = self.inner.st.borrow().counters;
        c.bytes_received = self.inner.received.get();
        c
    }

    /// The last connection or handshake error, for a status line.
    pub fn last_error(&self) -> Option<String> {
        self.inner.st.borrow().last_error.clone()
    }

    /// Closes the client now: waiting commands fail with [`ClientClosed`], the
    /// connection is dropped. Wait for your last command's Deferred first to close
    /// cleanly.
    pub fn close(&self) {
        self.inner.close();
    }
}

/// Fires `sink` with `v`, outside any borrow.
fn deliver(sink: Sink, v: Result<Value, Failure>) {
    let d = match sink {
        Sink::One(d) | Sink::Last(d) => d,
        Sink::Handshake(_) => return,
    };
    let r = match v {
        Ok(Value::Error(message)) => Err(Failure::new(ReplyError { message })),
        other => other,
    };
    if d.resolve(r).is_err() {
        log::debug!("a Redis reply arrived for a cancelled command");
    }
}

impl Replies for Inner {
    fn note_received(&self, n: usize) {
        Inner::note_received(self, n);
    }

    fn on_reply(&self, generation: u64, value: Value) {
        Inner::on_reply(self, generation, value);
    }

    fn on_lost(&self, generation: u64, why: String) {
        Inner::on_lost(self, generation, why);
    }

    fn display(&self) -> String {
        self.config.display()
    }
}

impl Inner {
    fn submit(&self, p: Pending) {
        let (fail, connect, flush) = {
            let mut st = self.st.borrow_mut();
            match st.phase {
                Phase::Closed => (Some((p, Failure::new(ClientClosed))), false, false),
                phase if phase != Phase::Ready && st.queue.len() >= self.config.max_buffered => {
                    let f = Failure::new(BufferFull {
                        limit: self.config.max_buffered,
                    });
                    (Some((p, f)), false, false)
                }
                phase => {
                    st.queue.push_back(p);
                    (None, phase == Phase::Idle, phase == Phase::Ready)
                }
            }
        };
        if let Some((p, f)) = fail {
            deliver(p.sink, Err(f));
        }
        if connect {
            self.start_connect();
        }
        if flush {
            self.schedule_flush();
        }
    }

    fn schedule_flush(&self) {
        let mut st = self.st.borrow_mut();
        if st.flush_timer.is_some() {
            return;
        }
        let me = self.me.clone();
        st.flush_timer = Some(self.reactor.call_later(0.0, move || {
            if let Some(i) = me.upgrade() {
                i.st.borrow_mut().flush_timer = None;
                i.flush();
            }
        }));
    }

    /// Writes every queued command in one write.
    fn flush(&self) {
        let (transport, bytes) = {
            let mut st = self.st.borrow_mut();
            if st.phase != Phase::Ready || st.queue.is_empty() {
                return;
            }
            let Some(t) = st.conn.as_ref().and_then(|c| c.transport()) else {
                return;
            };
            let total: usize = st.queue.iter().map(|p| p.bytes.len()).sum();
            let mut bytes = Vec::with_capacity(total);
            let mut commands = 0;
            while let Some(p) = st.queue.pop_front() {
                bytes.extend_from_slice(&p.bytes);
                commands += p.commands;
                st.inflight.push_back(p);
            }
            st.counters.commands += commands;
            st.counters.round_trips += 1;
            st.counters.bytes_sent += bytes.len() as u64;
            (t, bytes)
        };
        self.arm_reply_timer(false);
        transport.write(&bytes);
    }

    /// Arms the reply timer if replies are awaited (`reset`: restart it after a
    /// reply); cancels it when none are.
    fn arm_reply_timer(&self, reset: bool) {
        let mut st = self.st.borrow_mut();
        if st.inflight.is_empty() {
            if let Some(t) = st.reply_timer.take() {
                let _ = t.cancel();
            }
            return;
        }
        let timeout = self.config.command_timeout;
        if timeout <= 0.0 {
            return;
        }
        if let Some(t) = &st.reply_timer {
            if reset && t.active() {
                let _ = t.reset(timeout);
            }
            return;
        }
        let me = self.me.clone();
        let generation = st.generation;
        st.reply_timer = Some(self.reactor.call_later(timeout, move || {
            let Some(i) = me.upgrade() else { return };
            let t = {
                let mut st = i.st.borrow_mut();
                st.reply_timer = None;
                if st.generation != generation {
                    return;
                }
                st.abort_reason = Some(format!("no reply within {timeout} s"));
                st.conn.as_ref().and_then(|c| c.transport())
            };
            log::warn!(
                "Redis {}: no reply within {timeout} s; reconnecting",
                i.config.display()
            );
            if let Some(t) = t {
                t.abort_connection();
            }
        }));
    }

    fn start_connect(&self) {
        let (endpoint, generation) = {
            let mut st = self.st.borrow_mut();
            if !matches!(st.phase, Phase::Idle | Phase::Backoff) {
                return;
            }
            st.phase = Phase::Connecting;
            st.generation += 1;
            st.demoted = false;
            (self.config.endpoint(), st.generation)
        };
        let d = if self.config.sentinel.is_some() {
            self.connect_through_sentinels()
        } else {
            let d = (self.connect)(&endpoint);
            if self.config.connect_timeout > 0.0 {
                d.add_timeout(self.config.connect_timeout, self.reactor.clock());
            }
            d
        };
        self.st.borrow_mut().connecting = Some(d.clone());
        let me = self.me.clone();
        let _ = d.then(move |r: Result<Rc<dyn Transport>, Failure>| {
            if let Some(i) = me.upgrade() {
                i.on_connected(generation, r);
            }
            Ok::<(), Failure>(())
        });
    }

    fn on_connected(&self, generation: u64, r: Result<Rc<dyn Transport>, Failure>) {
        let stale = {
            let mut st = self.st.borrow_mut();
            st.connecting = None;
            st.generation != generation || st.phase != Phase::Connecting
        };
        let transport = match r {
            Ok(t) if stale => {
                t.abort_connection();
                return;
            }
            Ok(t) if self.config.sentinel.is_some() && self.announced_elsewhere() => {
                // The sentinels announced another master while this connection was
                // being made.
                t.abort_connection();
                self.connection_failed("the sentinels announced a new master".into());
                return;
            }
            Ok(t) => t,
            Err(_) if stale => return,
            Err(f) => {
                let why = if f.check::<TimeoutError>() {
                    format!("connect timed out after {} s", self.config.connect_timeout)
                } else {
                    f.error().to_string()
                };
                self.st.borrow_mut().counters.connect_failures += 1;
                self.connection_failed(why);
                return;
            }
        };
        let conn = Connection::new(self.me.clone() as Weak<dyn Replies>, generation);
        transport.attach(conn.clone());
        // The handshake: AUTH, SELECT, the scripts.
        let mut steps: Vec<Pending> = Vec::new();
        let mut push = |what: &'static str, args: &[&[u8]]| {
            let mut bytes = Vec::new();
            encode_command(args, &mut bytes);
            steps.push(Pending {
                bytes,
                commands: 1,
                replies: 1,
                got: 0,
                sink: Sink::Handshake(what),
                retry: false,
            });
        };
        let c = &self.config;
        match (&c.username, &c.password) {
            (Some(u), Some(p)) => push("AUTH", &[b"AUTH", u.as_bytes(), p.as_bytes()]),
            (None, Some(p)) => push("AUTH", &[b"AUTH", p.as_bytes()]),
            _ => {}
        }
        let db = c.db.to_string();
        if c.db != 0 {
            push("SELECT", &[b"SELECT", db.as_bytes()]);
        }
        let scripts = self.st.borrow().scripts.clone();
        for s in &scripts {
            push("SCRIPT LOAD", &[b"SCRIPT", b"LOAD", s.source().as_bytes()]);
        }
        let bytes: Vec<u8> = steps.iter().flat_map(|p| p.bytes.iter().copied()).collect();
        let ready = steps.is_empty();
        {
            let mut st = self.st.borrow_mut();
            st.conn = Some(conn);
            st.counters.connects += 1;
            if ready {
                st.phase = Phase::Ready;
            } else {
                st.phase = Phase::Handshaking;
                st.counters.commands += steps.len() as u64;
                st.counters.round_trips += 1;
                st.counters.bytes_sent += bytes.len() as u64;
                st.inflight.extend(steps);
            }
        }
        if ready {
            self.became_ready();
        } else {
            self.arm_reply_timer(false);
            transport.write(&bytes);
        }
    }

    fn became_ready(&self) {
        let was_down = {
            let mut st = self.st.borrow_mut();
            let was = st.attempts > 0 || st.counters.connects > 1;
            st.attempts = 0;
            st.last_error = None;
            was
        };
        if was_down {
            log::info!("Redis {}: connected", self.config.display());
        }
        self.flush();
        let hooks: Vec<Rc<dyn Fn()>> = self.on_connect.borrow().clone();
        for h in hooks {
            h();
        }
    }

    fn note_received(&self, n: usize) {
        self.received.set(self.received.get() + n as u64);
    }

    pub(crate) fn on_reply(&self, generation: u64, v: Value) {
        enum Then {
            Nothing,
            Deliver(Sink, Value),
            HandshakeDone,
            HandshakeFailed(&'static str, String),
        }
        let then = {
            let mut st = self.st.borrow_mut();
            if st.generation != generation || st.demoted {
                return;
            }
            if let Value::Error(e) = &v
                && self.config.sentinel.is_some()
                && sentinel::is_readonly(e)
            {
                // A failover made this server a replica: drop the connection; what was
                // in flight (this command included) goes again to the master the
                // sentinels name now.
                st.demoted = true;
                st.abort_reason = Some(format!(
                    "the server refuses writes ({})",
                    e.split(' ').next().unwrap_or_default()
                ));
                let t = st.conn.as_ref().and_then(|c| c.transport());
                drop(st);
                log::warn!(
                    "Redis {}: the server refuses writes (a failover?); asking the \
                     sentinels again",
                    self.display()
                );
                if let Some(t) = t {
                    t.abort_connection();
                }
                return;
            }
            st.counters.replies += 1;
            let Some(front) = st.inflight.front_mut() else {
                drop(st);
                log::debug!("an unexpected Redis reply (a push message?): {v:?}");
                return;
            };
            front.got += 1;
            if let Sink::Handshake(what) = front.sink {
                st.inflight.pop_front();
                if let Value::Error(e) = v {
                    Then::HandshakeFailed(what, e)
                } else if st
                    .inflight
                    .iter()
                    .any(|p| matches!(p.sink, Sink::Handshake(_)))
                {
                    Then::Nothing
                } else {
                    st.phase = Phase::Ready;
                    Then::HandshakeDone
                }
            } else if front.got < front.replies {
                Then::Nothing
            } else {
                match st.inflight.pop_front() {
                    Some(p) => Then::Deliver(p.sink, v),
                    None => Then::Nothing,
                }
            }
        };
        self.arm_reply_timer(true);
        match then {
            Then::Nothing => {}
            Then::Deliver(sink, v) => deliver(sink, Ok(v)),
            Then::HandshakeDone => self.became_ready(),
            Then::HandshakeFailed(what, e) => self.handshake_failed(what, e),
        }
    }

    /// `AUTH` or `SELECT` (or a script) was refused: waiting commands fail with the
    /// server's answer; the client reconnects after the backoff.
    fn handshake_failed(&self, what: &str, message: String) {
        log::error!("Redis {}: {what} failed: {message}", self.config.display());
        let (t, failed) = {
            let mut st = self.st.borrow_mut();
            st.last_error = Some(format!("{what} failed: {message}"));
            st.generation += 1;
            if let Some(t) = st.reply_timer.take() {
                let _ = t.cancel();
            }
            let t = st.conn.take().and_then(|c| c.transport());
            let mut failed: Vec<Pending> = st.inflight.drain(..).collect();
            failed.extend(st.queue.drain(..));
            (t, failed)
        };
        if let Some(t) = t {
            t.abort_connection();
        }
        for p in failed {
            deliver(
                p.sink,
                Err(Failure::new(ReplyError {
                    message: message.clone(),
                })),
            );
        }
        self.connection_failed(format!("{what} failed: {message}"));
    }

    pub(crate) fn on_lost(&self, generation: u64, why: String) {
        let (failed, why) = {
            let mut st = self.st.borrow_mut();
            if st.generation != generation || st.phase == Phase::Closed {
                return;
            }
            let why = st.abort_reason.take().unwrap_or(why);
            st.conn = None;
            st.counters.disconnects += 1;
            if let Some(t) = st.reply_timer.take() {
                let _ = t.cancel();
            }
            // Written but unanswered: retry in order, ahead of the queue.
            let mut failed = Vec::new();
            let mut retry = Vec::new();
            for mut p in st.inflight.drain(..) {
                match p.sink {
                    Sink::Handshake(_) => {}
                    _ if p.retry => {
                        p.got = 0;
                        retry.push(p);
                    }
                    _ => failed.push(p),
                }
            }
            st.counters.retried += retry.len() as u64;
            for p in retry.into_iter().rev() {
                st.queue.push_front(p);
            }
            (failed, why)
        };
        log::warn!(
            "Redis {}: connection lost ({why}); reconnecting",
            self.config.display()
        );
        for p in failed {
            deliver(
                p.sink,
                Err(Failure::new(RedisConnectionError {
                    reason: why.clone(),
                })),
            );
        }
        self.connection_failed(why);
    }

    /// Schedules the next connection attempt after the backoff.
    fn connection_failed(&self, why: String) {
        let delay = {
            let mut st = self.st.borrow_mut();
            if st.phase == Phase::Closed {
                return;
            }
            st.phase = Phase::Backoff;
            st.last_error = Some(why.clone());
            let exp = self.config.backoff_initial * 2f64.powi(st.attempts.min(30) as i32);
            let cap = exp.min(self.config.backoff_max);
            st.attempts += 1;
            let mut x = st.rng;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            st.rng = x;
            let unit = (x >> 11) as f64 / (1u64 << 53) as f64;
            cap / 2.0 + unit * cap / 2.0
        };
        if self.st.borrow().attempts > 1 {
            log::warn!(
                "Redis {}: cannot connect ({why}); retrying in {delay:.2} s",
                self.config.display()
            );
        }
        let me = self.me.clone();
        let timer = self.reactor.call_later(delay, move || {
            if let Some(i) = me.upgrade() {
                i.st.borrow_mut().backoff_timer = None;
                i.start_connect();
            }
        });
        self.st.borrow_mut().backoff_timer = Some(timer);
        let hooks: Vec<Rc<dyn Fn()>> = self.on_down.borrow().clone();
        for h in hooks {
            h();
        }
    }

    fn close(&self) {
        let (t, connecting, failed) = {
            let mut st = self.st.borrow_mut();
            if st.phase == Phase::Closed {
                return;
            }
            st.phase = Phase::Closed;
            st.generation += 1;
            st.cancel_timers();
            let t = st.conn.take().and_then(|c| c.transport());
            let mut failed: Vec<Pending> = st.inflight.drain(..).collect();
            failed.extend(st.queue.drain(..));
            (t, st.connecting.take(), failed)
        };
        let watch = self.st.borrow_mut().watch.take();
        if let Some(w) = watch {
            w.close();
        }
        if let Some(d) = connecting {
            d.cancel();
        }
        if let Some(t) = t {
            t.lose_connection();
        }
        for p in failed {
            deliver(p.sink, Err(Failure::new(ClientClosed)));
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let st = self.st.get_mut();
        st.cancel_timers();
        if let Some(t) = st.conn.take().and_then(|c| c.transport()) {
            t.lose_connection();
        }
    }
}
