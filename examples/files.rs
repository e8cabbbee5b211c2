// cargo run --release --example files -- [--by-name] [START_URL] [FILES_STORE]
// cargo run --release --example files -- --images [--large N] [START_URL] [IMAGES_STORE]
//
// Scrapy's FilesPipeline on trawl: a spider yields one item per product of the fixture
// site's media section with its `file_urls`; the pipeline downloads each file once
// (one URL is named by two items), stores it as `full/<sha1>.<ext>` and fills the
// item's `files` with `url`, `path`, `checksum` and `status`. With `--by-name` the
// pipeline is a project's own, registered under its name, that keeps the files' names
// (`FilesHooks::file_path`: what a Scrapy subclass overrides). Run it twice: the second
// run finds every file `uptodate`.
//
// With `--images` it is Scrapy's ImagesPipeline on the site's images page: JPEGs under
// `full/`, 50×50 and 270×270 thumbnails under `thumbs/`, the too small, corrupt and
// decompression-bomb images refused. `--large N` adds an item with N 12-megapixel
// photos and prints the reactor's longest stall: the decoding runs on the image threads.

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
    /// URLs of one more item (`--large`).
    extra: Vec<String>,
    /// The field the URLs go to.
    field: &'static str,
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
                    .with(self.field, urls),
            ));
        }
        if !self.extra.is_empty() {
            out.push(Output::Item(
                Item::new()
                    .with("name", "large")
                    .with(self.field, std::mem::take(&mut self.extra)),
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
    let mut flag = |name: &str| match args.iter().position(|a| a == name) {
        Some(i) => {
            args.remove(i);
            true
        }
        None => false,
    };
    let by_name = flag("--by-name");
    let images = flag("--images");
    let large = match args.iter().position(|a| a == "--large") {
        Some(i) => {
            let n = args
                .get(i + 1)
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or(20);
            args.drain(i..(i + 2).min(args.len()));
            n
        }
        None => 0,
    };
    let server;
    let page = if images {
        "/media/images.html"
    } else {
        "/media/index.html"
    };
    let start = match args.first() {
        Some(url) => url.clone(),
        None => {
            server = FixtureServer::start(FixtureOptions::default()).expect("fixture server");
            server.url(page)
        }
    };
    let base = start.split("/media/").next().unwrap_or(&start).to_owned();
    let extra = (0..large)
        .map(|i| format!("{base}/media/images/large-{i}.jpg"))
        .collect();
    let store = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| if images { "images" } else { "files" }.into());
    let mut settings = Settings::new();
    let pipeline = match (images, by_name) {
        (true, _) => "scrapy.pipelines.images.ImagesPipeline",
        (false, true) => "example.ByNamePipeline",
        (false, false) => "scrapy.pipelines.files.FilesPipeline",
    };
    settings.set(
        "ITEM_PIPELINES",
        serde_json::json!({ pipeline: 1 }),
        Priority::Project,
    );
    settings.set(
        if images {
            "IMAGES_STORE"
        } else {
            "FILES_STORE"
        },
        store.clone(),
        Priority::Project,
    );
    settings.set(
        "IMAGES_THUMBS",
        serde_json::json!({"small": [50, 50], "big": [270, 270]}),
        Priority::Project,
    );
    settings.set("IMAGES_MIN_WIDTH", 20, Priority::Project);
    settings.set("IMAGES_MIN_HEIGHT", 20, Priority::Project);
    settings.set(
        "FEEDS",
        serde_json::json!({"products.jsonl": {"format": "jsonlines", "overwrite": true}}),
        Priority::Project,
    );
    let mut registry = Registry::with_builtins();
    registry.register_pipeline("example.ByNamePipeline", |ctx| {
        Ok(FilesPipeline::with_hooks(ctx, Rc::new(ByName))? as Rc<dyn ItemPipeline>)
    });
    let spider = Products {
        start,
        extra,
        field: if images { "image_urls" } else { "file_urls" },
    };
    match run_spider_with(Box::new(spider), settings, registry) {
        Ok(crawler) => {
            let s = &crawler.stats;
            println!(
                "{} products written to products.jsonl; {} files fetched into {store}/ \
                 ({} downloaded, {} uptodate); the reactor's longest stall {} ms",
                s.get_int("item_scraped_count"),
                s.get_int("file_count"),
                s.get_int("file_status_count/downloaded"),
                s.get_int("file_status_count/uptodate"),
                s.get_value("reactor/max_stall_ms").unwrap_or_default(),
            );
        }
        Err(f) => {
            eprintln!("crawl failed: {f}");
            std::process::exit(1);
        }
    }
}
