//! The client's Sentinel mode under the manual clock, over in-memory transports: the
//! `+switch-master` subscription moves the client to the announced master (what was
//! in flight sent again there, without asking the sentinels), another master's
//! failover is ignored, a silent sentinel is replaced by the next one, and a
//! reconnected watch catches a failover it missed from `get-master-addr-by-name`.
//! The same against real sentinels is in tests/redis_sentinel.rs.

use std::cell::RefCell;
use std::rc::Rc;

use trawl::client::redis::{RedisClient, RedisConfig, Value};
use trawl::defer::{Deferred, Failure, succeed};
use trawl::net::{ConnectionLost, Endpoint, Transport};
use trawl::reactor::{ManualClock, Reactor};
use trawl::testing::StringTransport;

/// Every connection the client asked for: `host:port` and its transport.
type Conns = Rc<RefCell<Vec<(String, Rc<StringTransport>)>>>;

/// Connections held back until the test completes them.
type Held = Rc<RefCell<Vec<Deferred<Rc<dyn Transport>>>>>;

struct Rig {
    clock: ManualClock,
    _reactor: Reactor,
    client: RedisClient,
    conns: Conns,
    /// With `hold`: the connections to masters, made when the test fires them.
    held: Held,
    hold: Rc<std::cell::Cell<bool>>,
}

impl Rig {
    fn new() -> Self {
        Self::with_url("redis+sentinel://s1:26379,s2:26379/m")
    }

    fn with_url(url: &str) -> Self {
        let clock = ManualClock::new();
        let reactor = Reactor::with_clock(clock.clock()).expect("reactor");
        let conns: Conns = Rc::default();
        let held: Held = Rc::default();
        let hold: Rc<std::cell::Cell<bool>> = Rc::default();
        let (c, h, k) = (conns.clone(), held.clone(), hold.clone());
        let connect = Rc::new(move |e: &Endpoint| -> Deferred<Rc<dyn Transport>> {
            let t = StringTransport::new_rc();
            c.borrow_mut()
                .push((format!("{}:{}", e.host, e.port), t.clone()));
            if k.get() && !e.host.starts_with('s') {
                let d = Deferred::new();
                h.borrow_mut().push(d.clone());
                return d;
            }
            succeed(t as Rc<dyn Transport>)
        });
        let config = RedisConfig::from_url(url).expect("url");
        let client = RedisClient::with_connect(&reactor.handle(), config, connect);
        Self {
            clock,
            _reactor: reactor,
            client,
            conns,
            held,
            hold,
        }
    }

    /// Completes the `i`th held connection (the `conn`th connection's transport).
    fn complete(&self, i: usize, conn: usize) {
        let d = self.held.borrow()[i].clone();
        let _ = d.callback(self.conn(conn).1 as Rc<dyn Transport>);
    }

    /// The `i`th connection's address and transport.
    fn conn(&self, i: usize) -> (String, Rc<StringTransport>) {
        self.conns.borrow()[i].clone()
    }

    fn count(&self) -> usize {
        self.conns.borrow().len()
    }

    /// Runs what is due (zero-delay flushes included) after `secs`.
    fn advance(&self, secs: f64) {
        self.clock.advance(secs);
        self.clock.advance(0.0);
    }
}

fn written(t: &StringTransport) -> String {
    String::from_utf8_lossy(&t.value()).into_owned()
}

fn address_reply(host: &str, port: u16) -> Vec<u8> {
    let port = port.to_string();
    format!(
        "*2\r\n${}\r\n{host}\r\n${}\r\n{port}\r\n",
        host.len(),
        port.len()
    )
    .into_bytes()
}

fn message(payload: &str) -> Vec<u8> {
    format!(
        "*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n${}\r\n{payload}\r\n",
        payload.len()
    )
    .into_bytes()
}

const SUBSCRIBED: &[u8] = b"*3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n";

/// The client connected to master 10.0.0.1:6379 with `SET k v` answered, the watch
/// subscribed on sentinel s1. Returns the rig, the master's and the watch's transports.
fn connected() -> (Rig, Rc<StringTransport>, Rc<StringTransport>) {
    let rig = Rig::new();
    let d = rig.client.command(&["SET", "k", "v"]);
    // The watch's connection and the asking one, both to the first sentinel.
    assert_eq!(rig.count(), 2);
    let (a0, watch) = rig.conn(0);
    let (a1, ask) = rig.conn(1);
    assert_eq!((a0.as_str(), a1.as_str()), ("s1:26379", "s1:26379"));
    assert!(written(&watch).contains("get-master-addr-by-name"));
    assert!(written(&watch).contains("SUBSCRIBE"));
    assert!(written(&ask).contains("get-master-addr-by-name"));
    assert!(!written(&ask).contains("SUBSCRIBE"));
    ask.deliver(&address_reply("10.0.0.1", 6379));
    assert!(ask.disconnecting(), "the asking connection is closed");
    let (a2, master) = rig.conn(2);
    assert_eq!(a2, "10.0.0.1:6379");
    rig.advance(0.0);
    assert!(written(&master).contains("SET"));
    master.deliver(b"+OK\r\n");
    assert!(matches!(d.take_result(), Some(Ok(_))));
    // The watch hears the same master, then its subscription: nothing moves.
    watch.deliver(&address_reply("10.0.0.1", 6379));
    watch.deliver(SUBSCRIBED);
    assert!(!master.disconnecting());
    (rig, master, watch)
}

#[test]
fn an_announced_failover_moves_the_client_and_resends_what_was_in_flight() {
    let (rig, master, watch) = connected();
    let d = rig.client.command(&["INCR", "n"]);
    rig.advance(0.0);
    assert!(written(&master).contains("INCR"));
    // Another master's failover: ignored.
    watch.deliver(&message("other 10.0.0.1 6379 10.0.0.9 6379"));
    assert!(!master.disconnecting());
    // Ours: the old connection is dropped (here it never answers: frozen, or cut off).
    watch.deliver(&message("m 10.0.0.1 6379 10.0.0.2 6380"));
    assert!(master.aborted(), "the old master's connection is dropped");
    master.close_from_peer(Failure::new(ConnectionLost {
        reason: "aborted".into(),
    }));
    rig.advance(1.0);
    // Straight to the announced master: no sentinel asked.
    assert_eq!(rig.count(), 4);
    let (a3, new) = rig.conn(3);
    assert_eq!(a3, "10.0.0.2:6380");
    rig.advance(0.0);
    assert!(written(&new).contains("INCR"), "the INCR is sent again");
    new.deliver(b":1\r\n");
    assert_eq!(
        d.take_result().map(|r| r.ok()),
        Some(Some(Value::Integer(1)))
    );
    let c = rig.client.counters();
    assert_eq!((c.master_switches, c.retried), (1, 1));
    // The same announcement again (another sentinel's, say): nothing moves.
    watch.deliver(&message("m 10.0.0.1 6379 10.0.0.2 6380"));
    assert!(!new.disconnecting());
    assert_eq!(rig.client.counters().master_switches, 1);
}

#[test]
fn the_watch_hearing_the_master_before_the_question_moves_nothing() {
    let rig = Rig::new();
    let d = rig.client.command(&["SET", "k", "v"]);
    let ((_, watch), (_, ask)) = (rig.conn(0), rig.conn(1));
    // The watch's answer first (the likelier order: it asked first), then the question's.
    watch.deliver(&address_reply("10.0.0.1", 6379));
    watch.deliver(SUBSCRIBED);
    ask.deliver(&address_reply("10.0.0.1", 6379));
    let (a, master) = rig.conn(2);
    assert_eq!(a, "10.0.0.1:6379");
    rig.advance(0.0);
    assert!(
        !master.disconnecting(),
        "the connection to the master is kept"
    );
    assert!(written(&master).contains("SET"));
    master.deliver(b"+OK\r\n");
    assert!(matches!(d.take_result(), Some(Ok(_))));
    let c = rig.client.counters();
    assert_eq!((rig.count(), c.connects, c.master_switches), (3, 1, 0));
}

#[test]
fn a_master_announced_while_connecting_elsewhere_wins() {
    let rig = Rig::new();
    rig.hold.set(true);
    let d = rig.client.command(&["SET", "k", "v"]);
    let ((_, watch), (_, ask)) = (rig.conn(0), rig.conn(1));
    ask.deliver(&address_reply("10.0.0.1", 6379));
    assert_eq!(rig.conn(2).0, "10.0.0.1:6379");
    // While the connection to .1 is being made the watch hears of .2 (a failover during
    // start-up, or a lagging sentinel asked first): the connection, once made, is dropped.
    watch.deliver(&address_reply("10.0.0.2", 6380));
    rig.complete(0, 2);
    let old = rig.conn(2).1;
    assert!(old.aborted(), "the connection to .1 is dropped once made");
    assert!(!written(&old).contains("SET"));
    rig.advance(1.0);
    assert_eq!(rig.count(), 4, "straight to .2: no sentinel asked");
    assert_eq!(rig.conn(3).0, "10.0.0.2:6380");
    rig.complete(1, 3);
    rig.advance(0.0);
    let new = rig.conn(3).1;
    assert!(written(&new).contains("SET"));
    new.deliver(b"+OK\r\n");
    assert!(matches!(d.take_result(), Some(Ok(_))));
    assert_eq!(rig.client.counters().master_switches, 1);
}

#[test]
fn a_silent_sentinel_is_replaced_and_a_missed_failover_is_caught() {
    let (rig, master, watch) = connected();
    // A PING every 5 s; unanswered until the next one, the sentinel is dropped.
    rig.advance(5.0);
    assert!(written(&watch).ends_with("*1\r\n$4\r\nPING\r\n"));
    watch.deliver(b"*2\r\n$4\r\npong\r\n$0\r\n\r\n");
    rig.advance(5.0);
    assert!(!watch.disconnecting(), "answered: kept");
    rig.advance(5.0);
    assert!(watch.aborted(), "silent for 5 s: dropped");
    watch.close_from_peer(Failure::new(ConnectionLost {
        reason: "aborted".into(),
    }));
    // One second later the watch connects to the next sentinel...
    let before = rig.count();
    rig.advance(1.0);
    assert_eq!(rig.count(), before + 1);
    let (a, watch2) = rig.conn(before);
    assert_eq!(a, "s2:26379");
    assert!(written(&watch2).contains("SUBSCRIBE"));
    // ... which names another master: a failover happened while nobody listened.
    watch2.deliver(&address_reply("10.0.0.3", 6379));
    assert!(master.aborted());
    assert_eq!(rig.client.counters().master_switches, 1);
    // Closing the client closes the watch.
    rig.client.close();
    assert!(watch2.disconnecting());
}

#[test]
fn a_sentinel_password_is_sent_first_and_a_refusal_moves_to_the_next() {
    let rig = Rig::with_url("redis+sentinel://s1:1,s2:2/m?sentinel_password=sp");
    let _d = rig.client.command(&["PING"]);
    let ((_, watch), (_, ask)) = (rig.conn(0), rig.conn(1));
    for t in [&watch, &ask] {
        assert!(written(t).starts_with("*2\r\n$4\r\nAUTH\r\n$2\r\nsp\r\n"));
    }
    // s1 refuses the password: both go to s2.
    ask.deliver(b"-WRONGPASS invalid username-password pair\r\n");
    assert_eq!(rig.conn(2).0, "s2:2");
    watch.deliver(b"-WRONGPASS invalid username-password pair\r\n");
    assert!(watch.aborted());
    watch.close_from_peer(Failure::new(ConnectionLost {
        reason: "aborted".into(),
    }));
    rig.advance(1.0);
    assert_eq!(rig.conn(3).0, "s2:2");
    rig.client.close();
}
