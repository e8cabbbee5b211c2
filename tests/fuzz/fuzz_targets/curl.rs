// RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir tests/fuzz curl
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = trawl::crawl::Request::from_curl_with(text, data.first() == Some(&b'c'));
    }
});
