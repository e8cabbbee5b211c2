//! Scrapy's `csviter` (Python's `csv` reader under it) and `CSVFeedSpider`: the rows
//! against Scrapy 2.19's, recorded by `tests/data/feeds_spiders/gen_csviter.py`
//! (`csviter.json`), and the spider reading a feed lazily, row by row.

use std::cell::Cell;
use std::rc::Rc;

use serde_json::{Map, Value};
use trawl::crawl::pycsv::csviter;
use trawl::crawl::{
    CallbackResult, CsvFeed, CsvFeedSpider, Item, Output, Request, Response, Spider,
};
use trawl::proto::Headers;

fn one_char(v: &Value) -> Option<char> {
    v.as_str().and_then(|s| s.chars().next())
}

#[test]
fn csviter_matches_scrapy() {
    let data: Value = serde_json::from_str(include_str!("data/feeds_spiders/csviter.json"))
        .expect("csviter.json");
    let mut failures = Vec::new();
    let cases = data["cases"].as_array().expect("cases");
    for case in cases {
        let text = case["csv"].as_str().expect("csv");
        let headers: Option<Vec<String>> =
            serde_json::from_value(case["headers"].clone()).expect("headers");
        let mut rows = Vec::new();
        let mut skipped = Vec::new();
        let result = csviter(
            text,
            one_char(&case["delimiter"]),
            headers.as_deref(),
            one_char(&case["quotechar"]),
            |row| {
                rows.push(Value::Array(
                    row.into_iter()
                        .map(|(k, v)| Value::Array(vec![Value::String(k), v]))
                        .collect(),
                ));
            },
            |line| skipped.push(Value::from(line)),
        );
        let want_error = case.get("error").and_then(Value::as_str);
        let same = Value::Array(rows.clone()) == case["rows"]
            && Value::Array(skipped.clone()) == case["skipped_lines"]
            && result.is_err() == want_error.is_some();
        if !same {
            failures.push(format!(
                "{text:?}: rows {rows:?} skipped {skipped:?} {result:?}\n  Scrapy {} {} {want_error:?}",
                case["rows"], case["skipped_lines"]
            ));
        }
    }
    assert!(cases.len() >= 20);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A `CSVFeedSpider` subclass: an item per row, `process_results` tagging them.
struct Products {
    rows_parsed: Rc<Cell<usize>>,
}

impl Spider for Products {
    fn name(&self) -> &str {
        "products"
    }
}

impl CsvFeed for Products {
    fn parse_row(&mut self, _response: &Response, row: &Map<String, Value>) -> CallbackResult {
        self.rows_parsed.set(self.rows_parsed.get() + 1);
        if row.get("id").and_then(Value::as_str) == Some("bad") {
            return Err(trawl::defer::Failure::msg("a bad row"));
        }
        Ok(vec![Output::Item(Item(row.clone()))])
    }

    fn process_results(&mut self, _response: &Response, results: Vec<Output>) -> Vec<Output> {
        results
            .into_iter()
            .map(|o| match o {
                Output::Item(mut item) => {
                    item.0.insert("feed".into(), Value::from("products"));
                    Output::Item(item)
                }
                other => other,
            })
            .collect()
    }
}

fn response(csv: &str) -> Response {
    let mut headers = Headers::new();
    headers.append("Content-Type", "text/csv; charset=utf-8");
    Response::new(
        Request::get("http://example.com/products.csv").expect("url"),
        200,
        headers,
        csv.to_owned(),
    )
}

#[test]
fn csv_feed_spider_reads_rows_as_outputs_are_pulled() {
    let parsed = Rc::new(Cell::new(0));
    let mut spider = CsvFeedSpider::new(Products {
        rows_parsed: Rc::clone(&parsed),
    })
    .delimiter(';');
    assert_eq!(spider.name(), "products");
    let r = response("id;name\n1;Widget\n2;Gadget\nshort\n3;Gizmo\n");
    let mut outputs = spider.callback_outputs("parse", &r).expect("outputs");
    assert_eq!(parsed.get(), 0, "nothing is read before the first pull");
    let first = outputs.next().expect("one").expect("an item");
    assert_eq!(parsed.get(), 1, "one row read for one output");
    let Output::Item(item) = first else {
        panic!("an item")
    };
    assert_eq!(item.0.get("name"), Some(&Value::from("Widget")));
    assert_eq!(item.0.get("feed"), Some(&Value::from("products")));
    let rest: Vec<_> = outputs.collect();
    assert_eq!(rest.len(), 2, "the short row is skipped");
    assert_eq!(parsed.get(), 3);
}

#[test]
fn a_failing_row_ends_the_rows_after_the_outputs_before_it() {
    let parsed = Rc::new(Cell::new(0));
    let mut spider = CsvFeedSpider::new(Products {
        rows_parsed: Rc::clone(&parsed),
    })
    .headers(["id", "name"]);
    let r = response("1,a\nbad,b\n3,c\n");
    let results: Vec<_> = spider
        .callback_outputs("parse", &r)
        .expect("outputs")
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results[0].is_ok() && results[1].is_err());
    assert_eq!(parsed.get(), 2, "the row after the failure is not read");
    // A CSV error ends them too.
    let mut spider = CsvFeedSpider::new(Products {
        rows_parsed: Rc::clone(&parsed),
    });
    let r = response("id,name\n1,a\rb\n2,c\n");
    let results: Vec<_> = spider
        .callback_outputs("parse", &r)
        .expect("outputs")
        .collect();
    assert!(results.len() == 1 && results[0].is_err(), "{results:?}");
}

#[test]
fn the_fixture_feed_reads_back_as_the_quotes_it_was_written_from() {
    let site = trawl::testing::Site::new(10, "http://127.0.0.1:1");
    let csv = site.quotes_csv();
    let mut rows = Vec::new();
    csviter(&csv, None, None, None, |row| rows.push(row), |_| {}).expect("rows");
    let quotes: Vec<_> = (1..=site.quote_list_pages())
        .flat_map(|n| site.list_quotes(n))
        .collect();
    assert_eq!(rows.len(), quotes.len());
    for (row, q) in rows.iter().zip(&quotes) {
        let text = format!("\u{201c}{}\u{201d}, \"she said\"", q.text);
        assert_eq!(row.get("text"), Some(&Value::from(text)));
        assert_eq!(row.get("author"), Some(&Value::from(q.author.clone())));
        assert_eq!(row.get("tags"), Some(&Value::from(q.tags.join(";"))));
    }
}
