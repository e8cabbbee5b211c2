// cargo run --release --example redis_lookup -- [REDIS_URL]
//
// A callback that waits for Redis: each quote's author is counted in a Redis hash
// (`HINCRBY`) through trawl's Redis client on the crawl's own reactor, and the item
// carries the count Redis answered (the how-many-th quote of that author this crawl
// has seen). The callback returns `Output::later(...)` with the Deferred of the reply;
// the page's response stays in the scraper until it fires, and the other pages go on.
// Without a URL it starts the fixture site and a `redis-server` (which must be
// installed) on free ports itself.

use std::rc::Rc;

use trawl::client::redis::{RedisClient, RedisConfig, Value};
use trawl::crawl::{
    CallbackResult, CrawlContext, Item, Output, Response, Settings, Spider, run_spider,
};
use trawl::defer::Failure;
use trawl::testing::{FixtureOptions, FixtureServer, RedisServer};

struct Counted {
    start: String,
    redis_url: String,
    redis: Option<RedisClient>,
}

impl Spider for Counted {
    fn name(&self) -> &str {
        "counted"
    }

    fn start_urls(&self) -> Vec<String> {
        vec![self.start.clone()]
    }

    fn set_context(&mut self, ctx: &Rc<CrawlContext>) {
        let client = ctx.reactor().and_then(|reactor| {
            let config = RedisConfig::from_url(&self.redis_url).ok()?;
            RedisClient::new(reactor, config).ok()
        });
        self.redis = client;
    }

    fn parse(&mut self, response: &Response) -> CallbackResult {
        let redis = self
            .redis
            .clone()
            .ok_or_else(|| Failure::msg("no Redis client"))?;
        let mut out = Vec::new();
        for quote in response.css("div.quote") {
            let text = quote.css("span.text::text").get();
            let Some(author) = quote.css("small.author::text").get() else {
                continue;
            };
            let reply = redis.command(&["HINCRBY", "quotes:per_author", author.as_str(), "1"]);
            out.push(Output::later(reply.then(move |r| match r? {
                Value::Integer(nth) => Ok(vec![Output::Item(
                    Item::new()
                        .with("text", text)
                        .with("author", author)
                        .with("nth_of_author", nth),
                )]),
                other => Err(Failure::msg(format!("HINCRBY answered {other:?}"))),
            })));
        }
        if let Some(next) = response.css("li.next a::attr(href)").get() {
            out.push(Output::Request(response.follow(&next)?));
        }
        Ok(out)
    }
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let fixture = FixtureServer::start(FixtureOptions::default()).expect("fixture server");
    let given = std::env::args().nth(1);
    let server = match given {
        Some(_) => None,
        None => match RedisServer::start() {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("redis_lookup needs redis-server: {e}");
                std::process::exit(1);
            }
        },
    };
    let redis_url = given.unwrap_or_else(|| server.as_ref().map(|s| s.url(0)).unwrap_or_default());
    let spider = Counted {
        start: fixture.url("/page/1/"),
        redis_url,
        redis: None,
    };
    match run_spider(Box::new(spider), Settings::new()) {
        Ok(crawler) => {
            println!(
                "{} quotes, each with its author's running count from Redis",
                crawler.stats.get_int("item_scraped_count"),
            );
            if let Some(s) = &server {
                match s.call(&["HLEN", "quotes:per_author"]) {
                    Ok(Value::Integer(n)) => println!("{n} authors counted in Redis"),
                    other => println!("HLEN answered {other:?}"),
                }
            }
        }
        Err(f) => {
            eprintln!("crawl failed: {f}");
            std::process::exit(1);
        }
    }
}
