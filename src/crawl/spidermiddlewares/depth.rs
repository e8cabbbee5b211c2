//! Scrapy's `DepthMiddleware` (`scrapy.spidermiddlewares.depth`), processing outputs
//! one at a time ([`SpiderMiddleware::per_output`]).

use std::rc::{Rc, Weak};

use crate::crawl::context::CrawlContext;
use crate::crawl::core::spidermw::SpiderMiddleware;
use crate::crawl::http::request::Request;
use crate::crawl::http::request::keys;
use crate::crawl::http::response::Response;
use crate::crawl::spiders::outputs::{Output, Outputs};
use crate::defer::Failure;

/// Tracks request depth in meta `depth`, drops requests past `DEPTH_LIMIT`, adjusts
/// priority by `DEPTH_PRIORITY`, and records `request_depth_max`,
/// `depth/request_ignored_count` and (with `DEPTH_STATS_VERBOSE`)
/// `request_depth_count/<n>` — Scrapy 2.19's `DepthMiddleware`, including the
/// `depth_reset` meta key (a request with `depth_reset: true` gets depth 0; the key is
/// consumed so that it does not spread through meta copies).
#[derive(Debug)]
pub struct DepthMiddleware {
    config: Rc<DepthConfig>,
}

#[derive(Debug)]
struct DepthConfig {
    ctx: Weak<CrawlContext>,
    max_depth: i64,
    priority: i64,
    verbose: bool,
    ignored_logged: std::cell::Cell<bool>,
}

impl DepthMiddleware {
    /// Reads the settings.
    ///
    /// # Errors
    ///
    /// Invalid settings.
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Self, Failure> {
        let s = &ctx.settings;
        Ok(Self {
            config: Rc::new(DepthConfig {
                ctx: Rc::downgrade(ctx),
                max_depth: s.get_int("DEPTH_LIMIT")?,
                priority: s.get_int("DEPTH_PRIORITY")?,
                verbose: s.get_bool("DEPTH_STATS_VERBOSE")?,
                ignored_logged: std::cell::Cell::new(false),
            }),
        })
    }
}

impl DepthConfig {
    /// Scrapy's `get_processed_request` for a request yielded from a response at
    /// `parent_depth`: `false` drops it.
    fn process_request(
        &self,
        r: &mut Request,
        parent_depth: i64,
        c: Option<&CrawlContext>,
    ) -> bool {
        let reset = r.meta().get(keys::DEPTH_RESET).is_some()
            && r.meta_mut()
                .remove(keys::DEPTH_RESET)
                .is_some_and(|v| truthy(&v));
        let depth = if reset { 0 } else { parent_depth + 1 };
        r.meta_mut().insert_static(keys::DEPTH, depth);
        if self.priority != 0 {
            let p = i64::from(r.priority()) - depth * self.priority;
            r.set_priority(i32::try_from(p).unwrap_or(if p < 0 { i32::MIN } else { i32::MAX }));
        }
        // Scrapy: `if self.maxdepth and depth > self.maxdepth` (a negative limit drops all).
        if self.max_depth != 0 && depth > self.max_depth {
            if !self.ignored_logged.replace(true) {
                log::debug!(
                    "Ignoring link (depth > {}): {} - no more ignored links will be shown",
                    self.max_depth,
                    r.url_str()
                );
            }
            if let Some(c) = c {
                c.stats.inc("depth/request_ignored_count");
            }
            return false;
        }
        if let Some(c) = c {
            if self.verbose {
                c.stats.inc(&format!("request_depth_count/{depth}"));
            }
            c.stats.max_value("request_depth_max", depth);
        }
        true
    }
}

/// Python's truthiness of a meta value.
fn truthy(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Null => false,
        serde_json::Value::Bool(b) => *b,
        serde_json::Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        serde_json::Value::String(s) => !s.is_empty(),
        serde_json::Value::Array(a) => !a.is_empty(),
        serde_json::Value::Object(o) => !o.is_empty(),
    }
}

/// Removes the `depth_reset` key from a start request (Scrapy consumes it there too).
fn pop_depth_reset(r: &mut Request) {
    if r.meta().get(keys::DEPTH_RESET).is_some() {
        r.meta_mut().remove(keys::DEPTH_RESET);
    }
}

/// [`pop_depth_reset`] on each request of `outputs`.
fn pop_depth_resets(outputs: Outputs) -> Outputs {
    Box::new(outputs.map(|o| {
        o.map(|mut o| {
            if let Output::Request(r) = &mut o {
                pop_depth_reset(r);
            }
            o
        })
    }))
}

impl SpiderMiddleware for DepthMiddleware {
    /// One output at a time, except with `DEPTH_STATS_VERBOSE`: Scrapy then counts
    /// `request_depth_count/0` once for each page without a depth, even one that yields
    /// nothing — a step per page that only `process_spider_output` is given.
    fn per_output(&self) -> bool {
        !self.config.verbose
    }

    fn get_processed_request(&self, r: &mut Request, response: Option<&Response>) -> bool {
        let Some(response) = response else {
            // No response (start requests, an errback's output): Scrapy passes these by
            // its spider middlewares; they only lose `depth_reset`.
            pop_depth_reset(r);
            return true;
        };
        let parent_depth = response.meta().get_i64(keys::DEPTH).unwrap_or(0);
        let ctx = self.config.ctx.upgrade();
        self.config.process_request(r, parent_depth, ctx.as_deref())
    }

    fn process_spider_output(
        &self,
        response: Option<&Response>,
        _request: &Request,
        outputs: Outputs,
    ) -> Outputs {
        let Some(response) = response else {
            return pop_depth_resets(outputs);
        };
        let config = self.config.clone();
        let parent_depth = match response.meta().get_i64(keys::DEPTH) {
            Some(depth) => depth,
            None => {
                if config.verbose
                    && let Some(c) = config.ctx.upgrade()
                {
                    c.stats.inc("request_depth_count/0");
                }
                0
            }
        };
        Box::new(outputs.filter_map(move |o| match o {
            Ok(Output::Request(mut r)) => {
                let ctx = config.ctx.upgrade();
                config
                    .process_request(&mut r, parent_depth, ctx.as_deref())
                    .then_some(Ok(Output::Request(r)))
            }
            other => Some(other),
        }))
    }

    fn process_start(&self, start: Outputs) -> Outputs {
        pop_depth_resets(start)
    }
}
