// cargo run --release --example fixture_crawl -- [START_URL] [CONCURRENCY] [ITEMS.jsonl]
//
// The peer benchmark's crawl (shared/bench/scrapy_fixture/fixture_spider.py) on trawl
// (TRAWL_JOBDIR=DIR in the environment adds a JOBDIR; TRAWL_REDIS=URL makes it one
// worker of a distributed crawl through that Redis — scrapy-redis's scheduler,
// dupefilter, items and stats, the start URL seeded once — closing after 2 s idle):
// start at START_URL, stay on its host, follow every link, write one JSON line per
// `div.quote` (url, text, author). Without a URL (or with `-`) it starts an in-process fixture server
// with 2,000 pages. Prints a JSON summary as its last line.
//
//   ../shared/bench/run_peers.sh --ours "$PWD/target/release/examples/fixture_crawl {url} {conc} {items}"

// The allocator: as the `trawl` binary (the default feature `mimalloc`; DESIGN.md §14c).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use serde_json::json;
use trawl::crawl::{Priority, Registry, Settings, Spider, run_spider_with};
use trawl::testing::spiders::FixtureSpider;
use trawl::testing::{FixtureOptions, FixtureServer};

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let server;
    let start = match args.first().filter(|u| !u.is_empty() && *u != "-") {
        Some(url) => url.clone(),
        None => {
            server = FixtureServer::start(FixtureOptions {
                pages: 2000,
                ..FixtureOptions::default()
            })
            .expect("fixture server");
            server.url("/index.html")
        }
    };
    let concurrency: u64 = args.get(1).and_then(|c| c.parse().ok()).unwrap_or(16);
    let items = args.get(2).cloned().unwrap_or_else(|| "items.jsonl".into());

    let mut settings = Settings::new();
    settings.set("CONCURRENT_REQUESTS", concurrency, Priority::Cmdline);
    settings.set(
        "CONCURRENT_REQUESTS_PER_DOMAIN",
        concurrency,
        Priority::Cmdline,
    );
    settings.set("LOG_LEVEL", "INFO", Priority::Cmdline);
    settings.set(
        "FEEDS",
        json!({ items.clone(): {"format": "jsonlines", "overwrite": true} }),
        Priority::Cmdline,
    );
    // The benchmark of the JOBDIR issue runs the same crawl with a job directory.
    if let Ok(dir) = std::env::var("TRAWL_JOBDIR") {
        settings.set("JOBDIR", dir, Priority::Cmdline);
    }
    let mut registry = Registry::with_builtins();
    let spider: Box<dyn Spider> = match std::env::var("TRAWL_REDIS") {
        Ok(url) => {
            for (name, value) in trawl::distributed::redis_settings(&url) {
                settings.set(name, value, Priority::Cmdline);
            }
            settings.set(
                "ITEM_PIPELINES",
                json!({"trawl.RedisPipeline": 300}),
                Priority::Cmdline,
            );
            settings.set("MAX_IDLE_TIME_BEFORE_CLOSE", 2, Priority::Cmdline);
            trawl::distributed::register(&mut registry);
            Box::new(
                trawl::distributed::RedisSpider::new(Box::new(FixtureSpider::new(&start)))
                    .with_seeds(vec![start.clone()]),
            )
        }
        Err(_) => Box::new(FixtureSpider::new(&start)),
    };
    let started = std::time::Instant::now();
    match run_spider_with(spider, settings, registry) {
        Ok(crawler) => {
            let secs = started.elapsed().as_secs_f64();
            let pages = crawler.stats.get_int("response_received_count");
            println!(
                "{}",
                json!({
                    "pages": pages,
                    "items": crawler.stats.get_int("item_scraped_count"),
                    "seconds": secs,
                    "pages_per_second": pages as f64 / secs,
                })
            );
        }
        Err(f) => {
            eprintln!("crawl failed: {f}");
            std::process::exit(1);
        }
    }
}
