// cargo run --release --example crawl_rules -- [START_URL]
//
// A CrawlSpider: one rule follows the pagination, another sends author pages to a
// callback. Without a URL it starts the fixture site itself.

use trawl::crawl::{
    CallbackResult, CrawlSpider, Item, LinkExtractor, Output, Response, Rule, Settings, Spider,
    run_spider,
};
use trawl::testing::{FixtureOptions, FixtureServer};

/// The callbacks the rules name.
struct Authors {
    start: String,
}

impl Spider for Authors {
    fn name(&self) -> &str {
        "authors"
    }

    fn allowed_domains(&self) -> Vec<String> {
        url::Url::parse(&self.start)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .into_iter()
            .collect()
    }

    fn start_urls(&self) -> Vec<String> {
        vec![self.start.clone()]
    }

    fn callback(&mut self, name: &str, response: &Response) -> CallbackResult {
        match name {
            "parse_author" => Ok(vec![Output::Item(
                Item::new()
                    .with("name", response.css("h3.author-title::text").get())
                    .with("url", response.url().as_str()),
            )]),
            // Start pages: nothing to extract, the rules do the following.
            _ => Ok(Vec::new()),
        }
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
    let rules = vec![
        Rule::new(
            LinkExtractor::new()
                .allow(&[r"/page/\d+/$"])
                .expect("valid regex")
                .restrict_css(["ul.pager"]),
        ),
        Rule::new(
            LinkExtractor::new()
                .allow(&["/author/"])
                .expect("valid regex"),
        )
        .callback("parse_author"),
    ];
    let spider = CrawlSpider::new(Authors { start }, rules);
    match run_spider(Box::new(spider), Settings::new()) {
        Ok(c) => println!(
            "{} authors from {} pages",
            c.stats.get_int("item_scraped_count"),
            c.stats.get_int("response_received_count")
        ),
        Err(f) => {
            eprintln!("crawl failed: {f}");
            std::process::exit(1);
        }
    }
}
