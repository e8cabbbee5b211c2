// RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir tests/fuzz html -- -timeout=2
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let html = String::from_utf8_lossy(data);
    let (_, stats) = trawl::html::Document::parse_with_stats(&html);
    // Linear work, whatever the input (a slow input is a failure too: -timeout).
    assert!(stats.steps <= 6 * html.len() as u64 + 64);
    let mut links = 0usize;
    trawl::html::scan_links(&html, &["a".into(), "area".into()], &["href".into()], true, |_| {
        links += 1
    });
});
