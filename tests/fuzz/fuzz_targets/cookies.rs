// RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir tests/fuzz cookies -- -timeout=2
#![no_main]

use trawl::crawl::middlewares::CookieJar;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // Each line is one Set-Cookie header received from a page on a sub-domain; the
    // jar then answers for the same URL, its parent domain, HTTPS and another path.
    let text = String::from_utf8_lossy(data);
    let (Ok(page), Ok(other), Ok(secure)) = (
        url::Url::parse("http://shop.example.co.uk/a/b/page?x=1"),
        url::Url::parse("http://example.co.uk/"),
        url::Url::parse("https://shop.example.co.uk/a/"),
    ) else {
        return;
    };
    let mut jar = CookieJar::new();
    let mut stored = 0usize;
    for line in text.lines() {
        stored += usize::from(jar.set_cookie(line, &page));
    }
    assert!(jar.len() <= stored);
    for url in [&page, &other, &secure] {
        if let Some(header) = jar.cookie_header(url) {
            assert!(!header.contains('\n'));
        }
    }
});
