//! Redis Sentinel, for real: a master, a replica and three sentinels, each a
//! `redis-server` on a free port in its own temp dir. The client finds the master
//! through the sentinels (a `redis+sentinel://` URL); a crawl whose master is killed
//! mid-crawl goes on with the promoted replica and fetches every page.

mod util;

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};
use trawl::client::redis::{RedisClient, RedisConfig, Value};
use trawl::crawl::Crawler;
use trawl::defer::Deferred;
use trawl::reactor::Reactor;
use trawl::testing::{FixtureServer, RedisServer, RedisServerOptions, run_within};
use util::live::{LiveSpider, Seen, crawl_with, follow_site, get, page_set};

/// A master, its replica and three sentinels watching it (quorum 2, a master is down
/// after 1 s without an answer).
struct Group {
    master: Option<RedisServer>,
    replica: RedisServer,
    sentinels: Vec<RedisServer>,
}

fn count(v: Result<Value, String>) -> usize {
    v.ok()
        .and_then(|v| v.as_array().map(<[Value]>::len))
        .unwrap_or(0)
}

/// One group at a time: five servers and a crawl each, on a 2-core machine, with
/// failovers timed in seconds.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn wait_until(what: &str, secs: u64, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !ok() {
        assert!(Instant::now() < deadline, "gave up waiting: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Group {
    fn start() -> Self {
        Self::start_with(&[])
    }

    /// With `args` for the master and the replica (e.g. `min-replicas-to-write`).
    fn start_with(args: &[&str]) -> Self {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        let master = RedisServer::start_with(RedisServerOptions {
            args: args.clone(),
            ..RedisServerOptions::default()
        })
        .expect("redis-server is needed for this test");
        let mut replica_args = args;
        replica_args.extend([
            "--replicaof".into(),
            "127.0.0.1".into(),
            master.port().to_string(),
        ]);
        let replica = RedisServer::start_with(RedisServerOptions {
            args: replica_args,
            ..RedisServerOptions::default()
        })
        .expect("the replica starts");
        let conf = format!(
            "sentinel monitor m 127.0.0.1 {} 2\n\
             sentinel down-after-milliseconds m 1000\n\
             sentinel failover-timeout m 4000\n\
             sentinel parallel-syncs m 1\n",
            master.port()
        );
        let sentinels: Vec<RedisServer> = (0..3)
            .map(|_| {
                RedisServer::start_with(RedisServerOptions {
                    sentinel: Some(conf.clone()),
                    ..RedisServerOptions::default()
                })
                .expect("a sentinel starts (redis-server --sentinel)")
            })
            .collect();
        wait_until("the replica in sync", 20, || {
            replica
                .call_text(&["INFO", "replication"])
                .contains("master_link_status:up")
        });
        // Each sentinel must know the other two (to elect a leader) and the replica
        // (to promote it).
        wait_until(
            "the sentinels to find each other and the replica",
            30,
            || {
                sentinels.iter().all(|s| {
                    count(s.call(&["SENTINEL", "sentinels", "m"])) == 2
                        && count(s.call(&["SENTINEL", "replicas", "m"])) == 1
                })
            },
        );
        Self {
            master: Some(master),
            replica,
            sentinels,
        }
    }

    fn url(&self, master: &str) -> String {
        let hosts: Vec<String> = self
            .sentinels
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port()))
            .collect();
        format!("redis+sentinel://{}/{master}/0", hosts.join(","))
    }
}

fn run_until<T: 'static>(reactor: &mut Reactor, d: &Deferred<T>) {
    run_within(reactor, d, 120.0, "the crawl through the sentinels");
}

#[test]
fn a_client_finds_the_master_through_the_sentinels() {
    let _serial = serial();
    let g = Group::start();
    let mut reactor = Reactor::new().expect("reactor");
    // The first sentinel listed is down: the next one answers.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let dead_port = dead.local_addr().expect("addr").port();
    drop(dead);
    let url = g.url("m").replacen(
        "redis+sentinel://",
        &format!("redis+sentinel://127.0.0.1:{dead_port},"),
        1,
    );
    let client = RedisClient::new(
        &reactor.handle(),
        RedisConfig::from_url(&url).expect("a sentinel URL"),
    )
    .expect("client");
    let d = client.command(&["SET", "through-sentinel", "yes"]);
    run_until(&mut reactor, &d);
    assert!(
        matches!(d.take_result(), Some(Ok(_))),
        "the SET through the sentinels failed"
    );
    let master = g.master.as_ref().expect("master");
    assert_eq!(
        master.call(&["GET", "through-sentinel"]).expect("get"),
        Value::Bulk(b"yes".to_vec())
    );

    // A master no sentinel monitors: the commands wait (as in an outage) and the
    // client says why.
    let lost = RedisClient::new(
        &reactor.handle(),
        RedisConfig::from_url(&g.url("nosuchmaster")).expect("url"),
    )
    .expect("client");
    let waiting = lost.command(&["PING"]);
    let tick = Deferred::<()>::new();
    let t = tick.clone();
    let _ = reactor.call_later(1.0, move || {
        let _ = t.callback(());
    });
    run_until(&mut reactor, &tick);
    assert!(!waiting.has_result());
    let why = lost.last_error().unwrap_or_default();
    assert!(
        why.contains("no sentinel gave the address of master \"nosuchmaster\""),
        "{why}"
    );
}

/// A crawl through the Redis scheduler, pipeline and stats collector at `url`.
fn crawl_settings(url: &str) -> Vec<(&'static str, Json)> {
    vec![
        ("REDIS_URL", url.into()),
        ("SCHEDULER", "trawl.RedisScheduler".into()),
        ("STATS_CLASS", "trawl.RedisStatsCollector".into()),
        ("ITEM_PIPELINES", json!({"trawl.RedisPipeline": 300})),
        ("ROBOTSTXT_OBEY", false.into()),
        ("SCHEDULER_PERSIST", true.into()),
    ]
}

/// What a crawl through a failover left: it finished, the replica is the master now,
/// every page was fetched and at most 32 twice (what was leased or in flight at the
/// failover). Returns the pages, the pages fetched twice and the items on the new
/// master.
fn after_failover(
    g: &Group,
    fixture: &FixtureServer,
    c: &Crawler,
    seen: &Seen,
) -> (usize, usize, i64) {
    assert_eq!(c.stats.get_value("finish_reason"), Some("finished".into()));
    let role = g.replica.call(&["ROLE"]).expect("role");
    assert_eq!(
        role.as_array()
            .and_then(|a| a.first())
            .and_then(Value::as_bytes),
        Some(&b"master"[..]),
        "the failover did not happen: {role:?}"
    );
    let paths = seen.paths();
    let unique: HashSet<&String> = paths.iter().collect();
    assert_eq!(page_set(&paths), fixture.site().expected_crawl().0);
    let twice = paths.len() - unique.len();
    assert!(twice <= 32, "{twice} pages fetched twice");
    let items = g
        .replica
        .call(&["LLEN", "live:items"])
        .expect("llen")
        .as_int()
        .expect("an integer");
    (unique.len(), twice, items)
}

#[test]
fn a_crawl_survives_its_master_killed_and_a_replica_promoted() {
    let _serial = serial();
    let mut g = Group::start();
    let fixture = FixtureServer::with_pages(300).expect("fixture server");
    let url = g.url("m");
    let master = Rc::new(RefCell::new(g.master.take()));
    let killer = master.clone();
    let mut n = 0;
    let spider = LiveSpider::new(vec![get(&fixture.url("/index.html"))]).follow(move |r| {
        n += 1;
        if n == 30
            && let Some(mut m) = killer.borrow_mut().take()
        {
            // SIGKILL: no shutdown, no last save. The sentinels see it down after
            // 1 s, elect a leader and promote the replica.
            m.kill();
        }
        follow_site(r)
    });
    let settings = crawl_settings(&url);
    let started = Instant::now();
    let (c, seen) = crawl_with(spider, &settings, trawl::distributed::register);
    assert!(master.borrow().is_none(), "the master was never killed");
    let (pages, twice, items) = after_failover(&g, &fixture, &c, &seen);
    // Nothing the old master had acknowledged was lost: its last writes reached the
    // replica before the kill.
    assert!(items >= pages as i64, "{items} items for {pages} pages");
    eprintln!(
        "failover crawl: {pages} pages, {twice} fetched twice, {items} items, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn a_crawl_follows_a_manual_failover_whose_old_master_becomes_a_replica() {
    let _serial = serial();
    // Without `min-replicas-to-write` the old master takes writes until the sentinels
    // demote it, after the replica was promoted, and Redis drops them (the loss DESIGN
    // describes). With it, the old master refuses them (NOREPLICAS) as soon as its
    // replica leaves, and the client sends them again to the new master: what can be
    // lost is what was on the replication link at that instant.
    let g = Group::start_with(&[
        "--min-replicas-to-write",
        "1",
        "--min-replicas-max-lag",
        "10",
    ]);
    let fixture = FixtureServer::with_pages(300).expect("fixture server");
    let sentinel_port = g.sentinels[0].port();
    let replica_port = g.replica.port();
    let mut n = 0;
    let spider = LiveSpider::new(vec![get(&fixture.url("/index.html"))]).follow(move |r| {
        n += 1;
        if n == 30 {
            // The old master stays up and is turned into a replica: its writes are
            // refused with READONLY until the client asks the sentinels again. The
            // crawl waits here until the replica is promoted (a release build would
            // otherwise finish on the old master first).
            let s = RedisServer::attach(sentinel_port);
            s.call(&["SENTINEL", "FAILOVER", "m"]).expect("failover");
            let replica = RedisServer::attach(replica_port);
            wait_until("the replica promoted", 30, || {
                replica
                    .call(&["ROLE"])
                    .ok()
                    .and_then(|v| v.as_array().and_then(|a| a.first().cloned()))
                    .and_then(|v| v.as_bytes().map(<[u8]>::to_vec))
                    .is_some_and(|role| role == b"master")
            });
        }
        follow_site(r)
    });
    let settings = crawl_settings(&g.url("m"));
    let (c, seen) = crawl_with(spider, &settings, trawl::distributed::register);
    let (pages, _, items) = after_failover(&g, &fixture, &c, &seen);
    // Pages are all fetched. Items can still be lost in the instant of the promotion:
    // writes the old master ran just before its replica stopped replicating, still on
    // the link (asynchronous replication). Without min-replicas-to-write the window is
    // the whole failover (175 of 304 items lost in one measured run); with it, a few.
    let lost = pages as i64 - items;
    eprintln!("manual failover: {pages} pages, {items} items ({lost} lost)");
    assert!(lost <= 16, "{lost} items lost for {pages} pages");
}

/// Sends `signal` (`-STOP`, `-CONT`) to the server.
fn signal(server: &mut RedisServer, signal: &str) {
    let pid = server.pid().expect("the server runs");
    let ok = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status();
    assert!(ok.is_ok_and(|s| s.success()), "kill {signal} {pid}");
}

#[test]
fn a_frozen_master_is_left_when_the_sentinels_announce_its_failover() {
    let _serial = serial();
    let mut g = Group::start();
    let mut reactor = Reactor::new().expect("reactor");
    let mut config = RedisConfig::from_url(&g.url("m")).expect("a sentinel URL");
    // The connection alone would wait an hour for the frozen master's reply: only
    // the sentinels' `+switch-master` can move the client in time.
    config.command_timeout = 3600.0;
    let client = RedisClient::new(&reactor.handle(), config).expect("client");
    let d = client.command(&["SET", "before", "1"]);
    run_until(&mut reactor, &d);
    assert!(matches!(d.take_result(), Some(Ok(_))));
    // Time for the watch to subscribe (loopback: milliseconds).
    let tick = Deferred::<()>::new();
    let t = tick.clone();
    let _ = reactor.call_later(1.0, move || {
        let _ = t.callback(());
    });
    run_until(&mut reactor, &tick);

    // SIGSTOP: the master keeps its connections open and answers nothing; the
    // sentinels see it down after 1 s and promote the replica.
    assert_eq!(
        client.counters().master_switches,
        0,
        "no switch before the failover"
    );
    let mut master = g.master.take().expect("master");
    signal(&mut master, "-STOP");
    let started = Instant::now();
    let d = client.command(&["SET", "after", "2"]);
    run_within(&mut reactor, &d, 60.0, "the SET sent to the frozen master");
    let r = d.take_result();
    signal(&mut master, "-CONT");
    assert!(matches!(r, Some(Ok(_))), "{r:?}");
    assert_eq!(
        g.replica.call(&["GET", "after"]).expect("get"),
        Value::Bulk(b"2".to_vec()),
        "the SET ran on the promoted replica"
    );
    let c = client.counters();
    assert!(c.master_switches >= 1, "{c:?}");
    eprintln!(
        "frozen master: the SET answered by the new master after {:.1} s ({} switch, {} retried)",
        started.elapsed().as_secs_f64(),
        c.master_switches,
        c.retried
    );
}
