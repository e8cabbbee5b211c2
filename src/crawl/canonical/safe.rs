//! w3lib's `safe_url_string` (w3lib 2.5.0), for UTF-8 pages: the URL string Scrapy's
//! `Request(url).url` holds — percent-encoding only what must be, an IDNA host, the
//! port as a number, userinfo re-quoted, nothing else normalised (no query sorting, no
//! dot segments, the default port kept). The first piece of Scrapy's URL model
//! (checked against `tests/data/urls/urls.json`); `Request` does not use it yet.

use std::borrow::Cow;

use super::quote::{PATH_SAFEST, quote_into, safe_table};
use super::split::{is_special, lower, split_rest, split_scheme, strip};
use super::{CanonicalizeError, Reason, write_netloc};

/// w3lib `_SPECIAL_QUERY_SAFEST_CHARS`: the path set less `'`.
static SPECIAL_QUERY_SAFEST: [bool; 256] = safe_table(b"!$%&()*+,/:;=?@");

/// Schemes whose `_urlunsplit` adds `//` before a netloc-less path (urllib's
/// `uses_netloc`).
fn uses_netloc(scheme: &str) -> bool {
    super::split::uses_netloc(scheme)
}

/// `w3lib.url.safe_url_string(url)` with the default UTF-8 encodings.
///
/// # Errors
///
/// Where w3lib raises `ValueError`: an invalid port, unbalanced brackets in the
/// authority, delimiters in an NFKC-normalised host.
pub fn safe_url_string(url: &str) -> Result<String, CanonicalizeError> {
    safe_url_string_encoded(url, encoding_rs::UTF_8)
}

/// `safe_url_string(url, encoding)`: the query and fragment are encoded with the
/// page's `encoding` before quoting (the path is always UTF-8), as Scrapy builds a
/// followed link's request on a non-UTF-8 page.
///
/// # Errors
///
/// As [`safe_url_string`], and `UnicodeEncodeError` when the query or fragment holds
/// a character `encoding` cannot represent (Python's strict encoding).
pub fn safe_url_string_encoded(
    url: &str,
    encoding: &'static encoding_rs::Encoding,
) -> Result<String, CanonicalizeError> {
    safe(url, encoding).map_err(|reason| CanonicalizeError {
        url: url.to_owned(),
        reason: reason.to_owned(),
    })
}

/// `text.encode(encoding)`, strict.
fn encode<'a>(
    text: &'a str,
    encoding: &'static encoding_rs::Encoding,
) -> Result<Cow<'a, [u8]>, Reason> {
    if encoding == encoding_rs::UTF_8 || text.is_ascii() {
        return Ok(Cow::Borrowed(text.as_bytes()));
    }
    let (bytes, _, unmappable) = encoding.encode(text);
    if unmappable {
        return Err("UnicodeEncodeError: a character the page's encoding cannot encode");
    }
    Ok(bytes)
}

fn safe(url: &str, encoding: &'static encoding_rs::Encoding) -> Result<String, Reason> {
    let stripped = strip(url);
    let (scheme, rest) = split_scheme(&stripped);
    let scheme = lower(scheme);
    // `_urlsplit`: for special schemes "\" is "/" before the query and fragment.
    let rest: Cow<'_, str> = if is_special(&scheme) && rest.contains('\\') {
        let cut = rest.find(['?', '#']).unwrap_or(rest.len());
        Cow::Owned(rest[..cut].replace('\\', "/") + &rest[cut..])
    } else {
        Cow::Borrowed(rest)
    };
    let parts = split_rest(&rest)?;

    let mut netloc: Vec<u8> = Vec::new();
    write_netloc(&mut netloc, &parts)?;
    let mut path: Vec<u8> = Vec::with_capacity(parts.path.len());
    quote_into(&mut path, parts.path.as_bytes(), &PATH_SAFEST);
    let mut query: Vec<u8> = Vec::with_capacity(parts.query.len());
    let query_safe = if w3lib_special(&scheme) {
        &SPECIAL_QUERY_SAFEST
    } else {
        &PATH_SAFEST
    };
    quote_into(&mut query, &encode(parts.query, encoding)?, query_safe);
    let mut fragment: Vec<u8> = Vec::new();
    quote_into(
        &mut fragment,
        &encode(parts.fragment, encoding)?,
        &PATH_SAFEST,
    );
    // "https://example.com?a=b": a special URL's query needs a path.
    if path.is_empty() && !query.is_empty() && w3lib_special(&scheme) {
        path.push(b'/');
    }

    // `_urlunsplit`.
    let mut out: Vec<u8> = Vec::with_capacity(url.len() + 8);
    if !scheme.is_empty() {
        out.extend_from_slice(scheme.as_bytes());
        out.push(b':');
    }
    if !netloc.is_empty() {
        out.extend_from_slice(b"//");
        out.extend_from_slice(&netloc);
        if !path.is_empty() && path[0] != b'/' {
            out.push(b'/');
        }
    } else if path.starts_with(b"//")
        || (!scheme.is_empty() && uses_netloc(&scheme) && (path.is_empty() || path[0] == b'/'))
    {
        out.extend_from_slice(b"//");
    }
    out.extend_from_slice(&path);
    if !query.is_empty() {
        out.push(b'?');
        out.extend_from_slice(&query);
    }
    if !fragment.is_empty() {
        out.push(b'#');
        out.extend_from_slice(&fragment);
    }
    String::from_utf8(out).map_err(|_| "UnicodeDecodeError: invalid UTF-8 in result")
}

/// w3lib `_SPECIAL_SCHEMES`.
fn w3lib_special(scheme: &str) -> bool {
    matches!(scheme, "ftp" | "file" | "http" | "https" | "ws" | "wss")
}
