//! XML responses selected as parsel selects Scrapy's `XmlResponse`s: namespaces in
//! XPath (`namespaces=`, `register_namespace`), `remove_namespaces()`, CSS on XML,
//! `name()` / `local-name()` / `namespace-uri()`, processing instructions, and each
//! element printed as lxml prints XML — recorded from parsel 1.12.1 / lxml 6.1.3 by
//! `tests/data/select/gen_xml.py` (`xml.json`) on the feeds of `xml_pages/`; and which
//! `Content-Type`s make a response XML (Scrapy's `responsetypes`).

use serde_json::Value;
use trawl::crawl::{Request, Response};
use trawl::proto::Headers;

fn load() -> Value {
    serde_json::from_str(include_str!("data/select/xml.json")).expect("xml.json")
}

fn response(page: &str, content_type: &str) -> Response {
    let path = format!(
        "{}/tests/data/select/xml_pages/{page}",
        env!("CARGO_MANIFEST_DIR")
    );
    let body = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut headers = Headers::new();
    headers.append("Content-Type", content_type);
    let request = Request::get(&format!("http://example.com/{page}")).expect("url");
    Response::new(request, 200, headers, body)
}

fn pairs(v: &Value) -> Vec<(String, String)> {
    v.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, u)| (k.clone(), u.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn xml_selection_matches_parsel() {
    let data = load();
    let cases = data["cases"].as_array().expect("cases");
    let mut failures = Vec::new();
    for case in cases {
        let page = case["page"].as_str().expect("page");
        let query = case["query"].as_str().expect("query");
        let r = response(page, "application/xml");
        assert!(r.is_xml());
        for (p, u) in pairs(&case["registered"]) {
            r.register_namespace(&p, &u);
        }
        if case["remove_namespaces"].as_bool() == Some(true) {
            r.remove_namespaces();
        }
        let namespaces = pairs(&case["namespaces"]);
        let ns: Vec<(&str, &str)> = namespaces
            .iter()
            .map(|(p, u)| (p.as_str(), u.as_str()))
            .collect();
        let ours = match case["kind"].as_str() {
            Some("css") => r
                .try_css(query)
                .map(|s| s.getall())
                .map_err(|e| e.to_string()),
            _ => r
                .try_xpath_ns(query, &ns)
                .map(|s| s.getall())
                .map_err(|e| e.to_string()),
        };
        let same = match (&ours, case.get("results")) {
            (Ok(got), Some(want)) => {
                let want: Vec<String> = serde_json::from_value(want.clone()).expect("results");
                *got == want
            }
            (Err(_), None) => true,
            _ => false,
        };
        if !same {
            failures.push(format!(
                "{page} {query:?} (remove_namespaces {}): {ours:?}\n  parsel {}",
                case["remove_namespaces"],
                case.get("results").unwrap_or(&case["error"])
            ));
        }
    }
    assert!(cases.len() >= 70);
    assert!(
        failures.is_empty(),
        "{} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn xml_responses_are_those_scrapy_makes_xml() {
    let data = load();
    for (ct, class) in data["response_types"].as_object().expect("types") {
        let r = response("rss.xml", ct);
        assert_eq!(r.is_xml(), class == "XmlResponse", "{ct}: Scrapy's {class}");
    }
}
