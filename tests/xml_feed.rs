//! `XmlFeedSpider` against Scrapy 2.19's `XMLFeedSpider`, recorded by
//! `tests/data/feeds_spiders/gen_xmliter.py` (`xmliter.json`): the nodes each iterator
//! (`iternodes`, `xml`, `html`) hands to `parse_node` for an `itertag` and namespaces,
//! each node's `.get()` and the answers of queries on it.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{Map, Value, json};
use trawl::crawl::{
    CallbackResult, Request, Response, Selection, Spider, XmlFeed, XmlFeedSpider, XmlIterator,
};
use trawl::proto::Headers;

/// Records what `parse_node` sees, as the recorder does.
struct Recorder {
    queries: Vec<String>,
    seen: Rc<RefCell<Vec<Value>>>,
}

impl Spider for Recorder {
    fn name(&self) -> &str {
        "s"
    }
}

impl XmlFeed for Recorder {
    fn parse_node(&mut self, _response: &Response, node: &Selection<'_>) -> CallbackResult {
        let mut answers = Map::new();
        for q in &self.queries {
            let a = match node.try_xpath(q, &[]) {
                Ok(s) => json!(s.getall()),
                Err(_) => json!({"error": "ValueError"}),
            };
            answers.insert(q.clone(), a);
        }
        self.seen
            .borrow_mut()
            .push(json!({"get": node.get().unwrap_or_default(), "queries": answers}));
        Ok(Vec::new())
    }
}

#[test]
fn xml_feed_nodes_match_scrapy() {
    let data: Value = serde_json::from_str(include_str!("data/feeds_spiders/xmliter.json"))
        .expect("xmliter.json");
    let mut failures = Vec::new();
    let cases = data["cases"].as_array().expect("cases");
    for case in cases {
        let page = case["page"].as_str().expect("page");
        let path = format!(
            "{}/tests/data/select/xml_pages/{page}",
            env!("CARGO_MANIFEST_DIR")
        );
        let body = std::fs::read(&path).expect("page");
        let mut headers = Headers::new();
        headers.append("Content-Type", "application/xml");
        let r = Response::new(
            Request::get(&format!("http://example.com/{page}")).expect("url"),
            200,
            headers,
            body,
        );
        let seen = Rc::new(RefCell::new(Vec::new()));
        let queries: Vec<String> = serde_json::from_value(case["queries"].clone()).expect("q");
        let namespaces: Vec<(String, String)> = case["namespaces"]
            .as_array()
            .expect("ns")
            .iter()
            .map(|p| {
                (
                    p[0].as_str().unwrap_or("").to_owned(),
                    p[1].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect();
        let ns: Vec<(&str, &str)> = namespaces
            .iter()
            .map(|(p, u)| (p.as_str(), u.as_str()))
            .collect();
        let iterator = match case["iterator"].as_str() {
            Some("xml") => XmlIterator::Xml,
            Some("html") => XmlIterator::Html,
            _ => XmlIterator::IterNodes,
        };
        let mut spider = XmlFeedSpider::new(Recorder {
            queries,
            seen: Rc::clone(&seen),
        })
        .iterator(iterator)
        .itertag(case["itertag"].as_str().expect("itertag"))
        .namespaces(&ns);
        let results: Vec<_> = spider
            .callback_outputs("parse", &r)
            .expect("outputs")
            .collect();
        let errored = results.iter().any(Result::is_err);
        let got = Value::Array(seen.borrow().clone());
        if got != case["nodes"] || errored != case.get("error").is_some() {
            failures.push(format!(
                "{page} {} {}: {got}\n  Scrapy {}",
                case["iterator"], case["itertag"], case["nodes"]
            ));
        }
    }
    assert!(cases.len() >= 14);
    assert!(
        failures.is_empty(),
        "{} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Counts its calls; fails on a node whose title says so.
struct Counting {
    calls: Rc<RefCell<usize>>,
}

impl Spider for Counting {
    fn name(&self) -> &str {
        "counting"
    }
}

impl XmlFeed for Counting {
    fn parse_node(&mut self, _response: &Response, node: &Selection<'_>) -> CallbackResult {
        *self.calls.borrow_mut() += 1;
        if node.xpath("title/text()").get().as_deref() == Some("bad") {
            return Err(trawl::defer::Failure::msg("a bad node"));
        }
        Ok(vec![trawl::crawl::Output::Item(
            trawl::crawl::Item::new().with("title", node.xpath("title/text()").get()),
        )])
    }
}

#[test]
fn iternodes_reads_a_node_per_pull_and_stops_at_a_failing_one() {
    let calls = Rc::new(RefCell::new(0));
    let mut spider = XmlFeedSpider::new(Counting {
        calls: Rc::clone(&calls),
    });
    let mut headers = Headers::new();
    headers.append("Content-Type", "application/rss+xml");
    let feed = "<rss><channel><item><title>a</title></item><item><title>bad</title></item>\
                <item><title>c</title></item></channel></rss>";
    let r = Response::new(
        Request::get("http://example.com/feed.rss").expect("url"),
        200,
        headers,
        feed,
    );
    let mut outputs = spider.callback_outputs("parse", &r).expect("outputs");
    assert_eq!(*calls.borrow(), 0, "nothing read before the first pull");
    assert!(outputs.next().expect("one").is_ok());
    assert_eq!(*calls.borrow(), 1);
    assert!(outputs.next().expect("the failure").is_err());
    assert!(outputs.next().is_none(), "the failure ends the nodes");
    assert_eq!(*calls.borrow(), 2);
}
