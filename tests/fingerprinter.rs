//! `REQUEST_FINGERPRINTER_CLASS`: a fingerprinter of the user's, registered by name,
//! decides what the dupefilter, the HTTP cache, the JOBDIR and a Redis crawl call the
//! same request; a JOBDIR or a Redis crawl written with another is refused.

mod util;

use std::rc::Rc;

use serde_json::{Value, json};
use sha1::{Digest, Sha1};
use trawl::crawl::fingerprint::RequestFingerprinter;
use trawl::crawl::{Crawler, Output, Priority, Registry, Request, Settings};
use trawl::reactor::ManualClock;
use trawl::testing::{RedisServer, TempDir};
use util::crawl::{FnSpider, harness};

/// Ignores the query string: `/a?x=1` and `/a?x=2` are one request.
struct PathOnly;

impl RequestFingerprinter for PathOnly {
    fn fingerprint(&self, request: &Request) -> [u8; 20] {
        let url = request.url();
        let key = format!(
            "{} {}{}",
            request.method().as_str(),
            url.host_str().unwrap_or(""),
            url.path()
        );
        Sha1::digest(key.as_bytes()).into()
    }
}

fn register(r: &mut Registry) {
    r.register_fingerprinter("test.PathOnly", |_| {
        Ok(Rc::new(PathOnly) as Rc<dyn RequestFingerprinter>)
    });
}

fn urls(list: &[&str]) -> FnSpider {
    FnSpider::urls(list.iter().map(|u| (*u).to_owned()).collect())
}

#[test]
fn the_dupefilter_uses_the_named_fingerprinter() {
    let list = [
        "http://a.test/a?x=1",
        "http://a.test/a?x=2",
        "http://a.test/b",
    ];
    let h = harness(urls(&list), &[], register);
    assert!(h.run(20.0));
    assert_eq!(
        h.script.started_urls().len(),
        3,
        "the default tells them apart"
    );
    let h = harness(
        urls(&list),
        &[("REQUEST_FINGERPRINTER_CLASS", json!("test.PathOnly"))],
        register,
    );
    assert!(h.run(20.0));
    assert_eq!(
        h.script.started_urls(),
        ["http://a.test/a?x=1", "http://a.test/b"]
    );
    assert_eq!(h.stat("dupefilter/filtered"), 1);
}

#[test]
fn the_http_cache_keys_by_the_named_fingerprinter() {
    let dir = TempDir::new("fpcache").expect("dir");
    let cache = dir.join("cache");
    let settings = || -> Vec<(&'static str, Value)> {
        vec![
            ("HTTPCACHE_ENABLED", json!(true)),
            ("HTTPCACHE_DIR", json!(cache.to_str().expect("utf-8"))),
            ("REQUEST_FINGERPRINTER_CLASS", json!("test.PathOnly")),
        ]
    };
    let first = harness(urls(&["http://a.test/a?x=1"]), &settings(), register);
    assert!(first.run(20.0));
    assert_eq!(first.stat("httpcache/store"), 1);
    // Another query string: the same request for this fingerprinter, from the cache.
    let second = harness(urls(&["http://a.test/a?x=2"]), &settings(), register);
    assert!(second.run(20.0));
    assert_eq!(second.stat("httpcache/hit"), 1);
    assert!(
        second.script.started_urls().is_empty(),
        "nothing downloaded"
    );
}

fn crawler_with_jobdir(
    dir: &std::path::Path,
    fingerprinter: Option<&str>,
) -> Result<Rc<Crawler>, String> {
    let mut st = Settings::new();
    st.set("JOBDIR", dir.to_str().expect("utf-8"), Priority::Project);
    if let Some(f) = fingerprinter {
        st.set("REQUEST_FINGERPRINTER_CLASS", f, Priority::Project);
    }
    let mut registry = Registry::with_builtins();
    register(&mut registry);
    Crawler::new(
        Box::new(urls(&["http://a.test/"])),
        st,
        ManualClock::new().clock(),
        None,
        registry,
    )
    .map_err(|f| f.to_string())
}

#[test]
fn a_jobdir_written_with_another_fingerprinter_is_refused() {
    let dir = TempDir::new("fpjob").expect("dir");
    let job = dir.join("job");
    // Written with the default; the crawler (and its lock) goes away.
    drop(crawler_with_jobdir(&job, None).expect("a new JOBDIR"));
    let err = crawler_with_jobdir(&job, Some("test.PathOnly")).expect_err("refused");
    assert!(err.contains("trawl.RequestFingerprinter"), "{err}");
    assert!(err.contains("test.PathOnly"), "{err}");
    // The same one resumes; Scrapy's path names the default.
    drop(crawler_with_jobdir(&job, None).expect("resumes"));
    drop(
        crawler_with_jobdir(&job, Some("scrapy.utils.request.RequestFingerprinter"))
            .expect("Scrapy's name for the default"),
    );
    // And the other way round.
    let other = dir.join("other");
    drop(crawler_with_jobdir(&other, Some("test.PathOnly")).expect("a new JOBDIR"));
    let err = crawler_with_jobdir(&other, None).expect_err("refused");
    assert!(
        err.contains("written with the request fingerprinter test.PathOnly"),
        "{err}"
    );
}

#[test]
fn an_unregistered_fingerprinter_is_refused_at_start() {
    let mut st = Settings::new();
    st.set(
        "REQUEST_FINGERPRINTER_CLASS",
        "no.such.Fingerprinter",
        Priority::Project,
    );
    let err = Crawler::new(
        Box::new(urls(&["http://a.test/"])),
        st,
        ManualClock::new().clock(),
        None,
        Registry::with_builtins(),
    )
    .expect_err("refused");
    assert!(err.to_string().contains("no.such.Fingerprinter"), "{err}");
}

#[test]
fn a_redis_crawl_uses_it_and_refuses_workers_with_another() {
    let redis = RedisServer::start().expect("redis-server is needed for this test");
    let site = trawl::testing::FixtureServer::with_pages(20).expect("fixture");
    let base = |fingerprinter: Option<&str>| -> Vec<(&'static str, Value)> {
        let mut s = vec![
            ("REDIS_URL", json!(redis.url(0))),
            ("SCHEDULER", json!("trawl.RedisScheduler")),
            ("SCHEDULER_PERSIST", json!(true)),
            ("ROBOTSTXT_OBEY", json!(false)),
        ];
        if let Some(f) = fingerprinter {
            s.push(("REQUEST_FINGERPRINTER_CLASS", json!(f)));
        }
        s
    };
    let start = vec![
        util::live::get(&site.url("/index.html?x=1")),
        util::live::get(&site.url("/index.html?x=2")),
    ];
    let run = |fingerprinter: Option<&str>, start: Vec<Request>| {
        let spider = util::live::LiveSpider::new(start).follow(|_| Vec::<Output>::new());
        let mut st = Settings::new();
        st.set("LOGSTATS_INTERVAL", 0, Priority::Project);
        for (k, v) in base(fingerprinter) {
            st.set(k, v, Priority::Project);
        }
        let mut registry = Registry::with_builtins();
        register(&mut registry);
        trawl::distributed::register(&mut registry);
        trawl::crawl::run_spider_with(Box::new(spider), st, registry)
    };
    let crawler = run(Some("test.PathOnly"), start.clone()).expect("the first worker crawls");
    assert_eq!(
        crawler.stats.get_int("response_received_count"),
        1,
        "one of the two spellings, as the fingerprinter says"
    );
    let stored = redis.call(&["SCARD", "live:dupefilter"]).expect("SCARD");
    assert_eq!(stored, trawl::client::redis::Value::Integer(1));
    // A worker with the default fingerprinter would fill the dupefilter with other
    // fingerprints: refused.
    let err = run(None, start).expect_err("refused");
    assert!(
        err.to_string()
            .contains("fingerprints requests with test.PathOnly"),
        "{err}"
    );
}
