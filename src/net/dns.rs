//! Host name resolution that never blocks the reactor: Twisted's `ThreadedResolver` with
//! Scrapy's caching (`DNSCACHE_ENABLED`, `DNSCACHE_SIZE`, `DNS_TIMEOUT`).
//!
//! Lookups run `getaddrinfo` on a small pool of helper threads (started on demand, up to
//! `threads`), and their results come back through the reactor's waker as a Deferred.
//! IP literals skip all of it. Concurrent lookups of one host share one thread job.
//! Like Scrapy's `CachingThreadedResolver`, results are cached without a TTL and the
//! oldest entry is evicted when the cache is full; `DNS_TIMEOUT` bounds each lookup.
//!
//! Failed lookups are remembered for `negative_ttl` seconds (`DNSCACHE_NEGATIVE_TTL`,
//! trawl's; Scrapy caches only answers): the requests of a broad crawl to a host that
//! does not exist fail at once instead of each taking a thread for a lookup, while a
//! temporary failure (`EAI_AGAIN`: "Temporary failure in name resolution") or a timeout
//! is not remembered. The same size bound and oldest-out order apply.
//!
//! `overrides` (trawl's `DNS_RESOLVE`, curl's `--resolve`) answer for the hosts they
//! name in place of `getaddrinfo`, on the same threads and through the same cache, so a
//! crawl of made-up host names exercises the resolver as a real one would.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

use crate::defer::{Deferred, Failure, TimeoutError};
use crate::reactor::{ReactorHandle, ThreadResult};

/// Resolution settings, with Scrapy's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolverConfig {
    /// `DNSCACHE_ENABLED` (true).
    pub cache_enabled: bool,
    /// `DNSCACHE_SIZE` (10,000 hosts).
    pub cache_size: usize,
    /// `DNS_TIMEOUT` in seconds (60).
    pub timeout: f64,
    /// Helper threads at most (`REACTOR_THREADPOOL_MAXSIZE`, 10).
    pub threads: usize,
    /// Seconds a failed lookup is remembered (`DNSCACHE_NEGATIVE_TTL`, 60; 0: never).
    pub negative_ttl: f64,
    /// Addresses answered for these (lower-case) host names instead of asking the
    /// system (`DNS_RESOLVE`).
    pub overrides: Arc<HashMap<String, Vec<IpAddr>>>,
}

impl Default for ResolverConfig {
    fn default() -> Self {
        Self {
            cache_enabled: true,
            cache_size: 10_000,
            timeout: 60.0,
            threads: 10,
            negative_ttl: 60.0,
            overrides: Arc::default(),
        }
    }
}

/// A host could not be resolved (Scrapy's `DNSLookupError`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsLookupError {
    /// The host name.
    pub host: String,
    /// Why.
    pub reason: String,
}

impl fmt::Display for DnsLookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DNS lookup failed for {}: {}", self.host, self.reason)
    }
}

impl std::error::Error for DnsLookupError {}

type Lookup = Result<Vec<IpAddr>, String>;

struct Job {
    host: String,
    reply: ThreadResult<Lookup>,
}

struct Pool {
    overrides: Arc<HashMap<String, Vec<IpAddr>>>,
    jobs: Sender<Job>,
    queue: Arc<Mutex<Receiver<Job>>>,
    idle: Arc<AtomicUsize>,
    started: usize,
    max: usize,
}

impl Pool {
    fn submit(&mut self, job: Job) {
        if self.idle.load(Ordering::Acquire) == 0 && self.started < self.max {
            self.spawn();
        }
        if let Err(e) = self.jobs.send(job) {
            // Every worker is gone (they never exit while the pool lives): the job's
            // ThreadResult is dropped, which reports the failure to the reactor.
            drop(e);
        }
    }

    fn spawn(&mut self) {
        let queue = self.queue.clone();
        let idle = self.idle.clone();
        let overrides = self.overrides.clone();
        let spawned = std::thread::Builder::new()
            .name("trawl-dns".into())
            .spawn(move || {
                loop {
                    idle.fetch_add(1, Ordering::AcqRel);
                    let job = {
                        let rx = queue.lock().unwrap_or_else(|p| p.into_inner());
                        rx.recv()
                    };
                    idle.fetch_sub(1, Ordering::AcqRel);
                    let Ok(job) = job else { return };
                    if let Some(ips) = overrides.get(&job.host) {
                        job.reply.send(Ok(ips.clone()));
                        continue;
                    }
                    let result = (job.host.as_str(), 0u16)
                        .to_socket_addrs()
                        .map(|addrs| {
                            let mut ips: Vec<IpAddr> = addrs.map(|a| a.ip()).collect();
                            ips.dedup();
                            // IPv4 first, as Twisted's gethostbyname-based resolver.
                            ips.sort_by_key(IpAddr::is_ipv6);
                            ips
                        })
                        .map_err(|e| e.to_string());
                    job.reply.send(result);
                }
            });
        match spawned {
            Ok(_) => self.started += 1,
            Err(e) => log::error!("could not start a DNS thread: {e}"),
        }
    }
}

struct State {
    cache: HashMap<String, Vec<IpAddr>>,
    order: VecDeque<String>,
    /// Failed lookups: when the memory expires (reactor seconds) and why.
    negative: HashMap<String, (f64, String)>,
    negative_order: VecDeque<String>,
    negative_hits: u64,
    pending: HashMap<String, Vec<Deferred<Vec<IpAddr>>>>,
    pool: Pool,
    lookups: u64,
    cache_hits: u64,
}

/// The threaded, caching resolver. Cheap to clone.
#[derive(Clone)]
pub struct Resolver {
    reactor: ReactorHandle,
    config: ResolverConfig,
    state: Rc<RefCell<State>>,
}

impl Resolver {
    /// A resolver delivering results on `reactor`.
    pub fn new(reactor: &ReactorHandle, config: ResolverConfig) -> Self {
        let (tx, rx) = channel();
        Self {
            reactor: reactor.clone(),
            state: Rc::new(RefCell::new(State {
                cache: HashMap::new(),
                order: VecDeque::new(),
                negative: HashMap::new(),
                negative_order: VecDeque::new(),
                negative_hits: 0,
                pending: HashMap::new(),
                pool: Pool {
                    overrides: config.overrides.clone(),
                    jobs: tx,
                    queue: Arc::new(Mutex::new(rx)),
                    idle: Arc::new(AtomicUsize::new(0)),
                    started: 0,
                    max: config.threads.max(1),
                },
                lookups: 0,
                cache_hits: 0,
            })),
            config,
        }
    }

    /// Resolves `host` to socket addresses on `port` (IPv4 first).
    pub fn resolve(&self, host: &str, port: u16) -> Deferred<Vec<SocketAddr>> {
        self.resolve_ips(host).map(move |ips| {
            ips.into_iter()
                .map(|ip| SocketAddr::new(ip, port))
                .collect()
        })
    }

    /// The first address cached for `host` (an IP literal is its own address), without
    /// resolving anything.
    pub fn cached(&self, host: &str) -> Option<IpAddr> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Some(ip);
        }
        let s = self.state.borrow();
        s.cache
            .get(&host.to_ascii_lowercase())
            .and_then(|ips| ips.first().copied())
    }

    /// Resolves `host` to IP addresses.
    pub fn resolve_ips(&self, host: &str) -> Deferred<Vec<IpAddr>> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return crate::defer::succeed(vec![ip]);
        }
        let key = host.to_ascii_lowercase();
        let d = Deferred::new();
        let start_job = {
            let mut s = self.state.borrow_mut();
            if self.config.cache_enabled
                && let Some(ips) = s.cache.get(&key)
            {
                let ips = ips.clone();
                s.cache_hits += 1;
                drop(s);
                let _ = d.callback(ips);
                return d;
            }
            if let Some((expires, reason)) = s.negative.get(&key)
                && self.config.cache_enabled
            {
                if *expires > self.reactor.seconds() {
                    let reason = reason.clone();
                    s.negative_hits += 1;
                    drop(s);
                    let _ = d.errback(Failure::new(DnsLookupError {
                        host: key,
                        reason: format!("{reason} (remembered)"),
                    }));
                    return d;
                }
                s.negative.remove(&key);
            }
            let waiters = s.pending.entry(key.clone()).or_default();
            waiters.push(d.clone());
            waiters.len() == 1
        };
        if start_job {
            let me = self.clone();
            let k = key.clone();
            let reply = self.reactor.expect_from_thread(
                move |r: Result<Lookup, crate::reactor::Dropped>| {
                    let r = r.unwrap_or_else(|e| Err(e.to_string()));
                    me.deliver(&k, r);
                },
            );
            let mut s = self.state.borrow_mut();
            s.lookups += 1;
            s.pool.submit(Job {
                host: key.clone(),
                reply,
            });
        }
        let host_name = host.to_owned();
        let timeout = self.config.timeout;
        if timeout > 0.0 && timeout.is_finite() {
            d.add_timeout(timeout, self.reactor.clock());
        }
        d.add_errback(move |f| {
            if f.check::<TimeoutError>() {
                Err(Failure::new(DnsLookupError {
                    host: host_name,
                    reason: format!("timed out after {timeout} s"),
                }))
            } else {
                Err(f)
            }
        });
        d
    }

    fn deliver(&self, key: &str, result: Lookup) {
        let waiters = {
            let mut s = self.state.borrow_mut();
            if let Ok(ips) = &result
                && self.config.cache_enabled
                && self.config.cache_size > 0
                && !ips.is_empty()
            {
                if s.cache.len() >= self.config.cache_size
                    && let Some(oldest) = s.order.pop_front()
                {
                    s.cache.remove(&oldest);
                }
                if s.cache.insert(key.to_owned(), ips.clone()).is_none() {
                    s.order.push_back(key.to_owned());
                }
            }
            let failed = match &result {
                Ok(ips) if ips.is_empty() => Some("no addresses"),
                Ok(_) => None,
                Err(reason) => Some(reason.as_str()),
            };
            let ttl = self.config.negative_ttl;
            if let Some(reason) = failed
                && ttl > 0.0
                && self.config.cache_enabled
                && self.config.cache_size > 0
                && !reason.contains("Temporary failure")
            {
                let expires = self.reactor.seconds() + ttl;
                if s.negative.len() >= self.config.cache_size {
                    // Oldest out; entries already expired or replaced are skipped over.
                    while let Some(oldest) = s.negative_order.pop_front() {
                        if s.negative.remove(&oldest).is_some() {
                            break;
                        }
                    }
                }
                if s.negative
                    .insert(key.to_owned(), (expires, reason.to_owned()))
                    .is_none()
                {
                    s.negative_order.push_back(key.to_owned());
                }
            }
            s.pending.remove(key).unwrap_or_default()
        };
        for d in waiters {
            let r = match &result {
                Ok(ips) if !ips.is_empty() => Ok(ips.clone()),
                Ok(_) => Err(Failure::new(DnsLookupError {
                    host: key.to_owned(),
                    reason: "no addresses".into(),
                })),
                Err(reason) => Err(Failure::new(DnsLookupError {
                    host: key.to_owned(),
                    reason: reason.clone(),
                })),
            };
            // A waiter that timed out already has its result.
            let _ = d.resolve(r);
        }
    }

    /// `(thread lookups started, cache hits)`.
    pub fn counters(&self) -> (u64, u64) {
        let s = self.state.borrow();
        (s.lookups, s.cache_hits)
    }

    /// Lookups answered by a remembered failure.
    pub fn negative_hits(&self) -> u64 {
        self.state.borrow().negative_hits
    }
}

impl fmt::Debug for Resolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.borrow();
        f.debug_struct("Resolver")
            .field("cached", &s.cache.len())
            .field("pending", &s.pending.len())
            .field("threads", &s.pool.started)
            .finish()
    }
}

/// Parses a hosts file (`/etc/hosts` format: `ADDRESS NAME [NAME...]` per line, `#`
/// comments) into lower-case names and their addresses, in file order.
///
/// # Errors
///
/// A line whose first field is not an IP address, or that names no host (with its
/// line number).
pub fn parse_hosts(text: &str) -> Result<HashMap<String, Vec<IpAddr>>, String> {
    let mut map: HashMap<String, Vec<IpAddr>> = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        let mut fields = line.split_whitespace();
        let Some(addr) = fields.next() else { continue };
        let ip: IpAddr = addr
            .parse()
            .map_err(|_| format!("line {}: {addr:?} is not an IP address", n + 1))?;
        let mut named = false;
        for name in fields {
            named = true;
            let ips = map.entry(name.to_ascii_lowercase()).or_default();
            if !ips.contains(&ip) {
                ips.push(ip);
            }
        }
        if !named {
            return Err(format!("line {}: no host name after {addr}", n + 1));
        }
    }
    Ok(map)
}

/// Parses one curl-style `--resolve` entry, `HOST:ADDRESS` or `HOST:PORT:ADDRESS` (the
/// port is not used: an override answers for the name on every port); IPv6 addresses
/// may be bracketed.
///
/// # Errors
///
/// No colon, an empty host, or an address that is not an IP address.
pub fn parse_resolve_entry(entry: &str) -> Result<(String, IpAddr), String> {
    let (host, rest) = entry
        .split_once(':')
        .ok_or_else(|| format!("{entry:?} is not HOST:ADDRESS"))?;
    if host.is_empty() {
        return Err(format!("{entry:?} names no host"));
    }
    let bare = |a: &str| {
        a.trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
    };
    let ip = bare(rest).or_else(|_| match rest.split_once(':') {
        Some((port, addr)) if port.bytes().all(|b| b.is_ascii_digit()) => bare(addr),
        _ => bare(""),
    });
    ip.map(|ip| (host.to_ascii_lowercase(), ip))
        .map_err(|_| format!("{entry:?}: the address is not an IP address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_files_and_resolve_entries_parse() {
        let map = parse_hosts("# c\n127.1.0.1 a.test B.test # x\n\n::1 a.test\n").unwrap();
        assert_eq!(
            map["a.test"],
            vec![
                "127.1.0.1".parse::<IpAddr>().unwrap(),
                "::1".parse::<IpAddr>().unwrap()
            ]
        );
        assert_eq!(map["b.test"].len(), 1);
        assert!(parse_hosts("300.1.1.1 x").unwrap_err().contains("line 1"));
        assert!(parse_hosts("127.0.0.1").unwrap_err().contains("no host"));
        let ip4: IpAddr = "127.0.0.2".parse().unwrap();
        let ip6: IpAddr = "::1".parse().unwrap();
        assert_eq!(
            parse_resolve_entry("X.test:127.0.0.2").unwrap(),
            ("x.test".into(), ip4)
        );
        assert_eq!(parse_resolve_entry("x.test:443:127.0.0.2").unwrap().1, ip4);
        assert_eq!(parse_resolve_entry("x.test:[::1]").unwrap().1, ip6);
        assert_eq!(parse_resolve_entry("x.test:443:[::1]").unwrap().1, ip6);
        assert!(parse_resolve_entry("x.test").is_err());
        assert!(parse_resolve_entry(":127.0.0.1").is_err());
        assert!(parse_resolve_entry("x.test:80:nope").is_err());
    }

    /// Runs the reactor until `d` fires; its result.
    fn wait<T: 'static>(
        reactor: &mut crate::reactor::Reactor,
        d: &Deferred<T>,
    ) -> Result<T, Failure> {
        reactor.run_until(d).expect("reactor");
        d.take_result().expect("fired")
    }

    #[test]
    fn failed_lookups_are_remembered_for_the_negative_ttl() {
        let clock = crate::reactor::ManualClock::new();
        let mut reactor = crate::reactor::Reactor::with_clock(clock.clock()).expect("reactor");
        let resolver = Resolver::new(
            &reactor.handle(),
            ResolverConfig {
                negative_ttl: 30.0,
                timeout: 0.0,
                ..ResolverConfig::default()
            },
        );
        // `.invalid` never resolves (RFC 6761).
        let f = wait(&mut reactor, &resolver.resolve_ips("nowhere.invalid")).expect_err("fails");
        assert!(f.check::<DnsLookupError>(), "{f}");
        assert_eq!(resolver.counters().0, 1);
        let f = wait(&mut reactor, &resolver.resolve_ips("NOWHERE.invalid")).expect_err("fails");
        assert!(f.to_string().contains("remembered"), "{f}");
        assert_eq!((resolver.counters().0, resolver.negative_hits()), (1, 1));
        clock.advance(31.0);
        wait(&mut reactor, &resolver.resolve_ips("nowhere.invalid")).expect_err("fails");
        assert_eq!(
            resolver.counters().0,
            2,
            "forgotten after the TTL: asked again"
        );
        assert_eq!(resolver.negative_hits(), 1);

        // 0 turns it off.
        let plain = Resolver::new(
            &reactor.handle(),
            ResolverConfig {
                negative_ttl: 0.0,
                ..ResolverConfig::default()
            },
        );
        for _ in 0..2 {
            wait(&mut reactor, &plain.resolve_ips("nowhere.invalid")).expect_err("fails");
        }
        assert_eq!((plain.counters().0, plain.negative_hits()), (2, 0));
    }
}
