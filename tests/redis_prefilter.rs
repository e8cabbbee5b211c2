//! The prefilter against a real redis-server, through the load generator
//! (`testing::redis_load`: simulated workers with the real scheduler and pipeline): a
//! fleet whose links other workers mostly met first asks the dupefilter about them
//! (`SMISMEMBER`) before sending the requests, and still processes every page exactly
//! once, stores every page once and acknowledges every lease; a worker alone meets its
//! duplicates in its seen cache and does not prefilter.

use trawl::client::redis::Value;
use trawl::testing::redis_load::{LoadReport, LoadSite, run};
use trawl::testing::{RedisCluster, RedisServer};

const SITE: LoadSite = LoadSite {
    pages: 3_000,
    links: 17,
    items: 2,
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
    assert_eq!((r.pages, r.distinct), (SITE.pages, SITE.pages), "{r:?}");
    let pages = SITE.pages as i64;
    assert_eq!(stat(r, "scheduler/enqueued/redis"), pages, "{r:?}");
    // The seed and every page's links: stored, or filtered (by a seen cache, the
    // prefilter or the script).
    let links = 1 + pages * SITE.links as i64;
    assert_eq!(
        stat(r, "scheduler/enqueued/redis") + stat(r, "dupefilter/filtered"),
        links,
        "{r:?}"
    );
    assert_eq!(stat(r, "scheduler/redis/requeued"), 0, "{r:?}");
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
