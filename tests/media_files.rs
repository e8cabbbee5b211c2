//! `FilesPipeline` against Scrapy 2.19's on the same site: the names it gives files
//! (`tests/data/media/file_paths.json`, recorded with `record_file_paths.py`), and a
//! crawl of the fixture site's media section by both — a duplicate URL within and
//! across items, a redirect (refused without `MEDIA_ALLOW_REDIRECTS`), a 404, an empty
//! file, a URL without an extension — whose items (`files`: url, path, checksum,
//! status), stored files and `file_*` stats must be the same, then a second run over
//! the same store, where every file is `uptodate`.

mod util;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};
use trawl::crawl::pipelines::files::default_file_path;
use trawl::testing::{FixtureOptions, FixtureServer, TempDir};
use util::live::get;
use util::media::{Kind, scrapy_run, trawl_run};

fn data(name: &str) -> Value {
    let path = format!("{}/tests/data/media/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("recorded data")).expect("JSON")
}

#[test]
fn file_paths_are_scrapys() {
    let recorded = data("file_paths.json");
    let cases = recorded["cases"].as_array().expect("cases");
    assert!(cases.len() > 40);
    for case in cases {
        let url = case["url"].as_str().expect("url");
        let request = get(url);
        assert_eq!(
            default_file_path(request.url_str()),
            case["path"].as_str().expect("path"),
            "{url}"
        );
    }
}

/// Every stored file under `root`: relative path → bytes.
fn stored(root: &Path) -> BTreeMap<String, Vec<u8>> {
    util::files_under(root)
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(root).expect("under root");
            (
                rel.to_string_lossy().into_owned(),
                std::fs::read(&p).expect("file"),
            )
        })
        .collect()
}

fn fixture() -> FixtureServer {
    FixtureServer::start(FixtureOptions {
        pages: 5,
        ..FixtureOptions::default()
    })
    .expect("fixture")
}

/// Both pipelines over the same site with `extra` settings, `rounds` times on the same
/// stores: the items, the `file_*` stats and the stored files are the same each time.
fn compare(srv: &FixtureServer, dir: &Path, extra: &Value, rounds: &[&str]) {
    let base = srv.url("");
    let base = base.trim_end_matches('/');
    let (scrapy_store, trawl_store) = (dir.join("scrapy"), dir.join("trawl"));
    for round in rounds {
        let (s_items, s_stats) = scrapy_run(
            Kind::Files,
            base,
            &scrapy_store,
            &dir.join(format!("s-{round}.jl")),
            extra,
        );
        let (t_items, t_stats) = trawl_run(
            Kind::Files,
            base,
            &trawl_store,
            &dir.join(format!("t-{round}.jl")),
            extra,
        );
        assert_eq!(
            t_items.keys().collect::<Vec<_>>(),
            s_items.keys().collect::<Vec<_>>(),
            "{round}: the items"
        );
        for (name, s) in &s_items {
            assert_eq!(t_items[name]["files"], s["files"], "{round}: item {name}");
        }
        assert_eq!(t_stats, s_stats, "{round}: the file_* stats");
        assert_eq!(
            stored(&trawl_store),
            stored(&scrapy_store),
            "{round}: the stored files"
        );
    }
}

#[test]
fn files_are_downloaded_named_and_described_as_scrapy_does() {
    let srv = fixture();
    let dir = TempDir::new("media-files").expect("temp dir");
    compare(&srv, dir.path(), &json!({}), &["first", "second"]);
    // The second run found every file stored and downloaded none.
    let base = srv.url("");
    let (items, _) = trawl_run(
        Kind::Files,
        base.trim_end_matches('/'),
        &dir.join("trawl"),
        &dir.join("t-third.jl"),
        &json!({}),
    );
    for item in items.values() {
        for f in item["files"].as_array().expect("files") {
            assert_eq!(f["status"], "uptodate", "{f}");
        }
    }
    assert!(
        !items["report"]["files"]
            .as_array()
            .expect("files")
            .is_empty()
    );
}

/// `MEDIA_ALLOW_REDIRECTS`: the redirected file is stored under its first URL's
/// name; `FILES_EXPIRES = 0`: a stored file is downloaded again.
#[test]
fn redirects_and_expiry_as_scrapy() {
    let srv = fixture();
    let dir = TempDir::new("media-files-redirects").expect("temp dir");
    compare(
        &srv,
        dir.path(),
        &json!({"MEDIA_ALLOW_REDIRECTS": true, "FILES_EXPIRES": 0}),
        &["first", "second"],
    );
}
