//! The canonicalisation and fingerprint vectors recorded from w3lib and Scrapy.

use super::canonicalize::{canonicalize, fast_path};
use super::*;
use crate::crawl::http::fingerprint::{
    digest as fingerprint_bytes, json_document as fingerprint_json,
};
use crate::crawl::util::pyjson::push_str;
use crate::util::push_hex;
use serde_json::Value;

const CANON_VECTORS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/canonicalize_url.json"
);
const FP_VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fingerprints.json");

/// Inputs whose Python result is not reproduced, skipped by the vector
/// tests. None so far: all vectors match.
const KNOWN_DIVERGENCES: &[&str] = &[];

fn load(path: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    doc["vectors"].as_array().unwrap().clone()
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::new();
    push_hex(&mut s, bytes);
    s
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Checks every vector of a file in the `canonicalize_url.json` format;
/// returns the number checked.
fn check_canonicalize_file(path: &str) -> usize {
    let vectors = load(path);
    let mut failures = Vec::new();
    let mut checked = 0;
    for v in &vectors {
        let input = v["input"].as_str().unwrap();
        if KNOWN_DIVERGENCES.contains(&input) {
            continue;
        }
        checked += 1;
        let kbv = v["keep_blank_values"].as_bool().unwrap();
        let kf = v["keep_fragments"].as_bool().unwrap();
        let got = canonicalize_url(input, kbv, kf);
        let ok = match (v.get("output").and_then(Value::as_str), &got) {
            (Some(want), Ok(got)) => got == want,
            (None, Err(_)) => true,
            _ => false,
        };
        if !ok {
            let want = v.get("output").or_else(|| v.get("error"));
            failures.push(format!(
                "{input:?} kbv={kbv} kf={kf}: want {want:?}, got {got:?}"
            ));
        }
    }
    println!("{path}: {}/{checked} passed", checked - failures.len());
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    checked
}

#[test]
fn canonicalize_url_vectors() {
    assert_eq!(check_canonicalize_file(CANON_VECTORS), 1028);
}

/// Differential check against more Python output:
/// `CANON_VECTORS_FILE=/path/to/vectors.json cargo test -- --ignored extra_canonicalize_vectors`
/// (fails without the variable, or on a file with no vectors: nothing checked is not a pass).
#[test]
#[ignore = "needs CANON_VECTORS_FILE, a file shaped like canonicalize_url.json"]
fn extra_canonicalize_vectors() {
    let path = std::env::var("CANON_VECTORS_FILE")
        .expect("CANON_VECTORS_FILE names a file shaped like canonicalize_url.json");
    let checked = check_canonicalize_file(&path);
    assert!(checked > 0, "{path}: no vectors checked");
}

#[test]
fn fingerprint_vectors() {
    let vectors = load(FP_VECTORS);
    assert_eq!(vectors.len(), 304);
    for v in &vectors {
        let url = v["request_url"].as_str().unwrap();
        let method = v["request_method"].as_str().unwrap();
        let body = unhex(v["body_hex"].as_str().unwrap());
        let keep_fragments = v["keep_fragments"].as_bool().unwrap();
        let request_headers: Vec<(&str, &str)> = v["headers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| (h[0].as_str().unwrap(), h[1].as_str().unwrap()))
            .collect();
        // Scrapy: sorted(include_headers), lower-cased, kept if present.
        let mut names: Vec<String> = v["include_headers"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|h| h.as_str().unwrap().to_lowercase())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names.dedup();
        let headers: Vec<(&[u8], Vec<&[u8]>)> = names
            .iter()
            .map(|name| {
                let values: Vec<&[u8]> = request_headers
                    .iter()
                    .filter(|(k, _)| k.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v.as_bytes())
                    .collect();
                (name.as_bytes(), values)
            })
            .filter(|(_, values)| !values.is_empty())
            .collect();
        let canonical = canonicalize_url(url, true, keep_fragments).unwrap();
        let json = fingerprint_json(method, &canonical, &body, &headers);
        assert_eq!(json, v["fingerprint_json"].as_str().unwrap(), "{url:?}");
        let fp = fingerprint_bytes(method, &canonical, &body, &headers);
        assert_eq!(hex(&fp), v["fingerprint"].as_str().unwrap(), "{url:?}");
    }
    println!("fingerprints: {}/{} passed", vectors.len(), vectors.len());
}

#[test]
fn fingerprint_json_sorts_and_dedups_headers() {
    let b: (&[u8], Vec<&[u8]>) = (b"b", vec![b"2"]);
    let a: (&[u8], Vec<&[u8]>) = (b"a", vec![b"1", b"x"]);
    let json = fingerprint_json("GET", "http://e/", b"", &[b.clone(), a.clone(), a]);
    assert_eq!(
        json,
        r#"{"body": "", "headers": {"61": ["31", "78"], "62": ["32"]}, "method": "GET", "url": "http://e/"}"#
    );
}

#[test]
fn json_escapes_like_python() {
    let mut s = String::new();
    push_str(&mut s, "a\"\\\n\u{7f}é😀", true);
    assert_eq!(s, r#""a\"\\\n\u007f\u00e9\ud83d\ude00""#);
}

#[test]
fn fast_path_matches_general_path() {
    for url in [
        "http://127.0.0.1:8089/s/001/00150.html",
        "http://example.com/path?b=2&a=1#f",
        "https://a.b:0/x?",
        "http://a#x?y",
        "http://a?b#c",
        "http://a.com/x[y]|z@:=!$&'()*+,",
        // Borrowed answers: nothing after the path, or only a dropped fragment.
        "http://a.com/p/1.html#frag",
        "http://a.com/p/1.html#",
        "https://a.com/",
        "http://a.com:8080/x/y.html",
        "http://a.com#f",
    ] {
        for kf in [false, true] {
            let fast = fast_path(url, true, kf).unwrap();
            // The general path, as if the fast path declined.
            let stripped = format!(" {url}");
            assert_eq!(canonicalize(&stripped, true, kf).unwrap(), fast, "{url}");
        }
    }
}

#[test]
fn malformed_urls_are_errors_not_panics() {
    for url in [
        "http://[",
        "http://]",
        "http://[]",
        "http://[::1]x",
        "http://a:99999999999999999999/",
        "http://a:0x50/",
        "http://[v]/",
        "http://[V1.a]/",
        "http://[::1%]/",
        "http://[::1%25é]/",
        "http://[1.2.3.4]/",
        "http://ａ／b/",
    ] {
        assert!(canonicalize_url(url, true, true).is_err(), "{url}");
    }
    for url in [
        "%",
        "http://%zz",
        "http://ü:/",
        "\u{1}",
        "http://。/",
        "http://ﬀ.de/",
        "http://[::]/",
        "http://[0::0]/",
    ] {
        assert!(canonicalize_url(url, true, true).is_ok(), "{url}");
    }
}

#[test]
fn the_streamed_digest_hashes_exactly_the_json_document() {
    use sha1::{Digest, Sha1};
    // A body spanning several hex chunks (and not a multiple of one), headers in
    // reverse order with a repeated name, a non-ASCII URL.
    let body: Vec<u8> = (0..100_003u32).map(|i| (i * 7919 % 251) as u8).collect();
    let headers: Vec<(&[u8], Vec<&[u8]>)> = vec![
        (b"x-b", vec![b"2", b"\xff"]),
        (b"x-a", vec![b"1"]),
        (b"x-b", vec![b"3"]),
    ];
    for body in [&body[..], &body[..256], &b""[..]] {
        let text = fingerprint_json("POST", "http://ex.com/é?a=1", body, &headers);
        let expected: [u8; 20] = Sha1::digest(text.as_bytes()).into();
        assert_eq!(
            fingerprint_bytes("POST", "http://ex.com/é?a=1", body, &headers),
            expected
        );
    }
}

#[test]
fn the_fingerprint_escapes_what_it_does_not_know_to_be_plain() {
    // `fingerprint` writes a standard method's name and a fast-path canonical URL
    // without scanning them for JSON escapes; a method of its own and any other URL
    // are scanned. Each request's digest is the SHA-1 of its JSON document (the
    // document `fingerprint_vectors` checks against Scrapy's).
    use crate::crawl::http::fingerprint::{FingerprintOptions, fingerprint, fingerprint_json};
    use crate::crawl::http::request::Request;
    use sha1::{Digest, Sha1};
    let long_host = format!("http://{}.com/", "ü".repeat(64));
    let urls = [
        "http://example.com/a/b.html",
        "http://example.com/a?b=1&a=2",
        "http://example.com/a#frag",
        long_host.as_str(),
    ];
    let mut escaped = 0;
    for method in ["GET", "POST", "DELETE", "GE\"T", "X\\Y", "MÉTHODE"] {
        for url in urls {
            let request = Request::get(url).expect("url").with_method(method);
            for keep_fragments in [false, true] {
                let options = FingerprintOptions {
                    keep_fragments,
                    ..FingerprintOptions::default()
                };
                let json = fingerprint_json(&request, &options);
                escaped += usize::from(["\\\"", "\\\\", "\\u"].iter().any(|e| json.contains(e)));
                let expected: [u8; 20] = Sha1::digest(json.as_bytes()).into();
                assert_eq!(fingerprint(&request, &options), expected, "{json}");
            }
        }
    }
    // The methods with a quote, a backslash or a non-ASCII letter (with every URL), and
    // the URL whose host w3lib cannot encode (kept as it is) with the others, took
    // escapes.
    assert_eq!(escaped, 3 * urls.len() * 2 + 3 * 2);
}
