//! The request record: bytes per record and encode / decode time for a plain GET and
//! for a POST with headers, meta and a body (what a disk or Redis queue pays per
//! request).
//!
//! `cargo bench --bench request_record`; `cargo test --benches` smoke-runs it.

mod support;

use std::hint::black_box;

use support::bench;
use trawl::crawl::Request;
use trawl::crawl::record::{decode, encode, encode_into};

fn main() {
    let get = Request::get("https://quotes.example.com/page/7/").expect("url");
    let post = Request::get("https://api.example.com/v1/search?lang=en")
        .expect("url")
        .with_method("POST")
        .with_callback("parse_results")
        .with_priority(-3)
        .with_header("Content-Type", "application/x-www-form-urlencoded")
        .with_header("Referer", "https://api.example.com/v1/")
        .with_header("X-Token", "0123456789abcdef")
        .with_meta("depth", 2)
        .with_meta("download_slot", "api.example.com")
        .with_body(b"q=rust+crawler&page=2&sort=recent".to_vec());
    for (name, r) in [
        ("plain GET", &get),
        ("POST with headers, meta, body", &post),
    ] {
        let rec = encode(r);
        println!(
            "record/{name}: {} bytes (URL {} bytes; JSON form {} bytes)",
            rec.len(),
            r.url().as_str().len(),
            serde_json::to_string(r).map_or(0, |j| j.len())
        );
        let mut buf = Vec::with_capacity(256);
        bench(&format!("record/{name}: encode"), 100_000, || {
            buf.clear();
            encode_into(black_box(r), &mut buf);
            buf.len()
        });
        bench(&format!("record/{name}: decode"), 100_000, || {
            decode(black_box(&rec)).map(|r| r.priority()).unwrap_or(0)
        });
        let json = serde_json::to_string(r).expect("json");
        bench(
            &format!("record/{name}: JSON decode (for comparison)"),
            100_000,
            || {
                serde_json::from_str::<Request>(black_box(&json))
                    .map(|r| r.priority())
                    .unwrap_or(0)
            },
        );
    }
}
