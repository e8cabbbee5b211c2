//! Scrapy's streaming and bookkeeping signals over loopback: `headers_received` and
//! `bytes_received` (and `StopDownload` from either, with `fail` true or false),
//! `robots_parsed`, `feed_slot_closed` and `feed_exporter_closed`; the downloader's
//! `request_reached_downloader` / `response_downloaded` / `request_left_downloader`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use serde_json::{Value, json};
use trawl::crawl::errors::StopDownload;
use trawl::crawl::signals::{Signal, SignalArgs};
use trawl::crawl::{
    CallbackResult, Crawler, Item, Output, Priority, Registry, Request, Response, Settings, Spider,
    run_spider_with,
};
use trawl::defer::Failure;
use trawl::testing::{FixtureOptions, FixtureServer};

#[derive(Default)]
struct Seen {
    responses: RefCell<Vec<Response>>,
    stopped: RefCell<Vec<Response>>,
}

/// Requests `urls`; records responses, and the responses inside `StopDownload` errors.
struct Recorder {
    urls: Vec<String>,
    seen: Rc<Seen>,
    items: bool,
}

impl Spider for Recorder {
    fn name(&self) -> &str {
        "signals"
    }
    fn start_urls(&self) -> Vec<String> {
        self.urls.clone()
    }
    fn start(&mut self) -> trawl::crawl::Outputs {
        let requests: Vec<Output> = self
            .urls
            .iter()
            .map(|u| Output::Request(Request::get(u).unwrap().with_errback("record")))
            .collect();
        trawl::crawl::outputs(requests)
    }
    fn callback(&mut self, _name: &str, response: &Response) -> CallbackResult {
        self.seen.responses.borrow_mut().push(response.clone());
        Ok(if self.items {
            vec![Output::Item(
                Item::new().with("url", response.url().as_str()),
            )]
        } else {
            Vec::new()
        })
    }
    fn errback(&mut self, _name: &str, failure: &Failure, _request: &Request) -> CallbackResult {
        if let Some(stop) = failure.downcast_ref::<StopDownload>()
            && let Some(r) = &stop.response
        {
            self.seen.stopped.borrow_mut().push(r.clone());
        }
        Ok(Vec::new())
    }
}

fn server(robots: Option<&str>) -> FixtureServer {
    FixtureServer::start(FixtureOptions {
        pages: 10,
        robots: robots.map(|b| (200, b.to_owned())),
        ..FixtureOptions::default()
    })
    .expect("fixture server")
}

fn run(
    urls: Vec<String>,
    settings: &[(&str, Value)],
    items: bool,
    connect: impl Fn(&trawl::crawl::CrawlContext) + 'static,
) -> (Rc<Crawler>, Rc<Seen>) {
    let seen = Rc::new(Seen::default());
    let spider = Recorder {
        urls,
        seen: seen.clone(),
        items,
    };
    let mut st = Settings::new();
    st.set("LOGSTATS_INTERVAL", 0, Priority::Project);
    st.set("ROBOTSTXT_OBEY", false, Priority::Project);
    st.set("EXTENSIONS", json!({"test.Signals": 10}), Priority::Project);
    for (k, v) in settings {
        st.set(k, v.clone(), Priority::Project);
    }
    let mut registry = Registry::with_builtins();
    let connect = Rc::new(connect);
    registry.register_extension("test.Signals", move |ctx| {
        connect(ctx);
        Ok(Rc::new(()) as Rc<dyn std::any::Any>)
    });
    let crawler = run_spider_with(Box::new(spider), st, registry).expect("crawl runs");
    (crawler, seen)
}

#[test]
fn headers_received_can_stop_a_download_into_the_errback() {
    let srv = server(None);
    let big = srv.url("/big?size=5000000");
    let heads = Rc::new(Cell::new(0));
    let h = heads.clone();
    let (crawler, seen) = run(vec![big], &[], false, move |ctx| {
        let h = h.clone();
        ctx.signals.connect(Signal::HeadersReceived, move |args| {
            if let SignalArgs::Headers {
                status,
                body_length,
                headers,
                ..
            } = args
            {
                assert_eq!(*status, 200);
                assert_eq!(*body_length, Some(5_000_000));
                assert!(headers.get_str("content-type").is_some());
                h.set(h.get() + 1);
            }
            Err(Failure::new(StopDownload::fail()))
        });
    });
    assert_eq!(heads.get(), 1);
    assert!(
        seen.responses.borrow().is_empty(),
        "the callback is not called"
    );
    let stopped = seen.stopped.borrow();
    assert_eq!(
        stopped.len(),
        1,
        "the errback got the response inside StopDownload"
    );
    assert_eq!(stopped[0].status(), 200);
    assert!(
        stopped[0].body().len() < 5_000_000,
        "the body was not downloaded"
    );
    assert!(stopped[0].flags().iter().any(|f| f == "download_stopped"));
    assert_eq!(crawler.stats.get_int("spider_exceptions/count"), 0);
}

#[test]
fn bytes_received_can_stop_a_download_into_the_callback() {
    let srv = server(None);
    let drip = srv.url("/drip?bytes=50&ms=20");
    let received = Rc::new(Cell::new(0usize));
    let r = received.clone();
    let (_crawler, seen) = run(vec![drip], &[], false, move |ctx| {
        let r = r.clone();
        ctx.signals.connect(Signal::BytesReceived, move |args| {
            if let SignalArgs::Bytes { data, .. } = args {
                r.set(r.get() + data.len());
            }
            Err(Failure::new(StopDownload::keep()))
        });
    });
    let responses = seen.responses.borrow();
    assert_eq!(
        responses.len(),
        1,
        "fail=False: the callback gets the response"
    );
    let body = responses[0].body();
    assert!(!body.is_empty() && body.len() < 50, "{} bytes", body.len());
    assert_eq!(
        body.len(),
        received.get(),
        "the body holds exactly what was seen"
    );
    assert!(responses[0].flags().iter().any(|f| f == "download_stopped"));
}

#[test]
fn bytes_received_sees_the_whole_body_when_nobody_stops_it() {
    let srv = server(None);
    let big = srv.url("/big?size=300000");
    let received = Rc::new(Cell::new(0usize));
    let chunks = Rc::new(Cell::new(0usize));
    let (r, c) = (received.clone(), chunks.clone());
    let (_crawler, seen) = run(vec![big], &[], false, move |ctx| {
        let (r, c) = (r.clone(), c.clone());
        ctx.signals.connect(Signal::BytesReceived, move |args| {
            if let SignalArgs::Bytes { data, .. } = args {
                r.set(r.get() + data.len());
                c.set(c.get() + 1);
            }
            Ok(())
        });
    });
    assert_eq!(received.get(), 300_000);
    assert!(chunks.get() >= 1);
    let responses = seen.responses.borrow();
    assert_eq!(responses[0].body().len(), 300_000);
    assert!(!responses[0].flags().iter().any(|f| f == "download_stopped"));
}

#[test]
fn robots_parsed_and_feed_signals_are_sent() {
    let srv = server(Some("User-agent: *\nDisallow: /private\n"));
    let dir = std::env::temp_dir().join(format!("trawl-signals-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let feed = dir.join("items.jsonl");
    let robots = Rc::new(RefCell::new(Vec::<String>::new()));
    let slots = Rc::new(RefCell::new(Vec::<(String, u64)>::new()));
    let exporter_closed = Rc::new(Cell::new(0));
    let (rb, sl, ex) = (robots.clone(), slots.clone(), exporter_closed.clone());
    let (_crawler, seen) = run(
        vec![srv.url("/index.html"), srv.url("/page/1/")],
        &[
            ("ROBOTSTXT_OBEY", json!(true)),
            (
                "FEEDS",
                json!({feed.to_str().unwrap(): {"format": "jsonlines"}}),
            ),
        ],
        true,
        move |ctx| {
            let rb = rb.clone();
            ctx.signals.connect(Signal::RobotsParsed, move |args| {
                if let SignalArgs::Robots { netloc, robots } = args {
                    let private = url::Url::parse("http://127.0.0.1/private/x").unwrap();
                    assert!(!robots.allowed(&private, "trawl"));
                    rb.borrow_mut().push((*netloc).to_owned());
                }
                Ok(())
            });
            let sl = sl.clone();
            ctx.signals.connect(Signal::FeedSlotClosed, move |args| {
                if let SignalArgs::FeedSlot { uri, items } = args {
                    sl.borrow_mut().push(((*uri).to_owned(), *items));
                }
                Ok(())
            });
            let ex = ex.clone();
            ctx.signals.connect(Signal::FeedExporterClosed, move |_| {
                ex.set(ex.get() + 1);
                Ok(())
            });
        },
    );
    assert_eq!(seen.responses.borrow().len(), 2);
    assert_eq!(robots.borrow().len(), 1, "one robots.txt per origin");
    assert!(
        robots.borrow()[0].contains("127.0.0.1"),
        "{:?}",
        robots.borrow()
    );
    assert_eq!(*slots.borrow(), [(feed.to_str().unwrap().to_owned(), 2)]);
    assert_eq!(exporter_closed.get(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_request_reaches_and_leaves_the_downloader_in_scrapys_order() {
    let srv = server(None);
    // A port nothing listens on: the download fails (no retry).
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let refused = format!("http://127.0.0.1:{closed}/refused");
    let ok: Vec<String> = (1..=3).map(|i| srv.url(&format!("/page/{i}"))).collect();
    let mut urls = ok.clone();
    urls.push(refused.clone());
    let events: Rc<RefCell<Vec<(&'static str, String)>>> = Rc::default();
    let ev = events.clone();
    let (_crawler, seen) = run(
        urls,
        &[("RETRY_ENABLED", json!(false))],
        false,
        move |ctx| {
            for (signal, name) in [
                (Signal::RequestReachedDownloader, "reached"),
                (Signal::ResponseDownloaded, "downloaded"),
                (Signal::RequestLeftDownloader, "left"),
            ] {
                let ev = ev.clone();
                ctx.signals.connect(signal, move |args| {
                    let url = match args {
                        SignalArgs::Request { request } => request.url_str().to_owned(),
                        SignalArgs::Response { request, .. } => request.url_str().to_owned(),
                        _ => String::new(),
                    };
                    ev.borrow_mut().push((name, url));
                    Ok(())
                });
            }
        },
    );
    assert_eq!(seen.responses.borrow().len(), 3);
    let events = events.borrow();
    let at = |name: &str, url: &str| {
        let found: Vec<usize> = events
            .iter()
            .enumerate()
            .filter(|(_, (n, u))| *n == name && u == url)
            .map(|(i, _)| i)
            .collect();
        assert!(found.len() <= 1, "{name} {url} sent {} times", found.len());
        found.first().copied()
    };
    for url in &ok {
        let reached = at("reached", url).expect("reached");
        let downloaded = at("downloaded", url).expect("downloaded");
        let left = at("left", url).expect("left");
        assert!(reached < downloaded && downloaded < left, "{events:?}");
    }
    let reached = at("reached", &refused).expect("the failed request reached");
    let left = at("left", &refused).expect("the failed request left");
    assert!(reached < left);
    assert_eq!(at("downloaded", &refused), None);
    assert_eq!(events.len(), 3 * 3 + 2, "{events:?}");
}
