//! [`CrawlSpider`] and [`Rule`]: Scrapy's rule-driven spider
//! (`scrapy.spiders.CrawlSpider`), as a wrapper around any [`Spider`].
//!
//! The wrapped spider supplies the name, domains, start URLs or `start()`, and the
//! callbacks that rules name; the wrapper follows links. For every HTML response of a
//! start URL or of a rule's request, each rule's `LinkExtractor` runs in rule order;
//! a link already taken by an earlier rule on the same page is not taken again;
//! `process_links` may filter or rewrite the list; each link becomes a request with
//! callback `_crawl_rule` and meta `rule` (the rule's index) and `link_text`;
//! `process_request` may change or drop it. A rule's `follow` defaults to "no
//! callback". Start responses go to the wrapped spider's `parse_start_url` callback
//! when it has one.

use std::rc::Rc;

use serde_json::{Map, Value};

use super::outputs::{CallbackResult, Output};
use super::spider::{Spider, UnknownCallback};
use crate::crawl::http::request::Request;
use crate::crawl::http::response::Response;
use crate::crawl::linkextract::{Link, LinkExtractor};
use crate::defer::Failure;

/// The callback name of requests built by rules.
pub const RULE_CALLBACK: &str = "_crawl_rule";
/// The errback name of requests built by rules.
pub const RULE_ERRBACK: &str = "_crawl_rule_errback";

type ProcessLinks = Rc<dyn Fn(Vec<Link>) -> Vec<Link>>;
type ProcessRequest = Rc<dyn Fn(Request, &Response) -> Option<Request>>;

/// A crawling rule (Scrapy's `Rule`).
#[derive(Clone)]
pub struct Rule {
    link_extractor: LinkExtractor,
    callback: Option<String>,
    errback: Option<String>,
    cb_kwargs: Map<String, Value>,
    follow: Option<bool>,
    process_links: Option<ProcessLinks>,
    process_request: Option<ProcessRequest>,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule")
            .field("link_extractor", &self.link_extractor)
            .field("callback", &self.callback)
            .field("follow", &self.follows())
            .finish()
    }
}

impl Rule {
    /// A rule following the links `link_extractor` finds.
    pub fn new(link_extractor: LinkExtractor) -> Self {
        Self {
            link_extractor,
            callback: None,
            errback: None,
            cb_kwargs: Map::new(),
            follow: None,
            process_links: None,
            process_request: None,
        }
    }

    /// The wrapped spider's callback (by name) for the responses of this rule's links.
    pub fn callback(mut self, name: &str) -> Self {
        self.callback = Some(name.to_owned());
        self
    }

    /// The wrapped spider's errback (by name) for this rule's requests.
    pub fn errback(mut self, name: &str) -> Self {
        self.errback = Some(name.to_owned());
        self
    }

    /// A keyword argument for the callback (in the response's request `cb_kwargs`).
    pub fn cb_kwarg(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.cb_kwargs.insert(key.to_owned(), value.into());
        self
    }

    /// Whether to follow links from this rule's responses (default: when there is no
    /// callback).
    pub fn follow(mut self, yes: bool) -> Self {
        self.follow = Some(yes);
        self
    }

    /// Filters or rewrites the extracted links.
    pub fn process_links(mut self, f: impl Fn(Vec<Link>) -> Vec<Link> + 'static) -> Self {
        self.process_links = Some(Rc::new(f));
        self
    }

    /// Changes or drops (`None`) each request built from a link.
    pub fn process_request(
        mut self,
        f: impl Fn(Request, &Response) -> Option<Request> + 'static,
    ) -> Self {
        self.process_request = Some(Rc::new(f));
        self
    }

    fn follows(&self) -> bool {
        self.follow.unwrap_or(self.callback.is_none())
    }
}

/// A spider driven by [`Rule`]s around an inner spider.
#[derive(Debug)]
pub struct CrawlSpider<S> {
    inner: S,
    rules: Vec<Rule>,
    follow_links: bool,
}

impl<S: Spider> CrawlSpider<S> {
    /// Wraps `inner` with `rules`.
    pub fn new(inner: S, rules: Vec<Rule>) -> Self {
        Self {
            inner,
            rules,
            follow_links: true,
        }
    }

    /// `CRAWLSPIDER_FOLLOW_LINKS`: whether rules follow links at all (default true).
    pub fn follow_links(mut self, yes: bool) -> Self {
        self.follow_links = yes;
        self
    }

    /// The wrapped spider.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    fn requests_to_follow(&self, response: &Response) -> Vec<Output> {
        if !response.is_html() {
            return Vec::new();
        }
        let mut seen: Vec<Link> = Vec::new();
        let mut out = Vec::new();
        for (index, rule) in self.rules.iter().enumerate() {
            let links: Vec<Link> = rule
                .link_extractor
                .extract_links(response)
                .into_iter()
                .filter(|l| !seen.contains(l))
                .collect();
            let links = match &rule.process_links {
                Some(f) => f(links),
                None => links,
            };
            for link in links {
                let request = match Request::get(&link.url) {
                    Ok(r) => r,
                    Err(e) => {
                        // Scrapy raises building the request; the page's other links go on.
                        log::debug!("Skipping link with bad URL {:?}: {e}", link.url);
                        continue;
                    }
                };
                let mut request = request
                    .with_callback(RULE_CALLBACK)
                    .with_meta("rule", index)
                    .with_meta("link_text", link.text.as_str());
                if rule.errback.is_some() {
                    request = request.with_errback(RULE_ERRBACK);
                }
                for (k, v) in &rule.cb_kwargs {
                    request = request.with_cb_kwarg(k, v.clone());
                }
                seen.push(link);
                let request = match &rule.process_request {
                    Some(f) => f(request, response),
                    None => Some(request),
                };
                if let Some(r) = request {
                    out.push(Output::Request(r));
                }
            }
        }
        out
    }

    fn parse_with(
        &mut self,
        response: &Response,
        callback: Option<&str>,
        follow: bool,
    ) -> CallbackResult {
        let mut out = match callback {
            Some(name) => match self.inner.callback(name, response) {
                Ok(o) => o,
                Err(f) if callback == Some("parse_start_url") && f.check::<UnknownCallback>() => {
                    Vec::new()
                }
                Err(f) => return Err(f),
            },
            None => Vec::new(),
        };
        if follow && self.follow_links {
            out.extend(self.requests_to_follow(response));
        }
        Ok(out)
    }

    fn rule_of(&self, request: &Request) -> Result<&Rule, Failure> {
        let index = request
            .meta()
            .get_i64("rule")
            .and_then(|i| usize::try_from(i).ok())
            .ok_or_else(|| Failure::msg(format!("{request} has no valid `rule` meta")))?;
        self.rules
            .get(index)
            .ok_or_else(|| Failure::msg(format!("{request}: rule {index} does not exist")))
    }
}

impl<S: Spider> Spider for CrawlSpider<S> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn allowed_domains(&self) -> Vec<String> {
        self.inner.allowed_domains()
    }

    fn handle_httpstatus_list(&self) -> Option<Vec<u16>> {
        self.inner.handle_httpstatus_list()
    }

    fn custom_settings(&self) -> Vec<(String, Value)> {
        self.inner.custom_settings()
    }

    fn start_urls(&self) -> Vec<String> {
        self.inner.start_urls()
    }

    fn start(&mut self) -> super::outputs::Outputs {
        self.inner.start()
    }

    fn callback(&mut self, name: &str, response: &Response) -> CallbackResult {
        match name {
            "parse" => self.parse(response),
            RULE_CALLBACK => {
                let rule = self.rule_of(response.request())?;
                let callback = rule.callback.clone();
                let follow = rule.follows();
                self.parse_with(response, callback.as_deref(), follow)
            }
            other => self.inner.callback(other, response),
        }
    }

    fn callback_outputs(
        &mut self,
        name: &str,
        response: &Response,
    ) -> Result<super::outputs::Outputs, Failure> {
        match name {
            "parse" | RULE_CALLBACK => self.callback(name, response).map(super::outputs::outputs),
            other => self.inner.callback_outputs(other, response),
        }
    }

    /// Start responses: the inner spider's `parse_start_url` (if any), then the rules.
    fn parse(&mut self, response: &Response) -> CallbackResult {
        self.parse_with(response, Some("parse_start_url"), true)
    }

    fn errback(&mut self, name: &str, failure: &Failure, request: &Request) -> CallbackResult {
        if name == RULE_ERRBACK {
            let errback = self.rule_of(request)?.errback.clone();
            return match errback {
                Some(e) => self.inner.errback(&e, failure, request),
                None => Err(failure.clone()),
            };
        }
        self.inner.errback(name, failure, request)
    }

    fn settings_ready(&mut self, settings: &crate::crawl::base::settings::Settings) {
        self.inner.settings_ready(settings);
    }

    fn opened(&mut self) {
        self.inner.opened();
    }

    fn closed(&mut self, reason: &str) {
        self.inner.closed(reason);
    }
}
