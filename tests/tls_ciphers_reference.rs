//! `DOWNLOADER_CLIENT_TLS_CIPHERS` read as OpenSSL reads it: every cipher string recorded
//! in `tests/data/tls_ciphers/ciphers.json` (pyOpenSSL's `set_cipher_list`, the call
//! Scrapy's setting reaches, by `gen_ciphers.py`) gives the TLS 1.2 suites OpenSSL
//! offered that rustls has, in OpenSSL's order, and an error exactly where OpenSSL
//! raised one.

use serde_json::Value;
use trawl::net::tls_ciphers::{openssl_name, tls12_suites};

#[test]
fn cipher_strings_select_what_openssl_selects() {
    let text = include_str!("data/tls_ciphers/ciphers.json");
    let data: Value = serde_json::from_str(text).expect("ciphers.json");
    let rustls_names: Vec<&str> = tls12_suites("ALL")
        .expect("ALL")
        .into_iter()
        .map(|s| openssl_name(s).expect("a name"))
        .collect();
    assert_eq!(rustls_names.len(), 6, "rustls's TLS 1.2 suites");
    let cases = data["cases"].as_array().expect("cases");
    assert!(cases.len() >= 40, "{} cases", cases.len());
    let mut errors = 0;
    for case in cases {
        let string = case["string"].as_str().expect("string");
        let ours = tls12_suites(string);
        match &case["tls12"] {
            Value::String(e) if e == "error" => {
                errors += 1;
                assert!(
                    ours.is_err(),
                    "{string:?}: OpenSSL refused it, trawl took {ours:?}"
                );
            }
            Value::Array(names) => {
                let expected: Vec<&str> = names
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|n| rustls_names.contains(n))
                    .collect();
                let got: Vec<&str> = ours
                    .unwrap_or_else(|e| panic!("{string:?}: OpenSSL took it, trawl: {e}"))
                    .into_iter()
                    .map(|s| openssl_name(s).expect("a name"))
                    .collect();
                assert_eq!(got, expected, "{string:?}");
            }
            other => panic!("unexpected record {other}"),
        }
    }
    assert!(errors >= 5, "{errors} refusals recorded");
}
