//! Distributed crawling on Redis: the fixture crawl with the memory scheduler, with one
//! and two `trawl crawl --redis` workers, and with two scrapy-redis 0.9.1 workers
//! (when a Python with scrapy-redis is found: `TRAWL_PYTHON`, or
//! `target/venv-redis` made by `scripts/test.sh`), all in one run against the same
//! in-process fixture server and a fresh `redis-server` each: pages/s, CPU ms per page,
//! Redis commands and round trips per page, peak RSS of the workers and of Redis. Then
//! Redis memory per seen URL, exact SET against the Bloom filter, and the Bloom filter's
//! measured false-positive rate.
//!
//! `cargo bench --bench redis` (5,000 pages); `cargo test --benches` runs a 300-page
//! smoke version of the trawl rows.

mod support;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::smoke;
use trawl::client::redis::{RedisClient, RedisConfig, Value};
use trawl::crawl::Request;
use trawl::crawl::dupefilter::BloomFilter;
use trawl::distributed::dupefilter::FilterKind;
use trawl::distributed::scripts::scripts;
use trawl::reactor::Reactor;
use trawl::testing::{FixtureOptions, FixtureServer, RedisServer};

struct Row {
    name: String,
    pages: u64,
    secs: f64,
    cpu_ms: f64,
    worker_rss_mb: f64,
    commands: u64,
    client_commands: Option<u64>,
    round_trips: Option<u64>,
    redis_rss_mb: f64,
}

/// `/usr/bin/time -f` output: user, system seconds and max RSS (KB), last line.
fn parse_time(stderr: &str) -> (f64, f64) {
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("TIME "))
        .unwrap_or("TIME 0 0 0");
    let f: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    ((f[0] + f[1]) * 1000.0, f[2] / 1024.0)
}

fn timed(program: &str) -> Command {
    let mut c = Command::new("/usr/bin/time");
    c.args(["-f", "TIME %U %S %M", program]);
    c
}

fn info_field(redis: &RedisServer, section: &str, field: &str) -> f64 {
    let v = redis.call(&["INFO", section]).expect("info");
    let text = String::from_utf8_lossy(v.as_bytes().unwrap_or_default()).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|x| x.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Runs the children to completion, timing the crawl from the start to the last
/// fetch (idle tails before the workers notice the end are not crawl time).
fn run(srv: &FixtureServer, children: Vec<Child>) -> (f64, Vec<String>) {
    let start = Instant::now();
    let mut last_change = start;
    let mut last = srv.stats().requests();
    let mut children: Vec<Option<Child>> = children.into_iter().map(Some).collect();
    let mut logs = vec![String::new(); children.len()];
    let mut readers: Vec<_> = children
        .iter_mut()
        .map(|c| {
            let mut e = c.as_mut().and_then(|c| c.stderr.take()).expect("stderr");
            std::thread::spawn(move || {
                let mut s = String::new();
                let _ = std::io::Read::read_to_string(&mut e, &mut s);
                s
            })
        })
        .map(Some)
        .collect();
    loop {
        let now = srv.stats().requests();
        if now != last {
            last = now;
            last_change = Instant::now();
        }
        let mut running = false;
        for (i, c) in children.iter_mut().enumerate() {
            if let Some(ch) = c {
                if ch.try_wait().expect("wait").is_some() {
                    *c = None;
                    logs[i] = readers[i]
                        .take()
                        .expect("reader")
                        .join()
                        .unwrap_or_default();
                } else {
                    running = true;
                }
            }
        }
        if !running {
            break;
        }
        if start.elapsed() > Duration::from_secs(600) {
            panic!("a worker ran for 10 minutes");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    ((last_change - start).as_secs_f64(), logs)
}

fn stat_from_log(log: &str, key: &str) -> u64 {
    log.lines()
        .find_map(|l| l.trim().strip_prefix(&format!("'{key}': ")))
        .and_then(|v| v.trim_end_matches(',').parse().ok())
        .unwrap_or(0)
}

fn trawl_row(name: &str, pages: usize, workers: usize, redis_on: bool) -> Row {
    let srv = FixtureServer::start(FixtureOptions {
        pages,
        ..FixtureOptions::default()
    })
    .expect("fixture");
    let redis = RedisServer::start().expect("redis-server is needed for this bench");
    let before = info_field(&redis, "stats", "total_commands_processed");
    let children: Vec<Child> = (0..workers)
        .map(|_| {
            let mut c = timed(env!("CARGO_BIN_EXE_trawl"));
            c.args([
                "crawl",
                &srv.url("/index.html"),
                "--same-domain",
                "-L",
                "INFO",
            ]);
            if redis_on {
                c.args(["--redis", &redis.url(0), "--name", "bench"]);
                c.args(["-s", "MAX_IDLE_TIME_BEFORE_CLOSE=1"]);
            }
            c.args(["-s", "LOGSTATS_INTERVAL=0"]);
            c.stdout(Stdio::null()).stderr(Stdio::piped());
            c.spawn().expect("spawn trawl")
        })
        .collect();
    let (secs, logs) = run(&srv, children);
    let after = info_field(&redis, "stats", "total_commands_processed");
    let (mut cpu, mut rss, mut rt, mut cc) = (0.0, 0.0f64, 0, 0);
    for l in &logs {
        let (c, r) = parse_time(l);
        cpu += c;
        rss = rss.max(r);
        rt += stat_from_log(l, "redis/round_trips");
        cc += stat_from_log(l, "redis/commands");
    }
    let fetched = srv.stats().requests();
    Row {
        name: name.into(),
        pages: fetched,
        secs,
        cpu_ms: cpu,
        worker_rss_mb: rss,
        commands: (after - before).max(0.0) as u64,
        client_commands: redis_on.then_some(cc),
        round_trips: redis_on.then_some(rt),
        redis_rss_mb: info_field(&redis, "memory", "used_memory_peak") / 1_048_576.0,
    }
}

fn python() -> Option<PathBuf> {
    let candidates = [
        std::env::var("TRAWL_PYTHON").ok().map(PathBuf::from),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/venv-redis/bin/python")),
    ];
    candidates.into_iter().flatten().find(|p| {
        Command::new(p)
            .args(["-c", "import scrapy_redis"])
            .status()
            .is_ok_and(|s| s.success())
    })
}

fn python_row(python: &std::path::Path, pages: usize) -> Row {
    let srv = FixtureServer::start(FixtureOptions {
        pages,
        ..FixtureOptions::default()
    })
    .expect("fixture");
    let redis = RedisServer::start().expect("redis-server");
    let before = info_field(&redis, "stats", "total_commands_processed");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/interop_worker.py");
    let children: Vec<Child> = (0..2)
        .map(|i| {
            let mut c = timed(python.to_str().expect("path"));
            c.arg(&script)
                .args(["--redis-url", &redis.url(0), "--spider-name", "bench"]);
            c.args(["--idle-close", "1", "--log-level", "WARNING"]);
            if i == 0 {
                c.args(["--start", &srv.url("/index.html")]);
            }
            c.stdout(Stdio::null()).stderr(Stdio::piped());
            c.spawn().expect("spawn python")
        })
        .collect();
    let (secs, logs) = run(&srv, children);
    let after = info_field(&redis, "stats", "total_commands_processed");
    let (mut cpu, mut rss) = (0.0, 0.0f64);
    for l in &logs {
        let (c, r) = parse_time(l);
        cpu += c;
        rss = rss.max(r);
    }
    Row {
        name: "2 scrapy-redis workers".into(),
        pages: srv.stats().requests(),
        secs,
        cpu_ms: cpu,
        worker_rss_mb: rss,
        commands: (after - before).max(0.0) as u64,
        client_commands: Some((after - before).max(0.0) as u64),
        round_trips: None,
        redis_rss_mb: info_field(&redis, "memory", "used_memory_peak") / 1_048_576.0,
    }
}

/// Redis memory per URL: the SET of hex fingerprints against Bloom bitmaps, and the
/// Bloom filter's false-positive rate measured through the real script.
fn memory_per_url(n: u64) {
    let redis = RedisServer::start().expect("redis-server");
    let fill = "for i = 1, tonumber(ARGV[1]) do redis.call('SADD', KEYS[1], redis.sha1hex(tostring(i))) end return redis.call('SCARD', KEYS[1])";
    redis
        .call(&["EVAL", fill, "1", "set", &n.to_string()])
        .expect("fill");
    let set_bytes = redis
        .call(&["MEMORY", "USAGE", "set", "SAMPLES", "0"])
        .expect("memory usage")
        .as_int()
        .unwrap_or(0) as f64;
    println!(
        "exact SET of {n} fingerprints: {:.1} MB, {:.1} bytes/URL",
        set_bytes / 1_048_576.0,
        set_bytes / n as f64
    );
    for (capacity, rate) in [(n, 1e-4), (100_000_000, 1e-4), (100_000_000, 1e-3)] {
        let (bits, hashes) = BloomFilter::dimensions(capacity, rate).expect("dims");
        println!(
            "Bloom for {capacity} URLs at {rate}: {bits} bits ({:.1} MB), k = {hashes}: {:.2} bytes/URL",
            bits as f64 / 8.0 / 1_048_576.0,
            bits as f64 / 8.0 / capacity as f64
        );
    }
    // Insert n, then probe n others through the BLOOM script on the async client.
    let (bits, hashes) = BloomFilter::dimensions(n, 1e-3).expect("dims");
    let mut reactor = Reactor::new().expect("reactor");
    let client = RedisClient::new(
        &reactor.handle(),
        RedisConfig::from_url(&redis.url(0)).expect("url"),
    )
    .expect("client");
    let script = scripts().bloom.clone();
    client.load_script(&script);
    // Phase 2 only checks (adding the probed URLs would grow the filter past its
    // capacity while measuring it).
    let check = trawl::client::redis::Script::new(
        "for b, o in string.gmatch(ARGV[1], '(%d+):(%d+)') do \
           if redis.call('GETBIT', KEYS[1] .. ':' .. b, o) == 0 then return 1 end \
         end return 0",
    );
    let kind = FilterKind::Bloom {
        bits,
        hashes,
        capacity: n,
        rate: 1e-3,
    };
    let t = Instant::now();
    let mut last = None;
    let mut false_positives = 0u64;
    let mut probes: Vec<_> = Vec::with_capacity(n as usize);
    for phase in 0..2 {
        for i in 0..n {
            let r = Request::get(&format!("http://h.test/{phase}/{i}")).expect("url");
            let arg = kind.argument(&r, None);
            let s = if phase == 0 { &script } else { &check };
            let d = client.eval(s, &["bloom"], &[arg.as_str()]);
            if phase == 1 {
                probes.push(d.clone());
            }
            last = Some(d);
            if i % 20_000 == 19_999 {
                reactor
                    .run_until(last.as_ref().expect("some"))
                    .expect("run");
            }
        }
        reactor
            .run_until(last.as_ref().expect("some"))
            .expect("run");
    }
    for d in probes {
        if let Some(Ok(Value::Integer(0))) = d.take_result() {
            false_positives += 1;
        }
    }
    let used: i64 = (0..kind.blocks())
        .map(|b| {
            redis
                .call(&["MEMORY", "USAGE", &format!("bloom:{b}"), "SAMPLES", "0"])
                .ok()
                .and_then(|v| v.as_int())
                .unwrap_or(0)
        })
        .sum();
    println!(
        "Bloom at capacity {n}, rate 1e-3: {:.1} MB in Redis ({:.2} bytes/URL); {false_positives} \
         false positives in {n} new URLs ({:.4}%, configured 0.1%); {:.1} µs per check pipelined",
        used as f64 / 1_048_576.0,
        used as f64 / n as f64,
        false_positives as f64 * 100.0 / n as f64,
        t.elapsed().as_secs_f64() * 1e6 / (2 * n) as f64
    );
}

fn main() {
    let pages = if smoke() { 300 } else { 5000 };
    let mut rows = vec![
        trawl_row("memory scheduler, 1 process", pages, 1, false),
        trawl_row("1 trawl --redis worker", pages, 1, true),
        trawl_row("2 trawl --redis workers", pages, 2, true),
    ];
    if !smoke() {
        match python() {
            Some(p) => rows.push(python_row(&p, pages)),
            None => println!(
                "2 scrapy-redis workers: skipped (no Python with scrapy-redis; run scripts/test.sh)"
            ),
        }
    }
    println!(
        "\n{:<30} {:>7} {:>9} {:>10} {:>9} {:>10} {:>10} {:>11} {:>9}",
        "run",
        "pages",
        "pages/s",
        "CPU ms/pg",
        "RSS MB",
        "sent/page",
        "srv/page",
        "rtrips/page",
        "Redis MB"
    );
    println!("(sent: commands the workers sent; srv: commands Redis ran, script bodies included)");
    for r in &rows {
        let per = |x: u64| x as f64 / r.pages.max(1) as f64;
        println!(
            "{:<30} {:>7} {:>9.0} {:>10.3} {:>9.1} {:>10} {:>10.2} {:>11} {:>9.1}",
            r.name,
            r.pages,
            r.pages as f64 / r.secs.max(1e-9),
            r.cpu_ms / r.pages.max(1) as f64,
            r.worker_rss_mb,
            r.client_commands
                .map_or("-".into(), |c| format!("{:.2}", per(c))),
            per(r.commands),
            r.round_trips
                .map_or("-".into(), |rt| format!("{:.2}", per(rt))),
            r.redis_rss_mb
        );
    }
    let base = rows[0].pages as f64 / rows[0].secs.max(1e-9);
    for r in &rows[1..] {
        println!(
            "{}: {:.2}x the memory scheduler's pages/s",
            r.name,
            r.pages as f64 / r.secs.max(1e-9) / base
        );
    }
    memory_per_url(if smoke() { 10_000 } else { 1_000_000 });
}
