//! Crawls through a real `redis-server` (started on a free port in a temp dir) against
//! the fixture site, in this process: the scrapy-redis key layout inspected with a
//! second connection, each setting, FIFO among equal priorities, `dont_filter`
//! duplicates, leases of a dead worker re-queued, the last worker out, bad entries and
//! wrongly typed keys quarantined, the database lost mid-crawl, the Bloom filter.

mod util;

use std::collections::HashSet;

use serde_json::{Value as Json, json};
use trawl::crawl::{
    Crawler, Item, Output, Priority, Registry, Request, Settings, record, run_spider_with,
};
use trawl::distributed::scrapy_redis_fingerprint;
use trawl::testing::{FixtureServer, RedisServer};
use util::live::{LiveSpider, Seen, crawl_with, follow_site, get, page_set};
use util::redis::{enqueue, enqueue_as, int, queue_len, redis, s, strings};

fn site(pages: usize) -> FixtureServer {
    FixtureServer::with_pages(pages).expect("fixture server")
}

fn settings(srv: &RedisServer, extra: &[(&str, Json)]) -> Vec<(String, Json)> {
    let mut s: Vec<(String, Json)> = vec![
        ("REDIS_URL".into(), srv.url(0).into()),
        ("SCHEDULER".into(), "trawl.RedisScheduler".into()),
        ("STATS_CLASS".into(), "trawl.RedisStatsCollector".into()),
        ("ITEM_PIPELINES".into(), json!({"trawl.RedisPipeline": 300})),
        ("ROBOTSTXT_OBEY".into(), false.into()),
        ("SCHEDULER_PERSIST".into(), true.into()),
    ];
    for (k, v) in extra {
        s.retain(|(n, _)| n != k);
        s.push(((*k).to_owned(), v.clone()));
    }
    s
}

fn run(
    spider: LiveSpider,
    settings: &[(String, Json)],
) -> (std::rc::Rc<Crawler>, std::rc::Rc<Seen>) {
    let borrowed: Vec<(&str, Json)> = settings
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    crawl_with(spider, &borrowed, trawl::distributed::register)
}

fn stat(c: &Crawler, key: &str) -> i64 {
    c.stats.get_int(key)
}

#[test]
fn a_crawl_lays_out_its_keys_like_scrapy_redis() {
    let fixture = site(150);
    let srv = redis();
    let start = get(&fixture.url("/index.html"));
    let fp = scrapy_redis_fingerprint(&start);
    let spider = LiveSpider::new(vec![start]).follow(follow_site);
    let (c, seen) = run(spider, &settings(&srv, &[]));
    let paths = seen.paths();
    let unique: HashSet<&String> = paths.iter().collect();
    assert_eq!(
        stat(&c, "scheduler/enqueued/redis"),
        stat(&c, "scheduler/dequeued/redis")
    );
    // Every page once: the pages the fixture site says a full crawl visits.
    assert_eq!(paths.len(), unique.len(), "{paths:?}");
    assert_eq!(page_set(&paths), fixture.site().expected_crawl().0);
    assert_eq!(c.stats.get_value("finish_reason"), Some("finished".into()));

    // The dupefilter: a SET of scrapy-redis fingerprints, as the 20 bytes their 40
    // hex digits spell (the meta hash says so).
    assert_eq!(s(&srv, &["TYPE", "live:dupefilter"]), "set");
    assert_eq!(
        s(&srv, &["HGET", "live:requests:meta", "fingerprints"]),
        "raw"
    );
    let members = strings(
        srv.call(&["SMEMBERS", "live:dupefilter"])
            .expect("smembers"),
    );
    // LiveSpider's start requests are filtered like any other: one fingerprint per
    // request enqueued.
    assert_eq!(members.len() as i64, stat(&c, "scheduler/enqueued/redis"));
    assert!(members.iter().all(|m| m.len() == 20));
    // Under scrapy-redis's fingerprint.
    let is_member = |hex: &str| {
        let mut args: Vec<Vec<u8>> = vec![b"SISMEMBER".to_vec(), b"live:dupefilter".to_vec()];
        args.push(unhex(hex));
        int(srv.call(&args).expect("sismember"))
    };
    assert_eq!(is_member(&fp), 1);
    let page = scrapy_redis_fingerprint(&get(&fixture.url("/s/000/00001.html")));
    assert_eq!(is_member(&page), 1);
    // Items: JSON, one per page.
    let items = strings(
        srv.call(&["LRANGE", "live:items", "0", "-1"])
            .expect("items"),
    );
    assert_eq!(items.len(), paths.len());
    let first: Json = serde_json::from_slice(&items[0]).expect("an item is JSON");
    assert!(
        first["url"]
            .as_str()
            .is_some_and(|u| u.starts_with("http://"))
    );
    // The queue is drained (and so gone); its bookkeeping persists.
    assert_eq!(
        int(srv.call(&["EXISTS", "live:requests"]).expect("exists")),
        0
    );
    assert_eq!(s(&srv, &["HGET", "live:requests:meta", "mode"]), "p");
    assert_eq!(s(&srv, &["HGET", "live:requests:meta", "queued"]), "0");
    assert_eq!(s(&srv, &["HGET", "live:requests:meta", "layout"]), "native");
    assert_eq!(
        int(srv
            .call(&["ZCARD", "live:requests:workers"])
            .expect("zcard")),
        0
    );
    // Stats from every worker in one hash.
    assert_eq!(
        s(&srv, &["HGET", "live:stats", "scheduler/dequeued/redis"]),
        stat(&c, "scheduler/dequeued/redis").to_string()
    );
    // Every script was loaded before its first call: no `EVAL` fallback.
    assert!(srv.info_count("commandstats", "evalsha") > 0);
    assert_eq!(srv.info_count("commandstats", "eval"), 0);
    // Round trips: batched and pipelined.
    let rt = stat(&c, "redis/round_trips");
    assert!(
        rt > 0 && rt < paths.len() as i64,
        "{rt} round trips for {} pages",
        paths.len()
    );
}

/// Records a native crawl in `live:requests:meta` as an earlier worker would have,
/// its queue in `mode`.
fn record_crawl(srv: &RedisServer, mode: &str) {
    srv.call(&[
        "HSET",
        "live:requests:meta",
        "created",
        "1",
        "mode",
        mode,
        "layout",
        "native",
    ])
    .expect("meta");
}

/// Puts `request`'s fingerprint, as 40 hex digits, in `live:dupefilter`.
fn mark_seen_as_hex(srv: &RedisServer, request: &Request) {
    srv.call(&[
        "SADD",
        "live:dupefilter",
        &scrapy_redis_fingerprint(request),
    ])
    .expect("sadd");
}

/// The bytes 40 hex digits spell.
fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect()
}

#[test]
fn equal_priorities_pop_in_fifo_order_and_dont_filter_twins_both_run() {
    let fixture = site(50);
    let srv = redis();
    let url = |i: u32| fixture.url(&format!("/s/000/{i:05}.html"));
    let mut reqs: Vec<Request> = [9, 3, 7, 1].iter().map(|&i| get(&url(i))).collect();
    reqs.push(get(&url(20)).with_priority(5));
    reqs.push(get(&url(5)).with_dont_filter(true));
    reqs.push(get(&url(5)).with_dont_filter(true));
    reqs.push(get(&url(3))); // a duplicate: dropped by the script
    enqueue(&srv, "live:requests", &reqs);
    assert_eq!(queue_len(&srv, "live:requests"), 7);
    // One list per priority, FIFO within; the queue key is their index.
    assert_eq!(
        strings(
            srv.call(&["ZRANGE", "live:requests", "0", "-1"])
                .expect("zrange")
        ),
        vec![b"-5".to_vec(), b"0".to_vec()]
    );
    assert_eq!(
        int(srv.call(&["LLEN", "live:requests:p:0"]).expect("llen")),
        6
    );
    assert_eq!(s(&srv, &["HGET", "live:requests:meta", "queued"]), "7");
    let spider = LiveSpider::new(vec![]);
    let (c, seen) = run(
        spider,
        &settings(
            &srv,
            &[
                ("CONCURRENT_REQUESTS", 1.into()),
                ("REDIS_PREFETCH", 1.into()),
            ],
        ),
    );
    let order: Vec<String> = seen.paths();
    let want: Vec<String> = [20, 9, 3, 7, 1, 5, 5]
        .iter()
        .map(|i| format!("/s/000/{i:05}.html"))
        .collect();
    assert_eq!(order, want);
    assert_eq!(stat(&c, "scheduler/dequeued/redis"), 7);
}

#[test]
fn a_dead_workers_leases_are_requeued_and_fetched() {
    let fixture = site(50);
    let srv = redis();
    let lost = get(&fixture.url("/s/000/00011.html"));
    let mut member = b"00000000000000aa".to_vec();
    member.extend(record::encode(&lost));
    let mut value = b"0 ".to_vec();
    value.extend(&member);
    let field = "ghost-entry";
    // A worker that died holding a lease: its deadline is long past.
    srv.call(&[
        b"HSET".as_ref(),
        b"live:requests:leases:ghost",
        field.as_bytes(),
        &value,
    ])
    .expect("hset");
    srv.call(&["ZADD", "live:requests:workers", "1", "ghost"])
        .expect("zadd");
    let (c, seen) = run(LiveSpider::new(vec![]), &settings(&srv, &[]));
    assert_eq!(seen.paths(), vec!["/s/000/00011.html".to_owned()]);
    assert_eq!(stat(&c, "scheduler/redis/requeued"), 1);
    assert_eq!(
        int(srv
            .call(&["EXISTS", "live:requests:leases:ghost"])
            .expect("exists")),
        0
    );
    assert_eq!(
        int(srv
            .call(&["ZCARD", "live:requests:workers"])
            .expect("zcard")),
        0
    );
}

#[test]
fn only_the_last_worker_out_clears_the_queue() {
    let fixture = site(30);
    let srv = redis();
    let no_persist = [("SCHEDULER_PERSIST", false.into())];
    // Another worker is alive (its deadline is an hour away).
    let far = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("time")
        .as_millis()
        + 3_600_000)
        .to_string();
    srv.call(&["ZADD", "live:requests:workers", &far, "other"])
        .expect("zadd");
    let spider = LiveSpider::new(vec![get(&fixture.url("/index.html"))]).follow(follow_site);
    run(spider, &settings(&srv, &no_persist));
    assert_eq!(
        int(srv.call(&["EXISTS", "live:dupefilter"]).expect("exists")),
        1
    );
    assert_eq!(
        int(srv.call(&["EXISTS", "live:requests:meta"]).expect("exists")),
        1
    );
    // The other worker leaves; the next one to close is the last out.
    srv.call(&["ZREM", "live:requests:workers", "other"])
        .expect("zrem");
    let spider = LiveSpider::new(vec![get(&fixture.url("/s/000/00001.html"))]);
    run(spider, &settings(&srv, &no_persist));
    for key in [
        "live:dupefilter",
        "live:requests:meta",
        "live:requests:workers",
        "live:stats",
    ] {
        assert_eq!(int(srv.call(&["EXISTS", key]).expect("exists")), 0, "{key}");
    }
    // Items are never deleted.
    assert!(int(srv.call(&["LLEN", "live:items"]).expect("llen")) > 30);
}

#[test]
fn bad_entries_and_wrong_key_types_are_quarantined_and_the_crawl_goes_on() {
    let fixture = site(30);
    let srv = redis();
    let good = get(&fixture.url("/s/000/00002.html"));
    enqueue(&srv, "live:requests", std::slice::from_ref(&good));
    let record_bytes = record::encode(&good);
    let mut truncated = b"0000000000000100".to_vec();
    truncated.extend(&record_bytes[..5]);
    let mut newer = b"0000000000000101".to_vec();
    newer.extend(b"\x09future record");
    let bad: Vec<Vec<u8>> = vec![
        // A pickle of {'url': ...} (protocol 4), as scrapy-redis's default serializer
        // writes: never unpickled.
        b"\x80\x04\x95\x1c\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x03url\x94\x8c\x0chttp://x.test\x94s.".to_vec(),
        b"garbage".to_vec(),
        truncated,
        newer,
        br#"{"url": "http://h.test/json"}"#.to_vec(),
    ];
    for (i, b) in bad.iter().enumerate() {
        let list = format!("live:requests:p:{i}");
        srv.call(&[b"RPUSH".as_ref(), list.as_bytes(), b])
            .expect("rpush");
        let score = i.to_string();
        srv.call(&["ZADD", "live:requests", &score, &score])
            .expect("zadd");
    }
    // Something in the priority index that is not a priority.
    srv.call(&["ZADD", "live:requests", "0", "stray"])
        .expect("zadd");
    // Wrong types where a list and a hash belong.
    srv.call(&["SADD", "live:items", "not-a-list"])
        .expect("sadd");
    srv.call(&["RPUSH", "live:stats", "not-a-hash"])
        .expect("rpush");
    let spider = LiveSpider::new(vec![])
        .follow(|r| vec![Output::Item(Item::new().with("url", r.url().as_str()))]);
    let (c, seen) = util::capture_logs(|| run(spider, &settings(&srv, &[]))).0;
    assert_eq!(seen.paths(), vec!["/s/000/00002.html".to_owned()]);
    assert_eq!(stat(&c, "scheduler/redis/bad_entries"), 5);
    let quarantined = strings(
        srv.call(&["LRANGE", "live:requests:bad", "0", "-1"])
            .expect("lrange"),
    );
    assert_eq!(quarantined.len(), 6);
    assert!(quarantined.contains(&b"stray".to_vec()));
    for b in &bad {
        assert!(
            quarantined.contains(b),
            "{:?} not quarantined",
            String::from_utf8_lossy(b)
        );
    }
    // The wrongly typed keys were moved aside (as DUMPs) and the right ones made.
    assert_eq!(s(&srv, &["TYPE", "live:items"]), "list");
    assert_eq!(int(srv.call(&["LLEN", "live:items"]).expect("llen")), 1);
    assert_eq!(int(srv.call(&["LLEN", "live:items:bad"]).expect("llen")), 1);
    assert_eq!(s(&srv, &["TYPE", "live:stats"]), "hash");
    assert_eq!(int(srv.call(&["LLEN", "live:stats:bad"]).expect("llen")), 1);
}

#[test]
fn a_wrongly_typed_queue_key_is_moved_aside() {
    let fixture = site(30);
    let srv = redis();
    srv.call(&["SET", "live:requests", "oops"]).expect("set");
    let spider = LiveSpider::new(vec![get(&fixture.url("/s/000/00003.html"))]);
    let (c, seen) = run(spider, &settings(&srv, &[]));
    assert_eq!(seen.paths(), vec!["/s/000/00003.html".to_owned()]);
    assert!(stat(&c, "scheduler/redis/wrong_type_keys") >= 1);
    let dumps = strings(
        srv.call(&["LRANGE", "live:requests:bad", "0", "-1"])
            .expect("lrange"),
    );
    assert_eq!(dumps.len(), 1);
    // The DUMP restores to the original value.
    srv.call(&[b"RESTORE".as_ref(), b"restored", b"0", &dumps[0]])
        .expect("restore");
    assert_eq!(s(&srv, &["GET", "restored"]), "oops");
}

#[test]
fn queue_classes_and_a_mismatched_worker() {
    let fixture = site(60);
    let srv = redis();
    for (class, ty) in [
        ("scrapy_redis.queue.FifoQueue", "list"),
        ("scrapy_redis.queue.LifoQueue", "list"),
    ] {
        srv.call(&["FLUSHALL"]).expect("flushall");
        let spider = LiveSpider::new(vec![get(&fixture.url("/index.html"))]).follow(follow_site);
        let (c, _) = run(
            spider,
            &settings(
                &srv,
                &[
                    ("SCHEDULER_QUEUE_CLASS", class.into()),
                    ("CLOSESPIDER_PAGECOUNT", 3.into()),
                ],
            ),
        );
        assert!(stat(&c, "scheduler/redis/returned") > 0, "{class}");
        assert_eq!(s(&srv, &["TYPE", "live:requests"]), ty, "{class}");
        assert_eq!(
            s(&srv, &["HGET", "live:requests:meta", "mode"]),
            if class.contains("Fifo") {
                "fifo"
            } else {
                "lifo"
            }
        );
    }
    // A worker configured for a priority queue refuses the LIFO queue left behind.
    let mut st = Settings::new();
    for (k, v) in settings(&srv, &[]) {
        st.set(&k, v, Priority::Project);
    }
    let mut registry = Registry::with_builtins();
    trawl::distributed::register(&mut registry);
    let Err(err) = run_spider_with(Box::new(LiveSpider::new(vec![])), st, registry) else {
        panic!("the crawl must not start");
    };
    assert!(err.to_string().contains("lifo"), "{err}");
}

#[test]
fn the_database_lost_mid_crawl_closes_the_spider_with_a_clear_reason() {
    let fixture = site(300);
    let srv = redis();
    let port = srv.port();
    let mut n = 0;
    let spider = LiveSpider::new(vec![get(&fixture.url("/index.html"))]).follow(move |r| {
        n += 1;
        if n == 20 {
            // Another client empties the database (a restart without persistence).
            let side = RedisServer::attach(port);
            side.call(&["FLUSHALL"]).expect("flushall");
        }
        follow_site(r)
    });
    let ((c, seen), logs) = util::capture_logs(|| run(spider, &settings(&srv, &[])));
    assert_eq!(
        c.stats.get_value("finish_reason"),
        Some("redis_data_lost".into())
    );
    assert!(seen.paths().len() < 300);
    assert!(
        logs.iter()
            .any(|(_, l)| l.contains("no longer has this crawl's state")),
        "{logs:?}"
    );
}

#[test]
fn the_bloom_dupefilter_filters_through_redis_bitmaps() {
    let fixture = site(150);
    let srv = redis();
    let spider = LiveSpider::new(vec![get(&fixture.url("/index.html"))]).follow(follow_site);
    let (c, seen) = run(
        spider,
        &settings(
            &srv,
            &[
                ("DUPEFILTER_CLASS", "trawl.RedisBloomDupeFilter".into()),
                ("BLOOMFILTER_CAPACITY", 100_000.into()),
            ],
        ),
    );
    let paths = seen.paths();
    let unique: HashSet<&String> = paths.iter().collect();
    assert_eq!(paths.len(), unique.len());
    assert_eq!(page_set(&paths), fixture.site().expected_crawl().0);
    assert_eq!(s(&srv, &["TYPE", "live:dupefilter:0"]), "string");
    assert_eq!(
        s(&srv, &["GET", "live:dupefilter:count"]),
        stat(&c, "scheduler/enqueued/redis").to_string()
    );
    assert!(stat(&c, "dupefilter/bloom/hashes") >= 10);
    assert_eq!(stat(&c, "dupefilter/bloom/capacity"), 100_000);
    assert!(stat(&c, "dupefilter/filtered") > 100);
}

/// A native crawl begun with the priority queue in one sorted set (before the lists)
/// goes on in it: a worker asking for lists adopts the recorded queue.
#[test]
fn a_crawl_begun_with_one_sorted_set_goes_on_in_it() {
    let fixture = site(50);
    let srv = redis();
    let url = |i: u32| fixture.url(&format!("/s/000/{i:05}.html"));
    let mut reqs: Vec<Request> = [9, 3, 7].iter().map(|&i| get(&url(i))).collect();
    reqs.push(get(&url(20)).with_priority(5));
    enqueue_as(&srv, "live:requests", "z", &reqs);
    record_crawl(&srv, "z");
    assert_eq!(
        int(srv.call(&["ZCARD", "live:requests"]).expect("zcard")),
        4
    );
    let (c, seen) = run(
        LiveSpider::new(vec![]),
        &settings(
            &srv,
            &[
                ("CONCURRENT_REQUESTS", 1.into()),
                ("REDIS_PREFETCH", 1.into()),
            ],
        ),
    );
    let want: Vec<String> = [20, 9, 3, 7]
        .iter()
        .map(|i| format!("/s/000/{i:05}.html"))
        .collect();
    assert_eq!(seen.paths(), want);
    assert_eq!(stat(&c, "scheduler/dequeued/redis"), 4);
    assert_eq!(s(&srv, &["HGET", "live:requests:meta", "mode"]), "z");
    assert_eq!(
        int(srv.call(&["EXISTS", "live:requests:p:0"]).expect("exists")),
        0
    );
}

/// A crawl whose dupefilter was begun with 40-hex fingerprints (its meta hash names
/// no form: written before raw ones) goes on with them: what it saw is still seen.
#[test]
fn a_crawl_begun_with_hex_fingerprints_goes_on_with_them() {
    let fixture = site(50);
    let srv = redis();
    let seen_before = get(&fixture.url("/s/000/00008.html"));
    mark_seen_as_hex(&srv, &seen_before);
    record_crawl(&srv, "p");
    let fresh = get(&fixture.url("/s/000/00009.html"));
    let (_, seen) = run(
        LiveSpider::new(vec![seen_before, fresh.clone()]),
        &settings(&srv, &[]),
    );
    assert_eq!(seen.paths(), vec!["/s/000/00009.html".to_owned()]);
    assert_eq!(
        int(srv
            .call(&[
                "SISMEMBER",
                "live:dupefilter",
                &scrapy_redis_fingerprint(&fresh)
            ])
            .expect("sismember")),
        1
    );
    assert!(
        strings(
            srv.call(&["SMEMBERS", "live:dupefilter"])
                .expect("smembers")
        )
        .iter()
        .all(|m| m.len() == 40)
    );
}

#[test]
fn flush_on_start_empties_the_queue_and_the_dupefilter() {
    let fixture = site(30);
    let srv = redis();
    let stale = get(&fixture.url("/s/000/00007.html"));
    enqueue(&srv, "live:requests", std::slice::from_ref(&stale));
    let seen_before = get(&fixture.url("/s/000/00008.html"));
    mark_seen_as_hex(&srv, &seen_before);
    let spider = LiveSpider::new(vec![seen_before]);
    let (_, seen) = run(
        spider,
        &settings(&srv, &[("SCHEDULER_FLUSH_ON_START", true.into())]),
    );
    // The stale request was flushed; the "seen" one is new again.
    assert_eq!(seen.paths(), vec!["/s/000/00008.html".to_owned()]);
}

#[test]
fn idle_before_close_keeps_the_spider_open_that_long() {
    let fixture = site(30);
    let srv = redis();
    let spider = LiveSpider::new(vec![get(&fixture.url("/s/000/00001.html"))]);
    let t = std::time::Instant::now();
    let (c, seen) = run(
        spider,
        &settings(&srv, &[("SCHEDULER_IDLE_BEFORE_CLOSE", 1.into())]),
    );
    assert_eq!(seen.paths().len(), 1);
    assert_eq!(c.stats.get_value("finish_reason"), Some("finished".into()));
    assert!(t.elapsed().as_secs_f64() >= 1.0, "{:?}", t.elapsed());
}

/// A Redis-fed spider around any spider: start payloads from a LIST, a SET or a
/// sorted set, in batches, until idle for MAX_IDLE_TIME_BEFORE_CLOSE.
#[test]
fn redis_fed_spiders_read_lists_sets_and_sorted_sets_in_batches() {
    use trawl::distributed::RedisSpider;
    let fixture = site(30);
    let srv = redis();
    let url = |i: u32| fixture.url(&format!("/s/000/{i:05}.html"));
    for (kind, flag) in [
        ("list", None),
        ("set", Some("REDIS_START_URLS_AS_SET")),
        ("zset", Some("REDIS_START_URLS_AS_ZSET")),
    ] {
        srv.call(&["FLUSHALL"]).expect("flushall");
        for i in 1..=5u32 {
            let payload = if i % 2 == 0 {
                format!("{{\"url\": \"{}\", \"meta\": {{\"n\": {i}}}}}", url(i))
            } else {
                url(i)
            };
            let score = i.to_string();
            let args: Vec<&str> = match kind {
                "list" => vec!["RPUSH", "live:start_urls", &payload],
                "set" => vec!["SADD", "live:start_urls", &payload],
                _ => vec!["ZADD", "live:start_urls", &score, &payload],
            };
            srv.call(&args).expect("push");
        }
        if kind == "list" {
            // A payload scrapy-redis would drop: kept aside instead.
            srv.call(&["RPUSH", "live:start_urls", r#"{"nourl": 1}"#])
                .expect("push");
        }
        let mut extra: Vec<(&str, Json)> = vec![
            ("REDIS_START_URLS_BATCH_SIZE", 2.into()),
            ("MAX_IDLE_TIME_BEFORE_CLOSE", 1.into()),
            ("CONCURRENT_REQUESTS", 1.into()),
        ];
        if let Some(f) = flag {
            extra.push((f, true.into()));
        }
        let st = settings(&srv, &extra);
        let mut sets = Settings::new();
        for (k, v) in st {
            sets.set(&k, v, Priority::Project);
        }
        let inner = LiveSpider::new(vec![]);
        let seen = inner.seen.clone();
        let mut registry = Registry::with_builtins();
        trawl::distributed::register(&mut registry);
        let c = run_spider_with(Box::new(RedisSpider::new(Box::new(inner))), sets, registry)
            .expect("crawl");
        let mut paths = seen.paths();
        assert_eq!(paths.len(), 5, "{kind}: {paths:?}");
        assert_eq!(stat(&c, "redis/start_urls/read"), 5, "{kind}");
        assert_eq!(
            int(srv.call(&["EXISTS", "live:start_urls"]).expect("exists")),
            0
        );
        if kind == "zset" {
            // Highest score first.
            assert_eq!(paths[0], "/s/000/00005.html", "{paths:?}");
        }
        if kind == "list" {
            // From the head: RPUSHed payloads come out in order.
            assert_eq!(paths[0], "/s/000/00001.html", "{paths:?}");
            assert_eq!(stat(&c, "redis/start_urls/bad"), 1);
            let bad = strings(
                srv.call(&["LRANGE", "live:start_urls:bad", "0", "-1"])
                    .expect("bad"),
            );
            assert_eq!(bad, vec![br#"{"nourl": 1}"#.to_vec()]);
        }
        paths.sort();
        assert_eq!(paths.last().map(String::as_str), Some("/s/000/00005.html"));
        let meta = seen
            .responses
            .borrow()
            .iter()
            .filter_map(|r| r.request().meta().get_i64("n"))
            .count();
        assert_eq!(meta, 2, "{kind}: the JSON payloads' meta arrives");
    }
}

#[test]
fn a_workers_own_duplicates_never_reach_redis_and_items_go_in_batches() {
    let fixture = site(150);
    let crawl = |extra: &[(&str, Json)]| {
        let srv = redis();
        let spider = LiveSpider::new(vec![get(&fixture.url("/index.html"))]).follow(follow_site);
        let (c, seen) = run(spider, &settings(&srv, extra));
        let items = int(srv.call(&["LLEN", "live:items"]).expect("llen"));
        (
            c,
            page_set(&seen.paths()),
            items,
            srv.info_count("stats", "total_net_input_bytes"),
            srv.info_count("commandstats", "rpush"),
        )
    };
    let (cached, pages, items, bytes, rpushes) = crawl(&[]);
    let (plain, plain_pages, plain_items, plain_bytes, _) =
        crawl(&[("REDIS_DUPEFILTER_CACHE", 0.into())]);
    // The same crawl either way: every page once, an item each.
    assert_eq!(pages, fixture.site().expected_crawl().0);
    assert_eq!(plain_pages, pages);
    assert_eq!(
        (items, plain_items),
        (pages.len() as i64, pages.len() as i64)
    );
    assert_eq!(
        stat(&cached, "dupefilter/filtered"),
        stat(&plain, "dupefilter/filtered")
    );
    // Without the cache every fingerprint goes to Redis; with it a duplicate the worker
    // had already sent does not: the server reads at least its 40-hex fingerprint less
    // for each (and its payload).
    let hits = stat(&cached, "scheduler/redis/dupefilter_cached");
    assert_eq!(stat(&plain, "scheduler/redis/dupefilter_cached"), 0);
    assert!(hits > 0, "no duplicate answered locally");
    assert!(
        plain_bytes - bytes >= 40 * hits,
        "the server read {bytes} bytes with the cache and {plain_bytes} without, for {hits} \
         cached duplicates"
    );
    // Items: one RPUSH per reactor turn, not one per item.
    assert!(
        rpushes > 0 && rpushes < items,
        "{rpushes} RPUSH calls for {items} items"
    );
}
