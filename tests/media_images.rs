//! `ImagesPipeline` against Scrapy 2.19's (Pillow 12.3) on the fixture site's images:
//! a JPEG, a PNG with transparency, a GIF with a palette (one of them named by two
//! items), one under `IMAGES_MIN_WIDTH`, a decompression bomb, a corrupt file and a
//! 404, with two thumbnail sizes. The items' `images` (url, path, status), the
//! `file_*` stats, the set of stored files and each stored picture's dimensions must be
//! Scrapy's; the checksums are the MD5 of trawl's JPEG encoding, not libjpeg's
//! (DESIGN.md §15), so they are checked against the stored files instead. A second run
//! finds everything `uptodate`.

mod util;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};
use trawl::crawl::pipelines::files::md5_hex;
use trawl::testing::{FixtureOptions, FixtureServer, TempDir};
use util::media::{Kind, scrapy_run, trawl_run};

fn settings() -> Value {
    json!({
        "IMAGES_THUMBS": {"small": [50, 50], "big": [270, 270]},
        "IMAGES_MIN_WIDTH": 20,
        "IMAGES_MIN_HEIGHT": 20,
    })
}

/// Each stored picture: relative path → (width, height).
fn stored(root: &Path) -> BTreeMap<String, (u32, u32)> {
    util::files_under(root)
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(root).expect("under root");
            let dims = image::image_dimensions(&p).expect("a stored picture decodes");
            (rel.to_string_lossy().into_owned(), dims)
        })
        .collect()
}

/// `images` without the checksums.
fn described(images: &Value) -> Vec<(String, String, String)> {
    images
        .as_array()
        .expect("images")
        .iter()
        .map(|i| {
            let s = |k: &str| i[k].as_str().unwrap_or_default().to_owned();
            (s("url"), s("path"), s("status"))
        })
        .collect()
}

#[test]
fn images_are_converted_named_and_described_as_scrapy_does() {
    let srv = FixtureServer::start(FixtureOptions {
        pages: 5,
        ..FixtureOptions::default()
    })
    .expect("fixture");
    let base = srv.url("");
    let base = base.trim_end_matches('/');
    let dir = TempDir::new("media-images").expect("temp dir");
    let (scrapy_store, trawl_store) = (dir.join("scrapy"), dir.join("trawl"));
    for round in ["first", "second"] {
        let (s_items, s_stats) = scrapy_run(
            Kind::Images,
            base,
            &scrapy_store,
            &dir.join(format!("s-{round}.jl")),
            &settings(),
        );
        let ((t_items, t_stats), logs) = util::capture_logs(|| {
            trawl_run(
                Kind::Images,
                base,
                &trawl_store,
                &dir.join(format!("t-{round}.jl")),
                &settings(),
            )
        });
        if round == "first" {
            // Pillow's messages, in the log lines of the failed images.
            let log: Vec<&String> = logs.iter().map(|(_, m)| m).collect();
            for expected in [
                "Image too small (10x10 < 20x20)",
                "Image size (900000000 pixels) exceeds limit of 178956970 pixels, could be \
                 decompression bomb DOS attack.",
                "File (code: 404): Error downloading file from <GET ",
            ] {
                assert!(
                    log.iter().any(|m| m.contains(expected)),
                    "{expected} in {log:#?}"
                );
            }
        }
        assert_eq!(
            t_items.keys().collect::<Vec<_>>(),
            s_items.keys().collect::<Vec<_>>()
        );
        for (name, s) in &s_items {
            assert_eq!(
                described(&t_items[name]["images"]),
                described(&s["images"]),
                "{round}: item {name}"
            );
        }
        assert_eq!(t_stats, s_stats, "{round}: the file_* stats");
        assert_eq!(
            stored(&trawl_store),
            stored(&scrapy_store),
            "{round}: the stored pictures"
        );
        // trawl's checksum is its stored full image's MD5.
        for item in t_items.values() {
            for i in item["images"].as_array().expect("images") {
                let path = trawl_store.join(i["path"].as_str().expect("path"));
                let bytes = std::fs::read(&path).expect("stored");
                assert_eq!(i["checksum"].as_str(), Some(md5_hex(&bytes).as_str()));
            }
        }
    }
    let (items, _) = trawl_run(
        Kind::Images,
        base,
        &trawl_store,
        &dir.join("t-third.jl"),
        &settings(),
    );
    for i in items["photos"]["images"].as_array().expect("images") {
        assert_eq!(i["status"], "uptodate");
    }
}
