//! Fleets against real Redis servers, through the load generator
//! (`testing::redis_load`: simulated workers with the real scheduler and pipeline, no
//! fetching). The prefilter: a fleet whose links other workers mostly met first asks
//! the dupefilter about them (`SMISMEMBER`) before sending the requests, and still
//! processes every page exactly once, stores every page once and acknowledges every
//! lease; a worker alone meets its duplicates in its seen cache and does not
//! prefilter. `REDIS_ITEMS_SHARDS`: a cluster's items spread over lists on every
//! master, and the settings it refuses.

use serde_json::json;
use trawl::client::redis::Value;
use trawl::testing::redis_load::{LoadReport, LoadSite, run, run_with};
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
    // Every lease was acknowledged before its worker closed: CLOSE put none back.
    assert_eq!(stat(r, "scheduler/redis/returned"), 0, "{r:?}");
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
