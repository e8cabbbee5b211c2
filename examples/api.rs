// cargo run --release --example api -- [API_URL] [OUTPUT.jsonl]
//
// A JSON API crawl, as a Scrapy user writes one with `JsonRequest` and
// `response.json()`: POST `{"page": N}` to the quotes API, export each quote, ask for
// the next page while `has_next` says so. Without a URL it starts the fixture site
// (its `/api/quotes` endpoint) on 127.0.0.1 itself.

use serde_json::json;
use trawl::crawl::{
    CallbackResult, Item, JsonRequest, Output, Outputs, Priority, Response, Settings, Spider,
    run_spider,
};
use trawl::testing::{FixtureOptions, FixtureServer};

struct Api {
    endpoint: String,
}

impl Api {
    fn page(&self, n: u64) -> Result<Output, trawl::defer::Failure> {
        let request = JsonRequest::build(&self.endpoint, Some(&json!({"page": n})), None)
            .map_err(|e| trawl::defer::Failure::new(std::io::Error::other(e.to_string())))?;
        // Every page is a POST to the same URL with another body: distinct fingerprints.
        Ok(Output::Request(request))
    }
}

impl Spider for Api {
    fn name(&self) -> &str {
        "api"
    }

    fn start(&mut self) -> Outputs {
        Box::new(std::iter::once(self.page(1)))
    }

    fn parse(&mut self, response: &Response) -> CallbackResult {
        let data = response.json().map_err(|e| {
            trawl::defer::Failure::new(std::io::Error::other(format!("not JSON: {e}")))
        })?;
        let mut out = Vec::new();
        for quote in data["quotes"].as_array().into_iter().flatten() {
            out.push(Output::Item(
                Item::new()
                    .with("text", quote["text"].clone())
                    .with("author", quote["author"].clone())
                    .with("tags", quote["tags"].clone()),
            ));
        }
        if data["has_next"] == json!(true) {
            let next = data["page"].as_u64().unwrap_or(0) + 1;
            out.push(self.page(next)?);
        }
        Ok(out)
    }
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let server;
    let endpoint = match args.first() {
        Some(url) => url.clone(),
        None => {
            server = FixtureServer::start(FixtureOptions::default()).expect("fixture server");
            server.url("/api/quotes")
        }
    };
    let output = args.get(1).cloned().unwrap_or_else(|| "api.jsonl".into());
    let mut settings = Settings::new();
    settings.set(
        "FEEDS",
        json!({ output.clone(): {"format": "jsonlines", "overwrite": true} }),
        Priority::Project,
    );
    settings.set("LOG_LEVEL", "INFO", Priority::Project);
    match run_spider(Box::new(Api { endpoint }), settings) {
        Ok(crawler) => println!(
            "{} responses (robots.txt and the API pages), {} quotes written to {output}",
            crawler.stats.get_int("response_received_count"),
            crawler.stats.get_int("item_scraped_count"),
        ),
        Err(f) => {
            eprintln!("crawl failed: {f}");
            std::process::exit(1);
        }
    }
}
