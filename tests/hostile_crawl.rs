//! The reliability suite's mixed crawl: the healthy fixture site and every hostile route
//! (`trawl::testing::hostile`) in one `trawl crawl`. Every healthy page is fetched and
//! exported, no healthy request fails, each hostile route ends with its clear error or
//! its record, the reactor never stalls long (`reactor/max_stall_ms`) and the peak RSS
//! stays bounded (`memusage/max`).

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::Value;
use trawl::testing::hostile::HOSTILE_ROUTES;
use trawl::testing::{FixtureOptions, FixtureServer};

/// A stat from the stats dump in the log (`'name': value`).
fn stat(stderr: &str, name: &str) -> Option<f64> {
    let key = format!("'{name}': ");
    let at = stderr.find(&key)? + key.len();
    let value: String = stderr[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    value.parse().ok()
}

/// `path?b=2&a=1` → `path?a=1&b=2`.
fn sorted_query(path: &str) -> String {
    match path.split_once('?') {
        Some((p, q)) => {
            let mut pairs: Vec<&str> = q.split('&').collect();
            pairs.sort_unstable();
            format!("{p}?{}", pairs.join("&"))
        }
        None => path.to_owned(),
    }
}

#[test]
fn healthy_pages_survive_a_crawl_full_of_hostile_ones() {
    let srv = FixtureServer::start(FixtureOptions {
        pages: 60,
        ..FixtureOptions::default()
    })
    .expect("fixture server");
    let dir = std::env::temp_dir().join(format!("trawl-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let out = dir.join("records.jl");
    let mut args: Vec<String> = vec!["crawl".into(), srv.url("/index.html")];
    for (name, _) in HOSTILE_ROUTES {
        args.push(srv.url(&format!("/hostile/{name}")));
    }
    args.extend(
        [
            "--same-domain",
            "-O",
            out.to_str().expect("utf-8"),
            "-s",
            "DOWNLOAD_TIMEOUT=5",
            "-s",
            "RETRY_ENABLED=False",
            "-s",
            "ROBOTSTXT_OBEY=False",
            "-s",
            "MEMUSAGE_CHECK_INTERVAL_SECONDS=1",
        ]
        .map(str::to_owned),
    );
    let o = Command::new(env!("CARGO_BIN_EXE_trawl"))
        .args(&args)
        .output()
        .expect("trawl runs");
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");

    // Every healthy page fetched and exported, none failed.
    let records: Vec<Value> = std::fs::read_to_string(&out)
        .expect("feed")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let base = srv.base();
    let healthy: BTreeSet<String> = records
        .iter()
        .filter_map(|r| r["url"].as_str())
        .filter(|u| !u.contains("/hostile/"))
        .map(|u| u.strip_prefix(base.as_str()).unwrap_or(u).to_owned())
        .map(|p| p.split('#').next().unwrap_or_default().to_owned())
        .map(|p| sorted_query(&p))
        .collect();
    // The site links one page under two query orders; which one the dupefilter lets
    // through first depends on timing.
    let (expected, _) = srv.site().expected_crawl();
    let expected: BTreeSet<String> = expected.iter().map(|p| sorted_query(p)).collect();
    assert_eq!(healthy, expected, "every healthy page");
    let failed_healthy: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("Error downloading") && !l.contains("/hostile/"))
        .collect();
    assert!(failed_healthy.is_empty(), "{failed_healthy:#?}");

    // Each hostile route: its clear error, or its record.
    let error_of = |name: &str| {
        let needle = format!("/hostile/{name}>");
        stderr
            .lines()
            .find(|l| l.contains("Error downloading") && l.contains(&needle))
            .map(str::to_owned)
    };
    let expect_error = [
        ("stacked-codings", "Content-Encoding lists 12000 codings"),
        ("bad-chunk", "chunk"),
        ("huge-header", "larger than"),
        ("many-headers", "more than 100 response headers"),
        ("status-000", "invalid status code 000"),
        ("content-length-lie", ""),
        ("silent", "took longer than 5 seconds"),
    ];
    for (name, message) in expect_error {
        let line = error_of(name).unwrap_or_else(|| panic!("no error for {name}: {stderr}"));
        assert!(line.contains(message), "{name}: {line}");
    }
    for name in [
        "nested",
        "entities",
        "attributes",
        "one-line",
        "bad-utf8",
        "exotic-charset",
    ] {
        let url = srv.url(&format!("/hostile/{name}"));
        assert!(
            records
                .iter()
                .any(|r| r["url"] == url.as_str() && r["status"] == 200),
            "{name} has its record"
        );
    }

    // The loop never stalled long, and the memory stayed bounded.
    let stall = stat(&stderr, "reactor/max_stall_ms").expect("reactor/max_stall_ms");
    assert!(stall < 5_000.0, "reactor stalled {stall} ms");
    let rss = stat(&stderr, "memusage/max").expect("memusage/max");
    assert!(rss < 512.0 * 1024.0 * 1024.0, "peak RSS {rss}");
    eprintln!("max stall {stall} ms, peak RSS {:.1} MB", rss / 1048576.0);
    let _ = std::fs::remove_dir_all(&dir);
}
