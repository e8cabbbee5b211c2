//! Fleets against real Redis servers, through the load generator
//! (`testing::redis_load`: simulated workers with the real scheduler and pipeline, no
//! fetching). The prefilter: a fleet whose links other workers mostly met first asks
//! the dupefilter about them (`SMISMEMBER`) before sending the requests, and still
//! processes every page exactly once, stores every page once and acknowledges every
//! lease; a worker alone meets its duplicates in its seen cache and does not
//! prefilter. `REDIS_ITEMS_SHARDS`: a cluster's items spread over lists on every
//! master, and the settings it refuses. A throttled fleet (pages completing one by
//! one): pops only below the buffer's low-water mark, and `REDIS_FLUSH_DELAY` batching
//! its writes. A fast fleet: pops that go alone while the queue holds enough, the
//! writes keeping to `REDIS_FLUSH_DELAY`. On a cluster each master gets a share of a
//! fleet's write calls, not as many as one server. Items riding the scheduler's
//! writes: a batch that has waited its delay goes to the list of the shard the
//! scheduler writes to, in the same write (the masters read a fleet's commands fewer
//! times than when every push goes alone); one that no write takes goes alone.

use std::rc::Rc;

use serde_json::json;
use trawl::client::redis::Value;
use trawl::crawl::context::CrawlContext;
use trawl::crawl::pipeline::{ItemOutcome, ItemPipeline};
use trawl::crawl::stats::MemoryStatsCollector;
use trawl::crawl::{Item, Priority, Settings};
use trawl::distributed::{RedisPipeline, shared_client};
use trawl::reactor::Reactor;
use trawl::testing::redis_load::{LoadReport, LoadSite, run, run_with};
use trawl::testing::{RedisCluster, RedisServer};

const SITE: LoadSite = LoadSite {
    pages: 3_000,
    links: 17,
    items: 2,
    fetch_delay: 0.0,
};

fn stat(r: &LoadReport, key: &str) -> i64 {
    r.stats.get(key).copied().unwrap_or(0)
}

/// Every page processed once, each stored once, every link accounted for (stored or
/// filtered), the items all there and nothing left leased.
fn check(srv: &RedisServer, r: &LoadReport) {
    check_counts(r);
    let items = srv.call(&["LLEN", "load:items"]).expect("llen");
    assert_eq!(items, Value::Integer(SITE.pages as i64 * SITE.items as i64));
}

fn check_counts(r: &LoadReport) {
    check_site(r, SITE);
}

fn check_site(r: &LoadReport, site: LoadSite) {
    assert_eq!((r.pages, r.distinct), (site.pages, site.pages), "{r:?}");
    let pages = site.pages as i64;
    assert_eq!(stat(r, "scheduler/enqueued/redis"), pages, "{r:?}");
    // The seed and every page's links: stored, or filtered (by a seen cache, the
    // prefilter or the script).
    let links = 1 + pages * site.links as i64;
    assert_eq!(
        stat(r, "scheduler/enqueued/redis") + stat(r, "dupefilter/filtered"),
        links,
        "{r:?}"
    );
    assert_eq!(stat(r, "scheduler/redis/requeued"), 0, "{r:?}");
    // Every lease was acknowledged before its worker closed: CLOSE put none back.
    assert_eq!(stat(r, "scheduler/redis/returned"), 0, "{r:?}");
}

#[test]
fn a_throttled_fleet_pops_below_low_water_and_batches_its_writes() {
    // Pages that take 25-75 ms each complete one by one, as a throttled crawl's do.
    let site = LoadSite {
        pages: 800,
        fetch_delay: 0.05,
        ..SITE
    };
    let fleet = |delay: f64| {
        let srv = RedisServer::start().expect("redis-server is needed for this test");
        let r = run_with(
            &srv.url(0),
            2,
            site,
            16,
            &[("REDIS_FLUSH_DELAY", json!(delay))],
        )
        .expect("the load run");
        check_site(&r, site);
        let items = srv.call(&["LLEN", "load:items"]).expect("llen");
        assert_eq!(items, Value::Integer(site.pages as i64 * site.items as i64));
        let writes = srv.info_count("commandstats", "evalsha")
            + srv.info_count("commandstats", "rpush")
            + srv.info_count("commandstats", "hdel");
        (writes, pops(&srv))
    };
    let (unbatched, pops) = fleet(0.0);
    let (batched, batched_pops) = fleet(0.02);
    eprintln!(
        "{} pages: {unbatched} writes and {pops} pops unbatched, {batched} writes and \
         {batched_pops} pops within 20 ms",
        site.pages
    );
    // A pop goes when a worker's buffer falls below half of its prefetch (16), for
    // what it lacks: about one per 8 pages, and a few more at the start and the end
    // (pops that find the queue empty). With a pop asked for whenever an enqueue found
    // the buffer short of full, this fleet sent one per ~3 pages.
    let pages = site.pages as i64;
    assert!(pops <= pages / 4, "{pops} pops for {pages} pages");
    // Without a delay each page's items and acknowledgement go in turns of their own
    // (~0.8 `RPUSH` and `HDEL` per page here); within 20 ms a worker's pages of those
    // 20 ms share them (~0.16 per page), and its enqueues go with its pops.
    assert!(
        batched * 2 < unbatched,
        "{batched} writes within 20 ms, {unbatched} without a delay"
    );
}

/// The `POP` calls a server answered: each one first asks whether the crawl is
/// recorded (`HEXISTS` of its meta hash), which the other scripts do not (but `OPEN`
/// and `SEED_MARK`, once per worker).
fn pops(srv: &RedisServer) -> i64 {
    srv.info_count("commandstats", "hexists")
}

#[test]
fn a_pop_goes_alone_while_the_queue_holds_enough_and_writes_keep_to_the_flush_delay() {
    // Pages that complete at once: a worker empties its buffer before its pop is
    // answered, so every flush has a pop to send.
    let fleet = |delay: f64| {
        let srv = RedisServer::start().expect("redis-server is needed for this test");
        let r = run_with(
            &srv.url(0),
            2,
            SITE,
            16,
            &[("REDIS_FLUSH_DELAY", json!(delay))],
        )
        .expect("the load run");
        check(&srv, &r);
        // Enqueues: `ENQUEUE` (with the few `OPEN`, `CLOSE` and stats calls of two
        // workers) and the prefilter's `SMISMEMBER` (with those inside `ENQUEUE`).
        let enqueues = srv.info_count("commandstats", "evalsha") - pops(&srv)
            + srv.info_count("commandstats", "smismember");
        (enqueues, pops(&srv), r.seconds)
    };
    let (unbatched, pops0, _) = fleet(0.0);
    let (batched, pops_batched, seconds) = fleet(1.0);
    eprintln!(
        "{} pages: {unbatched} enqueues and {pops0} pops with no delay; {batched} enqueues \
         and {pops_batched} pops within 1 s ({seconds:.2} s)",
        SITE.pages
    );
    // With no delay every flush carries the writes; within 1 s (a delay a slow
    // machine's run does not approach between pops) the pops go alone while the queue
    // holds what they ask for, and the writes follow their delay (or go with a pop
    // once the queue runs short).
    assert!(unbatched * 2 > pops0, "{unbatched} enqueues, {pops0} pops");
    assert!(
        batched * 3 < pops_batched,
        "{batched} enqueues for {pops_batched} pops within 1 s"
    );
}

/// The write calls a server answered: the prefilter's `SMISMEMBER`, `ENQUEUE` (the
/// scripts but `POP`, whose first call is an `HEXISTS`; `OPEN`, `CLOSE` and a
/// cluster's `RENEW` are a few per worker) and the acknowledgements' `HSET`/`HDEL`.
fn writes(srv: &RedisServer) -> i64 {
    let count = |c: &str| srv.info_count("commandstats", c);
    count("smismember") + count("evalsha") - count("hexists") + count("hset") + count("hdel")
}

#[test]
fn a_clusters_masters_each_get_a_share_of_the_writes_not_one_servers_count() {
    // The same fleet on one server, then on three masters: a flush to every shard
    // gave each master as many write calls as the one server; a shard's writes due
    // once per three delays, or going with a pop to it, give each about a third.
    let fleet = [("REDIS_ITEMS_SHARDS", json!(3))];
    let srv = RedisServer::start().expect("redis-server is needed for this test");
    let r = run(&srv.url(0), 16, SITE, 8).expect("the load run");
    check(&srv, &r);
    let one = writes(&srv);
    let c = RedisCluster::start(3, 0).expect("redis-server and redis-cli are needed for this test");
    let r = run_with(&c.seed_url(), 16, SITE, 8, &fleet).expect("the load run");
    check_counts(&r);
    let per_master: Vec<i64> = c.nodes.iter().map(writes).collect();
    eprintln!("write calls: one server {one}, each master {per_master:?}");
    assert!(
        per_master.iter().all(|&m| m * 2 < one),
        "one server {one}, the masters {per_master:?}"
    );
}

#[test]
fn a_fleet_prefilters_its_duplicates_and_processes_every_page_once() {
    let srv = RedisServer::start().expect("redis-server is needed for this test");
    let r = run(&srv.url(0), 16, SITE, 8).expect("the load run");
    check(&srv, &r);
    let prefiltered = stat(&r, "scheduler/redis/prefiltered");
    // 16 workers on random links: most links were met by another worker first.
    assert!(
        prefiltered > stat(&r, "dupefilter/filtered") / 4,
        "prefiltered {prefiltered}: {r:?}"
    );
    eprintln!(
        "16 workers: {} filtered, {} by the seen caches, {prefiltered} by the prefilter",
        stat(&r, "dupefilter/filtered"),
        stat(&r, "scheduler/redis/dupefilter_cached")
    );
}

#[test]
fn a_worker_alone_does_not_prefilter() {
    let srv = RedisServer::start().expect("redis-server is needed for this test");
    let r = run(&srv.url(0), 1, SITE, 8).expect("the load run");
    check(&srv, &r);
    assert_eq!(stat(&r, "scheduler/redis/prefiltered"), 0, "{r:?}");
}

#[test]
fn a_fleet_on_a_cluster_prefilters_shard_by_shard() {
    let c = RedisCluster::start(3, 0).expect("redis-server and redis-cli are needed for this test");
    let r = run(&c.seed_url(), 16, SITE, 8).expect("the load run");
    check_counts(&r);
    assert!(stat(&r, "scheduler/redis/prefiltered") > 0, "{r:?}");
    // The items list lives on one master; the others answer MOVED.
    let items: i64 = c
        .nodes
        .iter()
        .filter_map(|n| n.call(&["LLEN", "load:items"]).ok())
        .filter_map(|v| v.as_int())
        .sum();
    assert_eq!(items, SITE.pages as i64 * SITE.items as i64);
}

#[test]
fn a_clusters_items_spread_over_a_list_on_every_master() {
    let c = RedisCluster::start(3, 0).expect("redis-server and redis-cli are needed for this test");
    let r = run_with(
        &c.seed_url(),
        4,
        SITE,
        8,
        &[("REDIS_ITEMS_SHARDS", json!(3))],
    )
    .expect("the load run");
    check_counts(&r);
    // Each master holds one of the lists `load:items:{s<i>.<j>}`, and none holds the
    // one list.
    let mut lists = Vec::new();
    for n in &c.nodes {
        let keys = n.call(&["KEYS", "load:items*"]).expect("keys");
        let keys: Vec<String> = keys
            .as_array()
            .unwrap_or_default()
            .iter()
            .filter_map(|k| {
                k.as_bytes()
                    .map(|b| String::from_utf8_lossy(b).into_owned())
            })
            .collect();
        assert_eq!(keys.len(), 1, "one list per master: {keys:?}");
        let len = n
            .call(&["LLEN", &keys[0]])
            .expect("llen")
            .as_int()
            .expect("int");
        assert!(len > 0, "{} is empty", keys[0]);
        lists.push((keys[0].clone(), len));
    }
    assert!(
        lists.iter().all(|(k, _)| k.starts_with("load:items:{s")),
        "{lists:?}"
    );
    let total: i64 = lists.iter().map(|(_, n)| n).sum();
    assert_eq!(total, SITE.pages as i64 * SITE.items as i64, "{lists:?}");
}

#[test]
fn items_shards_settings_that_cannot_work_are_refused() {
    let srv = RedisServer::start().expect("redis-server is needed for this test");
    let err = run_with(&srv.url(0), 1, SITE, 8, &[("REDIS_ITEMS_SHARDS", json!(0))])
        .expect_err("0 lists");
    assert!(
        err.contains("REDIS_ITEMS_SHARDS must be between 1 and 1024, not 0"),
        "{err}"
    );
    let err = run_with(
        &srv.url(0),
        1,
        SITE,
        8,
        &[
            ("REDIS_ITEMS_SHARDS", json!(2)),
            ("REDIS_ITEMS_KEY", json!("{items}:%(spider)s")),
        ],
    )
    .expect_err("a hash tag of its own");
    assert!(err.contains("has a hash tag of its own"), "{err}");
}

#[test]
fn a_flush_delay_that_is_not_a_duration_is_refused() {
    let srv = RedisServer::start().expect("redis-server is needed for this test");
    for bad in [json!(-0.5), json!("soon")] {
        let err = run_with(&srv.url(0), 1, SITE, 8, &[("REDIS_FLUSH_DELAY", bad)])
            .expect_err("a bad delay");
        assert!(err.contains("REDIS_FLUSH_DELAY"), "{err}");
    }
}

/// Runs the reactor for `secs` seconds.
fn run_for(reactor: &mut Reactor, secs: f64) {
    let h = reactor.handle();
    let stop = h.clone();
    let _ = h.call_later(secs, move || stop.stop());
    reactor.run().expect("the reactor");
}

/// Each list's length, in the pipeline's order.
fn lengths(srv: &RedisServer, keys: &[String]) -> Vec<i64> {
    keys.iter()
        .map(|k| {
            srv.call(&["LLEN", k.as_str()])
                .expect("llen")
                .as_int()
                .expect("int")
        })
        .collect()
}

#[test]
fn a_batch_rides_the_schedulers_write_to_its_shard_once_it_has_waited_its_delay() {
    // Three lists, as for a scheduler with three shards; the scheduler's writes are
    // announced by hand (`ShardWrites::writing`) and one server holds every list.
    let srv = RedisServer::start().expect("redis-server is needed for this test");
    let mut reactor = Reactor::new().expect("a reactor");
    let h = reactor.handle();
    let mut settings = Settings::new();
    settings.set("REDIS_URL", srv.url(0), Priority::Cmdline);
    settings.set("REDIS_ITEMS_SHARDS", 3, Priority::Cmdline);
    settings.set("REDIS_FLUSH_DELAY", 0.1, Priority::Cmdline);
    let ctx = Rc::new(CrawlContext::new(
        settings,
        Rc::new(MemoryStatsCollector::new()),
        h.clock().clone(),
        Some(h.clone()),
        "ride".into(),
        Vec::new(),
        None,
    ));
    let pipeline = RedisPipeline::from_context(&ctx).expect("the pipeline");
    let shared = shared_client(&ctx).expect("the shared client");
    let keys = pipeline.keys();
    let item = |n: i64| {
        let mut i = Item::new();
        i.0.insert("n".into(), json!(n));
        match pipeline.process_item(i, None) {
            Ok(ItemOutcome::Wait(d)) => d,
            other => panic!("the item should wait for Redis: {other:?}"),
        }
    };
    let _ = item(1);
    // Younger than the delay: a write to shard 2 does not take it; the delay's timer
    // pushes it to the first list in turn.
    shared.shard_writes.writing(2, 3, h.seconds());
    run_for(&mut reactor, 0.05);
    assert_eq!(lengths(&srv, &keys), [0, 0, 0]);
    run_for(&mut reactor, 0.15);
    assert_eq!(lengths(&srv, &keys), [1, 0, 0], "{keys:?}");
    // Riding now: a batch waits for a write up to four delays. After one delay, a
    // write to shard 2 takes it to shard 2's list, in the same turn.
    let _ = item(2);
    run_for(&mut reactor, 0.15);
    assert_eq!(lengths(&srv, &keys), [1, 0, 0]);
    shared.shard_writes.writing(2, 3, h.seconds());
    run_for(&mut reactor, 0.05);
    assert_eq!(lengths(&srv, &keys), [1, 0, 1], "{keys:?}");
    // A write from a scheduler with another shard count does not take it: after four
    // delays the batch goes alone, to the next list in turn.
    let _ = item(3);
    run_for(&mut reactor, 0.15);
    shared.shard_writes.writing(1, 2, h.seconds());
    run_for(&mut reactor, 0.1);
    assert_eq!(lengths(&srv, &keys), [1, 0, 1]);
    run_for(&mut reactor, 0.3);
    assert_eq!(lengths(&srv, &keys), [1, 1, 1], "{keys:?}");
}

/// A fleet's reads on every master (`INFO stats`: each a wake-up of the server).
fn reads(c: &RedisCluster) -> i64 {
    c.nodes
        .iter()
        .map(|n| n.info_count("stats", "total_reads_processed"))
        .sum()
}

#[test]
fn a_clusters_items_ride_the_schedulers_writes_and_its_masters_read_less() {
    // The same fleet on the same cluster, its items over two lists (not the shard
    // count: every push goes alone, to a list in turn), then over three (each push
    // rides the scheduler's next write to a shard, to that shard's list).
    let c = RedisCluster::start(3, 0).expect("redis-server and redis-cli are needed for this test");
    let fleet = |lists: usize| {
        let before = reads(&c);
        let r = run_with(
            &c.seed_url(),
            16,
            SITE,
            8,
            &[("REDIS_ITEMS_SHARDS", json!(lists))],
        )
        .expect("the load run");
        check_counts(&r);
        (reads(&c) - before, stat(&r, "redis/round_trips"))
    };
    let (alone, alone_trips) = fleet(2);
    let (riding, riding_trips) = fleet(3);
    eprintln!(
        "{} pages: the masters read {alone} times with every push alone ({alone_trips} \
         round trips), {riding} with the pushes riding ({riding_trips})",
        SITE.pages
    );
    assert!(
        riding_trips * 10 < alone_trips * 9,
        "{riding_trips} vs {alone_trips}"
    );
    assert!(riding * 10 < alone * 9, "{riding} vs {alone}");
}
