//! Scrapy 2.19's engine and scraper semantics, each with a test that fails without the
//! behaviour: CloseSpider from callbacks, errbacks, `start()` and `spider_opened`;
//! errors in `start()` (`start_error`); `spider_exceptions/count`; lazily processed
//! callback output under `CONCURRENT_ITEMS`; the engine's own errbacks.

mod util;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use serde_json::json;
use trawl::crawl::downloader::middleware::{DownloaderMiddleware, ResponseOutcome};
use trawl::crawl::errors::CloseSpider;
use trawl::crawl::pipeline::{ItemOutcome, ItemPipeline};
use trawl::crawl::scheduler::{Enqueued, NextRequest, Scheduler, SchedulerContext};
use trawl::crawl::signals::{Signal, SignalArgs};
use trawl::crawl::{CallbackResult, Item, Output, Outputs, Request, Response, Spider, outputs};
use trawl::defer::Failure;
use trawl::task::defer_later;
use util::capture_logs;
use util::crawl::{FnSpider, harness};

/// Advances in small steps (ManualClock runs a due call with the clock already at the
/// target, so one big step would push downloads scheduled meanwhile past it).
fn step(h: &util::crawl::Harness, secs: f64) {
    for _ in 0..(secs / 0.05).round() as usize {
        h.clock.advance(0.05);
    }
}

fn get(url: &str) -> Output {
    Output::Request(Request::get(url).unwrap())
}

type LazyCallback = Box<dyn FnMut(&str, &Response) -> Result<Outputs, Failure>>;

/// A spider whose `start()` and callbacks are lazy iterators built by closures.
struct LazySpider {
    start: Box<dyn FnMut() -> Outputs>,
    callback: LazyCallback,
    errback_result: Option<Failure>,
}

impl LazySpider {
    fn new(
        start: impl FnMut() -> Outputs + 'static,
        callback: impl FnMut(&str, &Response) -> Result<Outputs, Failure> + 'static,
    ) -> Self {
        Self {
            start: Box::new(start),
            callback: Box::new(callback),
            errback_result: None,
        }
    }
}

impl Spider for LazySpider {
    fn name(&self) -> &str {
        "lazy"
    }
    fn start(&mut self) -> Outputs {
        (self.start)()
    }
    fn callback(&mut self, name: &str, response: &Response) -> CallbackResult {
        (self.callback)(name, response)?.collect()
    }
    fn callback_outputs(&mut self, name: &str, response: &Response) -> Result<Outputs, Failure> {
        (self.callback)(name, response)
    }
    fn errback(&mut self, _name: &str, failure: &Failure, _request: &Request) -> CallbackResult {
        Err(self
            .errback_result
            .clone()
            .unwrap_or_else(|| failure.clone()))
    }
}

#[test]
fn close_spider_raised_by_a_callback_closes_with_its_reason() {
    let spider = FnSpider::new(
        || Box::new((0..5).map(|i| get(&format!("http://a.test/{i}")))),
        |_, resp| {
            if resp.url().path() == "/2" {
                return Err(Failure::new(CloseSpider::new("enough_pages")));
            }
            Ok(Vec::new())
        },
    );
    let h = harness(spider, &[("CONCURRENT_REQUESTS", json!(1))], |_| {});
    assert!(h.run(20.0));
    assert_eq!(
        h.crawler.stats.get_value("finish_reason"),
        Some(json!("enough_pages"))
    );
    assert_eq!(h.stat("spider_exceptions/count"), 0, "not a spider error");
    assert!(h.stat("response_received_count") < 5);
}

#[test]
fn close_spider_with_an_empty_reason_means_cancelled() {
    let spider = FnSpider::new(
        || Box::new(std::iter::once(get("http://a.test/"))),
        |_, _| Err(Failure::new(CloseSpider::new(""))),
    );
    let h = harness(spider, &[], |_| {});
    assert!(h.run(20.0));
    assert_eq!(
        h.crawler.stats.get_value("finish_reason"),
        Some(json!("cancelled"))
    );
}

#[test]
fn close_spider_raised_by_an_errback_closes_with_its_reason() {
    let mut spider = LazySpider::new(
        || {
            outputs([Output::Request(
                Request::get("http://a.test/404")
                    .unwrap()
                    .with_errback("fail"),
            )])
        },
        |_, _| Ok(outputs(Vec::new())),
    );
    spider.errback_result = Some(Failure::new(CloseSpider::new("errback_said_so")));
    let h = harness(spider, &[], |_| {});
    h.script.set(
        "http://a.test/404",
        util::crawl::Answer {
            status: 404,
            ..util::crawl::Answer::default()
        },
    );
    assert!(h.run(20.0));
    assert_eq!(
        h.crawler.stats.get_value("finish_reason"),
        Some(json!("errback_said_so"))
    );
}

#[test]
fn close_spider_from_a_spider_opened_handler_closes_after_opening() {
    let spider = FnSpider::new(
        || Box::new((0..100).map(|i| get(&format!("http://a.test/{i}")))),
        |_, _| Ok(Vec::new()),
    );
    let h = harness(spider, &[("EXTENSIONS", json!({"test.Closer": 10}))], |r| {
        r.register_extension("test.Closer", |ctx| {
            ctx.signals.connect(Signal::SpiderOpened, |_| {
                Err(Failure::new(CloseSpider::new("opened_and_closed")))
            });
            Ok(Rc::new(()) as Rc<dyn std::any::Any>)
        });
    });
    assert!(h.run(20.0));
    assert_eq!(
        h.crawler.stats.get_value("finish_reason"),
        Some(json!("opened_and_closed"))
    );
    assert!(h.stat("response_received_count") < 100);
}

#[test]
fn an_error_in_start_is_logged_signalled_counted_and_sets_the_finish_reason() {
    let spider = LazySpider::new(
        || {
            Box::new(
                [
                    Ok(get("http://a.test/1")),
                    Ok(get("http://a.test/2")),
                    Err(Failure::msg("start() broke")),
                    Ok(get("http://a.test/never")),
                ]
                .into_iter(),
            )
        },
        |_, _| Ok(outputs(Vec::new())),
    );
    let errors = Rc::new(Cell::new(0));
    let e = errors.clone();
    let ((), logs) = capture_logs(|| {
        let h = harness(
            spider,
            &[("EXTENSIONS", json!({"test.Errors": 10}))],
            move |r| {
                let e = e.clone();
                r.register_extension("test.Errors", move |ctx| {
                    let e = e.clone();
                    ctx.signals.connect(Signal::SpiderError, move |args| {
                        if let SignalArgs::SpiderError {
                            request: None,
                            response: None,
                            failure,
                        } = args
                        {
                            assert_eq!(failure.to_string(), "start() broke");
                            e.set(e.get() + 1);
                        }
                        Ok(())
                    });
                    Ok(Rc::new(()) as Rc<dyn std::any::Any>)
                });
            },
        );
        assert!(h.run(20.0));
        assert_eq!(
            h.crawler.stats.get_value("finish_reason"),
            Some(json!("start_error"))
        );
        assert_eq!(h.stat("spider_exceptions/count"), 1);
        assert_eq!(h.stat("spider_exceptions/Message"), 1);
        assert_eq!(
            h.script.started_urls(),
            ["http://a.test/1", "http://a.test/2"],
            "outputs before the error are crawled, none after"
        );
    });
    assert_eq!(errors.get(), 1, "spider_error sent once");
    assert!(logs.iter().any(|(l, m)| *l == log::Level::Error
        && m.contains("Error while reading start items and requests")
        && m.contains("start() broke")));
}

#[test]
fn a_panic_in_start_counts_as_a_start_error() {
    let spider = LazySpider::new(
        || {
            Box::new((0..3).map(|i| {
                if i == 1 {
                    panic!("start() panicked");
                }
                Ok(get(&format!("http://a.test/{i}")))
            }))
        },
        |_, _| Ok(outputs(Vec::new())),
    );
    let ((), _) = capture_logs(|| {
        let h = harness(spider, &[], |_| {});
        assert!(h.run(20.0));
        assert_eq!(
            h.crawler.stats.get_value("finish_reason"),
            Some(json!("start_error"))
        );
        assert_eq!(h.stat("spider_exceptions/PanicError"), 1);
    });
}

#[test]
fn close_spider_from_start_closes_with_its_reason() {
    let spider = LazySpider::new(
        || {
            Box::new(
                [
                    Ok(get("http://a.test/1")),
                    Err(Failure::new(CloseSpider::new("start_said_stop"))),
                ]
                .into_iter(),
            )
        },
        |_, _| Ok(outputs(Vec::new())),
    );
    let h = harness(spider, &[], |_| {});
    assert!(h.run(20.0));
    assert_eq!(
        h.crawler.stats.get_value("finish_reason"),
        Some(json!("start_said_stop"))
    );
    assert_eq!(h.stat("spider_exceptions/count"), 0);
}

#[test]
fn spider_exceptions_count_sums_every_kind() {
    let spider = FnSpider::new(
        || Box::new((0..4).map(|i| get(&format!("http://a.test/{i}")))),
        |_, resp| match resp.url().path() {
            "/0" => panic!("boom"),
            "/1" | "/2" => Err(Failure::msg("value error")),
            _ => Ok(Vec::new()),
        },
    );
    let ((), _) = capture_logs(|| {
        let h = harness(spider, &[], |_| {});
        assert!(h.run(20.0));
        assert_eq!(h.stat("spider_exceptions/count"), 3);
        assert_eq!(h.stat("spider_exceptions/PanicError"), 1);
        assert_eq!(h.stat("spider_exceptions/Message"), 2);
    });
}

/// Counts how many outputs the callback has produced so far.
fn counting_requests(produced: &Rc<Cell<usize>>, n: usize) -> Outputs {
    let p = produced.clone();
    Box::new((0..n).map(move |i| {
        p.set(p.get() + 1);
        Ok(get(&format!("http://b.test/{i}")))
    }))
}

#[test]
fn callback_output_is_read_ahead_as_far_as_scrapy_reads_it() {
    // A callback yielding 100,000 requests: when the first one reaches the scheduler,
    // as many have been produced as Scrapy 2.19's scraper had read from the same
    // output (tests/data/scraper/output_runs.json: 2 × CONCURRENT_ITEMS + 1, the
    // queue its asyncio path fills and the one its filler holds) — never the whole
    // output.
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/scraper/output_runs.json"
    ))
    .expect("tests/data/scraper/output_runs.json");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("json");
    let cases = doc["cases"].as_array().expect("cases");
    assert!(cases.len() >= 3);
    for case in cases {
        let items = case["CONCURRENT_ITEMS"].as_u64().expect("setting");
        let expected = case["produced_at_first_schedule"]
            .as_u64()
            .expect("recorded") as usize;
        let produced = Rc::new(Cell::new(0usize));
        let at_first_schedule = Rc::new(Cell::new(None::<usize>));
        let p = produced.clone();
        let spider = LazySpider::new(
            || outputs([get("http://a.test/")]),
            move |_, resp| {
                if resp.url().host_str() == Some("a.test") {
                    Ok(counting_requests(&p, 100_000))
                } else {
                    Ok(outputs(Vec::new()))
                }
            },
        );
        let (p, first) = (produced.clone(), at_first_schedule.clone());
        let h = harness(
            spider,
            &[
                ("EXTENSIONS", json!({"test.Watch": 10})),
                ("CONCURRENT_ITEMS", json!(items)),
            ],
            move |r| {
                let (p, first) = (p.clone(), first.clone());
                r.register_extension("test.Watch", move |ctx| {
                    let (p, first) = (p.clone(), first.clone());
                    ctx.signals.connect(Signal::RequestScheduled, move |args| {
                        if let SignalArgs::Request { request } = args
                            && request.url().host_str() == Some("b.test")
                            && first.get().is_none()
                        {
                            first.set(Some(p.get()));
                        }
                        Ok(())
                    });
                    Ok(Rc::new(()) as Rc<dyn std::any::Any>)
                });
            },
        );
        step(&h, 1.0);
        assert_eq!(
            at_first_schedule.get(),
            Some(expected),
            "CONCURRENT_ITEMS = {items}"
        );
        drop(h);
    }
}

/// A pipeline that holds each item for a second and records how many are in flight.
struct HoldingPipeline {
    clock: trawl::reactor::Clock,
    in_flight: Rc<Cell<usize>>,
    max_in_flight: Rc<Cell<usize>>,
}

impl ItemPipeline for HoldingPipeline {
    fn process_item(&self, item: Item, _r: Option<&Response>) -> Result<ItemOutcome, Failure> {
        self.in_flight.set(self.in_flight.get() + 1);
        self.max_in_flight
            .set(self.max_in_flight.get().max(self.in_flight.get()));
        let n = self.in_flight.clone();
        Ok(ItemOutcome::Wait(defer_later(
            &self.clock,
            1.0,
            move || {
                n.set(n.get() - 1);
                Ok(item)
            },
        )))
    }
}

#[test]
fn items_are_pulled_at_most_concurrent_items_at_a_time() {
    let produced = Rc::new(Cell::new(0usize));
    let p = produced.clone();
    let spider = LazySpider::new(
        || outputs([get("http://a.test/")]),
        move |_, _| {
            let p = p.clone();
            Ok(Box::new((0..10).map(move |i| {
                p.set(p.get() + 1);
                Ok(Output::Item(Item::new().with("i", i)))
            })))
        },
    );
    let (in_flight, max_in_flight) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
    let (f, m) = (in_flight.clone(), max_in_flight.clone());
    let h = harness(
        spider,
        &[
            ("CONCURRENT_ITEMS", json!(3)),
            ("ITEM_PIPELINES", json!({"test.Hold": 10})),
        ],
        move |r| {
            let (f, m) = (f.clone(), m.clone());
            r.register_pipeline("test.Hold", move |ctx| {
                Ok(Rc::new(HoldingPipeline {
                    clock: ctx.clock().clone(),
                    in_flight: f.clone(),
                    max_in_flight: m.clone(),
                }) as Rc<dyn ItemPipeline>)
            });
        },
    );
    step(&h, 0.5); // the response arrived; three items are in the pipeline
    assert_eq!(in_flight.get(), 3);
    assert_eq!(
        produced.get(),
        3,
        "the fourth item is not pulled before there is room"
    );
    assert!(h.run(30.0));
    assert_eq!(max_in_flight.get(), 3);
    assert_eq!(h.stat("item_scraped_count"), 10);
}

#[test]
fn an_error_midway_through_a_callback_keeps_the_outputs_before_it() {
    let spider = LazySpider::new(
        || outputs([get("http://a.test/")]),
        |_, resp| {
            if resp.url().host_str() != Some("a.test") {
                return Ok(outputs(Vec::new()));
            }
            Ok(Box::new(
                [
                    Ok(get("http://b.test/1")),
                    Ok(Output::Item(Item::new().with("n", 1))),
                    Err(Failure::msg("broke midway")),
                    Ok(get("http://b.test/never")),
                ]
                .into_iter(),
            ))
        },
    );
    let ((), _) = capture_logs(|| {
        let h = harness(spider, &[], |_| {});
        assert!(h.run(20.0));
        assert_eq!(h.stat("item_scraped_count"), 1);
        assert_eq!(h.stat("spider_exceptions/Message"), 1);
        let started = h.script.started_urls();
        assert!(started.contains(&"http://b.test/1".to_owned()));
        assert!(!started.contains(&"http://b.test/never".to_owned()));
    });
}

/// A FIFO scheduler whose hooks panic for chosen URLs, to drive the engine's errbacks.
struct BrittleScheduler {
    queue: std::collections::VecDeque<Request>,
}

impl Scheduler for BrittleScheduler {
    fn has_pending_requests(&self) -> bool {
        !self.queue.is_empty()
    }
    fn enqueue_request(&mut self, request: Request) -> Enqueued {
        assert!(
            !request.url().path().contains("enqueue-panics"),
            "the scheduler refused to enqueue"
        );
        self.queue.push_back(request);
        Enqueued::Accepted
    }
    fn next_request(&mut self) -> NextRequest {
        self.queue
            .pop_front()
            .map_or(NextRequest::Empty, NextRequest::Ready)
    }
    fn len(&self) -> usize {
        self.queue.len()
    }
    fn tracks_requests(&self) -> bool {
        true
    }
    fn request_finished(&mut self, request: &Request) {
        assert!(
            !request.url().path().contains("finish-panics"),
            "the scheduler's request_finished failed"
        );
    }
}

/// Turns the response of `/bounce` into a new request, which goes back through the
/// engine's `crawl` from its output handler.
struct Bounce;

impl DownloaderMiddleware for Bounce {
    fn process_response(
        &self,
        request: &Request,
        response: Response,
    ) -> Result<ResponseOutcome, Failure> {
        if request.url().path() == "/bounce" {
            return Ok(ResponseOutcome::Request(
                Request::get("http://a.test/enqueue-panics").unwrap(),
            ));
        }
        Ok(ResponseOutcome::Response(response))
    }
}

#[test]
fn the_engine_errbacks_log_a_failing_output_handler_and_a_failing_removal() {
    let spider = FnSpider::new(
        || {
            Box::new(
                [
                    "http://a.test/bounce",
                    "http://a.test/finish-panics",
                    "http://a.test/ok",
                ]
                .into_iter()
                .map(get),
            )
        },
        |_, _| Ok(Vec::new()),
    );
    let ((), logs) = capture_logs(|| {
        let h = harness(
            spider,
            &[
                ("SCHEDULER", json!("test.Brittle")),
                ("DOWNLOADER_MIDDLEWARES", json!({"test.Bounce": 10})),
            ],
            |r| {
                r.register_scheduler("test.Brittle", |_, _ctx: SchedulerContext| {
                    Ok(Box::new(BrittleScheduler {
                        queue: std::collections::VecDeque::new(),
                    }) as Box<dyn Scheduler>)
                });
                r.register_downloader_middleware("test.Bounce", |_| {
                    Ok(Rc::new(Bounce) as Rc<dyn DownloaderMiddleware>)
                });
            },
        );
        assert!(h.run(20.0), "the crawl still finishes");
        assert_eq!(
            h.crawler.stats.get_value("finish_reason"),
            Some(json!("finished"))
        );
        // /bounce became a request (never enqueued); the other two were received.
        assert_eq!(h.stat("response_received_count"), 2);
    });
    let logged = |needle: &str, cause: &str| {
        logs.iter()
            .any(|(_, m)| m.contains(needle) && m.contains(cause))
    };
    assert!(
        logged(
            "Error while handling downloader output",
            "the scheduler refused to enqueue"
        ),
        "{logs:#?}"
    );
    assert!(
        logged(
            "Error while removing request from slot",
            "the scheduler's request_finished failed"
        ),
        "{logs:#?}"
    );
}

#[test]
fn closing_with_nothing_in_progress_never_pulls_start() {
    // The start iterator counts its pulls: closing at once must not touch it, then or
    // later.
    let pulled = Rc::new(RefCell::new(0u32));
    let p = pulled.clone();
    let spider = FnSpider::new(
        move || {
            let p = p.clone();
            Box::new(std::iter::repeat_with(move || {
                *p.borrow_mut() += 1;
                get("http://a.test/")
            }))
        },
        |_, _| Ok(Vec::new()),
    );
    let h = harness(spider, &[], |_| {});
    let engine = h.engine();
    let before = *pulled.borrow();
    let closed = engine.close_spider("right_away");
    assert!(closed.has_result(), "nothing was in progress");
    assert!(h.done.has_result());
    h.clock.advance(10.0);
    assert_eq!(
        *pulled.borrow(),
        before,
        "start() is not pulled after closing"
    );
    assert_eq!(
        h.crawler.stats.get_value("finish_reason"),
        Some(json!("right_away"))
    );
}

#[test]
fn every_failure_schedules_the_next_pass_without_waiting_for_the_heartbeat() {
    // 20 downloads that fail after 0.1 s each, one at a time: the crawl ends in about
    // 2 s. Were a failure not to wake the engine, each would wait for the 5 s heartbeat.
    let urls: Vec<String> = (0..20).map(|i| format!("http://h{i}.invalid/")).collect();
    let ((), _) = capture_logs(|| {
        let h = harness(
            FnSpider::urls(urls),
            &[
                ("CONCURRENT_REQUESTS", json!(1)),
                ("RETRY_ENABLED", json!(false)),
            ],
            |_| {},
        );
        *h.script.default.borrow_mut() = util::crawl::Answer {
            delay: 0.1,
            fail: Some("DNS lookup failed".into()),
            ..util::crawl::Answer::default()
        };
        assert!(
            h.run(4.0),
            "finished before the first heartbeat would have helped"
        );
        assert_eq!(h.stat("downloader/exception_count"), 20);
    });
}
