//! The execution engine under a ManualClock with a scripted download handler: one test
//! per behaviour of the source article (coalescing, heartbeat, two-phase close, error
//! isolation, the three gates, redirects, pull-based start, idleness signals, slots).

mod util;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use serde_json::json;
use trawl::crawl::downloader::middleware::{DownloaderMiddleware, ResponseOutcome};
use trawl::crawl::errors::{CloseSpider, DontCloseSpider};
use trawl::crawl::pipeline::{ItemOutcome, ItemPipeline};
use trawl::crawl::scheduler::{Enqueued, NextRequest, Scheduler, SchedulerContext};
use trawl::crawl::signals::Signal;
use trawl::crawl::spidermw::SpiderMiddleware;
use trawl::crawl::{Item, Output, Request, Response};
use trawl::defer::Failure;
use trawl::task::defer_later;
use util::capture_logs;
use util::crawl::{Answer, FnSpider, harness};

fn urls(n: usize, host: &str) -> Vec<String> {
    (0..n).map(|i| format!("http://{host}/p{i}")).collect()
}

#[test]
fn a_small_crawl_finishes_with_consistent_stats() {
    let spider = FnSpider::new(
        || {
            Box::new(std::iter::once(Output::Request(
                Request::get("http://a.test/").unwrap(),
            )))
        },
        |_, resp| {
            let mut out = vec![Output::Item(Item::new().with("url", resp.url().as_str()))];
            if resp.url().path() == "/" {
                for i in 0..5 {
                    out.push(Output::Request(resp.follow(format!("/x{i}")).unwrap()));
                    out.push(Output::Request(resp.follow(format!("/x{i}#dup")).unwrap()));
                }
            }
            Ok(out)
        },
    );
    let closed = spider.closed_with.clone();
    let h = harness(spider, &[], |_| {});
    assert!(h.run(10.0));
    assert_eq!(h.stat("response_received_count"), 6);
    assert_eq!(h.stat("item_scraped_count"), 6);
    assert_eq!(
        h.stat("dupefilter/filtered"),
        5,
        "fragments are dropped by the fingerprint"
    );
    assert_eq!(h.stat("scheduler/enqueued"), h.stat("scheduler/dequeued"));
    assert_eq!(h.stat("downloader/response_status_count/200"), 6);
    assert_eq!(h.stat("request_depth_max"), 1);
    assert_eq!(
        h.crawler.stats.get_value("finish_reason"),
        Some(json!("finished"))
    );
    assert_eq!(closed.borrow().as_deref(), Some("finished"));
}

#[test]
fn many_schedule_calls_in_one_tick_make_one_pass() {
    let h = harness(FnSpider::urls(urls(3, "a.test")), &[], |_| {});
    h.script.default.borrow_mut().delay = 10.0;
    h.clock.pump(&[0.5, 0.5]); // start() consumed, downloads in flight
    let engine = h.engine();
    let slot = engine.slot().unwrap();
    let before = slot.nextcall().runs();
    for _ in 0..1000 {
        slot.nextcall().schedule(0.0);
    }
    assert_eq!(
        h.clock
            .get_delayed_calls()
            .iter()
            .filter(|c| c.get_time() == h.clock.seconds())
            .count(),
        1
    );
    h.clock.advance(0.0);
    assert_eq!(slot.nextcall().runs() - before, 1);
    assert!(h.run(100.0));
}

/// A scheduler that reports pending requests but only hands them out after t=7s, the
/// way a shared Redis queue can. Nothing else wakes the engine: only the heartbeat.
struct LateScheduler {
    clock: trawl::reactor::Clock,
    given: bool,
}

impl Scheduler for LateScheduler {
    fn has_pending_requests(&self) -> bool {
        !self.given
    }
    fn enqueue_request(&mut self, _request: Request) -> Enqueued {
        Enqueued::Accepted
    }
    fn next_request(&mut self) -> NextRequest {
        if self.given || self.clock.seconds() < 7.0 {
            return NextRequest::Empty;
        }
        self.given = true;
        NextRequest::Ready(Request::get("http://late.test/").unwrap())
    }
    fn len(&self) -> usize {
        usize::from(!self.given)
    }
}

#[test]
fn heartbeat_rescues_a_scheduler_that_reports_pending_but_returns_none() {
    let spider = FnSpider::new(|| Box::new(std::iter::empty()), |_, _| Ok(Vec::new()));
    let h = harness(spider, &[("SCHEDULER", json!("test.Late"))], |r| {
        r.register_scheduler("test.Late", |c, _ctx: SchedulerContext| {
            Ok(Box::new(LateScheduler {
                clock: c.clock().clone(),
                given: false,
            }) as Box<dyn Scheduler>)
        });
    });
    // Small steps: ManualClock runs a due call with the clock already at the target.
    for _ in 0..99 {
        h.clock.advance(0.1);
    }
    assert!(
        h.script.started.borrow().is_empty(),
        "no pass between heartbeats: {:?}",
        h.script.started.borrow()
    );
    h.clock.advance(0.1);
    let started = h.script.started.borrow().clone();
    assert_eq!(started.len(), 1);
    assert!(
        (started[0].0 - 10.0).abs() < 1e-6,
        "picked up by the 10 s heartbeat: {started:?}"
    );
    assert!(h.run(10.0));
}

#[test]
fn two_phase_close_waits_for_requests_in_progress() {
    let h = harness(
        FnSpider::urls(vec!["http://a.test/slow".into()]),
        &[],
        |_| {},
    );
    h.script.set(
        "http://a.test/slow",
        Answer {
            delay: 10.0,
            ..Answer::default()
        },
    );
    h.clock.advance(1.0);
    let engine = h.engine();
    assert_eq!(engine.slot().unwrap().inprogress(), 1);
    let closed = engine.close_spider("test_close");
    h.clock.advance(1.0);
    assert!(!closed.has_result(), "still waiting for the slow request");
    assert!(engine.slot().unwrap().is_closing());
    h.clock.advance(9.0);
    assert!(closed.has_result());
    assert!(h.done.has_result());
    assert_eq!(
        h.crawler.stats.get_value("finish_reason"),
        Some(json!("test_close"))
    );
}

// Closing with nothing in progress: tests/engine_semantics.rs
// (`closing_with_nothing_in_progress_never_pulls_start`).

struct PanickingOutput;

impl SpiderMiddleware for PanickingOutput {
    fn process_spider_output(
        &self,
        _r: Option<&Response>,
        _q: &Request,
        _o: trawl::crawl::Outputs,
    ) -> trawl::crawl::Outputs {
        panic!("middleware bug while handling output")
    }
}

#[test]
fn a_failing_output_handler_still_removes_the_request_and_the_crawl_finishes() {
    let h_result = capture_logs(|| {
        let h = harness(
            FnSpider::urls(urls(3, "a.test")),
            &[("SPIDER_MIDDLEWARES", json!({"test.Panicking": 10}))],
            |r| {
                r.register_spider_middleware("test.Panicking", |_| {
                    Ok(Rc::new(PanickingOutput) as Rc<dyn SpiderMiddleware>)
                })
            },
        );
        let finished = h.run(10.0);
        (finished, h.crawler.stats.get_value("finish_reason"))
    });
    let ((finished, reason), logs) = h_result;
    assert!(finished);
    assert_eq!(reason, Some(json!("finished")));
    assert!(
        logs.iter()
            .any(|(_, m)| m.contains("middleware bug while handling output")),
        "{logs:?}"
    );
}

#[test]
fn callback_errors_are_logged_counted_and_isolated() {
    let spider = FnSpider::new(
        || {
            Box::new(
                urls(4, "a.test")
                    .into_iter()
                    .map(|u| Output::Request(Request::get(&u).unwrap())),
            )
        },
        |_, resp| {
            if resp.url().path() == "/p1" {
                panic!("boom in callback");
            }
            if resp.url().path() == "/p2" {
                return Err(Failure::msg("an error value"));
            }
            Ok(vec![Output::Item(Item::new().with("ok", true))])
        },
    );
    let ((), logs) = capture_logs(|| {
        let h = harness(spider, &[], |_| {});
        assert!(h.run(10.0));
        assert_eq!(h.stat("item_scraped_count"), 2);
        assert_eq!(h.stat("spider_exceptions/PanicError"), 1);
        assert_eq!(h.stat("spider_exceptions/Message"), 1);
    });
    assert!(logs.iter().any(|(l, m)| *l == log::Level::Error
        && m.contains("Spider error processing <GET http://a.test/p1>")));
}

#[test]
fn downloader_gate_caps_active_requests_at_concurrent_requests() {
    let h = harness(
        FnSpider::urls(urls(100, "a.test")),
        &[("CONCURRENT_REQUESTS_PER_DOMAIN", json!(100))],
        |_| {},
    );
    h.script.default.borrow_mut().delay = 5.0;
    h.clock.pump(&[0.0, 0.5, 0.5, 0.5]);
    let engine = h.engine();
    assert_eq!(engine.downloader().active(), 16);
    assert!(engine.needs_backout());
    assert_eq!(h.script.started.borrow().len(), 16);
    assert!(h.run(200.0));
    assert_eq!(h.stat("response_received_count"), 100);
}

struct SlowPipeline {
    clock: trawl::reactor::Clock,
}

impl ItemPipeline for SlowPipeline {
    fn process_item(&self, item: Item, _r: Option<&Response>) -> Result<ItemOutcome, Failure> {
        Ok(ItemOutcome::Wait(defer_later(
            &self.clock,
            30.0,
            move || Ok(item),
        )))
    }
}

#[test]
fn scraper_memory_gate_throttles_large_responses() {
    let spider = FnSpider::new(
        || {
            Box::new(
                urls(40, "big.test")
                    .into_iter()
                    .map(|u| Output::Request(Request::get(&u).unwrap())),
            )
        },
        |_, _| Ok(vec![Output::Item(Item::new().with("big", true))]),
    );
    let h = harness(
        spider,
        &[
            ("ITEM_PIPELINES", json!({"test.Slow": 300})),
            ("CONCURRENT_REQUESTS_PER_DOMAIN", json!(16)),
        ],
        |r| {
            r.register_pipeline("test.Slow", |c| {
                Ok(Rc::new(SlowPipeline {
                    clock: c.clock().clone(),
                }) as Rc<dyn ItemPipeline>)
            });
        },
    );
    *h.script.default.borrow_mut() = Answer {
        delay: 0.1,
        status: 200,
        body: vec![b'x'; 1_000_000],
        ..Answer::default()
    };
    h.clock.pump(&[0.0, 0.2, 0.2, 0.2, 0.2, 0.2]);
    let engine = h.engine();
    let scraper = engine.scraper().slot().unwrap();
    assert!(
        scraper.active_size() > 5_000_000,
        "{}",
        scraper.active_size()
    );
    assert_eq!(
        engine.downloader().active(),
        0,
        "the downloader has room..."
    );
    assert!(
        engine.needs_backout(),
        "...but the scraper gate holds the engine back"
    );
    assert!(
        engine.status_line().contains("backout=true"),
        "{}",
        engine.status_line()
    );
    assert_eq!(
        h.script.started.borrow().len(),
        16,
        "the first 16 went out before any response arrived"
    );
    h.clock.advance(10.0);
    assert_eq!(
        h.script.started.borrow().len(),
        16,
        "nothing more while 16 MB wait in the pipeline"
    );
    assert!(h.run(600.0));
    assert_eq!(h.stat("item_scraped_count"), 40);
}

/// Turns the first response of /r into a "redirect" to an already seen URL and to a new one.
struct Redirecting;

impl DownloaderMiddleware for Redirecting {
    fn process_response(
        &self,
        request: &Request,
        response: Response,
    ) -> Result<ResponseOutcome, Failure> {
        match request.url().path() {
            "/r1" => Ok(ResponseOutcome::Request(
                Request::get("http://a.test/p0").unwrap(),
            )),
            "/r2" => Ok(ResponseOutcome::Request(
                Request::get("http://a.test/target").unwrap(),
            )),
            _ => Ok(ResponseOutcome::Response(response)),
        }
    }
}

#[test]
fn redirects_go_back_through_the_scheduler_and_its_dupefilter() {
    let h = harness(
        FnSpider::urls(vec![
            "http://a.test/p0".into(),
            "http://a.test/r1".into(),
            "http://a.test/r2".into(),
        ]),
        &[("DOWNLOADER_MIDDLEWARES", json!({"test.Redirecting": 600}))],
        |r| {
            r.register_downloader_middleware("test.Redirecting", |_| {
                Ok(Rc::new(Redirecting) as Rc<dyn DownloaderMiddleware>)
            })
        },
    );
    // Start requests are ordinary (filtered) here: p0 is seen, so /r1's redirect to it
    // is dropped; /r2's target is new and crawled.
    assert!(h.run(20.0));
    assert_eq!(h.stat("dupefilter/filtered"), 1);
    assert_eq!(
        h.stat("response_received_count"),
        2,
        "p0 and target reach the spider"
    );
    assert_eq!(
        h.script
            .started_urls()
            .iter()
            .filter(|u| u.ends_with("/target"))
            .count(),
        1
    );
    assert_eq!(h.engine_or_none(), None);
}

trait EngineOrNone {
    fn engine_or_none(&self) -> Option<()>;
}

impl EngineOrNone for util::crawl::Harness {
    fn engine_or_none(&self) -> Option<()> {
        self.crawler.engine().map(|_| ())
    }
}

#[test]
fn start_is_pulled_lazily_with_backpressure() {
    let pulled = Rc::new(Cell::new(0usize));
    let p = pulled.clone();
    let spider = FnSpider::new(
        move || {
            let p = p.clone();
            Box::new((0..1_000_000).map(move |i| {
                p.set(p.get() + 1);
                Output::Request(Request::get(&format!("http://slow.test/{i}")).unwrap())
            }))
        },
        |_, _| Ok(Vec::new()),
    );
    let h = harness(spider, &[], |_| {});
    h.script.default.borrow_mut().delay = 60.0;
    let mut max_queued = 0;
    for _ in 0..200 {
        h.clock.advance(0.5);
        max_queued = max_queued.max(h.engine().slot().unwrap().scheduler_len());
    }
    assert!(max_queued <= 2, "scheduler held {max_queued} requests");
    assert!(
        pulled.get() < 40,
        "pulled {} of 1,000,000 while downloads are slow",
        pulled.get()
    );
    h.engine().close_spider("enough");
    assert!(h.run(200.0));
}

#[test]
fn items_from_start_go_to_the_pipelines() {
    let spider = FnSpider::new(
        || Box::new((0..3).map(|i| Output::Item(Item::new().with("n", i)))),
        |_, _| Ok(Vec::new()),
    );
    let h = harness(spider, &[], |_| {});
    assert!(h.run(5.0));
    assert_eq!(h.stat("item_scraped_count"), 3);
    assert_eq!(h.stat("response_received_count"), 0);
}

#[test]
fn dont_close_spider_keeps_it_open_and_close_spider_sets_the_reason() {
    let spider = FnSpider::new(|| Box::new(std::iter::empty()), |_, _| Ok(Vec::new()));
    let h = harness(spider, &[], |_| {});
    let idles = Rc::new(Cell::new(0));
    let i = idles.clone();
    h.crawler.signals.connect(Signal::SpiderIdle, move |_| {
        i.set(i.get() + 1);
        if i.get() < 3 {
            Err(Failure::new(DontCloseSpider))
        } else {
            Err(Failure::new(CloseSpider::new("no_more_work")))
        }
    });
    h.clock.advance(0.0);
    assert!(!h.done.has_result());
    // The heartbeat brings the engine back to the idle check every 5 s.
    h.clock.pump(&[5.0, 5.0, 5.0]);
    assert!(h.done.has_result());
    assert_eq!(idles.get(), 3);
    assert_eq!(
        h.crawler.stats.get_value("finish_reason"),
        Some(json!("no_more_work"))
    );
}

#[test]
fn an_endless_start_keeps_the_spider_open() {
    let spider = FnSpider::new(
        || {
            let mut i = 0u64;
            Box::new(std::iter::from_fn(move || {
                i += 1;
                Some(Output::Request(
                    Request::get(&format!("http://slow.test/{i}")).unwrap(),
                ))
            }))
        },
        |_, _| Ok(Vec::new()),
    );
    let h = harness(spider, &[], |_| {});
    h.script.default.borrow_mut().delay = 0.5;
    h.clock.pump(&[1.0; 20]);
    assert!(!h.done.has_result());
    assert!(h.engine().start_pending());
    assert!(!h.engine().spider_is_idle());
    assert!(
        h.stat("response_received_count") > 20,
        "the crawl keeps going"
    );
    h.engine().close_spider("stopped");
    assert!(h.run(5.0));
}

#[test]
fn per_domain_concurrency_and_delays_on_the_manual_clock() {
    let mut all = urls(4, "a.test");
    all.extend(urls(4, "b.test"));
    let h = harness(
        FnSpider::urls(all),
        &[
            ("CONCURRENT_REQUESTS_PER_DOMAIN", json!(2)),
            (
                "DOWNLOAD_SLOTS",
                json!({"b.test": {"delay": 2.0, "concurrency": 1}}),
            ),
        ],
        |_| {},
    );
    h.script.default.borrow_mut().delay = 1.0;
    assert!(h.run(60.0));
    let started = h.script.started.borrow().clone();
    let times = |host: &str| -> Vec<f64> {
        started
            .iter()
            .filter(|(_, u)| u.contains(host))
            .map(|(t, _)| (t * 100.0).round() / 100.0)
            .collect()
    };
    // a.test: 2 at a time, no delay.
    let a = times("a.test");
    assert_eq!(a.iter().filter(|t| **t == a[0]).count(), 2, "{a:?}");
    // b.test: one at a time, 2 s apart.
    let b = times("b.test");
    assert_eq!(b.len(), 4);
    for w in b.windows(2) {
        assert!(w[1] - w[0] >= 2.0 - 1e-9, "{b:?}");
    }
}

#[test]
fn download_delay_starts_one_request_per_pass() {
    let h = harness(
        FnSpider::urls(urls(5, "a.test")),
        &[("DOWNLOAD_DELAY", json!(3.0))],
        |_| {},
    );
    h.script.default.borrow_mut().delay = 0.1;
    assert!(h.run(60.0));
    let t: Vec<f64> = h.script.started.borrow().iter().map(|(t, _)| *t).collect();
    assert_eq!(t.len(), 5);
    for w in t.windows(2) {
        assert!((w[1] - w[0] - 3.0).abs() < 0.06, "{t:?}");
    }
}

#[test]
fn engine_monitor_reports_on_its_interval() {
    let h = harness(
        FnSpider::urls(urls(3, "a.test")),
        &[("ENGINE_MONITOR_INTERVAL", json!(3.0))],
        |_| {},
    );
    h.script.default.borrow_mut().delay = 10.0;
    h.clock.pump(&[0.5, 0.5]);
    let (_, logs) = capture_logs(|| h.clock.pump(&[2.0, 3.0]));
    let lines: Vec<_> = logs
        .iter()
        .filter(|(_, m)| m.starts_with("[engine] inprogress="))
        .collect();
    assert_eq!(lines.len(), 2, "{logs:?}");
    assert!(
        lines[0].1.contains("downloader.active=3/16"),
        "{}",
        lines[0].1
    );
}

#[test]
fn close_spider_extension_limits() {
    let spider = FnSpider::new(
        || {
            Box::new(
                (0..50)
                    .map(|i| Output::Request(Request::get(&format!("http://a.test/{i}")).unwrap())),
            )
        },
        |_, _| Ok(vec![Output::Item(Item::new().with("x", 1))]),
    );
    let h = harness(spider, &[("CLOSESPIDER_ITEMCOUNT", json!(10))], |_| {});
    assert!(h.run(60.0));
    assert_eq!(
        h.crawler.stats.get_value("finish_reason"),
        Some(json!("closespider_itemcount"))
    );
    // Requests go 8 at a time (CONCURRENT_REQUESTS_PER_DOMAIN), 0.1 s each on the manual
    // clock. The 10th item comes with the second wave, when the third is already
    // downloading; the close lets requests in progress finish and their items are
    // scraped: three waves, 24 items, on every run.
    assert_eq!(h.stat("item_scraped_count"), 24);
    assert_eq!(h.stat("downloader/request_count"), 24);

    let h = harness(
        FnSpider::urls(urls(50, "a.test")),
        &[("CLOSESPIDER_TIMEOUT", json!(2.0))],
        |_| {},
    );
    h.script.default.borrow_mut().delay = 1.5;
    assert!(h.run(60.0));
    assert_eq!(
        h.crawler.stats.get_value("finish_reason"),
        Some(json!("closespider_timeout"))
    );
}

#[test]
fn http_errors_are_filtered_before_callbacks() {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let s = seen.clone();
    let spider = FnSpider::new(
        || {
            Box::new(
                ["http://a.test/ok", "http://a.test/missing"]
                    .into_iter()
                    .map(|u| Output::Request(Request::get(u).unwrap())),
            )
        },
        move |_, resp| {
            s.borrow_mut().push(resp.status());
            Ok(Vec::new())
        },
    );
    let h = harness(spider, &[], |_| {});
    h.script.set(
        "http://a.test/missing",
        Answer {
            status: 404,
            ..Answer::default()
        },
    );
    assert!(h.run(5.0));
    assert_eq!(*seen.borrow(), [200]);
    assert_eq!(h.stat("httperror/response_ignored_count"), 1);
    assert_eq!(h.stat("httperror/response_ignored_status_count/404"), 1);
}

#[test]
fn offsite_requests_are_dropped() {
    let mut spider = FnSpider::new(
        || {
            Box::new(std::iter::once(Output::Request(
                Request::get("http://site.test/").unwrap(),
            )))
        },
        |_, resp| {
            Ok(vec![
                Output::Request(resp.follow("http://other.test/x").unwrap()),
                Output::Request(resp.follow("http://sub.site.test/y").unwrap()),
            ])
        },
    );
    spider.allowed = vec!["site.test".into()];
    let h = harness(spider, &[], |_| {});
    assert!(h.run(5.0));
    assert_eq!(h.stat("offsite/filtered"), 1);
    assert_eq!(h.stat("offsite/domains"), 1);
    assert_eq!(h.stat("response_received_count"), 2);
}

#[test]
fn unknown_project_settings_are_warned_about_with_the_closest_name() {
    // A typo in the project's settings was silent (only `-s` ones were warned about).
    let ((), logs) = capture_logs(|| {
        let h = harness(
            FnSpider::urls(urls(1, "a.test")),
            &[
                ("CONCURRENT_REQUEST", json!(4)),
                ("MY_OWN_PIPELINE_DSN", json!("x")),
            ],
            |_| {},
        );
        assert!(h.run(10.0));
    });
    let warnings: Vec<&String> = logs
        .iter()
        .filter(|(level, m)| *level == log::Level::Warn && m.starts_with("Unknown setting"))
        .map(|(_, m)| m)
        .collect();
    assert!(
        warnings.iter().any(|m| m.contains(
            "CONCURRENT_REQUEST (in the project's settings); did you mean CONCURRENT_REQUESTS?"
        )),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|m| m.contains("MY_OWN_PIPELINE_DSN")),
        "{warnings:?}"
    );
    // Known settings (the harness sets several) are not.
    assert_eq!(warnings.len(), 2, "{warnings:?}");
}
