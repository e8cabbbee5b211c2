//! Redis Cluster, the ground the cluster client stands on, against a real 3-master
//! cluster with a replica each (`redis-server --cluster-enabled yes`, `redis-cli
//! --cluster create`, on free ports in temp dirs): trawl's hash slots are the server's
//! (`CLUSTER KEYSLOT`), a real `CLUSTER SLOTS` reply makes a full table of three
//! masters, and a key sent to the wrong master comes back as a `MOVED` naming the one
//! the table says. The cluster client routes by slot, loads scripts on every master,
//! and follows `ASK` and `MOVED` through a slot migrated by hand mid-test; the
//! refreshes a `MOVED` starts spread over the masters.

mod util;

use trawl::client::redis::cluster::RedisCluster as ClusterClient;
use trawl::client::redis::{RedisConfig, Script, Value};
use trawl::defer::{Deferred, Failure};
use trawl::proto::cluster::{Redirect, SlotTable, key_slot, redirect};
use trawl::reactor::Reactor;
use trawl::testing::{RedisCluster, RedisServer, run_within};

fn run<T: 'static>(reactor: &mut Reactor, d: Deferred<T>) -> Result<T, Failure> {
    run_within(reactor, &d, 60.0, "a cluster command's reply");
    d.take_result().expect("fired")
}

fn client(reactor: &Reactor, c: &RedisCluster) -> ClusterClient {
    let config = RedisConfig::from_url(&c.seed_url()).expect("url");
    ClusterClient::new(&reactor.handle(), config, &[]).expect("client")
}

fn owner_of(c: &RedisCluster, key: &str) -> RedisServer {
    let reply = c.nodes[0].call(&["CLUSTER", "SLOTS"]).expect("slots");
    let table = SlotTable::from_cluster_slots(&reply, "127.0.0.1").expect("table");
    let node = table.master_of(key_slot(key.as_bytes())).expect("served");
    RedisServer::attach(node.port)
}

fn text(v: Value) -> String {
    String::from_utf8_lossy(v.as_bytes().expect("bulk")).into_owned()
}

fn cluster() -> RedisCluster {
    RedisCluster::start(3, 1).expect("redis-server and redis-cli are needed for this test")
}

#[test]
fn slots_tables_and_redirections_agree_with_a_real_cluster() {
    let c = cluster();
    let node = &c.nodes[0];
    let mut keys: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"foo".to_vec(),
        b"{user1000}.following".to_vec(),
        b"foo{}{bar}".to_vec(),
        b"foo{{bar}}zap".to_vec(),
        b"foo{bar}{zap}".to_vec(),
        b"{}".to_vec(),
        b"}{".to_vec(),
        "crawl:{quotes}:requests".as_bytes().to_vec(),
        "ünïcødé".as_bytes().to_vec(),
        vec![0, 255, 123, 1, 125, 7],
    ];
    keys.extend((0..200).map(|i| format!("quotes:requests:{i}").into_bytes()));
    for k in &keys {
        let theirs = node
            .call(&[b"CLUSTER".as_slice(), b"KEYSLOT", k])
            .expect("keyslot")
            .as_int()
            .expect("an integer");
        assert_eq!(
            i64::from(key_slot(k)),
            theirs,
            "{:?}",
            String::from_utf8_lossy(k)
        );
    }

    let reply = node.call(&["CLUSTER", "SLOTS"]).expect("cluster slots");
    let table = SlotTable::from_cluster_slots(&reply, "127.0.0.1").expect("a slot table");
    assert!(table.is_complete());
    assert_eq!(table.masters.len(), 3);
    for i in 0..30 {
        let key = format!("k{i}");
        let slot = key_slot(key.as_bytes());
        let owner = table.master_of(slot).expect("served");
        let right = RedisServer::attach(owner.port);
        assert_eq!(
            right.call(&["SET", &key, "v"]).expect("set"),
            Value::Simple("OK".into())
        );
        let wrong = table
            .masters
            .iter()
            .find(|m| *m != owner)
            .expect("another master");
        let reply = RedisServer::attach(wrong.port)
            .call(&["GET", &key])
            .expect("a reply");
        let Value::Error(message) = reply else {
            panic!("{key} answered by a master that does not own it: {reply:?}");
        };
        assert_eq!(
            redirect(&message),
            Some(Redirect::Moved(slot, owner.clone())),
            "{message}"
        );
    }
}

#[test]
fn the_client_routes_by_slot_and_loads_scripts_on_every_master() {
    let c = cluster();
    let mut reactor = Reactor::new().expect("reactor");
    let cl = client(&reactor, &c);
    let script = Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1])");
    cl.load_script(&script);
    for i in 0..60 {
        let key = format!("key:{i}");
        let set = cl.command(&["SET", key.as_str(), &i.to_string()]);
        assert_eq!(
            run(&mut reactor, set).expect("set"),
            Value::Simple("OK".into())
        );
        let incr = cl.eval(&script, &[key.as_str()], &["100"]);
        assert_eq!(
            run(&mut reactor, incr).expect("eval"),
            Value::Integer(i + 100)
        );
        // Stored on the master that owns the slot, read there without a redirection.
        assert_eq!(
            text(owner_of(&c, &key).call(&["GET", &key]).expect("get")),
            (i + 100).to_string()
        );
    }
    assert_eq!(cl.masters().len(), 3);
    assert_eq!(cl.redirects(), 0);
    // Every master got some of the 60 keys.
    for m in cl.masters() {
        let n = RedisServer::attach(m.port)
            .call(&["DBSIZE"])
            .expect("dbsize")
            .as_int()
            .expect("int");
        assert!(n > 0, "master {m} holds no key");
    }
}

#[test]
fn ask_and_moved_are_followed_through_a_slot_migrated_by_hand() {
    let c = cluster();
    let mut reactor = Reactor::new().expect("reactor");
    let cl = client(&reactor, &c);
    let (k1, k2) = ("{moving}:one", "{moving}:two");
    let slot = key_slot(k1.as_bytes()).to_string();
    for (k, v) in [(k1, "1"), (k2, "2")] {
        let d = cl.command(&["SET", k, v]);
        run(&mut reactor, d).expect("set");
    }
    let from = owner_of(&c, k1);
    let masters = cl.masters();
    let to_addr = masters
        .iter()
        .find(|m| m.port != from.port())
        .expect("another master")
        .clone();
    let to = RedisServer::attach(to_addr.port);
    let id = |s: &RedisServer| text(s.call(&["CLUSTER", "MYID"]).expect("myid"));
    let (from_id, to_id) = (id(&from), id(&to));
    let ok = |r: Result<Value, String>| assert_eq!(r, Ok(Value::Simple("OK".into())));
    ok(to.call(&["CLUSTER", "SETSLOT", &slot, "IMPORTING", &from_id]));
    ok(from.call(&["CLUSTER", "SETSLOT", &slot, "MIGRATING", &to_id]));
    let port = to_addr.port.to_string();
    ok(from.call(&["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS", k1]));

    // One key moved, one not: the old master answers for the second and sends the
    // client to the new one (ASK) for the first.
    let d = cl.command(&["GET", k1]);
    assert_eq!(text(run(&mut reactor, d).expect("get one")), "1");
    let d = cl.command(&["GET", k2]);
    assert_eq!(text(run(&mut reactor, d).expect("get two")), "2");
    assert_eq!(cl.redirects(), 1);

    // The rest moves and the slot is the new master's: MOVED, and the table follows.
    ok(from.call(&["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS", k2]));
    for m in &masters {
        ok(RedisServer::attach(m.port).call(&["CLUSTER", "SETSLOT", &slot, "NODE", &to_id]));
    }
    let d = cl.command(&["GET", k2]);
    assert_eq!(text(run(&mut reactor, d).expect("get two again")), "2");
    assert_eq!(cl.redirects(), 2);
    let d = cl.command(&["SET", k1, "one"]);
    run(&mut reactor, d).expect("set after the move");
    assert_eq!(cl.redirects(), 2, "the table was not updated by the MOVED");
    assert_eq!(text(to.call(&["GET", k1]).expect("get")), "one");
}

#[test]
fn a_cluster_that_is_down_is_waited_for() {
    // No replicas: a dead master takes the cluster down (CLUSTERDOWN everywhere) until
    // it comes back.
    let mut c = RedisCluster::start(3, 0).expect("redis-server and redis-cli");
    let mut reactor = Reactor::new().expect("reactor");
    let cl = client(&reactor, &c);
    let d = cl.command(&["SET", "warm", "1"]);
    run(&mut reactor, d).expect("the table is loaded");
    let masters = cl.masters();
    let victim = c
        .nodes
        .iter()
        .position(|n| n.port() == masters[0].port)
        .expect("a node");
    let survivor = masters[1].port;
    // A key on a master that stays up.
    let key = (0..1000)
        .map(|i| format!("k{i}"))
        .find(|k| owner_of(&c, k).port() == survivor)
        .expect("a key on the survivor");
    c.nodes[victim].kill();
    let state = || RedisServer::attach(survivor).call_text(&["CLUSTER", "INFO"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !state().contains("cluster_state:fail") {
        assert!(
            std::time::Instant::now() < deadline,
            "the cluster never went down"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let waiting = cl.command(&["SET", key.as_str(), "after"]);
    let tick = Deferred::<()>::new();
    let t = tick.clone();
    let _ = reactor.call_later(2.0, move || {
        let _ = t.callback(());
    });
    run(&mut reactor, tick).expect("ticks");
    assert!(
        !waiting.has_result(),
        "a command went through a cluster that is down"
    );
    c.nodes[victim].restart().expect("the master restarts");
    assert_eq!(
        run(&mut reactor, waiting).expect("set once the cluster is back"),
        Value::Simple("OK".into())
    );
    assert_eq!(
        text(
            RedisServer::attach(survivor)
                .call(&["GET", &key])
                .expect("get")
        ),
        "after"
    );
}

#[test]
fn a_masters_failover_is_followed() {
    let mut c = cluster();
    let mut reactor = Reactor::new().expect("reactor");
    let cl = client(&reactor, &c);
    let keys: Vec<String> = (0..50).map(|i| format!("fo:{i}")).collect();
    for k in &keys {
        let d = cl.command(&["SET", k.as_str(), k.as_str()]);
        run(&mut reactor, d).expect("set");
    }
    let dead_port = owner_of(&c, &keys[0]).port();
    let survivor = cl
        .masters()
        .into_iter()
        .find(|m| m.port != dead_port)
        .expect("another master")
        .port;
    let victim = c
        .nodes
        .iter()
        .position(|n| n.port() == dead_port)
        .expect("the master's node");
    // Let the replicas catch up before the kill: what was acknowledged is there.
    // (`WAIT` counts only its own connection's writes, so the offsets are compared.)
    c.wait_replicas_synced(3, std::time::Duration::from_secs(30))
        .expect("the replicas catch up");
    c.nodes[victim].kill();
    // Sent while the master is dead and before its replica is promoted.
    let d = cl.command(&["SET", keys[0].as_str(), "after"]);
    assert_eq!(
        run(&mut reactor, d).expect("set after the failover"),
        Value::Simple("OK".into())
    );
    // The slot has a new master, and every key written before is read from it.
    let reply = RedisServer::attach(survivor)
        .call(&["CLUSTER", "SLOTS"])
        .expect("slots");
    let table = SlotTable::from_cluster_slots(&reply, "127.0.0.1").expect("table");
    let new_owner = table
        .master_of(key_slot(keys[0].as_bytes()))
        .expect("served");
    assert_ne!(new_owner.port, dead_port, "no failover happened");
    for k in &keys[1..] {
        let d = cl.command(&["GET", k.as_str()]);
        let v = run(&mut reactor, d).expect("get");
        assert_eq!(v.as_bytes(), Some(k.as_bytes()), "{k} after the failover");
    }
    let d = cl.command(&["GET", keys[0].as_str()]);
    assert_eq!(text(run(&mut reactor, d).expect("get")), "after");
}

/// `CLUSTER SLOTS` calls `port`'s server has answered.
fn slots_asked(port: u16) -> u64 {
    util::redis::command_calls(&RedisServer::attach(port), "cluster|slots")
}

/// After a `MOVED` every client asks for the slot table again, as a fleet's workers all
/// do after a reshard: nine clients of one process ask the three masters three times
/// each (in turn, from a random start), not nine times the first master of the table.
#[test]
fn the_refreshes_after_a_moved_spread_over_the_masters() {
    let c = cluster();
    let mut reactor = Reactor::new().expect("reactor");
    let clients: Vec<ClusterClient> = (0..9).map(|_| client(&reactor, &c)).collect();
    let key = "{spread}:k";
    for cl in &clients {
        let d = cl.command(&["GET", key]);
        run(&mut reactor, d).expect("get");
    }
    let masters = clients[0].masters();
    assert_eq!(masters.len(), 3);

    // The key's slot (no key in it) becomes another master's.
    let from = owner_of(&c, key);
    let to = masters
        .iter()
        .find(|m| m.port != from.port())
        .expect("another master");
    let to_id = text(
        RedisServer::attach(to.port)
            .call(&["CLUSTER", "MYID"])
            .expect("myid"),
    );
    let slot = key_slot(key.as_bytes()).to_string();
    let before: Vec<u64> = masters.iter().map(|m| slots_asked(m.port)).collect();
    for m in &masters {
        let r = RedisServer::attach(m.port).call(&["CLUSTER", "SETSLOT", &slot, "NODE", &to_id]);
        assert_eq!(r, Ok(Value::Simple("OK".into())));
    }
    for cl in &clients {
        let d = cl.command(&["GET", key]);
        run(&mut reactor, d).expect("get after the move");
        assert_eq!(cl.redirects(), 1, "one MOVED each");
    }
    // The refreshes the MOVEDs started finish on the reactor.
    let asked = |before: &[u64]| -> Vec<u64> {
        masters
            .iter()
            .zip(before)
            .map(|(m, b)| slots_asked(m.port) - b)
            .collect()
    };
    for _ in 0..100 {
        if asked(&before).iter().sum::<u64>() >= 9 {
            break;
        }
        let tick: Deferred<()> = Deferred::new();
        let fire = tick.clone();
        let _ = reactor.call_later(0.05, move || {
            let _ = fire.callback(());
        });
        run(&mut reactor, tick).expect("a tick");
    }
    assert_eq!(
        asked(&before),
        vec![3, 3, 3],
        "each master asked three times"
    );
}

/// `when_table` waits for the client's first slot table (asked once, whoever waits for
/// it) and fires at once when there is one: the masters are then known without a
/// `CLUSTER SLOTS` of the caller's own.
#[test]
fn when_table_waits_for_the_one_slot_table_the_client_asks_for() {
    let c = cluster();
    let mut reactor = Reactor::new().expect("reactor");
    let ports: Vec<u16> = c.nodes.iter().map(RedisServer::port).collect();
    let asked = || ports.iter().map(|p| slots_asked(*p)).sum::<u64>();
    let before = asked();
    let cl = client(&reactor, &c);
    assert!(cl.masters().is_empty(), "no table before the first ask");
    let (first, second) = (cl.when_table(), cl.when_table());
    run(&mut reactor, first).expect("a table");
    run(&mut reactor, second).expect("the same table");
    assert_eq!(cl.masters().len(), 3);
    let d = cl.when_table();
    assert!(d.is_called(), "a client with a table answers at once");
    assert_eq!(asked() - before, 1, "one CLUSTER SLOTS for both waiters");
    cl.close();
    let closed = cl.when_table();
    assert!(
        run(&mut reactor, closed).is_err(),
        "a closed client has no table to give"
    );
}
