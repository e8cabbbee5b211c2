//! JOBDIR with real processes and real files: `trawl crawl --jobdir` against a fixture
//! server in this process, stopped with SIGINT, killed with SIGKILL twenty times,
//! resumed from truncated and corrupted journals, behind the killed run (local batches
//! made again), after a disk-full stop and after a power cut shortened a feed (back to
//! the last `SYNC`). Every page must be fetched, every item must appear exactly once,
//! and re-fetches are bounded by what was in flight at each kill. The test acts
//! "mid-crawl" by waiting on the server's request counter, never by sleeping a fixed
//! time.

mod util;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use trawl::testing::{FixtureOptions, FixtureServer, TempDir};

const CONCURRENCY: u64 = 16;

fn trawl() -> &'static str {
    env!("CARGO_BIN_EXE_trawl")
}

fn server(pages: usize) -> FixtureServer {
    FixtureServer::start(FixtureOptions {
        pages,
        record: true,
        ..FixtureOptions::default()
    })
    .expect("fixture server")
}

/// A directory for one test, removed when the test passes.
fn tmp(name: &str) -> TempDir {
    TempDir::new(&format!("jobdir-{name}")).expect("tmp dir")
}

/// `open()`, retried while it says "in use by another process": other tests in this
/// process spawn `trawl` children, and between fork and exec a child holds a copy of
/// every descriptor, so the flock of a job just dropped can outlive it for a moment.
fn open_through_fork_window<T>(
    open: impl Fn() -> Result<T, trawl::defer::Failure>,
) -> Result<T, trawl::defer::Failure> {
    let mut result = open();
    for _ in 0..100 {
        match &result {
            Err(e) if e.to_string().contains("in use by another process") => {
                std::thread::sleep(std::time::Duration::from_millis(10));
                result = open();
            }
            _ => break,
        }
    }
    result
}

/// A crawl of `srv` with the job in `dir/job` and the feed `dir/feed.jl`.
fn crawl_cmd(srv: &FixtureServer, dir: &Path, extra: &[&str]) -> Command {
    let mut c = job_cmd(srv, dir);
    c.arg("-o").arg(dir.join("feed.jl")).args(extra);
    c
}

/// A crawl of `srv` with the job in `dir/job`, no feed.
fn job_cmd(srv: &FixtureServer, dir: &Path) -> Command {
    let mut c = Command::new(trawl());
    c.arg("crawl")
        .arg(srv.url("/index.html"))
        .arg("--same-domain")
        .arg("--jobdir")
        .arg(dir.join("job"))
        .args([
            "-L",
            "INFO",
            "-s",
            &format!("CONCURRENT_REQUESTS={CONCURRENCY}"),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

fn spawn(srv: &FixtureServer, dir: &Path) -> Child {
    crawl_cmd(srv, dir, &[]).spawn().expect("spawn trawl")
}

fn finish(child: Child) -> (i32, String) {
    let out = child.wait_with_output().expect("wait");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .expect("kill")
        .success();
    assert!(ok, "kill {sig} failed");
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

/// The feed's URLs (without scheme and authority: runs use different ports).
fn feed_paths(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut v: Vec<String> = text
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("a feed line is not JSON ({e}): {l:?}"));
            let url = v["url"].as_str().unwrap_or_default().to_owned();
            normalize(url.splitn(4, '/').nth(3).unwrap_or_default())
        })
        .collect();
    v.sort();
    v
}

/// Compares two sorted lists of feed URLs, printing only the differences.
#[track_caller]
fn assert_same(actual: &[String], expected: &[String], what: &str) {
    if actual == expected {
        return;
    }
    fn count(v: &[String]) -> HashMap<&str, i32> {
        let mut m: HashMap<&str, i32> = HashMap::new();
        for s in v {
            *m.entry(s.as_str()).or_default() += 1;
        }
        m
    }
    let (a, e) = (count(actual), count(expected));
    let mut missing: Vec<&str> = e
        .iter()
        .filter(|(k, n)| a.get(*k).copied().unwrap_or(0) < **n)
        .map(|(k, _)| *k)
        .collect();
    let mut extra: Vec<(&str, i32)> = a
        .iter()
        .filter(|(k, n)| e.get(*k).copied().unwrap_or(0) < **n)
        .map(|(k, n)| (*k, *n))
        .collect();
    missing.sort_unstable();
    extra.sort_unstable();
    panic!(
        "{what}: {} lines, expected {}; {} missing (first: {:?}); {} extra (first: {:?})",
        actual.len(),
        expected.len(),
        missing.len(),
        &missing[..missing.len().min(8)],
        extra.len(),
        &extra[..extra.len().min(8)]
    );
}

/// The pages the fixture site says a full crawl visits, as `feed_paths` and `fetches`
/// spell them (no leading `/`, query arguments sorted), sorted.
fn expected_pages(srv: &FixtureServer) -> Vec<String> {
    srv.site()
        .expected_crawl()
        .0
        .iter()
        .map(|p| p.trim_start_matches('/').to_owned())
        .collect()
}

/// A crawl without interruption and without a JOBDIR: the reference feed, and how
/// often it fetched each page (the start URL is fetched twice by design: start
/// requests are `dont_filter`, as in Scrapy). Both are the fixture site's expected
/// crawl: each page fetched once but the start URL, one item per response.
fn reference(pages: usize, name: &str) -> (Vec<String>, HashMap<String, u32>) {
    let srv = server(pages);
    let dir = tmp(&format!("ref-{name}"));
    let out = Command::new(trawl())
        .arg("crawl")
        .arg(srv.url("/index.html"))
        .arg("--same-domain")
        .arg("-o")
        .arg(dir.join("feed.jl"))
        .args(["-L", "WARNING"])
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let feed = feed_paths(&dir.join("feed.jl"));
    let expected = expected_pages(&srv);
    let mut expected_feed = expected.clone();
    expected_feed.push("index.html".to_owned());
    expected_feed.sort();
    assert_same(&feed, &expected_feed, "the reference feed");
    let fetched = fetches(&srv);
    let mut fetched_pages: Vec<String> = fetched.keys().cloned().collect();
    fetched_pages.sort();
    assert_same(&fetched_pages, &expected, "the reference fetches");
    for (page, n) in &fetched {
        let want = if page == "index.html" { 2 } else { 1 };
        assert_eq!(*n, want, "the reference crawl fetched /{page} {n} times");
    }
    (feed, fetched)
}

/// Fetches per page (normalized; robots.txt, fetched once per run, aside).
fn fetches(srv: &FixtureServer) -> HashMap<String, u32> {
    let mut m = HashMap::new();
    for (t, n) in srv.stats().targets() {
        if t != "/robots.txt" {
            *m.entry(normalize(t.trim_start_matches('/'))).or_default() += n;
        }
    }
    m
}

/// Fetches beyond the reference run's, and the pages they were for.
fn refetched(srv: &FixtureServer, reference: &HashMap<String, u32>) -> (u32, Vec<String>) {
    let mut extra = 0;
    let mut pages = Vec::new();
    for (p, n) in fetches(srv) {
        let r = reference.get(&p).copied().unwrap_or(0);
        if n > r {
            extra += n - r;
            pages.push(p);
        }
    }
    (extra, pages)
}

fn all_pages_fetched(srv: &FixtureServer, expected: &[String]) {
    let fetched = fetches(srv);
    for p in expected {
        assert!(fetched.contains_key(p), "/{p} never fetched");
    }
}

#[test]
fn sigint_then_resume_fetches_every_page_once() {
    let pages = 1500;
    let (expected, ref_fetches) = reference(pages, "sigint");
    let srv = server(pages);
    let dir = tmp("sigint");
    let child = spawn(&srv, &dir);
    assert!(srv.stats().wait_for_requests(400, Duration::from_secs(60)));
    signal(&child, "-INT");
    let (rc, log) = finish(child);
    assert_eq!(rc, 0, "{log}");
    assert!(log.contains("Closing spider (shutdown)"), "{log}");
    let partial = feed_paths(&dir.join("feed.jl"));
    assert!(!partial.is_empty() && partial.len() < expected.len());
    let (rc, log) = finish(spawn(&srv, &dir));
    assert_eq!(rc, 0, "{log}");
    assert!(log.contains("Resuming the job"), "{log}");
    assert_same(&feed_paths(&dir.join("feed.jl")), &expected, "the feed");
    let (again, which) = refetched(&srv, &ref_fetches);
    assert_eq!(again, 0, "a clean pause re-fetches nothing: {which:?}");
    all_pages_fetched(&srv, &expected);
}

#[test]
fn twenty_kill_nines_lose_nothing_and_double_nothing() {
    let pages = 5000;
    let (expected, ref_fetches) = reference(pages, "kill9");
    let srv = server(pages);
    let dir = tmp("kill9");
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut kills = 0;
    // Requests in progress at the kills, re-queued by the runs after them.
    let mut requeued = 0u64;
    let mut last_run_killed = false;
    let mut logs = String::new();
    while kills < 20 {
        let child = spawn(&srv, &dir);
        let at = srv.stats().requests() + 40 + next() % 200;
        if !srv.stats().wait_for_requests(at, Duration::from_secs(60)) {
            panic!("the crawl stalled before request {at}");
        }
        if srv.stats().requests() as usize >= pages {
            // Too late to kill mid-crawl: let this run finish instead.
            let (rc, log) = finish(child);
            assert_eq!(rc, 0, "{log}");
            if last_run_killed {
                requeued += in_progress_after_kill(&log);
            }
            last_run_killed = false;
            break;
        }
        signal(&child, "-KILL");
        let (_, log) = finish(child);
        if last_run_killed {
            requeued += in_progress_after_kill(&log);
        }
        last_run_killed = true;
        logs.push_str(&log);
        kills += 1;
    }
    let (rc, log) = finish(spawn(&srv, &dir));
    assert_eq!(rc, 0, "{log}");
    if last_run_killed {
        requeued += in_progress_after_kill(&log);
    }
    assert!(kills >= 15, "only {kills} kills landed mid-crawl");
    assert!(
        requeued >= kills,
        "{requeued} requests re-queued after {kills} kills"
    );
    assert_same(
        &feed_paths(&dir.join("feed.jl")),
        &expected,
        "no item missing or doubled",
    );
    all_pages_fetched(&srv, &expected);
    let (again, _) = refetched(&srv, &ref_fetches);
    assert!(
        u64::from(again) <= kills * CONCURRENCY,
        "{again} pages fetched twice after {kills} kills"
    );
    eprintln!(
        "{kills} kills: {again} pages fetched again, {requeued} in-progress requests re-queued"
    );
}

/// The "N were in progress" of the log of a run started after a kill: every kill
/// lands mid-crawl, with requests in flight, so the resume re-queues at least one
/// (a run that does not resume, or resumes none, fails here).
fn in_progress_after_kill(log: &str) -> u64 {
    let n = log
        .lines()
        .find(|l| l.contains("Resuming the job"))
        .and_then(|l| l.split(" (").nth(1))
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a run after a kill resumes the job: {log}"));
    assert!(n >= 1, "no request in progress at a kill: {log}");
    n
}

#[test]
fn a_torn_journal_resumes_from_its_valid_prefix() {
    let pages = 800;
    let (expected, _) = reference(pages, "torn");
    let srv = server(pages);
    let dir = tmp("torn");
    let child = spawn(&srv, &dir);
    assert!(srv.stats().wait_for_requests(300, Duration::from_secs(60)));
    signal(&child, "-KILL");
    let _ = finish(child);
    let journal = dir.join("job/journal");
    let bytes = std::fs::read(&journal).expect("journal");
    // Cut inside the last records at every byte offset: the job opens each time.
    let copy = tmp("torn-copy");
    std::fs::copy(dir.join("job/trawl-job.json"), copy.join("trawl-job.json")).expect("copy");
    let from = bytes.len().saturating_sub(400);
    for cut in from..bytes.len() {
        std::fs::write(copy.join("journal"), &bytes[..cut]).expect("write");
        let stats: std::rc::Rc<dyn trawl::crawl::stats::StatsCollector> =
            std::rc::Rc::new(trawl::crawl::stats::MemoryStatsCollector::new());
        let job = trawl::crawl::jobdir::Job::open(
            &copy,
            "crawl",
            trawl::crawl::jobdir::FsyncPolicy::Never,
            false,
            stats.clone(),
        );
        let job = job.unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        let len = std::fs::metadata(copy.join("journal"))
            .map(|m| m.len())
            .unwrap_or(0);
        assert!(
            len as usize <= cut,
            "cut at {cut}: the journal grew to {len}"
        );
        drop(job);
    }
    // And the crawl completes from a cut journal.
    std::fs::write(&journal, &bytes[..bytes.len() - 7]).expect("write");
    let (rc, log) = finish(spawn(&srv, &dir));
    assert_eq!(rc, 0, "{log}");
    assert!(log.contains("jobdir/torn_tail_bytes"), "{log}");
    assert_same(&feed_paths(&dir.join("feed.jl")), &expected, "the feed");
}

#[test]
fn a_corrupt_middle_is_a_clear_error_and_salvage_skips_it() {
    let srv = server(600);
    let dir = tmp("corrupt");
    let child = spawn(&srv, &dir);
    assert!(srv.stats().wait_for_requests(300, Duration::from_secs(60)));
    signal(&child, "-INT");
    let _ = finish(child);
    let journal = dir.join("job/journal");
    let mut bytes = std::fs::read(&journal).expect("journal");
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x5a;
    std::fs::write(&journal, &bytes).expect("write");
    let (rc, log) = finish(spawn(&srv, &dir));
    assert_ne!(rc, 0, "{log}");
    assert!(
        log.contains("corrupt record at byte") && log.contains("journal"),
        "{log}"
    );
    let out = crawl_cmd(&srv, &dir, &["--jobdir-salvage"])
        .output()
        .expect("run");
    let log = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{log}");
    assert!(log.contains("jobdir/salvaged_regions"), "{log}");
}

#[test]
fn a_second_process_and_an_other_version_are_refused() {
    let srv = server(3000);
    let dir = tmp("lock");
    let first = spawn(&srv, &dir);
    assert!(srv.stats().wait_for_requests(20, Duration::from_secs(60)));
    let out = crawl_cmd(&srv, &dir, &[]).output().expect("run");
    let log = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert!(log.contains("is in use by another process"), "{log}");
    signal(&first, "-KILL");
    let _ = finish(first);
    let meta = dir.join("job/trawl-job.json");
    let text = std::fs::read_to_string(&meta).expect("meta");
    std::fs::write(&meta, text.replace("\"version\": 1", "\"version\": 99")).expect("write");
    let out = crawl_cmd(&srv, &dir, &[]).output().expect("run");
    let log = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert!(log.contains("job format 99"), "{log}");
}

#[test]
fn disk_full_stops_with_a_clear_error_and_the_job_resumes() {
    let pages = 1500;
    let (expected, _) = reference(pages, "full");
    let srv = server(pages);
    let dir = tmp("full");
    // A per-file size limit (EFBIG) stands in for a full disk; SIGXFSZ is ignored so
    // the write fails instead of killing the process.
    let cmd = format!(
        "trap '' XFSZ; ulimit -f 256; exec {} crawl {} --same-domain --jobdir {} -o {} -L INFO",
        trawl(),
        srv.url("/index.html"),
        dir.join("job").display(),
        dir.join("feed.jl").display()
    );
    let out = Command::new("bash")
        .args(["-c", &cmd])
        .output()
        .expect("bash");
    let log = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{log}");
    assert!(log.contains("cannot write the job"), "{log}");
    assert!(log.contains("jobdir_error"), "{log}");
    let (rc, log) = finish(spawn(&srv, &dir));
    assert_eq!(rc, 0, "{log}");
    assert_same(&feed_paths(&dir.join("feed.jl")), &expected, "the feed");
}

#[test]
fn json_csv_feeds_and_the_bloom_filter_survive_kills() {
    let pages = 1200;
    let (expected, _) = reference(pages, "json");
    let srv = server(pages);
    let dir = tmp("json");
    let json = dir.join("feed.json");
    let csv = dir.join("feed.csv");
    let extra = [
        "-o",
        json.to_str().expect("path"),
        "-o",
        csv.to_str().expect("path"),
        "-s",
        "DUPEFILTER_CLASS=trawl.BloomDupeFilter",
        "-s",
        "BLOOMFILTER_CAPACITY=100000",
        "-s",
        "JOBDIR_FSYNC=always",
    ];
    for i in 0..5 {
        let child = crawl_cmd(&srv, &dir, &extra).spawn().expect("spawn");
        let at = srv.stats().requests() + 100 + i * 37;
        assert!(srv.stats().wait_for_requests(at, Duration::from_secs(60)));
        signal(&child, "-KILL");
        let _ = finish(child);
    }
    let out = crawl_cmd(&srv, &dir, &extra).output().expect("run");
    let log = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{log}");
    assert!(log.contains("dupefilter/bloom_estimated_fpr"), "{log}");
    assert_same(
        &feed_paths(&dir.join("feed.jl")),
        &expected,
        "the JSON lines feed",
    );
    let array: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json"))
            .expect("a valid JSON array");
    let mut from_json: Vec<String> = array
        .as_array()
        .expect("array")
        .iter()
        .map(|v| {
            normalize(
                v["url"]
                    .as_str()
                    .unwrap_or_default()
                    .splitn(4, '/')
                    .nth(3)
                    .unwrap_or_default(),
            )
        })
        .collect();
    from_json.sort();
    assert_same(&from_json, &expected, "the JSON feed");
    let csv_text = std::fs::read_to_string(&csv).expect("csv");
    let header = csv_text.lines().next().expect("header").to_owned();
    assert_eq!(
        csv_text.lines().filter(|l| **l == *header).count(),
        1,
        "one header"
    );
    assert_eq!(
        csv_text.lines().count(),
        expected.len() + 1,
        "one row per item"
    );
}

/// Closes the spider with `shutdown` after 150 responses: an embedder pausing the crawl
/// (the extension object itself holds nothing; its signal handler does the work).
struct PauseAt;

#[test]
fn an_embedder_pauses_with_close_spider_and_resumes_with_a_new_crawler() {
    use std::cell::Cell;
    use std::rc::Rc;
    use trawl::crawl::signals::Signal;
    use trawl::crawl::{Priority, Registry, Settings, run_spider_with};
    use trawl::testing::spiders::FixtureSpider;

    let srv = server(600);
    let dir = tmp("embed");
    let settings = || {
        let mut s = Settings::new();
        s.set(
            "JOBDIR",
            dir.join("job").to_str().expect("path"),
            Priority::Project,
        );
        s.set(
            "FEEDS",
            serde_json::json!({ dir.join("items.jl").to_str().expect("path"): {"format": "jsonlines"} }),
            Priority::Project,
        );
        s.set("LOG_LEVEL", "WARNING", Priority::Project);
        s
    };
    let mut registry = Registry::with_builtins();
    registry.register_extension("test.PauseAt", |ctx| {
        let seen = Rc::new(Cell::new(0));
        let weak = Rc::downgrade(ctx);
        ctx.signals.connect(Signal::ResponseReceived, move |_| {
            seen.set(seen.get() + 1);
            if seen.get() == 150
                && let Some(c) = weak.upgrade()
            {
                c.close_spider("shutdown");
            }
            Ok(())
        });
        Ok(Rc::new(PauseAt) as Rc<dyn std::any::Any>)
    });
    let mut first = settings();
    first.set(
        "EXTENSIONS",
        serde_json::json!({"test.PauseAt": 500}),
        Priority::Project,
    );
    let c = run_spider_with(
        Box::new(FixtureSpider::new(&srv.url("/index.html"))),
        first,
        registry,
    )
    .expect("first run");
    assert_eq!(
        c.stats.get_value("finish_reason"),
        Some(serde_json::json!("shutdown"))
    );
    drop(c);
    let c = run_spider_with(
        Box::new(FixtureSpider::new(&srv.url("/index.html"))),
        settings(),
        Registry::with_builtins(),
    )
    .expect("second run");
    assert_eq!(
        c.stats.get_value("finish_reason"),
        Some(serde_json::json!("finished"))
    );
    let items = std::fs::read_to_string(dir.join("items.jl")).expect("items");
    let mut lines: Vec<&str> = items.lines().collect();
    let total = lines.len();
    lines.sort_unstable();
    lines.dedup();
    assert_eq!(lines.len(), total, "no item twice");
    // And none missing: a run without a JOBDIR on a twin server yields as many.
    let twin = server(600);
    let ref_dir = tmp("embed-ref");
    let mut s = Settings::new();
    s.set(
        "FEEDS",
        serde_json::json!({ ref_dir.join("items.jl").to_str().expect("path"): {"format": "jsonlines"} }),
        Priority::Project,
    );
    s.set("LOG_LEVEL", "WARNING", Priority::Project);
    run_spider_with(
        Box::new(FixtureSpider::new(&twin.url("/index.html"))),
        s,
        Registry::with_builtins(),
    )
    .expect("reference run");
    let reference = std::fs::read_to_string(ref_dir.join("items.jl")).expect("items");
    assert_eq!(total, reference.lines().count(), "every item once");
    assert_eq!(
        total,
        twin.site().expected_crawl().1,
        "the site's count of quote items"
    );
    // Every page once, as the twin run fetched them: the pause let the requests in
    // progress finish (nothing re-fetched) and the resumed run does not issue the
    // start request again, so /index.html is fetched twice in all (the start request
    // bypasses the dupefilter, then a link to it) — the fixture site's expected crawl.
    // robots.txt once per run.
    let fetched = fetches(&srv);
    assert_eq!(fetched, fetches(&twin), "the same fetches as one run");
    let mut pages: Vec<String> = fetched.keys().cloned().collect();
    pages.sort();
    assert_same(&pages, &expected_pages(&twin), "the pages fetched");
    for (page, n) in &fetched {
        let want = if page == "index.html" { 2 } else { 1 };
        assert_eq!(*n, want, "/{page} fetched {n} times");
    }
    assert_eq!(srv.stats().targets().get("/robots.txt"), Some(&2));
}

#[test]
fn the_spider_state_survives_a_reopen_and_uncommitted_changes_do_not() {
    use std::rc::Rc;
    use trawl::crawl::jobdir::{FsyncPolicy, Job};
    use trawl::crawl::stats::{MemoryStatsCollector, StatsCollector};
    let dir = tmp("state");
    let stats = || -> Rc<dyn StatsCollector> { Rc::new(MemoryStatsCollector::new()) };
    let job = Job::open(&dir, "s", FsyncPolicy::Always, false, stats()).expect("job");
    job.spider_state().set("pages", 7);
    job.spider_state()
        .update(|m| m.insert("seen".into(), serde_json::json!(["a", "b"])));
    job.commit();
    // Changed but never committed: a crash here forgets it.
    job.spider_state().set("pages", 8);
    drop(job);
    let reopened =
        open_through_fork_window(|| Job::open(&dir, "s", FsyncPolicy::Never, false, stats()));
    let job = reopened.expect("reopen");
    assert_eq!(job.spider_state().get("pages"), Some(serde_json::json!(7)));
    assert_eq!(
        job.spider_state().get("seen"),
        Some(serde_json::json!(["a", "b"]))
    );
    drop(job);
    let other =
        open_through_fork_window(|| Job::open(&dir, "another", FsyncPolicy::Never, false, stats()));
    assert!(
        other
            .err()
            .is_some_and(|e| e.to_string().contains("belongs to spider")),
        "another spider's JOBDIR is refused"
    );
}

/// A feed as a job output, as a remote feed is one: its name is a URI, its committed
/// bytes are in a local file the journal names.
struct LocalBatch {
    name: String,
    file: std::path::PathBuf,
    len: std::cell::Cell<u64>,
    items: std::cell::Cell<u64>,
}

impl LocalBatch {
    /// One more item of `n` bytes, written to the OS.
    fn write(&self, n: usize) {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.file)
            .and_then(|mut f| f.write_all(&vec![b'x'; n]))
            .expect("the batch file");
        self.len.set(self.len.get() + n as u64);
        self.items.set(self.items.get() + 1);
    }
}

impl trawl::crawl::jobdir::JobOutput for LocalBatch {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn request_done(&self, _id: u64) {}

    fn position(&self) -> std::io::Result<(u64, u64)> {
        Ok((self.len.get(), self.items.get()))
    }

    fn local_file(&self) -> Option<std::path::PathBuf> {
        Some(self.file.clone())
    }

    fn sync(&self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A resume falls back to the last `SYNC` only when the file the journal names for a
/// feed is shorter than committed (a power cut lost what the OS held): after a process
/// kill the file is whole and the resume continues from the last commit. A feed whose
/// name is not its file (an `s3://` URI) is checked by the file its records name; a
/// feed with nothing committed yet is whole without a file.
#[test]
fn a_feed_shorter_than_its_commit_falls_back_to_the_last_sync_a_whole_one_does_not() {
    use std::rc::Rc;
    use trawl::crawl::jobdir::{FsyncPolicy, Job, JobOutput};
    use trawl::crawl::stats::{MemoryStatsCollector, StatsCollector};
    let dir = tmp("power-cut");
    let jobdir = dir.join("job");
    let name = "s3://feeds/part-1.jl".to_owned();
    let open = |stats: &Rc<MemoryStatsCollector>| {
        let stats: Rc<dyn StatsCollector> = stats.clone();
        open_through_fork_window(|| {
            Job::open(&jobdir, "s", FsyncPolicy::Never, false, stats.clone())
        })
        .expect("the job opens")
    };
    let rolled_back =
        |stats: &MemoryStatsCollector| stats.get_value("jobdir/rolled_back_to_sync").is_some();
    let output = Rc::new(LocalBatch {
        name: name.clone(),
        file: dir.join("batch.feed"),
        len: 0.into(),
        items: 0.into(),
    });

    // Nothing written yet, no file: the commit of 0 bytes holds.
    let stats = Rc::new(MemoryStatsCollector::new());
    let job = open(&stats);
    let registered: Rc<dyn JobOutput> = output.clone();
    job.register_output(Rc::downgrade(&registered));
    job.commit();
    drop(job);
    let stats = Rc::new(MemoryStatsCollector::new());
    let job = open(&stats);
    assert!(!rolled_back(&stats));
    assert_eq!(job.feed_position(&name), Some((0, 0)));

    // Two items, a durable point, a third item; then a kill.
    job.register_output(Rc::downgrade(&registered));
    for _ in 0..2 {
        output.write(100);
        job.commit();
    }
    job.sync();
    output.write(100);
    job.commit();
    drop(job);
    let stats = Rc::new(MemoryStatsCollector::new());
    let job = open(&stats);
    assert!(!rolled_back(&stats), "a whole file: no fall-back");
    assert_eq!(job.feed_position(&name), Some((300, 3)));
    drop(job);

    // A power cut took the third item's bytes: back to the SYNC.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&output.file)
        .and_then(|f| f.set_len(250))
        .expect("cut the file");
    let stats = Rc::new(MemoryStatsCollector::new());
    let job = open(&stats);
    assert!(rolled_back(&stats), "a short file: back to the last SYNC");
    assert_eq!(job.feed_position(&name), Some((200, 2)));
}

/// A job with local batches of 100, killed mid-crawl and resumed behind its killed
/// run — the journal put back to its commit at item 350, as a fall-back to the last
/// `SYNC` after a power cut puts it: batches 1 to 3 stay as the killed run wrote
/// them, batch 4 is cut back and continued, and the killed run's batches 5 and on are
/// removed and made again (a batch file is opened for appending: continuing the
/// killed run's copy would double its items).
#[test]
fn local_batches_behind_the_killed_run_are_made_again_not_appended_to() {
    let srv = server(3000);
    let dir = tmp("batches-behind");
    let feeds = format!(
        r#"FEEDS={{"{}": {{"format": "jsonlines", "batch_item_count": 100}}}}"#,
        dir.join("part-%(batch_id)04d.jl").display()
    );
    let command = || {
        let mut c = job_cmd(&srv, &dir);
        c.args(["-s", &feeds, "-s", "JOBDIR_FSYNC=never"]);
        c
    };
    let victim = command().spawn().expect("spawn trawl");
    let started = std::time::Instant::now();
    while srv.stats().requests() < 1500 {
        assert!(started.elapsed().as_secs() < 120, "the crawl got going");
        std::thread::sleep(Duration::from_millis(5));
    }
    signal(&victim, "-KILL");
    let _ = finish(victim);
    let batch = |n: usize| dir.join(format!("part-{n:04}.jl"));
    let made = (1..).take_while(|n| batch(*n).exists()).count();
    assert!(made > 6, "the killed run made more than 6 batches: {made}");
    let items = util::journal::cut_at_items(&dir.join("job").join("journal"), 350);
    assert!((350..400).contains(&items), "cut in batch 4: {items}");

    let out = command().output().expect("the resume runs");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(log.contains("bytes of batch 4 ("), "{log}");
    let last = (1..).take_while(|n| batch(*n).exists()).count();
    let mut feed = Vec::new();
    for n in 1..=last {
        let lines = feed_paths(&batch(n));
        if n < last {
            assert_eq!(lines.len(), 100, "batch {n} is full");
        }
        feed.extend(lines);
    }
    feed.sort();
    let mut expected = expected_pages(&srv);
    expected.push("index.html".to_owned());
    expected.sort();
    assert_same(&feed, &expected, "the batches");
}
