//! [`RedisSpider`]: any [`Spider`] fed from Redis, as scrapy-redis's `RedisSpider` /
//! `RedisCrawlSpider` (wrap a `CrawlSpider` for the latter).
//!
//! Start requests come from `REDIS_START_URLS_KEY` (`%(name)s:start_urls`): a LIST by
//! default (a batch taken from the head with `LRANGE`+`LTRIM`), a SET with
//! `REDIS_START_URLS_AS_SET` (`SPOP`), a sorted set with `REDIS_START_URLS_AS_ZSET`
//! (highest scores first), in batches of `REDIS_START_URLS_BATCH_SIZE` (default
//! `CONCURRENT_REQUESTS`). A batch is fetched when the spider starts — from `start()`,
//! so the first batch does not wait for an idle signal — and on every `spider_idle`,
//! where the spider raises `DontCloseSpider` until it has been idle for
//! `MAX_IDLE_TIME_BEFORE_CLOSE` seconds (0, the default: never). Idle time counts from
//! the last time anything happened — a start URL seen, a response received — not, as
//! in scrapy-redis, only from the last start URL.
//!
//! Payloads are read like scrapy-redis's `make_request_from_data`: a JSON object with
//! `url` and optionally `method` and `meta` (other keys become form data: the query of
//! a GET, an urlencoded body for other methods), or else plain text taken as a URL.
//! Every start request has `dont_filter`. A payload that is neither is logged, counted
//! (`redis/start_urls/bad`), moved to `<key>:bad`, and the crawl goes on.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use serde_json::Value as Json;

use super::shared::{REDIS_START_URLS_KEY, SharedRedis, format_key, setting_str, shared_client};
use crate::client::redis::Value;
use crate::client::redis::handle::Topology;
use crate::crawl::context::CrawlContext;
use crate::crawl::errors::DontCloseSpider;
use crate::crawl::request::Request;
use crate::crawl::response::Response;
use crate::crawl::settings::Settings;
use crate::crawl::signals::Signal;
use crate::crawl::spiders::{CallbackResult, Output, Spider};
use crate::defer::Failure;

/// Which Redis type the start key is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartKind {
    /// A LIST (the default).
    List,
    /// A SET (`REDIS_START_URLS_AS_SET`).
    Set,
    /// A sorted set (`REDIS_START_URLS_AS_ZSET`).
    Zset,
}

impl StartKind {
    fn name(self) -> &'static str {
        match self {
            Self::List => "list",
            Self::Set => "set",
            Self::Zset => "zset",
        }
    }
}

/// Turns a start-URL payload into a request, as scrapy-redis 0.9.1's
/// `make_request_from_data` does.
///
/// # Errors
///
/// A JSON value that is not an object, an object without a `url` string, a form
/// value that is not a string, or a URL that does not parse.
pub fn make_request_from_data(data: &[u8]) -> Result<Request, String> {
    let text = String::from_utf8_lossy(data);
    let text = text.trim();
    let Ok(json) = serde_json::from_str::<Json>(text) else {
        let r = Request::get(text).map_err(|e| format!("not JSON and not a URL: {e}"))?;
        return Ok(r.with_dont_filter(true));
    };
    let Json::Object(mut obj) = json else {
        return Err("JSON that is not an object".into());
    };
    let url = match obj.shift_remove("url") {
        Some(Json::String(u)) => u,
        _ => return Err("a JSON object without a \"url\" string".into()),
    };
    let method = match obj.shift_remove("method") {
        Some(Json::String(m)) if !m.is_empty() => m.to_ascii_uppercase(),
        _ => "GET".to_owned(),
    };
    let meta = match obj.shift_remove("meta") {
        Some(Json::Object(m)) => m,
        None | Some(Json::Null) => serde_json::Map::new(),
        Some(_) => return Err("\"meta\" is not an object".into()),
    };
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    let mut any = false;
    for (k, v) in &obj {
        let Json::String(v) = v else {
            return Err(format!("form value {k:?} is not a string"));
        };
        form.append_pair(k, v);
        any = true;
    }
    let form = form.finish();
    let mut parsed = url::Url::parse(&url).map_err(|e| format!("bad url {url:?}: {e}"))?;
    let mut r = if method == "GET" {
        if any {
            parsed.set_query(Some(&form));
        }
        Request::new(parsed)
    } else {
        let mut r = Request::new(parsed).with_method(&method);
        if any {
            r = r
                .with_body(form.into_bytes())
                .with_header("Content-Type", "application/x-www-form-urlencoded");
        }
        r
    };
    for (k, v) in meta {
        r.meta_mut().insert(&k, v);
    }
    Ok(r.with_dont_filter(true))
}

/// What feeds the spider (shared with its `spider_idle` handler).
struct Feeder {
    ctx: Weak<CrawlContext>,
    shared: Rc<SharedRedis>,
    key: String,
    queue_key: String,
    kind: StartKind,
    batch: usize,
    max_idle: f64,
    fetching: Cell<bool>,
    last_active: Cell<f64>,
    last_responses: Cell<i64>,
    me: Weak<Feeder>,
}

impl Feeder {
    fn now(&self) -> f64 {
        self.ctx.upgrade().map_or(0.0, |c| c.clock().seconds())
    }

    /// Pushes the seed URLs once per crawl (before the first fetch, on the same
    /// connection, so the fetch sees them).
    fn seed(&self, urls: Vec<String>) {
        let meta = format!("{}:meta", self.queue_key);
        let (shared, key, kind) = (self.shared.clone(), self.key.clone(), self.kind);
        let _ = self.shared.client.when_ready().then(move |t| {
            let scripts = super::scripts::scripts();
            let mut argv: Vec<&str> = vec![kind.name()];
            argv.extend(urls.iter().map(String::as_str));
            let client = &shared.client;
            let pushed = if t.ok() == Some(Topology::Cluster) {
                // The start key and the crawl's record live on different slots: mark
                // the crawl as seeded first, then push (with the start key as its own
                // "meta", which is never a hash: `SEED` then always pushes).
                let (handle, key2) = (client.clone(), key.clone());
                let argv: Vec<String> = argv.iter().map(|a| (*a).to_owned()).collect();
                client
                    .eval(&scripts.seed_mark, &[&meta], &[&key])
                    .then(move |r| match r {
                        Ok(v) if v.as_int() == Some(1) => {
                            handle.eval(&scripts.seed, &[&key2, &key2], &argv)
                        }
                        Ok(_) => crate::defer::succeed(Value::Integer(0)),
                        Err(f) => crate::defer::fail(f),
                    })
            } else {
                client.eval(&scripts.seed, &[&key, &meta], &argv)
            };
            pushed.then(move |r| {
                match r {
                    Ok(v) if v.as_int() > Some(0) => {
                        log::info!("Pushed {} start URLs to {key}", v.as_int().unwrap_or(0));
                    }
                    Ok(_) => log::info!("Start URLs already pushed to {key} for this crawl"),
                    Err(f) => log::error!("Cannot push the start URLs to {key}: {f}"),
                }
                Ok::<(), Failure>(())
            })
        });
    }

    /// Takes a batch of start payloads and schedules their requests.
    fn fetch(&self) {
        if self.fetching.replace(true) {
            return;
        }
        let scripts = super::scripts::scripts();
        let n = self.batch.to_string();
        let d = self.shared.client.eval(
            &scripts.fetch_start,
            &[&self.key],
            &[self.kind.name(), n.as_str()],
        );
        let me = self.me.clone();
        let _ = d.then(move |r| {
            if let Some(f) = me.upgrade() {
                f.fetched(r);
            }
            Ok::<(), Failure>(())
        });
    }

    fn fetched(&self, r: Result<Value, Failure>) {
        self.fetching.set(false);
        let Some(ctx) = self.ctx.upgrade() else {
            return;
        };
        let values = match r {
            Ok(Value::Array(a)) => a,
            Ok(other) => {
                log::error!("Unexpected reply reading {}: {other:?}", self.key);
                return;
            }
            Err(f) => {
                log::warn!("Cannot read start URLs from {}: {f}", self.key);
                return;
            }
        };
        if values.first().and_then(Value::as_int).unwrap_or(0) > 0 {
            log::error!(
                "Redis key {} was not a {}: its DUMP was moved to {}:bad",
                self.key,
                self.kind.name(),
                self.key
            );
            ctx.stats.inc("redis/start_urls/wrong_type");
        }
        let left = values.get(1).and_then(Value::as_int).unwrap_or(0);
        let mut requests = Vec::new();
        let mut bad: Vec<Vec<u8>> = Vec::new();
        for v in values.into_iter().skip(2) {
            let Value::Bulk(data) = v else { continue };
            match make_request_from_data(&data) {
                Ok(r) => requests.push(r),
                Err(e) => {
                    log::error!(
                        "Bad start payload in {} ({e}): {:?}; moved to {}:bad",
                        self.key,
                        String::from_utf8_lossy(&data[..data.len().min(80)]),
                        self.key
                    );
                    bad.push(data);
                }
            }
        }
        if !bad.is_empty() {
            ctx.stats
                .inc_value("redis/start_urls/bad", bad.len() as i64);
            let bad_key = format!("{}:bad", self.key);
            let mut args: Vec<&[u8]> = vec![b"RPUSH", bad_key.as_bytes()];
            args.extend(bad.iter().map(Vec::as_slice));
            let _ = self.shared.client.command(&args).add_errback(|f| {
                log::error!("Cannot store bad start payloads: {f}");
                Ok(Value::Nil)
            });
        }
        if !requests.is_empty() || left > 0 {
            self.last_active.set(self.now());
        }
        if !requests.is_empty() {
            log::debug!("Read {} requests from {}", requests.len(), self.key);
            ctx.stats
                .inc_value("redis/start_urls/read", requests.len() as i64);
        }
        if let Some(engine) = ctx.engine() {
            for r in requests {
                engine.crawl(r);
            }
            if left > 0 {
                // More waiting: read on without waiting for idleness.
                self.fetch();
            }
        }
    }

    /// `spider_idle`: fetch, and keep the spider open until idle long enough.
    fn on_idle(&self) -> Result<(), Failure> {
        let now = self.now();
        if let Some(ctx) = self.ctx.upgrade() {
            let responses = ctx.stats.get_int("response_received_count");
            if responses != self.last_responses.replace(responses) {
                self.last_active.set(now);
            }
        }
        self.fetch();
        if self.max_idle > 0.0 && now - self.last_active.get() >= self.max_idle {
            log::info!(
                "Idle for {:.0} s (MAX_IDLE_TIME_BEFORE_CLOSE): closing",
                now - self.last_active.get()
            );
            return Ok(());
        }
        Err(Failure::new(DontCloseSpider))
    }
}

/// scrapy-redis's `RedisCrawlSpider`: a [`RedisSpider`] around a
/// [`CrawlSpider`](crate::crawl::CrawlSpider) — the rules parse and follow, Redis feeds
/// the start (`RedisSpider::new(Box::new(CrawlSpider::new(inner, rules)))`; the
/// `trawl crawl --redis` command is one).
pub type RedisCrawlSpider = RedisSpider;

/// A spider whose start requests come from Redis.
pub struct RedisSpider {
    inner: Box<dyn Spider>,
    key_override: Option<String>,
    batch_override: Option<usize>,
    seeds: Vec<String>,
    feeder: Option<Rc<Feeder>>,
}

impl std::fmt::Debug for RedisSpider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSpider")
            .field("name", &self.inner.name())
            .field("key", &self.feeder.as_ref().map(|f| f.key.clone()))
            .finish_non_exhaustive()
    }
}

impl RedisSpider {
    /// Wraps `inner`: its callbacks parse, Redis supplies the start requests (its own
    /// `start()` and `start_urls` are not used).
    pub fn new(inner: Box<dyn Spider>) -> Self {
        Self {
            inner,
            key_override: None,
            batch_override: None,
            seeds: Vec::new(),
            feeder: None,
        }
    }

    /// Reads from `key` (scrapy-redis's `redis_key` attribute) instead of
    /// `REDIS_START_URLS_KEY`.
    pub fn with_key(mut self, key: &str) -> Self {
        self.key_override = Some(key.to_owned());
        self
    }

    /// Batches of `n` (scrapy-redis's `redis_batch_size`).
    pub fn with_batch_size(mut self, n: usize) -> Self {
        self.batch_override = Some(n.max(1));
        self
    }

    /// Pushes `urls` to the start key when the crawl starts — once per crawl, however
    /// many workers are started with them (`trawl crawl --redis URL...`).
    pub fn with_seeds(mut self, urls: Vec<String>) -> Self {
        self.seeds = urls;
        self
    }

    /// The start key, once the crawl has set the spider up.
    pub fn key(&self) -> Option<&str> {
        self.feeder.as_ref().map(|f| f.key.as_str())
    }

    fn setup(&mut self, ctx: &Rc<CrawlContext>) -> Result<(), Failure> {
        let s = &ctx.settings;
        let template = match &self.key_override {
            Some(k) => k.clone(),
            None => setting_str(s, "REDIS_START_URLS_KEY", REDIS_START_URLS_KEY)?,
        };
        let key = format_key(&template, self.inner.name());
        if key.is_empty() {
            return Err(Failure::msg("the Redis start-URL key is empty"));
        }
        let kind = if s.get_bool("REDIS_START_URLS_AS_SET")? {
            StartKind::Set
        } else if s.get_bool("REDIS_START_URLS_AS_ZSET")? {
            StartKind::Zset
        } else {
            StartKind::List
        };
        let batch = match self.batch_override {
            Some(n) => n,
            None if s.get("REDIS_START_URLS_BATCH_SIZE").is_some() => {
                s.get_usize("REDIS_START_URLS_BATCH_SIZE")?.max(1)
            }
            None => s.get_usize("CONCURRENT_REQUESTS")?.max(1),
        };
        let max_idle = if s.get("MAX_IDLE_TIME_BEFORE_CLOSE").is_some() {
            s.get_duration("MAX_IDLE_TIME_BEFORE_CLOSE")?
        } else {
            0.0
        };
        let queue_key = format_key(
            &setting_str(s, "SCHEDULER_QUEUE_KEY", super::shared::SCHEDULER_QUEUE_KEY)?,
            self.inner.name(),
        );
        let shared = shared_client(ctx)?;
        shared
            .client
            .load_script(&super::scripts::scripts().fetch_start);
        shared.client.load_script(&super::scripts::scripts().seed);
        let feeder = Rc::new_cyclic(|me| Feeder {
            ctx: Rc::downgrade(ctx),
            shared,
            key,
            queue_key,
            kind,
            batch,
            max_idle,
            fetching: Cell::new(false),
            last_active: Cell::new(ctx.clock().seconds()),
            last_responses: Cell::new(0),
            me: me.clone(),
        });
        let weak = Rc::downgrade(&feeder);
        ctx.signals
            .connect(Signal::SpiderIdle, move |_| match weak.upgrade() {
                Some(f) => f.on_idle(),
                None => Ok(()),
            });
        self.feeder = Some(feeder);
        Ok(())
    }
}

/// `start()`: pushes the seeds and fetches the first batch when first pulled; yields
/// nothing itself (the batch arrives through `engine.crawl`).
struct StartFetch {
    feeder: Option<Rc<Feeder>>,
    seeds: Vec<String>,
}

impl Iterator for StartFetch {
    type Item = Output;

    fn next(&mut self) -> Option<Output> {
        if let Some(f) = self.feeder.take() {
            if !self.seeds.is_empty() {
                f.seed(std::mem::take(&mut self.seeds));
            }
            f.fetch();
        }
        None
    }
}

thread_local! {
    /// Setup errors, reported when the crawl starts (`set_context` cannot fail).
    static SETUP_ERROR: RefCell<Option<String>> = const { RefCell::new(None) };
}

impl Spider for RedisSpider {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn allowed_domains(&self) -> Vec<String> {
        self.inner.allowed_domains()
    }

    fn handle_httpstatus_list(&self) -> Option<Vec<u16>> {
        self.inner.handle_httpstatus_list()
    }

    fn custom_settings(&self) -> Vec<(String, serde_json::Value)> {
        self.inner.custom_settings()
    }

    fn start(&mut self) -> crate::crawl::Outputs {
        // Lazily: the engine creates the iterator before the scheduler opens, and
        // the seeds must follow the scheduler's OPEN on the connection.
        match &self.feeder {
            Some(f) => Box::new(
                StartFetch {
                    feeder: Some(f.clone()),
                    seeds: std::mem::take(&mut self.seeds),
                }
                .map(Ok),
            ),
            None => {
                let why = SETUP_ERROR.with(|e| e.borrow_mut().take());
                log::error!(
                    "The Redis-fed spider is not connected to Redis{}",
                    why.map(|w| format!(": {w}")).unwrap_or_default()
                );
                Box::new(std::iter::empty())
            }
        }
    }

    fn callback(&mut self, name: &str, response: &Response) -> CallbackResult {
        self.inner.callback(name, response)
    }

    fn callback_outputs(
        &mut self,
        name: &str,
        response: &Response,
    ) -> Result<crate::crawl::Outputs, Failure> {
        self.inner.callback_outputs(name, response)
    }

    fn parse(&mut self, response: &Response) -> CallbackResult {
        self.inner.parse(response)
    }

    fn errback(&mut self, name: &str, failure: &Failure, request: &Request) -> CallbackResult {
        self.inner.errback(name, failure, request)
    }

    fn settings_ready(&mut self, settings: &Settings) {
        self.inner.settings_ready(settings);
    }

    fn set_context(&mut self, ctx: &Rc<CrawlContext>) {
        if let Err(f) = self.setup(ctx) {
            log::error!("Cannot set up the Redis-fed spider: {f}");
            SETUP_ERROR.with(|e| *e.borrow_mut() = Some(f.to_string()));
        }
        self.inner.set_context(ctx);
    }

    fn opened(&mut self) {
        self.inner.opened();
    }

    fn closed(&mut self, reason: &str) {
        self.inner.closed(reason);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_as_scrapy_redis_reads_them() {
        let r = make_request_from_data(b"http://h.test/a").expect("plain url");
        assert_eq!(r.url().as_str(), "http://h.test/a");
        assert!(r.dont_filter());
        let r =
            make_request_from_data(br#"{"url": "http://h.test/get?x=0", "c": "2"}"#).expect("json");
        assert_eq!(r.url().as_str(), "http://h.test/get?c=2");
        let r = make_request_from_data(
            br#"{"url": "http://h.test/p", "method": "post", "a": "1", "b": "x y", "meta": {"k": 1}}"#,
        )
        .expect("post");
        assert_eq!(r.method().as_str(), "POST");
        assert_eq!(r.body(), b"a=1&b=x+y");
        assert_eq!(r.meta().get_i64("k"), Some(1));
        for bad in [
            &br#"{"nourl": 1}"#[..],
            b"123",
            br#""http://h.test/""#,
            br#"{"url": "http://h/", "n": 5}"#,
            b"not a url at all",
        ] {
            assert!(
                make_request_from_data(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
