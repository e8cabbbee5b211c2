//! AWS Signature Version 4 against botocore's `S3SigV4Auth`
//! (`tests/data/s3/record_sigv4.py` → `sigv4_cases.json`): the canonical request, the
//! string to sign and every header botocore adds, for puts, multipart calls, keys with
//! spaces, Unicode and reserved characters, sorted queries, a session token, extra
//! signed headers, regions and an unsigned payload.

use serde_json::Value;
use trawl::proto::sigv4::{Credentials, SignRequest, sha256_hex, sign};

#[test]
fn signatures_match_botocore() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/s3/sigv4_cases.json"
    );
    let data: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("cases")).expect("JSON");
    let cases = data["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 16);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let url = url::Url::parse(case["url"].as_str().unwrap()).unwrap();
        let host = match url.port() {
            Some(p) => format!("{}:{p}", url.host_str().unwrap()),
            None => url.host_str().unwrap().to_owned(),
        };
        let headers: Vec<(String, String)> = case["headers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h[0].as_str().unwrap().to_owned(),
                    h[1].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let payload = match case["payload"].as_str() {
            Some(p) => p.to_owned(),
            None => {
                sha256_hex(&trawl::util::base64_decode(case["body_b64"].as_str().unwrap()).unwrap())
            }
        };
        let creds = Credentials {
            access_key: case["access_key"].as_str().unwrap().to_owned(),
            secret_key: case["secret_key"].as_str().unwrap().to_owned(),
            session_token: case["session_token"].as_str().map(str::to_owned),
        };
        let signed = sign(
            &SignRequest {
                method: case["method"].as_str().unwrap(),
                host: &host,
                path: url.path(),
                query: url.query().unwrap_or(""),
                headers: &headers,
                payload_hash: &payload,
                timestamp: case["timestamp"].as_str().unwrap(),
                region: case["region"].as_str().unwrap(),
                service: "s3",
            },
            &creds,
        );
        assert_eq!(
            signed.canonical_request,
            case["canonical_request"].as_str().unwrap(),
            "{name}"
        );
        assert_eq!(
            signed.string_to_sign,
            case["string_to_sign"].as_str().unwrap(),
            "{name}"
        );
        let ours: serde_json::Map<String, Value> = signed
            .headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Value::String(v.clone())))
            .collect();
        assert_eq!(Value::Object(ours), case["signed"], "{name}");
    }
}
