//! trawl's DepthMiddleware, UrlLengthMiddleware and HttpErrorMiddleware against
//! Scrapy 2.19's own classes: `tests/data/middlewares/cases.json` is recorded by
//! `tests/data/middlewares/record.py` (see the README there), which runs the real Scrapy
//! middlewares. Every case is replayed step by step on one middleware instance (stats
//! accumulate across its steps) and compared with what Scrapy did: the outputs kept
//! (with their meta and priority), whether `process_spider_input` raised `HttpError`,
//! what `process_spider_exception` returned, and the stats these middlewares write.
//!
//! Step kinds: `output` / `output_async` → `process_spider_output` (a null response is
//! Scrapy's start-request path, replayed through `process_start`); `start` →
//! `process_start`; `input` → `process_spider_input` (then `process_spider_exception`
//! with the failure when `call_exception`); `exception` → `process_spider_exception`.
//!
//! Every mismatch is collected; the test fails once, listing all of them by case name.

use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::{Map, Value, json};
use trawl::crawl::errors::NotConfigured;
use trawl::crawl::spidermiddlewares::depth::DepthMiddleware;
use trawl::crawl::spidermiddlewares::httperror::{HttpError, HttpErrorMiddleware};
use trawl::crawl::spidermiddlewares::urllength::UrlLengthMiddleware;
use trawl::crawl::spidermw::{SpiderMiddleware, SpiderMiddlewareManager};
use trawl::crawl::stats::{MemoryStatsCollector, StatsCollector};
use trawl::crawl::{CrawlContext, Output, Priority, Request, Response, Settings};
use trawl::defer::Failure;
use trawl::proto::Headers;
use trawl::reactor::Clock;

const DATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/middlewares/cases.json"
);

/// The stats keys these middlewares write (the recorder keeps the same prefixes).
const STAT_PREFIXES: &[&str] = &["request_depth_", "depth/", "urllength/", "httperror/"];

/// The key under which an item's case id travels through trawl's middlewares.
const ITEM_ID: &str = "__case_id";

fn context(settings: &Map<String, Value>) -> Rc<CrawlContext> {
    let mut s = Settings::new();
    for (name, value) in settings {
        s.set(name, value.clone(), Priority::Project);
    }
    s.freeze();
    let stats: Rc<dyn StatsCollector> = Rc::new(MemoryStatsCollector::new());
    Rc::new(CrawlContext::new(
        s,
        stats,
        Clock::monotonic(),
        None,
        "ref".to_owned(),
        Vec::new(),
        None,
    ))
}

fn build(middleware: &str, ctx: &Rc<CrawlContext>) -> Result<Rc<dyn SpiderMiddleware>, Failure> {
    Ok(match middleware {
        "depth" => Rc::new(DepthMiddleware::from_context(ctx)?) as Rc<dyn SpiderMiddleware>,
        "urllength" => Rc::new(UrlLengthMiddleware::from_context(ctx)?) as Rc<dyn SpiderMiddleware>,
        "httperror" => Rc::new(HttpErrorMiddleware::from_context(ctx)?) as Rc<dyn SpiderMiddleware>,
        other => panic!("unknown middleware {other:?} in {DATA}"),
    })
}

/// Spider attributes (Scrapy's `spider.handle_httpstatus_list`), set on the context as
/// the crawler does from `Spider::handle_httpstatus_list`.
fn apply_spider_attrs(ctx: &Rc<CrawlContext>, attrs: &Map<String, Value>) -> Result<(), String> {
    for (key, value) in attrs {
        match key.as_str() {
            "handle_httpstatus_list" => {
                let codes = value
                    .as_array()
                    .ok_or("handle_httpstatus_list is not a list")?
                    .iter()
                    .map(|c| {
                        c.as_u64()
                            .and_then(|c| u16::try_from(c).ok())
                            .ok_or("bad status")
                    })
                    .collect::<Result<Vec<u16>, _>>()?;
                ctx.set_spider_handle_httpstatus_list(Some(codes));
            }
            other => return Err(format!("unknown spider attribute {other}")),
        }
    }
    Ok(())
}

fn meta_of(request: &Request) -> BTreeMap<String, Value> {
    request
        .meta()
        .iter()
        .map(|(k, v)| (k.to_owned(), v.clone()))
        .collect()
}

fn object(v: &Value) -> BTreeMap<String, Value> {
    v.as_object()
        .expect("a JSON object")
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn request(spec: &Value) -> Request {
    let url = spec["url"].as_str().expect("url");
    let mut r = Request::get(url).unwrap_or_else(|e| panic!("{url}: {e}"));
    for (k, v) in spec["meta"].as_object().expect("meta") {
        r.meta_mut().insert(k, v.clone());
    }
    r
}

fn response(spec: &Value) -> Response {
    let status = u16::try_from(spec["status"].as_u64().expect("status")).expect("u16 status");
    Response::new(request(spec), status, Headers::new(), Vec::<u8>::new())
}

/// The spider outputs of a step; requests carry their id as callback name `id<N>`,
/// items under [`ITEM_ID`].
fn outputs(specs: &Value) -> Vec<Output> {
    specs
        .as_array()
        .expect("outputs")
        .iter()
        .map(|o| {
            let id = o["id"].as_u64().expect("id");
            match o["type"].as_str().expect("type") {
                "request" => {
                    let priority = i32::try_from(o["priority"].as_i64().expect("priority"))
                        .expect("i32 priority");
                    Output::Request(
                        request(o)
                            .with_priority(priority)
                            .with_callback(&format!("id{id}")),
                    )
                }
                "item" => {
                    let mut fields = o["item"].as_object().expect("item").clone();
                    fields.insert(ITEM_ID.to_owned(), json!(id));
                    Output::Item(trawl::crawl::Item(fields))
                }
                other => panic!("unknown output type {other:?}"),
            }
        })
        .collect()
}

/// trawl's outputs in the recorder's shape (without `url`/`url_len`, compared apart).
fn describe(outs: &[Output]) -> Vec<Value> {
    outs.iter()
        .map(|o| match o {
            Output::Request(r) => {
                let id: u64 = r
                    .callback()
                    .and_then(|c| c.strip_prefix("id"))
                    .and_then(|n| n.parse().ok())
                    .expect("a request output without its case id (callback id<N>)");
                json!({
                    "type": "request",
                    "id": id,
                    "meta": meta_of(r),
                    "priority": r.priority(),
                    "url": r.url().as_str(),
                })
            }
            Output::Item(item) => {
                let mut fields = item.0.clone();
                let id = fields
                    .remove(ITEM_ID)
                    .expect("an item output without its case id");
                json!({ "type": "item", "id": id, "item": fields })
            }
            Output::Later(_) => json!({ "type": "later" }),
        })
        .collect()
}

/// The recorded outputs in the same shape; `url` is kept only when trawl's parsed form
/// of the input URL equals Scrapy's (`scrapy_url`), so that normalisation differences
/// unrelated to the middleware (a trailing `/` on a bare host) are not reported.
fn expected_outputs(step: &Value) -> Vec<Value> {
    let comparable: BTreeMap<u64, bool> = step["outputs"]
        .as_array()
        .expect("outputs")
        .iter()
        .filter(|o| o["type"] == "request")
        .map(|o| {
            let trawl_url = Request::get(o["url"].as_str().expect("url"))
                .map(|r| r.url().as_str().to_owned())
                .unwrap_or_default();
            (o["id"].as_u64().expect("id"), trawl_url == o["scrapy_url"])
        })
        .collect();
    step["expected"]["outputs"]
        .as_array()
        .expect("expected outputs")
        .iter()
        .map(|o| {
            let mut o = o.as_object().expect("output").clone();
            o.remove("url_len");
            let id = o["id"].as_u64().expect("id");
            if o["type"] == "request" && !comparable.get(&id).copied().unwrap_or(false) {
                o.remove("url");
            }
            Value::Object(o)
        })
        .collect()
}

fn strip_uncomparable_urls(actual: &mut [Value], expected: &[Value]) {
    for a in actual.iter_mut() {
        let has_url = expected
            .iter()
            .any(|e| e["id"] == a["id"] && e.get("url").is_some());
        if !has_url && let Some(o) = a.as_object_mut() {
            o.remove("url");
        }
    }
}

fn our_stats(ctx: &CrawlContext) -> BTreeMap<String, Value> {
    ctx.stats
        .get_stats()
        .into_iter()
        .filter(|(k, _)| STAT_PREFIXES.iter().any(|p| k.starts_with(p)))
        .collect()
}

/// `None` → JSON null, `Some(outputs)` → the described list (Scrapy's `()` is `[]`).
fn handled(result: Option<Vec<Output>>) -> Value {
    match result {
        None => Value::Null,
        Some(outs) => Value::Array(describe(&outs)),
    }
}

fn raised(f: &Failure) -> Value {
    if f.check::<HttpError>() {
        json!("HttpError")
    } else {
        json!(format!("other failure: {f}"))
    }
}

/// Replays one case; returns its mismatches.
fn replay(case: &Value) -> Vec<String> {
    let name = case["name"].as_str().expect("name");
    let mw_name = case["middleware"].as_str().expect("middleware");
    let mut errors = Vec::new();
    let ctx = context(case["settings"].as_object().expect("settings"));
    if let Err(e) = apply_spider_attrs(&ctx, case["spider_attrs"].as_object().expect("attrs")) {
        errors.push(format!("{name}: {e}"));
    }
    let mw = match (build(mw_name, &ctx), case["from_crawler"].as_str()) {
        (Ok(mw), Some("ok")) => mw,
        (Err(f), Some("NotConfigured")) if f.check::<NotConfigured>() => return errors,
        (Ok(_), expected) => {
            errors.push(format!(
                "{name}: from_crawler succeeded, Scrapy: {expected:?}"
            ));
            return errors;
        }
        (Err(f), expected) => {
            errors.push(format!(
                "{name}: from_crawler failed ({f}), Scrapy: {expected:?}"
            ));
            return errors;
        }
    };
    // Outputs go through a manager, as in a crawl: it decides between a middleware's
    // `process_spider_output` and its per-output methods.
    let manager = SpiderMiddlewareManager::new(vec![(mw_name.to_owned(), mw.clone())]);
    for (i, step) in case["steps"].as_array().expect("steps").iter().enumerate() {
        let kind = step["kind"].as_str().expect("kind");
        let at = format!("{name} step {i} ({kind}, settings {})", case["settings"]);
        let expected = &step["expected"];
        let resp = (!step["response"].is_null()).then(|| response(&step["response"]));
        match kind {
            "output" | "output_async" | "start" => {
                let outs = outputs(&step["outputs"]);
                if mw_name == "urllength" {
                    // The length compared is the URL's, so it must be Scrapy's URL.
                    for o in step["outputs"].as_array().expect("outputs") {
                        if o["type"] == "request" {
                            let trawl_url = request(o).url().as_str().to_owned();
                            if trawl_url != o["scrapy_url"] {
                                errors.push(format!(
                                    "{at}: URL {} parses to {trawl_url:?}, Scrapy {}",
                                    o["url"], o["scrapy_url"]
                                ));
                            }
                        }
                    }
                }
                let outputs = match (&resp, kind) {
                    (Some(r), "output" | "output_async") => {
                        manager.process_output(Some(r), r.request(), trawl::crawl::outputs(outs))
                    }
                    // No response: Scrapy's start-request path.
                    _ => manager.process_start(trawl::crawl::outputs(outs)),
                };
                let result: Vec<Output> = outputs
                    .collect::<Result<_, _>>()
                    .expect("no middleware raises here");
                let want = expected_outputs(step);
                let mut got = describe(&result);
                strip_uncomparable_urls(&mut got, &want);
                if got != want {
                    errors.push(format!(
                        "{at}: outputs differ\n    trawl:  {}\n    scrapy: {}",
                        Value::Array(got),
                        Value::Array(want)
                    ));
                }
            }
            "input" => {
                let r = resp.as_ref().expect("input step without response");
                let (got_raise, got_handled) = match mw.process_spider_input(r) {
                    Ok(()) => (Value::Null, Value::Null),
                    Err(f) => {
                        let h = if step["call_exception"].as_bool().unwrap_or(true) {
                            handled(mw.process_spider_exception(r, &f))
                        } else {
                            Value::Null
                        };
                        (raised(&f), h)
                    }
                };
                if got_raise != expected["raises"] {
                    errors.push(format!(
                        "{at}: status {} meta {}: process_spider_input raised {got_raise}, Scrapy {}",
                        step["response"]["status"], step["response"]["meta"], expected["raises"]
                    ));
                }
                if got_handled != expected["exception_result"] {
                    errors.push(format!(
                        "{at}: process_spider_exception returned {got_handled}, Scrapy {}",
                        expected["exception_result"]
                    ));
                }
            }
            "exception" => {
                let r = resp.as_ref().expect("exception step without response");
                let failure = match step["exception"].as_str() {
                    Some("HttpError") => Failure::new(HttpError {
                        status: r.status(),
                        url: r.url().to_string(),
                    }),
                    _ => Failure::msg("Exception"),
                };
                let got = handled(mw.process_spider_exception(r, &failure));
                if got != expected["result"] {
                    errors.push(format!(
                        "{at}: process_spider_exception({}) returned {got}, Scrapy {}",
                        step["exception"], expected["result"]
                    ));
                }
            }
            other => panic!("{at}: unknown step kind {other:?}"),
        }
        let got_stats = our_stats(&ctx);
        let want_stats = object(&expected["stats"]);
        if got_stats != want_stats {
            errors.push(format!(
                "{at}: stats differ\n    trawl:  {got_stats:?}\n    scrapy: {want_stats:?}"
            ));
        }
    }
    errors
}

#[test]
fn spider_middlewares_match_scrapy() {
    let text = std::fs::read_to_string(DATA).unwrap_or_else(|e| {
        panic!("{DATA}: {e} (regenerate with tests/data/middlewares/record.py)")
    });
    let data: Value = serde_json::from_str(&text).expect("cases.json is JSON");
    let cases = data["cases"].as_array().expect("cases");
    assert!(!cases.is_empty(), "{DATA} has no cases");
    assert_eq!(data["count"].as_u64(), Some(cases.len() as u64), "count");
    for mw in ["depth", "urllength", "httperror"] {
        assert!(
            cases.iter().any(|c| c["middleware"] == mw),
            "no {mw} case in {DATA}"
        );
    }
    let mut errors = Vec::new();
    let mut failed_cases = 0;
    for case in cases {
        let e = replay(case);
        if !e.is_empty() {
            failed_cases += 1;
        }
        errors.extend(e);
    }
    assert!(
        errors.is_empty(),
        "{failed_cases} of {} cases differ from Scrapy {}:\n{}",
        cases.len(),
        data["versions"]["scrapy"],
        errors.join("\n")
    );
}
