//! Elements printed as lxml prints them: every recorded `.get()` of
//! `tests/data/select/serialize.json` (parsel 1.12.1 / lxml 6.1.3, libxml2 2.14.6;
//! recorded by `gen_serialize.py` on the sample pages of `tests/data/html/pages/`, the
//! XPath pages and `serialize_pages/`) against `response.xpath("//*")[i].get()`.

use serde_json::Value;
use trawl::crawl::{Request, Response};
use trawl::proto::Headers;

#[test]
fn element_html_matches_lxml() {
    let data: Value =
        serde_json::from_str(include_str!("data/select/serialize.json")).expect("serialize.json");
    let mut failures = Vec::new();
    let mut compared = 0;
    for page in data["pages"].as_array().expect("pages") {
        let name = page["page"].as_str().expect("page");
        let body = match page["body"].as_str() {
            // A generated document, stored in the page entry.
            Some(text) => text.as_bytes().to_vec(),
            None => {
                let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
                std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
            }
        };
        let mut headers = Headers::new();
        if let Some(ct) = page["content_type"].as_str() {
            headers.append("Content-Type", ct);
        }
        let request = Request::get(page["url"].as_str().expect("url")).expect("url");
        let r = Response::new(request, 200, headers, body);
        let elements: Vec<_> = r.xpath("//*").into_iter().collect();
        let count = page["elements"].as_u64().expect("elements") as usize;
        if elements.len() != count {
            failures.push(format!("{name}: {} elements, lxml {count}", elements.len()));
            continue;
        }
        for case in page["cases"].as_array().expect("cases") {
            let i = case[0].as_u64().expect("index") as usize;
            let Some(want) = case[2].as_str() else {
                continue;
            };
            let got = elements[i].get().unwrap_or_default();
            compared += 1;
            if got != want {
                failures.push(format!(
                    "{name} #{i} <{}>:\n  trawl {got:?}\n  lxml  {want:?}",
                    case[1]
                ));
            }
        }
    }
    assert!(compared > 3500, "{compared} compared");
    assert!(
        failures.is_empty(),
        "{} differences ({compared} compared):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
