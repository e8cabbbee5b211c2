// cargo run --release --example quotes -- [START_URL] [OUTPUT.jsonl]
//
// Scrapy's tutorial spider on trawl: the paginated quote list, each author's page
// followed with `response.follow`, every quote and author exported as JSON lines.
// Without a URL it starts the fixture site (which has the quotes.toscrape.com shape)
// on 127.0.0.1 itself.

use trawl::crawl::{
    CallbackResult, Item, Output, Priority, Response, Settings, Spider, run_spider,
};
use trawl::testing::{FixtureOptions, FixtureServer};

struct Quotes {
    start: String,
}

impl Spider for Quotes {
    fn name(&self) -> &str {
        "quotes"
    }

    fn start_urls(&self) -> Vec<String> {
        vec![self.start.clone()]
    }

    fn callback(&mut self, name: &str, response: &Response) -> CallbackResult {
        match name {
            "parse_author" => self.parse_author(response),
            _ => self.parse(response),
        }
    }

    /// A list page: its quotes, the authors' pages, the next page.
    fn parse(&mut self, response: &Response) -> CallbackResult {
        let mut out = Vec::new();
        for quote in response.css("div.quote") {
            out.push(Output::Item(
                Item::new()
                    .with("text", quote.css("span.text::text").get())
                    .with("author", quote.css("small.author::text").get())
                    .with("tags", quote.css("div.tags a.tag::text").getall()),
            ));
            for href in quote.css("a::attr(href)").getall() {
                if href.starts_with("/author/") {
                    // Authors repeat across pages: the dupefilter keeps one visit each.
                    out.push(Output::Request(
                        response.follow(&href)?.with_callback("parse_author"),
                    ));
                }
            }
        }
        if let Some(next) = response.css("li.next a::attr(href)").get() {
            out.push(Output::Request(response.follow(&next)?));
        }
        Ok(out)
    }
}

impl Quotes {
    fn parse_author(&mut self, response: &Response) -> CallbackResult {
        Ok(vec![Output::Item(
            Item::new()
                .with("name", response.css("h3.author-title::text").get())
                .with("born", response.css("span.author-born-date::text").get())
                .with(
                    "born_location",
                    response.css("span.author-born-location::text").get(),
                ),
        )])
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
        .unwrap_or_else(|| "quotes.jsonl".into());
    let mut settings = Settings::new();
    settings.set(
        "FEEDS",
        serde_json::json!({ output.clone(): {"format": "jsonlines", "overwrite": true} }),
        Priority::Project,
    );
    settings.set("LOG_LEVEL", "INFO", Priority::Project);
    match run_spider(Box::new(Quotes { start }), settings) {
        Ok(crawler) => println!(
            "{} pages, {} items (quotes and authors) written to {output}",
            crawler.stats.get_int("response_received_count"),
            crawler.stats.get_int("item_scraped_count"),
        ),
        Err(f) => {
            eprintln!("crawl failed: {f}");
            std::process::exit(1);
        }
    }
}
