//! The DOM's memory per byte of HTML: one-line pages of 50 MB (a text run, dense
//! elements, dense links, dense attributes, a real page repeated) through
//! `Document::parse`, measured exactly with a counting global allocator. Reports the
//! retained DOM and the peak during the parse as multiples of the input's size (the
//! input string itself excluded).
//!
//! `cargo bench --bench dom_memory`; `cargo test --benches` smoke-runs it on 1 MB pages.

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicIsize, Ordering};

use support::smoke;
use trawl::html::Document;

/// Counts live heap bytes (requested sizes) and their high-water mark.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn grew(by: isize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        grew(new_size as isize - layout.size() as isize);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A page of about `size` bytes on one line: `head`, then `unit(i)` until full.
fn page(size: usize, head: &str, unit: impl Fn(usize) -> String) -> String {
    let mut s = String::with_capacity(size + 256);
    s.push_str(head);
    let mut i = 0;
    while s.len() < size {
        s.push_str(&unit(i));
        i += 1;
    }
    s
}

fn main() {
    let size = if smoke() { 1 << 20 } else { 50 << 20 };
    let fixture = trawl::testing::Site::new(2000, "http://127.0.0.1:8080").render_page(7);
    let inputs: Vec<(&str, String)> = vec![
        (
            "text run (`word ` × n in one <p>)",
            page(size, "<html><body><p>", |_| "word ".into()),
        ),
        (
            "dense elements (`<p>w</p>`)",
            page(size, "<html><body>", |_| "<p>w</p>".into()),
        ),
        (
            "dense links (`<a href=\"/p/N\">N</a>`)",
            page(size, "<html><body>", |i| {
                format!("<a href=\"/p/{i}\">{i}</a>")
            }),
        ),
        (
            "dense attributes (`<i a=1 b=2 c=3>`)",
            page(size, "<html><body>", |_| "<i a=1 b=2 c=3>".into()),
        ),
        (
            "fixture page repeated (newlines removed)",
            page(size, "", |_| fixture.replace('\n', " ")),
        ),
    ];
    println!("DOM memory per input byte ({} MB pages):", size >> 20);
    for (name, html) in &inputs {
        let before = LIVE.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let doc = Document::parse(html);
        let retained = LIVE.load(Ordering::Relaxed) - before;
        let peak = PEAK.load(Ordering::Relaxed) - before;
        let n = black_box(&doc).len();
        drop(doc);
        let len = html.len() as f64;
        println!(
            "  {name:<44} {n:>9} nodes  retained {:>5.2}× ({:>6.1} MB)  peak {:>5.2}×",
            retained as f64 / len,
            retained as f64 / 1048576.0,
            peak as f64 / len,
        );
    }
}
