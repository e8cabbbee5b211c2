// The load figures of benches/RESULTS.md (DESIGN.md §14b says what they bound): peak RSS with a huge
// start() and RSS over a long crawl, against a fixture server in another process.
//
//   target/release/trawl serve --pages 200000 --port 8899 &
//   cargo run --release --example load -- start-urls http://127.0.0.1:8899 1000000 1000
//   cargo run --release --example load -- crawl http://127.0.0.1:8899 200000 1000
//
// `start-urls BASE N CONC`: a spider whose lazy start() yields N requests (the fixture's
// pages with a `?n=` query, so none is a duplicate, `dont_filter` as Scrapy's start
// requests are); every page's quotes become items and its links are followed.
// `crawl BASE PAGES CONC`: the fixture crawl from /index.html (every page, every link).
// Both write a JSON-lines feed to trawl-load.jsonl, print RSS and the scheduler's
// pending requests every 10,000 pages, and a JSON summary (pages, items, peak RSS).

use serde_json::json;
use std::time::Instant;
use trawl::crawl::{
    CallbackResult, Item, LinkExtractor, Output, Outputs, Priority, Request, Response, Settings,
    Spider, run_spider,
};
use trawl::testing::spiders::FixtureSpider;

/// The fixture spider with a start() of `count` distinct page URLs.
struct ManyStarts {
    base: String,
    count: u64,
    pages: u64,
    host: String,
    links: LinkExtractor,
}

impl Spider for ManyStarts {
    fn name(&self) -> &str {
        "load"
    }

    fn allowed_domains(&self) -> Vec<String> {
        vec![self.host.clone()]
    }

    fn start(&mut self) -> Outputs {
        let (base, pages) = (self.base.clone(), self.pages.max(1));
        Box::new((0..self.count).filter_map(move |n| {
            let i = n % pages;
            let url = format!("{base}/s/{:03}/{:05}.html?n={n}", i / 100, i);
            Request::get(&url)
                .ok()
                .map(|r| Ok(Output::Request(r.with_dont_filter(true))))
        }))
    }

    fn parse(&mut self, response: &Response) -> CallbackResult {
        let mut out = Vec::new();
        for quote in response.css("div.quote") {
            out.push(Output::Item(
                Item::new()
                    .with("url", response.url().as_str())
                    .with("text", quote.css("span.text::text").get()),
            ));
        }
        for link in self.links.extract_links(response) {
            if let Ok(request) = Request::get(&link.url) {
                out.push(Output::Request(request));
            }
        }
        Ok(out)
    }
}

/// Wraps a spider: every 10,000 responses, notes the time, this process's RSS and the
/// scheduler's pending requests (`scheduler/enqueued` − `scheduler/dequeued`).
struct Sampled {
    inner: Box<dyn Spider>,
    ctx: Option<std::rc::Rc<trawl::crawl::CrawlContext>>,
    seen: u64,
    started: Instant,
}

impl Spider for Sampled {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn allowed_domains(&self) -> Vec<String> {
        self.inner.allowed_domains()
    }

    fn start_urls(&self) -> Vec<String> {
        self.inner.start_urls()
    }

    fn start(&mut self) -> Outputs {
        self.inner.start()
    }

    fn set_context(&mut self, ctx: &std::rc::Rc<trawl::crawl::CrawlContext>) {
        self.ctx = Some(ctx.clone());
        self.inner.set_context(ctx);
    }

    fn parse(&mut self, response: &Response) -> CallbackResult {
        self.seen += 1;
        if self.seen.is_multiple_of(10_000)
            && let Some(ctx) = &self.ctx
        {
            let pending =
                ctx.stats.get_int("scheduler/enqueued") - ctx.stats.get_int("scheduler/dequeued");
            eprintln!(
                "t={:.0}s pages={} rss={:.1} MB pending={pending}",
                self.started.elapsed().as_secs_f64(),
                self.seen,
                rss_kb().unwrap_or(0) as f64 / 1024.0,
            );
        }
        self.inner.parse(response)
    }
}

fn rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: load (start-urls BASE N | crawl BASE PAGES) [CONCURRENCY]";
    let (Some(mode), Some(base), Some(n)) = (
        args.first(),
        args.get(1),
        args.get(2).and_then(|n| n.parse::<u64>().ok()),
    ) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let base = base.trim_end_matches('/').to_owned();
    let concurrency: u64 = args.get(3).and_then(|c| c.parse().ok()).unwrap_or(1000);
    let spider: Box<dyn Spider> = match mode.as_str() {
        "start-urls" => Box::new(ManyStarts {
            host: url::Url::parse(&base)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned))
                .unwrap_or_default(),
            base: base.clone(),
            count: n,
            pages: 2000,
            links: LinkExtractor::new().with_text(false),
        }),
        "crawl" => Box::new(FixtureSpider::new(&format!("{base}/index.html"))),
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };

    let mut settings = Settings::new();
    for (name, value) in [
        ("CONCURRENT_REQUESTS", concurrency),
        ("CONCURRENT_REQUESTS_PER_DOMAIN", concurrency),
    ] {
        settings.set(name, value, Priority::Cmdline);
    }
    settings.set("LOG_LEVEL", "WARNING", Priority::Cmdline);
    settings.set("ROBOTSTXT_OBEY", false, Priority::Cmdline);
    settings.set(
        "FEEDS",
        json!({ "trawl-load.jsonl": {"format": "jsonlines", "overwrite": true} }),
        Priority::Cmdline,
    );

    let started = Instant::now();
    let spider = Box::new(Sampled {
        inner: spider,
        ctx: None,
        seen: 0,
        started,
    });
    let result = run_spider(spider, settings);
    match result {
        Ok(crawler) => {
            let secs = started.elapsed().as_secs_f64();
            let pages = crawler.stats.get_int("response_received_count");
            println!(
                "{}",
                json!({
                    "mode": mode,
                    "n": n,
                    "concurrency": concurrency,
                    "pages": pages,
                    "items": crawler.stats.get_int("item_scraped_count"),
                    "seconds": secs,
                    "pages_per_second": pages as f64 / secs,
                    "peak_rss_mb": trawl::util::peak_rss().map(|b| b as f64 / 1048576.0),
                    "final_rss_mb": rss_kb().map(|k| k as f64 / 1024.0),
                    "max_stall_ms": crawler.stats.get_value("reactor/max_stall_ms"),
                })
            );
        }
        Err(f) => {
            eprintln!("crawl failed: {f}");
            std::process::exit(1);
        }
    }
}
