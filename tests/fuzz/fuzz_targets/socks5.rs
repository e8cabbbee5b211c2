// RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir tests/fuzz socks5
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = trawl::proto::fuzzing::socks5_handshake(data);
});
