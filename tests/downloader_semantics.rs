//! The downloader as Scrapy 2.19 runs it: `CONCURRENT_REQUESTS_PER_IP` slots keyed by
//! address, the downloader-aware queue's tie-breaking (recorded from Scrapy's
//! `_next_slot`), `DOWNLOAD_DELAY_JITTER` and the `DOWNLOAD_SLOTS` `jitter` key, and
//! `CONCURRENT_REQUESTS = 0` (no global limit), and the meta keys a downloader
//! middleware's `process_response` sees (recorded from a real Scrapy crawl).

mod util;

use std::rc::Rc;

use serde_json::{Value, json};
use trawl::crawl::downloader::middleware::{
    DownloaderMiddleware, ExceptionOutcome, ResponseOutcome,
};
use trawl::crawl::keys::DOWNLOAD_SLOT;
use trawl::crawl::scheduler::RequestQueue;
use trawl::crawl::scheduler::memqueue::memory_queues;
use trawl::crawl::scheduler::pqueues::DownloaderAwareQueue;
use trawl::crawl::slots::SlotActivity;
use trawl::crawl::{Meta, Request, Response};
use trawl::defer::Failure;
use util::crawl::{Answer, FnSpider, Harness, harness};

fn step(h: &Harness, secs: f64) {
    for _ in 0..(secs / 0.05).round() as usize {
        h.clock.advance(0.05);
    }
}

fn spider(urls: Vec<String>) -> FnSpider {
    FnSpider::urls(urls)
}

#[test]
fn ties_between_slots_are_broken_as_scrapy_does() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/pqueues/next_slot.json"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let data: Value = serde_json::from_str(&text).expect("next_slot.json");
    let scenarios = data["scenarios"].as_array().expect("scenarios");
    assert!(scenarios.len() >= 10);
    for (n, scenario) in scenarios.iter().enumerate() {
        let activity = Rc::new(SlotActivity::default());
        let mut q = DownloaderAwareQueue::new(memory_queues(false, false), activity.clone());
        let slots: Vec<&str> = scenario["slots"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        for slot in &slots {
            for i in 0..40 {
                let r = Request::get(&format!("http://any.test/{i}"))
                    .unwrap()
                    .with_meta(DOWNLOAD_SLOT, *slot);
                q.push(r).unwrap();
            }
        }
        let mut current: std::collections::HashMap<&str, i64> = std::collections::HashMap::new();
        for (i, step) in scenario["steps"].as_array().unwrap().iter().enumerate() {
            for slot in &slots {
                let want = step["active"][*slot].as_i64().unwrap();
                let have = current.get(slot).copied().unwrap_or(0);
                activity.add(slot, (want - have) as isize);
                current.insert(slot, want);
            }
            let popped = q.pop().unwrap().expect("a request");
            assert_eq!(
                popped.meta().get_str(DOWNLOAD_SLOT),
                step["chosen"].as_str(),
                "scenario {n} step {i}: {step}"
            );
        }
    }
}

#[test]
fn concurrent_requests_per_ip_shares_one_slot_between_hosts_on_one_address() {
    let urls: Vec<String> = (0..3)
        .flat_map(|i| [format!("http://a.test/{i}"), format!("http://b.test/{i}")])
        .collect();
    let run = |per_ip: usize| {
        let h = harness(
            spider(urls.clone()),
            &[
                ("CONCURRENT_REQUESTS_PER_IP", json!(per_ip)),
                ("CONCURRENT_REQUESTS_PER_DOMAIN", json!(1)),
            ],
            |_| {},
        );
        for host in ["a.test", "b.test"] {
            h.script
                .ips
                .borrow_mut()
                .insert(host.to_owned(), "10.0.0.1".parse().unwrap());
        }
        *h.script.default.borrow_mut() = Answer {
            delay: 1.0,
            ..Answer::default()
        };
        step(&h, 0.5);
        let keys = h.engine().downloader().slot_keys();
        let in_flight = h.script.started.borrow().len();
        assert!(h.run(30.0));
        (keys, in_flight)
    };
    let (keys, in_flight) = run(1);
    assert_eq!(keys, ["10.0.0.1"], "one slot for the address");
    assert_eq!(in_flight, 1, "a.test and b.test share its concurrency of 1");
    let (mut keys, in_flight) = run(0);
    keys.sort();
    assert_eq!(keys, ["a.test", "b.test"], "per domain without it");
    assert_eq!(in_flight, 2);
}

fn start_intervals(h: &Harness) -> Vec<f64> {
    let started = h.script.started.borrow();
    started.windows(2).map(|w| w[1].0 - w[0].0).collect()
}

#[test]
fn download_slots_jitter_bounds_the_delay_as_scrapy() {
    let urls: Vec<String> = (0..30).map(|i| format!("http://a.test/{i}")).collect();
    let run = |slot: Value| {
        let h = harness(
            spider(urls.clone()),
            &[
                ("DOWNLOAD_SLOTS", json!({ "a.test": slot })),
                ("DOWNLOAD_DELAY_JITTER", json!(0.5)),
            ],
            |_| {},
        );
        *h.script.default.borrow_mut() = Answer {
            delay: 0.01,
            ..Answer::default()
        };
        assert!(h.run(200.0));
        start_intervals(&h)
    };
    // jitter 0: exactly the delay (to the 0.05 s steps of the test clock).
    let exact = run(json!({"delay": 1.0, "jitter": 0.0}));
    assert!(exact.iter().all(|d| (d - 1.0).abs() < 0.06), "{exact:?}");
    // jitter 0.25: within ±25%, and not constant.
    let quarter = run(json!({"delay": 2.0, "jitter": 0.25}));
    assert!(
        quarter.iter().all(|d| (1.45..=2.55).contains(d)),
        "{quarter:?}"
    );
    assert!(
        quarter.iter().any(|d| (d - quarter[0]).abs() > 0.05),
        "{quarter:?}"
    );
    // jitter 2: Scrapy floors at 0 and reaches 3× (a clamp at 1 would stay in 0..2×).
    let wide = run(json!({"delay": 1.0, "jitter": 2.0}));
    assert!(wide.iter().all(|d| *d <= 3.06), "{wide:?}");
    assert!(wide.iter().any(|d| *d > 2.05), "{wide:?}");
    // The deprecated randomize_delay key: false means no variation.
    let off = run(json!({"delay": 1.0, "randomize_delay": false}));
    assert!(off.iter().all(|d| (d - 1.0).abs() < 0.06), "{off:?}");
}

#[test]
fn concurrent_requests_zero_means_no_global_limit() {
    let urls: Vec<String> = (0..20).map(|i| format!("http://h{i}.test/")).collect();
    let h = harness(spider(urls), &[("CONCURRENT_REQUESTS", json!(0))], |_| {});
    *h.script.default.borrow_mut() = Answer {
        delay: 5.0,
        ..Answer::default()
    };
    step(&h, 1.0);
    assert_eq!(h.script.started.borrow().len(), 20, "all at once");
    assert!(h.run(30.0));
}

#[test]
fn retry_after_delays_the_retry_and_the_whole_slot() {
    // /1 answers 503 with Retry-After: 7 once; /2 and /3 are on the same host. The
    // retry waits 7 s, and so do the other requests to a.test (Scrapy would retry at
    // once and keep hammering the host: scrapy#3849).
    let urls: Vec<String> = (1..=3).map(|i| format!("http://a.test/{i}")).collect();
    let h = harness(
        spider(urls),
        &[("CONCURRENT_REQUESTS_PER_DOMAIN", json!(1))],
        |_| {},
    );
    h.script.once(
        "http://a.test/1",
        Answer {
            status: 503,
            headers: vec![("Retry-After".into(), "7".into())],
            ..Answer::default()
        },
    );
    assert!(h.run(60.0));
    let started = h.script.started.borrow().clone();
    let times: Vec<f64> = started.iter().map(|(t, _)| *t).collect();
    assert_eq!(started.len(), 4, "{started:?}");
    assert!(times[0] < 0.5, "{started:?}");
    assert!(
        times[1..].iter().all(|t| *t >= 7.0),
        "nothing more to a.test before 7 s: {started:?}"
    );
    assert_eq!(h.stat("retry/retry_after_count"), 1);
    assert_eq!(h.stat("item_scraped_count"), 0);
    assert_eq!(h.stat("response_received_count"), 3);
}

#[test]
fn retry_after_is_capped_by_retry_after_max_and_understands_http_dates() {
    let h = harness(
        spider(vec!["http://a.test/1".into()]),
        &[("RETRY_AFTER_MAX", json!(10))],
        |_| {},
    );
    h.script.once(
        "http://a.test/1",
        Answer {
            status: 429,
            headers: vec![("Retry-After".into(), "3600".into())],
            ..Answer::default()
        },
    );
    assert!(h.run(60.0));
    let started = h.script.started.borrow().clone();
    assert_eq!(started.len(), 2);
    assert!(
        (10.0..11.0).contains(&started[1].0),
        "capped at 10 s: {started:?}"
    );
    // An HTTP date: the manual clock's wall time starts at the epoch.
    let h = harness(spider(vec!["http://a.test/1".into()]), &[], |_| {});
    h.script.once(
        "http://a.test/1",
        Answer {
            status: 503,
            headers: vec![("Retry-After".into(), "Thu, 01 Jan 1970 00:00:05 GMT".into())],
            ..Answer::default()
        },
    );
    assert!(h.run(60.0));
    let started = h.script.started.borrow().clone();
    assert!(
        (4.9..6.0).contains(&started[1].0),
        "until the date: {started:?}"
    );
}

/// (page key, sorted meta keys) as recorded.
type KeysSeen = Rc<std::cell::RefCell<Vec<(String, Vec<String>)>>>;

/// Records the sorted meta keys of the request each `process_response` gets, and of
/// each refused request's first `process_exception`.
struct MetaKeys(KeysSeen);

impl DownloaderMiddleware for MetaKeys {
    fn process_response(
        &self,
        request: &Request,
        response: Response,
    ) -> Result<ResponseOutcome, Failure> {
        let keys = sorted_keys(request.meta());
        self.0.borrow_mut().push((page_key(request.url()), keys));
        Ok(ResponseOutcome::Response(response))
    }

    fn process_exception(
        &self,
        request: &Request,
        _failure: &Failure,
    ) -> Result<ExceptionOutcome, Failure> {
        // A refused request's first failure only (retries add `retry_times`).
        let page = page_key(request.url());
        if !self.0.borrow().iter().any(|(p, _)| *p == page) {
            let keys = sorted_keys(request.meta());
            self.0.borrow_mut().push((page, keys));
        }
        Ok(ExceptionOutcome::Continue)
    }
}

/// A meta's keys, sorted (as the recording lists them).
fn sorted_keys(meta: &Meta) -> Vec<String> {
    let mut keys: Vec<String> = meta.iter().map(|(k, _)| k.to_owned()).collect();
    keys.sort();
    keys
}

/// The meta keys recorded from a Scrapy crawl (`record_response_meta.py`).
fn recorded_meta() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/middlewares/response_meta.json"
    );
    let text = std::fs::read_to_string(path).expect("tests/data/middlewares/response_meta.json");
    serde_json::from_str(&text).expect("json")
}

/// A recorded list of keys.
fn recorded_keys(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("keys")
        .iter()
        .map(|k| k.as_str().expect("key").to_owned())
        .collect()
}

/// The recording's page key: the URL after `scheme://host:port/`.
fn page_key(url: &url::Url) -> String {
    url.as_str().splitn(4, '/').nth(3).unwrap_or("").to_owned()
}

#[test]
fn process_response_and_process_exception_see_the_downloaders_meta_as_scrapy_does() {
    // Scrapy's process_response gets the request the downloader (`download_slot`) and
    // the handler (`download_latency`) wrote to: recorded from a real crawl.
    let recorded = recorded_meta();
    let order = recorded["middleware_order"].as_i64().expect("order");
    let server = trawl::testing::FixtureServer::start(trawl::testing::FixtureOptions::default())
        .expect("fixture server");
    let seen = KeysSeen::default();
    let callback_keys = KeysSeen::default();
    let base = server.url("");
    let next = format!("{base}/status/200?next=1");
    let ck = callback_keys.clone();
    // A port nothing listens on: bound, then closed.
    let refused = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let spider = util::live::LiveSpider::new(vec![
        util::live::get(&format!("{base}/status/200")),
        util::live::get(&format!("http://{refused}/refused")),
        // Not retried: its errback gets the request of its one attempt.
        util::live::get(&format!("http://{refused}/refused?dont_retry=1"))
            .with_meta("dont_retry", true),
    ])
    .follow(move |response| {
        let keys = sorted_keys(response.meta());
        ck.borrow_mut().push((page_key(response.url()), keys));
        if response.url().query().is_none() {
            vec![trawl::crawl::Output::Request(util::live::get(&next))]
        } else {
            Vec::new()
        }
    });
    let recorder = seen.clone();
    let (_crawler, live) = util::live::crawl_with(
        spider,
        &[
            ("DOWNLOADER_MIDDLEWARES", json!({ "test.MetaKeys": order })),
            // Scrapy's default, as in the recording.
            ("ROBOTSTXT_OBEY", json!(false)),
        ],
        move |r| {
            r.register_downloader_middleware("test.MetaKeys", move |_| {
                Ok(Rc::new(MetaKeys(recorder.clone())) as Rc<dyn DownloaderMiddleware>)
            });
        },
    );
    let failures = live.failures.borrow();
    assert!(
        failures.len() == 2 && failures.iter().all(|f| f.0.contains("/refused")),
        "{failures:?}"
    );
    let pages = recorded["pages"].as_object().expect("pages");
    let seen = seen.borrow();
    let callback_keys = callback_keys.borrow();
    assert_eq!(seen.len(), pages.len(), "{seen:?}");
    let errback_keys: Vec<(String, Vec<String>)> = live
        .failed_requests
        .borrow()
        .iter()
        .map(|r| (page_key(r.url()), sorted_keys(r.meta())))
        .collect();
    for (page, expected) in pages.iter().filter(|(p, _)| p.starts_with("refused")) {
        // `process_exception` of a refused download: the downloader's `download_slot`
        // is on the request, as on Scrapy's one object.
        let got = seen.iter().find(|(p, _)| p == page).map(|(_, k)| k);
        assert_eq!(
            got,
            Some(&recorded_keys(&expected["process_exception_meta_keys"])),
            "process_exception of {page}"
        );
        // Its errback gets that same request, as the middlewares left it (after the
        // last retry): not a copy taken before they ran.
        let got = errback_keys.iter().find(|(p, _)| p == page).map(|(_, k)| k);
        assert_eq!(
            got,
            Some(&recorded_keys(&expected["errback_meta_keys"])),
            "errback of {page}"
        );
    }
    for (page, expected) in pages.iter().filter(|(p, _)| !p.starts_with("refused")) {
        let got = seen.iter().find(|(p, _)| p == page).map(|(_, k)| k);
        assert_eq!(
            got,
            Some(&recorded_keys(&expected["process_response_meta_keys"])),
            "process_response of {page}"
        );
        // The callback sees the same request. One deliberate difference (DESIGN.md
        // §15): Scrapy's DepthMiddleware writes `depth = 0` into a start response's
        // meta when it first pulls a generator callback's output, before the
        // callback's body runs; trawl's spider middlewares get `&Response`, so a
        // response's meta has `depth` only when its request had it.
        let request_keys = recorded_keys(&expected["process_response_meta_keys"]);
        let want: Vec<String> = recorded_keys(&expected["callback_meta_keys"])
            .into_iter()
            .filter(|k| k != "depth" || request_keys.contains(k))
            .collect();
        let got = callback_keys
            .iter()
            .find(|(p, _)| p == page)
            .map(|(_, k)| k);
        assert_eq!(got, Some(&want), "callback of {page}");
    }
}

/// (failure text, the errback's request URL and meta keys), per errback call.
type Errbacks = Rc<std::cell::RefCell<Vec<(String, String, Vec<String>)>>>;

/// Start requests with an errback that records what it got.
struct ErrbackSpider {
    urls: Vec<String>,
    seen: Errbacks,
    parsed: Rc<std::cell::Cell<usize>>,
}

impl trawl::crawl::Spider for ErrbackSpider {
    fn name(&self) -> &str {
        "errbacks"
    }
    fn start(&mut self) -> trawl::crawl::Outputs {
        let requests: Vec<trawl::crawl::Output> = self
            .urls
            .iter()
            .map(|u| {
                trawl::crawl::Output::Request(
                    Request::get(u)
                        .expect("test URL")
                        .with_errback("failed")
                        .with_meta("dont_retry", true),
                )
            })
            .collect();
        trawl::crawl::outputs(requests)
    }
    fn callback(&mut self, _name: &str, _response: &Response) -> trawl::crawl::CallbackResult {
        self.parsed.set(self.parsed.get() + 1);
        Ok(Vec::new())
    }
    fn errback(
        &mut self,
        _name: &str,
        failure: &Failure,
        request: &Request,
    ) -> trawl::crawl::CallbackResult {
        self.seen.borrow_mut().push((
            failure.to_string(),
            request.url().to_string(),
            sorted_keys(request.meta()),
        ));
        Ok(Vec::new())
    }
}

#[test]
fn a_handler_that_panics_fails_its_request_to_the_errback_with_the_request() {
    // The downloader hands its request to the handler; the default `download_owned`
    // lends it to `download_request` and hands it back with the failure — a panic
    // included — so the errback still gets the request the downloader wrote to.
    let seen = Errbacks::default();
    let parsed = Rc::new(std::cell::Cell::new(0));
    let spider = ErrbackSpider {
        urls: vec![
            "http://a.test/bug".to_owned(),
            "http://a.test/fine".to_owned(),
        ],
        seen: seen.clone(),
        parsed: parsed.clone(),
    };
    let h = harness(spider, &[], |_| {});
    h.script.set(
        "http://a.test/bug",
        Answer {
            panic: Some("handler bug".to_owned()),
            ..Answer::default()
        },
    );
    assert!(h.run(30.0));
    assert_eq!(parsed.get(), 1, "the other request is downloaded");
    let seen = seen.borrow();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let (failure, url, keys) = &seen[0];
    assert!(failure.contains("handler bug"), "{failure}");
    assert_eq!(url, "http://a.test/bug");
    // The keys Scrapy's errback gets for a failed start request with `dont_retry`
    // (recorded from a Scrapy crawl, a refused connection there).
    let recorded = recorded_meta();
    let want = recorded_keys(&recorded["pages"]["refused?dont_retry=1"]["errback_meta_keys"]);
    assert_eq!(keys, &want, "the request the downloader wrote to");
}
