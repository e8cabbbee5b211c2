// cargo run --release --example inline_requests -- [START_URL] [OUTPUT.jsonl]
//
// "Inline requests": one item built from two responses. Each quote on a list page
// needs its author's birth date from a JSON API; the callback downloads the API URL
// through `ctx.engine().download(...)` (the downloader middlewares and slots, not the
// scheduler or the dupefilter — Scrapy's `await self.crawler.engine.download(request)`)
// and returns the item when the answer arrives (`Output::later`). Other pages are
// crawled meanwhile. Without a URL it starts the fixture site (its `/api/authors/SLUG`
// endpoint) on 127.0.0.1 itself.

use std::rc::Rc;

use serde_json::json;
use trawl::crawl::{
    CallbackResult, CrawlContext, Item, Output, Priority, Request, Response, Settings, Spider,
    run_spider,
};
use trawl::defer::Failure;
use trawl::testing::{FixtureOptions, FixtureServer};

struct Quotes {
    start: String,
    ctx: Option<Rc<CrawlContext>>,
}

impl Spider for Quotes {
    fn name(&self) -> &str {
        "inline"
    }

    fn start_urls(&self) -> Vec<String> {
        vec![self.start.clone()]
    }

    fn set_context(&mut self, ctx: &Rc<CrawlContext>) {
        self.ctx = Some(ctx.clone());
    }

    fn parse(&mut self, response: &Response) -> CallbackResult {
        let engine = self
            .ctx
            .as_ref()
            .and_then(|c| c.engine())
            .ok_or_else(|| Failure::msg("no engine"))?;
        let mut out = Vec::new();
        for quote in response.css("div.quote") {
            let text = quote.css("span.text::text").get();
            let author = quote.css("small.author::text").get();
            let Some(about) = quote.css("a::attr(href)").get() else {
                continue;
            };
            // /author/SLUG/ → /api/authors/SLUG
            let slug = about
                .trim_matches('/')
                .trim_start_matches("author/")
                .to_owned();
            let api = Request::get(response.urljoin(&format!("/api/authors/{slug}"))?.as_str())?;
            let item = engine.download(api).then(move |r| {
                let details = r?
                    .json()
                    .map_err(|e| Failure::msg(format!("not JSON: {e}")))?;
                Ok(vec![Output::Item(
                    Item::new()
                        .with("text", text)
                        .with("author", author)
                        .with("born", details["born"].clone()),
                )])
            });
            out.push(Output::later(item));
        }
        if let Some(next) = response.css("li.next a::attr(href)").get() {
            out.push(Output::Request(response.follow(&next)?));
        }
        Ok(out)
    }
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let server;
    let start = match args.first() {
        Some(url) => url.clone(),
        None => {
            server = FixtureServer::start(FixtureOptions::default()).expect("fixture server");
            server.url("/page/1/")
        }
    };
    let output = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "inline.jsonl".into());
    let mut settings = Settings::new();
    settings.set(
        "FEEDS",
        json!({ output.clone(): {"format": "jsonlines", "overwrite": true} }),
        Priority::Project,
    );
    settings.set("LOG_LEVEL", "INFO", Priority::Project);
    match run_spider(Box::new(Quotes { start, ctx: None }), settings) {
        Ok(crawler) => println!(
            "{} quotes with their author's birth date written to {output} ({} list pages, {} API calls)",
            crawler.stats.get_int("item_scraped_count"),
            crawler.stats.get_int("scheduler/dequeued"),
            crawler.stats.get_int("response_received_count")
                - crawler.stats.get_int("scheduler/dequeued")
                - 1,
        ),
        Err(f) => {
            eprintln!("crawl failed: {f}");
            std::process::exit(1);
        }
    }
}
