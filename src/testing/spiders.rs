//! Spiders for the fixture site, shared by the end-to-end tests, the examples and the
//! benchmarks.

use crate::crawl::{CallbackResult, Item, LinkExtractor, Output, Request, Response, Spider};

/// The peer benchmark's spider (`shared/bench/scrapy_fixture/fixture_spider.py`):
/// starts at one URL, stays on its host, follows every link, and yields one item per
/// `div.quote` with `url`, `text` and `author`.
#[derive(Debug)]
pub struct FixtureSpider {
    name: String,
    start: String,
    host: String,
    links: LinkExtractor,
}

impl FixtureSpider {
    /// A spider starting at `start` (its host becomes `allowed_domains`).
    pub fn new(start: &str) -> Self {
        let host = url::Url::parse(start)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        Self {
            name: "fixture".to_owned(),
            start: start.to_owned(),
            host,
            links: LinkExtractor::new().with_text(false),
        }
    }
}

impl FixtureSpider {
    /// The same spider under another name (several crawls of the site in one process
    /// tell their logs and feeds apart by it).
    pub fn with_name(mut self, name: &str) -> Self {
        name.clone_into(&mut self.name);
        self
    }
}

impl Spider for FixtureSpider {
    fn name(&self) -> &str {
        &self.name
    }

    fn allowed_domains(&self) -> Vec<String> {
        vec![self.host.clone()]
    }

    fn start_urls(&self) -> Vec<String> {
        vec![self.start.clone()]
    }

    fn parse(&mut self, response: &Response) -> CallbackResult {
        let mut out = Vec::new();
        for quote in response.css("div.quote") {
            out.push(Output::Item(
                Item::new()
                    .with("url", response.url().as_str())
                    .with("text", quote.css("span.text::text").get())
                    .with("author", quote.css("small.author::text").get()),
            ));
        }
        for link in self.links.extract_links(response) {
            if let Ok(request) = Request::get_owned(link.url) {
                out.push(Output::Request(request));
            }
        }
        Ok(out)
    }
}
