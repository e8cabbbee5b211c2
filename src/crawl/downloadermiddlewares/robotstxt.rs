//! `RobotsTxtMiddleware` (`ROBOTSTXT_OBEY`): fetches each origin's robots.txt once,
//! through `engine.download` (so through every other middleware: redirects, retries,
//! HttpAuth's domain check), and drops requests it forbids with `IgnoreRequest`.
//!
//! Requests for an origin whose robots.txt is still downloading wait for it (a
//! Deferred), without holding back requests for other origins. What the answer means
//! follows RFC 9309 (Scrapy, through Protego, parses any body it gets):
//!
//! | robots.txt answer | meaning |
//! |---|---|
//! | 2xx | the rules in the body |
//! | 4xx, or a redirect chain that does not end | no rules: everything allowed |
//! | 5xx, or a network error | "unreachable": everything disallowed; fetched again on the first request after `ROBOTSTXT_RETRY_INTERVAL` (60 s) |
//! | `IgnoreRequest` (e.g. offsite) | everything allowed (Scrapy's behaviour) |
//!
//! `ROBOTSTXT_USER_AGENT` (else `USER_AGENT`) selects the group. With
//! `ROBOTSTXT_CRAWL_DELAY` (off by default; Scrapy ignores `Crawl-delay`), the group's
//! `Crawl-delay` becomes the minimum delay of the origin's download slot. Meta
//! `dont_obey_robotstxt` skips the check. Stats: `robotstxt/request_count`,
//! `robotstxt/response_count`, `robotstxt/response_status_count/<code>`,
//! `robotstxt/exception_count/<type>`, `robotstxt/forbidden`, `robotstxt/unreachable`.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use url::Url;

use crate::crawl::base::errors::{IgnoreRequest, NotConfigured};
use crate::crawl::base::signals::{Signal, SignalArgs};
use crate::crawl::context::CrawlContext;
use crate::crawl::core::downloader::middleware::{DownloaderMiddleware, RequestOutcome};
use crate::crawl::http::request::Request;
use crate::crawl::http::request::keys;
use crate::crawl::http::response::Response;
use crate::crawl::util::robots::RobotsTxt;
use crate::defer::{Deferred, Failure};
use crate::util::SeededMap;

/// The priority of robots.txt requests (Scrapy's `DOWNLOAD_PRIORITY`).
pub const ROBOTS_PRIORITY: i32 = 1000;

enum Entry {
    /// Downloading; these wait for the answer.
    Pending(Vec<Deferred<Rc<RobotsTxt>>>),
    /// The answer.
    Ready(Rc<RobotsTxt>),
    /// 5xx or a network error: disallow all until `retry_at` (crawler clock seconds).
    Unreachable { retry_at: f64 },
}

/// Obeys robots.txt.
pub struct RobotsTxtMiddleware {
    ctx: Weak<CrawlContext>,
    user_agent: String,
    crawl_delay: bool,
    retry_interval: f64,
    entries: RefCell<SeededMap<String, Entry>>,
    /// Per unreachable origin: why, and how many requests were dropped because of it.
    unreachable: RefCell<SeededMap<String, (String, u64)>>,
    me: Weak<RobotsTxtMiddleware>,
}

impl std::fmt::Debug for RobotsTxtMiddleware {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RobotsTxtMiddleware")
            .field("user_agent", &self.user_agent)
            .field("origins", &self.entries.borrow().len())
            .finish()
    }
}

fn origin_key(url: &Url) -> Option<String> {
    let mut key = String::new();
    origin_key_into(url, &mut key).then_some(key)
}

/// Writes `url`'s origin key (the scheme, the lower-cased host and the port) into
/// `key`; false when the URL has no host or port.
fn origin_key_into(url: &Url, key: &mut String) -> bool {
    let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
        return false;
    };
    key.clear();
    // One allocation at most: the scheme, the host and up to 5 port digits.
    key.reserve(url.scheme().len() + host.len() + 9);
    key.push_str(url.scheme());
    key.push_str("://");
    key.extend(host.chars().map(|c| c.to_ascii_lowercase()));
    key.push(':');
    // The port's digits without the formatting machinery.
    let mut digits = [0u8; 5];
    let mut n = 5;
    let mut p = port;
    loop {
        n -= 1;
        digits[n] = b'0' + (p % 10) as u8;
        p /= 10;
        if p == 0 || n == 0 {
            break;
        }
    }
    key.extend(digits[n..].iter().map(|&d| char::from(d)));
    true
}

thread_local! {
    /// The buffer a request's origin key is written into to look its robots.txt up
    /// (the key is copied only when the origin is new).
    static KEY: RefCell<String> = const { RefCell::new(String::new()) };
}

impl RobotsTxtMiddleware {
    /// Reads `ROBOTSTXT_OBEY`, `ROBOTSTXT_USER_AGENT` / `USER_AGENT`,
    /// `ROBOTSTXT_CRAWL_DELAY` and `ROBOTSTXT_RETRY_INTERVAL`.
    ///
    /// # Errors
    ///
    /// [`NotConfigured`] when `ROBOTSTXT_OBEY` is off; invalid settings.
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Rc<Self>, Failure> {
        let s = &ctx.settings;
        if !s.get_bool("ROBOTSTXT_OBEY")? {
            return Err(Failure::new(NotConfigured("ROBOTSTXT_OBEY is off".into())));
        }
        let user_agent = match s.get_str("ROBOTSTXT_USER_AGENT")? {
            Some(ua) if !ua.is_empty() => ua,
            _ => s.get_str("USER_AGENT")?.unwrap_or_default(),
        };
        let crawl_delay = s.get_bool("ROBOTSTXT_CRAWL_DELAY")?;
        let retry_interval = s.get_duration("ROBOTSTXT_RETRY_INTERVAL")?;
        Ok(Rc::new_cyclic(|me| Self {
            ctx: Rc::downgrade(ctx),
            user_agent,
            crawl_delay,
            retry_interval,
            entries: RefCell::new(SeededMap::default()),
            unreachable: RefCell::new(SeededMap::default()),
            me: me.clone(),
        }))
        .inspect(|me| {
            let weak = Rc::downgrade(me);
            ctx.signals.connect(Signal::SpiderClosed, move |_| {
                if let Some(me) = weak.upgrade() {
                    me.log_unreachable_summary();
                }
                Ok(())
            });
        })
    }

    fn inc(&self, key: &str) {
        if let Some(c) = self.ctx.upgrade() {
            c.stats.inc(key);
        }
    }

    fn check(
        &self,
        robots: &RobotsTxt,
        url: &Url,
        request: &dyn std::fmt::Display,
    ) -> Result<RequestOutcome, Failure> {
        if robots.allowed(url, &self.user_agent) {
            return Ok(RequestOutcome::Continue);
        }
        if robots.is_disallow_all() {
            // RFC 9309: unreachable means disallowed. Not silent: the first request
            // dropped per origin is logged at INFO with the reason, and every one is
            // counted (and summed up per origin when the spider closes).
            let origin = origin_key(url).unwrap_or_default();
            let first = {
                let mut u = self.unreachable.borrow_mut();
                let entry = u
                    .entry(origin.clone())
                    .or_insert_with(|| ("unknown".to_owned(), 0));
                entry.1 += 1;
                (entry.1 == 1).then(|| entry.0.clone())
            };
            if let Some(reason) = first {
                log::info!(
                    "Forbidden by robots.txt: {origin}/robots.txt is unreachable ({reason}); \
                     its requests are dropped until it is fetched again in {} s (first: {request})",
                    self.retry_interval
                );
            } else {
                log::debug!("Forbidden by robots.txt (unreachable): {request}");
            }
            self.inc("robotstxt/forbidden/unreachable");
        } else {
            log::debug!("Forbidden by robots.txt: {request}");
        }
        self.inc("robotstxt/forbidden");
        Err(Failure::new(IgnoreRequest(
            "Forbidden by robots.txt".into(),
        )))
    }

    /// One INFO line per origin whose unreachable robots.txt dropped requests.
    fn log_unreachable_summary(&self) {
        let mut lines: Vec<(String, String, u64)> = self
            .unreachable
            .borrow()
            .iter()
            .filter(|(_, (_, n))| *n > 0)
            .map(|(o, (r, n))| (o.clone(), r.clone(), *n))
            .collect();
        lines.sort();
        for (origin, reason, n) in lines {
            log::info!("robots.txt of {origin} was unreachable ({reason}): {n} request(s) dropped");
        }
    }

    /// Starts the download of `key`'s robots.txt.
    fn fetch(&self, key: &str, url: &Url) {
        let Some(ctx) = self.ctx.upgrade() else {
            return;
        };
        let Some(engine) = ctx.engine() else {
            // No engine (a unit test): nothing can be fetched; allow.
            self.resolve(key, Rc::new(RobotsTxt::allow_all()), None);
            return;
        };
        let mut robots_url = url.clone();
        robots_url.set_path("/robots.txt");
        robots_url.set_query(None);
        robots_url.set_fragment(None);
        let _ = robots_url.set_username("");
        let _ = robots_url.set_password(None);
        let request = Request::new(robots_url)
            .with_priority(ROBOTS_PRIORITY)
            .with_meta(keys::DONT_OBEY_ROBOTSTXT, true)
            .with_dont_filter(true);
        self.entries
            .borrow_mut()
            .insert(key.to_owned(), Entry::Pending(Vec::new()));
        ctx.stats.inc("robotstxt/request_count");
        let me = self.me.clone();
        let key = key.to_owned();
        let display = request.to_string();
        let _done: Deferred<()> =
            engine
                .download(request)
                .then(move |r: Result<Response, Failure>| {
                    if let Some(me) = me.upgrade() {
                        me.answer(&key, &display, r);
                    }
                    Ok(())
                });
    }

    fn answer(&self, key: &str, request: &str, result: Result<Response, Failure>) {
        match result {
            Ok(resp) => {
                self.inc("robotstxt/response_count");
                if let Some(c) = self.ctx.upgrade() {
                    c.stats
                        .inc_joined("robotstxt/response_status_count/", resp.status());
                }
                let status = resp.status();
                if (200..300).contains(&status) {
                    let robots = RobotsTxt::parse(resp.body());
                    if let Some(c) = self.ctx.upgrade() {
                        c.signals.send_catch_log(
                            Signal::RobotsParsed,
                            SignalArgs::Robots {
                                netloc: key,
                                robots: &robots,
                            },
                        );
                    }
                    let delay = robots.crawl_delay(&self.user_agent);
                    self.resolve(
                        key,
                        Rc::new(robots),
                        delay.map(|d| (d, resp.request().clone())),
                    );
                } else if status >= 500 {
                    log::warn!(
                        "robots.txt {request} answered {status}: disallowing the origin for now"
                    );
                    self.unreachable(key, &format!("HTTP {status}"));
                } else {
                    // 4xx, or a 3xx the redirect middleware did not follow.
                    self.resolve(key, Rc::new(RobotsTxt::allow_all()), None);
                }
            }
            Err(f) if f.check::<IgnoreRequest>() => {
                self.resolve(key, Rc::new(RobotsTxt::allow_all()), None);
            }
            Err(f) => {
                log::error!("Error downloading {request}: {f}");
                if let Some(c) = self.ctx.upgrade() {
                    c.stats
                        .inc_joined("robotstxt/exception_count/", f.short_type_name());
                }
                self.unreachable(key, f.short_type_name());
            }
        }
    }

    fn unreachable(&self, key: &str, reason: &str) {
        self.inc("robotstxt/unreachable");
        self.inc(&format!("robotstxt/unreachable/{reason}"));
        self.unreachable
            .borrow_mut()
            .entry(key.to_owned())
            .or_insert_with(|| (String::new(), 0))
            .0 = reason.to_owned();
        let now = self.ctx.upgrade().map_or(0.0, |c| c.clock().seconds());
        let prev = self.entries.borrow_mut().insert(
            key.to_owned(),
            Entry::Unreachable {
                retry_at: now + self.retry_interval,
            },
        );
        let robots = Rc::new(RobotsTxt::disallow_all());
        if let Some(Entry::Pending(waiters)) = prev {
            for w in waiters {
                let _ = w.callback(robots.clone());
            }
        }
    }

    fn resolve(&self, key: &str, robots: Rc<RobotsTxt>, delay: Option<(f64, Request)>) {
        if let Some((secs, request)) = delay
            && self.crawl_delay
            && let Some(engine) = self.ctx.upgrade().and_then(|c| c.engine())
        {
            let slot = crate::crawl::base::slots::slot_key(&request);
            log::debug!("robots.txt Crawl-delay {secs} s for slot {slot}");
            engine.downloader().set_slot_min_delay(&slot, secs);
        }
        let prev = self
            .entries
            .borrow_mut()
            .insert(key.to_owned(), Entry::Ready(robots.clone()));
        if let Some(Entry::Pending(waiters)) = prev {
            for w in waiters {
                let _ = w.callback(robots.clone());
            }
        }
    }
}

impl DownloaderMiddleware for RobotsTxtMiddleware {
    fn process_request(&self, request: &mut Request) -> Result<RequestOutcome, Failure> {
        if request.meta().get_bool(keys::DONT_OBEY_ROBOTSTXT)
            || !matches!(request.url().scheme(), "http" | "https")
        {
            return Ok(RequestOutcome::Continue);
        }
        // The usual case, an origin whose robots.txt is in: looked up with the key in
        // the thread's buffer, without a copy of it.
        // (A buffer out of reach — borrowed, or the thread ending — takes the slow path.)
        let ready = KEY
            .try_with(|key| {
                let Ok(mut key) = key.try_borrow_mut() else {
                    return Ok(None);
                };
                if !origin_key_into(request.url(), &mut key) {
                    return Err(());
                }
                Ok(match self.entries.borrow().get(key.as_str()) {
                    Some(Entry::Ready(r)) => Some(r.clone()),
                    _ => None,
                })
            })
            .unwrap_or(Ok(None));
        match ready {
            Err(()) => return Ok(RequestOutcome::Continue),
            Ok(Some(robots)) => return self.check(&robots, request.url(), request),
            Ok(None) => {}
        }
        let Some(key) = origin_key(request.url()) else {
            return Ok(RequestOutcome::Continue);
        };
        let now = self.ctx.upgrade().map_or(0.0, |c| c.clock().seconds());
        let state = match self.entries.borrow().get(&key) {
            Some(Entry::Ready(r)) => Some(Ok(r.clone())),
            Some(Entry::Unreachable { retry_at }) if now < *retry_at => {
                Some(Ok(Rc::new(RobotsTxt::disallow_all())))
            }
            Some(Entry::Pending(_)) => Some(Err(())),
            _ => None,
        };
        let wait = match state {
            Some(Ok(robots)) => return self.check(&robots, request.url(), request),
            Some(Err(())) => true,
            None => false,
        };
        if !wait {
            self.fetch(&key, request.url());
        }
        // The fetch may have answered at once (a cached or failed download).
        if let Some(Entry::Ready(r)) = self.entries.borrow().get(&key) {
            return self.check(r, request.url(), request);
        }
        let d: Deferred<Rc<RobotsTxt>> = Deferred::new();
        match self.entries.borrow_mut().get_mut(&key) {
            Some(Entry::Pending(waiters)) => waiters.push(d.clone()),
            _ => {
                let _ = d.callback(Rc::new(RobotsTxt::disallow_all()));
            }
        }
        let me = self.me.clone();
        let url = request.url().clone();
        let display = request.to_string();
        Ok(RequestOutcome::Wait(d.then(
            move |r: Result<Rc<RobotsTxt>, Failure>| match (r, me.upgrade()) {
                (Ok(robots), Some(me)) => me.check(&robots, &url, &display),
                (Ok(_), None) => Ok(RequestOutcome::Continue),
                (Err(f), _) => Err(f),
            },
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_keys_name_scheme_host_and_port() {
        // The key the formatting machinery wrote before (scheme, lower-cased host,
        // port in decimal), for every port width, default ports and IP hosts; a
        // reused buffer holds nothing of the previous key.
        let mut buf = String::from("stale");
        for (url, want) in [
            ("http://Example.COM/x", "http://example.com:80"),
            ("https://a.test/", "https://a.test:443"),
            ("http://a.test:0/", "http://a.test:0"),
            ("http://a.test:7/", "http://a.test:7"),
            ("http://a.test:10/", "http://a.test:10"),
            ("http://a.test:808/", "http://a.test:808"),
            ("http://127.0.0.1:8089/s", "http://127.0.0.1:8089"),
            ("http://[::1]:65535/", "http://[::1]:65535"),
            ("ftp://f.test/", "ftp://f.test:21"),
        ] {
            let u = Url::parse(url).expect("test URL");
            assert_eq!(origin_key(&u).as_deref(), Some(want), "{url}");
            assert!(origin_key_into(&u, &mut buf));
            assert_eq!(buf, want, "{url}");
        }
        let no_host = Url::parse("data:text/plain,x").expect("test URL");
        assert_eq!(origin_key(&no_host), None);
    }
}
