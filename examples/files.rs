// cargo run --release --example files -- [--by-name] [START_URL] [FILES_STORE]
//
// Scrapy's FilesPipeline on trawl: a spider yields one item per product of the fixture
// site's media section with its `file_urls`; the pipeline downloads each file once
// (one URL is named by two items), stores it as `full/<sha1>.<ext>` and fills the
// item's `files` with `url`, `path`, `checksum` and `status`. With `--by-name` the
// pipeline is a project's own, registered under its name, that keeps the files' names
// (`FilesHooks::file_path`: what a Scrapy subclass overrides). Run it twice: the second
// run finds every file `uptodate`.

use std::rc::Rc;

use trawl::crawl::pipeline::ItemPipeline;
use trawl::crawl::pipelines::{FilesHooks, FilesPipeline};
use trawl::crawl::{
    CallbackResult, Item, Output, Priority, Registry, Request, Response, Settings, Spider,
    run_spider_with,
};
use trawl::testing::{FixtureOptions, FixtureServer};

struct Products {
    start: String,
}

impl Spider for Products {
    fn name(&self) -> &str {
        "products"
    }

    fn start_urls(&self) -> Vec<String> {
        vec![self.start.clone()]
    }

    fn callback(&mut self, _name: &str, response: &Response) -> CallbackResult {
        let mut out = Vec::new();
        for product in response.css("div.item") {
            let mut urls = Vec::new();
            for href in product.css("a.file::attr(href)").getall() {
                urls.push(response.urljoin_str(&href)?);
            }
            out.push(Output::Item(
                Item::new()
                    .with("name", product.css("h2::text").get())
                    .with("file_urls", urls),
            ));
        }
        Ok(out)
    }
}

/// Keeps each file's own name under its product: `by-name/<product>/<file name>`.
struct ByName;

impl FilesHooks for ByName {
    fn file_path(&self, request: &Request, _response: Option<&Response>, item: &Item) -> String {
        let product = item
            .0
            .get("name")
            .and_then(|v| v.as_str())
            .unwrap_or("unnamed");
        let file = request
            .url()
            .path_segments()
            .and_then(|mut s| s.next_back())
            .filter(|s| !s.is_empty())
            .unwrap_or("index");
        format!("by-name/{product}/{file}")
    }
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let by_name = args.first().is_some_and(|a| a == "--by-name");
    if by_name {
        args.remove(0);
    }
    let server;
    let start = match args.first() {
        Some(url) => url.clone(),
        None => {
            server = FixtureServer::start(FixtureOptions::default()).expect("fixture server");
            server.url("/media/index.html")
        }
    };
    let store = args.get(1).cloned().unwrap_or_else(|| "files".into());
    let mut settings = Settings::new();
    settings.set(
        "ITEM_PIPELINES",
        if by_name {
            serde_json::json!({"example.ByNamePipeline": 1})
        } else {
            serde_json::json!({"scrapy.pipelines.files.FilesPipeline": 1})
        },
        Priority::Project,
    );
    settings.set("FILES_STORE", store.clone(), Priority::Project);
    settings.set(
        "FEEDS",
        serde_json::json!({"products.jsonl": {"format": "jsonlines", "overwrite": true}}),
        Priority::Project,
    );
    let mut registry = Registry::with_builtins();
    registry.register_pipeline("example.ByNamePipeline", |ctx| {
        Ok(FilesPipeline::with_hooks(ctx, Rc::new(ByName))? as Rc<dyn ItemPipeline>)
    });
    match run_spider_with(Box::new(Products { start }), settings, registry) {
        Ok(crawler) => {
            let s = &crawler.stats;
            println!(
                "{} products written to products.jsonl; {} files stored in {store}/ \
                 ({} downloaded, {} uptodate)",
                s.get_int("item_scraped_count"),
                s.get_int("file_count"),
                s.get_int("file_status_count/downloaded"),
                s.get_int("file_status_count/uptodate"),
            );
        }
        Err(f) => {
            eprintln!("crawl failed: {f}");
            std::process::exit(1);
        }
    }
}
