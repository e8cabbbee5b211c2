//! Crawls sharded over a real Redis Cluster (3 masters, with or without a replica
//! each, on free ports in temp dirs): `--redis` pointed at one node finds the cluster,
//! the crawl's queue and dupefilter are split into one shard per master, every page is
//! fetched once and every master holds a shard. Then the failure cases: a worker
//! SIGKILLed (its leases in every shard re-queued), a worker with another
//! `SCHEDULER_SHARDS` refused, slots resharded mid-crawl (`MOVED` / `ASK`), a master
//! killed and its replica promoted, and the cluster down for 5 s. "Mid-crawl" is a
//! page count, never a fixed sleep.

mod util;

use std::cell::RefCell;
use std::collections::HashSet;
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};
use trawl::client::redis::Value;
use trawl::crawl::{Priority, Registry, Settings, run_spider_with};
use trawl::distributed::scheduler::shard_tag;
use trawl::proto::cluster::{SlotTable, key_slot};
use trawl::testing::{FixtureOptions, FixtureServer, RedisCluster, RedisServer};
use util::live::{LiveSpider, Seen, crawl_with, follow_site, get, page_set};
use util::process::finish;

fn cluster(replicas: usize) -> RedisCluster {
    // RUST_LOG=debug shows the workers' side of a failure.
    let _ = env_logger::builder().is_test(true).try_init();
    RedisCluster::start(3, replicas).expect("redis-server and redis-cli are needed for this test")
}

/// The node serving `key`'s slot now.
fn owner(c: &RedisCluster, key: &str) -> RedisServer {
    let node = c
        .nodes
        .iter()
        .find(|n| !n.call_text(&["CLUSTER", "INFO"]).is_empty())
        .expect("a live node");
    let reply = node.call(&["CLUSTER", "SLOTS"]).expect("slots");
    let table = SlotTable::from_cluster_slots(&reply, "127.0.0.1").expect("table");
    RedisServer::attach(
        table
            .master_of(key_slot(key.as_bytes()))
            .expect("served")
            .port,
    )
}

fn call(c: &RedisCluster, args: &[&str]) -> Value {
    owner(c, args[1]).call(args).expect("a reply")
}

fn int(v: Value) -> i64 {
    v.as_int().expect("an integer")
}

/// The masters (by `ROLE`) among the live nodes.
fn masters(c: &RedisCluster) -> Vec<RedisServer> {
    c.nodes
        .iter()
        .filter(|n| {
            n.call(&["ROLE"])
                .ok()
                .and_then(|r| r.as_array().and_then(|a| a.first().cloned()))
                .and_then(|v| v.as_bytes().map(<[u8]>::to_vec))
                .is_some_and(|r| r == b"master")
        })
        .map(|n| RedisServer::attach(n.port()))
        .collect()
}

/// An in-process crawl through the Redis components at `url`.
fn settings(url: &str, extra: &[(&'static str, Json)]) -> Vec<(&'static str, Json)> {
    let mut s = vec![
        ("REDIS_URL", url.into()),
        ("SCHEDULER", "trawl.RedisScheduler".into()),
        ("STATS_CLASS", "trawl.RedisStatsCollector".into()),
        ("ITEM_PIPELINES", json!({"trawl.RedisPipeline": 300})),
        ("ROBOTSTXT_OBEY", false.into()),
        ("SCHEDULER_PERSIST", true.into()),
        ("REDIS_PARAMS", json!({"socket_timeout": 3})),
    ];
    s.extend(extra.iter().cloned());
    s
}

/// `CLUSTER SLOTS` calls the masters have answered.
fn slot_tables_asked(c: &RedisCluster) -> u64 {
    masters(c)
        .iter()
        .map(|m| util::redis::command_calls(m, "cluster|slots"))
        .sum()
}

/// Every page of the site fetched, at most `twice` of them twice; returns (pages,
/// pages fetched twice).
#[track_caller]
fn all_pages(fixture: &FixtureServer, seen: &Seen, twice: usize) -> (usize, usize) {
    let paths = seen.paths();
    let unique: HashSet<&String> = paths.iter().collect();
    assert_eq!(page_set(&paths), fixture.site().expected_crawl().0);
    let again = paths.len() - unique.len();
    assert!(again <= twice, "{again} pages fetched twice");
    (unique.len(), again)
}

/// A spider over the whole site that runs `at` once, at the `n`th page.
fn spider_with(fixture: &FixtureServer, n: usize, at: impl FnOnce() + 'static) -> LiveSpider {
    let mut seen = 0;
    let mut at = Some(at);
    LiveSpider::new(vec![get(&fixture.url("/index.html"))]).follow(move |r| {
        seen += 1;
        if seen == n
            && let Some(f) = at.take()
        {
            f();
        }
        follow_site(r)
    })
}

#[test]
fn a_crawl_is_sharded_over_every_master() {
    let c = cluster(0);
    let fixture = FixtureServer::with_pages(300).expect("fixture server");
    let spider = spider_with(&fixture, usize::MAX, || {});
    let before = slot_tables_asked(&c);
    let (crawler, seen) = crawl_with(
        spider,
        &settings(&c.seed_url(), &[]),
        trawl::distributed::register,
    );
    assert_eq!(
        crawler.stats.get_value("finish_reason"),
        Some("finished".into())
    );
    assert_eq!(
        slot_tables_asked(&c) - before,
        2,
        "one slot table for each of the crawl's clients (the crawl's, the stats \
         collector's): the scheduler counts the masters in its client's"
    );
    let (pages, _) = all_pages(&fixture, &seen, 1);
    // The crawl's record: three shards, one per master (the default).
    let shards = call(&c, &["HGET", "live:requests:meta", "shards"]);
    assert_eq!(shards.as_bytes(), Some(&b"3"[..]));
    // Each shard's dupefilter holds its share of the fingerprints, on its own master.
    let mut total = 0;
    let mut owners = HashSet::new();
    for i in 0..3 {
        let key = format!("live:dupefilter:{{{}}}", shard_tag(i, 3));
        let n = int(call(&c, &["SCARD", &key]));
        assert!(n > 0, "shard {i} is empty");
        total += n;
        owners.insert(owner(&c, &key).port());
    }
    assert_eq!(owners.len(), 3, "the shards share a master");
    assert!(
        total as usize >= pages,
        "{total} fingerprints for {pages} pages"
    );
    for m in masters(&c) {
        assert!(
            int(m.call(&["DBSIZE"]).expect("dbsize")) > 0,
            "a master holds nothing"
        );
    }
    let items = int(call(&c, &["LLEN", "live:items"]));
    assert_eq!(items as usize, pages);
}

#[test]
fn fifo_and_lifo_queues_and_the_bloom_dupefilter_shard_too() {
    let c = cluster(0);
    let fixture = FixtureServer::with_pages(200).expect("fixture server");
    for (n, (class, filter)) in [
        ("fifo", "trawl.RedisBloomDupeFilter"),
        ("lifo", "trawl.RedisDupeFilter"),
    ]
    .into_iter()
    .enumerate()
    {
        let name = format!("crawl{n}");
        let extra = [
            ("SCHEDULER_QUEUE_CLASS", class.into()),
            ("DUPEFILTER_CLASS", filter.into()),
            ("BLOOMFILTER_CAPACITY", 100_000.into()),
            ("SCHEDULER_QUEUE_KEY", format!("{name}:requests").into()),
            (
                "SCHEDULER_DUPEFILTER_KEY",
                format!("{name}:dupefilter").into(),
            ),
            ("REDIS_ITEMS_KEY", format!("{name}:items").into()),
        ];
        let (crawler, seen) = crawl_with(
            spider_with(&fixture, usize::MAX, || {}),
            &settings(&c.seed_url(), &extra),
            trawl::distributed::register,
        );
        assert_eq!(
            crawler.stats.get_value("finish_reason"),
            Some("finished".into()),
            "{class}"
        );
        let (pages, _) = all_pages(&fixture, &seen, 1);
        assert_eq!(
            int(call(&c, &["LLEN", &format!("{name}:items")])) as usize,
            pages,
            "{class}"
        );
        let meta = format!("{name}:requests:meta");
        let mode = call(&c, &["HGET", &meta, "mode"]);
        assert_eq!(mode.as_bytes(), Some(class.as_bytes()), "{class}");
        if filter.contains("Bloom") {
            // The Bloom filter's blocks live with their shard.
            let key = format!("{name}:dupefilter:{{{}}}:count", shard_tag(0, 3));
            assert!(
                int(call(&c, &["GET", &key])
                    .as_bytes()
                    .map_or(Value::Integer(0), |b| {
                        Value::Integer(String::from_utf8_lossy(b).parse().unwrap_or(0))
                    }))
                    > 0
            );
        }
    }
}

#[test]
fn a_worker_starts_from_its_seed_list_while_the_url_node_is_down() {
    let mut c = cluster(1);
    let fixture = FixtureServer::with_pages(50).expect("fixture server");
    // A replica is down (the cluster still serves every slot): the URL names it, the
    // seed list another node.
    let replica = c
        .nodes
        .iter()
        .position(|n| n.call_text(&["INFO", "replication"]).contains("role:slave"))
        .expect("a replica");
    let down_url = c.nodes[replica].url(0);
    c.nodes[replica].kill();
    let other = masters(&c)[0].port();
    let extra = [("REDIS_CLUSTER_NODES", format!("127.0.0.1:{other}").into())];
    let (crawler, seen) = crawl_with(
        spider_with(&fixture, usize::MAX, || {}),
        &settings(&down_url, &extra),
        trawl::distributed::register,
    );
    assert_eq!(
        crawler.stats.get_value("finish_reason"),
        Some("finished".into())
    );
    let (pages, _) = all_pages(&fixture, &seen, 1);
    assert_eq!(int(call(&c, &["LLEN", "live:items"])) as usize, pages);
}

#[test]
fn a_worker_with_another_shard_count_is_refused() {
    let c = cluster(0);
    let fixture = FixtureServer::with_pages(20).expect("fixture server");
    let first = settings(&c.seed_url(), &[("SCHEDULER_SHARDS", 3.into())]);
    let (crawler, _) = crawl_with(
        spider_with(&fixture, usize::MAX, || {}),
        &first,
        trawl::distributed::register,
    );
    assert_eq!(
        crawler.stats.get_value("finish_reason"),
        Some("finished".into())
    );
    let mut st = Settings::new();
    st.set("LOGSTATS_INTERVAL", 0, Priority::Project);
    for (k, v) in settings(&c.seed_url(), &[("SCHEDULER_SHARDS", 4.into())]) {
        st.set(k, v, Priority::Project);
    }
    let mut registry = Registry::with_builtins();
    trawl::distributed::register(&mut registry);
    let spider = spider_with(&fixture, usize::MAX, || {});
    let err = match run_spider_with(Box::new(spider), st, registry) {
        Ok(c) => panic!(
            "a worker with 4 shards joined a 3-shard crawl: {:?}",
            c.stats.get_value("finish_reason")
        ),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("SCHEDULER_SHARDS = 4") && err.contains("has 3 shards"),
        "{err}"
    );
}

#[test]
fn a_crawl_follows_slots_resharded_under_it() {
    let c = cluster(0);
    let fixture = FixtureServer::with_pages(400).expect("fixture server");
    let ids: Vec<String> = masters(&c)
        .iter()
        .map(|m| m.call_text(&["CLUSTER", "MYID"]))
        .collect();
    let seed = c.nodes[0].port();
    let mover: Rc<RefCell<Option<std::thread::JoinHandle<String>>>> = Rc::default();
    let handle = mover.clone();
    let spider = spider_with(&fixture, 30, move || {
        let (from, to) = (ids[0].clone(), ids[1].clone());
        // Most of the first master's slots, with their keys, move while the crawl
        // runs: keys in migration answer ASK, moved slots MOVED.
        *handle.borrow_mut() = Some(std::thread::spawn(move || {
            let out = Command::new(std::env::var("TRAWL_REDIS_CLI").unwrap_or("redis-cli".into()))
                .args(["--cluster", "reshard", &format!("127.0.0.1:{seed}")])
                .args(["--cluster-from", &from, "--cluster-to", &to])
                .args(["--cluster-slots", "5000", "--cluster-yes"])
                .args(["--cluster-pipeline", "10"])
                .output()
                .expect("redis-cli runs");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .count()
                .to_string()
        }));
    });
    let (crawler, seen) = crawl_with(
        spider,
        &settings(&c.seed_url(), &[("CONCURRENT_REQUESTS", 4.into())]),
        trawl::distributed::register,
    );
    let moved = mover.borrow_mut().take().expect("the reshard ran").join();
    assert!(moved.is_ok(), "the reshard failed");
    assert_eq!(
        crawler.stats.get_value("finish_reason"),
        Some("finished".into())
    );
    let (pages, _) = all_pages(&fixture, &seen, 1);
    assert_eq!(int(call(&c, &["LLEN", "live:items"])) as usize, pages);
    // The first shard's slot changed hands.
    let key = format!("live:requests:{{{}}}:meta", shard_tag(0, 3));
    assert_ne!(owner(&c, &key).port(), masters(&c)[0].port());
}

#[test]
fn a_crawl_survives_a_master_killed_and_its_replica_promoted() {
    let mut c = cluster(1);
    let fixture = FixtureServer::with_pages(300).expect("fixture server");
    let key = format!("live:requests:{{{}}}", shard_tag(1, 3));
    let victim_port = owner(&c, &key).port();
    let victim = c
        .nodes
        .iter()
        .position(|n| n.port() == victim_port)
        .expect("the master's node");
    let node = Rc::new(RefCell::new(Some(std::mem::replace(
        &mut c.nodes[victim],
        RedisServer::attach(victim_port),
    ))));
    let killer = node.clone();
    let spider = spider_with(&fixture, 30, move || {
        if let Some(mut m) = killer.borrow_mut().take() {
            m.kill();
        }
    });
    let started = Instant::now();
    let (crawler, seen) = crawl_with(
        spider,
        &settings(&c.seed_url(), &[]),
        trawl::distributed::register,
    );
    assert!(node.borrow().is_none(), "the master was never killed");
    assert_eq!(
        crawler.stats.get_value("finish_reason"),
        Some("finished".into())
    );
    // What the dead master held and had not replicated is fetched again: at most what
    // was leased or in flight (CONCURRENT_REQUESTS 16 by default, twice).
    let (pages, twice) = all_pages(&fixture, &seen, 32);
    assert_ne!(owner(&c, &key).port(), victim_port, "no failover happened");
    let items = int(call(&c, &["LLEN", "live:items"]));
    let lost = pages as i64 - items.min(pages as i64);
    eprintln!(
        "cluster failover: {pages} pages, {twice} fetched twice, {items} items ({lost} lost), \
         {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(lost <= 16, "{lost} items lost");
}

#[test]
fn a_crawl_waits_out_the_cluster_down_for_5_seconds() {
    let c = cluster(0);
    let fixture = FixtureServer::with_pages(300).expect("fixture server");
    let port = masters(&c)[2].port();
    let node = c
        .nodes
        .iter()
        .position(|n| n.port() == port)
        .expect("a master");
    let pid = c.nodes[node].pid().expect("started here");
    let thaw: Rc<RefCell<Option<std::thread::JoinHandle<()>>>> = Rc::default();
    let t = thaw.clone();
    let spider = spider_with(&fixture, 30, move || {
        // A master that hangs: after cluster-node-timeout (2 s) the others mark it
        // failed and, with no replica to promote, the whole cluster refuses commands
        // (CLUSTERDOWN) until it is back, 5 s after it stopped.
        let ok = Command::new("kill")
            .args(["-STOP", &pid.to_string()])
            .status();
        assert!(ok.is_ok_and(|s| s.success()), "SIGSTOP");
        *t.borrow_mut() = Some(std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(5));
            let _ = Command::new("kill")
                .args(["-CONT", &pid.to_string()])
                .status();
        }));
    });
    let started = Instant::now();
    let (crawler, seen) = crawl_with(
        spider,
        &settings(&c.seed_url(), &[]),
        trawl::distributed::register,
    );
    let thawed = thaw
        .borrow_mut()
        .take()
        .expect("the master was never frozen");
    let _ = thawed.join();
    assert_eq!(
        crawler.stats.get_value("finish_reason"),
        Some("finished".into())
    );
    let (pages, _) = all_pages(&fixture, &seen, 1);
    // Every item is there. Commands the frozen master held past `socket_timeout` (3 s
    // here) were sent again on a new connection, and the thawed master then ran the
    // first copies too: at-least-once, so some items may be there twice.
    let items = int(call(&c, &["LLEN", "live:items"])) as usize;
    assert!(items >= pages, "{items} items for {pages} pages");
    eprintln!(
        "cluster down for 5 s: {pages} pages, {items} items, in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// A `trawl crawl --redis` worker process against the cluster.
fn worker(srv: &FixtureServer, url: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_trawl"))
        .args(["crawl", &srv.url("/index.html"), "--same-domain"])
        .args(["--redis", url, "--name", "w", "-L", "INFO"])
        .args([
            "-s",
            "CONCURRENT_REQUESTS=4",
            "-s",
            "MAX_IDLE_TIME_BEFORE_CLOSE=2",
        ])
        .args(["-s", "REDIS_LEASE_TIMEOUT=60"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn trawl")
}

#[test]
fn three_workers_crawl_3000_pages_over_the_cluster_and_one_is_killed() {
    let c = cluster(0);
    let srv = FixtureServer::start(FixtureOptions {
        pages: 3000,
        record: true,
        ..FixtureOptions::default()
    })
    .expect("fixture server");
    let url = c.seed_url();
    let workers: Vec<Child> = (0..3).map(|_| worker(&srv, &url)).collect();
    assert!(
        srv.stats().wait_for_requests(900, Duration::from_secs(60)),
        "the crawl did not start"
    );
    let mut workers = workers.into_iter();
    let mut victim = workers.next().expect("three");
    let pid = victim.id().to_string();
    victim.kill().expect("SIGKILL");
    let _ = victim.wait();
    let fetched_at_kill = srv.stats().requests();
    // What it held, shard by shard; its deadline moved to the past in each, so the
    // others take its leases back at their next pop.
    let mut held = 0;
    for i in 0..3 {
        let q = format!("w:requests:{{{}}}", shard_tag(i, 3));
        let workers_key = format!("{q}:workers");
        let ids = call(&c, &["ZRANGE", &workers_key, "0", "-1"]);
        let id = ids
            .as_array()
            .expect("array")
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes().expect("bulk")).into_owned())
            .find(|id| id.split(':').nth(1) == Some(pid.as_str()))
            .expect("the killed worker is registered in every shard");
        let leases = format!("{q}:leases:{id}");
        held += int(owner(&c, &leases)
            .call(&["EVAL", util::redis::LEASES_HELD, "1", &leases])
            .expect("a reply"));
        call(&c, &["ZADD", &workers_key, "XX", "CH", "0", &id]);
    }
    for w in workers {
        let (code, log) = finish(w, 180);
        assert_eq!(code, 0, "{log}");
    }
    assert!(fetched_at_kill < 3000, "the kill came after the crawl");
    let mut fetched: std::collections::HashMap<String, u32> = Default::default();
    for (t, n) in srv.stats().targets() {
        if t != "/robots.txt" {
            *fetched.entry(t).or_default() += n;
        }
    }
    let expected = srv.site().expected_crawl().0;
    let got: std::collections::BTreeSet<String> =
        page_set(&fetched.keys().cloned().collect::<Vec<_>>());
    assert_eq!(got, expected, "the workers' fetches");
    // Each page once, the start URL once more per worker (it bypasses the
    // dupefilter), and the killed worker's leases again.
    let extra: i64 = fetched
        .iter()
        .map(|(p, n)| i64::from(*n) - if p == "/index.html" { 3 } else { 1 })
        .filter(|e| *e > 0)
        .sum();
    assert!(
        extra <= held,
        "{extra} pages fetched again, the killed worker held {held}"
    );
    // The last worker out deleted the crawl (SCHEDULER_PERSIST is off): every shard's
    // queue and dupefilter, the record, then the stats; the items stay.
    for i in 0..3 {
        let t = shard_tag(i, 3);
        for key in [
            format!("w:requests:{{{t}}}"),
            format!("w:dupefilter:{{{t}}}"),
        ] {
            assert_eq!(int(call(&c, &["EXISTS", &key])), 0, "{key} is left");
        }
    }
    assert_eq!(int(call(&c, &["EXISTS", "w:requests:meta"])), 0);
    assert_eq!(int(call(&c, &["EXISTS", "w:stats"])), 0);
    let items = int(call(&c, &["LLEN", "w:items"]));
    assert!(
        items as usize >= expected.len(),
        "{items} items for {} pages",
        expected.len()
    );
    eprintln!("killed at {fetched_at_kill} fetches holding {held} leases; {extra} refetched");
}
