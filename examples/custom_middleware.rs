// cargo run --release --example custom_middleware -- [START_URL]
//
// Your own components, registered by name and ordered by settings as in Scrapy:
// a downloader middleware that tags requests and counts responses by content type,
// and two item pipelines — one drops quotes without an author, one normalises tags.
// Without a URL it starts the fixture site itself.

use std::rc::{Rc, Weak};

use trawl::crawl::downloader::middleware::{DownloaderMiddleware, RequestOutcome, ResponseOutcome};
use trawl::crawl::errors::DropItem;
use trawl::crawl::pipeline::{ItemOutcome, ItemPipeline};
use trawl::crawl::{
    CallbackResult, CrawlContext, Item, Output, Priority, Registry, Request, Response, Settings,
    Spider, run_spider_with,
};
use trawl::defer::Failure;
use trawl::testing::{FixtureOptions, FixtureServer};

/// Adds `X-Crawled-By` to every request; counts responses by content type in stats.
struct Tagging {
    crawler: Weak<CrawlContext>,
}

impl DownloaderMiddleware for Tagging {
    fn process_request(&self, request: &mut Request) -> Result<RequestOutcome, Failure> {
        request.headers_mut().set("X-Crawled-By", "trawl-example");
        Ok(RequestOutcome::Continue)
    }

    fn process_response(
        &self,
        _request: &Request,
        response: Response,
    ) -> Result<ResponseOutcome, Failure> {
        if let Some(c) = self.crawler.upgrade() {
            let ct = response
                .headers()
                .get_str("Content-Type")
                .and_then(|v| v.split(';').next())
                .unwrap_or("none")
                .to_owned();
            c.stats.inc(&format!("tagging/content_type/{ct}"));
        }
        Ok(ResponseOutcome::Response(response))
    }
}

/// Drops items without an author.
struct RequireAuthor;

impl ItemPipeline for RequireAuthor {
    fn process_item(&self, item: Item, _: Option<&Response>) -> Result<ItemOutcome, Failure> {
        match item.get("author") {
            Some(a) if a.as_str().is_some_and(|s| !s.is_empty()) => Ok(ItemOutcome::Item(item)),
            _ => Err(Failure::new(DropItem::new("no author"))),
        }
    }
}

/// Lower-cases the author into a `slug` field.
struct Slug;

impl ItemPipeline for Slug {
    fn process_item(&self, item: Item, _: Option<&Response>) -> Result<ItemOutcome, Failure> {
        let slug = item
            .get("author")
            .and_then(|a| a.as_str())
            .map(|a| a.to_lowercase().replace(' ', "-"))
            .unwrap_or_default();
        Ok(ItemOutcome::Item(item.with("slug", slug)))
    }
}

struct Quotes {
    start: String,
}

impl Spider for Quotes {
    fn name(&self) -> &str {
        "custom"
    }

    fn start_urls(&self) -> Vec<String> {
        vec![self.start.clone()]
    }

    fn parse(&mut self, response: &Response) -> CallbackResult {
        let mut out: Vec<Output> = response
            .css("div.quote")
            .into_iter()
            .map(|q| {
                Output::Item(
                    Item::new()
                        .with("text", q.css("span.text::text").get())
                        .with("author", q.css("small.author::text").get()),
                )
            })
            .collect();
        if let Some(next) = response.css("li.next a::attr(href)").get() {
            out.push(Output::Request(response.follow(&next)?));
        }
        Ok(out)
    }
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let server;
    let start = match std::env::args().nth(1) {
        Some(url) => url,
        None => {
            server = FixtureServer::start(FixtureOptions::default()).expect("fixture server");
            server.url("/page/1/")
        }
    };
    let mut registry = Registry::with_builtins();
    registry.register_downloader_middleware("example.Tagging", |c| {
        Ok(Rc::new(Tagging {
            crawler: Rc::downgrade(c),
        }) as Rc<dyn DownloaderMiddleware>)
    });
    registry.register_pipeline("example.RequireAuthor", |_| {
        Ok(Rc::new(RequireAuthor) as Rc<dyn ItemPipeline>)
    });
    registry.register_pipeline(
        "example.Slug",
        |_| Ok(Rc::new(Slug) as Rc<dyn ItemPipeline>),
    );
    let mut settings = Settings::new();
    settings.set(
        "DOWNLOADER_MIDDLEWARES",
        serde_json::json!({"example.Tagging": 543}),
        Priority::Project,
    );
    settings.set(
        "ITEM_PIPELINES",
        serde_json::json!({"example.RequireAuthor": 100, "example.Slug": 200}),
        Priority::Project,
    );
    match run_spider_with(Box::new(Quotes { start }), settings, registry) {
        Ok(c) => println!(
            "{} items kept, {} dropped, {} HTML responses tagged",
            c.stats.get_int("item_scraped_count"),
            c.stats.get_int("item_dropped_count"),
            c.stats.get_int("tagging/content_type/text/html"),
        ),
        Err(f) => {
            eprintln!("crawl failed: {f}");
            std::process::exit(1);
        }
    }
}
