// cargo run --release --example sitemap -- [ROBOTS_OR_SITEMAP_URL]
//
// A SitemapSpider: reads robots.txt's `Sitemap:` lines, the sitemap, and sends the
// pages of the first section to one callback and the rest to another. Without a URL it
// starts the fixture site (whose robots.txt names its sitemap) itself.

use trawl::crawl::{
    CallbackResult, Item, Output, Response, Settings, SitemapSpider, Spider, run_spider,
};
use trawl::testing::{FixtureOptions, FixtureServer};

struct Titles;

impl Spider for Titles {
    fn name(&self) -> &str {
        "sitemap"
    }

    fn callback(&mut self, name: &str, response: &Response) -> CallbackResult {
        Ok(vec![Output::Item(
            Item::new()
                .with(
                    "section",
                    if name == "parse_first" {
                        "first"
                    } else {
                        "other"
                    },
                )
                .with("url", response.url().as_str())
                .with("title", response.css("title::text").get()),
        )])
    }
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let server;
    let url = match std::env::args().nth(1) {
        Some(url) => url,
        None => {
            server = FixtureServer::start(FixtureOptions {
                pages: 300,
                ..FixtureOptions::default()
            })
            .expect("fixture server");
            server.url("/robots.txt")
        }
    };
    let spider = SitemapSpider::new(Titles, [url])
        .rules(&[(r"/s/000/", "parse_first"), ("", "parse")])
        .expect("valid regexes");
    match run_spider(Box::new(spider), Settings::new()) {
        Ok(c) => println!(
            "{} pages from the sitemap",
            c.stats.get_int("item_scraped_count")
        ),
        Err(f) => {
            eprintln!("crawl failed: {f}");
            std::process::exit(1);
        }
    }
}
