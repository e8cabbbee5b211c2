//! The TLS client's session memory, sized in hosts: what a broad crawl needs to resume
//! the handshake with a host it revisits after its connection closed.
//!
//! rustls' own `ClientSessionMemoryCache` keeps up to eight TLS 1.3 tickets per server
//! and counts its size in tickets, so 1,024 remembers 128 hosts, and remembering
//! 10,000 hosts would hold 80,000 tickets (each carries the server's certificate chain,
//! about a kilobyte). A crawler opens one connection to a host at a time far more often
//! than eight, and the server sends fresh tickets on every resumed handshake, so
//! [`SessionCache`] keeps [`TICKETS_PER_HOST`] ticket per host (the newest) and forgets
//! the least recently used host past `hosts` — O(log hosts) per operation. A second
//! connection opened to a host while the first is still up makes a full handshake;
//! a second ticket per host cost 10 MB at 10,000 hosts with the fixture's one-certificate
//! chain (a real chain is several kilobytes), and broad crawls revisit a host after its
//! connection closed, one at a time.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::sync::Mutex;

use rustls::NamedGroup;
use rustls::client::{ClientSessionStore, Tls12ClientSessionValue, Tls13ClientSessionValue};
use rustls::pki_types::ServerName;

/// TLS 1.3 tickets kept per host (a resumed handshake brings new ones).
pub const TICKETS_PER_HOST: usize = 1;

#[derive(Default)]
struct Host {
    kx_hint: Option<NamedGroup>,
    /// Boxed: most hosts speak TLS 1.3, and the map holds a `Host` per host.
    tls12: Option<Box<Tls12ClientSessionValue>>,
    tls13: VecDeque<Tls13ClientSessionValue>,
    /// Its key in `State::order`.
    used: u64,
}

#[derive(Default)]
struct State {
    hosts: HashMap<ServerName<'static>, Host>,
    /// Hosts by last use: the first is forgotten when the cache is full.
    order: BTreeMap<u64, ServerName<'static>>,
    clock: u64,
}

impl State {
    /// The entry of `name`, marked used now; made (forgetting the least recently used
    /// host if full) when `create`.
    fn touch(&mut self, name: &ServerName<'_>, create: bool, max: usize) -> Option<&mut Host> {
        self.clock += 1;
        let now = self.clock;
        let owned = name.to_owned();
        if let Some(host) = self.hosts.get_mut(&owned) {
            self.order.remove(&host.used);
            host.used = now;
            self.order.insert(now, owned.clone());
            return self.hosts.get_mut(&owned);
        }
        if !create || max == 0 {
            return None;
        }
        while self.hosts.len() >= max {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            self.hosts.remove(&oldest);
        }
        self.order.insert(now, owned.clone());
        Some(self.hosts.entry(owned).or_insert_with(|| Host {
            used: now,
            ..Host::default()
        }))
    }
}

/// A client session store remembering `hosts` hosts (least recently used forgotten).
pub struct SessionCache {
    max: usize,
    state: Mutex<State>,
}

impl SessionCache {
    /// A cache for `hosts` hosts (0: remembers nothing).
    pub fn new(hosts: usize) -> Self {
        Self {
            max: hosts,
            state: Mutex::new(State::default()),
        }
    }

    /// Hosts remembered now.
    pub fn len(&self) -> usize {
        self.with(|s| s.hosts.len())
    }

    /// Whether no host is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut state)
    }
}

impl fmt::Debug for SessionCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionCache")
            .field("max", &self.max)
            .field("hosts", &self.len())
            .finish()
    }
}

impl ClientSessionStore for SessionCache {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: NamedGroup) {
        let max = self.max;
        self.with(|s| {
            if let Some(h) = s.touch(&server_name, true, max) {
                h.kx_hint = Some(group);
            }
        });
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<NamedGroup> {
        self.with(|s| s.touch(server_name, false, 0).and_then(|h| h.kx_hint))
    }

    fn set_tls12_session(&self, server_name: ServerName<'static>, value: Tls12ClientSessionValue) {
        let max = self.max;
        self.with(|s| {
            if let Some(h) = s.touch(&server_name, true, max) {
                h.tls12 = Some(Box::new(value));
            }
        });
    }

    fn tls12_session(&self, server_name: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        self.with(|s| {
            s.touch(server_name, false, 0)
                .and_then(|h| h.tls12.as_deref().cloned())
        })
    }

    fn remove_tls12_session(&self, server_name: &ServerName<'static>) {
        self.with(|s| {
            if let Some(h) = s.hosts.get_mut(server_name) {
                h.tls12 = None;
            }
        });
    }

    fn insert_tls13_ticket(
        &self,
        server_name: ServerName<'static>,
        value: Tls13ClientSessionValue,
    ) {
        let max = self.max;
        self.with(|s| {
            if let Some(h) = s.touch(&server_name, true, max) {
                if h.tls13.len() >= TICKETS_PER_HOST {
                    h.tls13.pop_front();
                }
                // Room for exactly the tickets kept (a VecDeque's first growth is 4).
                h.tls13.reserve_exact(TICKETS_PER_HOST - h.tls13.len());
                h.tls13.push_back(value);
            }
        });
    }

    fn take_tls13_ticket(
        &self,
        server_name: &ServerName<'static>,
    ) -> Option<Tls13ClientSessionValue> {
        // The newest ticket first: the one least likely to have expired.
        self.with(|s| {
            s.touch(server_name, false, 0)
                .and_then(|h| h.tls13.pop_back())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> ServerName<'static> {
        ServerName::try_from(s.to_owned()).expect("a name")
    }

    #[test]
    fn the_least_recently_used_host_is_forgotten() {
        let cache = SessionCache::new(2);
        cache.set_kx_hint(name("a.test"), NamedGroup::X25519);
        cache.set_kx_hint(name("b.test"), NamedGroup::X25519);
        // a is used again: b is now the oldest.
        assert_eq!(cache.kx_hint(&name("a.test")), Some(NamedGroup::X25519));
        cache.set_kx_hint(name("c.test"), NamedGroup::secp256r1);
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.kx_hint(&name("b.test")), None);
        assert_eq!(cache.kx_hint(&name("a.test")), Some(NamedGroup::X25519));
        assert_eq!(cache.kx_hint(&name("c.test")), Some(NamedGroup::secp256r1));
        // Looking up an unknown host remembers nothing.
        assert_eq!(cache.kx_hint(&name("d.test")), None);
        assert_eq!(cache.len(), 2);
        let none = SessionCache::new(0);
        none.set_kx_hint(name("a.test"), NamedGroup::X25519);
        assert!(none.is_empty());
    }
}
