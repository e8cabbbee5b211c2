// RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir tests/fuzz request_record
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // Any bytes: an error or a request that encodes back to the same bytes.
    if let Ok(r) = trawl::crawl::record::decode(data) {
        let again = trawl::crawl::record::encode(&r);
        assert_eq!(trawl::crawl::record::decode(&again).ok(), Some(r));
    }
});
