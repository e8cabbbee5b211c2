//! Timing under the ManualClock: AutoThrottle with scripted latencies, per-request
//! delays (Scrapy #802), and robots.txt Crawl-delay. No sleeps.

mod util;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use serde_json::json;
use trawl::crawl::keys::NOT_BEFORE;
use trawl::crawl::scheduler::DelayedQueue;
use trawl::crawl::signals::{Signal, SignalArgs};
use trawl::crawl::{Output, Request};
use util::crawl::{Answer, FnSpider, harness};

fn urls(n: usize, host: &str) -> Vec<String> {
    (0..n).map(|i| format!("http://{host}/{i}")).collect()
}

/// Records (status, slot delay after the response) on every `response_downloaded`.
type Delays = Rc<RefCell<Vec<(u16, f64)>>>;

fn probe(r: &mut trawl::crawl::Registry, delays: Delays) {
    r.register_extension("test.Probe", move |c| {
        let weak = Rc::downgrade(c);
        let d = delays.clone();
        c.signals.connect(Signal::ResponseDownloaded, move |args| {
            if let (SignalArgs::Response { response, .. }, Some(c)) = (args, weak.upgrade())
                && let Some(e) = c.engine()
                && let Some(slot) = e.downloader().slot_state("a.test")
            {
                d.borrow_mut().push((response.status(), slot.delay));
            }
            Ok(())
        });
        Ok(Rc::new(()) as Rc<dyn std::any::Any>)
    });
}

fn throttled(settings: &[(&str, serde_json::Value)], n: usize) -> (util::crawl::Harness, Delays) {
    let delays: Delays = Rc::default();
    let d = delays.clone();
    let mut all = vec![
        ("AUTOTHROTTLE_ENABLED", json!(true)),
        // After AutoThrottle, so the probe sees the adjusted delay.
        ("EXTENSIONS", json!({"test.Probe": 1000})),
    ];
    all.extend(settings.iter().cloned());
    let h = harness(FnSpider::urls(urls(n, "a.test")), &all, move |r| {
        probe(r, d)
    });
    (h, delays)
}

#[test]
fn autothrottle_starts_at_start_delay_and_converges_on_latency() {
    let (h, delays) = throttled(&[("AUTOTHROTTLE_START_DELAY", json!(5.0))], 6);
    h.script.default.borrow_mut().delay = 1.0;
    assert!(h.run(120.0));
    let d: Vec<f64> = delays.borrow().iter().map(|(_, d)| *d).collect();
    // target = 1.0 / 1.0; new = max(target, (old + target) / 2): 5 → 3 → 2 → 1.5 → 1.25 → 1.125
    assert_eq!(d, [3.0, 2.0, 1.5, 1.25, 1.125, 1.0625]);
    // The first request went out at once, the second only after the 5 s start delay.
    let t: Vec<f64> = h.script.started.borrow().iter().map(|(t, _)| *t).collect();
    assert!(t[1] - t[0] >= 5.0 - 1e-9, "{t:?}");
}

#[test]
fn autothrottle_respects_min_max_and_non_200() {
    // Floor: DOWNLOAD_DELAY.
    let (h, delays) = throttled(
        &[
            ("AUTOTHROTTLE_START_DELAY", json!(3.0)),
            ("DOWNLOAD_DELAY", json!(2.0)),
        ],
        4,
    );
    h.script.default.borrow_mut().delay = 0.1;
    assert!(h.run(120.0));
    assert!(
        delays.borrow().iter().all(|(_, d)| *d >= 2.0),
        "{:?}",
        delays.borrow()
    );
    assert_eq!(delays.borrow().last().map(|(_, d)| *d), Some(2.0));

    // Ceiling: AUTOTHROTTLE_MAX_DELAY.
    let (h, delays) = throttled(
        &[
            ("AUTOTHROTTLE_START_DELAY", json!(1.0)),
            ("AUTOTHROTTLE_MAX_DELAY", json!(4.0)),
        ],
        3,
    );
    h.script.default.borrow_mut().delay = 30.0;
    assert!(h.run(600.0));
    assert!(
        delays.borrow().iter().all(|(_, d)| *d == 4.0),
        "{:?}",
        delays.borrow()
    );

    // A fast error never lowers the delay; a slow one may raise it.
    let (h, delays) = throttled(&[("AUTOTHROTTLE_START_DELAY", json!(5.0))], 3);
    *h.script.default.borrow_mut() = Answer {
        delay: 0.5,
        status: 503,
        ..Answer::default()
    };
    assert!(h.run(120.0));
    assert!(
        delays.borrow().iter().all(|(s, d)| *s == 503 && *d == 5.0),
        "{:?}",
        delays.borrow()
    );
}

#[test]
fn autothrottle_dont_adjust_delay_meta() {
    let delays: Delays = Rc::default();
    let d = delays.clone();
    let spider = FnSpider::new(
        || {
            Box::new((0..3).map(|i| {
                Output::Request(
                    Request::get(&format!("http://a.test/{i}"))
                        .expect("url")
                        .with_meta("autothrottle_dont_adjust_delay", true),
                )
            }))
        },
        |_, _| Ok(Vec::new()),
    );
    let h = harness(
        spider,
        &[
            ("AUTOTHROTTLE_ENABLED", json!(true)),
            ("AUTOTHROTTLE_START_DELAY", json!(2.0)),
            ("EXTENSIONS", json!({"test.Probe": 1000})),
        ],
        move |r| probe(r, d),
    );
    h.script.default.borrow_mut().delay = 0.1;
    assert!(h.run(60.0));
    assert!(delays.borrow().iter().all(|(_, d)| *d == 2.0));
}

// ---------------------------------------------------------------- per-request delays

fn delayed_spider(delays: Vec<(String, f64)>) -> FnSpider {
    FnSpider::new(
        move || {
            let d = delays.clone();
            Box::new(d.into_iter().map(|(u, secs)| {
                let r = Request::get(&u).expect("url");
                Output::Request(if secs > 0.0 { r.with_delay(secs) } else { r })
            }))
        },
        |_, _| Ok(Vec::new()),
    )
}

#[test]
fn delayed_requests_go_out_on_time_in_time_order() {
    let h = harness(
        delayed_spider(vec![
            ("http://a.test/three".into(), 3.0),
            ("http://a.test/one".into(), 1.0),
            ("http://a.test/two".into(), 2.0),
            ("http://a.test/now".into(), 0.0),
        ]),
        &[],
        |_| {},
    );
    assert!(h.run(30.0));
    let started = h.script.started.borrow().clone();
    let order: Vec<&str> = started
        .iter()
        .map(|(_, u)| u.rsplit('/').next().unwrap_or(""))
        .collect();
    assert_eq!(order, ["now", "one", "two", "three"]);
    for (t, u) in &started {
        let due = match u.rsplit('/').next() {
            Some("one") => 1.0,
            Some("two") => 2.0,
            Some("three") => 3.0,
            _ => 0.0,
        };
        assert!(*t >= due - 1e-9 && *t < due + 0.06, "{u} at {t}");
    }
    assert_eq!(h.stat("scheduler/enqueued/delayed"), 3);
    assert_eq!(h.stat("scheduler/enqueued"), h.stat("scheduler/dequeued"));
}

#[test]
fn a_waiting_request_holds_no_slot_and_blocks_nobody() {
    let mut delays = vec![("http://a.test/late".to_owned(), 50.0)];
    delays.extend(urls(5, "a.test").into_iter().map(|u| (u, 0.0)));
    let h = harness(
        delayed_spider(delays),
        &[
            ("CONCURRENT_REQUESTS", json!(1)),
            ("CONCURRENT_REQUESTS_PER_DOMAIN", json!(1)),
        ],
        |_| {},
    );
    h.script.default.borrow_mut().delay = 1.0;
    assert!(h.run(120.0));
    let started = h.script.started.borrow().clone();
    assert_eq!(started.len(), 6);
    // The five ordinary requests ran back to back, one at a time, while /late waited.
    let ordinary: Vec<f64> = started
        .iter()
        .filter(|(_, u)| !u.ends_with("/late"))
        .map(|(t, _)| *t)
        .collect();
    assert!(ordinary.iter().all(|t| *t < 6.0), "{ordinary:?}");
    let late = started
        .iter()
        .find(|(_, u)| u.ends_with("/late"))
        .map(|(t, _)| *t);
    assert!(late.is_some_and(|t| (50.0..50.06).contains(&t)), "{late:?}");
    // The spider stayed open for it.
    assert_eq!(h.stat("response_received_count"), 6);
}

#[test]
fn thousands_of_delayed_requests() {
    let n = 5000;
    let delays: Vec<(String, f64)> = (0..n)
        .map(|i| {
            (
                format!("http://h{}.test/{i}", i % 7),
                ((i * 7919) % 1000) as f64 / 10.0,
            )
        })
        .collect();
    let expected: HashMap<String, f64> = delays.iter().cloned().collect();
    let h = harness(
        delayed_spider(delays),
        &[
            ("CONCURRENT_REQUESTS", json!(64)),
            ("CONCURRENT_REQUESTS_PER_DOMAIN", json!(16)),
        ],
        |_| {},
    );
    h.script.default.borrow_mut().delay = 0.01;
    assert!(h.run(300.0));
    let started = h.script.started.borrow().clone();
    assert_eq!(started.len(), n);
    for (t, u) in &started {
        let due = expected[u];
        assert!(*t >= due - 1e-9, "{u} went out at {t}, due {due}");
    }
    // Not busy-polling: the engine woke on timers, not every tick; the last request
    // went out close to its time.
    let last = started.iter().map(|(t, _)| *t).fold(0.0, f64::max);
    assert!(last < 100.5, "{last}");
    assert_eq!(h.stat("response_received_count") as usize, n);
}

#[test]
fn the_not_before_time_survives_serialisation() {
    let mut r = Request::get("http://a.test/x")
        .expect("url")
        .with_delay(30.0);
    let at = DelayedQueue::not_before(&mut r, 1000.0).expect("delayed");
    assert_eq!(at, 1030.0);
    let json = serde_json::to_string(&r).expect("serialise");
    let mut back: Request = serde_json::from_str(&json).expect("deserialise");
    assert_eq!(back.meta().get_f64(NOT_BEFORE), Some(1030.0));
    // Read back later (another process, a restart): still the same absolute time.
    assert_eq!(DelayedQueue::not_before(&mut back, 5000.0), Some(1030.0));
}

// ---------------------------------------------------------------- Crawl-delay

fn crawl_delay_run(obey_delay: bool) -> Vec<f64> {
    let h = harness(
        FnSpider::urls(urls(4, "a.test")),
        &[
            ("ROBOTSTXT_OBEY", json!(true)),
            ("ROBOTSTXT_CRAWL_DELAY", json!(obey_delay)),
        ],
        |_| {},
    );
    h.script.set(
        "http://a.test/robots.txt",
        Answer {
            delay: 0.1,
            status: 200,
            body: b"User-agent: *\nCrawl-delay: 3\n".to_vec(),
            ..Answer::default()
        },
    );
    h.script.default.borrow_mut().delay = 0.1;
    assert!(h.run(60.0));
    h.script
        .started
        .borrow()
        .iter()
        .filter(|(_, u)| !u.ends_with("robots.txt"))
        .map(|(t, _)| *t)
        .collect()
}

#[test]
fn robots_crawl_delay_becomes_the_slot_minimum_when_enabled() {
    let t = crawl_delay_run(true);
    assert_eq!(t.len(), 4);
    for w in t.windows(2) {
        assert!(w[1] - w[0] >= 3.0 - 1e-9, "{t:?}");
    }
    let t = crawl_delay_run(false);
    assert!(
        t.windows(2).all(|w| w[1] - w[0] < 0.5),
        "Scrapy's default ignores it: {t:?}"
    );
}
