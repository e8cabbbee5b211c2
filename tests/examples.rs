//! Every example runs to completion on its own fixture server and prints what it did,
//! so the README's main-job command (`--example quotes`) and the examples table stay
//! true. (`cargo test` builds the examples; this runs them.)

use std::path::PathBuf;
use std::process::Command;

fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    // target/<profile>/deps/examples-HASH → target/<profile>/examples/<name>
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target dir")
        .join("examples");
    dir.join(name)
}

fn run(name: &str, args: &[&str]) -> String {
    let dir = std::env::temp_dir().join(format!("trawl-examples-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let out = Command::new(example(name))
        .args(args)
        .current_dir(&dir)
        .output()
        .unwrap_or_else(|e| panic!("example {name} runs: {e}"));
    assert!(
        out.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn quotes_exports_every_quote_and_author() {
    let out = run("quotes", &[]);
    // 10 list pages of 10 quotes, 20 distinct authors, robots.txt: 31 pages.
    assert!(
        out.contains("31 pages, 120 items (quotes and authors) written to quotes.jsonl"),
        "{out}"
    );
}

#[test]
fn api_posts_json_and_reads_json() {
    let out = run("api", &[]);
    // robots.txt and 10 POSTs of {"page": N} (distinct bodies, distinct fingerprints).
    assert!(
        out.contains(
            "11 responses (robots.txt and the API pages), 100 quotes written to api.jsonl"
        ),
        "{out}"
    );
}

#[test]
fn login_submits_the_form_and_reads_the_account() {
    let out = run("login", &[]);
    // robots.txt, the login page, the account page (the POST's 302 is followed below
    // the engine); the five quotes of the account page.
    assert!(
        out.contains("logged in as ann: 5 favourite quotes from the account page, 3 responses"),
        "{out}"
    );
}

#[test]
fn inline_requests_builds_each_item_from_a_page_and_an_api_call() {
    let out = run("inline_requests", &[]);
    // 10 list pages of 10 quotes; one API call per quote (engine.download: no
    // dupefilter, so the 20 authors are asked 100 times).
    assert!(
        out.contains(
            "100 quotes with their author's birth date written to inline.jsonl (10 list pages, 100 API calls)"
        ),
        "{out}"
    );
}

#[test]
fn redis_lookup_waits_for_redis_in_a_callback() {
    let out = run("redis_lookup", &[]);
    assert!(
        out.contains("100 quotes, each with its author's running count from Redis"),
        "{out}"
    );
    assert!(out.contains("20 authors counted in Redis"), "{out}");
}

#[test]
fn crawl_rules_finds_every_author() {
    let out = run("crawl_rules", &[]);
    assert!(out.contains("20 authors from"), "{out}");
}

#[test]
fn sitemap_visits_every_page() {
    let out = run("sitemap", &[]);
    assert!(out.contains("300 pages from the sitemap"), "{out}");
}

#[test]
fn custom_middleware_and_pipelines_run() {
    let out = run("custom_middleware", &[]);
    assert!(
        out.contains("100 items kept, 0 dropped, 10 HTML responses tagged"),
        "{out}"
    );
}

#[test]
fn embed_checks_three_rounds() {
    let out = run("embed", &[]);
    assert_eq!(
        out.lines().filter(|l| l.starts_with("round ")).count(),
        9,
        "{out}"
    );
    assert!(out.contains("-> 503"), "{out}");
}

#[test]
fn deferred_chain_prints_the_chain_as_twisted_runs_it() {
    let out = run("deferred_chain", &[]);
    // The same scenario on Twisted 26.10.0 (`task.Clock`, `deferLater`, `LoopingCall`)
    // and Scrapy 2.19.0 (`CallLaterOnce`), recorded by
    // `tests/data/twisted/deferred_chain.py`: `Clock.advance` runs every call due by
    // the new time, including the `callLater(0)` a chain's `schedule` makes during it
    // (pass #2 at 0.5 s); `/boom`'s failure is logged by the errback and the request
    // still removed; the heartbeat's passes #5 and #6 (ticks at 5 s and 10 s) print the
    // clock after the step (6 s, 11 s).
    assert_eq!(out, include_str!("data/twisted/deferred_chain.txt"));
}

#[test]
fn load_runs_both_workloads_against_a_fixture_server() {
    let server = trawl::testing::FixtureServer::start(trawl::testing::FixtureOptions {
        pages: 300,
        ..Default::default()
    })
    .expect("fixture server");
    let base = server.url("");
    let summary = |out: &str| -> serde_json::Value {
        serde_json::from_str(out.lines().last().unwrap_or("")).expect("a JSON summary")
    };
    // 3,000 start URLs over 300 pages: every one fetched (dont_filter), plus the site.
    let out = summary(&run("load", &["start-urls", &base, "3000", "50"]));
    assert!(out["pages"].as_u64().expect("pages") >= 3000, "{out}");
    assert!(
        out["peak_rss_mb"].as_f64().expect("peak RSS") > 0.0,
        "{out}"
    );
    let out = summary(&run("load", &["crawl", &base, "300", "50"]));
    assert!(out["pages"].as_u64().expect("pages") >= 300, "{out}");
    assert!(out["items"].as_u64().expect("items") > 0, "{out}");
}

#[test]
fn files_stores_each_file_once_then_finds_them_uptodate() {
    let dir = std::env::temp_dir().join(format!("trawl-examples-{}-files", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let run = |args: &[&str]| {
        let out = Command::new(example("files"))
            .args(args)
            .current_dir(&dir)
            .output()
            .expect("example files runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // The fixture's media section: 7 products, 8 distinct files of which 6 can be
    // stored (a 404, an empty file and a redirect are left out).
    let first = run(&[]);
    assert!(first.contains("7 products written"), "{first}");
    assert!(first.contains("(6 downloaded, 0 uptodate)"), "{first}");
    // Twice against one server (the URLs, so the names, stay the same): uptodate.
    let srv = trawl::testing::FixtureServer::start(trawl::testing::FixtureOptions::default())
        .expect("fixture");
    let url = srv.url("/media/index.html");
    let _ = run(&["--by-name", &url, "named"]);
    let again = run(&["--by-name", &url, "named"]);
    assert!(again.contains("(0 downloaded, 6 uptodate)"), "{again}");
    assert!(dir.join("named/by-name/report/report.pdf").is_file());
    // ImagesPipeline: 6 images fetched (the bomb and the corrupt one fail after it),
    // 3 stored as JPEGs with two thumbnails each.
    let images = run(&["--images", &srv.url("/media/images.html"), "pictures"]);
    assert!(images.contains("3 products written"), "{images}");
    assert!(images.contains("(6 downloaded, 0 uptodate)"), "{images}");
    assert_eq!(util_files(&dir.join("pictures")), 9);
    let _ = std::fs::remove_dir_all(&dir);
}

fn util_files(dir: &std::path::Path) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                n += 1;
            }
        }
    }
    n
}

#[test]
fn csv_feed_reads_every_row_of_the_quotes_feed() {
    let out = run("csv_feed", &[]);
    // 10 list pages of 10 quotes, one row each; robots.txt and the feed fetched.
    assert!(
        out.contains(
            "2 responses (robots.txt and the feed), 100 items, written to quotes_feed.jsonl"
        ),
        "{out}"
    );
}

#[test]
fn xml_feed_reads_every_node_of_the_rss_and_atom_feeds() {
    let out = run("xml_feed", &[]);
    assert!(out.contains("100 items from the RSS feed"), "{out}");
    let out = run("xml_feed", &["--atom"]);
    assert!(out.contains("100 items from the Atom feed"), "{out}");
    // One product per author of the fixture's quotes.
    let out = run("xml_feed", &["--products"]);
    assert!(out.contains("20 items from the product feed"), "{out}");
}

#[test]
fn feed_memory_reads_every_node_and_row() {
    // The memory figures are a benchmark (benches/RESULTS.md); here each mode runs
    // through a small feed to its end.
    for mode in ["iternodes", "csv", "xml"] {
        let out = run("feed_memory", &["2", mode]);
        assert!(out.contains(&format!("\"mode\": \"{mode}\"")), "{out}");
        assert!(!out.contains("\"items\": 0,"), "{out}");
    }
}

#[test]
fn crawler_process_runs_several_spiders_at_once() {
    let out = run("crawler_process", &["5", "60", "0.01"]);
    assert!(
        out.contains("5 crawls at once: 5 of 5 scraped the"),
        "{out}"
    );
}
