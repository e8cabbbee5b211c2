// cargo run --release --example csv_feed -- [FEED_URL] [OUTPUT.jsonl]
//
// Scrapy's CSVFeedSpider on trawl: the fixture site's quotes as a CSV feed
// (`/feeds/quotes.csv`: quoted fields with commas, doubled quotes and CR LF line ends),
// one item per row from `parse_row`, `process_results` adding the feed's URL, exported
// as JSON lines. Without a URL it starts the fixture site on 127.0.0.1 itself.

use serde_json::{Map, Value};
use trawl::crawl::{
    CallbackResult, CsvFeed, CsvFeedSpider, Item, Output, Priority, Response, Settings, Spider,
    run_spider,
};
use trawl::testing::{FixtureOptions, FixtureServer};

struct QuotesFeed {
    feed: String,
}

impl Spider for QuotesFeed {
    fn name(&self) -> &str {
        "quotes_feed"
    }

    fn start_urls(&self) -> Vec<String> {
        vec![self.feed.clone()]
    }
}

impl CsvFeed for QuotesFeed {
    fn parse_row(&mut self, _response: &Response, row: &Map<String, Value>) -> CallbackResult {
        let field = |k: &str| row.get(k).and_then(Value::as_str).unwrap_or_default();
        let tags: Vec<&str> = field("tags").split(';').filter(|t| !t.is_empty()).collect();
        Ok(vec![Output::Item(
            Item::new()
                .with("text", field("text"))
                .with("author", field("author"))
                .with("tags", tags),
        )])
    }

    fn process_results(&mut self, response: &Response, results: Vec<Output>) -> Vec<Output> {
        results
            .into_iter()
            .map(|o| match o {
                Output::Item(item) => Output::Item(item.with("feed", response.url().as_str())),
                other => other,
            })
            .collect()
    }
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let server;
    let feed = match args.first() {
        Some(url) => url.clone(),
        None => {
            server = FixtureServer::start(FixtureOptions::default()).expect("fixture server");
            server.url("/feeds/quotes.csv")
        }
    };
    let output = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "quotes_feed.jsonl".into());
    let mut settings = Settings::new();
    settings.set(
        "FEEDS",
        serde_json::json!({ output.clone(): {"format": "jsonlines", "overwrite": true} }),
        Priority::Project,
    );
    settings.set("LOG_LEVEL", "INFO", Priority::Project);
    match run_spider(Box::new(CsvFeedSpider::new(QuotesFeed { feed })), settings) {
        Ok(crawler) => println!(
            "{} responses (robots.txt and the feed), {} items, written to {output}",
            crawler.stats.get_int("response_received_count"),
            crawler.stats.get_int("item_scraped_count"),
        ),
        Err(f) => {
            eprintln!("crawl failed: {f}");
            std::process::exit(1);
        }
    }
}
