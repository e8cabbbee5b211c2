// RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir tests/fuzz xpath
#![no_main]

// An expression (the input up to the first NUL) compiled and, when it compiles,
// evaluated on the rest parsed as HTML, from the root element, from every element and
// as parsel's chained `.xpath()`: no panic, no stack overflow, no hang (the script's
// `-timeout=2` makes a slow input a failure).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let (expr, rest) = data.split_at(split);
    let Ok(expr) = std::str::from_utf8(expr) else {
        return;
    };
    let html = String::from_utf8_lossy(rest.get(1..).unwrap_or(&[]));
    let html = if html.is_empty() {
        "<ul><li class='a b'>1</li><li id=x>2 <b>t</b></li></ul><p>3</p>".into()
    } else {
        html
    };
    let Ok(x) = trawl::html::XPath::compile(expr) else {
        return;
    };
    let doc = trawl::html::Document::parse(&html);
    let vars = [("n", trawl::html::XPathVar::Number(2.0))];
    let _ = x.evaluate_document(&doc, &vars);
    for e in doc.elements().take(16) {
        let _ = x.evaluate(e, &vars);
    }
    let response = trawl::crawl::Response::new(
        trawl::crawl::Request::get("http://example.com/").expect("constant URL"),
        200,
        trawl::proto::Headers::new(),
        html.into_owned(),
    );
    let _ = response.xpath(expr).xpath(expr).getall();
});
