//! The `trawl` binary, run as a user runs it: crawl, fetch, serve, bench, the common
//! flags, usage errors, and Ctrl+C.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use trawl::crawl::canonicalize_url;
use trawl::testing::{FixtureOptions, FixtureServer, TempDir};

fn trawl() -> Command {
    Command::new(env!("CARGO_BIN_EXE_trawl"))
}

fn run(args: &[&str]) -> Output {
    trawl().args(args).output().expect("trawl runs")
}

/// A file's path in a directory of its own; the directory (the first half) is removed
/// when the test passes.
fn tmp(name: &str) -> (TempDir, PathBuf) {
    let dir = TempDir::new("cli").expect("temp dir");
    let path = dir.join(name);
    (dir, path)
}

fn server(pages: usize) -> FixtureServer {
    FixtureServer::start(FixtureOptions {
        pages,
        record: true,
        ..FixtureOptions::default()
    })
    .expect("fixture server")
}

fn canonical_paths(urls: impl IntoIterator<Item = String>, base: &str) -> BTreeSet<String> {
    urls.into_iter()
        .map(|u| {
            canonicalize_url(&u, true, false)
                .expect("valid URL")
                .trim_start_matches(base)
                .to_owned()
        })
        .collect()
}

#[test]
fn crawl_writes_one_record_per_page_of_the_site() {
    let srv = server(60);
    let (_out_dir, out) = tmp("pages.jl");
    let o = run(&[
        "crawl",
        &srv.url("/index.html"),
        "--same-domain",
        "-o",
        out.to_str().expect("utf-8 path"),
        "-L",
        "WARNING",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&out).expect("feed written");
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let (expected, _) = srv.site().expected_crawl();
    let got = canonical_paths(
        records
            .iter()
            .map(|r| r["url"].as_str().expect("url").to_owned()),
        &srv.base(),
    );
    assert_eq!(got, expected);
    for r in &records {
        assert_eq!(r["status"], 200);
        assert!(r["title"].is_string(), "{r}");
        assert!(r["depth"].is_u64());
        assert!(r["links_out"].is_u64());
        assert!(r.get("referer").is_some());
    }
    // Every page fetched once (the start URL twice: it bypasses the dupefilter).
    let targets = srv.stats().targets();
    assert!(
        targets
            .iter()
            .all(|(t, n)| *n == 1 || (t == "/index.html" && *n == 2)),
        "{targets:?}"
    );
}

#[test]
fn feed_formats_parse_back_and_settings_override() {
    let srv = server(30);
    for (name, check) in [
        ("out.json", "json"),
        ("out.csv", "csv"),
        ("out.data:jsonlines", "jl"),
    ] {
        let (_out_dir, out) = tmp(name.split(':').next().unwrap_or(name));
        let spec = format!(
            "{}{}",
            out.display(),
            name.find(':').map_or("", |i| &name[i..])
        );
        let o = run(&[
            "crawl",
            &srv.url("/index.html"),
            "-O",
            &spec,
            "-s",
            "CLOSESPIDER_PAGECOUNT=5",
            "-s",
            "CONCURRENT_REQUESTS=1",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            stderr.contains("'finish_reason': \"closespider_pagecount\""),
            "-s reached the crawl: {stderr}"
        );
        let text = std::fs::read_to_string(&out).expect("feed written");
        let n = match check {
            "json" => serde_json::from_str::<Vec<Value>>(&text)
                .expect("a JSON array")
                .len(),
            "jl" => text
                .lines()
                .map(|l| {
                    serde_json::from_str::<Value>(l)
                        .unwrap_or_else(|e| panic!("{name}: a line is not JSON ({e}): {l:?}"))
                })
                .collect::<Vec<Value>>()
                .len(),
            _ => {
                let mut lines = text.lines();
                let header = lines.next().expect("a header line");
                assert!(header.starts_with("url,status,title"), "{header}");
                lines.count()
            }
        };
        // CLOSESPIDER_PAGECOUNT counts responses, robots.txt's included (as Scrapy's).
        assert!((4..=6).contains(&n), "{name}: {n} records");
    }
}

#[test]
fn usage_errors_are_one_line_and_exit_2() {
    for args in [
        &["crawl", "--no-such-flag"][..],
        &["nonsense"],
        &["crawl"],
        &["crawl", "not a url"],
        &["fetch"],
        &["serve", "--port", "many"],
        &["crawl", "http://a.test/", "-s", "NOEQUALS"],
        &["crawl", "http://a.test/", "--allow", "("],
        &["bench", "-L", "LOUD"],
        &["crawl", "--redis-start-key", "k"],
        &[
            "crawl",
            "http://a.test/",
            "--redis",
            "unix:///tmp/redis.sock",
        ],
        &["crawl", "http://a.test/", "--redis", "redis://h/notadb"],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("trawl: error: "), "{err}");
    }
    let o = run(&["--help"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("Commands:"));
    let o = run(&["fetch", "--help"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("Usage: trawl fetch"));
}

#[test]
fn fetch_prints_bodies_headers_and_errors() {
    let srv = server(5);
    let o = run(&["fetch", &srv.url("/s/000/00001.html")]);
    assert!(o.status.success());
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        srv.site().render_page(1)
    );

    let o = run(&[
        "fetch",
        &srv.url("/echo"),
        "-X",
        "PUT",
        "-d",
        "a=1",
        "-H",
        "X-Test: yes",
    ]);
    let body = String::from_utf8_lossy(&o.stdout);
    assert!(body.starts_with("PUT /echo"), "{body}");
    assert!(body.contains("X-Test: yes"), "{body}");
    assert!(body.ends_with("a=1"), "{body}");

    let o = run(&[
        "fetch",
        "--headers",
        "--no-redirect",
        &srv.url("/redirect/302"),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("< 302 Found"), "{text}");
    assert!(text.contains("< Location: "), "{text}");

    // Without --no-redirect the redirect is followed, as `scrapy fetch` does.
    let o = run(&["fetch", "--headers", &srv.url("/redirect/302")]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("< 200 OK"), "{text}");
    assert!(!text.contains("< 302"), "{text}");
    let o = run(&["fetch", &srv.url("/redirect/301")]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        srv.site().render_page(0)
    );
    // A 404 is still printed, not an error.
    let o = run(&["fetch", "--headers", &srv.url("/status/404")]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("< 404"),
        "{o:?}"
    );

    let o = run(&["fetch", "http://127.0.0.1:1/"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("failed"), "{err}");
}

fn wait_for(mut cond: impl FnMut() -> bool, secs: u64) -> bool {
    let until = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < until {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn sigint(pid: u32) {
    let status = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

#[test]
fn ctrl_c_leaves_a_valid_feed_and_the_stats() {
    let srv = server(100_000);
    let (_out_dir, out) = tmp("interrupted.json");
    let mut child = trawl()
        .args([
            "crawl",
            &srv.url("/index.html"),
            "-O",
            out.to_str().expect("utf-8 path"),
            "-s",
            "DOWNLOAD_DELAY=0.01",
            "-s",
            "RANDOMIZE_DOWNLOAD_DELAY=false",
        ])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("trawl starts");
    let started = wait_for(|| std::fs::metadata(&out).is_ok_and(|m| m.len() > 200), 30);
    assert!(started, "the crawl wrote records");
    sigint(child.id());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("piped")
        .read_to_string(&mut stderr)
        .expect("stderr");
    let status = child.wait().expect("exits");
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("shutting down gracefully"), "{stderr}");
    assert!(stderr.contains("'finish_reason': \"shutdown\""), "{stderr}");
    let text = std::fs::read_to_string(&out).expect("feed");
    let records: Vec<Value> = serde_json::from_str(&text).expect("a valid JSON array");
    assert!(!records.is_empty());
}

#[test]
fn serve_answers_until_interrupted() {
    let mut child = trawl()
        .args(["serve", "--pages", "10", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("trawl serve starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped"))
        .read_line(&mut line)
        .expect("a first line");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .expect("the URL is printed")
        .to_owned();
    let addr = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("host:port")
        .to_owned();
    let mut s = TcpStream::connect(&addr).expect("connects");
    s.write_all(b"GET /robots.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("write");
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("read");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("User-agent: *"));
    sigint(child.id());
    let status = child.wait().expect("exits");
    assert!(status.success());
}

#[test]
fn bench_reports_pages_per_minute() {
    let o = run(&["bench", "--pages", "3000", "--time", "1", "-L", "WARNING"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("pages/min"), "{out}");
    assert!(out.contains("items/min"), "{out}");
    assert!(out.contains("peak RSS"), "{out}");
}

#[test]
fn log_level_from_s_or_l_quiets_the_crawl_and_log_counts_are_in_the_stats() {
    let srv = server(10);
    // Default: INFO lines, and the stats dump (at INFO) carries log_count/INFO.
    let o = run(&[
        "crawl",
        &srv.url("/index.html"),
        "-s",
        "CLOSESPIDER_PAGECOUNT=3",
    ]);
    assert!(o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains(" INFO: "), "{stderr}");
    assert!(stderr.contains("'log_count/INFO': "), "{stderr}");
    assert!(stderr.contains("started (bot: trawlbot)"), "{stderr}");
    // -s LOG_LEVEL=WARNING: no INFO line at all once the crawler has its settings.
    let o = run(&[
        "crawl",
        &srv.url("/index.html"),
        "-s",
        "CLOSESPIDER_PAGECOUNT=3",
        "-s",
        "LOG_LEVEL=WARNING",
    ]);
    assert!(o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains(" INFO: "), "{stderr}");
    // LOG_ENABLED=False: nothing.
    let o = run(&[
        "crawl",
        &srv.url("/index.html"),
        "-s",
        "CLOSESPIDER_PAGECOUNT=3",
        "-s",
        "LOG_ENABLED=False",
    ]);
    assert!(o.status.success());
    assert!(!String::from_utf8_lossy(&o.stderr).contains(": "), "silent");
    // A bad LOG_LEVEL is a clear error, not a silent default.
    let o = run(&["crawl", &srv.url("/index.html"), "-s", "LOG_LEVEL=LOUD"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("LOG_LEVEL"));
}

#[test]
fn an_unknown_setting_is_warned_about_once_with_a_suggestion() {
    let srv = server(5);
    let o = run(&[
        "crawl",
        &srv.url("/index.html"),
        "-s",
        "CONCURENT_REQUESTS=4",
        "-s",
        "CLOSESPIDER_PAGECOUNT=2",
        "-s",
        "MY_OWN_SETTING=1",
    ]);
    assert!(o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    let typo: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("Unknown setting CONCURENT_REQUESTS"))
        .collect();
    assert_eq!(typo.len(), 1, "{stderr}");
    assert!(
        typo[0].contains("did you mean CONCURRENT_REQUESTS?"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Unknown setting MY_OWN_SETTING"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("Unknown setting CLOSESPIDER_PAGECOUNT"),
        "known settings pass: {stderr}"
    );
}

#[test]
fn environment_settings_apply_and_unknown_ones_are_warned_about_once() {
    let srv = server(30);
    let o = trawl()
        .args(["crawl", &srv.url("/index.html"), "-s", "DOWNLOAD_DELAYY=1"])
        .env("TRAWL_SETTING_CLOSESPIDER_PAGECOUNT", "3")
        .env("TRAWL_SETTING_DOWNLOAD_DELAYY", "2")
        .env("TRAWL_SETTING_LOGSTATS_INTERVL", "0")
        .output()
        .expect("trawl runs");
    assert!(o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    // Applied: the crawl stops after 3 pages.
    assert!(
        stderr.contains("'finish_reason': \"closespider_pagecount\""),
        "{stderr}"
    );
    let warned = |name: &str| {
        stderr
            .lines()
            .filter(|l| l.contains(&format!("Unknown setting {name} ")))
            .count()
    };
    assert_eq!(warned("LOGSTATS_INTERVL"), 1, "{stderr}");
    assert!(
        stderr.contains("TRAWL_SETTING_LOGSTATS_INTERVL in the environment"),
        "{stderr}"
    );
    assert!(
        stderr.contains("did you mean LOGSTATS_INTERVAL?"),
        "{stderr}"
    );
    // Set twice (environment and -s): one warning.
    assert_eq!(warned("DOWNLOAD_DELAYY"), 1, "{stderr}");
}

/// Receives log lines until `matches` has accepted `n` of them; false if the deadline
/// passes or the log ends first.
fn wait_for_lines(
    lines: &std::sync::mpsc::Receiver<String>,
    mut matches: impl FnMut(&str) -> bool,
    n: usize,
    secs: u64,
) -> bool {
    let until = Instant::now() + Duration::from_secs(secs);
    let mut seen = 0;
    while seen < n {
        let left = until.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if matches(&line) => seen += 1,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    true
}

#[test]
fn a_forced_stop_keeps_the_scraped_items_in_a_valid_feed() {
    // Items still in the feed's write buffer were lost on the second Ctrl+C (0 bytes).
    let srv = server(100_000);
    let (_out_dir, out) = tmp("forced.json");
    let mut child = trawl()
        .args([
            "crawl",
            &srv.url("/index.html"),
            // In flight for two minutes: the graceful close cannot end before the
            // second signal.
            &srv.url("/delay/120000"),
            "-O",
            out.to_str().expect("utf-8 path"),
            "-s",
            "DOWNLOAD_DELAY=0.01",
            "-s",
            "DOWNLOAD_DELAY_JITTER=0",
            // DEBUG: one "Scraped from" line per item, which the test counts.
            "-L",
            "DEBUG",
        ])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("trawl starts");
    // The log line by line as it comes, and whole at the end.
    let stderr = child.stderr.take().expect("piped");
    let (tx, lines) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            text.push_str(&line);
            text.push('\n');
            let _ = tx.send(line);
        }
        text
    });
    // 20 items scraped (each logged before the feed exporter receives it, on the same
    // reactor turn; the first signal is handled on a later one).
    assert!(
        wait_for_lines(&lines, |l| l.contains("] DEBUG: Scraped from "), 20, 60),
        "20 items were scraped"
    );
    let before = std::fs::metadata(&out).map_or(0, |m| m.len());
    sigint(child.id());
    // The second signal only once the first was handled (two signals close together
    // may be delivered as one).
    assert!(
        wait_for_lines(
            &lines,
            |l| l.contains("Received SIGINT, shutting down gracefully. Send again to force"),
            1,
            60
        ),
        "the first Ctrl+C started the graceful close"
    );
    sigint(child.id());
    let status = child.wait().expect("exits");
    let stderr = reader.join().expect("stderr");
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("forced stop"), "{stderr}");
    let text = std::fs::read_to_string(&out).expect("feed");
    assert!(
        text.len() as u64 > before,
        "buffered items were flushed ({before} bytes before)"
    );
    let records: Vec<Value> = serde_json::from_str(&text).expect("a valid JSON array");
    assert!(records.len() >= 20, "{} records", records.len());
}

#[test]
fn running_out_of_file_descriptors_is_backpressure_not_lost_requests() {
    // `ulimit -n 48` (soft and hard: trawl cannot raise it) with 400 concurrent
    // requests: sockets fail with EMFILE; the connector waits for descriptors instead
    // of failing the requests, so the crawl gets every page a normal run gets.
    let srv = server(300);
    let run_with = |limit: Option<u32>, out: &std::path::Path| {
        let cmd = format!(
            "{} exec '{}' crawl '{}' -O '{}' -s CONCURRENT_REQUESTS=400 -s CONCURRENT_REQUESTS_PER_DOMAIN=400 -s RETRY_ENABLED=False",
            limit.map_or(String::new(), |n| format!("ulimit -n {n} &&")),
            env!("CARGO_BIN_EXE_trawl"),
            srv.url("/index.html"),
            out.display()
        );
        Command::new("sh")
            .args(["-c", &cmd])
            .output()
            .expect("sh runs")
    };
    let (_normal_dir, normal) = tmp("fds-normal.jl");
    let o = run_with(None, &normal);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (_limited_dir, limited) = tmp("fds-limited.jl");
    let o = run_with(Some(48), &limited);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let count = |p: &std::path::Path| std::fs::read_to_string(p).expect("feed").lines().count();
    assert!(count(&normal) > 300, "{}", count(&normal));
    assert_eq!(count(&limited), count(&normal), "nothing dropped: {stderr}");
    assert!(!stderr.contains("Too many open files'"), "{stderr}");
    assert_eq!(
        stderr.matches("Out of file descriptors").count(),
        1,
        "logged once: {stderr}"
    );
    assert!(
        stderr.contains("'downloader/fd_exhausted_waits': "),
        "{stderr}"
    );
}

#[test]
fn shell_answers_expressions_from_standard_input() {
    let srv = server(20);
    let mut child = trawl()
        .args(["shell", &srv.url("/page/1/")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("trawl shell runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(
            b"css title::text\nxpath count(//div[has-class('quote')])\n//li[has-class('next')]/a/@href\nre \\d+\nxpath //a[\nstatus\nquit\n",
        )
        .expect("write");
    let o = child.wait_with_output().expect("trawl shell ends");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        out,
        "[0] Quotes to Scrape\n[0] 10.0\n[0] /page/2/\n[0] 2\n\
         error: XPath error: expected a node test (end of expression) at position 4\n200\n"
    );
}

#[test]
fn project_commands_point_to_a_project() {
    for cmd in ["list", "parse", "check"] {
        let o = run(&[cmd]);
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("trawl new NAME"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    let o = run(&["crawl", "-a", "x=1", "http://127.0.0.1:9/"]);
    assert_eq!(o.status.code(), Some(2));
}
