//! Many workers, one crawl, through a real `redis-server`: `trawl crawl --redis`
//! processes against the fixture site, one of them SIGKILLed mid-crawl; Redis
//! restarted mid-crawl; and a real scrapy-redis 0.9.1 worker (Python) sharing a crawl
//! with a trawl worker. "Mid-crawl" is the fixture server's request counter, never a
//! fixed sleep.

mod util;

use util::process::finish;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};
use trawl::client::redis::Value;
use trawl::crawl::{Priority, Registry, Settings, run_spider_with};
use trawl::distributed::RedisSpider;
use trawl::testing::spiders::FixtureSpider;
use trawl::testing::{FixtureOptions, FixtureServer, RedisServer, RedisServerOptions};

fn trawl() -> &'static str {
    env!("CARGO_BIN_EXE_trawl")
}

fn fixture(pages: usize) -> FixtureServer {
    FixtureServer::start(FixtureOptions {
        pages,
        record: true,
        ..FixtureOptions::default()
    })
    .expect("fixture server")
}

/// `?a=1&b=2` and `?b=2&a=1` are one page (one fingerprint): which spelling is
/// fetched depends on which link is found first.
fn normalize(path: &str) -> String {
    match path.split_once('?') {
        Some((p, q)) => {
            let mut args: Vec<&str> = q.split('&').collect();
            args.sort_unstable();
            format!("{p}?{}", args.join("&"))
        }
        None => path.to_owned(),
    }
}

/// Fetches per page, robots.txt aside.
fn fetches(srv: &FixtureServer) -> HashMap<String, u32> {
    let mut m = HashMap::new();
    for (t, n) in srv.stats().targets() {
        if t != "/robots.txt" {
            *m.entry(normalize(&t)).or_default() += n;
        }
    }
    m
}

/// The pages the fixture site says a full crawl visits (query arguments sorted).
fn expected_pages(srv: &FixtureServer) -> BTreeSet<String> {
    srv.site().expected_crawl().0
}

/// `pages` (fetched, or with an item) are exactly the site's expected crawl.
#[track_caller]
fn assert_expected_pages<'a>(
    pages: impl IntoIterator<Item = &'a String>,
    srv: &FixtureServer,
    what: &str,
) {
    let got: BTreeSet<String> = pages.into_iter().cloned().collect();
    let expected = expected_pages(srv);
    let missing: Vec<&String> = expected.difference(&got).take(5).collect();
    let extra: Vec<&String> = got.difference(&expected).take(5).collect();
    assert!(
        got == expected,
        "{what}: {} pages, the site expects {}; missing {missing:?}, extra {extra:?}",
        got.len(),
        expected.len()
    );
}

/// The pages a plain (single-process, no Redis) crawl fetches, and how often: the
/// site's expected crawl, each page once but the start URL twice (the start request
/// bypasses the dupefilter, as in Scrapy).
fn reference(pages: usize) -> HashMap<String, u32> {
    let srv = fixture(pages);
    let out = Command::new(trawl())
        .args([
            "crawl",
            &srv.url("/index.html"),
            "--same-domain",
            "-L",
            "WARNING",
        ])
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fetched = fetches(&srv);
    assert_expected_pages(fetched.keys(), &srv, "the plain crawl");
    for (page, n) in &fetched {
        let want = if page == "/index.html" { 2 } else { 1 };
        assert_eq!(*n, want, "the plain crawl fetched {page} {n} times");
    }
    fetched
}

fn worker(srv: &FixtureServer, redis: &RedisServer, extra: &[&str]) -> Child {
    Command::new(trawl())
        .args([
            "crawl",
            &srv.url("/index.html"),
            "--same-domain",
            "--redis",
            &redis.url(0),
            "--name",
            "w",
            "-L",
            "INFO",
            "-s",
            "CONCURRENT_REQUESTS=4",
            "-s",
            "MAX_IDLE_TIME_BEFORE_CLOSE=2",
            // trawl's default: a worker starved on a loaded machine keeps its leases
            // (the kill test expires the killed worker's explicitly).
            "-s",
            "REDIS_LEASE_TIMEOUT=60",
        ])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn trawl")
}

/// Every reference page fetched, and only the site's expected pages; the fetches
/// beyond the reference's counts.
fn check_pages(srv: &FixtureServer, reference: &HashMap<String, u32>) -> u32 {
    let got = fetches(srv);
    assert_expected_pages(got.keys(), srv, "the workers' fetches");
    let missing: Vec<&String> = reference.keys().filter(|p| !got.contains_key(*p)).collect();
    assert!(
        missing.is_empty(),
        "{} pages never fetched: {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    got.iter()
        .map(|(p, n)| n.saturating_sub(reference.get(p).copied().unwrap_or(0)))
        .sum()
}

/// The URLs of the items in `key` (one per page for the crawl command's spider).
fn item_pages(redis: &RedisServer, key: &str) -> Vec<String> {
    let v = redis.call(&["LRANGE", key, "0", "-1"]).expect("lrange");
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| {
            let j: Json = serde_json::from_slice(x.as_bytes().expect("bulk")).expect("item json");
            let url = j["url"].as_str().expect("url").to_owned();
            normalize(
                &url.splitn(4, '/')
                    .nth(3)
                    .map(|p| format!("/{p}"))
                    .unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn a_worker_killed_mid_crawl_loses_nothing() {
    let pages = 2000;
    let reference = reference(pages);
    let srv = fixture(pages);
    let redis = RedisServer::start().expect("redis-server is needed for this test");
    let workers: Vec<Child> = (0..3).map(|_| worker(&srv, &redis, &[])).collect();
    assert!(
        srv.stats().wait_for_requests(600, Duration::from_secs(60)),
        "the crawl did not start"
    );
    let mut workers = workers.into_iter();
    let mut victim = workers.next().expect("three");
    let victim_pid = victim.id().to_string();
    victim.kill().expect("SIGKILL");
    let _ = victim.wait();
    // What it held when it died: its lease hash, frozen until another worker takes it
    // back.
    let ids = redis
        .call(&["ZRANGE", "w:requests:workers", "0", "-1"])
        .expect("zrange");
    let id = ids
        .as_array()
        .expect("array")
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes().expect("bulk")).into_owned())
        .find(|id| id.split(':').nth(1) == Some(victim_pid.as_str()))
        .expect("the killed worker is registered");
    let held = redis
        .call(&[
            "EVAL",
            util::redis::LEASES_HELD,
            "1",
            &format!("w:requests:leases:{id}"),
        ])
        .expect("hlen")
        .as_int()
        .expect("int");
    let fetched_at_kill = srv.stats().requests();
    // Its deadline, moved to the past: the other workers' next pop or heartbeat
    // re-queues its leases (as REDIS_LEASE_TIMEOUT after its last heartbeat would).
    let moved = redis
        .call(&["ZADD", "w:requests:workers", "XX", "CH", "0", &id])
        .expect("zadd");
    assert_eq!(moved, Value::Integer(1), "the deadline of {id} was moved");
    for w in workers {
        let (code, log) = finish(w, 120);
        assert_eq!(code, 0, "{log}");
    }
    assert!(fetched_at_kill < 2000, "the kill came after the crawl");
    let duplicates = check_pages(&srv, &reference);
    assert!(
        duplicates as i64 <= held,
        "{duplicates} pages fetched twice, but the killed worker held only {held} leases"
    );
    // Items: one per page in the shared list, none missing.
    let items: HashSet<String> = item_pages(&redis, "w:items").into_iter().collect();
    let missing: Vec<&String> = reference.keys().filter(|p| !items.contains(*p)).collect();
    assert!(
        missing.is_empty(),
        "no item for {} pages: {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    assert_expected_pages(&items, &srv, "the items");
    eprintln!("killed at {fetched_at_kill} fetches holding {held} leases; {duplicates} refetched");
}

/// The pages of a worker's own JSON-lines feed (the crawl command writes one record a
/// page); a torn last line, written when the worker was killed, is not a page.
fn feed_pages(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Json>(l).ok())
        .map(|j| {
            let url = j["url"].as_str().expect("url").to_owned();
            normalize(
                &url.splitn(4, '/')
                    .nth(3)
                    .map(|p| format!("/{p}"))
                    .unwrap_or_default(),
            )
        })
        .collect()
}

/// Each worker writes its own feed (`-o part.jl`, as the README's fleet does); one is
/// SIGKILLed two thirds into the crawl. An item reaches the OS before the request that
/// produced it is acknowledged to Redis, so the killed worker's feed holds every page
/// it acknowledged and the union of the feeds is the whole site: every expected page,
/// none beyond the killed worker's leases twice.
#[test]
fn each_workers_own_feed_loses_nothing_when_one_is_killed() {
    let pages = 3000;
    let srv = fixture(pages);
    let redis = RedisServer::start().expect("redis-server is needed for this test");
    let dir = trawl::testing::TempDir::new("worker-feeds").expect("temp dir");
    let feeds: Vec<std::path::PathBuf> = (0..3)
        .map(|i| dir.path().join(format!("part{i}.jl")))
        .collect();
    let workers: Vec<Child> = feeds
        .iter()
        .map(|f| worker(&srv, &redis, &["-o", f.to_str().expect("utf-8 path")]))
        .collect();
    assert!(
        srv.stats().wait_for_requests(2000, Duration::from_secs(90)),
        "the crawl did not get two thirds through"
    );
    let mut workers = workers.into_iter();
    let mut victim = workers.next().expect("three");
    let victim_pid = victim.id().to_string();
    victim.kill().expect("SIGKILL");
    let _ = victim.wait();
    let ids = redis
        .call(&["ZRANGE", "w:requests:workers", "0", "-1"])
        .expect("zrange");
    let id = ids
        .as_array()
        .expect("array")
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes().expect("bulk")).into_owned())
        .find(|id| id.split(':').nth(1) == Some(victim_pid.as_str()))
        .expect("the killed worker is registered");
    let held = redis
        .call(&[
            "EVAL",
            util::redis::LEASES_HELD,
            "1",
            &format!("w:requests:leases:{id}"),
        ])
        .expect("hlen")
        .as_int()
        .expect("int");
    let killed_feed = feed_pages(&feeds[0]).len();
    redis
        .call(&["ZADD", "w:requests:workers", "XX", "CH", "0", &id])
        .expect("zadd");
    for w in workers {
        let (code, log) = finish(w, 120);
        assert_eq!(code, 0, "{log}");
    }
    let mut count: HashMap<String, u32> = HashMap::new();
    for f in &feeds {
        for p in feed_pages(f) {
            *count.entry(p).or_default() += 1;
        }
    }
    let expected = expected_pages(&srv);
    let missing: Vec<&String> = expected
        .iter()
        .filter(|p| !count.contains_key(*p))
        .collect();
    assert!(
        missing.is_empty(),
        "{} pages are in no worker's feed (the killed worker's feed had {killed_feed} \
         records): {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    assert_expected_pages(count.keys(), &srv, "the feeds");
    let twice: u32 = count.values().map(|n| n - 1).sum();
    assert!(
        i64::from(twice) <= held,
        "{twice} pages are in two feeds, but the killed worker held only {held} leases"
    );
    eprintln!("killed worker: {killed_feed} records, {held} leases; {twice} pages in two feeds");
}

#[test]
fn redis_restarted_mid_crawl_loses_nothing() {
    let pages = 2000;
    let reference = reference(pages);
    let srv = fixture(pages);
    let mut redis = RedisServer::start_with(RedisServerOptions {
        appendonly: true,
        ..Default::default()
    })
    .expect("redis-server is needed for this test");
    let workers: Vec<Child> = (0..2).map(|_| worker(&srv, &redis, &[])).collect();
    let started = Instant::now();
    assert!(
        srv.stats().wait_for_requests(500, Duration::from_secs(60)),
        "no start"
    );
    redis.kill();
    let at_outage = srv.stats().requests();
    let rate = at_outage as f64 / started.elapsed().as_secs_f64().max(1e-3);
    // The workers finish what is in flight and wait; how long does not matter.
    std::thread::sleep(Duration::from_millis(700));
    redis.restart().expect("restart on the same data dir");
    let mut logs = String::new();
    for w in workers {
        let (code, log) = finish(w, 120);
        assert_eq!(code, 0, "{log}");
        logs.push_str(&log);
    }
    assert!(at_outage < 2000, "the outage came after the crawl");
    assert!(
        logs.contains("connection lost") || logs.contains("cannot connect"),
        "no outage seen"
    );
    let duplicates = check_pages(&srv, &reference);
    let items = item_pages(&redis, "w:items");
    let unique: HashSet<&String> = items.iter().collect();
    let missing: Vec<&String> = reference.keys().filter(|p| !unique.contains(*p)).collect();
    assert!(missing.is_empty(), "no item for {} pages", missing.len());
    assert_expected_pages(unique.iter().copied(), &srv, "the items");
    // Commands in flight when the server died may run twice (at-least-once): bounded
    // by what two workers have in flight. For items that is a flush each: the pages
    // that completed within `REDIS_FLUSH_DELAY` (20 ms) at the crawl's rate.
    assert!(duplicates <= 8, "{duplicates} refetched");
    let per_flush = (rate * 0.02).ceil() as usize;
    assert!(
        items.len() - unique.len() <= 8 + 2 * per_flush,
        "{} duplicate items (~{per_flush} pages per 20 ms)",
        items.len() - unique.len()
    );
    eprintln!(
        "outage at {at_outage} fetches ({rate:.0} pages/s); {duplicates} refetched, {} items \
         twice",
        items.len() - unique.len()
    );
}

#[test]
fn a_scrapy_redis_worker_and_a_trawl_worker_share_one_crawl() {
    let python = util::python("scrapy_redis");
    let pages = 800;
    // The reference: the same spider alone, no Redis.
    let reference = {
        let srv = fixture(pages);
        let mut st = Settings::new();
        st.set("LOG_LEVEL", "WARNING", Priority::Project);
        run_spider_with(
            Box::new(FixtureSpider::new(&srv.url("/index.html"))),
            st,
            Registry::with_builtins(),
        )
        .expect("reference crawl");
        let fetched = fetches(&srv);
        assert_expected_pages(fetched.keys(), &srv, "the spider alone");
        fetched
    };
    let srv = fixture(pages);
    let redis = RedisServer::start().expect("redis-server is needed for this test");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/interop_worker.py");
    let mut py = Command::new(&python)
        .arg(&script)
        .args([
            "--redis-url",
            &redis.url(0),
            "--spider-name",
            "fixture",
            "--idle-close",
            "4",
        ])
        .args(["--concurrency", "8", "--log-level", "INFO"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn python");
    // Wait until the Python worker is polling (its first idle check reads the start
    // key, a LIST: the key type is the signal that it runs).
    let stderr = py.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if line.contains("Spider opened") {
                let _ = tx.send(String::new());
            }
            all.push_str(&line);
            all.push('\n');
        }
        let _ = tx.send(all);
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the Python worker did not open its spider");
    // The trawl worker, in this process: the same spider, fed from Redis.
    let mut st = Settings::new();
    for (k, v) in [
        ("REDIS_URL", json!(redis.url(0))),
        ("SCHEDULER", json!("trawl.RedisScheduler")),
        ("SCHEDULER_SERIALIZER", json!("trawl_redis_serializer")),
        ("SCHEDULER_PERSIST", json!(true)),
        ("ITEM_PIPELINES", json!({"trawl.RedisPipeline": 300})),
        ("MAX_IDLE_TIME_BEFORE_CLOSE", json!(4)),
        ("CONCURRENT_REQUESTS", json!(2)),
        ("DOWNLOAD_DELAY", json!(0.01)),
        ("LOG_LEVEL", json!("INFO")),
    ] {
        st.set(k, v, Priority::Project);
    }
    let mut registry = Registry::with_builtins();
    trawl::distributed::register(&mut registry);
    let spider = RedisSpider::new(Box::new(FixtureSpider::new(&srv.url("/index.html"))))
        .with_seeds(vec![srv.url("/index.html")]);
    let crawler = run_spider_with(Box::new(spider), st, registry).expect("trawl worker");
    let out = py.wait_with_output().expect("python");
    let last = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned();
    let py_stats: Json = serde_json::from_str(&last).unwrap_or_else(|e| {
        let log = rx.recv_timeout(Duration::from_secs(5)).unwrap_or_default();
        panic!("the Python worker printed no stats ({e}): {last:?}\n{log}")
    });
    assert_eq!(py_stats["finish_reason"], "finished", "{py_stats}");
    let py_pages = py_stats["requests_dequeued"].as_i64().unwrap_or(0);
    let trawl_pages = crawler.stats.get_int("scheduler/dequeued/redis");
    assert!(
        py_pages > 0 && trawl_pages > 0,
        "both must work: python {py_pages}, trawl {trawl_pages}"
    );
    // Every page once across both workers.
    let got = fetches(&srv);
    assert_expected_pages(got.keys(), &srv, "both workers' fetches");
    for (page, n) in &reference {
        let m = got.get(page).copied().unwrap_or(0);
        assert_eq!(m, *n, "{page} fetched {m} times (alone: {n})");
    }
    // Items from both in one list: as many as the spider yields alone.
    // The site knows how many quote items a full crawl yields.
    let reference_items = srv.site().expected_crawl().1 as i64;
    let items = redis.call(&["LLEN", "fixture:items"]).expect("llen");
    assert_eq!(items, Value::Integer(reference_items));
    eprintln!("python dequeued {py_pages}, trawl {trawl_pages}; {reference_items} items");
}
