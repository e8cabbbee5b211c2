//! How a response's encoding is chosen, against w3lib 2.5 / Scrapy 2.19, recorded by
//! `tests/data/encoding/gen_encoding.py` (`encoding.json`): the `Content-Type` charset,
//! the declaration in the body, and the whole decision.

use serde_json::Value;
use trawl::crawl::encoding::resolve_encoding;
use trawl::crawl::encoding::{html_body_declared_encoding, http_content_type_encoding};
use trawl::crawl::{Request, Response};
use trawl::proto::Headers;

fn load() -> Value {
    serde_json::from_str(include_str!("data/encoding/encoding.json")).expect("encoding.json")
}

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect()
}

/// The encoding a Python codec name stands for in trawl (`resolve_encoding` knows
/// Python's names); a recorded name it does not know fails the test.
fn python(name: &Value) -> Option<&'static encoding_rs::Encoding> {
    let name = name.as_str()?;
    Some(resolve_encoding(name.as_bytes()).unwrap_or_else(|| panic!("no codec for {name}")))
}

#[test]
fn content_type_charsets_match_w3lib() {
    let data = load();
    let mut failures = Vec::new();
    for case in data["headers"].as_array().expect("headers") {
        let ct = case["content_type"].as_str().expect("ct");
        let ours = http_content_type_encoding(ct.as_bytes());
        let want = python(&case["encoding"]);
        if ours != want {
            failures.push(format!("{ct:?}: {ours:?}, w3lib {}", case["encoding"]));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn body_declarations_match_w3lib() {
    let data = load();
    let mut failures = Vec::new();
    for case in data["bodies"].as_array().expect("bodies") {
        let body = unhex(case["body_hex"].as_str().expect("hex"));
        let ours = html_body_declared_encoding(&body);
        let want = python(&case["encoding"]);
        if ours != want {
            failures.push(format!(
                "{:?}: {ours:?}, w3lib {}",
                String::from_utf8_lossy(&body[..body.len().min(80)]),
                case["encoding"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn response_encodings_match_scrapy() {
    let data = load();
    let mut failures = Vec::new();
    let mut compared = 0;
    for case in data["responses"].as_array().expect("responses") {
        // Scrapy's answer for an undeclared body that is neither ASCII nor UTF-8 is
        // charset-normalizer's guess; trawl reads windows-1252 (DESIGN.md §15).
        if case["guessed"].as_bool() == Some(true) {
            continue;
        }
        let ct = case["content_type"].as_str().expect("ct");
        let body = unhex(case["body_hex"].as_str().expect("hex"));
        let mut headers = Headers::new();
        headers.append("Content-Type", ct);
        let request = Request::get("http://example.com/").expect("request");
        let r = Response::new(request, 200, headers, body.clone());
        let want = python(&case["encoding"]);
        compared += 1;
        if Some(r.encoding()) != want {
            failures.push(format!(
                "{ct:?} {:?}: {}, Scrapy {}",
                String::from_utf8_lossy(&body),
                r.encoding().name(),
                case["encoding"]
            ));
        }
    }
    assert!(compared >= 30, "{compared}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
