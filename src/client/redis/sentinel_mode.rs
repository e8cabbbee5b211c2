//! The client's Sentinel mode: where its connections go (the master the sentinels
//! announced last, or the one they name when asked) and how it follows a failover the
//! sentinels announce (`+switch-master`, through [`SentinelWatch`]): the connection to
//! the old master is dropped and what it had in flight goes again to the new one.

use std::rc::Rc;

use crate::defer::{self, Deferred, Failure};
use crate::net::{Endpoint, Transport};

use super::sentinel_link::{self, SentinelWatch};
use super::{ClientClosed, Inner, Phase};

impl Inner {
    /// Sentinel mode: connects to the master the sentinels announced last, or else to
    /// the one they name now (asked in turn, the last one that answered first); starts
    /// watching them for `+switch-master` at the first connection.
    pub(super) fn connect_through_sentinels(&self) -> Deferred<Rc<dyn Transport>> {
        // `master` keeps the last address until the new one is known: an announcement
        // of that same address while asking moves nothing.
        let (announced, order, watch) = {
            let mut st = self.st.borrow_mut();
            (
                st.announced.take(),
                st.sentinel_order.clone(),
                st.watch.is_none(),
            )
        };
        if watch {
            let me = self.me.clone();
            let first = order.first().copied().unwrap_or_default();
            let w = SentinelWatch::start(&self.reactor, &self.config, &self.connect, first, {
                move |host, port| {
                    if let Some(i) = me.upgrade() {
                        i.master_switched(host, port);
                    }
                }
            });
            self.st.borrow_mut().watch = Some(w);
        }
        let found = match announced {
            Some((host, port)) => defer::succeed((usize::MAX, host, port)),
            None => sentinel_link::ask_master(&self.reactor, &self.config, &self.connect, order),
        };
        let me = self.me.clone();
        found.then(move |r: Result<(usize, String, u16), Failure>| {
            let (idx, host, port) = match r {
                Ok(found) => found,
                Err(f) => return defer::fail(f),
            };
            let Some(i) = me.upgrade() else {
                return defer::fail(Failure::new(ClientClosed));
            };
            let endpoint = Endpoint {
                host: host.clone(),
                port,
                tls: i.config.tls,
                proxy: None,
                bind: None,
            };
            {
                let mut st = i.st.borrow_mut();
                if idx != usize::MAX {
                    st.sentinel_order.retain(|&x| x != idx);
                    st.sentinel_order.insert(0, idx);
                }
                st.master = Some((host, port));
            }
            let c = (i.connect)(&endpoint);
            if i.config.connect_timeout > 0.0 {
                c.add_timeout(i.config.connect_timeout, i.reactor.clock());
            }
            c
        })
    }

    /// The sentinels say the master is at `host:port` now: if the client is connected
    /// (or connecting) elsewhere, it drops that connection and sends what was in flight
    /// again there. Before the first address is known (the watch may hear it before
    /// the first question is answered) it is only noted: `on_connected` compares.
    fn master_switched(&self, host: String, port: u16) {
        let t = {
            let mut st = self.st.borrow_mut();
            let same = st
                .master
                .as_ref()
                .is_some_and(|(h, p)| *h == host && *p == port);
            if same || st.phase == Phase::Closed {
                return;
            }
            if st.master.is_none() {
                st.announced = Some((host, port));
                return;
            }
            log::warn!(
                "Redis {}: the sentinels announce the master at {host}:{port}; moving there",
                self.config.display()
            );
            st.announced = Some((host, port));
            match st.phase {
                Phase::Ready | Phase::Handshaking if !st.demoted => {
                    st.counters.master_switches += 1;
                    st.demoted = true;
                    st.abort_reason = Some("the sentinels announced a new master".into());
                    st.conn.as_ref().and_then(|c| c.transport())
                }
                // `on_connected` compares the announcement with the address it connected
                // to, and starts again if they differ.
                Phase::Connecting => {
                    st.counters.master_switches += 1;
                    None
                }
                _ => None,
            }
        };
        if let Some(t) = t {
            t.abort_connection();
        }
    }

    /// Whether a connection just made to the master should be dropped: the sentinels
    /// announced another address meanwhile (an announcement of the same one is
    /// forgotten).
    pub(super) fn announced_elsewhere(&self) -> bool {
        let mut st = self.st.borrow_mut();
        let Some(a) = st.announced.as_ref() else {
            return false;
        };
        if st.master.as_ref() == Some(a) {
            st.announced = None;
            return false;
        }
        true
    }
}
