//! Engine test harness: a crawler on a ManualClock with a scripted download handler
//! (no sockets), and a spider built from closures.
#![allow(dead_code)]

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;
use trawl::crawl::downloader::handlers::DownloadHandler;
use trawl::crawl::{
    CallbackResult, Crawler, Output, Priority, Registry, Request, Response, Settings, Spider,
};
use trawl::defer::Deferred;
use trawl::proto::Headers;
use trawl::reactor::{Clock, ManualClock};
use trawl::task::defer_later;

/// How the scripted handler answers one URL.
#[derive(Clone)]
pub struct Answer {
    pub delay: f64,
    pub status: u16,
    pub body: Vec<u8>,
    /// Fail the download with this message instead (after `delay`).
    pub fail: Option<String>,
    /// Extra response headers.
    pub headers: Vec<(String, String)>,
    /// Panic in `download_request` with this message (a handler's bug).
    pub panic: Option<String>,
}

impl Default for Answer {
    fn default() -> Self {
        Self {
            delay: 0.1,
            status: 200,
            body: b"<html><body>ok</body></html>".to_vec(),
            fail: None,
            headers: Vec::new(),
            panic: None,
        }
    }
}

/// Scripted answers and a log of when each download started.
#[derive(Default)]
pub struct Script {
    pub answers: RefCell<HashMap<String, Answer>>,
    pub default: RefCell<Answer>,
    pub started: RefCell<Vec<(f64, String)>>,
    /// What the handler's "DNS cache" holds (for `CONCURRENT_REQUESTS_PER_IP`).
    pub ips: RefCell<HashMap<String, std::net::IpAddr>>,
    /// Answers given once each, in order, before `answers`.
    pub once: RefCell<HashMap<String, std::collections::VecDeque<Answer>>>,
}

impl Script {
    pub fn set(&self, url: &str, answer: Answer) {
        self.answers.borrow_mut().insert(url.to_owned(), answer);
    }

    /// Answers `url` once with `answer` (queued before the standing answer).
    pub fn once(&self, url: &str, answer: Answer) {
        self.once
            .borrow_mut()
            .entry(url.to_owned())
            .or_default()
            .push_back(answer);
    }

    pub fn started_urls(&self) -> Vec<String> {
        self.started
            .borrow()
            .iter()
            .map(|(_, u)| u.clone())
            .collect()
    }
}

struct ScriptedHandler {
    script: Rc<Script>,
    clock: Clock,
}

impl DownloadHandler for ScriptedHandler {
    fn cached_ip(&self, host: &str) -> Option<std::net::IpAddr> {
        self.script.ips.borrow().get(host).copied()
    }

    fn download_request(&self, request: &Request) -> Deferred<Response> {
        let url = request.url().as_str().to_owned();
        self.script
            .started
            .borrow_mut()
            .push((self.clock.seconds(), url.clone()));
        let queued = self
            .script
            .once
            .borrow_mut()
            .get_mut(&url)
            .and_then(std::collections::VecDeque::pop_front);
        let answer = queued.unwrap_or_else(|| {
            self.script
                .answers
                .borrow()
                .get(&url)
                .cloned()
                .unwrap_or_else(|| self.script.default.borrow().clone())
        });
        if let Some(message) = &answer.panic {
            panic!("{message}");
        }
        let mut req = request.clone();
        // Like the HTTP handler: the latency is the time to the response.
        req.meta_mut().insert("download_latency", answer.delay);
        defer_later(&self.clock, answer.delay, move || {
            if let Some(message) = answer.fail {
                return Err(trawl::defer::Failure::msg(message));
            }
            let mut h = Headers::new();
            h.append("Content-Type", "text/html");
            for (name, value) in &answer.headers {
                h.append(name, value.as_str());
            }
            Ok(Response::new(req, answer.status, h, answer.body))
        })
    }
}

type StartFn = Box<dyn FnMut() -> Box<dyn Iterator<Item = Output>>>;
type ParseFn = Box<dyn FnMut(&str, &Response) -> CallbackResult>;

/// A spider made of closures.
pub struct FnSpider {
    pub start: StartFn,
    pub parse: ParseFn,
    pub closed_with: Rc<RefCell<Option<String>>>,
    pub allowed: Vec<String>,
}

impl FnSpider {
    pub fn new(
        start: impl FnMut() -> Box<dyn Iterator<Item = Output>> + 'static,
        parse: impl FnMut(&str, &Response) -> CallbackResult + 'static,
    ) -> Self {
        Self {
            start: Box::new(start),
            parse: Box::new(parse),
            closed_with: Rc::default(),
            allowed: Vec::new(),
        }
    }

    /// Start URLs, and a parse that yields nothing.
    pub fn urls(urls: Vec<String>) -> Self {
        Self::new(
            move || {
                let urls = urls.clone();
                Box::new(
                    urls.into_iter()
                        .map(|u| Output::Request(Request::get(&u).unwrap())),
                )
            },
            |_, _| Ok(Vec::new()),
        )
    }
}

impl Spider for FnSpider {
    fn name(&self) -> &str {
        "test"
    }
    fn allowed_domains(&self) -> Vec<String> {
        self.allowed.clone()
    }
    fn start(&mut self) -> trawl::crawl::Outputs {
        Box::new((self.start)().map(Ok))
    }
    fn callback(&mut self, name: &str, response: &Response) -> CallbackResult {
        (self.parse)(name, response)
    }
    fn closed(&mut self, reason: &str) {
        *self.closed_with.borrow_mut() = Some(reason.to_owned());
    }
}

pub struct Harness {
    pub clock: ManualClock,
    pub crawler: Rc<Crawler>,
    pub done: Deferred<()>,
    pub script: Rc<Script>,
}

/// A crawl on a manual clock. `settings` override the defaults (project priority);
/// `register` may add components.
pub fn harness(
    spider: impl Spider + 'static,
    settings: &[(&str, Value)],
    register: impl FnOnce(&mut Registry),
) -> Harness {
    let clock = ManualClock::new();
    let script = Rc::new(Script::default());
    let mut registry = Registry::with_builtins();
    let (s, c) = (script.clone(), clock.clock());
    registry.register_handler("test.Scripted", move |_| {
        Ok(Rc::new(ScriptedHandler {
            script: s.clone(),
            clock: c.clone(),
        }) as Rc<dyn DownloadHandler>)
    });
    register(&mut registry);
    let mut st = Settings::new();
    st.set(
        "DOWNLOAD_HANDLERS",
        serde_json::json!({"http": "test.Scripted", "https": "test.Scripted"}),
        Priority::Project,
    );
    st.set("LOGSTATS_INTERVAL", 0, Priority::Project);
    // Engine tests script every download; robots.txt has its own tests.
    st.set("ROBOTSTXT_OBEY", false, Priority::Project);
    st.set("RANDOMIZE_DOWNLOAD_DELAY", false, Priority::Project);
    for (k, v) in settings {
        st.set(k, v.clone(), Priority::Project);
    }
    let crawler = Crawler::new(Box::new(spider), st, clock.clock(), None, registry).unwrap();
    let done = crawler.crawl();
    Harness {
        clock,
        crawler,
        done,
        script,
    }
}

impl Harness {
    pub fn stat(&self, key: &str) -> i64 {
        self.crawler.stats.get_int(key)
    }

    pub fn engine(&self) -> Rc<trawl::crawl::engine::ExecutionEngine> {
        self.crawler.engine().expect("engine running")
    }

    /// Advances in small steps until the crawl finished (or `max` seconds pass).
    pub fn run(&self, max: f64) -> bool {
        let mut t = 0.0;
        while t < max {
            if self.done.has_result() {
                return true;
            }
            self.clock.advance(0.05);
            t += 0.05;
        }
        self.done.has_result()
    }
}
