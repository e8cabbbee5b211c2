//! Hostile HTML: each input at a base size n, 4n and 16n, through the DOM
//! (`Document::parse`) and the DOM-free link scanner (`scan_links`). Linear time shows
//! as a ~4× ratio between consecutive sizes (quadratic would be 16×; caches and
//! allocation make large inputs somewhat slower per byte); the ns/byte column compares
//! inputs with each other and with an ordinary fixture page.
//!
//! `cargo bench --bench html_adversarial`; `cargo test --benches` smoke-runs it at a
//! tenth of the sizes.

mod support;

use std::time::Instant;

use support::smoke;
use trawl::html::{Document, scan_links};

type Make = fn(usize) -> String;

/// (name, generator of an input with about `n` repetitions, base n).
const INPUTS: &[(&str, Make, usize)] = &[
    (
        "& + n letters",
        |n| format!("<p>&{}</p>", "a".repeat(n)),
        500_000,
    ),
    (
        "n × `&aaaa…` (40 letters)",
        |n| "&aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".repeat(n),
        12_500,
    ),
    ("n nested <div>", |n| "<div>".repeat(n), 50_000),
    (
        "<body> + n × <div><span><b><i>",
        |n| format!("<body>{}", "<div><span><b><i>".repeat(n)),
        12_500,
    ),
    (
        "n <div> then n stray </x>",
        |n| format!("{}{}", "<div>".repeat(n), "</x>".repeat(n)),
        25_000,
    ),
    (
        "n attributes on one tag",
        |n| {
            let mut s = String::from("<a href=x");
            for i in 0..n {
                s.push_str(&format!(" a{i}=v"));
            }
            s + ">t</a>"
        },
        25_000,
    ),
    ("n links", |n| "<a href=/x>x</a>".repeat(n), 25_000),
    ("one line of n bytes", |n| "x".repeat(n), 3_200_000),
    ("n × <!---->", |n| "<!---->".repeat(n), 75_000),
    (
        "unclosed comment, n bytes",
        |n| format!("<p><!--{}", "-a".repeat(n / 2)),
        500_000,
    ),
    (
        "unclosed attribute, n bytes",
        |n| format!("<a href=\"{}", "x".repeat(n)),
        500_000,
    ),
    (
        "unclosed <script>, n × `</scrip <!-- <script `",
        |n| format!("<script>{}", "</scrip <!-- <script ".repeat(n)),
        25_000,
    ),
];

fn time(mut f: impl FnMut()) -> f64 {
    let runs = if smoke() { 1 } else { 3 };
    let mut best = f64::MAX;
    for _ in 0..runs {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_secs_f64());
    }
    best
}

fn main() {
    let scale = if smoke() { 10 } else { 1 };
    println!(
        "{:<48} {:>10} {:>10} {:>8} {:>10} {:>8}",
        "input (n, 4n, 16n)", "bytes", "DOM ms", "ns/B", "scan ms", "×prev"
    );
    for (name, make, n) in INPUTS {
        let n = n / scale;
        let mut dom_ms = [0.0; 3];
        for (i, n) in [n, 4 * n, 16 * n].into_iter().enumerate() {
            let html = make(n);
            let dom = time(|| {
                std::hint::black_box(Document::parse(&html));
            });
            let scan = time(|| {
                let mut k = 0usize;
                scan_links(&html, &["a".into()], &["href".into()], true, |_| k += 1);
                std::hint::black_box(k);
            });
            dom_ms[i] = dom * 1e3;
            println!(
                "{:<48} {:>10} {:>10.2} {:>8.2} {:>10.2} {:>8}",
                if i == 0 { *name } else { "" },
                html.len(),
                dom * 1e3,
                dom * 1e9 / html.len() as f64,
                scan * 1e3,
                if i > 0 {
                    format!("{:.1}×", dom_ms[i] / dom_ms[i - 1].max(1e-6))
                } else {
                    String::new()
                }
            );
        }
    }
    // An ordinary page for scale.
    let site = trawl::testing::Site::new(10, "http://127.0.0.1:8089");
    let page = site.render_page(3);
    let t = time(|| {
        for _ in 0..1000 {
            std::hint::black_box(Document::parse(&page));
        }
    });
    println!(
        "{:<48} {:>10} {:>10.3} {:>8.2}",
        "a fixture page (for scale)",
        page.len(),
        t * 1e3 / 1000.0,
        t * 1e9 / 1000.0 / page.len() as f64
    );
}
