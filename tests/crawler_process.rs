//! Several crawls in one process (`CrawlerRunner`, `CrawlerProcess`): twenty crawls of
//! the fixture site at once on one reactor, each with the items a solo run scrapes and
//! stats of its own; a crawl whose spider panics, or that cannot start, leaves the
//! others complete; `join`, `stop`, sequential chaining through the Deferreds; and each
//! crawl's log records counted, filtered and named for that crawl alone.

mod util;

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::{Mutex, Once};

use serde_json::json;
use trawl::crawl::logging::CountingLogger;
use trawl::crawl::signals::{Signal, SignalArgs};
use trawl::crawl::{
    CallbackResult, Crawler, CrawlerProcess, CrawlerRunner, Outputs, Priority, Response, Settings,
    Spider,
};
use trawl::reactor::Reactor;
use trawl::testing::spiders::FixtureSpider;
use trawl::testing::{FixtureOptions, FixtureServer};

/// The fixture spider under another name (and, with `panic_on`, a callback that panics
/// on every page whose URL contains it).
struct Named {
    name: String,
    inner: FixtureSpider,
    panic_on: Option<String>,
}

impl Named {
    fn new(name: &str, start: &str) -> Box<Self> {
        Box::new(Self {
            name: name.to_owned(),
            inner: FixtureSpider::new(start),
            panic_on: None,
        })
    }
}

impl Spider for Named {
    fn name(&self) -> &str {
        &self.name
    }
    fn allowed_domains(&self) -> Vec<String> {
        self.inner.allowed_domains()
    }
    fn start(&mut self) -> Outputs {
        self.inner.start()
    }
    fn parse(&mut self, response: &Response) -> CallbackResult {
        if let Some(p) = &self.panic_on
            && response.url().as_str().contains(p.as_str())
        {
            panic!("the spider's bug");
        }
        self.inner.parse(response)
    }
}

fn settings() -> Settings {
    let mut s = Settings::new();
    s.set("LOGSTATS_INTERVAL", 0, Priority::Project);
    s.set("TELNETCONSOLE_ENABLED", false, Priority::Project);
    s
}

/// Collects each crawl's scraped items (as JSON strings), their `url` canonicalized:
/// the fixture links one page under two query orders (`?a=1&b=2`, `?b=2&a=1`), one
/// fingerprint, and which of the two is met first depends on which response is parsed
/// first — in a run of twenty crawls, not always the solo run's.
fn collect_items(crawler: &Rc<Crawler>) -> Rc<RefCell<BTreeSet<String>>> {
    let items: Rc<RefCell<BTreeSet<String>>> = Rc::default();
    let i = items.clone();
    crawler.signals.connect(Signal::ItemScraped, move |args| {
        if let SignalArgs::Item { item, .. } = args {
            let mut item = item.0.clone();
            if let Some(u) = item.get("url").and_then(|u| u.as_str())
                && let Ok(c) = trawl::crawl::canonicalize_url(u, true, false)
            {
                item.insert("url".into(), c.into());
            }
            i.borrow_mut()
                .insert(serde_json::to_string(&item).unwrap_or_default());
        }
        Ok(())
    });
    items
}

/// A solo run's items and pages.
fn solo_items(server: &FixtureServer) -> (BTreeSet<String>, i64) {
    let mut reactor = Reactor::new().expect("reactor");
    let runner = CrawlerRunner::new(&reactor.handle(), settings());
    let crawler = runner
        .create_crawler(Named::new("solo", &server.url("/index.html")), None)
        .expect("crawler");
    let items = collect_items(&crawler);
    runner.crawl_crawler(&crawler);
    reactor.run_until(&runner.join()).expect("reactor");
    let set = items.borrow().clone();
    assert!(!set.is_empty());
    (set, crawler.stats.get_int("response_received_count"))
}

#[test]
fn twenty_crawls_at_once_each_scrape_what_a_solo_run_scrapes() {
    let server = FixtureServer::start(FixtureOptions {
        pages: 300,
        ..FixtureOptions::default()
    })
    .expect("fixture");
    let (solo, solo_pages) = solo_items(&server);
    let (expected_pages, _) = server.site().expected_crawl();
    assert!(solo_pages as usize > expected_pages.len());

    let mut reactor = Reactor::new().expect("reactor");
    let runner = CrawlerRunner::new(&reactor.handle(), settings());
    // Crawls open at once: the most that were open together.
    let open = Rc::new(std::cell::Cell::new(0usize));
    let max_open = Rc::new(std::cell::Cell::new(0usize));
    let mut crawls = Vec::new();
    for n in 0..20 {
        let mut spider = Named::new(&format!("site{n}"), &server.url("/index.html"));
        if n == 7 {
            // One crawl's spider panics on some pages: a spider error there, nothing
            // anywhere else.
            spider.panic_on = Some("/s/".into());
        }
        let crawler = runner.create_crawler(spider, None).expect("crawler");
        let items = collect_items(&crawler);
        let (o, m) = (open.clone(), max_open.clone());
        crawler.signals.connect(Signal::SpiderOpened, move |_| {
            o.set(o.get() + 1);
            m.set(m.get().max(o.get()));
            Ok(())
        });
        let o = open.clone();
        crawler.signals.connect(Signal::SpiderClosed, move |_| {
            o.set(o.get() - 1);
            Ok(())
        });
        let done = runner.crawl_crawler(&crawler);
        crawls.push((n, crawler, items, done));
    }
    assert_eq!(runner.crawlers().len(), 20);
    reactor.run_until(&runner.join()).expect("reactor");
    assert!(runner.crawlers().is_empty());
    assert_eq!(max_open.get(), 20, "the twenty crawls ran at the same time");
    for (n, crawler, items, done) in crawls {
        let finished = done.take_result().expect("fired").expect("crawl ran");
        assert!(Rc::ptr_eq(&finished, &crawler));
        let stats = &crawler.stats;
        assert_eq!(
            stats.get_value("finish_reason"),
            Some(json!("finished")),
            "crawl {n}"
        );
        if n == 7 {
            assert!(stats.get_int("spider_exceptions/PanicError") > 0);
            assert!(items.borrow().len() < solo.len());
            continue;
        }
        assert_eq!(*items.borrow(), solo, "crawl {n}'s items are a solo run's");
        // Stats are the crawl's own: exactly one site's pages and items each.
        assert_eq!(
            stats.get_int("item_scraped_count") as usize,
            solo.len(),
            "crawl {n}"
        );
        assert_eq!(
            stats.get_int("response_received_count"),
            solo_pages,
            "crawl {n}: the pages of one solo run"
        );
        assert_eq!(stats.get_int("spider_exceptions/count"), 0, "crawl {n}");
    }
}

#[test]
fn a_crawl_that_cannot_start_leaves_the_others_running() {
    let server = FixtureServer::start(FixtureOptions {
        pages: 50,
        ..FixtureOptions::default()
    })
    .expect("fixture");
    let mut reactor = Reactor::new().expect("reactor");
    let runner = CrawlerRunner::new(&reactor.handle(), settings());
    let mut bad = Settings::new();
    bad.set("SCHEDULER", "no.such.Scheduler", Priority::Project);
    let good = runner.crawl(Named::new("good", &server.url("/index.html")));
    let failed = runner.crawl_with(Named::new("bad", &server.url("/index.html")), Some(&bad));
    reactor.run_until(&runner.join()).expect("reactor");
    let crawler = good.take_result().expect("fired").expect("good crawl");
    assert_eq!(
        crawler.stats.get_value("finish_reason"),
        Some(json!("finished"))
    );
    assert!(crawler.stats.get_int("item_scraped_count") > 0);
    let err = failed
        .take_result()
        .expect("fired")
        .expect_err("bad crawl fails");
    assert!(err.to_string().contains("no.such.Scheduler"), "{err}");
    assert!(runner.bootstrap_failed());
}

#[test]
fn crawls_chain_one_after_another_through_their_deferreds() {
    let server = FixtureServer::start(FixtureOptions {
        pages: 30,
        ..FixtureOptions::default()
    })
    .expect("fixture");
    let mut reactor = Reactor::new().expect("reactor");
    let runner = CrawlerRunner::new(&reactor.handle(), settings());
    let order: Rc<RefCell<Vec<String>>> = Rc::default();
    let (r, o, url) = (runner.clone(), order.clone(), server.url("/index.html"));
    // Scrapy's docs: `yield runner.crawl(A); yield runner.crawl(B)`.
    runner
        .crawl(Named::new("first", &url))
        .add_callback(move |c| {
            o.borrow_mut().push(format!("{} done", c.spider_name()));
            assert!(r.crawlers().is_empty(), "the first has ended");
            let o2 = o.clone();
            r.crawl(Named::new("second", &url)).add_callback(move |c| {
                o2.borrow_mut().push(format!("{} done", c.spider_name()));
                Ok(c)
            });
            Ok(c)
        });
    reactor.run_until(&runner.join()).expect("reactor");
    assert_eq!(*order.borrow(), ["first done", "second done"]);
}

#[test]
fn stop_closes_every_running_crawl_with_shutdown() {
    let server = FixtureServer::start(FixtureOptions {
        pages: 2000,
        ..FixtureOptions::default()
    })
    .expect("fixture");
    let mut reactor = Reactor::new().expect("reactor");
    let mut s = settings();
    s.set("CONCURRENT_REQUESTS", 1, Priority::Project);
    s.set("DOWNLOAD_DELAY", 0.05, Priority::Project);
    let runner = CrawlerRunner::new(&reactor.handle(), s);
    let a = runner.crawl(Named::new("a", &server.url("/index.html")));
    let b = runner.crawl(Named::new("b", &server.url("/index.html")));
    let r = runner.clone();
    reactor.handle().call_later(0.5, move || {
        r.stop();
    });
    reactor.run_until(&runner.join()).expect("reactor");
    for d in [a, b] {
        let c = d.take_result().expect("fired").expect("ran");
        assert_eq!(c.stats.get_value("finish_reason"), Some(json!("shutdown")));
    }
}

#[test]
fn crawler_process_runs_its_crawls_to_the_end() {
    let server = FixtureServer::start(FixtureOptions {
        pages: 40,
        ..FixtureOptions::default()
    })
    .expect("fixture");
    let mut process = CrawlerProcess::new(settings()).expect("process");
    process.install_signal_handlers(false);
    let a = process.crawl(Named::new("one", &server.url("/index.html")));
    let b = process.crawl(Named::new("two", &server.url("/index.html")));
    process.start().expect("ran");
    for d in [a, b] {
        let c = d.take_result().expect("fired").expect("ran");
        assert_eq!(c.stats.get_value("finish_reason"), Some(json!("finished")));
        assert!(c.stats.get_int("item_scraped_count") > 0);
    }
}

// ---------------------------------------------------------------- logging

/// Every record this test binary logs: (spider of the crawl it was logged in, level,
/// message).
static RECORDS: Mutex<Vec<(Option<String>, log::Level, String)>> = Mutex::new(Vec::new());
static INSTALL: Once = Once::new();

struct Recorder;

impl log::Log for Recorder {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        let spider = trawl::crawl::logging::current_spider();
        RECORDS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((spider, record.level(), record.args().to_string()));
    }
    fn flush(&self) {}
}

fn install_managed_logger() {
    INSTALL.call_once(|| {
        log::set_boxed_logger(Box::new(CountingLogger::new(Recorder))).expect("logger");
        trawl::crawl::logging::set_managed(true);
        trawl::crawl::logging::set_base_level(log::LevelFilter::Info);
    });
}

#[test]
fn each_crawl_counts_filters_and_names_its_own_log_records() {
    install_managed_logger();
    let server = FixtureServer::start(FixtureOptions {
        pages: 60,
        ..FixtureOptions::default()
    })
    .expect("fixture");
    let mut reactor = Reactor::new().expect("reactor");
    let runner = CrawlerRunner::new(&reactor.handle(), settings());
    let mut debug = Settings::new();
    debug.set("LOG_LEVEL", "DEBUG", Priority::Project);
    let mut quiet = Settings::new();
    quiet.set("LOG_LEVEL", "WARNING", Priority::Project);
    let loud = runner.crawl_with(
        Named::new("logs-loud", &server.url("/index.html")),
        Some(&debug),
    );
    let calm = runner.crawl_with(
        Named::new("logs-calm", &server.url("/index.html")),
        Some(&quiet),
    );
    reactor.run_until(&runner.join()).expect("reactor");
    let loud = loud.take_result().expect("fired").expect("ran");
    let calm = calm.take_result().expect("fired").expect("ran");

    let records = RECORDS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let of = |name: &str, level: log::Level| {
        records
            .iter()
            .filter(|(s, l, _)| s.as_deref() == Some(name) && *l == level)
            .count() as i64
    };
    // The loud crawl logs a Crawled line per page at DEBUG, each named for it.
    let crawled_loud = records
        .iter()
        .filter(|(s, _, m)| s.as_deref() == Some("logs-loud") && m.starts_with("Crawled ("))
        .count() as i64;
    assert_eq!(crawled_loud, loud.stats.get_int("response_received_count"));
    // Its stats count its own records only (those logged while its spider was open):
    // every Crawled line, never more than it logged.
    let counted = loud.stats.get_int("log_count/DEBUG");
    assert!(counted >= crawled_loud, "{counted} < {crawled_loud}");
    assert!(counted <= of("logs-loud", log::Level::Debug));
    assert!(loud.stats.get_int("log_count/INFO") <= of("logs-loud", log::Level::Info));
    assert!(loud.stats.get_int("log_count/INFO") > 0);
    // The calm crawl's LOG_LEVEL=WARNING applies to its lines alone: none of its
    // DEBUG or INFO records was logged or counted, while the other crawl's were.
    assert_eq!(of("logs-calm", log::Level::Debug), 0);
    assert_eq!(of("logs-calm", log::Level::Info), 0);
    assert_eq!(calm.stats.get_int("log_count/DEBUG"), 0);
    assert_eq!(calm.stats.get_int("log_count/INFO"), 0);
    assert!(calm.stats.get_int("item_scraped_count") > 0);
}

/// A user's `LOG_FORMATTER`: items at DEBUG without their body.
struct NoBodies;

impl trawl::crawl::logformatter::LogFormatter for NoBodies {
    fn scraped(
        &self,
        _item: &trawl::crawl::Item,
        response: Option<&Response>,
        _spider: &str,
    ) -> Option<trawl::crawl::logformatter::LogEntry> {
        Some(trawl::crawl::logformatter::LogEntry::new(
            log::Level::Debug,
            format!(
                "Scraped an item from {}",
                response.map_or_else(String::new, |r| r.url().to_string())
            ),
        ))
    }
}

#[test]
fn a_log_formatter_by_name_changes_what_the_crawl_says() {
    install_managed_logger();
    let server = FixtureServer::start(FixtureOptions {
        pages: 20,
        ..FixtureOptions::default()
    })
    .expect("fixture");
    let mut registry = trawl::crawl::Registry::with_builtins();
    registry.register_log_formatter("test.NoBodies", |_| {
        Ok(Rc::new(NoBodies) as Rc<dyn trawl::crawl::logformatter::LogFormatter>)
    });
    let mut reactor = Reactor::new().expect("reactor");
    let mut s = settings();
    s.set("LOG_LEVEL", "DEBUG", Priority::Project);
    s.set("LOG_FORMATTER", "test.NoBodies", Priority::Project);
    let runner = CrawlerRunner::with_registry(&reactor.handle(), s, registry);
    let done = runner.crawl(Named::new("formatted", &server.url("/index.html")));
    reactor.run_until(&runner.join()).expect("reactor");
    let crawler = done.take_result().expect("fired").expect("ran");
    let records = RECORDS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let mine: Vec<&String> = records
        .iter()
        .filter(|(s, _, _)| s.as_deref() == Some("formatted"))
        .map(|(_, _, m)| m)
        .collect();
    let scraped = mine
        .iter()
        .filter(|m| m.starts_with("Scraped an item from http"))
        .count();
    assert_eq!(scraped as i64, crawler.stats.get_int("item_scraped_count"));
    assert!(!mine.iter().any(|m| m.starts_with("Scraped from")));
    // The methods it does not override keep Scrapy's lines.
    assert!(mine.iter().any(|m| m.starts_with("Crawled (200)")));
}
