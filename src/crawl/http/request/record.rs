//! The request record: a [`Request`] as bytes that can stay on disk for a year or in
//! Redis — versioned, lossless, compact, and unable to run anything when loaded (no
//! pickle, no format that names code).
//!
//! # Layout, version 1
//!
//! Integers are LEB128 varints (`varint`); `string` and `bytes` are a varint length and
//! that many bytes (strings are UTF-8, checked on decode); `zigzag` maps a signed
//! integer to a varint (0, -1, 1, -2... → 0, 1, 2, 3...).
//!
//! | field | encoding | present when |
//! |---|---|---|
//! | version | one byte, `0x01` | always |
//! | presence bits | varint: 0 `dont_filter`, 1 callback, 2 errback, 3 headers, 4 body, 5 meta, 6 `cb_kwargs`, 7 flags, 8 cookies, 9 encoding | always |
//! | priority | zigzag | always |
//! | method | one byte: 0 GET, 1 POST, 2 HEAD, 3 PUT, 4 DELETE; 255 then a string | always |
//! | url | string | always |
//! | callback | string | bit 1 |
//! | errback | string | bit 2 |
//! | headers | varint count, then per field: name bytes, value bytes (any bytes: lossless) | bit 3 |
//! | body | bytes | bit 4 |
//! | meta | varint count, then per key: string key, string JSON value | bit 5 |
//! | `cb_kwargs` | string (a JSON object) | bit 6 |
//! | flags | varint count, then strings | bit 7 |
//! | cookies | varint count, then per cookie: name string, value string | bit 8 |
//! | encoding | string | bit 9 |
//!
//! A plain GET is the version, two zero bytes, the method byte and the URL: 4 bytes
//! plus the URL. An unknown version, an unknown presence bit, a truncated field,
//! invalid UTF-8 or JSON, or bytes left over are each a clear [`RecordError`], never a
//! misread. Meta keys that trawl's own components use are restored as static keys, so
//! a decoded request is as compact in memory as the original.
//!
//! Floats in meta round-trip exactly (serde_json's `float_roundtrip`).

use std::fmt;

use serde_json::{Map, Value};
use url::Url;

use super::{Meta, Method, Request};
use crate::crawl::util::varint::{get_varint, put_bytes, put_varint, unzigzag, zigzag};
use crate::proto::Headers;

/// The format version this build writes (and the only one it reads).
pub const RECORD_VERSION: u8 = 1;

const DONT_FILTER: u64 = 1 << 0;
const CALLBACK: u64 = 1 << 1;
const ERRBACK: u64 = 1 << 2;
const HEADERS: u64 = 1 << 3;
const BODY: u64 = 1 << 4;
const META: u64 = 1 << 5;
const CB_KWARGS: u64 = 1 << 6;
const FLAGS: u64 = 1 << 7;
const COOKIES: u64 = 1 << 8;
const ENCODING: u64 = 1 << 9;
const KNOWN_BITS: u64 = (1 << 10) - 1;

/// Why bytes are not a request record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordError {
    /// No bytes at all.
    Empty,
    /// Written by another version of the format.
    UnknownVersion(u8),
    /// Presence bits this version does not know.
    UnknownFields(u64),
    /// The record ends inside a field.
    Truncated(&'static str),
    /// A varint longer than 64 bits.
    BadVarint(&'static str),
    /// A text field that is not UTF-8.
    BadUtf8(&'static str),
    /// A JSON field that does not parse.
    BadJson(&'static str, String),
    /// The URL does not parse.
    BadUrl(String),
    /// Bytes after the last field.
    Trailing(usize),
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("empty request record"),
            Self::UnknownVersion(v) => write!(
                f,
                "request record version {v} (this build reads version {RECORD_VERSION})"
            ),
            Self::UnknownFields(bits) => {
                write!(f, "request record with unknown fields (bits {bits:#x})")
            }
            Self::Truncated(what) => write!(f, "request record truncated in {what}"),
            Self::BadVarint(what) => write!(f, "request record: bad integer in {what}"),
            Self::BadUtf8(what) => write!(f, "request record: {what} is not UTF-8"),
            Self::BadJson(what, e) => write!(f, "request record: bad JSON in {what}: {e}"),
            Self::BadUrl(e) => write!(f, "request record: bad URL: {e}"),
            Self::Trailing(n) => write!(f, "request record: {n} bytes after the last field"),
        }
    }
}

impl std::error::Error for RecordError {}

/// Appends `request`'s record to `out`.
pub fn encode_into(request: &Request, out: &mut Vec<u8>) {
    let headers = request.headers();
    let body = request.body();
    let meta = request.meta();
    let cb_kwargs = request.cb_kwargs().filter(|m| !m.is_empty());
    let flags = request.flags();
    let cookies = request.cookies();
    let encoding = request.explicit_encoding();
    let mut bits = 0;
    for (set, bit) in [
        (request.dont_filter(), DONT_FILTER),
        (request.callback().is_some(), CALLBACK),
        (request.errback().is_some(), ERRBACK),
        (!headers.is_empty(), HEADERS),
        (!body.is_empty(), BODY),
        (!meta.is_empty(), META),
        (cb_kwargs.is_some(), CB_KWARGS),
        (!flags.is_empty(), FLAGS),
        (!cookies.is_empty(), COOKIES),
        (encoding.is_some(), ENCODING),
    ] {
        if set {
            bits |= bit;
        }
    }
    out.push(RECORD_VERSION);
    put_varint(out, bits);
    put_varint(out, zigzag(i64::from(request.priority())));
    match request.method() {
        Method::Get => out.push(0),
        Method::Post => out.push(1),
        Method::Head => out.push(2),
        Method::Put => out.push(3),
        Method::Delete => out.push(4),
        Method::Other(m) => {
            out.push(255);
            put_bytes(out, m.as_bytes());
        }
    }
    put_bytes(out, request.url_str().as_bytes());
    if let Some(cb) = request.callback() {
        put_bytes(out, cb.as_bytes());
    }
    if let Some(eb) = request.errback() {
        put_bytes(out, eb.as_bytes());
    }
    if bits & HEADERS != 0 {
        put_varint(out, headers.len() as u64);
        for (name, value) in headers.iter() {
            put_bytes(out, name);
            put_bytes(out, value);
        }
    }
    if bits & BODY != 0 {
        put_bytes(out, body);
    }
    if bits & META != 0 {
        put_varint(out, meta.len() as u64);
        for (k, v) in meta.iter() {
            put_bytes(out, k.as_bytes());
            put_bytes(out, v.to_string().as_bytes());
        }
    }
    if let Some(kw) = cb_kwargs {
        put_bytes(out, Value::Object(kw.clone()).to_string().as_bytes());
    }
    if bits & FLAGS != 0 {
        put_varint(out, flags.len() as u64);
        for f in flags {
            put_bytes(out, f.as_bytes());
        }
    }
    if bits & COOKIES != 0 {
        put_varint(out, cookies.len() as u64);
        for (n, v) in cookies {
            put_bytes(out, n.as_bytes());
            put_bytes(out, v.as_bytes());
        }
    }
    if let Some(e) = encoding {
        put_bytes(out, e.as_bytes());
    }
}

/// `request`'s record.
pub fn encode(request: &Request) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + request.url_str().len());
    encode_into(request, &mut out);
    out
}

/// A cursor over a record.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn byte(&mut self, what: &'static str) -> Result<u8, RecordError> {
        let b = *self.b.get(self.pos).ok_or(RecordError::Truncated(what))?;
        self.pos += 1;
        Ok(b)
    }

    fn varint(&mut self, what: &'static str) -> Result<u64, RecordError> {
        let start = self.pos;
        get_varint(self.b, &mut self.pos).ok_or(if self.pos - start == 10 {
            RecordError::BadVarint(what)
        } else {
            RecordError::Truncated(what)
        })
    }

    fn count(&mut self, what: &'static str) -> Result<usize, RecordError> {
        let n = self.varint(what)?;
        // Every element takes at least one byte: a count beyond the bytes left is a
        // corrupt record, not a reason to reserve gigabytes.
        if n > (self.b.len() - self.pos) as u64 {
            return Err(RecordError::Truncated(what));
        }
        Ok(n as usize)
    }

    fn bytes(&mut self, what: &'static str) -> Result<&'a [u8], RecordError> {
        let n = self.varint(what)?;
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.pos.checked_add(n))
            .filter(|&e| e <= self.b.len())
            .ok_or(RecordError::Truncated(what))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn str(&mut self, what: &'static str) -> Result<&'a str, RecordError> {
        std::str::from_utf8(self.bytes(what)?).map_err(|_| RecordError::BadUtf8(what))
    }

    fn json(&mut self, what: &'static str) -> Result<Value, RecordError> {
        serde_json::from_str(self.str(what)?).map_err(|e| RecordError::BadJson(what, e.to_string()))
    }
}

/// Decodes a record.
///
/// # Errors
///
/// The bytes are not a version-1 record (see [`RecordError`]).
pub fn decode(bytes: &[u8]) -> Result<Request, RecordError> {
    let mut r = Reader { b: bytes, pos: 0 };
    let version = r.byte("version").map_err(|_| RecordError::Empty)?;
    if version != RECORD_VERSION {
        return Err(RecordError::UnknownVersion(version));
    }
    let bits = r.varint("presence bits")?;
    if bits & !KNOWN_BITS != 0 {
        return Err(RecordError::UnknownFields(bits & !KNOWN_BITS));
    }
    let priority = unzigzag(r.varint("priority")?);
    let priority = i32::try_from(priority).map_err(|_| RecordError::BadVarint("priority"))?;
    let method = match r.byte("method")? {
        0 => Method::Get,
        1 => Method::Post,
        2 => Method::Head,
        3 => Method::Put,
        4 => Method::Delete,
        255 => Method::new(r.str("method")?),
        _ => return Err(RecordError::BadVarint("method")),
    };
    let url_text = r.str("url")?;
    // A URL that parses as it is skips its host's parse when the origin is known
    // (`parse_as_is`): the downloader needs the parse at once, and a parsed URL is
    // shared by the request's copies where a string would be copied.
    let url = if crate::crawl::util::canonical::parses_as_is(url_text) {
        crate::crawl::util::canonical::parse_as_is(url_text)
    } else {
        Url::parse(url_text)
    }
    .map_err(|e| RecordError::BadUrl(format!("{url_text:?}: {e}")))?;
    let mut request = Request::new(url).with_priority(priority);
    // The record holds Scrapy's form of the URL; kept when the url crate's differs.
    request.set_scrapy_url(url_text);
    request.set_method(method);
    request.set_dont_filter(bits & DONT_FILTER != 0);
    if bits & CALLBACK != 0 {
        request = request.with_callback(r.str("callback")?);
    }
    if bits & ERRBACK != 0 {
        request = request.with_errback(r.str("errback")?);
    }
    if bits & HEADERS != 0 {
        let n = r.count("headers")?;
        let mut h = Headers::with_capacity(n, 0);
        for _ in 0..n {
            let name = r.bytes("header name")?;
            let value = r.bytes("header value")?;
            h.append(name, value);
        }
        *request.headers_mut() = h;
    }
    if bits & BODY != 0 {
        request.set_body(r.bytes("body")?.to_vec());
    }
    if bits & META != 0 {
        let n = r.count("meta")?;
        let mut meta = Meta::new();
        for _ in 0..n {
            let key = r.str("meta key")?;
            let value = r.json("meta value")?;
            meta.insert_known(key, value);
        }
        *request.meta_mut() = meta;
    }
    if bits & CB_KWARGS != 0 {
        match r.json("cb_kwargs")? {
            Value::Object(m) => request.set_cb_kwargs(m),
            _ => return Err(RecordError::BadJson("cb_kwargs", "not an object".into())),
        }
    }
    if bits & FLAGS != 0 {
        let n = r.count("flags")?;
        for _ in 0..n {
            request.add_flag(r.str("flag")?);
        }
    }
    if bits & COOKIES != 0 {
        let n = r.count("cookies")?;
        let mut cookies = Vec::with_capacity(n);
        for _ in 0..n {
            let name = r.str("cookie name")?.to_owned();
            let value = r.str("cookie value")?.to_owned();
            cookies.push((name, value));
        }
        request.set_cookies(cookies);
    }
    if bits & ENCODING != 0 {
        request = request.with_encoding(r.str("encoding")?);
    }
    if r.pos != bytes.len() {
        return Err(RecordError::Trailing(bytes.len() - r.pos));
    }
    request.shrink_to_fit();
    Ok(request)
}

/// A JSON object as `cb_kwargs` (for callers building requests from JSON payloads).
pub fn cb_kwargs_from(value: Value) -> Option<Map<String, Value>> {
    match value {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_get_is_four_bytes_plus_the_url() {
        let r = Request::get("http://example.com/a").expect("url");
        let rec = encode(&r);
        assert_eq!(rec.len(), 4 + "http://example.com/a".len() + 1);
        assert_eq!(decode(&rec).expect("decodes"), r);
    }

    #[test]
    fn bad_records_are_clear_errors() {
        let r = Request::get("http://example.com/a").expect("url");
        let rec = encode(&r);
        assert_eq!(decode(&[]), Err(RecordError::Empty));
        let mut v2 = rec.clone();
        v2[0] = 2;
        assert_eq!(decode(&v2), Err(RecordError::UnknownVersion(2)));
        assert!(decode(&rec[..rec.len() - 1]).is_err());
        let mut trailing = rec.clone();
        trailing.push(0);
        assert_eq!(decode(&trailing), Err(RecordError::Trailing(1)));
        let pickle = b"\x80\x04\x95\x10\x00\x00\x00";
        assert_eq!(decode(pickle), Err(RecordError::UnknownVersion(0x80)));
        // A count that claims more elements than bytes left.
        let huge = [1u8, 0b1000, 0, 0, 1, b'x', 0xff, 0xff, 0xff, 0xff, 0x0f];
        assert!(decode(&huge).is_err());
    }
}
