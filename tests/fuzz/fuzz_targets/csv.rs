// RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir tests/fuzz csv
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = trawl::crawl::pycsv::csviter(&text, None, None, None, |_| {}, |_| {});
});
