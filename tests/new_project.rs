//! A user's project end to end: `trawl new demo` writes a Cargo project; its own
//! `cargo test` passes offline (the spider against its saved page); `cargo run -- list`,
//! `crawl quotes -a start=URL -O FILE`, `parse URL` and `check` work against the
//! fixture site; a spider argument that the spider refuses is a usage error (exit 2);
//! a broken contract fails `check` (exit 1).
//!
//! The project builds trawl again (a path dependency) into `target/new-project`, which
//! is kept between runs so only the first one pays the full build.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use trawl::testing::{FixtureOptions, FixtureServer};

fn cargo(project: &Path, args: &[&str]) -> Output {
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/new-project");
    Command::new(env!("CARGO"))
        .args(args)
        .current_dir(project)
        .env("CARGO_TARGET_DIR", target)
        // As small as the tree's own test builds: line tables only, no incremental cache.
        .env("CARGO_PROFILE_DEV_DEBUG", "line-tables-only")
        .env("CARGO_INCREMENTAL", "0")
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs")
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn trawl_new_makes_a_project_that_tests_lists_crawls_parses_and_checks() {
    let dir = std::env::temp_dir().join(format!("trawl-new-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let project = dir.join("demo");
    let made = Command::new(env!("CARGO_BIN_EXE_trawl"))
        .args(["new", "demo"])
        .arg(&project)
        .args(["--trawl-path", env!("CARGO_MANIFEST_DIR")])
        .output()
        .expect("trawl new runs");
    assert!(made.status.success(), "{}", text(&made));
    for f in [
        "Cargo.toml",
        "src/main.rs",
        "src/spiders.rs",
        "src/pipelines.rs",
        "tests/spider.rs",
        "README.md",
    ] {
        assert!(project.join(f).is_file(), "{f} written");
    }
    // Again into the same place: refused, nothing overwritten.
    let again = Command::new(env!("CARGO_BIN_EXE_trawl"))
        .args(["new", "demo"])
        .arg(&project)
        .output()
        .expect("trawl new runs");
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));

    let tested = cargo(&project, &["test", "--offline", "-q"]);
    assert!(tested.status.success(), "{}", text(&tested));
    let listed = cargo(&project, &["run", "--offline", "-q", "--", "list"]);
    assert!(listed.status.success(), "{}", text(&listed));
    assert_eq!(String::from_utf8_lossy(&listed.stdout), "quotes\n");

    let site = FixtureServer::start(FixtureOptions::default()).expect("fixture server");
    let start = format!("start={}", site.url("/page/1/"));
    let feed = dir.join("quotes.jl");
    let crawled = cargo(
        &project,
        &[
            "run",
            "--offline",
            "-q",
            "--",
            "crawl",
            "quotes",
            "-a",
            &start,
            "-O",
            feed.to_str().expect("utf-8 path"),
            "-L",
            "WARNING",
        ],
    );
    assert!(crawled.status.success(), "{}", text(&crawled));
    let lines = std::fs::read_to_string(&feed).expect("feed written");
    let items: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    // Ten tutorial pages of ten quotes, through the project's pipeline (the curly
    // quotes stripped).
    assert_eq!(items.len(), 100, "{}", text(&crawled));
    assert!(items.iter().all(|i| {
        let t = i["text"].as_str().unwrap_or("\u{201c}");
        !t.starts_with('\u{201c}') && !t.is_empty()
    }));

    let parsed = cargo(
        &project,
        &[
            "run",
            "--offline",
            "-q",
            "--",
            "parse",
            &site.url("/page/1/"),
            "-L",
            "WARNING",
        ],
    );
    let out = String::from_utf8_lossy(&parsed.stdout);
    assert!(parsed.status.success(), "{}", text(&parsed));
    assert!(
        out.starts_with(">>> STATUS DEPTH LEVEL 1 <<<\n# Scraped Items"),
        "{out}"
    );
    assert_eq!(out.matches("\"author\"").count(), 10, "{out}");
    assert!(
        out.contains(&format!("[<GET {}>]", site.url("/page/2/"))),
        "{out}"
    );

    let checked = cargo(
        &project,
        &["run", "--offline", "-q", "--", "check", "-a", &start],
    );
    assert!(checked.status.success(), "{}", text(&checked));
    let report = String::from_utf8_lossy(&checked.stdout);
    assert!(
        report.contains("Ran 1 contract in ") && report.ends_with("\nOK\n"),
        "{}",
        text(&checked)
    );
    // A page that does not exist: the contract's callback gets no response.
    let missing = format!("start={}", site.url("/page/99/"));
    let failed = cargo(
        &project,
        &["run", "--offline", "-q", "--", "check", "-a", &missing],
    );
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed));
    assert!(
        String::from_utf8_lossy(&failed.stdout).contains("FAILED (failures=1)"),
        "{}",
        text(&failed)
    );
    let refused = cargo(
        &project,
        &[
            "run",
            "--offline",
            "-q",
            "--",
            "crawl",
            "quotes",
            "-a",
            "start=ftp://x",
        ],
    );
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("-a start=URL expects an http(s) URL"),
        "{}",
        text(&refused)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
