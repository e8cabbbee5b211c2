//! The media pipelines' comparisons: one crawl of a fixture media page by trawl or by
//! Scrapy 2.19 (`tests/data/media/scrapy_media.py`), each item `{"name", FIELD}` from a
//! `div.item`, the pipeline's items (by name) and `file_*` stats returned.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use trawl::crawl::Output;

use super::live::{LiveSpider, crawl, get};

/// Which pipeline: `files` (`/media/index.html`, `file_urls`) or `images`
/// (`/media/images.html`, `image_urls`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Files,
    Images,
}

impl Kind {
    /// The media page, the items' URL field, the script's name for it, the pipeline and
    /// its store setting.
    fn parts(
        self,
    ) -> (
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    ) {
        match self {
            Kind::Files => (
                "/media/index.html",
                "file_urls",
                "files",
                "scrapy.pipelines.files.FilesPipeline",
                "FILES_STORE",
            ),
            Kind::Images => (
                "/media/images.html",
                "image_urls",
                "images",
                "scrapy.pipelines.images.ImagesPipeline",
                "IMAGES_STORE",
            ),
        }
    }
}

/// Items by name, from JSON lines.
pub fn items_by_name(lines: &str) -> BTreeMap<String, Value> {
    lines
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a JSON line");
            (v["name"].as_str().expect("name").to_owned(), v)
        })
        .collect()
}

/// Scrapy's pipeline over `base`'s media page, storing under `store`.
pub fn scrapy_run(
    kind: Kind,
    base: &str,
    store: &Path,
    out: &Path,
    extra: &Value,
) -> (BTreeMap<String, Value>, Value) {
    let stats = out.with_extension("stats.json");
    let run = Command::new(super::python("scrapy, PIL"))
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/media/scrapy_media.py"
        ))
        .arg(kind.parts().2)
        .args([
            base,
            &store.display().to_string(),
            &out.display().to_string(),
        ])
        .arg(&stats)
        .arg(extra.to_string())
        .output()
        .expect("python runs");
    assert!(
        run.status.success(),
        "scrapy: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let items = items_by_name(&std::fs::read_to_string(out).expect("scrapy's items"));
    let stats: Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("JSON");
    (items, stats)
}

/// trawl's pipeline over the same page.
pub fn trawl_run(
    kind: Kind,
    base: &str,
    store: &Path,
    out: &Path,
    extra: &Value,
) -> (BTreeMap<String, Value>, Value) {
    let (page, field, _, pipeline, store_setting) = kind.parts();
    let spider = LiveSpider::new(vec![get(&format!("{base}{page}"))]).follow(move |r| {
        r.css("div.item")
            .into_iter()
            .map(|div| {
                let urls: Vec<Value> = div
                    .css("a.file::attr(href)")
                    .getall()
                    .iter()
                    .map(|h| Value::from(r.urljoin_str(h).expect("href")))
                    .collect();
                let mut item = trawl::crawl::Item::default();
                item.0
                    .insert("name".into(), div.css("h2::text").get().into());
                item.0.insert(field.into(), Value::Array(urls));
                Output::Item(item)
            })
            .collect()
    });
    let mut settings = vec![
        ("ITEM_PIPELINES", json!({ pipeline: 1 })),
        (store_setting, json!(store.display().to_string())),
        (
            "FEEDS",
            json!({out.display().to_string(): {"format": "jsonlines", "overwrite": true}}),
        ),
        ("ROBOTSTXT_OBEY", json!(false)),
    ];
    for (k, v) in extra.as_object().into_iter().flatten() {
        settings.push((k.as_str(), v.clone()));
    }
    let (crawler, _) = crawl(spider, &settings);
    let stats: serde_json::Map<String, Value> = crawler
        .stats
        .get_stats()
        .into_iter()
        .filter(|(k, _)| k.starts_with("file"))
        .collect();
    let items = items_by_name(&std::fs::read_to_string(out).expect("trawl's items"));
    (items, Value::Object(stats))
}
