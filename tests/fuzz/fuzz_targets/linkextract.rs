// RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir tests/fuzz linkextract -- -timeout=2
#![no_main]

use trawl::crawl::{LinkExtractor, Request, Response};
use trawl::proto::Headers;

const CHARSETS: [&str; 6] = [
    "text/html",
    "text/html; charset=utf-8",
    "text/html; charset=latin-1",
    "text/html; charset=shift_jis",
    "text/html; charset=cp1251",
    "text/html; charset=utf-16",
];

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // The first byte picks the declared charset and the extractor's options; the
    // rest is the body of a page at a URL with a path and a query.
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let Ok(request) = Request::get("http://www.example.com/dir/page.html?q=1") else {
        return;
    };
    let mut headers = Headers::new();
    headers.append("Content-Type", CHARSETS[usize::from(pick) % CHARSETS.len()]);
    let response = Response::new(request, 200, headers, body.to_vec());
    let mut extractor = LinkExtractor::new()
        .canonicalize(pick & 0x08 != 0)
        .unique(pick & 0x10 != 0)
        .with_text(pick & 0x20 != 0);
    if pick & 0x40 != 0 {
        extractor = extractor.tags(["a", "area", "link", "img"]).attrs(["href", "src"]);
    }
    let links = extractor.extract_links(&response);
    // At most one link per attribute, and every attribute takes bytes of the body.
    assert!(links.len() <= body.len());
    for link in &links {
        // Scrapy's `_is_valid_url`: only these schemes leave the extractor.
        let scheme = link.url.split("://").next().unwrap_or("");
        assert!(
            matches!(scheme, "http" | "https" | "file" | "ftp"),
            "a link with scheme {scheme}: {}",
            link.url
        );
    }
    let _ = response.follow_all(links.iter().map(|l| l.url.as_str()));
});
