//! Talking to the sentinels: asking them in turn for the master's address before a
//! connection ([`ask_master`]) and keeping one of them subscribed to `+switch-master`
//! ([`SentinelWatch`]), so a failover moves the client as soon as a sentinel announces
//! it — also when the old master is frozen or cut off and still holds the client's
//! connection open, which the connection alone would notice only after the command
//! timeout (or, for a master cut off from the sentinels but not from the client,
//! never: its writes would be dropped when it rejoins as a replica).
//!
//! Both speak to a sentinel over a [`Link`]: one connection, `AUTH` with the sentinels'
//! password first if there is one, then the commands, every reply handed on in order.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use crate::defer::{Deferred, Failure, TimeoutError};
use crate::net::{Endpoint, Transport};
use crate::proto::resp::{Value, encode_command};
use crate::reactor::{DelayedCall, ReactorHandle};

use super::config::RedisConfig;
use super::connection::{Connection, Replies};
use super::sentinel::{master_address, sentinel_client_config, switch_master};
use super::types::RedisConnectionError;

/// Opens a transport to an endpoint (the client's connector).
pub(super) type Connect = Rc<dyn Fn(&Endpoint) -> Deferred<Rc<dyn Transport>>>;

/// Seconds between two `PING`s on the watching connection; a `PING` unanswered at the
/// next one drops the connection and the watch moves to the next sentinel.
const PING_EVERY: f64 = 5.0;

/// Seconds before the watch connects again after losing a sentinel; doubled after each
/// round of the sentinels that all failed, up to [`RETRY_MAX`].
const RETRY_AFTER: f64 = 1.0;

/// The longest wait between two attempts of the watch.
const RETRY_MAX: f64 = 30.0;

/// One connection to one sentinel.
struct Link {
    display: String,
    conn: RefCell<Option<Rc<Connection>>>,
    connecting: RefCell<Option<Deferred<Rc<dyn Transport>>>>,
    /// An `AUTH` reply is still to come (and is not handed on).
    auth_pending: Cell<bool>,
    closed: Cell<bool>,
    on_value: Box<dyn Fn(Value)>,
    on_lost: Box<dyn Fn(String)>,
}

impl Link {
    /// Connects to the sentinel at `host:port` and writes `commands` (each already
    /// encoded) after `AUTH`; every reply goes to `on_value`, the end of the
    /// connection (or the failure to make it) to `on_lost`, once.
    fn open(
        reactor: &ReactorHandle,
        master: &RedisConfig,
        connect: &Connect,
        (host, port): (&str, u16),
        commands: Vec<u8>,
        on_value: impl Fn(Value) + 'static,
        on_lost: impl Fn(String) + 'static,
    ) -> Rc<Self> {
        let config = sentinel_client_config(master, host, port);
        let mut bytes = Vec::new();
        if let Some(p) = &config.password {
            encode_command(&[b"AUTH", p.as_bytes()], &mut bytes);
        }
        bytes.extend_from_slice(&commands);
        let link = Rc::new(Self {
            display: format!("{host}:{port}"),
            conn: RefCell::new(None),
            connecting: RefCell::new(None),
            auth_pending: Cell::new(config.password.is_some()),
            closed: Cell::new(false),
            on_value: Box::new(on_value),
            on_lost: Box::new(on_lost),
        });
        let d = connect(&config.endpoint());
        d.add_timeout(config.connect_timeout, reactor.clock());
        *link.connecting.borrow_mut() = Some(d.clone());
        let me = Rc::downgrade(&link);
        let _ = d.then(move |r: Result<Rc<dyn Transport>, Failure>| {
            let Some(link) = me.upgrade() else {
                if let Ok(t) = r {
                    t.abort_connection();
                }
                return Ok::<(), Failure>(());
            };
            link.connecting.borrow_mut().take();
            match r {
                Ok(t) if link.closed.get() => t.abort_connection(),
                Ok(t) => {
                    let conn = Connection::new(Rc::downgrade(&link) as Weak<dyn Replies>, 0);
                    t.attach(conn.clone());
                    *link.conn.borrow_mut() = Some(conn);
                    t.write(&bytes);
                }
                Err(_) if link.closed.get() => {}
                Err(f) => {
                    let why = if f.check::<TimeoutError>() {
                        format!("connect timed out after {} s", config.connect_timeout)
                    } else {
                        f.error().to_string()
                    };
                    link.lost(why);
                }
            }
            Ok(())
        });
        link
    }

    /// Writes more (encoded) commands, if connected; whether it was.
    fn write(&self, bytes: &[u8]) -> bool {
        let t = self.conn.borrow().as_ref().and_then(|c| c.transport());
        match t {
            Some(t) => {
                t.write(bytes);
                true
            }
            None => false,
        }
    }

    /// Drops the connection; `on_lost` is not called.
    fn close(&self) {
        if self.closed.replace(true) {
            return;
        }
        let connecting = self.connecting.borrow_mut().take();
        if let Some(d) = connecting {
            d.cancel();
        }
        let t = self.conn.borrow_mut().take().and_then(|c| c.transport());
        if let Some(t) = t {
            t.lose_connection();
        }
    }

    /// Drops the connection and reports why (`on_lost`).
    fn abort(&self, why: String) {
        let t = self.conn.borrow().as_ref().and_then(|c| c.transport());
        if let Some(t) = t {
            t.abort_connection();
        }
        self.lost(why);
    }

    fn lost(&self, why: String) {
        if self.closed.replace(true) {
            return;
        }
        self.conn.borrow_mut().take();
        (self.on_lost)(why);
    }
}

impl Replies for Link {
    fn note_received(&self, _n: usize) {}

    fn on_reply(&self, _generation: u64, value: Value) {
        if self.closed.get() {
            return;
        }
        if self.auth_pending.replace(false) {
            if let Value::Error(e) = value {
                self.abort(format!("AUTH failed: {e}"));
            }
            return;
        }
        (self.on_value)(value);
    }

    fn on_lost(&self, _generation: u64, why: String) {
        self.lost(why);
    }

    fn display(&self) -> String {
        format!("sentinel {}", self.display)
    }
}

/// `SENTINEL get-master-addr-by-name <master>`, encoded.
fn ask_command(master: &str) -> Vec<u8> {
    let mut bytes = Vec::new();
    encode_command(
        &[
            b"SENTINEL".as_slice(),
            b"get-master-addr-by-name",
            master.as_bytes(),
        ],
        &mut bytes,
    );
    bytes
}

/// Asks the sentinels of `config` in the order `order` (indexes into its list) for the
/// master's address; fires with the index of the sentinel that answered and the
/// address, or fails with every sentinel's reason when none did.
pub(super) fn ask_master(
    reactor: &ReactorHandle,
    config: &RedisConfig,
    connect: &Connect,
    order: Vec<usize>,
) -> Deferred<(usize, String, u16)> {
    let out = Deferred::new();
    ask_from(
        reactor.clone(),
        Rc::new(config.clone()),
        connect.clone(),
        Rc::new(order),
        0,
        Vec::new(),
        out.clone(),
    );
    out
}

fn ask_from(
    reactor: ReactorHandle,
    config: Rc<RedisConfig>,
    connect: Connect,
    order: Rc<Vec<usize>>,
    tried: usize,
    mut errors: Vec<String>,
    out: Deferred<(usize, String, u16)>,
) {
    if out.has_result() {
        // Cancelled: the client closed.
        return;
    }
    let Some(s) = &config.sentinel else {
        let _ = out.errback(Failure::new(RedisConnectionError {
            reason: "no sentinels are configured".into(),
        }));
        return;
    };
    let idx = order.get(tried).copied();
    let Some((host, port)) = idx.and_then(|i| s.sentinels.get(i)).cloned() else {
        let _ = out.errback(Failure::new(RedisConnectionError {
            reason: format!(
                "no sentinel gave the address of master {:?}: {}",
                s.master,
                errors.join("; ")
            ),
        }));
        return;
    };
    // One answer (or one failure) per sentinel: whichever comes first.
    let answer: Deferred<Result<(String, u16), String>> = Deferred::new();
    let a1 = answer.clone();
    let a2 = answer.clone();
    let link = Link::open(
        &reactor,
        &config,
        &connect,
        (&host, port),
        ask_command(&s.master),
        move |v| {
            let _ = a1.callback(master_address(&v));
        },
        move |why| {
            let _ = a2.callback(Err(why));
        },
    );
    let sc = sentinel_client_config(&config, &host, port);
    let timeout = sc.connect_timeout + sc.command_timeout;
    let a3 = answer.clone();
    let timer = reactor.call_later(timeout, move || {
        let _ = a3.callback(Err(format!("no answer within {timeout} s")));
    });
    let _ = answer.then(move |r: Result<Result<(String, u16), String>, Failure>| {
        let _ = timer.cancel();
        link.close();
        match r {
            Ok(Ok((mhost, mport))) => {
                log::debug!("Redis sentinel {host}:{port}: the master is {mhost}:{mport}");
                let _ = out.callback((idx.unwrap_or_default(), mhost, mport));
            }
            other => {
                let why = match other {
                    Ok(Err(why)) => why,
                    Err(f) => f.to_string(),
                    Ok(Ok(_)) => String::new(),
                };
                errors.push(format!("{host}:{port}: {why}"));
                ask_from(reactor, config, connect, order, tried + 1, errors, out);
            }
        }
        Ok::<(), Failure>(())
    });
}

/// Keeps one connection to a sentinel subscribed to `+switch-master` and calls
/// `on_switch` with the master's address: once per (re)connection from `SENTINEL
/// get-master-addr-by-name` (what was announced while it was away) and at each
/// announcement of the master's failover. A lost or silent sentinel (a `PING`
/// unanswered for [`PING_EVERY`] seconds) is replaced by the next one after
/// [`RETRY_AFTER`] seconds, doubled after each round of failures up to [`RETRY_MAX`]
/// (one warning per outage). Closed with [`SentinelWatch::close`] or when dropped.
pub(super) struct SentinelWatch {
    inner: Rc<WatchInner>,
}

struct WatchInner {
    reactor: ReactorHandle,
    config: RedisConfig,
    connect: Connect,
    on_switch: Box<dyn Fn(String, u16)>,
    st: RefCell<WatchState>,
    me: Weak<WatchInner>,
}

#[derive(Default)]
struct WatchState {
    link: Option<Rc<Link>>,
    /// Counts links, so a late event from an old one is ignored.
    generation: u64,
    /// The next sentinel to connect to (an index into the list, taken modulo its
    /// length).
    next: usize,
    /// Links lost in a row (a warning once every sentinel was tried; the wait doubles
    /// with each round).
    failures: usize,
    /// The address reply of this link has come.
    answered: bool,
    awaiting_pong: bool,
    timer: Option<DelayedCall>,
    closed: bool,
}

impl SentinelWatch {
    /// Starts watching the sentinels of `config` (which must have some), beginning
    /// with the `first`th.
    pub(super) fn start(
        reactor: &ReactorHandle,
        config: &RedisConfig,
        connect: &Connect,
        first: usize,
        on_switch: impl Fn(String, u16) + 'static,
    ) -> Self {
        let inner = Rc::new_cyclic(|me| WatchInner {
            reactor: reactor.clone(),
            config: config.clone(),
            connect: connect.clone(),
            on_switch: Box::new(on_switch),
            st: RefCell::new(WatchState {
                next: first,
                ..WatchState::default()
            }),
            me: me.clone(),
        });
        inner.open();
        Self { inner }
    }

    /// Stops watching: the connection is dropped, the timers cancelled.
    pub(super) fn close(&self) {
        self.inner.close();
    }
}

impl Drop for SentinelWatch {
    fn drop(&mut self) {
        self.inner.close();
    }
}

impl WatchInner {
    fn open(&self) {
        let Some(s) = &self.config.sentinel else {
            return;
        };
        if s.sentinels.is_empty() {
            return;
        }
        let (generation, (host, port)) = {
            let mut st = self.st.borrow_mut();
            if st.closed {
                return;
            }
            st.generation += 1;
            st.answered = false;
            st.awaiting_pong = false;
            let at = st.next % s.sentinels.len();
            st.next = at + 1;
            (st.generation, s.sentinels[at].clone())
        };
        let mut commands = ask_command(&s.master);
        encode_command(&["SUBSCRIBE", "+switch-master"], &mut commands);
        let (m1, m2) = (self.me.clone(), self.me.clone());
        let link = Link::open(
            &self.reactor,
            &self.config,
            &self.connect,
            (&host, port),
            commands,
            move |v| {
                if let Some(w) = m1.upgrade() {
                    w.on_value(generation, v);
                }
            },
            move |why| {
                if let Some(w) = m2.upgrade() {
                    w.on_lost(generation, why);
                }
            },
        );
        let mut st = self.st.borrow_mut();
        // (A connection that failed at once has already been reported lost.)
        if st.generation == generation && !st.closed && !link.closed.get() {
            st.link = Some(link);
            drop(st);
            self.arm_ping(generation);
        } else {
            drop(st);
            link.close();
        }
    }

    fn arm_ping(&self, generation: u64) {
        let me = self.me.clone();
        let timer = self.reactor.call_later(PING_EVERY, move || {
            if let Some(w) = me.upgrade() {
                w.ping(generation);
            }
        });
        let old = {
            let mut st = self.st.borrow_mut();
            if st.closed || st.generation != generation {
                drop(st);
                let _ = timer.cancel();
                return;
            }
            st.timer.replace(timer)
        };
        if let Some(t) = old {
            let _ = t.cancel();
        }
    }

    /// The ping timer: drop a sentinel that did not answer the last `PING`, else
    /// send another.
    fn ping(&self, generation: u64) {
        let (link, silent) = {
            let mut st = self.st.borrow_mut();
            st.timer = None;
            if st.closed || st.generation != generation {
                return;
            }
            let silent = st.awaiting_pong;
            st.awaiting_pong = true;
            (st.link.clone(), silent)
        };
        let Some(link) = link else { return };
        if silent {
            link.abort(format!("no answer to PING within {PING_EVERY} s"));
            return;
        }
        let mut bytes = Vec::new();
        encode_command(&["PING"], &mut bytes);
        if !link.write(&bytes) {
            // Still connecting (the connect timeout decides): nothing awaited yet.
            self.st.borrow_mut().awaiting_pong = false;
        }
        self.arm_ping(generation);
    }

    fn on_value(&self, generation: u64, v: Value) {
        let Some(s) = &self.config.sentinel else {
            return;
        };
        let switch = {
            let mut st = self.st.borrow_mut();
            if st.closed || st.generation != generation {
                return;
            }
            if !st.answered {
                st.answered = true;
                match master_address(&v) {
                    Ok(a) => Some(a),
                    Err(why) => {
                        log::debug!("Redis sentinel watch: master {:?}: {why}", s.master);
                        None
                    }
                }
            } else {
                let parts = v.as_array().unwrap_or_default();
                let kind = parts.first().and_then(Value::as_bytes).unwrap_or_default();
                match kind {
                    b"message" => parts
                        .get(2)
                        .and_then(Value::as_bytes)
                        .and_then(|p| switch_master(p, &s.master)),
                    b"subscribe" => {
                        st.failures = 0;
                        None
                    }
                    b"pong" => {
                        st.awaiting_pong = false;
                        None
                    }
                    _ => {
                        let link = st.link.clone();
                        drop(st);
                        if let Some(link) = link {
                            link.abort(format!("an unexpected reply: {v:?}"));
                        }
                        return;
                    }
                }
            }
        };
        if let Some((host, port)) = switch {
            (self.on_switch)(host, port);
        }
    }

    fn on_lost(&self, generation: u64, why: String) {
        let every = self
            .config
            .sentinel
            .as_ref()
            .map_or(1, |s| s.sentinels.len())
            .max(1);
        let (warn, delay) = {
            let mut st = self.st.borrow_mut();
            if st.closed || st.generation != generation {
                return;
            }
            st.link = None;
            if let Some(t) = st.timer.take() {
                let _ = t.cancel();
            }
            st.failures += 1;
            let rounds = (st.failures / every).min(16) as i32;
            (
                st.failures == every,
                (RETRY_AFTER * 2f64.powi(rounds)).min(RETRY_MAX),
            )
        };
        if warn {
            log::warn!(
                "Redis sentinel watch: no sentinel of {} can be watched ({why}); \
                 failovers are followed on reconnection until one can",
                self.config.display()
            );
        } else {
            log::debug!("Redis sentinel watch: lost a sentinel ({why})");
        }
        let me = self.me.clone();
        let timer = self.reactor.call_later(delay, move || {
            if let Some(w) = me.upgrade() {
                w.st.borrow_mut().timer = None;
                w.open();
            }
        });
        let mut st = self.st.borrow_mut();
        if st.closed {
            drop(st);
            let _ = timer.cancel();
        } else {
            st.timer = Some(timer);
        }
    }

    fn close(&self) {
        let (link, timer) = {
            let mut st = self.st.borrow_mut();
            if st.closed {
                return;
            }
            st.closed = true;
            (st.link.take(), st.timer.take())
        };
        if let Some(t) = timer {
            let _ = t.cancel();
        }
        if let Some(link) = link {
            link.close();
        }
    }
}
