//! Memory per pending request: 1,000,000 plain GET requests queued in the default
//! scheduler (dupefilter included), measured exactly with a counting global allocator;
//! reported as bytes per request beyond the URL's own text (target ≤ 300 B).
//!
//! `cargo bench --bench scheduler_memory`; `cargo test --benches` smoke-runs it with
//! 10,000 requests.

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::rc::Rc;
use std::sync::atomic::{AtomicIsize, Ordering};

use support::smoke;
use trawl::crawl::scheduler::{
    DefaultScheduler, Enqueued, NextRequest, Scheduler, SchedulerContext, Waker,
};
use trawl::crawl::{Crawler, Registry, Request, Settings, Spider};
use trawl::reactor::ManualClock;
use trawl::testing::spiders::FixtureSpider;

/// Counts live heap bytes (requested sizes) so the memory bench is exact.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const BASE: &str = "http://127.0.0.1:8089";

fn memory_bench(crawl_shaped: bool) {
    let n: usize = if smoke() { 10_000 } else { 1_000_000 };
    let clock = ManualClock::new();
    let spider: Box<dyn Spider> = Box::new(FixtureSpider::new(&format!("{BASE}/index.html")));
    let crawler = Crawler::new(
        spider,
        Settings::new(),
        clock.clock(),
        None,
        Registry::with_builtins(),
    )
    .expect("crawler");
    let builder = crawler.clone();
    let ctx = SchedulerContext {
        activity: Rc::default(),
        wake: Waker::new(|| {}),
        dupefilter: Rc::new(move || builder.registry().dupefilter(builder.context())),
    };
    let mut sched = DefaultScheduler::from_context(crawler.context(), ctx).expect("scheduler");
    // Everything the requests and the scheduler hold: the requests (with their URLs'
    // heap text), queue slots and the dupefilter's fingerprints.
    let before = LIVE.load(Ordering::Relaxed);
    let mut url_bytes = 0;
    for i in 0..n {
        let mut r = Request::get(&format!("{BASE}/s/{:03}/{i:07}.html", i % 1000)).expect("url");
        if crawl_shaped {
            // What a followed link carries: DepthMiddleware's meta, RefererMiddleware's
            // header (the parent page's URL).
            r.meta_mut().insert_static("depth", 3);
            r.headers_mut().set(
                "Referer",
                format!("{BASE}/s/{:03}/{:07}.html", i % 1000, i / 17),
            );
        }
        url_bytes += r.url().as_str().len();
        assert!(
            matches!(sched.enqueue_request(r), Enqueued::Accepted),
            "unique requests were filtered"
        );
    }
    let total = (LIVE.load(Ordering::Relaxed) - before) as f64;
    let per = total / n as f64;
    let url_per = url_bytes as f64 / n as f64;
    println!(
        "memory: {n} queued {}GETs: {per:.0} B/request in the scheduler, of which URL text \
         {url_per:.0} B → {:.0} B beyond the URL (size_of::<Request>() = {})",
        if crawl_shaped {
            "followed-link (depth + Referer) "
        } else {
            "plain "
        },
        per - url_per,
        std::mem::size_of::<Request>(),
    );
    assert_eq!(sched.len(), n);
    let mut popped = 0;
    while let NextRequest::Ready(r) = sched.next_request() {
        black_box(r);
        popped += 1;
    }
    assert_eq!(popped, n);
}

fn main() {
    memory_bench(false);
    memory_bench(true);
}
