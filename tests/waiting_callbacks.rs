//! Callbacks, errbacks and `start()` that wait on a Deferred (`Output::Later`: Scrapy's
//! callbacks returning Deferreds, `async def` callbacks and `start()`), on the manual
//! clock: other responses go on meanwhile, the waiting response stays in the scraper's
//! memory gate, outputs keep their order and their laziness, failures and cancellations
//! take the synchronous error's path, the close cancels what still waits, and
//! `engine.download` fetches inline through the downloader middlewares only.

mod util;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use serde_json::json;
use trawl::crawl::downloader::middleware::DownloaderMiddleware;
use trawl::crawl::errors::CloseSpider;
use trawl::crawl::pipeline::{ItemOutcome, ItemPipeline};
use trawl::crawl::signals::{Signal, SignalArgs};
use trawl::crawl::{
    CallbackResult, CrawlContext, Item, Output, Outputs, Request, Response, Spider, outputs,
};
use trawl::defer::{Deferred, Failure};
use trawl::reactor::Clock;
use trawl::task::defer_later;
use util::capture_logs;
use util::crawl::{Answer, Harness, harness};

type Ctx = Rc<CrawlContext>;
type StartFn = Box<dyn FnMut(&Ctx) -> Outputs>;
type ParseFn = Box<dyn FnMut(&Ctx, &Response) -> Result<Outputs, Failure>>;

/// A spider whose `start()` and callbacks are closures given the crawl's context.
struct CtxSpider {
    ctx: Option<Ctx>,
    start: StartFn,
    parse: ParseFn,
}

impl CtxSpider {
    fn new(
        start: impl FnMut(&Ctx) -> Outputs + 'static,
        parse: impl FnMut(&Ctx, &Response) -> Result<Outputs, Failure> + 'static,
    ) -> Self {
        Self {
            ctx: None,
            start: Box::new(start),
            parse: Box::new(parse),
        }
    }
}

impl Spider for CtxSpider {
    fn name(&self) -> &str {
        "waiting"
    }
    fn set_context(&mut self, ctx: &Ctx) {
        self.ctx = Some(ctx.clone());
    }
    fn start(&mut self) -> Outputs {
        let ctx = self.ctx.clone().expect("context before start");
        (self.start)(&ctx)
    }
    fn callback(&mut self, name: &str, response: &Response) -> CallbackResult {
        self.callback_outputs(name, response)?.collect()
    }
    fn callback_outputs(&mut self, _name: &str, response: &Response) -> Result<Outputs, Failure> {
        let ctx = self.ctx.clone().expect("context");
        (self.parse)(&ctx, response)
    }
}

fn get(url: &str) -> Output {
    Output::Request(Request::get(url).expect("url"))
}

fn item(tag: &str) -> Output {
    Output::Item(Item::new().with("tag", tag))
}

/// Outputs `outs` after `secs` on the crawl's clock.
fn after(clock: &Clock, secs: f64, outs: Vec<Output>) -> Output {
    Output::later(defer_later(clock, secs, move || Ok(outs)))
}

/// Records each scraped item's tag and the time it was scraped.
fn record_items(h: &Harness) -> Rc<RefCell<Vec<(String, f64)>>> {
    let seen: Rc<RefCell<Vec<(String, f64)>>> = Rc::default();
    let (s, clock) = (seen.clone(), h.crawler.clock().clone());
    h.crawler.signals.connect(Signal::ItemScraped, move |args| {
        if let SignalArgs::Item { item, .. } = args {
            let tag = item.get_str("tag").unwrap_or("?").to_owned();
            s.borrow_mut().push((tag, clock.seconds()));
        }
        Ok(())
    });
    seen
}

fn tags(seen: &Rc<RefCell<Vec<(String, f64)>>>) -> Vec<String> {
    seen.borrow().iter().map(|(t, _)| t.clone()).collect()
}

fn path(response: &Response) -> String {
    response.url().path().to_owned()
}

#[test]
fn a_callback_waiting_three_seconds_does_not_hold_up_other_responses() {
    let spider = CtxSpider::new(
        |_| {
            outputs(vec![
                get("http://a.test/slow"),
                get("http://a.test/1"),
                get("http://a.test/2"),
                get("http://a.test/3"),
            ])
        },
        |ctx, resp| {
            let p = path(resp);
            Ok(outputs(if p == "/slow" {
                vec![after(ctx.clock(), 3.0, vec![item("slow")])]
            } else {
                vec![item(&p)]
            }))
        },
    );
    let h = harness(spider, &[], |_| {});
    let seen = record_items(&h);
    assert!(h.run(20.0));
    assert_eq!(tags(&seen), ["/1", "/2", "/3", "slow"]);
    let times: Vec<f64> = seen.borrow().iter().map(|(_, t)| *t).collect();
    assert!(
        times[2] < 1.0,
        "the others are done before the wait: {times:?}"
    );
    assert!(
        times[3] >= 3.0,
        "the waiting item comes after 3 s: {times:?}"
    );
    assert_eq!(h.stat("item_scraped_count"), 4);
    assert_eq!(
        h.crawler.stats.get_value("finish_reason"),
        Some(json!("finished"))
    );
}

#[test]
fn a_waiting_response_counts_in_the_scraper_memory_gate() {
    // The gate opens only while the active size is at most 1,500 bytes: a waiting
    // 2,000-byte response keeps it shut, so nothing else is downloaded meanwhile.
    let spider = CtxSpider::new(
        |_| outputs((0..5).map(|i| get(&format!("http://a.test/{i}")))),
        |ctx, resp| {
            Ok(outputs(if path(resp) == "/0" {
                vec![after(ctx.clock(), 3.0, vec![item("late")])]
            } else {
                vec![item("now")]
            }))
        },
    );
    let h = harness(
        spider,
        &[
            ("SCRAPER_SLOT_MAX_ACTIVE_SIZE", json!(1500)),
            ("CONCURRENT_REQUESTS", json!(1)),
        ],
        |_| {},
    );
    h.script.set(
        "http://a.test/0",
        Answer {
            body: vec![b'x'; 2000],
            ..Answer::default()
        },
    );
    for _ in 0..20 {
        h.clock.advance(0.05);
    }
    let slot = h.engine().scraper().slot().expect("open");
    assert_eq!(slot.waiting(), 1);
    assert_eq!(slot.active(), 1, "the waiting response is active");
    assert_eq!(slot.active_size(), 2000);
    assert!(h.engine().needs_backout());
    assert_eq!(
        h.script.started_urls(),
        ["http://a.test/0"],
        "no download starts while the waiting response holds the gate"
    );
    assert!(h.run(20.0));
    let started = h.script.started.borrow().clone();
    assert_eq!(started.len(), 5);
    assert!(started[1].0 >= 3.0, "the next download waited: {started:?}");
    assert_eq!(h.stat("item_scraped_count"), 5);
}

#[test]
fn outputs_before_and_after_a_wait_keep_their_order() {
    let order: Rc<RefCell<Vec<String>>> = Rc::default();
    let spider = CtxSpider::new(
        |_| outputs(vec![get("http://a.test/page")]),
        |ctx, resp| {
            if path(resp) != "/page" {
                return Ok(outputs(Vec::new()));
            }
            let clock = ctx.clock().clone();
            let inner = after(&clock, 1.0, vec![item("b1"), get("http://a.test/r2")]);
            Ok(outputs(vec![
                item("a1"),
                get("http://a.test/r1"),
                after(&clock, 2.0, vec![item("b0"), inner, item("b2")]),
                item("c1"),
                get("http://a.test/r3"),
            ]))
        },
    );
    let h = harness(spider, &[], |_| {});
    let o = order.clone();
    h.crawler
        .signals
        .connect(Signal::RequestScheduled, move |args| {
            if let SignalArgs::Request { request } = args {
                o.borrow_mut().push(request.url().path().to_owned());
            }
            Ok(())
        });
    let o = order.clone();
    h.crawler.signals.connect(Signal::ItemScraped, move |args| {
        if let SignalArgs::Item { item, .. } = args {
            o.borrow_mut()
                .push(format!("item {}", item.get_str("tag").unwrap_or("?")));
        }
        Ok(())
    });
    assert!(h.run(20.0));
    let got: Vec<String> = order
        .borrow()
        .iter()
        .filter(|e| e.starts_with("item") || e.starts_with("/r"))
        .cloned()
        .collect();
    assert_eq!(
        got,
        [
            "item a1", "/r1", "item b0", "item b1", "/r2", "item b2", "item c1", "/r3"
        ]
    );
}

#[test]
fn outputs_after_a_wait_are_still_pulled_lazily() {
    let produced = Rc::new(Cell::new(0usize));
    let p = produced.clone();
    let spider = CtxSpider::new(
        |_| outputs(vec![get("http://a.test/")]),
        move |ctx, _| {
            let p = p.clone();
            let d = defer_later(ctx.clock(), 1.0, move || {
                let lazy: Outputs = Box::new((0..50).map(move |i| {
                    p.set(p.get() + 1);
                    Ok(Output::Item(Item::new().with("i", i)))
                }));
                Ok(lazy)
            });
            Ok(outputs(vec![Output::later_lazy(d)]))
        },
    );
    let h = harness(
        spider,
        &[
            ("CONCURRENT_ITEMS", json!(2)),
            ("ITEM_PIPELINES", json!({"test.Slow": 10})),
        ],
        |r| {
            r.register_pipeline("test.Slow", |ctx| {
                Ok(Rc::new(SlowPipeline(ctx.clock().clone())) as Rc<dyn ItemPipeline>)
            });
        },
    );
    for _ in 0..30 {
        h.clock.advance(0.05); // 1.5 s: the wait is over, items are in the pipeline
    }
    assert_eq!(
        produced.get(),
        2,
        "no more than CONCURRENT_ITEMS outputs are pulled after the wait"
    );
    assert!(h.run(60.0));
    assert_eq!(h.stat("item_scraped_count"), 50);
}

/// Holds each item for a second.
struct SlowPipeline(Clock);

impl ItemPipeline for SlowPipeline {
    fn process_item(
        &self,
        item: Item,
        _response: Option<&Response>,
    ) -> Result<ItemOutcome, Failure> {
        Ok(ItemOutcome::Wait(defer_later(&self.0, 1.0, move || {
            Ok(item)
        })))
    }
}

#[test]
fn a_failing_wait_is_a_spider_error_and_abandons_the_rest() {
    let errors: Rc<RefCell<Vec<String>>> = Rc::default();
    let spider = CtxSpider::new(
        |_| outputs(vec![get("http://a.test/")]),
        |ctx, _| {
            let d: Deferred<Vec<Output>> = defer_later(ctx.clock(), 1.0, || {
                Err::<Vec<Output>, _>(Failure::msg("the API said no"))
            });
            Ok(outputs(vec![
                item("before"),
                Output::later(d),
                item("after"),
            ]))
        },
    );
    let h = harness(spider, &[], |_| {});
    let e = errors.clone();
    h.crawler.signals.connect(Signal::SpiderError, move |args| {
        if let SignalArgs::SpiderError {
            failure, request, ..
        } = args
        {
            e.borrow_mut().push(format!(
                "{failure} @ {}",
                request.map(|r| r.url_str().to_owned()).unwrap_or_default()
            ));
        }
        Ok(())
    });
    let seen = record_items(&h);
    let (finished, logs) = capture_logs(|| h.run(20.0));
    assert!(finished);
    assert_eq!(tags(&seen), ["before"]);
    assert_eq!(*errors.borrow(), ["the API said no @ http://a.test/"]);
    assert_eq!(h.stat("spider_exceptions/count"), 1);
    assert!(
        logs.iter().any(|(l, m)| *l == log::Level::Error
            && m.starts_with("Spider error processing <GET http://a.test/>")),
        "{logs:?}"
    );
}

#[test]
fn a_wait_cancelled_by_its_own_code_is_a_spider_error() {
    let spider = CtxSpider::new(
        |_| outputs(vec![get("http://a.test/")]),
        |ctx, _| {
            let d: Deferred<Vec<Output>> = defer_later(ctx.clock(), 5.0, || Ok(Vec::new()));
            let c = d.clone();
            // The callback's own code gives up after a second.
            ctx.clock().call_later(1.0, move || c.cancel());
            Ok(outputs(vec![Output::later(d)]))
        },
    );
    let h = harness(spider, &[], |_| {});
    assert!(h.run(20.0));
    assert_eq!(h.stat("spider_exceptions/count"), 1);
    assert_eq!(h.stat("spider_exceptions/CancelledError"), 1);
}

#[test]
fn closing_the_spider_cancels_what_callbacks_wait_on_and_logs_it_once() {
    let cancelled = Rc::new(Cell::new(0));
    let c = cancelled.clone();
    let spider = CtxSpider::new(
        |_| {
            outputs(vec![
                get("http://a.test/wait1"),
                get("http://a.test/wait2"),
                get("http://a.test/close"),
            ])
        },
        move |ctx, resp| {
            if path(resp) == "/close" {
                return Err(Failure::new(CloseSpider::new("enough")));
            }
            let c = c.clone();
            let d: Deferred<Vec<Output>> =
                defer_later(ctx.clock(), 100.0, || Ok(vec![item("never")]));
            d.add_errback(move |f| {
                c.set(c.get() + 1);
                Err(f)
            });
            Ok(outputs(vec![Output::later(d)]))
        },
    );
    let h = harness(spider, &[], |_| {});
    h.script.set(
        "http://a.test/close",
        Answer {
            delay: 0.5,
            ..Answer::default()
        },
    );
    let (finished, logs) = capture_logs(|| h.run(10.0));
    assert!(finished, "the close does not wait for the 100 s Deferreds");
    assert_eq!(cancelled.get(), 2);
    assert_eq!(
        h.crawler.stats.get_value("finish_reason"),
        Some(json!("enough"))
    );
    assert_eq!(h.stat("scraper/cancelled_waits"), 2);
    assert_eq!(h.stat("spider_exceptions/count"), 0, "not a spider error");
    assert_eq!(h.stat("item_scraped_count"), 0);
    let lines: Vec<_> = logs
        .iter()
        .filter(|(_, m)| m.starts_with("Cancelling"))
        .collect();
    assert_eq!(lines.len(), 1, "{logs:?}");
    assert!(lines[0].1.contains("2 callback(s)"), "{lines:?}");
}

#[test]
fn an_errback_may_wait_too() {
    let spider = CtxSpider::new(
        |_| {
            outputs(vec![Output::Request(
                Request::get("http://a.test/down")
                    .expect("url")
                    .with_errback("on_error"),
            )])
        },
        |_, _| Ok(outputs(Vec::new())),
    );
    struct Errback(CtxSpider);
    impl Spider for Errback {
        fn name(&self) -> &str {
            "errback"
        }
        fn set_context(&mut self, ctx: &Ctx) {
            self.0.set_context(ctx);
        }
        fn start(&mut self) -> Outputs {
            self.0.start()
        }
        fn errback(&mut self, _: &str, failure: &Failure, _: &Request) -> CallbackResult {
            let ctx = self.0.ctx.clone().expect("context");
            let msg = failure.to_string();
            Ok(vec![Output::later(defer_later(
                ctx.clock(),
                2.0,
                move || {
                    Ok(vec![Output::Item(
                        Item::new().with("tag", format!("recovered: {msg}")),
                    )])
                },
            ))])
        }
    }
    let h = harness(Errback(spider), &[], |_| {});
    h.script.set(
        "http://a.test/down",
        Answer {
            fail: Some("connection refused".into()),
            ..Answer::default()
        },
    );
    let seen = record_items(&h);
    assert!(h.run(20.0));
    assert_eq!(tags(&seen), ["recovered: connection refused"]);
    assert!(seen.borrow()[0].1 >= 2.0);
}

#[test]
fn start_may_wait_between_outputs_without_blocking_other_work() {
    let spider = CtxSpider::new(
        |ctx| {
            outputs(vec![
                get("http://a.test/first"),
                after(ctx.clock(), 3.0, vec![get("http://a.test/second")]),
                get("http://a.test/third"),
            ])
        },
        |_, resp| Ok(outputs(vec![item(&path(resp))])),
    );
    let h = harness(spider, &[], |_| {});
    let seen = record_items(&h);
    assert!(h.run(20.0));
    assert_eq!(tags(&seen), ["/first", "/second", "/third"]);
    let started = h.script.started.borrow().clone();
    assert!(started[0].0 < 0.5, "{started:?}");
    assert!(
        seen.borrow()[0].1 < 1.0,
        "the first page is scraped meanwhile"
    );
    assert!(
        started[1].0 >= 3.0 && started[2].0 >= 3.0,
        "the crawl does not close or run ahead while start() waits: {started:?}"
    );
    assert_eq!(
        h.crawler.stats.get_value("finish_reason"),
        Some(json!("finished"))
    );
}

#[test]
fn a_failing_wait_in_start_is_a_start_error() {
    let spider = CtxSpider::new(
        |ctx| {
            let d: Deferred<Vec<Output>> = defer_later(ctx.clock(), 1.0, || {
                Err::<Vec<Output>, _>(Failure::msg("no seeds"))
            });
            outputs(vec![
                get("http://a.test/1"),
                Output::later(d),
                get("http://a.test/never"),
            ])
        },
        |_, _| Ok(outputs(Vec::new())),
    );
    let h = harness(spider, &[], |_| {});
    assert!(h.run(20.0));
    assert_eq!(
        h.crawler.stats.get_value("finish_reason"),
        Some(json!("start_error"))
    );
    assert_eq!(h.script.started_urls(), ["http://a.test/1"]);
}

#[test]
fn a_start_wait_is_cancelled_by_the_close() {
    let spider = CtxSpider::new(
        |ctx| {
            outputs(vec![
                get("http://a.test/close"),
                after(ctx.clock(), 100.0, vec![get("http://a.test/never")]),
            ])
        },
        |_, _| Err(Failure::new(CloseSpider::new("done_early"))),
    );
    let h = harness(spider, &[], |_| {});
    assert!(h.run(10.0));
    assert_eq!(
        h.crawler.stats.get_value("finish_reason"),
        Some(json!("done_early"))
    );
    assert_eq!(h.stat("spider_exceptions/count"), 0);
}

/// Tags each request it sees (the inline download must go through it).
struct TagMw(Rc<RefCell<Vec<String>>>);

impl DownloaderMiddleware for TagMw {
    fn process_request(
        &self,
        request: &mut Request,
    ) -> Result<trawl::crawl::downloader::middleware::RequestOutcome, Failure> {
        self.0.borrow_mut().push(request.url().path().to_owned());
        Ok(trawl::crawl::downloader::middleware::RequestOutcome::Continue)
    }
}

#[test]
fn an_inline_download_goes_through_the_middlewares_but_not_the_scheduler() {
    let mw_seen: Rc<RefCell<Vec<String>>> = Rc::default();
    let spider = CtxSpider::new(
        |_| outputs(vec![get("http://a.test/list")]),
        |ctx, resp| {
            let engine = ctx.engine().expect("engine");
            let title = path(resp);
            // The same API URL twice: the dupefilter is not asked, both are fetched.
            let api = |n: u32| {
                let title = title.clone();
                engine
                    .download(Request::get("http://a.test/api").expect("url"))
                    .map(move |api: Response| {
                        vec![Output::Item(
                            Item::new()
                                .with("tag", format!("{title}+{}#{n}", api.text()))
                                .with("n", n),
                        )]
                    })
            };
            Ok(outputs(vec![Output::later(api(1)), Output::later(api(2))]))
        },
    );
    let m = mw_seen.clone();
    let h = harness(
        spider,
        &[("DOWNLOADER_MIDDLEWARES", json!({"test.Tag": 500}))],
        move |r| {
            let m = m.clone();
            r.register_downloader_middleware("test.Tag", move |_| {
                Ok(Rc::new(TagMw(m.clone())) as Rc<dyn DownloaderMiddleware>)
            });
        },
    );
    h.script.set(
        "http://a.test/api",
        Answer {
            body: b"{\"price\": 3}".to_vec(),
            ..Answer::default()
        },
    );
    let seen = record_items(&h);
    assert!(h.run(20.0));
    assert_eq!(
        tags(&seen),
        ["/list+{\"price\": 3}#1", "/list+{\"price\": 3}#2"]
    );
    assert_eq!(*mw_seen.borrow(), ["/list", "/api", "/api"]);
    assert_eq!(
        h.stat("scheduler/enqueued"),
        1,
        "only the listing was scheduled"
    );
    assert_eq!(h.stat("downloader/request_count"), 3);
    assert_eq!(h.stat("dupefilter/filtered"), 0);
}
