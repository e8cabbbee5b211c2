//! Crawls over loopback on the real reactor: a spider that records every response and
//! failure, for middleware tests against the fixture server.
#![allow(dead_code)]

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::Value;
use trawl::crawl::{
    CallbackResult, Crawler, Item, Output, Priority, Registry, Request, Response, Settings, Spider,
    run_spider_with,
};
use trawl::defer::Failure;

type Follow = Box<dyn FnMut(&Response) -> Vec<Output>>;

/// What a live crawl saw.
#[derive(Default)]
pub struct Seen {
    pub responses: RefCell<Vec<Response>>,
    /// (request URL, failure type name, message).
    pub failures: RefCell<Vec<(String, String, String)>>,
    /// The request each errback got, in the same order.
    pub failed_requests: RefCell<Vec<Request>>,
}

impl Seen {
    /// The body of the (first) response whose URL path starts with `path`.
    pub fn body_of(&self, path_prefix: &str) -> Option<String> {
        self.responses
            .borrow()
            .iter()
            .find(|r| r.url().path().starts_with(path_prefix))
            .map(|r| String::from_utf8_lossy(r.body()).into_owned())
    }

    /// Every response's URL path (and query).
    pub fn paths(&self) -> Vec<String> {
        self.responses
            .borrow()
            .iter()
            .map(|r| {
                let u = r.url();
                match u.query() {
                    Some(q) => format!("{}?{q}", u.path()),
                    None => u.path().to_owned(),
                }
            })
            .collect()
    }
}

/// A spider that starts with given requests, records what comes back and follows
/// what `follow` returns.
pub struct LiveSpider {
    pub start: Vec<Request>,
    pub follow: Follow,
    pub seen: Rc<Seen>,
    pub allowed: Vec<String>,
}

impl LiveSpider {
    pub fn new(start: Vec<Request>) -> Self {
        Self {
            start,
            follow: Box::new(|_| Vec::new()),
            seen: Rc::default(),
            allowed: Vec::new(),
        }
    }

    pub fn follow(mut self, f: impl FnMut(&Response) -> Vec<Output> + 'static) -> Self {
        self.follow = Box::new(f);
        self
    }
}

impl Spider for LiveSpider {
    fn name(&self) -> &str {
        "live"
    }
    fn allowed_domains(&self) -> Vec<String> {
        self.allowed.clone()
    }
    fn start(&mut self) -> trawl::crawl::Outputs {
        let start: Vec<Output> = self
            .start
            .drain(..)
            .map(|r| {
                let r = if r.errback().is_none() {
                    r.with_errback("record")
                } else {
                    r
                };
                Output::Request(r)
            })
            .collect();
        trawl::crawl::outputs(start)
    }
    fn callback(&mut self, _name: &str, response: &Response) -> CallbackResult {
        self.seen.responses.borrow_mut().push(response.clone());
        let out = (self.follow)(response)
            .into_iter()
            .map(|o| match o {
                Output::Request(r) if r.errback().is_none() => {
                    Output::Request(r.with_errback("record"))
                }
                other => other,
            })
            .collect();
        Ok(out)
    }
    fn errback(&mut self, _name: &str, failure: &Failure, request: &Request) -> CallbackResult {
        self.seen.failures.borrow_mut().push((
            request.url().to_string(),
            failure.short_type_name().to_owned(),
            failure.to_string(),
        ));
        self.seen.failed_requests.borrow_mut().push(request.clone());
        Ok(Vec::new())
    }
}

/// Runs `spider` to completion with the test defaults plus `settings`.
pub fn crawl(spider: LiveSpider, settings: &[(&str, Value)]) -> (Rc<Crawler>, Rc<Seen>) {
    crawl_with(spider, settings, |_| {})
}

/// [`crawl`] with extra components.
pub fn crawl_with(
    spider: LiveSpider,
    settings: &[(&str, Value)],
    register: impl FnOnce(&mut Registry),
) -> (Rc<Crawler>, Rc<Seen>) {
    let seen = spider.seen.clone();
    let mut st = Settings::new();
    st.set("LOGSTATS_INTERVAL", 0, Priority::Project);
    st.set("DOWNLOAD_TIMEOUT", 10, Priority::Project);
    for (k, v) in settings {
        st.set(k, v.clone(), Priority::Project);
    }
    let mut registry = Registry::with_builtins();
    register(&mut registry);
    let crawler = run_spider_with(Box::new(spider), st, registry).expect("crawl runs");
    (crawler, seen)
}

pub fn get(url: &str) -> Request {
    Request::get(url).expect("test URL")
}

/// Follows every same-host link and yields one item per page.
pub fn follow_site(r: &Response) -> Vec<Output> {
    let host = r.url().host_str().unwrap_or_default().to_owned();
    let mut out: Vec<Output> = r
        .follow_all(r.css("a::attr(href)").getall().iter().map(String::as_str))
        .into_iter()
        .filter(|q| q.url().host_str() == Some(host.as_str()))
        .map(Output::Request)
        .collect();
    out.push(Output::Item(Item::new().with("url", r.url().as_str())));
    out
}

/// The pages fetched, query arguments sorted (`?b=2&a=1` and `?a=1&b=2` are one page,
/// fetched under whichever spelling is found first), as `Site::expected_crawl` lists
/// them.
pub fn page_set(paths: &[String]) -> std::collections::BTreeSet<String> {
    paths
        .iter()
        .map(|p| match p.split_once('?') {
            Some((path, q)) => {
                let mut args: Vec<&str> = q.split('&').collect();
                args.sort_unstable();
                format!("{path}?{}", args.join("&"))
            }
            None => p.clone(),
        })
        .collect()
}
