//! AWS Signature Version 4 for S3 requests, sans-IO, as botocore's `S3SigV4Auth`
//! signs them: the canonical request (the path as sent, not normalised; the query's
//! pairs re-encoded and sorted; every given header plus `host`, `x-amz-content-sha256`,
//! `x-amz-date` and `x-amz-security-token`, lower-cased and sorted), the string to
//! sign, the signing key derived from the secret, date, region and service, and the
//! headers to add. `tests/data/s3/sigv4_cases.json` holds botocore's answers.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// Credentials to sign with.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// `AWS_ACCESS_KEY_ID`.
    pub access_key: String,
    /// `AWS_SECRET_ACCESS_KEY`.
    pub secret_key: String,
    /// `AWS_SESSION_TOKEN` (temporary credentials).
    pub session_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key", &self.access_key)
            .field("secret_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// A request to sign: what goes on the wire, minus the signature.
#[derive(Debug, Clone, Copy)]
pub struct SignRequest<'a> {
    /// `PUT`, `POST`, ...
    pub method: &'a str,
    /// The `Host` header's value (`bucket.s3.amazonaws.com`, `127.0.0.1:9000`).
    pub host: &'a str,
    /// The path as sent, percent-encoded (`/bucket/a%20b.jl`).
    pub path: &'a str,
    /// The query as sent, without `?` (`partNumber=2&uploadId=...`, `uploads`).
    pub query: &'a str,
    /// The other headers to send (they are all signed).
    pub headers: &'a [(&'a str, &'a str)],
    /// The body's SHA-256 in lower-case hex, or `UNSIGNED-PAYLOAD`.
    pub payload_hash: &'a str,
    /// `YYYYMMDDTHHMMSSZ`.
    pub timestamp: &'a str,
    /// The region (`us-east-1`).
    pub region: &'a str,
    /// The service (`s3`).
    pub service: &'a str,
}

/// The signature and its by-products.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// The headers to add: `X-Amz-Date`, `X-Amz-Content-SHA256`, the session token
    /// if any, and `Authorization`.
    pub headers: Vec<(&'static str, String)>,
    /// The canonical request (for debugging a signature mismatch).
    pub canonical_request: String,
    /// The string to sign.
    pub string_to_sign: String,
}

/// The lower-case hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    crate::util::to_hex(&Sha256::digest(data))
}

/// An incremental SHA-256 (a file's hash, read in pieces).
#[derive(Debug, Clone, Default)]
pub struct Sha256Hasher(Sha256);

impl Sha256Hasher {
    /// Adds bytes.
    pub fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    /// The lower-case hex digest.
    pub fn hex(self) -> String {
        crate::util::to_hex(&self.0.finalize())
    }
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC takes keys of any length: `new_from_slice` cannot fail.
    let mut mac = match HmacSha256::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => return Vec::new(),
    };
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// RFC 3986 encoding of a query key or value (everything but `A-Za-z0-9-_.~`), after
/// decoding what it already encodes.
fn query_component(s: &str) -> String {
    let raw: Vec<u8> = percent_encoding::percent_decode_str(s).collect();
    let mut out = String::with_capacity(raw.len());
    for b in raw {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn canonical_query(query: &str) -> String {
    let mut pairs: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (query_component(k), query_component(v))
        })
        .collect();
    pairs.sort();
    let parts: Vec<String> = pairs.into_iter().map(|(k, v)| format!("{k}={v}")).collect();
    parts.join("&")
}

/// A header value as signed: trimmed, runs of spaces collapsed.
fn header_value(v: &str) -> String {
    v.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Signs `req` with `creds`.
pub fn sign(req: &SignRequest<'_>, creds: &Credentials) -> Signed {
    let mut headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), header_value(v)))
        .collect();
    headers.push(("host".into(), req.host.to_owned()));
    headers.push(("x-amz-content-sha256".into(), req.payload_hash.to_owned()));
    headers.push(("x-amz-date".into(), req.timestamp.to_owned()));
    if let Some(token) = &creds.session_token {
        headers.push(("x-amz-security-token".into(), token.clone()));
    }
    headers.sort();
    let signed_headers: Vec<&str> = headers.iter().map(|(k, _)| k.as_str()).collect();
    let signed_headers = signed_headers.join(";");
    let mut canonical = format!(
        "{}\n{}\n{}\n",
        req.method,
        if req.path.is_empty() { "/" } else { req.path },
        canonical_query(req.query)
    );
    for (k, v) in &headers {
        canonical.push_str(k);
        canonical.push(':');
        canonical.push_str(v);
        canonical.push('\n');
    }
    canonical.push('\n');
    canonical.push_str(&signed_headers);
    canonical.push('\n');
    canonical.push_str(req.payload_hash);
    let date = req.timestamp.get(..8).unwrap_or(req.timestamp);
    let scope = format!("{date}/{}/{}/aws4_request", req.region, req.service);
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{}\n{scope}\n{}",
        req.timestamp,
        sha256_hex(canonical.as_bytes())
    );
    let k_date = hmac(
        format!("AWS4{}", creds.secret_key).as_bytes(),
        date.as_bytes(),
    );
    let k_region = hmac(&k_date, req.region.as_bytes());
    let k_service = hmac(&k_region, req.service.as_bytes());
    let k_signing = hmac(&k_service, b"aws4_request");
    let signature = crate::util::to_hex(&hmac(&k_signing, string_to_sign.as_bytes()));
    let mut out = vec![
        ("X-Amz-Date", req.timestamp.to_owned()),
        ("X-Amz-Content-SHA256", req.payload_hash.to_owned()),
    ];
    if let Some(token) = &creds.session_token {
        out.push(("X-Amz-Security-Token", token.clone()));
    }
    out.push((
        "Authorization",
        format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={signature}",
            creds.access_key
        ),
    ));
    Signed {
        headers: out,
        canonical_request: canonical,
        string_to_sign,
    }
}

/// `YYYYMMDDTHHMMSSZ` of a UNIX time.
pub fn amz_timestamp(unix: i64) -> String {
    let days = unix.div_euclid(86_400);
    let rem = unix.rem_euclid(86_400);
    let (y, m, d) = super::date::civil_from_days(days);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_and_query_encoding() {
        assert_eq!(amz_timestamp(0), "19700101T000000Z");
        assert_eq!(canonical_query("uploads"), "uploads=");
        assert_eq!(canonical_query("b=2&a=x%2Fy"), "a=x%2Fy&b=2");
        assert_eq!(canonical_query("prefix=a b"), "prefix=a%20b");
    }
}
