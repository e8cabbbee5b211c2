//! [`RedisHandle`]: one Redis server or a Redis Cluster behind the same calls, chosen
//! by asking the server. A handle made with [`Topology::Auto`] sends `INFO cluster`
//! to the configured node first; `cluster_enabled:1` makes it a [`RedisCluster`]
//! client seeded with that node (and any more seeds given), anything else a single
//! [`RedisClient`] — the very connection that asked. Commands issued before the answer
//! wait and go, in order, to whichever it turned out to be.

use std::cell::RefCell;
use std::rc::Rc;

use crate::defer::{Deferred, Failure};
use crate::proto::cluster::NodeAddr;
use crate::reactor::ReactorHandle;

use super::cluster::RedisCluster;
use super::{RedisClient, RedisConfig, RedisCounters, Script, Value};

/// Which kind of deployment a [`RedisHandle`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// Ask the server (`INFO cluster`).
    Auto,
    /// One server (or a Sentinel-managed master).
    Single,
    /// A Redis Cluster.
    Cluster,
}

enum Op {
    Command(Vec<Vec<u8>>),
    Eval(Script, Vec<Vec<u8>>, Vec<Vec<u8>>),
    Barrier(Deferred<()>),
}

enum Mode {
    /// Waiting for `INFO cluster`: the probe connection and what was issued since.
    Detecting(RedisClient, Vec<(Op, Option<Deferred<Value>>)>),
    Single(RedisClient),
    Cluster(RedisCluster),
    Closed,
}

struct Inner {
    reactor: ReactorHandle,
    config: RedisConfig,
    seeds: Vec<NodeAddr>,
    mode: RefCell<Mode>,
    scripts: RefCell<Vec<Script>>,
    hooks: RefCell<Vec<Rc<dyn Fn()>>>,
    ready: RefCell<Vec<Deferred<Topology>>>,
}

/// A single server or a cluster, behind the calls the distributed layer makes. Cheap
/// to clone; clones share the connections.
#[derive(Clone)]
pub struct RedisHandle {
    inner: Rc<Inner>,
}

impl std::fmt::Debug for RedisHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisHandle")
            .field("topology", &self.topology())
            .finish_non_exhaustive()
    }
}

impl RedisHandle {
    /// A handle for `config`'s server. `seeds` are more cluster nodes to ask for the
    /// slot table (`REDIS_CLUSTER_NODES`); given any, the handle is a cluster client
    /// from the start, without asking (the configured node may be the one that is
    /// down).
    ///
    /// # Errors
    ///
    /// The TLS configuration could not be built.
    pub fn new(
        reactor: &ReactorHandle,
        config: RedisConfig,
        topology: Topology,
        seeds: &[NodeAddr],
    ) -> Result<Self, Failure> {
        let topology = if seeds.is_empty() || config.sentinel.is_some() {
            topology
        } else {
            Topology::Cluster
        };
        let mode = match topology {
            Topology::Single => Mode::Single(RedisClient::new(reactor, config.clone())?),
            Topology::Cluster => Mode::Cluster(RedisCluster::new(reactor, config.clone(), seeds)?),
            Topology::Auto if config.sentinel.is_some() => {
                Mode::Single(RedisClient::new(reactor, config.clone())?)
            }
            Topology::Auto => {
                Mode::Detecting(RedisClient::new(reactor, config.clone())?, Vec::new())
            }
        };
        let handle = Self {
            inner: Rc::new(Inner {
                reactor: reactor.clone(),
                config,
                seeds: seeds.to_vec(),
                mode: RefCell::new(mode),
                scripts: RefCell::new(Vec::new()),
                hooks: RefCell::new(Vec::new()),
                ready: RefCell::new(Vec::new()),
            }),
        };
        let probe = match &*handle.inner.mode.borrow() {
            Mode::Detecting(c, _) => Some(c.clone()),
            _ => None,
        };
        if let Some(probe) = probe {
            let me = Rc::downgrade(&handle.inner);
            let _ = probe.command(&["INFO", "cluster"]).then(move |r| {
                if let Some(i) = me.upgrade() {
                    let cluster = r.as_ref().ok().and_then(Value::as_bytes).is_some_and(|b| {
                        String::from_utf8_lossy(b)
                            .lines()
                            .any(|l| l.trim() == "cluster_enabled:1")
                    });
                    if let Err(f) = &r {
                        log::debug!("INFO cluster failed ({f}): a single Redis server");
                    }
                    detected(&i, cluster);
                }
                Ok::<(), Failure>(())
            });
        }
        Ok(handle)
    }

    /// What the handle talks to, `None` while it is still asking.
    pub fn topology(&self) -> Option<Topology> {
        match &*self.inner.mode.borrow() {
            Mode::Detecting(..) | Mode::Closed => None,
            Mode::Single(_) => Some(Topology::Single),
            Mode::Cluster(_) => Some(Topology::Cluster),
        }
    }

    /// Fires with the topology once it is known.
    pub fn when_ready(&self) -> Deferred<Topology> {
        let d = Deferred::new();
        match self.topology() {
            Some(t) => {
                let _ = d.callback(t);
            }
            None => self.inner.ready.borrow_mut().push(d.clone()),
        }
        d
    }

    /// The cluster client, when it is one.
    pub fn cluster(&self) -> Option<RedisCluster> {
        match &*self.inner.mode.borrow() {
            Mode::Cluster(c) => Some(c.clone()),
            _ => None,
        }
    }

    /// The configuration (of the seed node, for a cluster).
    pub fn config(&self) -> &RedisConfig {
        &self.inner.config
    }

    /// Sends a command (on a cluster: to the master of its first argument's slot).
    pub fn command<A: AsRef<[u8]>>(&self, args: &[A]) -> Deferred<Value> {
        let mode = self.inner.mode.borrow();
        match &*mode {
            Mode::Single(c) => c.command(args),
            Mode::Cluster(c) => c.command(args),
            Mode::Closed => crate::defer::fail(super::ClientClosed),
            Mode::Detecting(..) => {
                drop(mode);
                let op = Op::Command(args.iter().map(|a| a.as_ref().to_vec()).collect());
                self.queue(op)
            }
        }
    }

    /// Runs a script (`EVALSHA`, `EVAL` on `NOSCRIPT`); on a cluster every key must
    /// share a slot.
    pub fn eval<K: AsRef<[u8]>, A: AsRef<[u8]>>(
        &self,
        script: &Script,
        keys: &[K],
        args: &[A],
    ) -> Deferred<Value> {
        let mode = self.inner.mode.borrow();
        match &*mode {
            Mode::Single(c) => c.eval(script, keys, args),
            Mode::Cluster(c) => c.eval(script, keys, args),
            Mode::Closed => crate::defer::fail(super::ClientClosed),
            Mode::Detecting(..) => {
                drop(mode);
                let op = Op::Eval(
                    script.clone(),
                    keys.iter().map(|k| k.as_ref().to_vec()).collect(),
                    args.iter().map(|a| a.as_ref().to_vec()).collect(),
                );
                self.queue(op)
            }
        }
    }

    fn queue(&self, op: Op) -> Deferred<Value> {
        let d = Deferred::new();
        if let Mode::Detecting(_, q) = &mut *self.inner.mode.borrow_mut() {
            q.push((op, Some(d.clone())));
        }
        d
    }

    /// Fires once every command issued before it has been answered. One server
    /// answers in order on one connection, so there it fires at once: only a cluster,
    /// whose masters answer independently, has anything to wait for.
    pub fn barrier(&self) -> Deferred<()> {
        let mut mode = self.inner.mode.borrow_mut();
        match &mut *mode {
            Mode::Single(_) | Mode::Closed => {
                drop(mode);
                crate::defer::succeed(())
            }
            Mode::Cluster(c) => {
                let c = c.clone();
                drop(mode);
                c.barrier()
            }
            Mode::Detecting(_, q) => {
                let d = Deferred::new();
                q.push((Op::Barrier(d.clone()), None));
                d
            }
        }
    }

    /// Loads `script` on every connection, now and later (while the server's kind is
    /// being detected, once it is known: the probe's node is loaded again as a master
    /// if it is a cluster's).
    pub fn load_script(&self, script: &Script) {
        self.inner.scripts.borrow_mut().push(script.clone());
        let mode = self.inner.mode.borrow();
        match &*mode {
            Mode::Single(c) => c.load_script(script),
            Mode::Detecting(..) => {}
            Mode::Cluster(c) => c.load_script(script),
            Mode::Closed => {}
        }
    }

    /// Calls `f` after every connection handshake (to any master of a cluster).
    pub fn on_connect(&self, f: impl Fn() + 'static) {
        let hook: Rc<dyn Fn()> = Rc::new(f);
        self.inner.hooks.borrow_mut().push(hook.clone());
        let mode = self.inner.mode.borrow();
        match &*mode {
            Mode::Single(c) | Mode::Detecting(c, _) => c.on_connect(move || hook()),
            Mode::Cluster(c) => c.on_connect(move || hook()),
            Mode::Closed => {}
        }
    }

    /// The traffic counters (summed over a cluster's masters).
    pub fn counters(&self) -> RedisCounters {
        match &*self.inner.mode.borrow() {
            Mode::Single(c) | Mode::Detecting(c, _) => c.counters(),
            Mode::Cluster(c) => c.counters(),
            Mode::Closed => RedisCounters::default(),
        }
    }

    /// Closes every connection; waiting commands fail.
    pub fn close(&self) {
        let mode = std::mem::replace(&mut *self.inner.mode.borrow_mut(), Mode::Closed);
        match mode {
            Mode::Single(c) => c.close(),
            Mode::Cluster(c) => c.close(),
            Mode::Detecting(c, q) => {
                c.close();
                for (_, d) in q {
                    if let Some(d) = d {
                        let _ = d.errback(Failure::new(super::ClientClosed));
                    }
                }
            }
            Mode::Closed => {}
        }
    }
}

/// The answer to `INFO cluster`: the handle becomes what it talks to and sends what
/// waited.
fn detected(i: &Rc<Inner>, cluster: bool) {
    let (probe, queued) = {
        let mut mode = i.mode.borrow_mut();
        let Mode::Detecting(probe, q) = &mut *mode else {
            return;
        };
        (probe.clone(), std::mem::take(q))
    };
    let next = if cluster {
        match RedisCluster::new(&i.reactor, i.config.clone(), &i.seeds) {
            Ok(c) => {
                log::info!(
                    "Redis at {}:{} is a cluster node: talking to the cluster",
                    i.config.host,
                    i.config.port
                );
                for s in i.scripts.borrow().iter() {
                    c.load_script(s);
                }
                for h in i.hooks.borrow().iter() {
                    let h = h.clone();
                    c.on_connect(move || h());
                }
                probe.close();
                Mode::Cluster(c)
            }
            Err(f) => {
                log::error!("Cannot make the cluster client ({f}); using the one node");
                Mode::Single(probe)
            }
        }
    } else {
        Mode::Single(probe)
    };
    if let Mode::Single(c) = &next {
        // Before what waited: its scripts are loaded first on the connection.
        for s in i.scripts.borrow().iter() {
            c.load_script(s);
        }
    }
    let topology = match next {
        Mode::Cluster(_) => Topology::Cluster,
        _ => Topology::Single,
    };
    *i.mode.borrow_mut() = next;
    let handle = RedisHandle { inner: i.clone() };
    for (op, d) in queued {
        match op {
            Op::Command(args) => {
                if let Some(d) = d {
                    handle.command(&args).chain_deferred(&d);
                }
            }
            Op::Eval(s, k, a) => {
                if let Some(d) = d {
                    handle.eval(&s, &k, &a).chain_deferred(&d);
                }
            }
            Op::Barrier(b) => {
                handle.barrier().chain_deferred(&b);
            }
        }
    }
    let waiting = std::mem::take(&mut *i.ready.borrow_mut());
    for d in waiting {
        let _ = d.callback(topology);
    }
}
