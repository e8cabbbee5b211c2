//! `safe_url_string` against Scrapy 2.19 / w3lib 2.5: for every recorded input whose
//! `Request(u).url` Scrapy gives (`tests/data/urls/urls.json`, by `gen_urls.py`),
//! trawl's port must give the same string. The first step of Scrapy's URL model
//! (`Request` itself still parses with the `url` crate).

use serde_json::Value;
use trawl::crawl::safe_url_string;

#[test]
fn safe_url_string_matches_w3lib_on_the_recorded_inputs() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/urls/urls.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let data: Value = serde_json::from_str(&text).expect("urls.json");
    let cases = data["cases"].as_array().expect("cases");
    let mut compared = 0;
    let mut wrong = Vec::new();
    for case in cases {
        let input = case["input"].as_str().expect("input");
        let Some(want) = case["url"].as_str() else {
            continue; // Scrapy raised (missing scheme or a ValueError): not compared here
        };
        compared += 1;
        match safe_url_string(input) {
            Ok(got) if got == want => {}
            Ok(got) => wrong.push(format!("{input:?}\n  trawl  {got:?}\n  scrapy {want:?}")),
            Err(e) => wrong.push(format!("{input:?}\n  trawl  error {e}\n  scrapy {want:?}")),
        }
    }
    assert!(compared >= 250, "{compared} compared");
    assert!(
        wrong.is_empty(),
        "{} of {compared} differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
