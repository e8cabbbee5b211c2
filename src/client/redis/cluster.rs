//! [`RedisCluster`]: a Redis Cluster client on the reactor. One [`RedisClient`] per
//! master (each pipelined, reconnecting, loading the registered scripts), commands
//! routed by the hash slot of their key through the slot table (`CLUSTER SLOTS` from
//! the seed or any known master), and the cluster's answers followed:
//!
//! * `MOVED slot host:port`: the slot lives there now — the table is updated at once,
//!   a full refresh is scheduled, and the command goes again to the new master;
//! * `ASK slot host:port`: a slot in migration — this one command goes there after
//!   `ASKING`, on the same connection; the table does not change;
//! * `TRYAGAIN`, `CLUSTERDOWN`, `LOADING`: an outage — sent again after a backoff
//!   (10 ms doubling to 1 s), with a refresh, for as long as it lasts (as the
//!   single-server client waits for a server that is down).
//!
//! A command redirected [`MAX_ATTEMPTS`] times fails (a redirection loop).
//!
//! Ordering holds per master (one connection each), not across masters: what must
//! happen in order has to live in one slot (a hash tag).
//!
//! A master that cannot be reached (its connection lost, or a connection attempt
//! failed) has its client closed: the commands it held fail inside this client with
//! `ClientClosed` and go again after a backoff to the master the refreshed table
//! names — the promoted replica once the cluster has failed over (at least once: a
//! command that ran on the old master may run again).

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::{Rc, Weak};

use crate::defer::{Deferred, Failure};
use crate::net::{Connector, ConnectorConfig};
use crate::proto::cluster::{NodeAddr, Redirect, SlotTable, key_slot, redirect};
use crate::reactor::ReactorHandle;
use crate::util::FxHashMap;

use super::{ClientClosed, RedisClient, RedisConfig, RedisCounters, ReplyError, Script, Value};

/// How many redirections one command follows before it fails.
pub const MAX_ATTEMPTS: u32 = 16;

/// What to send: a command, or a script with its keys and arguments.
#[derive(Clone)]
enum Op {
    Command(Vec<Vec<u8>>),
    Eval(Script, Vec<Vec<u8>>, Vec<Vec<u8>>),
}

struct State {
    table: Option<SlotTable>,
    nodes: FxHashMap<NodeAddr, RedisClient>,
    scripts: Vec<Script>,
    refreshing: bool,
    /// Commands waiting for the first slot table.
    waiting: Vec<(u16, Op, Deferred<Value>)>,
    /// Callers of `when_table` waiting for the first slot table.
    table_waiters: Vec<Deferred<()>>,
    redirects: u64,
    closed: bool,
    /// `on_connect` hooks, given to every master's client.
    hooks: Vec<Rc<dyn Fn()>>,
    /// Commands submitted and not yet answered, by submission number.
    outstanding: BTreeSet<u64>,
    next_op: u64,
    /// Barriers: each fires once every command submitted before it is answered.
    barriers: Vec<(u64, Deferred<()>)>,
    /// The counters of clients closed (masters that went away).
    retired: RedisCounters,
    /// When each unreachable address was last reported (once per 10 s each).
    warned: FxHashMap<NodeAddr, f64>,
    /// Which master the next refresh asks first (an index, modulo the masters).
    next_asked: u64,
}

struct Inner {
    reactor: ReactorHandle,
    base: RedisConfig,
    connector: Connector,
    seeds: Vec<NodeAddr>,
    st: RefCell<State>,
    me: Weak<Inner>,
}

/// A Redis Cluster client. Cheap to clone; clones share the connections.
#[derive(Clone)]
pub struct RedisCluster {
    inner: Rc<Inner>,
}

impl std::fmt::Debug for RedisCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisCluster")
            .field("seeds", &self.inner.seeds)
            .field("masters", &self.masters())
            .finish_non_exhaustive()
    }
}

impl RedisCluster {
    /// A client reaching the cluster through `config`'s node (and `more_seeds`, asked
    /// in turn when it does not answer); every master's connection uses `config`'s
    /// credentials, timeouts and TLS.
    ///
    /// # Errors
    ///
    /// The TLS configuration could not be built.
    pub fn new(
        reactor: &ReactorHandle,
        config: RedisConfig,
        more_seeds: &[NodeAddr],
    ) -> Result<Self, Failure> {
        let mut cc = ConnectorConfig::new()?;
        cc.connect_timeout = config.connect_timeout;
        let connector = Connector::new(reactor, cc);
        let mut seeds = vec![NodeAddr {
            host: config.host.clone(),
            port: config.port,
        }];
        seeds.extend(more_seeds.iter().cloned());
        Ok(Self {
            inner: Rc::new_cyclic(|me| Inner {
                reactor: reactor.clone(),
                base: config,
                connector,
                seeds,
                st: RefCell::new(State {
                    table: None,
                    nodes: FxHashMap::default(),
                    scripts: Vec::new(),
                    refreshing: false,
                    waiting: Vec::new(),
                    table_waiters: Vec::new(),
                    redirects: 0,
                    closed: false,
                    hooks: Vec::new(),
                    outstanding: BTreeSet::new(),
                    next_op: 0,
                    barriers: Vec::new(),
                    retired: RedisCounters::default(),
                    warned: FxHashMap::default(),
                    next_asked: first_asked(),
                }),
                me: me.clone(),
            }),
        })
    }

    /// Sends `args` to the master of `key`'s slot.
    pub fn command_for<A: AsRef<[u8]>>(&self, key: &[u8], args: &[A]) -> Deferred<Value> {
        let op = Op::Command(args.iter().map(|a| a.as_ref().to_vec()).collect());
        self.inner.submit(key_slot(key), op)
    }

    /// Sends `args` to the master of its first argument's slot (`GET key`, `HSET key
    /// ...`).
    pub fn command<A: AsRef<[u8]>>(&self, args: &[A]) -> Deferred<Value> {
        let key = args.get(1).map_or(&b""[..], AsRef::as_ref);
        self.command_for(key, args)
    }

    /// Runs `script` on the master of its first key's slot (every key must share the
    /// slot: a hash tag).
    pub fn eval<K: AsRef<[u8]>, A: AsRef<[u8]>>(
        &self,
        script: &Script,
        keys: &[K],
        args: &[A],
    ) -> Deferred<Value> {
        let slot = keys.first().map_or(0, |k| key_slot(k.as_ref()));
        let op = Op::Eval(
            script.clone(),
            keys.iter().map(|k| k.as_ref().to_vec()).collect(),
            args.iter().map(|a| a.as_ref().to_vec()).collect(),
        );
        self.inner.submit(slot, op)
    }

    /// Loads `script` on every master's connection, now and on later ones.
    pub fn load_script(&self, script: &Script) {
        let nodes: Vec<RedisClient> = {
            let mut st = self.inner.st.borrow_mut();
            if st.scripts.iter().any(|s| s.sha() == script.sha()) {
                return;
            }
            st.scripts.push(script.clone());
            st.nodes.values().cloned().collect()
        };
        for n in nodes {
            n.load_script(script);
        }
    }

    /// Fires once the client has a slot table (at once if it has one; asked for if it
    /// has none): then [`masters`](Self::masters) lists the cluster's masters, without
    /// a `CLUSTER SLOTS` of the caller's own.
    pub fn when_table(&self) -> Deferred<()> {
        let d = Deferred::new();
        {
            let mut st = self.inner.st.borrow_mut();
            if st.closed {
                drop(st);
                let _ = d.errback(Failure::msg("the cluster client was closed"));
                return d;
            }
            if st.table.is_none() {
                st.table_waiters.push(d.clone());
                drop(st);
                self.inner.refresh();
                return d;
            }
        }
        let _ = d.callback(());
        d
    }

    /// The masters of the current slot table.
    pub fn masters(&self) -> Vec<NodeAddr> {
        self.inner
            .st
            .borrow()
            .table
            .as_ref()
            .map(|t| t.masters.clone())
            .unwrap_or_default()
    }

    /// Calls `f` after every connection handshake to any master (the first ones
    /// included, and those to a replica promoted by a failover).
    pub fn on_connect(&self, f: impl Fn() + 'static) {
        let hook: Rc<dyn Fn()> = Rc::new(f);
        let nodes: Vec<RedisClient> = {
            let mut st = self.inner.st.borrow_mut();
            st.hooks.push(hook.clone());
            st.nodes.values().cloned().collect()
        };
        for n in nodes {
            let h = hook.clone();
            n.on_connect(move || h());
        }
    }

    /// A Deferred that fires once every command submitted before it has its answer
    /// (whatever it was). Ordering holds only per master: what must follow writes on
    /// other masters waits for this.
    pub fn barrier(&self) -> Deferred<()> {
        let d = Deferred::new();
        let mut st = self.inner.st.borrow_mut();
        match st.outstanding.last() {
            None => {
                drop(st);
                let _ = d.callback(());
            }
            Some(_) => {
                let mark = st.next_op;
                st.barriers.push((mark, d.clone()));
            }
        }
        d
    }

    /// The counters of every master's connection, summed (those of masters that went
    /// away included).
    pub fn counters(&self) -> RedisCounters {
        let st = self.inner.st.borrow();
        let mut sum = st.retired;
        for c in st.nodes.values() {
            add_counters(&mut sum, &c.counters());
        }
        sum
    }

    /// How many `MOVED` and `ASK` redirections were followed.
    pub fn redirects(&self) -> u64 {
        self.inner.st.borrow().redirects
    }

    /// Closes every connection; waiting commands fail.
    pub fn close(&self) {
        let (nodes, waiting, table_waiters) = {
            let mut st = self.inner.st.borrow_mut();
            st.closed = true;
            (
                st.nodes.drain().map(|(_, c)| c).collect::<Vec<_>>(),
                std::mem::take(&mut st.waiting),
                std::mem::take(&mut st.table_waiters),
            )
        };
        for n in nodes {
            n.close();
        }
        for (_, _, d) in waiting {
            let _ = d.errback(Failure::msg("the cluster client was closed"));
        }
        for d in table_waiters {
            let _ = d.errback(Failure::msg("the cluster client was closed"));
        }
    }
}

fn add_counters(sum: &mut RedisCounters, c: &RedisCounters) {
    sum.commands += c.commands;
    sum.round_trips += c.round_trips;
    sum.replies += c.replies;
    sum.bytes_sent += c.bytes_sent;
    sum.bytes_received += c.bytes_received;
    sum.connects += c.connects;
    sum.connect_failures += c.connect_failures;
    sum.disconnects += c.disconnects;
    sum.retried += c.retried;
    sum.master_switches += c.master_switches;
}

impl Inner {
    fn submit(&self, slot: u16, op: Op) -> Deferred<Value> {
        let out = Deferred::new();
        let inner = Deferred::new();
        let id = {
            let mut st = self.st.borrow_mut();
            let id = st.next_op;
            st.next_op += 1;
            st.outstanding.insert(id);
            id
        };
        let (me, result) = (self.me.clone(), out.clone());
        let _ = inner.clone().then(move |r: Result<Value, Failure>| {
            if let Some(i) = me.upgrade() {
                i.answered(id);
            }
            let _ = result.resolve(r);
            Ok::<(), Failure>(())
        });
        self.send(slot, op, inner, 0, None, 0);
        out
    }

    /// Command `id` has its answer: the barriers it held back fire.
    fn answered(&self, id: u64) {
        let ready: Vec<Deferred<()>> = {
            let mut st = self.st.borrow_mut();
            st.outstanding.remove(&id);
            let low = st.outstanding.first().copied().unwrap_or(u64::MAX);
            let (ready, held): (Vec<_>, Vec<_>) = std::mem::take(&mut st.barriers)
                .into_iter()
                .partition(|(mark, _)| *mark <= low);
            st.barriers = held;
            ready.into_iter().map(|(_, d)| d).collect()
        };
        for d in ready {
            let _ = d.callback(());
        }
    }

    /// The connection to `node`, made on first use.
    fn node(&self, node: &NodeAddr) -> RedisClient {
        if let Some(c) = self.st.borrow().nodes.get(node) {
            return c.clone();
        }
        let mut config = self.base.clone();
        config.host.clone_from(&node.host);
        config.port = node.port;
        let client = RedisClient::with_connector(&self.reactor, config, &self.connector);
        // A master that cannot be reached: its client is closed (failing what it
        // holds with `ClientClosed`, which `send` routes again once the table is
        // refreshed) and the next command to that address makes a new one.
        let (me, addr, reactor) = (self.me.clone(), node.clone(), self.reactor.clone());
        client.on_down(move || {
            let (me, addr) = (me.clone(), addr.clone());
            let _ = reactor.call_later(0.0, move || {
                if let Some(i) = me.upgrade() {
                    i.node_down(&addr);
                }
            });
        });
        let (scripts, hooks) = {
            let st = self.st.borrow();
            (st.scripts.clone(), st.hooks.clone())
        };
        for s in &scripts {
            client.load_script(s);
        }
        for h in hooks {
            client.on_connect(move || h());
        }
        self.st
            .borrow_mut()
            .nodes
            .insert(node.clone(), client.clone());
        client
    }

    /// Sends the command to the master of `slot` (or `ask`'s node); `attempt` counts
    /// redirections, `waits` the backoffs of the current outage.
    fn send(
        &self,
        slot: u16,
        op: Op,
        out: Deferred<Value>,
        attempt: u32,
        ask: Option<NodeAddr>,
        waits: u32,
    ) {
        let target = match ask.clone() {
            Some(a) => Some(a),
            None => {
                let looked = self
                    .st
                    .borrow()
                    .table
                    .as_ref()
                    .map(|t| t.master_of(slot).cloned());
                match looked {
                    Some(t) => t,
                    None => {
                        self.st.borrow_mut().waiting.push((slot, op, out));
                        self.refresh();
                        return;
                    }
                }
            }
        };
        let Some(target) = target else {
            // No master serves the slot (a cluster being set up or broken): ask again.
            self.refresh();
            self.retry_later(slot, op, out, attempt, waits + 1);
            return;
        };
        let client = self.node(&target);
        if ask.is_some() {
            let _ = client.command(&["ASKING"]).add_errback(|_| Ok(Value::Nil));
        }
        let sent = match &op {
            Op::Command(args) => client.command(args),
            Op::Eval(script, keys, args) => client.eval(script, keys, args),
        };
        let me = self.me.clone();
        let _ = sent.then(move |r: Result<Value, Failure>| {
            let Some(i) = me.upgrade() else {
                let _ = out.resolve(r);
                return Ok::<(), Failure>(());
            };
            if let Err(f) = &r
                && f.check::<ClientClosed>()
                && !i.st.borrow().closed
            {
                // The master went away with this command: send it again where the
                // refreshed table says (at least once, as the single-server client's
                // retries are).
                i.retry_later(slot, op, out, attempt, waits + 1);
                return Ok(());
            }
            let message = r
                .as_ref()
                .err()
                .and_then(|f| f.downcast_ref::<ReplyError>())
                .map(|e| e.message.clone());
            let Some(message) = message else {
                let _ = out.resolve(r);
                return Ok(());
            };
            if attempt + 1 >= MAX_ATTEMPTS {
                let _ = out.resolve(r);
                return Ok(());
            }
            match redirect(&message) {
                Some(Redirect::Moved(s, addr)) => {
                    i.moved(s, &addr);
                    i.send(slot, op, out, attempt + 1, None, 0);
                }
                Some(Redirect::Ask(_, addr)) => {
                    i.st.borrow_mut().redirects += 1;
                    i.send(slot, op, out, attempt + 1, Some(addr), 0);
                }
                None => match message.split(' ').next().unwrap_or_default() {
                    "TRYAGAIN" | "CLUSTERDOWN" | "LOADING" => {
                        i.refresh();
                        i.retry_later(slot, op, out, attempt, waits + 1);
                    }
                    _ => {
                        let _ = out.resolve(r);
                    }
                },
            }
            Ok(())
        });
    }

    /// Sends the command again after the `waits`th backoff (10 ms doubling to 1 s).
    fn retry_later(&self, slot: u16, op: Op, out: Deferred<Value>, attempt: u32, waits: u32) {
        let delay = (0.01 * 2f64.powi(waits.min(7) as i32)).min(1.0);
        let me = self.me.clone();
        let _ = self.reactor.call_later(delay, move || {
            if let Some(i) = me.upgrade() {
                i.send(slot, op, out, attempt, None, waits);
            }
        });
    }

    /// `addr` cannot be reached: its client goes (its commands fail with
    /// `ClientClosed` and are routed again) and the table is refreshed.
    fn node_down(&self, addr: &NodeAddr) {
        let gone = self.st.borrow_mut().nodes.remove(addr);
        if let Some(c) = gone {
            add_counters(&mut self.st.borrow_mut().retired, &c.counters());
            let now = self.reactor.seconds();
            let last = self.st.borrow_mut().warned.insert(addr.clone(), now);
            if last.is_none_or(|t| now - t >= 10.0) {
                log::warn!("Redis Cluster: {addr} is unreachable; asking for the slot table again");
            } else {
                self.st
                    .borrow_mut()
                    .warned
                    .insert(addr.clone(), last.unwrap_or(now));
                log::debug!("Redis Cluster: {addr} is still unreachable");
            }
            self.refresh();
            c.close();
        }
    }

    /// A `MOVED`: the slot is `addr`'s now; the rest of the table is refreshed.
    fn moved(&self, slot: u16, addr: &NodeAddr) {
        {
            let mut st = self.st.borrow_mut();
            st.redirects += 1;
            if let Some(t) = &mut st.table {
                let idx = match t.masters.iter().position(|m| m == addr) {
                    Some(i) => i,
                    None => {
                        t.masters.push(addr.clone());
                        t.masters.len() - 1
                    }
                };
                if let Some(o) = t.owner.get_mut(usize::from(slot)) {
                    *o = idx as u16;
                }
            }
        }
        self.refresh();
    }

    /// Asks the known masters, then the seeds, for `CLUSTER SLOTS` (one refresh at a
    /// time); the commands waiting for a table go when it comes. The masters are asked
    /// from a different one each refresh and each client (see [`first_asked`]).
    fn refresh(&self) {
        let candidates: Vec<NodeAddr> = {
            let mut st = self.st.borrow_mut();
            if st.refreshing {
                return;
            }
            st.refreshing = true;
            let mut c: Vec<NodeAddr> = st
                .table
                .as_ref()
                .map(|t| t.masters.clone())
                .unwrap_or_default();
            if !c.is_empty() {
                let first = (st.next_asked % c.len() as u64) as usize;
                c.rotate_left(first);
            }
            st.next_asked = st.next_asked.wrapping_add(1);
            c.extend(
                self.seeds
                    .iter()
                    .filter(|s| !c.contains(s))
                    .cloned()
                    .collect::<Vec<_>>(),
            );
            c
        };
        self.ask_slots(candidates, 0, Vec::new());
    }

    fn ask_slots(&self, candidates: Vec<NodeAddr>, n: usize, mut errors: Vec<String>) {
        let Some(node) = candidates.get(n).cloned() else {
            log::warn!(
                "Redis Cluster: no node gave the slot table ({}); asking again in 1 s",
                errors.join("; ")
            );
            self.st.borrow_mut().refreshing = false;
            let me = self.me.clone();
            let _ = self.reactor.call_later(1.0, move || {
                if let Some(i) = me.upgrade() {
                    let wanted = {
                        let st = i.st.borrow();
                        !st.waiting.is_empty() || !st.table_waiters.is_empty()
                    };
                    if wanted {
                        i.refresh();
                    }
                }
            });
            return;
        };
        let d = self.node(&node).command(&["CLUSTER", "SLOTS"]);
        let timeout = self.base.command_timeout.clamp(0.1, 5.0);
        d.add_timeout(timeout, self.reactor.clock());
        let me = self.me.clone();
        let _ = d.then(move |r: Result<Value, Failure>| {
            let Some(i) = me.upgrade() else {
                return Ok::<(), Failure>(());
            };
            let table = match &r {
                Ok(v) => SlotTable::from_cluster_slots(v, &node.host),
                Err(f) => Err(f.to_string()),
            };
            match table {
                Ok(t) => {
                    log::debug!(
                        "Redis Cluster: {} masters, every slot served: {}",
                        t.masters.len(),
                        t.is_complete()
                    );
                    let (waiting, table_waiters) = {
                        let mut st = i.st.borrow_mut();
                        st.table = Some(t);
                        st.refreshing = false;
                        (
                            std::mem::take(&mut st.waiting),
                            std::mem::take(&mut st.table_waiters),
                        )
                    };
                    for (slot, op, out) in waiting {
                        i.send(slot, op, out, 0, None, 0);
                    }
                    for d in table_waiters {
                        let _ = d.callback(());
                    }
                }
                Err(why) => {
                    errors.push(format!("{node}: {why}"));
                    i.ask_slots(candidates, n + 1, errors);
                }
            }
            Ok(())
        });
    }
}

/// The master a new client's first refresh asks first: one more than the last client
/// of this thread, from a random start per process. After a `MOVED` or a failover a
/// fleet's workers all refresh at once; they spread over the masters instead of all
/// asking the first of the table (the seed answers only each client's first table).
fn first_asked() -> u64 {
    use std::hash::BuildHasher as _;
    thread_local! {
        static NEXT: std::cell::Cell<u64> = std::cell::Cell::new(
            std::collections::hash_map::RandomState::new().hash_one(std::process::id()),
        );
    }
    NEXT.with(|n| {
        let v = n.get();
        n.set(v.wrapping_add(1));
        v
    })
}
