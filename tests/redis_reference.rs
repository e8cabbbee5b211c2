//! The distributed layer's formats against what the real scrapy-redis 0.9.1 produced
//! (recorded by `tests/data/redis/gen_fingerprints.py` and `gen_layout.py`; no Redis
//! server needed): the dupefilter fingerprint, the queue entries written through
//! `python/trawl_redis_serializer.py`, the items `RedisPipeline` pushes, and what
//! `make_request_from_data` makes of start-URL payloads.

use serde_json::Value;
use trawl::crawl::Request;
use trawl::distributed::codec::{decode_compat, encode_compat, python_json};
use trawl::distributed::dupefilter::scrapy_redis_fingerprint_json;
use trawl::distributed::scrapy_redis_fingerprint;
use trawl::distributed::spider::make_request_from_data;

fn layout() -> Value {
    serde_json::from_str(include_str!("data/redis/layout.json")).expect("layout.json")
}

fn s(v: &Value) -> &str {
    v.as_str().expect("a string")
}

/// Every vector: the request built from the same URL, method, body and headers has
/// Scrapy's URL (`url_str()`, the `safe_url_string` form fingerprints hash — where the
/// `url` crate's parse differs, e.g. `https://example.com:443/api`, the string is kept
/// apart) and scrapy-redis's fingerprint.
#[test]
fn dupefilter_fingerprints_match_scrapy_redis() {
    let data: Value =
        serde_json::from_str(include_str!("data/redis/fingerprints.json")).expect("json");
    let vectors = data["vectors"].as_array().expect("vectors");
    assert_eq!(vectors.len(), 234);
    for v in vectors {
        let mut req = Request::get(s(&v["url"])).unwrap_or_else(|e| panic!("{e}: {v}"));
        assert_eq!(req.url_str(), s(&v["request_url"]), "{v}");
        req = req.with_method(s(&v["method"]));
        assert_eq!(req.method().as_str(), s(&v["request_method"]), "{v}");
        let hex = s(&v["body_hex"]);
        let body: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
            .collect();
        if !body.is_empty() {
            req = req.with_body(body);
        }
        for pair in v["headers"].as_array().expect("headers") {
            req = req.with_header(s(&pair[0]), s(&pair[1]));
        }
        assert_eq!(
            scrapy_redis_fingerprint_json(&req),
            s(&v["fingerprint_json"]),
            "{v}"
        );
        assert_eq!(scrapy_redis_fingerprint(&req), s(&v["fingerprint"]), "{v}");
    }
}

/// Every request scrapy-redis pushed through the JSON serializer reads back and is
/// written again byte for byte; its score is the negated priority.
#[test]
fn queue_entries_round_trip_with_the_python_serializer() {
    let layout = layout();
    let mut n = 0;
    for (class, q) in layout["queues"].as_object().expect("queues") {
        for push in q["push"].as_array().expect("push") {
            let cmd = push["commands"][0].as_array().expect("command");
            let entry = s(cmd.last().expect("entry"));
            let req =
                decode_compat(entry.as_bytes()).unwrap_or_else(|e| panic!("{class}: {e}: {entry}"));
            assert_eq!(req.url().as_str(), s(&push["url"]));
            assert_eq!(
                i64::from(req.priority()),
                push["priority"].as_i64().expect("int")
            );
            assert_eq!(encode_compat(&req), entry, "{class}");
            if s(&cmd[0]) == "ZADD" {
                assert_eq!(s(&cmd[2]), (-i64::from(req.priority())).to_string());
            }
            n += 1;
        }
    }
    assert_eq!(n, 15, "every recorded push");
}

#[test]
fn items_are_pushed_as_scrapy_redis_writes_them() {
    let layout = layout();
    for p in layout["pipeline"]["process_item"]
        .as_array()
        .expect("items")
    {
        let cmd = p["commands"][0].as_array().expect("command");
        let json = s(&cmd[2]);
        // The item as a JSON object (the values Python's encoder produced).
        let item: Value = serde_json::from_str(json).expect("json");
        assert_eq!(python_json(&item, false), json);
    }
}

#[test]
fn start_payloads_become_the_requests_scrapy_redis_makes() {
    let layout = layout();
    let list = &layout["start_urls"]["list"];
    let pushed: Vec<&str> = list["pushed"]
        .as_array()
        .expect("pushed")
        .iter()
        .map(s)
        .collect();
    let expected: Vec<&Value> = list["batches"]
        .as_array()
        .expect("batches")
        .iter()
        .flat_map(|b| b["requests"].as_array().expect("requests"))
        .collect();
    let made: Vec<Request> = pushed
        .iter()
        .filter_map(|p| make_request_from_data(p.as_bytes()).ok())
        .collect();
    // scrapy-redis drops the payload without a url (with a warning); so do we (and
    // keep it in the :bad list).
    assert_eq!(made.len(), expected.len());
    for (r, e) in made.iter().zip(expected) {
        assert_eq!(r.url().as_str(), s(&e["url"]));
        assert_eq!(r.method().as_str(), s(&e["method"]));
        assert_eq!(r.body(), s(&e["body"]).as_bytes());
        assert_eq!(r.dont_filter(), e["dont_filter"].as_bool().expect("bool"));
        assert_eq!(r.callback(), None);
        for (k, v) in e["meta"].as_object().expect("meta") {
            assert_eq!(r.meta().get(k), Some(v), "meta {k}");
        }
        for h in e["headers"].as_array().expect("headers") {
            let name = s(&h[0]);
            let values: Vec<&str> = h[1].as_array().expect("values").iter().map(s).collect();
            let got: Vec<String> = r
                .headers()
                .get_all(name)
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .collect();
            assert_eq!(got, values, "header {name}");
        }
    }
}
