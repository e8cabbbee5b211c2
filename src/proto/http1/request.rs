//! Request serialisation: request line, `Host`, the caller's headers in order (one line
//! per value), `Content-Length` for bodies, `Connection: keep-alive`.

use std::fmt;

use crate::proto::Headers;

/// A request that cannot be written without corrupting the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// The method is not an HTTP token.
    InvalidMethod(String),
    /// The request target contains whitespace or control bytes.
    InvalidTarget(String),
    /// A header name is not a token, or a value contains CR, LF or NUL (header
    /// injection).
    InvalidHeader(String),
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidMethod(m) => write!(f, "invalid HTTP method {m:?}"),
            Self::InvalidTarget(t) => write!(f, "invalid request target {t:?}"),
            Self::InvalidHeader(h) => write!(f, "invalid header {h:?}"),
        }
    }
}

impl std::error::Error for EncodeError {}

/// RFC 9110's `tchar`: ASCII letters, digits and ``!#$%&'*+-.^_`|~``, by byte.
const TCHAR: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric();
        c += 1;
    }
    let extra = b"!#$%&'*+-.^_`|~";
    let mut i = 0;
    while i < extra.len() {
        t[extra[i] as usize] = true;
        i += 1;
    }
    t
};

fn is_token(b: &[u8]) -> bool {
    !b.is_empty() && b.iter().all(|&c| TCHAR[usize::from(c)])
}

/// Whether a header value holds CR, LF or NUL (which would inject a line).
fn breaks_line(value: &[u8]) -> bool {
    memchr::memchr3(b'\r', b'\n', 0, value).is_some()
}

/// Writes an HTTP/1.1 request head (and body) to `out`.
///
/// `host` is the `Host` header value (with the port when it is not the scheme's
/// default); it is sent first unless `headers` has its own `Host`. `Content-Length` is
/// added for a non-empty body and for POST/PUT/PATCH with an empty one, unless
/// `headers` sets it; `Connection: keep-alive` unless `headers` has `Connection`.
///
/// # Errors
///
/// An invalid method, target or header; nothing is written then.
///
/// # Examples
///
/// ```
/// use trawl::proto::{Headers, http1::encode_request};
///
/// let mut headers = Headers::new();
/// headers.append("Accept", "text/html");
/// let mut out = Vec::new();
/// encode_request("GET", "/a?b=1", "example.com:8080", &headers, b"", &mut out).unwrap();
/// assert_eq!(
///     out,
///     b"GET /a?b=1 HTTP/1.1\r\nHost: example.com:8080\r\nAccept: text/html\r\nConnection: keep-alive\r\n\r\n"
/// );
/// ```
pub fn encode_request(
    method: &str,
    target: &str,
    host: &str,
    headers: &Headers,
    body: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    if !is_token(method.as_bytes()) {
        return Err(EncodeError::InvalidMethod(method.to_owned()));
    }
    if target.is_empty() || target.bytes().any(|c| c <= b' ' || c == 0x7f) {
        return Err(EncodeError::InvalidTarget(target.to_owned()));
    }
    for (name, value) in headers.iter() {
        if !is_token(name) || breaks_line(value) {
            return Err(EncodeError::InvalidHeader(format!(
                "{}: {}",
                String::from_utf8_lossy(name),
                String::from_utf8_lossy(value)
            )));
        }
    }
    if host.bytes().any(|c| c <= b' ' || c == 0x7f) {
        return Err(EncodeError::InvalidHeader(format!("Host: {host}")));
    }
    out.reserve(
        64 + target.len() + host.len() + headers.byte_len() + 4 * headers.len() + body.len(),
    );
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    if !headers.contains("host") {
        out.extend_from_slice(b"Host: ");
        out.extend_from_slice(host.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    for (name, value) in headers.iter() {
        out.extend_from_slice(name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    let needs_length = !body.is_empty() || matches!(method, "POST" | "PUT" | "PATCH");
    if needs_length && !headers.contains("content-length") {
        out.extend_from_slice(b"Content-Length: ");
        out.extend_from_slice(body.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if !headers.contains("connection") {
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(method: &str, headers: &[(&str, &str)], body: &[u8]) -> Result<String, EncodeError> {
        let h: Headers = headers.iter().copied().collect();
        let mut out = Vec::new();
        encode_request(method, "/p", "h", &h, body, &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn multi_valued_headers_in_order() {
        let s = encode("GET", &[("X-A", "1"), ("Cookie", "a=1"), ("x-a", "2")], b"").unwrap();
        assert_eq!(
            s,
            "GET /p HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nCookie: a=1\r\nx-a: 2\r\nConnection: keep-alive\r\n\r\n"
        );
    }

    #[test]
    fn content_length_for_bodies_and_empty_post() {
        assert!(
            encode("POST", &[], b"")
                .unwrap()
                .contains("Content-Length: 0\r\n")
        );
        let s = encode("PUT", &[], b"abc").unwrap();
        assert!(s.ends_with("Content-Length: 3\r\nConnection: keep-alive\r\n\r\nabc"));
        assert!(!encode("GET", &[], b"").unwrap().contains("Content-Length"));
    }

    #[test]
    fn caller_host_and_connection_win() {
        let s = encode("GET", &[("Host", "other"), ("Connection", "close")], b"").unwrap();
        assert_eq!(
            s,
            "GET /p HTTP/1.1\r\nHost: other\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn header_injection_is_refused() {
        assert!(matches!(
            encode("GET", &[("X", "a\r\nEvil: 1")], b""),
            Err(EncodeError::InvalidHeader(_))
        ));
        assert!(matches!(
            encode("GET", &[("Bad Name", "v")], b""),
            Err(EncodeError::InvalidHeader(_))
        ));
        assert!(matches!(
            encode("G ET", &[], b""),
            Err(EncodeError::InvalidMethod(_))
        ));
        let mut out = Vec::new();
        let e = encode_request("GET", "/a b", "h", &Headers::new(), b"", &mut out);
        assert!(matches!(e, Err(EncodeError::InvalidTarget(_))));
        assert!(out.is_empty());
    }

    /// Every byte, in a header name and in a value (at the start, in the middle and
    /// past the first 32 bytes): a name takes exactly RFC 9110's `tchar`s, a value
    /// everything but CR, LF and NUL.
    #[test]
    fn each_byte_in_names_and_values() {
        for b in 0..=255u8 {
            let tchar = b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
            let mut name = b"X-Name".to_vec();
            name.insert(2, b);
            let mut headers = Headers::new();
            headers.append(&name, "v");
            let mut out = Vec::new();
            let named = encode_request("GET", "/", "h", &headers, b"", &mut out);
            assert_eq!(named.is_ok(), tchar, "name byte {b:#04x}");
            let line_break = matches!(b, b'\r' | b'\n' | 0);
            for at in [0, 17, 40] {
                let mut value = vec![b'a'; 64];
                value[at] = b;
                let mut headers = Headers::new();
                headers.append("X", &value);
                let mut out = Vec::new();
                let valued = encode_request("GET", "/", "h", &headers, b"", &mut out);
                assert_eq!(valued.is_err(), line_break, "value byte {b:#04x} at {at}");
                assert_eq!(out.is_empty(), line_break);
            }
        }
    }
}
