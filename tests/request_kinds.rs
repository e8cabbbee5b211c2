//! `JsonRequest`, `FormRequest` and `Response::json` against Scrapy 2.19, recorded by
//! `tests/data/requests/gen_kinds.py` (`kinds.json`).

use serde_json::Value;
use trawl::crawl::{FormRequest, JsonRequest, Request, Response};
use trawl::proto::Headers;

fn load() -> Value {
    serde_json::from_str(include_str!("data/requests/kinds.json")).expect("kinds.json")
}

/// (url, method, body, Content-Type, Accept) as recorded.
fn recorded(r: &Value) -> (String, String, String, Value, Value) {
    (
        r["url"].as_str().expect("url").to_owned(),
        r["method"].as_str().expect("method").to_owned(),
        r["body"].as_str().expect("body").to_owned(),
        r["content_type"].clone(),
        r["accept"].clone(),
    )
}

fn ours(r: &Request) -> (String, String, String, Value, Value) {
    let header = |name: &str| {
        r.headers()
            .get_str(name)
            .map_or(Value::Null, |v| Value::from(v.to_owned()))
    };
    (
        r.url_str().to_owned(),
        r.method().as_str().to_owned(),
        // The recorder decoded bodies as latin-1: one char per byte.
        r.body().iter().map(|&b| char::from(b)).collect(),
        header("Content-Type"),
        header("Accept"),
    )
}

#[test]
fn json_requests_match_scrapy() {
    let data = load();
    let cases = data["json"].as_array().expect("json");
    assert!(cases.len() >= 10);
    for case in cases {
        let c = &case["case"];
        let got = JsonRequest::build(
            c["url"].as_str().expect("url"),
            c.get("data"),
            c["method"].as_str(),
        )
        .expect("a request");
        assert_eq!(ours(&got), recorded(&case["request"]), "{c}");
    }
}

#[test]
fn form_requests_match_scrapy() {
    let data = load();
    let cases = data["form"].as_array().expect("form");
    assert!(cases.len() >= 12);
    for case in cases {
        let c = &case["case"];
        let mut pairs: Vec<(String, String)> = Vec::new();
        for pair in c["formdata"].as_array().expect("formdata") {
            let key = pair[0].as_str().expect("key");
            match &pair[1] {
                Value::Array(values) => {
                    for v in values {
                        pairs.push((key.to_owned(), v.as_str().expect("value").to_owned()));
                    }
                }
                v => pairs.push((key.to_owned(), v.as_str().expect("value").to_owned())),
            }
        }
        let borrowed: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let got = FormRequest::build(
            c["url"].as_str().expect("url"),
            &borrowed,
            c["method"].as_str(),
            c["encoding"].as_str(),
        );
        match (&got, case["request"].get("error")) {
            (Err(_), Some(_)) => {}
            (Ok(r), None) => assert_eq!(ours(r), recorded(&case["request"]), "{c}"),
            _ => panic!("{c}: trawl {got:?}, scrapy {}", case["request"]),
        }
    }
}

#[test]
fn response_json_matches_scrapy_where_a_value_can_hold_it() {
    let data = load();
    let cases = data["loads"].as_array().expect("loads");
    let mut deliberate = 0;
    for case in cases {
        let text = case["text"].as_str().expect("text");
        let mut headers = Headers::new();
        headers.append("Content-Type", "application/json; charset=utf-8");
        let r = Response::new(
            Request::get("http://example.com/").expect("url"),
            200,
            headers,
            text.as_bytes().to_vec(),
        );
        let got = r
            .json()
            .map(|v| trawl::crawl::pyjson::dumps(&sorted(&v), Default::default()));
        match (&got, &case["result"]) {
            (Ok(a), r) if r["dumped"].as_str() == Some(a.as_str()) => {}
            (Err(_), r) if r.get("error").is_some() => {}
            // DESIGN.md §15: NaN, ±Infinity and integers beyond 64 bits.
            (_, r)
                if ["NaN", "Infinity", "12345678901234567890123"]
                    .iter()
                    .any(|t| r["dumped"].as_str().is_some_and(|d| d.contains(t))) =>
            {
                deliberate += 1;
            }
            _ => panic!("{text:?}: trawl {got:?}, scrapy {}", case["result"]),
        }
    }
    assert_eq!(deliberate, 4, "the tabled differences, and only those");
}

fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k.as_str()])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}
