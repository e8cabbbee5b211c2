// RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir tests/fuzz sitemap -- -timeout=2
#![no_main]

use trawl::crawl::sitemap::{gunzip_limited, parse_sitemap, sitemap_urls_from_robots};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // The same bytes as a sitemap (urlset or sitemapindex), as the robots.txt that
    // lists sitemaps, and as a gzip body under a 64 KiB cap.
    if let Ok(sitemap) = parse_sitemap(data) {
        assert!(sitemap.entries.len() <= data.len());
    }
    let Ok(base) = url::Url::parse("http://www.example.com/robots.txt") else {
        return;
    };
    let listed = sitemap_urls_from_robots(data, &base);
    assert!(listed.len() <= data.len());
    if let Ok(body) = gunzip_limited(data, 64 * 1024) {
        assert!(body.len() <= 64 * 1024);
        let _ = parse_sitemap(&body);
    }
});
