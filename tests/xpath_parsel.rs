//! trawl's XPath against parsel 1.12 (lxml 6.1.3 / libxml2 2.14.6): every case of
//! `tests/data/select/xpath.json` (recorded by `gen_xpath.py` from the real parsel on
//! Scrapy's sample pages and 11 pages of ours) — a chain of `css` / `xpath` steps from
//! the response, with `$variables`, compared result by result: the kind (element,
//! text, attribute, comment, number, string, boolean), the value parsel's `.get()` gives
//! (an element's outer HTML as lxml prints it), and for elements their document-order
//! index. A malformed expression must be an error where
//! parsel raises.
//!
//! Deliberate differences are listed in `KNOWN` with the reason (each also a row of
//! DESIGN.md's differences table); a listed case that starts to agree fails the test.

use std::collections::HashMap;

use serde_json::Value;
use trawl::crawl::{Request, Response, Selection};
use trawl::html::XPathVar;
use trawl::proto::Headers;

/// (page, chain as JSON, reason).
const KNOWN: &[(&str, &str, &str)] = &[];

fn response(case: &Value, cache: &mut HashMap<String, Response>) -> Response {
    let page = case["page"].as_str().expect("page");
    cache
        .entry(page.to_owned())
        .or_insert_with(|| {
            let path = format!("{}/tests/data/{page}", env!("CARGO_MANIFEST_DIR"));
            let body = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let mut headers = Headers::new();
            match (case["content_type"].as_str(), case["encoding"].as_str()) {
                (Some(ct), _) => headers.append("Content-Type", ct),
                (None, Some(enc)) => {
                    headers.append("Content-Type", format!("text/html; charset={enc}"))
                }
                (None, None) => {}
            }
            let req = Request::get(case["url"].as_str().expect("url")).expect("url");
            Response::new(req, 200, headers, body)
        })
        .clone()
}

fn vars(step: &Value) -> Vec<(String, XPathVar)> {
    step.get(2)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) => XPathVar::String(s.clone()),
                        Value::Number(n) => XPathVar::Number(n.as_f64().expect("number")),
                        Value::Bool(b) => XPathVar::Boolean(*b),
                        other => panic!("variable {other}"),
                    };
                    (k.clone(), v)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Runs the chain; `Err` with the message where a step fails.
fn run<'a>(r: &'a Response, chain: &[Value]) -> Result<Selection<'a>, String> {
    let mut sel: Option<Selection<'a>> = None;
    for step in chain {
        let kind = step[0].as_str().expect("step kind");
        let query = step[1].as_str().expect("query");
        sel = Some(match kind {
            "css" => match &sel {
                None => r.try_css(query),
                Some(s) => s.try_css(query),
            }
            .map_err(|e| e.to_string())?,
            _ => {
                let v = vars(step);
                let v: Vec<(&str, XPathVar)> =
                    v.iter().map(|(k, x)| (k.as_str(), x.clone())).collect();
                match &sel {
                    None => r.try_xpath(query, &v),
                    Some(s) => s.try_xpath(query, &v),
                }
                .map_err(|e| e.to_string())?
            }
        });
    }
    sel.ok_or_else(|| "empty chain".to_owned())
}

fn compare(r: &Response, case: &Value) -> Option<String> {
    let chain = case["chain"].as_array().expect("chain");
    let got = run(r, chain);
    if let Some(err) = case["error"].as_str() {
        return match got {
            Err(_) => None,
            Ok(s) => Some(format!("parsel raises {err}; trawl gives {:?}", s.getall())),
        };
    }
    let got = match got {
        Ok(s) => s,
        Err(e) => return Some(format!("trawl fails ({e})")),
    };
    let want = case["results"].as_array().expect("results");
    let values = got.getall();
    let want_values: Vec<&str> = want
        .iter()
        .map(|w| w["value"].as_str().expect("value"))
        .collect();
    // Elements: the document-order index and tag (the node is the same) and the outer
    // HTML `.get()` gives (lxml's serialisation). Everything else is compared as a
    // string.
    let doc = r.document();
    let index: HashMap<u32, usize> = doc
        .elements()
        .enumerate()
        .map(|(i, e)| (e.id().0, i))
        .collect();
    let items: Vec<Selection<'_>> = got.into_iter().collect();
    if items.len() != want.len() {
        return Some(format!(
            "{} results {values:?}, parsel {} {want_values:?}",
            items.len(),
            want.len()
        ));
    }
    for (i, (item, w)) in items.iter().zip(want).enumerate() {
        match w["kind"].as_str() {
            Some("element") if !w["index"].is_null() => {
                let Some(e) = item.element() else {
                    return Some(format!("#{i}: {:?} is not an element ({w})", values[i]));
                };
                let got_index = index.get(&e.id().0).copied();
                if got_index != w["index"].as_u64().map(|x| x as usize) || e.name() != w["tag"] {
                    return Some(format!(
                        "#{i}: element {} #{got_index:?}, parsel {} #{}",
                        e.name(),
                        w["tag"],
                        w["index"]
                    ));
                }
                if values[i] != want_values[i] {
                    return Some(format!(
                        "#{i}: element {:?} != parsel {:?}",
                        values[i], want_values[i]
                    ));
                }
            }
            _ => {
                if values[i] != want_values[i] {
                    return Some(format!(
                        "#{i}: {:?} != parsel {:?}",
                        values[i], want_values[i]
                    ));
                }
            }
        }
    }
    None
}

#[test]
fn xpath_matches_parsel() {
    let data: Value =
        serde_json::from_str(include_str!("data/select/xpath.json")).expect("xpath.json");
    let cases = data["cases"].as_array().expect("cases");
    assert!(cases.len() >= 5860, "the corpus has {} cases", cases.len());
    let mut pages = HashMap::new();
    let mut failures = Vec::new();
    let mut agreeing_known = Vec::new();
    for case in cases {
        let r = response(case, &mut pages);
        let page = case["page"].as_str().expect("page");
        let chain = case["chain"].to_string();
        let known = KNOWN.iter().any(|(p, c, _)| *p == page && *c == chain);
        match (compare(&r, case), known) {
            (Some(d), false) => failures.push(format!("{page} {chain}: {d}")),
            (None, true) => agreeing_known.push(format!("{page} {chain}")),
            _ => {}
        }
    }
    assert!(
        agreeing_known.is_empty(),
        "listed as different but now agree: {agreeing_known:#?}"
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from parsel:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
