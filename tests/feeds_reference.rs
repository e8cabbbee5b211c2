//! Feed exports byte for byte against Scrapy 2.19's `JsonItemExporter` and
//! `JsonLinesItemExporter` (`tests/data/feeds/record.py` → `cases.json`): separators,
//! `FEED_EXPORT_ENCODING` (null: `\uXXXX` escapes; utf-8: raw), `FEED_EXPORT_INDENT`,
//! floats as Python's `repr`, the framing of an empty JSON feed.

mod util;

use serde_json::{Value, json};
use trawl::crawl::{Item, Output};
use util::crawl::{FnSpider, harness};

fn b64_decode(s: &str) -> Vec<u8> {
    trawl::util::base64_decode(s).expect("base64 in cases.json")
}

#[test]
fn feeds_match_scrapys_exporters_byte_for_byte() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/feeds/cases.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let data: Value = serde_json::from_str(&text).expect("cases.json");
    let items: Vec<Item> = data["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|v| Item(v.as_object().expect("an object").clone()))
        .collect();
    let dir = std::env::temp_dir().join(format!("trawl-feeds-ref-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = data["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 12);
    let mut failures = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let format = case["format"].as_str().unwrap();
        let file = dir.join(format!("case{i}.{format}"));
        let empty = case["empty"].as_bool().unwrap();
        let to_yield: Vec<Item> = if empty { Vec::new() } else { items.clone() };
        let spider = FnSpider::new(
            move || Box::new(to_yield.clone().into_iter().map(Output::Item)),
            |_, _| Ok(Vec::new()),
        );
        let feeds = json!({ file.to_str().unwrap(): {"format": format, "overwrite": true} });
        let h = harness(
            spider,
            &[
                ("FEEDS", feeds),
                ("FEED_EXPORT_ENCODING", case["encoding"].clone()),
                ("FEED_EXPORT_INDENT", case["indent"].clone()),
            ],
            |_| {},
        );
        assert!(h.run(10.0), "case {i} finished");
        drop(h);
        let got = std::fs::read(&file)
            .unwrap_or_else(|e| panic!("case {i}: {} not written: {e}", file.display()));
        let want = b64_decode(case["bytes_b64"].as_str().unwrap());
        if got != want {
            failures.push(format!(
                "case {i} ({format}, encoding {}, indent {}, empty {empty}):\n  trawl:  {:?}\n  scrapy: {:?}",
                case["encoding"],
                case["indent"],
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want)
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
