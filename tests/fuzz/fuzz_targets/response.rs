// RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir tests/fuzz response
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = trawl::proto::fuzzing::parse_response(data);
});
