// RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir tests/fuzz xml
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(doc) = trawl::html::Document::parse_xml(&text, data.first() == Some(&b's')) {
        let _ = trawl::crawl::Selection::of_document(&doc).xpath("//*").getall();
    }
});
