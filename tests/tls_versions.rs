//! `DOWNLOAD_TLS_MIN_VERSION` / `DOWNLOAD_TLS_MAX_VERSION` (Scrapy 2.19's names and
//! values) and the deprecated `DOWNLOADER_CLIENT_TLS_METHOD`, against fixture servers
//! that speak only TLS 1.3 or only TLS 1.2: a client whose range misses the server's
//! version fails the handshake, one whose range holds it fetches the page; unknown
//! values and ranges rustls cannot speak (below TLS 1.2) fail the downloads with the
//! reason.

mod util;

use serde_json::{Value, json};
use trawl::testing::{FixtureOptions, FixtureServer};
use util::live::{LiveSpider, crawl, get};

fn only(version: &'static str) -> FixtureServer {
    FixtureServer::start(FixtureOptions {
        pages: 3,
        tls: true,
        tls_only: Some(version),
        ..FixtureOptions::default()
    })
    .expect("tls fixture")
}

/// Fetches `/echo` with these settings: `Ok(())` or the failure's message.
fn fetch(srv: &FixtureServer, settings: &[(&str, Value)]) -> Result<(), String> {
    let spider = LiveSpider::new(vec![get(&srv.url("/echo"))]);
    let mut all = vec![
        ("DOWNLOAD_VERIFY_CERTIFICATES", json!(false)),
        ("ROBOTSTXT_OBEY", json!(false)),
        ("RETRY_ENABLED", json!(false)),
    ];
    all.extend(settings.iter().map(|(k, v)| (*k, v.clone())));
    let (_, seen) = crawl(spider, &all);
    if seen.responses.borrow().len() == 1 {
        return Ok(());
    }
    let failures = seen.failures.borrow();
    Err(failures
        .first()
        .map_or_else(|| "no response and no failure".into(), |f| f.2.clone()))
}

#[test]
fn the_version_range_decides_the_handshake() {
    let tls13 = only("TLSv1.3");
    let tls12 = only("TLSv1.2");
    assert_eq!(fetch(&tls13, &[]), Ok(()));
    assert_eq!(fetch(&tls12, &[]), Ok(()));
    assert_eq!(
        fetch(&tls13, &[("DOWNLOAD_TLS_MIN_VERSION", json!("TLSv1.3"))]),
        Ok(())
    );
    assert!(fetch(&tls13, &[("DOWNLOAD_TLS_MAX_VERSION", json!("TLSv1.2"))]).is_err());
    assert!(fetch(&tls12, &[("DOWNLOAD_TLS_MIN_VERSION", json!("TLSv1.3"))]).is_err());
    // A minimum rustls cannot speak still allows what it can.
    assert_eq!(
        fetch(&tls12, &[("DOWNLOAD_TLS_MIN_VERSION", json!("TLSv1.0"))]),
        Ok(())
    );
    // The deprecated method pins one version.
    assert_eq!(
        fetch(
            &tls12,
            &[("DOWNLOADER_CLIENT_TLS_METHOD", json!("TLSv1.2"))]
        ),
        Ok(())
    );
    assert!(
        fetch(
            &tls13,
            &[("DOWNLOADER_CLIENT_TLS_METHOD", json!("TLSv1.2"))]
        )
        .is_err()
    );
}

#[test]
fn unknown_or_unspeakable_versions_fail_with_the_reason() {
    let srv = only("TLSv1.3");
    let err = fetch(&srv, &[("DOWNLOAD_TLS_MIN_VERSION", json!("TLSv9"))]).expect_err("refused");
    assert!(
        err.contains("Unknown DOWNLOAD_TLS_MIN_VERSION value: TLSv9"),
        "{err}"
    );
    let err = fetch(&srv, &[("DOWNLOAD_TLS_MAX_VERSION", json!("TLSv1.1"))]).expect_err("refused");
    assert!(err.contains("TLS 1.2 and 1.3"), "{err}");
    let err =
        fetch(&srv, &[("DOWNLOADER_CLIENT_TLS_METHOD", json!("SSLv3"))]).expect_err("refused");
    assert!(
        err.contains("Unknown DOWNLOADER_CLIENT_TLS_METHOD value: SSLv3"),
        "{err}"
    );
}

/// `DOWNLOADER_CLIENT_TLS_CIPHERS` against the fixture's ECDSA certificate: over TLS 1.2
/// a list of RSA-authenticated suites only cannot be agreed, one with ECDSA suites can;
/// TLS 1.3's suites are not governed by the list (as in OpenSSL), so a TLS 1.3 server
/// is reached either way; a list matching no cipher fails with OpenSSL's reason.
#[test]
fn the_cipher_list_decides_a_tls12_handshake() {
    let tls12 = only("TLSv1.2");
    let tls13 = only("TLSv1.3");
    let ciphers = |v: &str| [("DOWNLOADER_CLIENT_TLS_CIPHERS", json!(v))];
    assert_eq!(fetch(&tls12, &ciphers("DEFAULT:!DH")), Ok(()));
    assert_eq!(
        fetch(&tls12, &ciphers("ECDHE-ECDSA-CHACHA20-POLY1305")),
        Ok(())
    );
    assert_eq!(fetch(&tls12, &ciphers("HIGH:!aRSA")), Ok(()));
    assert!(fetch(&tls12, &ciphers("aRSA")).is_err());
    assert!(fetch(&tls12, &ciphers("DEFAULT:!ECDSA")).is_err());
    assert_eq!(fetch(&tls13, &ciphers("aRSA")), Ok(()));
    let err = fetch(&tls13, &ciphers("NOSUCHCIPHER")).expect_err("refused");
    assert!(err.contains("no cipher match"), "{err}");
}
