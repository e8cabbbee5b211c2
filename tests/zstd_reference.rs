//! `Content-Encoding: zstd` against Scrapy 2.19's own `HttpCompressionMiddleware`
//! (with `backports.zstd`): the bodies in tests/data/zstd/cases.json were compressed by
//! Python's zstd module and decoded by Scrapy in tests/data/zstd/record.py. trawl's
//! streaming decoder, fed in pieces as a socket delivers them, must produce the bytes
//! Scrapy produced (compared by SHA-1), refuse what Scrapy refused — a decoded size
//! over `DOWNLOAD_MAXSIZE` (Scrapy's `IgnoreRequest`, trawl's `TooLarge`) and data that
//! is not zstd (`ZstdError`, `Corrupt`) — and differ only where DESIGN §15 says so.

use serde_json::Value as Json;
use sha1::{Digest, Sha1};
use trawl::proto::decode::{ContentDecoder, DecodeError, Encoding};
use trawl::util::base64_decode;

/// Scrapy's `DOWNLOAD_MAXSIZE` default (1 GiB) when a case sets none.
const DEFAULT_MAXSIZE: u64 = 1024 * 1024 * 1024;

/// Cases where trawl deliberately differs, with what it does instead.
const DIFFERENCES: &[(&str, &str)] = &[
    // RFC 9659 §4: a zstd content coding's window must be at most 8 MB, and a decoder
    // may refuse more; browsers do. Scrapy decodes it (a 600-byte body may make the
    // decoder allocate up to its 128 MB default window).
    ("window_of_16_megabytes", "refused: window over 8 MB"),
    // Scrapy keeps what decoded before the stream ended; trawl fails the download, as
    // it does for every coding: a cut body is not the page.
    ("truncated", "refused: truncated"),
];

fn sha1_hex(b: &[u8]) -> String {
    Sha1::digest(b).iter().map(|x| format!("{x:02x}")).collect()
}

fn decode(body: &[u8], limit: u64) -> Result<Vec<u8>, DecodeError> {
    let mut d = ContentDecoder::new(&[Encoding::Zstd], limit);
    let mut out = Vec::new();
    for piece in body.chunks(1500) {
        d.feed(piece, &mut out)?;
    }
    d.finish(&mut out)?;
    Ok(out)
}

#[test]
fn zstd_bodies_decode_as_scrapy_decodes_them() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/zstd/cases.json"),
    )
    .expect("tests/data/zstd/cases.json (made by tests/data/zstd/record.py)");
    let data: Json = serde_json::from_str(&text).expect("JSON");
    let cases = data["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 14);
    let mut differed = Vec::new();
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let body = base64_decode(case["compressed_b64"].as_str().expect("body")).expect("base64");
        let limit = match case["download_maxsize"].as_u64().expect("maxsize") {
            0 => DEFAULT_MAXSIZE,
            n => n,
        };
        let ours = decode(&body, limit);
        let scrapy = &case["scrapy"];
        if let Some((_, what)) = DIFFERENCES.iter().find(|(n, _)| *n == name) {
            assert!(
                scrapy["body_sha1"].is_string(),
                "{name}: Scrapy decodes it, which is the difference"
            );
            let err = ours.expect_err(name).to_string();
            let expect = if what.contains("8 MB") {
                "8 MB"
            } else {
                "truncated"
            };
            assert!(err.contains(expect), "{name}: {err}");
            differed.push(name);
            continue;
        }
        match scrapy["error"].as_str() {
            Some("IgnoreRequest") => assert_eq!(
                ours.map(|b| b.len()),
                Err(DecodeError::TooLarge { limit }),
                "{name}"
            ),
            Some("ZstdError") => assert!(
                matches!(
                    ours,
                    Err(DecodeError::Corrupt {
                        encoding: Encoding::Zstd,
                        ..
                    })
                ),
                "{name}: {ours:?}"
            ),
            Some(other) => panic!("{name}: an unexpected recorded error {other}"),
            None => {
                let got = ours.unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(
                    got.len() as u64,
                    scrapy["body_len"].as_u64().expect("len"),
                    "{name}"
                );
                assert_eq!(
                    sha1_hex(&got),
                    scrapy["body_sha1"].as_str().expect("sha1"),
                    "{name}"
                );
            }
        }
    }
    assert_eq!(differed.len(), DIFFERENCES.len());
}
