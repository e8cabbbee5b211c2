//! Feed exports byte for byte against Scrapy 2.19's `JsonItemExporter` and
//! `JsonLinesItemExporter` (`tests/data/feeds/record.py` → `cases.json`): separators,
//! `FEED_EXPORT_ENCODING` (null: `\uXXXX` escapes; utf-8: raw), `FEED_EXPORT_INDENT`,
//! floats as Python's `repr`, the framing of an empty JSON feed; and against its
//! `CsvItemExporter` as `FEEDS` runs it (`tests/data/feeds/record_csv.py` →
//! `csv_cases.json`): the header from the first item's keys or `FEED_EXPORT_FIELDS`,
//! missing fields, quoting, lists, dicts, numbers, booleans, `None`.

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

/// Cases where trawl writes something else than Scrapy on purpose (DESIGN.md §15), with
/// the bytes trawl writes instead: the case name, trawl's output.
///
/// `first_item_empty`: Scrapy's `CsvItemExporter` takes its columns from the first item;
/// with an empty first item its `assert self.fields_to_export` fails, that item is lost
/// and every later row is empty (`"\r\n\r\n"` for three items). trawl writes the
/// empty header and one empty row per item.
const CSV_DIFFERENCES: &[(&str, &str)] = &[("first_item_empty", "\r\n\r\n\r\n\r\n")];

/// Every case of `csv_cases.json` (recorded from a real Scrapy crawl with
/// `FEEDS = {file: {"format": "csv"}}`) through trawl's CSV feed: the case's items
/// yielded by the spider, its `FEED_EXPORT_FIELDS` (null: unset; a list or a string, as
/// given to Scrapy) and `FEED_EXPORT_ENCODING`, then the file's bytes compared exactly.
#[test]
fn csv_feeds_match_scrapys_csv_exporter_byte_for_byte() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/feeds/csv_cases.json"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let data: Value = serde_json::from_str(&text).expect("csv_cases.json");
    let dir = std::env::temp_dir().join(format!("trawl-feeds-csv-ref-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = data["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 35);
    let mut failures = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let name = case["name"].as_str().expect("name");
        let items: Vec<Item> = case["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|v| Item(v.as_object().expect("an object").clone()))
            .collect();
        let file = dir.join(format!("case{i}.csv"));
        let spider = FnSpider::new(
            move || Box::new(items.clone().into_iter().map(Output::Item)),
            |_, _| Ok(Vec::new()),
        );
        let feeds = json!({ file.to_str().unwrap(): {"format": "csv", "overwrite": true} });
        let h = harness(
            spider,
            &[
                ("FEEDS", feeds),
                ("FEED_EXPORT_FIELDS", case["fields"].clone()),
                ("FEED_EXPORT_ENCODING", case["encoding"].clone()),
            ],
            |_| {},
        );
        assert!(h.run(10.0), "case {i} ({name}) finished");
        drop(h);
        let got = std::fs::read(&file)
            .unwrap_or_else(|e| panic!("case {i} ({name}): {} not written: {e}", file.display()));
        let scrapy: Vec<u8> = match case.get("output").and_then(Value::as_str) {
            Some(s) => s.as_bytes().to_vec(),
            None => b64_decode(case["output_b64"].as_str().expect("output or output_b64")),
        };
        let want = match CSV_DIFFERENCES.iter().find(|(n, _)| *n == name) {
            Some((_, ours)) => {
                assert_ne!(
                    ours.as_bytes(),
                    &scrapy[..],
                    "{name}: no longer a difference"
                );
                ours.as_bytes().to_vec()
            }
            None => scrapy,
        };
        if got != want {
            failures.push(format!(
                "case {i} ({name}, fields {}, encoding {}):\n  trawl:  {:?}\n  wanted: {:?}",
                case["fields"],
                case["encoding"],
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want)
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "{} of {} CSV cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
