// RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir tests/fuzz robots
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // The first bytes pick the path and agent; the rest is the robots.txt.
    let split = data.first().map_or(0, |b| usize::from(*b) % 64).min(data.len());
    let (head, body) = data.split_at(split);
    let robots = trawl::crawl::robots::RobotsTxt::parse(body);
    let path = String::from_utf8_lossy(head);
    if let Ok(url) = url::Url::parse(&format!("http://example.com/{path}")) {
        let _ = robots.allowed(&url, "FooBot/1.0");
        let _ = robots.crawl_delay("FooBot/1.0");
        let _ = robots.request_rate(&path);
    }
});
