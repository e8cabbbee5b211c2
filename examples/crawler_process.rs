// cargo run --release --example crawler_process -- [N] [PAGES] [DOWNLOAD_DELAY]
//
// Scrapy's `CrawlerProcess` script: several spiders in one process, at once, on one
// thread. It starts the fixture site (PAGES pages, default 300), crawls it once alone
// to time one crawl, then N times at once (default 20) with a `CrawlerProcess` — each
// crawl with its own settings, stats, scheduler, downloader, feed and log scope — and
// prints the items each scraped and the time against N solo crawls one after another.
// Each crawl is polite (DOWNLOAD_DELAY, default 0.01 s, one request at a time per
// site), as real crawls are: a crawl mostly waits, and the others use the wait.

use std::time::Instant;

use trawl::crawl::{CrawlerProcess, Priority, Settings, Spider};
use trawl::testing::spiders::FixtureSpider;
use trawl::testing::{FixtureOptions, FixtureServer};

fn spider(name: String, start: &str) -> Box<dyn Spider> {
    // The fixture spider under a name of its own (each crawl's log records and feed).
    Box::new(FixtureSpider::new(start).with_name(&name))
}

fn settings(delay: f64) -> Settings {
    let mut s = Settings::new();
    s.set("DOWNLOAD_DELAY", delay, Priority::Project);
    s.set("DOWNLOAD_DELAY_JITTER", 0, Priority::Project);
    s.set("LOG_LEVEL", "WARNING", Priority::Project);
    s.set("LOGSTATS_INTERVAL", 0, Priority::Project);
    s
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let pages: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(300);
    let delay: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(0.01);
    let server = FixtureServer::start(FixtureOptions {
        pages,
        ..FixtureOptions::default()
    })
    .expect("fixture server");
    let start = server.url("/index.html");

    let t = Instant::now();
    let mut solo = CrawlerProcess::new(settings(delay)).expect("reactor");
    let one = solo.crawl(spider("solo".into(), &start));
    solo.start().expect("crawl");
    let solo_secs = t.elapsed().as_secs_f64();
    let solo_items = one
        .take_result()
        .and_then(Result::ok)
        .map_or(0, |c| c.stats.get_int("item_scraped_count"));

    let t = Instant::now();
    let mut process = CrawlerProcess::new(settings(delay)).expect("reactor");
    // Each crawl may have settings of its own over the process's.
    let crawls: Vec<_> = (0..n)
        .map(|i| {
            let mut own = Settings::new();
            own.set("CONCURRENT_REQUESTS", 8 + (i % 3) * 4, Priority::Project);
            process.crawl_with(spider(format!("site{i}"), &start), Some(&own))
        })
        .collect();
    process.start().expect("crawls");
    let secs = t.elapsed().as_secs_f64();
    let mut same = 0;
    for d in crawls {
        if let Some(Ok(c)) = d.take_result()
            && c.stats.get_int("item_scraped_count") == solo_items
        {
            same += 1;
        }
    }
    println!(
        "{n} crawls at once: {same} of {n} scraped the {solo_items} items of a solo crawl; \
         {secs:.2} s against {:.2} s for {n} solo crawls one after another ({:.1}x)",
        solo_secs * n as f64,
        solo_secs * n as f64 / secs
    );
}
