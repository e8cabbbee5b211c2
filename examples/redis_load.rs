// cargo run --release --example redis_load -- REDIS_URL WORKERS [PAGES] [LINKS] [ITEMS] [PREFETCH] [ITEMS_SHARDS] [FETCH_MS] [FLUSH_MS]
//
// A load generator for the distributed layer (`trawl::testing::redis_load`): WORKERS
// simulated workers on one reactor thread, each with its own connection,
// `RedisScheduler` and `RedisPipeline`, crawling a synthetic site of PAGES pages
// (20,000) with LINKS links (17) and ITEMS items (4) per page, PREFETCH (16) requests
// in flight each, nothing fetched; ITEMS_SHARDS (1) is `REDIS_ITEMS_SHARDS`; with
// FETCH_MS (0) each page completes 0.5-1.5 times that many milliseconds after its pop,
// one at a time, as a throttled crawl's pages do; FLUSH_MS sets REDIS_FLUSH_DELAY.
//
// Prints one JSON line: pages, seconds, pages/s. `scripts/redis_cost.py --load N,...`
// runs it against its own redis-server and adds the server's CPU per page.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use serde_json::json;
use trawl::testing::redis_load::{LoadSite, run_with};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: u64| -> u64 {
        args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default)
    };
    let Some(url) = args.first().cloned() else {
        eprintln!(
            "usage: redis_load REDIS_URL WORKERS [PAGES] [LINKS] [ITEMS] [PREFETCH] [ITEMS_SHARDS] [FETCH_MS] [FLUSH_MS]"
        );
        std::process::exit(2);
    };
    let workers = arg(1, 1).max(1);
    let site = LoadSite {
        pages: arg(2, 20_000).max(1),
        links: arg(3, 17),
        items: arg(4, 4),
        fetch_delay: arg(7, 0) as f64 / 1000.0,
    };
    let prefetch = arg(5, 16).max(1) as usize;
    let items_shards = arg(6, 1).max(1);
    let mut extra = vec![("REDIS_ITEMS_SHARDS", json!(items_shards))];
    if let Some(ms) = args.get(8).and_then(|a| a.parse::<f64>().ok()) {
        extra.push(("REDIS_FLUSH_DELAY", json!(ms / 1000.0)));
    }
    let report = match run_with(&url, workers, site, prefetch, &extra) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    println!(
        "{}",
        json!({
            "workers": workers,
            "pages": report.pages,
            "distinct": report.distinct,
            "seconds": report.seconds,
            "pages_per_second": report.pages as f64 / report.seconds.max(1e-9),
            "links": site.links,
            "items": site.items,
            "prefetch": prefetch,
            "fetch_ms": site.fetch_delay * 1000.0,
            "prefiltered": report.stats.get("scheduler/redis/prefiltered").copied().unwrap_or(0),
        })
    );
    if report.pages != site.pages || report.distinct != site.pages {
        std::process::exit(1);
    }
}
