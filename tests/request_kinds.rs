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
    assert_eq!(cases.len(), 11);
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
    assert_eq!(cases.len(), 13);
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

/// DESIGN.md §15's `response.json()` row: Python's `json.loads` returns NaN,
/// ±Infinity, an overflowing float and integers beyond 64 bits; trawl answers an error
/// for the non-finite ones (`1e400` overflows to infinity) and the nearest `f64` for a
/// big integer. (recorded text, trawl's `pyjson` dump or `None` for an error)
const DELIBERATE: &[(&str, Option<&str>)] = &[
    ("[1, 2.5, -0.0, 1e400]", None),
    ("NaN", None),
    ("[Infinity, -Infinity]", None),
    ("12345678901234567890123", Some("1.2345678901234568e+22")),
];

#[test]
fn response_json_matches_scrapy_where_a_value_can_hold_it() {
    let data = load();
    let cases = data["loads"].as_array().expect("loads");
    assert_eq!(cases.len(), 11);
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
        if let Some((_, pinned)) = DELIBERATE.iter().find(|(t, _)| *t == text) {
            assert_eq!(
                got.as_deref().ok(),
                *pinned,
                "{text:?}: trawl {got:?}, its documented answer {pinned:?}"
            );
            assert_ne!(
                got.as_deref().ok(),
                case["result"]["dumped"].as_str(),
                "{text:?}: listed as different but agrees with Scrapy"
            );
            deliberate += 1;
            continue;
        }
        match (&got, &case["result"]) {
            (Ok(a), r) if r["dumped"].as_str() == Some(a.as_str()) => {}
            (Err(_), r) if r.get("error").is_some() => {}
            _ => panic!("{text:?}: trawl {got:?}, scrapy {}", case["result"]),
        }
    }
    assert_eq!(
        deliberate,
        DELIBERATE.len(),
        "every tabled case is recorded"
    );
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
