//! The stable measure of the speed campaign: heap allocations and bytes allocated per
//! page by the crawl's own thread, for a fixed in-process workload — the peer
//! benchmark's fixture crawl (downloader middlewares, scheduler, scraper, link
//! extraction, a JSON-lines feed) of a 2,000-page fixture site served on loopback by
//! the in-process fixture server. The server runs on its own thread and its
//! allocations are not counted (the counter is per thread), so the numbers are the
//! crawler's alone and do not move with the machine's load.
//!
//! Instructions per page come from the same workload under callgrind
//! (`scripts/instructions.sh`, which counts the crawl thread only).
//!
//! `cargo bench --bench per_page`; `cargo test --benches` smoke-runs it on 200 pages.

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use serde_json::json;
use support::smoke;
use trawl::crawl::{Priority, Settings, run_spider};
use trawl::testing::spiders::FixtureSpider;
use trawl::testing::{FixtureOptions, FixtureServer};

/// Counts allocations and bytes on threads that opted in.
struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
    static BYTES: Cell<u64> = const { Cell::new(0) };
}

fn note(size: usize) {
    // `try_with`: the thread-locals may be gone while a thread exits.
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
            let _ = BYTES.try_with(|b| b.set(b.get() + size as u64));
        }
    });
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A realloc is an allocation (it may move), of the new size.
        note(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn main() {
    let pages = if smoke() { 200 } else { 2000 };
    let server = FixtureServer::start(FixtureOptions {
        pages,
        ..FixtureOptions::default()
    })
    .expect("fixture server");
    let feed = std::env::temp_dir().join(format!("trawl-per-page-{}.jl", std::process::id()));
    let mut settings = Settings::new();
    settings.set("CONCURRENT_REQUESTS", 16, Priority::Cmdline);
    settings.set("CONCURRENT_REQUESTS_PER_DOMAIN", 16, Priority::Cmdline);
    settings.set("LOG_LEVEL", "WARNING", Priority::Cmdline);
    settings.set(
        "FEEDS",
        json!({ feed.to_string_lossy(): {"format": "jsonlines", "overwrite": true} }),
        Priority::Cmdline,
    );
    let spider = Box::new(FixtureSpider::new(&server.url("/index.html")));

    COUNTING.with(|c| c.set(true));
    let crawler = run_spider(spider, settings).expect("the crawl runs");
    COUNTING.with(|c| c.set(false));
    let _ = std::fs::remove_file(&feed);

    let responses = crawler.stats.get_int("response_received_count") as f64;
    let items = crawler.stats.get_int("item_scraped_count");
    let (allocs, bytes) = (ALLOCS.with(Cell::get), BYTES.with(Cell::get));
    assert!(responses > 0.0, "no page was crawled");
    println!(
        "per page ({} responses, {items} items, crawl thread only): {:.1} allocations, {:.0} bytes allocated",
        responses,
        allocs as f64 / responses,
        bytes as f64 / responses,
    );
}
