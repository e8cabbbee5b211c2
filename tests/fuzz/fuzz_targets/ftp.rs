// RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir tests/fuzz ftp
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = trawl::proto::fuzzing::parse_ftp(data);
});
