//! `response.jmespath()` / `Selection::jmespath` against parsel 1.12 (Python
//! `jmespath`): every case of `tests/data/select/jmespath.json` (`gen_jmespath.py`) —
//! a JSON API response and JSON inside an HTML page (`<script>` text, an attribute),
//! the results' kinds and values, list results flattened, `null` dropped, malformed
//! queries an error.

use serde_json::Value;
use trawl::crawl::{Request, Response, Selection};
use trawl::proto::Headers;

/// Numbers compared as numbers (`3` and `3.0` are one JSON number).
fn norm(v: &Value) -> Value {
    match v {
        Value::Number(n) => n
            .as_f64()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Null, Value::Number),
        Value::Array(a) => Value::Array(a.iter().map(norm).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), norm(v))).collect()),
        other => other.clone(),
    }
}

fn run<'a>(r: &'a Response, chain: &[Value]) -> Result<Selection<'a>, String> {
    let mut sel: Option<Selection<'a>> = None;
    for step in chain {
        let q = step[1].as_str().expect("query");
        sel = Some(match (step[0].as_str(), &sel) {
            (Some("css"), None) => r.css(q),
            (Some("css"), Some(s)) => s.css(q),
            (_, None) => r.try_jmespath(q)?,
            (_, Some(s)) => s.jmespath(q)?,
        });
    }
    sel.ok_or_else(|| "empty chain".to_owned())
}

#[test]
fn jmespath_matches_parsel() {
    let data: Value =
        serde_json::from_str(include_str!("data/select/jmespath.json")).expect("jmespath.json");
    let cases = data["cases"].as_array().expect("cases");
    assert!(cases.len() >= 50);
    let mut failures = Vec::new();
    for case in cases {
        let mut headers = Headers::new();
        headers.append("Content-Type", case["content_type"].as_str().expect("type"));
        let body = case["body"].as_str().expect("body").to_owned();
        let r = Response::new(
            Request::get("http://example.com/api").expect("url"),
            200,
            headers,
            body,
        );
        let chain = case["chain"].as_array().expect("chain");
        let got = run(&r, chain);
        match (got, case.get("error")) {
            (Err(_), Some(_)) => {}
            (Ok(s), Some(e)) => {
                failures.push(format!("{chain:?}: parsel {e}, trawl {:?}", s.getall()))
            }
            (Err(e), None) => failures.push(format!("{chain:?}: trawl fails: {e}")),
            (Ok(s), None) => {
                let want: Vec<Value> = case["results"]
                    .as_array()
                    .expect("results")
                    .iter()
                    .map(|w| match w {
                        Value::String(_) => w.clone(),
                        other => norm(&other["json"]),
                    })
                    .collect();
                let got: Vec<Value> = s.json_values().iter().map(norm).collect();
                if got != want {
                    failures.push(format!("{chain:?}: trawl {got:?}, parsel {want:?}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
