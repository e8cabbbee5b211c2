//! Feeds through the `trawl` command, as a user writes them: `-o -:FORMAT` (the
//! standard output holds exactly the feed, the log goes to stderr), the `-o` / `-O`
//! usage errors Scrapy gives (`tests/data/feeds/options_cases.json`: `o_dash`,
//! `o_and_O`), an unknown scheme refused before the crawl, and URI placeholders and
//! batches on a real crawl of the fixture site.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use trawl::testing::{FixtureOptions, FixtureServer, TempDir};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trawl"))
        .args(args)
        .output()
        .expect("trawl runs")
}

fn server() -> FixtureServer {
    FixtureServer::start(FixtureOptions {
        pages: 30,
        ..FixtureOptions::default()
    })
    .expect("fixture server")
}

fn recorded_cli_case(name: &str) -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/feeds/options_cases.json"
    );
    let data: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("options_cases.json"))
            .expect("JSON");
    data["groups"]["unknown_schemes"]
        .as_array()
        .expect("group")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("case {name}"))
        .clone()
}

/// One crawl writes the same feed to stdout and to a file: the bytes are the same, so
/// nothing but the feed reached stdout.
#[test]
fn a_stdout_feed_is_the_feed_and_nothing_else() {
    let srv = server();
    let dir = TempDir::new("feeds-cli").expect("temp dir");
    for format in ["jsonlines", "json", "csv", "xml"] {
        let file = dir.join(format!("copy.{format}"));
        let o = run(&[
            "crawl",
            &srv.url("/index.html"),
            "--same-domain",
            "-o",
            &format!("-:{format}"),
            "-o",
            &format!("{}:{format}", file.display()),
            "-s",
            "CONCURRENT_REQUESTS=1",
        ]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{format}: {stderr}");
        let copy = std::fs::read(&file).expect("the file feed");
        assert!(copy.len() > 100, "{format}: a real feed");
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&copy),
            "{format}"
        );
        assert!(
            stderr.contains(&format!("Stored {format} feed (")) && stderr.contains("in: stdout:"),
            "{stderr}"
        );
        assert!(
            stderr.contains("feedexport/success_count/StdoutFeedStorage"),
            "{stderr}"
        );
    }
}

/// `-o -` and `-o` with `-O`: Scrapy's usage errors (exit 2, one line).
#[test]
fn output_usage_errors_are_scrapys() {
    for (case, args) in [
        ("o_dash", &["crawl", "http://127.0.0.1:9/", "-o", "-"][..]),
        (
            "o_and_O",
            &["crawl", "http://127.0.0.1:9/", "-o", "a.jl", "-O", "b.jl"],
        ),
    ] {
        let recorded = recorded_cli_case(case);
        assert_eq!(recorded["cli"]["exit_code"], 2);
        let scrapy = recorded["cli"]["stderr_lines"][0]
            .as_str()
            .expect("a line")
            .trim_start_matches("scrapy: error: ");
        // Up to the list of formats, which is trawl's own.
        let scrapy = scrapy
            .split(" Set a supported one")
            .next()
            .unwrap_or(scrapy);
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{case}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.starts_with("trawl: error: "), "{err}");
        assert!(err.contains(scrapy), "{case}: {err} lacks {scrapy:?}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}

/// An unknown scheme stops the crawl before it starts (Scrapy logs the error and
/// crawls without feeds), naming the known schemes; nothing is written.
#[test]
fn an_unknown_scheme_is_refused_before_the_crawl() {
    let srv = server();
    let dir = TempDir::new("feeds-cli").expect("temp dir");
    let o = Command::new(env!("CARGO_BIN_EXE_trawl"))
        .args(["crawl", &srv.url("/index.html"), "-o", "nosuch://x/y.jl"])
        .current_dir(&*dir)
        .output()
        .expect("trawl runs");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    let recorded = recorded_cli_case("o_unknown_scheme");
    let scrapy = recorded["cli"]["stderr_lines"][0].as_str().expect("a line");
    let message = scrapy.split_once(": ").map_or(scrapy, |(_, m)| m);
    assert!(err.contains(message), "{err} lacks {message:?}");
    assert!(err.contains("file:") && err.contains("stdout:"), "{err}");
    assert_eq!(std::fs::read_dir(&*dir).expect("dir").count(), 0);
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("feed")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// `%(name)s` and `%(batch_id)03d` on a real crawl: batches of 7 pages, each full but
/// the last, which put together are the crawl's unbatched feed (written alongside).
#[test]
fn batches_split_a_crawl_into_files_named_by_placeholders() {
    let srv = server();
    let dir = TempDir::new("feeds-cli").expect("temp dir");
    let template = dir.join("%(name)s/part-%(batch_id)03d.jl");
    let whole = dir.join("whole.jl");
    let feeds = serde_json::json!({
        template.to_str().expect("utf-8"): {"format": "jsonlines", "batch_item_count": 7}
    });
    let o = run(&[
        "crawl",
        &srv.url("/index.html"),
        "--same-domain",
        "--name",
        "fixture",
        "-o",
        whole.to_str().expect("utf-8"),
        "-s",
        &format!("FEEDS={feeds}"),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let out = dir.join("fixture");
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .expect("the %(name)s directory")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 3, "{names:?}");
    let mut joined = Vec::new();
    for (i, name) in names.iter().enumerate() {
        assert_eq!(name, &format!("part-{:03}.jl", i + 1));
        let n = lines(&out.join(name)).len();
        if i + 1 < names.len() {
            assert_eq!(n, 7, "{name}");
        } else {
            assert!((1..=7).contains(&n), "{name}");
        }
        joined.extend(std::fs::read(out.join(name)).expect("batch"));
    }
    assert_eq!(
        String::from_utf8_lossy(&joined),
        String::from_utf8_lossy(&std::fs::read(&whole).expect("the whole feed"))
    );
    let total = lines(&whole).len();
    let scraped = stderr
        .lines()
        .find_map(|l| l.split("'item_scraped_count': ").nth(1))
        .and_then(|v| v.trim_end_matches(',').trim().parse::<usize>().ok())
        .expect("item_scraped_count in the stats");
    assert_eq!(total, scraped);
    assert!(
        stderr.contains(&format!(
            "'feedexport/success_count/FileFeedStorage': {}",
            names.len() + 1
        )),
        "{stderr}"
    );
}
