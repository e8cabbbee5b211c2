//! Scrapy 2.19's MemoryUsage, LogCount, CLOSESPIDER_PAGECOUNT_NO_ITEM /
//! CLOSESPIDER_TIMEOUT_NO_ITEM and LogStats' per-minute stats, on the manual clock.

mod util;

use std::cell::Cell;
use std::rc::Rc;

use serde_json::{Value, json};
use trawl::crawl::extensions::memusage::{MemoryProbe, MemoryUsage};
use trawl::crawl::{Item, Output, Request};
use util::crawl::{Answer, FnSpider, harness};

fn endless(host: &'static str) -> FnSpider {
    FnSpider::new(
        move || {
            Box::new((0..).map(move |i| {
                Output::Request(Request::get(&format!("http://{host}/{i}")).unwrap())
            }))
        },
        |_, _| Ok(Vec::new()),
    )
}

const MIB: u64 = 1024 * 1024;

#[test]
fn memory_usage_records_warns_and_closes_past_the_limit() {
    let size = Rc::new(Cell::new(10 * MIB));
    let s = size.clone();
    let h = harness(
        endless("a.test"),
        &[
            (
                "EXTENSIONS",
                json!({"trawl.MemoryUsage": null, "test.Mem": 10}),
            ),
            ("MEMUSAGE_LIMIT_MB", json!(100)),
            ("MEMUSAGE_WARNING_MB", json!(50)),
            ("MEMUSAGE_CHECK_INTERVAL_SECONDS", json!(1.0)),
            ("CONCURRENT_REQUESTS", json!(1)),
        ],
        move |r| {
            let s = s.clone();
            r.register_extension("test.Mem", move |ctx| {
                let s = s.clone();
                let probe: MemoryProbe = Rc::new(move || Some(s.get()));
                Ok(MemoryUsage::with_probe(ctx, probe)? as Rc<dyn std::any::Any>)
            });
        },
    );
    let step = |secs: f64| {
        for _ in 0..(secs / 0.05).round() as usize {
            h.clock.advance(0.05);
        }
    };
    step(1.5);
    assert_eq!(h.stat("memusage/startup"), (10 * MIB) as i64);
    assert!(
        h.crawler
            .stats
            .get_value("memusage/warning_reached")
            .is_none()
    );
    size.set(60 * MIB);
    step(1.0);
    assert_eq!(h.stat("memusage/warning_reached"), 1);
    assert!(!h.done.has_result(), "a warning does not close");
    size.set(120 * MIB);
    assert!(h.run(5.0), "closed past the limit");
    assert_eq!(
        h.crawler.stats.get_value("finish_reason"),
        Some(json!("memusage_exceeded"))
    );
    assert_eq!(h.stat("memusage/limit_reached"), 1);
    assert_eq!(h.stat("memusage/max"), (120 * MIB) as i64);
}

#[test]
fn memory_usage_is_off_with_memusage_enabled_false() {
    let h = harness(
        FnSpider::urls(vec!["http://a.test/".into()]),
        &[("MEMUSAGE_ENABLED", json!(false))],
        |_| {},
    );
    assert!(h.run(5.0));
    assert!(h.crawler.stats.get_value("memusage/startup").is_none());
    let h = harness(FnSpider::urls(vec!["http://a.test/".into()]), &[], |_| {});
    assert!(h.run(5.0));
    assert!(h.stat("memusage/max") > 0, "on by default (Linux peak RSS)");
}

#[test]
fn closespider_pagecount_no_item_counts_responses_since_the_last_item() {
    let seen = Rc::new(Cell::new(0));
    let n = seen.clone();
    let spider = FnSpider::new(
        || {
            Box::new(
                (0..50)
                    .map(|i| Output::Request(Request::get(&format!("http://a.test/{i}")).unwrap())),
            )
        },
        move |_, _| {
            n.set(n.get() + 1);
            if n.get() <= 2 {
                Ok(vec![Output::Item(Item::new().with("n", n.get()))])
            } else {
                Ok(Vec::new())
            }
        },
    );
    let h = harness(
        spider,
        &[
            ("CLOSESPIDER_PAGECOUNT_NO_ITEM", json!(3)),
            ("CONCURRENT_REQUESTS", json!(1)),
        ],
        |_| {},
    );
    assert!(h.run(20.0));
    assert_eq!(
        h.crawler.stats.get_value("finish_reason"),
        Some(json!("closespider_pagecount_no_item"))
    );
    assert_eq!(
        h.stat("response_received_count"),
        5,
        "2 with items, then 3 without"
    );
}

#[test]
fn closespider_timeout_no_item_closes_after_a_period_without_items() {
    let spider = FnSpider::new(
        || {
            Box::new(
                (0..)
                    .map(|i| Output::Request(Request::get(&format!("http://a.test/{i}")).unwrap())),
            )
        },
        |_, resp| {
            let i: u32 = resp.url().path()[1..].parse().unwrap_or(0);
            Ok(if i < 5 {
                vec![Output::Item(Item::new().with("i", i))]
            } else {
                Vec::new()
            })
        },
    );
    let h = harness(
        spider,
        &[
            ("CLOSESPIDER_TIMEOUT_NO_ITEM", json!(2)),
            ("CONCURRENT_REQUESTS", json!(1)),
        ],
        |_| {},
    );
    h.script.set(
        "http://a.test/0",
        Answer {
            delay: 0.1,
            ..Answer::default()
        },
    );
    assert!(h.run(30.0));
    assert_eq!(
        h.crawler.stats.get_value("finish_reason"),
        Some(json!("closespider_timeout_no_item"))
    );
    assert_eq!(h.stat("item_scraped_count"), 5);
    // Items stop after ~0.5 s; the 2 s periods end at 2 s (had items) and 4 s (none).
    let closed_at = h.clock.seconds();
    assert!((4.0..4.5).contains(&closed_at), "closed at {closed_at}");
}

#[test]
fn per_minute_stats_follow_scrapys_formula() {
    let h = harness(
        FnSpider::urls((0..4).map(|i| format!("http://a.test/{i}")).collect()),
        &[
            ("LOGSTATS_INTERVAL", json!(60.0)),
            ("CONCURRENT_REQUESTS", json!(1)),
        ],
        |_| {},
    );
    *h.script.default.borrow_mut() = Answer {
        delay: 0.6,
        ..Answer::default()
    };
    assert!(h.run(10.0));
    // 4 responses over 2.4+ s: whole seconds 2 → 4 / (2 / 60) = 120 per minute.
    assert_eq!(
        h.crawler.stats.get_value("responses_per_minute"),
        Some(json!(120.0))
    );
    assert_eq!(
        h.crawler.stats.get_value("items_per_minute"),
        Some(json!(0.0))
    );
    // Under a second: None, as Scrapy's.
    let h = harness(
        FnSpider::urls(vec!["http://a.test/".into()]),
        &[("LOGSTATS_INTERVAL", json!(60.0))],
        |_| {},
    );
    assert!(h.run(5.0));
    assert_eq!(
        h.crawler.stats.get_value("responses_per_minute"),
        Some(Value::Null)
    );
}
