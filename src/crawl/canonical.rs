//! URL canonicalisation and request fingerprints, byte-identical to Python.
//!
//! This module owns trawl's port of `w3lib.url.canonicalize_url` (w3lib 2.5.0)
//! and of the JSON document that `scrapy.utils.request.fingerprint`
//! (Scrapy 2.19) hashes with SHA-1. Both are checked against vectors generated
//! by the real Python code (`tests/data/canonicalize_url.json` and
//! `tests/data/fingerprints.json`).
//!
//! The port follows w3lib's own steps rather than the URL standard:
//! w3lib's `_urlsplit`, `_safe_url_split` (userinfo, IDNA host, port, quoting),
//! then query sorting, path re-quoting, dot-segment removal, host lower-casing
//! and RFC 5952 IPv6 formatting. Non-ASCII hosts go through CPython's IDNA 2003
//! codec (nameprep + punycode) after NFKC, ported here; when that fails the
//! lower-cased Unicode host is kept, as w3lib does.
//!
//! The common case (an `http(s)` URL that is canonical up to its query) takes a
//! fast path: one pass over the input, the query sorted in place (no allocation
//! for up to 16 arguments) and a single allocation for the result. Everything
//! else takes the general path, which mirrors w3lib step by step.

use std::borrow::Cow;
use std::fmt;

use sha1::{Digest, Sha1};
use unicode_normalization::UnicodeNormalization;

/// The error `w3lib.url.canonicalize_url` raises for a URL (always a
/// `ValueError` or a subclass in Python).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonicalizeError {
    /// The URL that was given.
    pub url: String,
    /// Why it was rejected, prefixed with the Python exception type.
    pub reason: String,
}

impl fmt::Display for CanonicalizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot canonicalize {:?}: {}", self.url, self.reason)
    }
}

impl std::error::Error for CanonicalizeError {}

/// Python's `ValueError("Invalid IPv6 URL")` and friends: the reason text.
type Reason = &'static str;

const INVALID_IPV6: Reason = "ValueError: Invalid IPv6 URL";

// ---------------------------------------------------------------------------
// Byte tables
// ---------------------------------------------------------------------------

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";
const HEX_LOWER: &[u8; 16] = b"0123456789abcdef";

/// RFC 3986 unreserved characters plus `extra`: the bytes `_quote` keeps.
const fn safe_table(extra: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~');
        b += 1;
    }
    let mut i = 0;
    while i < extra.len() {
        t[extra[i] as usize] = true;
        i += 1;
    }
    t
}

/// w3lib `_PATH_SAFEST_CHARS` (also its query and fragment sets).
static PATH_SAFEST: [bool; 256] = safe_table(b"!$%&'()*+,/:;=?@");
/// w3lib `_USERINFO_SAFEST_CHARS`.
static USERINFO_SAFEST: [bool; 256] = safe_table(b"!$&'()*+,");
/// w3lib `_PATH_SAFE_CHARS`, used to re-quote the decoded path.
static PATH_SAFE: [bool; 256] = safe_table(b"!$%&'()*+,/:;=?@[]|");
/// `_quote(..., quote_plus=True)` for query keys and values.
static QUERY_PLUS_SAFE: [bool; 256] = safe_table(b"");
/// Path bytes the fast path copies verbatim: `PATH_SAFE` less `%` (escapes),
/// `;` (params) and `?` (the query).
static FAST_PATH: [bool; 256] = safe_table(b"!$&'()*+,/:=@[]|");
/// Host bytes the fast path copies verbatim (no upper case, no escapes).
static FAST_HOST: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] =
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'-' | b'.' | b'_' | b'~');
        b += 1;
    }
    t
};

#[inline]
fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// The byte a valid `%HH` escape at `s[i]` stands for.
#[inline]
fn escape_at(s: &[u8], i: usize) -> Option<u8> {
    if s.get(i) != Some(&b'%') {
        return None;
    }
    let hi = hex_val(*s.get(i + 1)?)?;
    let lo = hex_val(*s.get(i + 2)?)?;
    Some(hi << 4 | lo)
}

#[inline]
fn push_escape(out: &mut Vec<u8>, b: u8) {
    out.extend_from_slice(&[
        b'%',
        HEX_UPPER[usize::from(b >> 4)],
        HEX_UPPER[usize::from(b & 15)],
    ]);
}

/// `_quote_into(data, safe)`: keep safe bytes, `%HH` the rest.
fn quote_into(out: &mut Vec<u8>, data: &[u8], safe: &[bool; 256]) {
    let mut start = 0;
    for (i, &b) in data.iter().enumerate() {
        if !safe[usize::from(b)] {
            out.extend_from_slice(&data[start..i]);
            push_escape(out, b);
            start = i + 1;
        }
    }
    out.extend_from_slice(&data[start..]);
}

/// `_quote(_unquote(data), safe)`: decode valid escapes, then quote.
fn requote_into(out: &mut Vec<u8>, data: &[u8], safe: &[bool; 256]) {
    let mut i = 0;
    while i < data.len() {
        let (b, step) = escape_at(data, i).map_or((data[i], 1), |b| (b, 3));
        if safe[usize::from(b)] {
            out.push(b);
        } else {
            push_escape(out, b);
        }
        i += step;
    }
}

/// w3lib's path normalisation: `_quote(_unquotepath(quoted), _PATH_SAFE_CHARS)`
/// applied to the raw path. Escapes of `%`, `/`, `;` and `?` stay encoded
/// (upper-cased); every other valid escape is decoded and re-quoted.
fn requote_path_into(out: &mut Vec<u8>, path: &[u8]) {
    let mut start = 0;
    let mut i = 0;
    while i < path.len() {
        let b = path[i];
        if PATH_SAFE[usize::from(b)] && b != b'%' {
            i += 1;
            continue;
        }
        out.extend_from_slice(&path[start..i]);
        i += match escape_at(path, i) {
            Some(d @ (b'%' | b'/' | b';' | b'?')) => {
                push_escape(out, d);
                3
            }
            Some(d) => {
                if PATH_SAFE[usize::from(d)] {
                    out.push(d);
                } else {
                    push_escape(out, d);
                }
                3
            }
            // A lone "%" is safe and stays; other unsafe bytes are escaped.
            None => {
                if b == b'%' {
                    out.push(b);
                } else {
                    push_escape(out, b);
                }
                1
            }
        };
        start = i;
    }
    out.extend_from_slice(&path[start..]);
}

/// `_unquote_plus` as a lazy byte iterator: `+` is a space, valid `%HH`
/// escapes are decoded.
#[derive(Clone)]
struct UnquotePlus<'a> {
    s: &'a [u8],
    i: usize,
}

impl Iterator for UnquotePlus<'_> {
    type Item = u8;

    fn next(&mut self) -> Option<u8> {
        let &b = self.s.get(self.i)?;
        if let Some(decoded) = escape_at(self.s, self.i) {
            self.i += 3;
            return Some(decoded);
        }
        self.i += 1;
        Some(if b == b'+' { b' ' } else { b })
    }
}

fn unquote_plus(s: &[u8]) -> UnquotePlus<'_> {
    UnquotePlus { s, i: 0 }
}

/// `_quote_into(data, quote_plus=True)`: unreserved kept, space as `+`.
fn quote_plus_into(out: &mut Vec<u8>, data: impl Iterator<Item = u8>) {
    for b in data {
        if QUERY_PLUS_SAFE[usize::from(b)] {
            out.push(b);
        } else if b == b' ' {
            out.push(b'+');
        } else {
            push_escape(out, b);
        }
    }
}

// ---------------------------------------------------------------------------
// Scheme sets (urllib.parse of CPython 3.11 and w3lib)
// ---------------------------------------------------------------------------

/// w3lib `_SPECIAL_SCHEMES`.
fn is_special(scheme: &str) -> bool {
    matches!(scheme, "ftp" | "file" | "http" | "https" | "ws" | "wss")
}

/// `urllib.parse.uses_params`.
fn uses_params(scheme: &str) -> bool {
    matches!(
        scheme,
        "" | "ftp"
            | "hdl"
            | "prospero"
            | "http"
            | "imap"
            | "https"
            | "shttp"
            | "rtsp"
            | "rtsps"
            | "rtspu"
            | "sip"
            | "sips"
            | "mms"
            | "sftp"
            | "tel"
    )
}

/// `urllib.parse.uses_netloc`.
fn uses_netloc(scheme: &str) -> bool {
    matches!(
        scheme,
        "" | "ftp"
            | "http"
            | "gopher"
            | "nntp"
            | "telnet"
            | "imap"
            | "wais"
            | "file"
            | "mms"
            | "https"
            | "shttp"
            | "snews"
            | "prospero"
            | "rtsp"
            | "rtsps"
            | "rtspu"
            | "rsync"
            | "svn"
            | "svn+ssh"
            | "sftp"
            | "nfs"
            | "git"
            | "git+ssh"
            | "ws"
            | "wss"
    )
}

// ---------------------------------------------------------------------------
// Splitting (w3lib `_strip` and `_urlsplit`)
// ---------------------------------------------------------------------------

/// `_strip`: if the URL holds any C0 control or space, strip those from both
/// ends and remove every tab, CR and LF.
fn strip(url: &str) -> Cow<'_, str> {
    if !url.bytes().any(|b| b <= b' ') {
        return Cow::Borrowed(url);
    }
    let trimmed = url.trim_matches(|c: char| c <= ' ');
    if trimmed.contains(['\t', '\n', '\r']) {
        Cow::Owned(trimmed.replace(['\t', '\n', '\r'], ""))
    } else {
        Cow::Borrowed(trimmed)
    }
}

/// `_SCHEME_RE`: `^([a-zA-Z][a-zA-Z0-9+.-]*):`. Returns (scheme, rest).
fn split_scheme(url: &str) -> (&str, &str) {
    let b = url.as_bytes();
    if b.first().is_some_and(u8::is_ascii_alphabetic) {
        let n = b
            .iter()
            .position(|&c| !(c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.')))
            .unwrap_or(b.len());
        if b.get(n) == Some(&b':') {
            return (&url[..n], &url[n + 1..]);
        }
    }
    ("", url)
}

/// The parts of `_urlsplit` that canonicalisation uses.
struct Parts<'a> {
    netloc: &'a str,
    path: &'a str,
    query: &'a str,
    fragment: &'a str,
    /// Whether the authority held `[` and `]` (IPv6 host parsing).
    bracketed: bool,
}

fn find_from(b: &[u8], from: usize, c: u8) -> Option<usize> {
    b.get(from..)?
        .iter()
        .position(|&x| x == c)
        .map(|p| p + from)
}

/// The body of `_urlsplit` after the scheme (and backslash handling).
fn split_rest(url: &str) -> Result<Parts<'_>, Reason> {
    let b = url.as_bytes();
    let has_authority = url.starts_with("//");
    let scan_start = if has_authority { 2 } else { 0 };
    let mut question = find_from(b, scan_start, b'?');
    let mut hash = find_from(b, scan_start, b'#');
    let mut netloc = "";
    let mut rest = url;
    let mut bracketed = false;
    if has_authority {
        let slash = find_from(b, scan_start, b'/');
        let delim = [slash, question, hash]
            .into_iter()
            .flatten()
            .fold(b.len(), usize::min);
        let open = find_from(b, 2, b'[').filter(|&p| p < delim);
        let close = find_from(b, 2, b']').filter(|&p| p < delim);
        if open.is_some() != close.is_some() {
            return Err(INVALID_IPV6);
        }
        netloc = &url[2..delim];
        if open.is_some() {
            check_bracketed_netloc(netloc)?;
            bracketed = true;
        }
        rest = &url[delim..];
        question = question.map(|p| p - delim);
        hash = hash.map(|p| p - delim);
    }
    check_netloc(netloc)?;
    let mut path = rest;
    let mut fragment = "";
    if let Some(h) = hash {
        fragment = &path[h + 1..];
        path = &path[..h];
    }
    let mut query = "";
    if let Some(q) = question {
        // A "?" after the "#" leaves an empty query, as Python's slicing does.
        if q < path.len() {
            query = &path[q + 1..];
            path = &path[..q];
        }
    }
    Ok(Parts {
        netloc,
        path,
        query,
        fragment,
        bracketed,
    })
}

/// `_check_bracketed_netloc` (backport of CPython gh-105704).
fn check_bracketed_netloc(netloc: &str) -> Result<(), Reason> {
    let host_and_port = netloc.rfind('@').map_or(netloc, |i| &netloc[i + 1..]);
    let hostname = if let Some(i) = host_and_port.find('[') {
        if i > 0 {
            return Err(INVALID_IPV6);
        }
        let bracketed = &host_and_port[i + 1..];
        let (host, port) = bracketed.split_once(']').unwrap_or((bracketed, ""));
        if !port.is_empty() && !port.starts_with(':') {
            return Err(INVALID_IPV6);
        }
        host
    } else {
        host_and_port
            .split_once(':')
            .map_or(host_and_port, |(h, _)| h)
    };
    // IPvFuture: \Av[a-fA-F0-9]+\..+\Z
    if hostname.starts_with(['v', 'V']) {
        let body = hostname
            .strip_prefix('v')
            .ok_or("ValueError: IPvFuture address is invalid")?;
        let digits = body.bytes().take_while(u8::is_ascii_hexdigit).count();
        let after = &body[digits..];
        return if digits > 0 && after.len() > 1 && after.starts_with('.') {
            Ok(())
        } else {
            Err("ValueError: IPvFuture address is invalid")
        };
    }
    match ip_address(hostname) {
        Some(IpAddr::V6(..)) => Ok(()),
        Some(IpAddr::V4) => Err("ValueError: An IPv4 address cannot be in brackets"),
        None => Err("ValueError: does not appear to be an IPv4 or IPv6 address"),
    }
}

/// `_checknetloc`: NFKC must not introduce URL delimiters into the netloc.
fn check_netloc(netloc: &str) -> Result<(), Reason> {
    if netloc.is_ascii() {
        return Ok(());
    }
    let cleaned: String = netloc
        .chars()
        .filter(|c| !matches!(c, '@' | ':' | '#' | '?'))
        .collect();
    let normalized: String = cleaned.nfkc().collect();
    if cleaned != normalized && normalized.contains(['/', '?', '#', '@', ':', '\\']) {
        return Err("ValueError: netloc contains invalid characters under NFKC normalization");
    }
    Ok(())
}

/// `_SplitResult.__post_init__` port check: ASCII digits, 0..=65535.
fn parse_port(port: &str) -> Result<Option<u16>, Reason> {
    if port.is_empty() {
        return Ok(None);
    }
    if !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err("ValueError: Port could not be cast to integer value");
    }
    let mut value: u32 = 0;
    for b in port.bytes() {
        value = value * 10 + u32::from(b - b'0');
        if value > 65535 {
            return Err("ValueError: Port out of range 0-65535");
        }
    }
    u16::try_from(value)
        .map(Some)
        .map_err(|_| "ValueError: Port out of range 0-65535")
}

/// Python `str.lower()`, borrowing when nothing changes.
fn lower(s: &str) -> Cow<'_, str> {
    if s.is_ascii() {
        if s.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(s.to_ascii_lowercase())
        } else {
            Cow::Borrowed(s)
        }
    } else {
        Cow::Owned(s.to_lowercase())
    }
}

// ---------------------------------------------------------------------------
// canonicalize_url
// ---------------------------------------------------------------------------

/// Port of `w3lib.url.canonicalize_url(url, keep_blank_values,
/// keep_fragments)` from w3lib 2.5.0 (with `encoding=None` and the default
/// `&` query separator).
///
/// Makes the URL safe (percent-encoding, IDNA host, normalised userinfo and
/// port), sorts the query arguments by decoded key then value, normalises
/// percent-escapes in the path, resolves dot segments, lower-cases the host,
/// formats IPv6 hosts per RFC 5952 and drops the fragment unless asked to keep
/// it.
///
/// # Errors
///
/// Where w3lib raises `ValueError`: a non-numeric or out-of-range port,
/// unbalanced or invalid `[...]` in the authority, or an authority whose NFKC
/// form holds URL delimiters.
pub fn canonicalize_url(
    url: &str,
    keep_blank_values: bool,
    keep_fragments: bool,
) -> Result<String, CanonicalizeError> {
    canonicalize(url, keep_blank_values, keep_fragments).map_err(|reason| CanonicalizeError {
        url: url.to_owned(),
        reason: reason.to_owned(),
    })
}

/// The common case: `http(s)://host[:port]/path` already in canonical form
/// (lower-case ASCII host, canonical port, no escapes, params, dot segments,
/// spaces or controls), followed by any query and fragment. Returns `None`
/// for anything else, which the general path then handles.
fn fast_path(url: &str, keep_blank_values: bool, keep_fragments: bool) -> Option<String> {
    let b = url.as_bytes();
    let mut i = if b.starts_with(b"http://") {
        7
    } else if b.starts_with(b"https://") {
        8
    } else {
        return None;
    };
    let host_start = i;
    while i < b.len() && FAST_HOST[usize::from(b[i])] {
        i += 1;
    }
    if i == host_start {
        return None;
    }
    if b.get(i) == Some(&b':') {
        let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        let port = &b[i + 1..i + 1 + digits];
        if digits == 0 || digits > 5 || (digits > 1 && port[0] == b'0') {
            return None;
        }
        if port
            .iter()
            .fold(0u32, |acc, &c| acc * 10 + u32::from(c - b'0'))
            > 65535
        {
            return None;
        }
        i += 1 + digits;
    }
    let path_start = i;
    let path_len = b[i..]
        .iter()
        .position(|&c| !FAST_PATH[usize::from(c)])
        .unwrap_or(b.len() - i);
    let path = &b[i..i + path_len];
    i += path_len;
    if !matches!(b.get(i), None | Some(b'?' | b'#'))
        || path.first().is_some_and(|&c| c != b'/')
        || path.windows(2).any(|w| w == b"/.")
    {
        return None;
    }
    let rest = &url[i..];
    if rest.bytes().any(|c| c <= b' ') {
        return None;
    }
    let mut out = Vec::with_capacity(url.len() + 1);
    out.extend_from_slice(&b[..i]);
    if i == path_start {
        out.push(b'/');
    }
    let (query, fragment) = match rest.strip_prefix('?') {
        Some(r) => r.split_once('#').unwrap_or((r, "")),
        None => ("", rest.strip_prefix('#').unwrap_or("")),
    };
    if !query.is_empty() {
        write_query(&mut out, query.as_bytes(), keep_blank_values);
    }
    if keep_fragments && !fragment.is_empty() {
        out.push(b'#');
        quote_into(&mut out, fragment.as_bytes(), &PATH_SAFEST);
    }
    String::from_utf8(out).ok()
}

fn canonicalize(
    url: &str,
    keep_blank_values: bool,
    keep_fragments: bool,
) -> Result<String, Reason> {
    if let Some(canonical) = fast_path(url, keep_blank_values, keep_fragments) {
        return Ok(canonical);
    }
    let stripped = strip(url);
    let (scheme, rest) = split_scheme(&stripped);
    let scheme = lower(scheme);
    // "\" ends the authority and separates path segments for special schemes,
    // but only before the query and fragment.
    let rest: Cow<'_, str> = if is_special(&scheme) && rest.contains('\\') {
        let cut = rest.find(['?', '#']).unwrap_or(rest.len());
        Cow::Owned(rest[..cut].replace('\\', "/") + &rest[cut..])
    } else {
        Cow::Borrowed(rest)
    };
    let parts = split_rest(&rest)?;

    let mut out: Vec<u8> = Vec::with_capacity(stripped.len() + 16);
    if !scheme.is_empty() {
        out.extend_from_slice(scheme.as_bytes());
        out.push(b':');
    }
    let slashes_at = out.len();
    out.extend_from_slice(b"//");
    let netloc_start = out.len();
    write_netloc(&mut out, &parts)?;
    let has_netloc = out.len() > netloc_start;
    if has_netloc {
        finish_host(&mut out, netloc_start)?;
    }

    // Path and ";params" (params only in the last segment).
    let (path, params) = match parts.path.rfind('/').map_or(0, |i| i + 1) {
        last if uses_params(&scheme) => match parts.path[last..].find(';') {
            Some(i) => (&parts.path[..last + i], &parts.path[last + i + 1..]),
            None => (parts.path, ""),
        },
        _ => (parts.path, ""),
    };
    let path_start = out.len();
    if path.is_empty() {
        out.push(b'/');
    } else {
        requote_path_into(&mut out, path.as_bytes());
        if out.get(path_start) == Some(&b'/') && out[path_start..].windows(2).any(|w| w == b"/.") {
            let resolved = remove_dot_segments(&out[path_start..]);
            out.truncate(path_start);
            out.extend_from_slice(&resolved);
        }
    }
    if !params.is_empty() {
        out.push(b';');
        quote_into(&mut out, params.as_bytes(), &PATH_SAFEST);
    }
    // _urlunsplit: "//" before the netloc, or before a netloc-less path where
    // urllib would add it.
    if has_netloc {
        if out.get(path_start) != Some(&b'/') {
            out.insert(path_start, b'/');
        }
    } else {
        let path = &out[path_start..];
        let keep = path.starts_with(b"//")
            || (!scheme.is_empty() && uses_netloc(&scheme) && path.starts_with(b"/"));
        if !keep {
            out.drain(slashes_at..slashes_at + 2);
        }
    }

    if !parts.query.is_empty() {
        write_query(&mut out, parts.query.as_bytes(), keep_blank_values);
    }
    if keep_fragments && !parts.fragment.is_empty() {
        out.push(b'#');
        quote_into(&mut out, parts.fragment.as_bytes(), &PATH_SAFEST);
    }
    String::from_utf8(out).map_err(|_| "UnicodeDecodeError: invalid UTF-8 in result")
}

/// `_safe_url_split`'s netloc: quoted userinfo, IDNA host, numeric port.
fn write_netloc(out: &mut Vec<u8>, parts: &Parts<'_>) -> Result<(), Reason> {
    let netloc = parts.netloc;
    let (userinfo, hostinfo) = match netloc.rfind('@') {
        Some(i) => (Some(&netloc[..i]), &netloc[i + 1..]),
        None => (None, netloc),
    };
    let (hostname, port) = if parts.bracketed {
        let inside = hostinfo.split_once('[').map_or("", |(_, r)| r);
        let (host, after) = inside.split_once(']').unwrap_or((inside, ""));
        (host, after.split_once(':').map_or("", |(_, p)| p))
    } else {
        hostinfo.split_once(':').unwrap_or((hostinfo, ""))
    };
    let port = parse_port(port)?;
    // The hostname is lower-cased up to a "%" (the zone of an IPv6 address).
    let hostname: Cow<'_, str> = match hostname.split_once('%') {
        Some((h, zone)) => Cow::Owned(format!("{}%{zone}", lower(h))),
        None => lower(hostname),
    };

    if let Some(userinfo) = userinfo {
        let (user, password) = match userinfo.split_once(':') {
            Some((u, p)) => (u, Some(p)),
            None => (userinfo, None),
        };
        requote_into(out, user.as_bytes(), &USERINFO_SAFEST);
        if let Some(password) = password {
            out.push(b':');
            requote_into(out, password.as_bytes(), &USERINFO_SAFEST);
        }
        out.push(b'@');
    }
    if hostname.contains(':') {
        if !hostname.is_ascii() {
            return Err("UnicodeEncodeError: 'ascii' codec can't encode IPv6 host");
        }
        out.push(b'[');
        out.extend_from_slice(hostname.as_bytes());
        out.push(b']');
    } else if hostname.is_ascii() {
        out.extend_from_slice(hostname.as_bytes());
    } else {
        // IDNA can fail (e.g. a label over 63 characters): keep the host.
        match idna_2003(&hostname) {
            Some(ascii) => out.extend_from_slice(ascii.as_bytes()),
            None => out.extend_from_slice(hostname.as_bytes()),
        }
    }
    if let Some(port) = port {
        out.push(b':');
        push_decimal(out, port);
    }
    Ok(())
}

fn push_decimal(out: &mut Vec<u8>, n: u16) {
    let mut buf = [0u8; 5];
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// The host part of the netloc is lower-cased (a trailing ":" dropped) and an
/// IPv6 address in brackets is put in its RFC 5952 form.
fn finish_host(out: &mut Vec<u8>, netloc_start: usize) -> Result<(), Reason> {
    let host_start = out[netloc_start..]
        .iter()
        .rposition(|&b| b == b'@')
        .map_or(netloc_start, |i| netloc_start + i + 1);
    if out[host_start..].is_ascii() {
        out[host_start..].make_ascii_lowercase();
    } else {
        let host = std::str::from_utf8(&out[host_start..])
            .map_err(|_| "UnicodeDecodeError: invalid host")?;
        let host = host.to_lowercase();
        out.truncate(host_start);
        out.extend_from_slice(host.as_bytes());
    }
    if out.len() > host_start && out.last() == Some(&b':') {
        out.pop();
    }
    // _normalize_ipv6_host
    let Some(open) = find_from(out, netloc_start, b'[') else {
        return Ok(());
    };
    let Some(close) = find_from(out, open, b']') else {
        return Ok(());
    };
    let inner = std::str::from_utf8(&out[open + 1..close])
        .map_err(|_| "UnicodeDecodeError: invalid host")?;
    if let Some(IpAddr::V6(addr, scope)) = ip_address(inner) {
        let mut formatted = format_ipv6(addr);
        if let Some(scope) = scope {
            formatted.push('%');
            formatted.push_str(scope);
        }
        out.splice(open + 1..close, formatted.into_bytes());
    }
    Ok(())
}

/// A raw query argument: (key, value) before decoding.
type RawPair<'a> = (&'a [u8], &'a [u8]);

/// Python's tuple order on the decoded (key, value) bytes.
fn cmp_decoded(a: &RawPair<'_>, b: &RawPair<'_>) -> std::cmp::Ordering {
    unquote_plus(a.0)
        .cmp(unquote_plus(b.0))
        .then_with(|| unquote_plus(a.1).cmp(unquote_plus(b.1)))
}

/// The query: split on "&", decode, drop blanks unless asked, sort by
/// (key, value) bytes, re-encode with only unreserved bytes kept. Pairs
/// equal after decoding print identically, so an unstable sort is exact.
fn write_query(out: &mut Vec<u8>, query: &[u8], keep_blank_values: bool) {
    const INLINE: usize = 16;
    let mut inline: [RawPair<'_>; INLINE] = [(&[], &[]); INLINE];
    let mut spilled: Vec<RawPair<'_>> = Vec::new();
    let mut n = 0;
    for field in query.split(|&b| b == b'&') {
        if field.is_empty() {
            continue;
        }
        let (key, value, has_eq) = match field.iter().position(|&b| b == b'=') {
            Some(i) => (&field[..i], &field[i + 1..], true),
            None => (field, &field[field.len()..], false),
        };
        if !keep_blank_values && (!has_eq || value.is_empty()) {
            continue;
        }
        if n < INLINE {
            inline[n] = (key, value);
        } else {
            if spilled.is_empty() {
                spilled.extend_from_slice(&inline);
            }
            spilled.push((key, value));
        }
        n += 1;
    }
    let pairs = if n <= INLINE {
        &mut inline[..n]
    } else {
        &mut spilled[..]
    };
    if pairs.is_empty() {
        return;
    }
    pairs.sort_unstable_by(cmp_decoded);
    out.push(b'?');
    for (i, (key, value)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(b'&');
        }
        quote_plus_into(out, unquote_plus(key));
        out.push(b'=');
        quote_plus_into(out, unquote_plus(value));
    }
}

/// `_remove_dot_segments` for a path starting with "/" (RFC 3986 5.2.4).
fn remove_dot_segments(path: &[u8]) -> Vec<u8> {
    let segments: Vec<&[u8]> = path[1..].split(|&b| b == b'/').collect();
    let (last, init) = match segments.split_last() {
        Some(split) => split,
        None => return path.to_vec(),
    };
    let mut output: Vec<&[u8]> = Vec::with_capacity(segments.len());
    for &segment in init {
        match segment {
            b".." => {
                output.pop();
            }
            b"." => {}
            _ => output.push(segment),
        }
    }
    match *last {
        b".." => {
            output.pop();
            output.push(b"");
        }
        b"." => output.push(b""),
        _ => output.push(last),
    }
    let mut result = Vec::with_capacity(path.len());
    for segment in output {
        result.push(b'/');
        result.extend_from_slice(segment);
    }
    if result.is_empty() {
        result.push(b'/');
    }
    result
}

// ---------------------------------------------------------------------------
// ipaddress (CPython 3.11)
// ---------------------------------------------------------------------------

enum IpAddr<'a> {
    V4,
    /// The address and its scope id (the part after "%").
    V6(u128, Option<&'a str>),
}

/// `ipaddress.ip_address(text)`, or `None` where it raises `ValueError`.
fn ip_address(text: &str) -> Option<IpAddr<'_>> {
    if text.contains('/') {
        return None;
    }
    if parse_ipv4(text).is_some() {
        return Some(IpAddr::V4);
    }
    let (addr, scope) = match text.split_once('%') {
        Some((_, scope)) if scope.is_empty() || scope.contains('%') => return None,
        Some((addr, scope)) => (addr, Some(scope)),
        None => (text, None),
    };
    parse_ipv6(addr).map(|ip| IpAddr::V6(ip, scope))
}

/// `IPv4Address._ip_int_from_string`: four decimal octets, no leading zeros.
fn parse_ipv4(text: &str) -> Option<u32> {
    let mut value: u32 = 0;
    let mut count = 0;
    for octet in text.split('.') {
        count += 1;
        if count > 4
            || octet.is_empty()
            || octet.len() > 3
            || !octet.bytes().all(|b| b.is_ascii_digit())
            || (octet.len() > 1 && octet.starts_with('0'))
        {
            return None;
        }
        let n: u32 = octet
            .bytes()
            .fold(0, |acc, b| acc * 10 + u32::from(b - b'0'));
        if n > 255 {
            return None;
        }
        value = value << 8 | n;
    }
    (count == 4).then_some(value)
}

fn parse_hextet(part: &str) -> Option<u128> {
    if part.is_empty() || part.len() > 4 || !part.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u16::from_str_radix(part, 16).ok().map(u128::from)
}

/// `IPv6Address._ip_int_from_string`.
fn parse_ipv6(text: &str) -> Option<u128> {
    if text.is_empty() {
        return None;
    }
    let mut parts: Vec<Cow<'_, str>> = text.split(':').map(Cow::Borrowed).collect();
    if parts.len() < 3 {
        return None;
    }
    if let Some(last) = parts.last().filter(|p| p.contains('.')) {
        let v4 = parse_ipv4(last)?;
        parts.pop();
        parts.push(Cow::Owned(format!("{:x}", v4 >> 16)));
        parts.push(Cow::Owned(format!("{:x}", v4 & 0xFFFF)));
    }
    if parts.len() > 9 {
        return None;
    }
    let n = parts.len();
    let mut skip_index = None;
    for (i, part) in parts.iter().enumerate().take(n - 1).skip(1) {
        if part.is_empty() {
            if skip_index.is_some() {
                return None;
            }
            skip_index = Some(i);
        }
    }
    let (parts_hi, parts_lo, skipped) = if let Some(skip) = skip_index {
        let mut hi = skip;
        let mut lo = n - skip - 1;
        if parts[0].is_empty() {
            hi -= 1;
            if hi > 0 {
                return None;
            }
        }
        if parts[n - 1].is_empty() {
            lo -= 1;
            if lo > 0 {
                return None;
            }
        }
        let skipped = 8usize.checked_sub(hi + lo).filter(|&s| s >= 1)?;
        (hi, lo, skipped)
    } else {
        if n != 8 || parts[0].is_empty() || parts[n - 1].is_empty() {
            return None;
        }
        (n, 0, 0)
    };
    let mut ip: u128 = 0;
    for part in &parts[..parts_hi] {
        ip = ip << 16 | parse_hextet(part)?;
    }
    // With all eight hextets skipped ("::") the shift is 128 bits, of zero.
    ip = ip.checked_shl(16 * skipped as u32).unwrap_or(0);
    for part in &parts[n - parts_lo..] {
        ip = ip << 16 | parse_hextet(part)?;
    }
    Some(ip)
}

/// `str(IPv6Address)` without the scope: the longest run (first if tied) of
/// two or more zero hextets becomes "::".
fn format_ipv6(ip: u128) -> String {
    let hextets: [u16; 8] = std::array::from_fn(|i| (ip >> (112 - 16 * i)) as u16);
    let (mut best_start, mut best_len, mut run_start, mut run_len) = (0, 0, 0, 0);
    for (i, &h) in hextets.iter().enumerate() {
        if h == 0 {
            if run_len == 0 {
                run_start = i;
            }
            run_len += 1;
            if run_len > best_len {
                best_start = run_start;
                best_len = run_len;
            }
        } else {
            run_len = 0;
        }
    }
    let join = |hs: &[u16]| {
        hs.iter()
            .map(|h| format!("{h:x}"))
            .collect::<Vec<_>>()
            .join(":")
    };
    if best_len > 1 {
        format!(
            "{}::{}",
            join(&hextets[..best_start]),
            join(&hextets[best_start + best_len..])
        )
    } else {
        join(&hextets)
    }
}

// ---------------------------------------------------------------------------
// IDNA 2003 (w3lib `_idna` + CPython `encodings.idna` + `stringprep`)
// ---------------------------------------------------------------------------

/// `_idna(host).encode()` for a non-ASCII host: NFKC, then CPython's `idna`
/// codec. `None` where Python raises `UnicodeError`.
fn idna_2003(host: &str) -> Option<String> {
    let cleaned: String = host
        .chars()
        .filter(|c| !matches!(c, '@' | ':' | '#' | '?'))
        .collect();
    let normalized: String = cleaned.nfkc().collect();
    if normalized.is_ascii() {
        let labels: Vec<&str> = normalized.split('.').collect();
        let (last, init) = labels.split_last()?;
        if init.iter().any(|l| l.is_empty() || l.len() > 63) || last.len() > 63 {
            return None;
        }
        return Some(normalized);
    }
    let mut labels: Vec<&str> = normalized
        .split(['.', '\u{3002}', '\u{FF0E}', '\u{FF61}'])
        .collect();
    let trailing_dot = labels.last().is_some_and(|l| l.is_empty());
    if trailing_dot {
        labels.pop();
    }
    let mut out = String::with_capacity(normalized.len() + 8);
    for (i, label) in labels.iter().enumerate() {
        if i > 0 {
            out.push('.');
        }
        out.push_str(&to_ascii(label)?);
    }
    if trailing_dot {
        out.push('.');
    }
    Some(out)
}

/// RFC 3490 ToASCII with AllowUnassigned and without UseSTD3ASCIIRules.
fn to_ascii(label: &str) -> Option<Cow<'_, str>> {
    let ok_len = |s: &str| (1..64).contains(&s.len());
    if label.is_ascii() {
        return ok_len(label).then_some(Cow::Borrowed(label));
    }
    let label = nameprep(label)?;
    if label.is_ascii() {
        return ok_len(&label).then_some(Cow::Owned(label));
    }
    if label.starts_with("xn--") {
        return None;
    }
    let encoded = format!("xn--{}", idna::punycode::encode_str(&label)?);
    ok_len(&encoded).then_some(Cow::Owned(encoded))
}

/// RFC 3491 nameprep as CPython implements it. CPython normalises with
/// Unicode 3.2 data; this uses the current NFKC tables, which differ only for
/// characters whose decomposition was corrected since.
fn nameprep(label: &str) -> Option<String> {
    let mut mapped = String::with_capacity(label.len());
    for c in label.chars().filter(|&c| !in_table_b1(c)) {
        map_table_b2(c, &mut mapped);
    }
    let label: String = mapped.nfkc().collect();
    if label.chars().any(is_prohibited) {
        return None;
    }
    let first_last_ral = |c: Option<char>| c.is_some_and(|c| in_ranges(c, BIDI_R_AL));
    if label.chars().any(|c| in_ranges(c, BIDI_R_AL))
        && (label.chars().any(|c| in_ranges(c, BIDI_L))
            || !first_last_ral(label.chars().next())
            || !first_last_ral(label.chars().next_back()))
    {
        return None;
    }
    Some(label)
}

/// stringprep B.1: commonly mapped to nothing.
fn in_table_b1(c: char) -> bool {
    matches!(
        c,
        '\u{AD}'
            | '\u{34F}'
            | '\u{1806}'
            | '\u{180B}'..='\u{180D}'
            | '\u{200B}'..='\u{200D}'
            | '\u{2060}'
            | '\u{FEFF}'
            | '\u{FE00}'..='\u{FE0F}'
    )
}

/// stringprep B.3 (`map_table_b3`): Python's `lower()` except for the
/// case-folding exceptions. Only exceptions that can change an NFKC-normalised
/// label are listed (the others are canonically equivalent to `lower()` or
/// apply to characters NFKC has already replaced).
fn map_table_b3(c: char, out: &mut String) {
    const EXCEPTIONS: &[(char, &str)] = &[
        ('\u{DF}', "ss"),
        ('\u{345}', "\u{3B9}"),
        ('\u{3C2}', "\u{3C3}"),
        ('\u{1FB3}', "\u{3B1}\u{3B9}"),
        ('\u{1FB4}', "\u{3AC}\u{3B9}"),
        ('\u{1FB7}', "\u{3B1}\u{342}\u{3B9}"),
        ('\u{1FBC}', "\u{3B1}\u{3B9}"),
        ('\u{1FC2}', "\u{1F74}\u{3B9}"),
        ('\u{1FC3}', "\u{3B7}\u{3B9}"),
        ('\u{1FC4}', "\u{3AE}\u{3B9}"),
        ('\u{1FC7}', "\u{3B7}\u{342}\u{3B9}"),
        ('\u{1FCC}', "\u{3B7}\u{3B9}"),
        ('\u{1FB2}', "\u{1F70}\u{3B9}"),
        ('\u{1FF2}', "\u{1F7C}\u{3B9}"),
        ('\u{1FF3}', "\u{3C9}\u{3B9}"),
        ('\u{1FF4}', "\u{3CE}\u{3B9}"),
        ('\u{1FF7}', "\u{3C9}\u{342}\u{3B9}"),
        ('\u{1FFC}', "\u{3C9}\u{3B9}"),
    ];
    // U+1F80..U+1FAF: Greek with ypogegrammeni folds to base letter + iota;
    // each block of 16 maps its two halves to the same 8 base letters.
    if let '\u{1F80}'..='\u{1FAF}' = c {
        let offset = (c as u32 - 0x1F80) % 8;
        let base = match (c as u32 - 0x1F80) / 16 {
            0 => 0x1F00,
            1 => 0x1F20,
            _ => 0x1F60,
        };
        out.extend(char::from_u32(base + offset));
        out.push('\u{3B9}');
        return;
    }
    match EXCEPTIONS.iter().find(|(k, _)| *k == c) {
        Some((_, v)) => out.push_str(v),
        None => out.extend(c.to_lowercase()),
    }
}

/// stringprep B.2 (`map_table_b2`): case folding closed under NFKC.
fn map_table_b2(c: char, out: &mut String) {
    let mut al = String::new();
    map_table_b3(c, &mut al);
    if al.is_ascii() && c.is_ascii() {
        out.push_str(&al);
        return;
    }
    let b: String = al.nfkc().collect();
    let mut bl = String::with_capacity(b.len());
    for ch in b.chars() {
        map_table_b3(ch, &mut bl);
    }
    let folded: String = bl.nfkc().collect();
    out.push_str(if b != folded { &folded } else { &al });
}

/// stringprep tables C.1.2, C.2.2, C.3, C.4, C.6, C.7, C.8 and C.9 (C.5,
/// surrogates, cannot occur in a `str`), with Unicode 3.2 categories.
fn is_prohibited(c: char) -> bool {
    let cp = c as u32;
    matches!(
        cp,
        // C.1.2 non-ASCII space (Zs in Unicode 3.2)
        0xA0 | 0x1680 | 0x2000..=0x200B | 0x202F | 0x205F | 0x3000
        // C.2.2 non-ASCII control
        | 0x80..=0x9F | 0x6DD | 0x70F | 0x180E | 0x200C | 0x200D | 0x2028 | 0x2029
        | 0xFEFF | 0x2060..=0x2063 | 0x206A..=0x206F | 0xFFF9..=0xFFFC | 0x1D173..=0x1D17A
        // C.3 private use
        | 0xE000..=0xF8FF | 0xF0000..=0xFFFFD | 0x100000..=0x10FFFD
        // C.4 non-character code points
        | 0xFDD0..=0xFDEF
        // C.6 inappropriate for plain text, C.7 for canonical representation
        | 0xFFFD | 0x2FF0..=0x2FFB
        // C.8 change display properties or deprecated
        | 0x340 | 0x341 | 0x200E | 0x200F | 0x202A..=0x202E
        // C.9 tagging characters
        | 0xE0001 | 0xE0020..=0xE007F
    ) || (cp >= 0xFDD0 && matches!(cp & 0xFFFF, 0xFFFE | 0xFFFF))
}

fn in_ranges(c: char, ranges: &[(u32, u32)]) -> bool {
    let cp = c as u32;
    ranges
        .binary_search_by(|&(lo, hi)| {
            if hi < cp {
                std::cmp::Ordering::Less
            } else if lo > cp {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// stringprep D.1: bidirectional category R or AL (Unicode 3.2).
#[rustfmt::skip]
const BIDI_R_AL: &[(u32, u32)] = &[
    (0x5BE, 0x5BE), (0x5C0, 0x5C0), (0x5C3, 0x5C3), (0x5D0, 0x5EA), (0x5F0, 0x5F4),
    (0x61B, 0x61B), (0x61F, 0x61F), (0x621, 0x63A), (0x640, 0x64A), (0x66D, 0x66F),
    (0x671, 0x6D5), (0x6DD, 0x6DD), (0x6E5, 0x6E6), (0x6FA, 0x6FE), (0x700, 0x70D),
    (0x710, 0x710), (0x712, 0x72C), (0x780, 0x7A5), (0x7B1, 0x7B1), (0x200F, 0x200F),
    (0xFB1D, 0xFB1D), (0xFB1F, 0xFB28), (0xFB2A, 0xFB36), (0xFB38, 0xFB3C), (0xFB3E, 0xFB3E),
    (0xFB40, 0xFB41), (0xFB43, 0xFB44), (0xFB46, 0xFBB1), (0xFBD3, 0xFD3D), (0xFD50, 0xFD8F),
    (0xFD92, 0xFDC7), (0xFDF0, 0xFDFC), (0xFE70, 0xFE74), (0xFE76, 0xFEFC),
];

/// stringprep D.2: bidirectional category L (Unicode 3.2), generated from
/// `unicodedata.ucd_3_2_0.bidirectional`.
#[rustfmt::skip]
const BIDI_L: &[(u32, u32)] = &[
    (0x41, 0x5A), (0x61, 0x7A), (0xAA, 0xAA), (0xB5, 0xB5), (0xBA, 0xBA),
    (0xC0, 0xD6), (0xD8, 0xF6), (0xF8, 0x220), (0x222, 0x233), (0x250, 0x2AD),
    (0x2B0, 0x2B8), (0x2BB, 0x2C1), (0x2D0, 0x2D1), (0x2E0, 0x2E4), (0x2EE, 0x2EE),
    (0x37A, 0x37A), (0x386, 0x386), (0x388, 0x38A), (0x38C, 0x38C), (0x38E, 0x3A1),
    (0x3A3, 0x3CE), (0x3D0, 0x3F5), (0x400, 0x482), (0x48A, 0x4CE), (0x4D0, 0x4F5),
    (0x4F8, 0x4F9), (0x500, 0x50F), (0x531, 0x556), (0x559, 0x55F), (0x561, 0x587),
    (0x589, 0x589), (0x903, 0x903), (0x905, 0x939), (0x93D, 0x940), (0x949, 0x94C),
    (0x950, 0x950), (0x958, 0x961), (0x964, 0x970), (0x982, 0x983), (0x985, 0x98C),
    (0x98F, 0x990), (0x993, 0x9A8), (0x9AA, 0x9B0), (0x9B2, 0x9B2), (0x9B6, 0x9B9),
    (0x9BE, 0x9C0), (0x9C7, 0x9C8), (0x9CB, 0x9CC), (0x9D7, 0x9D7), (0x9DC, 0x9DD),
    (0x9DF, 0x9E1), (0x9E6, 0x9F1), (0x9F4, 0x9FA), (0xA05, 0xA0A), (0xA0F, 0xA10),
    (0xA13, 0xA28), (0xA2A, 0xA30), (0xA32, 0xA33), (0xA35, 0xA36), (0xA38, 0xA39),
    (0xA3E, 0xA40), (0xA59, 0xA5C), (0xA5E, 0xA5E), (0xA66, 0xA6F), (0xA72, 0xA74),
    (0xA83, 0xA83), (0xA85, 0xA8B), (0xA8D, 0xA8D), (0xA8F, 0xA91), (0xA93, 0xAA8),
    (0xAAA, 0xAB0), (0xAB2, 0xAB3), (0xAB5, 0xAB9), (0xABD, 0xAC0), (0xAC9, 0xAC9),
    (0xACB, 0xACC), (0xAD0, 0xAD0), (0xAE0, 0xAE0), (0xAE6, 0xAEF), (0xB02, 0xB03),
    (0xB05, 0xB0C), (0xB0F, 0xB10), (0xB13, 0xB28), (0xB2A, 0xB30), (0xB32, 0xB33),
    (0xB36, 0xB39), (0xB3D, 0xB3E), (0xB40, 0xB40), (0xB47, 0xB48), (0xB4B, 0xB4C),
    (0xB57, 0xB57), (0xB5C, 0xB5D), (0xB5F, 0xB61), (0xB66, 0xB70), (0xB83, 0xB83),
    (0xB85, 0xB8A), (0xB8E, 0xB90), (0xB92, 0xB95), (0xB99, 0xB9A), (0xB9C, 0xB9C),
    (0xB9E, 0xB9F), (0xBA3, 0xBA4), (0xBA8, 0xBAA), (0xBAE, 0xBB5), (0xBB7, 0xBB9),
    (0xBBE, 0xBBF), (0xBC1, 0xBC2), (0xBC6, 0xBC8), (0xBCA, 0xBCC), (0xBD7, 0xBD7),
    (0xBE7, 0xBF2), (0xC01, 0xC03), (0xC05, 0xC0C), (0xC0E, 0xC10), (0xC12, 0xC28),
    (0xC2A, 0xC33), (0xC35, 0xC39), (0xC41, 0xC44), (0xC60, 0xC61), (0xC66, 0xC6F),
    (0xC82, 0xC83), (0xC85, 0xC8C), (0xC8E, 0xC90), (0xC92, 0xCA8), (0xCAA, 0xCB3),
    (0xCB5, 0xCB9), (0xCBE, 0xCBE), (0xCC0, 0xCC4), (0xCC7, 0xCC8), (0xCCA, 0xCCB),
    (0xCD5, 0xCD6), (0xCDE, 0xCDE), (0xCE0, 0xCE1), (0xCE6, 0xCEF), (0xD02, 0xD03),
    (0xD05, 0xD0C), (0xD0E, 0xD10), (0xD12, 0xD28), (0xD2A, 0xD39), (0xD3E, 0xD40),
    (0xD46, 0xD48), (0xD4A, 0xD4C), (0xD57, 0xD57), (0xD60, 0xD61), (0xD66, 0xD6F),
    (0xD82, 0xD83), (0xD85, 0xD96), (0xD9A, 0xDB1), (0xDB3, 0xDBB), (0xDBD, 0xDBD),
    (0xDC0, 0xDC6), (0xDCF, 0xDD1), (0xDD8, 0xDDF), (0xDF2, 0xDF4), (0xE01, 0xE30),
    (0xE32, 0xE33), (0xE40, 0xE46), (0xE4F, 0xE5B), (0xE81, 0xE82), (0xE84, 0xE84),
    (0xE87, 0xE88), (0xE8A, 0xE8A), (0xE8D, 0xE8D), (0xE94, 0xE97), (0xE99, 0xE9F),
    (0xEA1, 0xEA3), (0xEA5, 0xEA5), (0xEA7, 0xEA7), (0xEAA, 0xEAB), (0xEAD, 0xEB0),
    (0xEB2, 0xEB3), (0xEBD, 0xEBD), (0xEC0, 0xEC4), (0xEC6, 0xEC6), (0xED0, 0xED9),
    (0xEDC, 0xEDD), (0xF00, 0xF17), (0xF1A, 0xF34), (0xF36, 0xF36), (0xF38, 0xF38),
    (0xF3E, 0xF47), (0xF49, 0xF6A), (0xF7F, 0xF7F), (0xF85, 0xF85), (0xF88, 0xF8B),
    (0xFBE, 0xFC5), (0xFC7, 0xFCC), (0xFCF, 0xFCF), (0x1000, 0x1021), (0x1023, 0x1027),
    (0x1029, 0x102A), (0x102C, 0x102C), (0x1031, 0x1031), (0x1038, 0x1038), (0x1040, 0x1057),
    (0x10A0, 0x10C5), (0x10D0, 0x10F8), (0x10FB, 0x10FB), (0x1100, 0x1159), (0x115F, 0x11A2),
    (0x11A8, 0x11F9), (0x1200, 0x1206), (0x1208, 0x1246), (0x1248, 0x1248), (0x124A, 0x124D),
    (0x1250, 0x1256), (0x1258, 0x1258), (0x125A, 0x125D), (0x1260, 0x1286), (0x1288, 0x1288),
    (0x128A, 0x128D), (0x1290, 0x12AE), (0x12B0, 0x12B0), (0x12B2, 0x12B5), (0x12B8, 0x12BE),
    (0x12C0, 0x12C0), (0x12C2, 0x12C5), (0x12C8, 0x12CE), (0x12D0, 0x12D6), (0x12D8, 0x12EE),
    (0x12F0, 0x130E), (0x1310, 0x1310), (0x1312, 0x1315), (0x1318, 0x131E), (0x1320, 0x1346),
    (0x1348, 0x135A), (0x1361, 0x137C), (0x13A0, 0x13F4), (0x1401, 0x1676), (0x1681, 0x169A),
    (0x16A0, 0x16F0), (0x1700, 0x170C), (0x170E, 0x1711), (0x1720, 0x1731), (0x1735, 0x1736),
    (0x1740, 0x1751), (0x1760, 0x176C), (0x176E, 0x1770), (0x1780, 0x17B6), (0x17BE, 0x17C5),
    (0x17C7, 0x17C8), (0x17D4, 0x17DA), (0x17DC, 0x17DC), (0x17E0, 0x17E9), (0x1810, 0x1819),
    (0x1820, 0x1877), (0x1880, 0x18A8), (0x1E00, 0x1E9B), (0x1EA0, 0x1EF9), (0x1F00, 0x1F15),
    (0x1F18, 0x1F1D), (0x1F20, 0x1F45), (0x1F48, 0x1F4D), (0x1F50, 0x1F57), (0x1F59, 0x1F59),
    (0x1F5B, 0x1F5B), (0x1F5D, 0x1F5D), (0x1F5F, 0x1F7D), (0x1F80, 0x1FB4), (0x1FB6, 0x1FBC),
    (0x1FBE, 0x1FBE), (0x1FC2, 0x1FC4), (0x1FC6, 0x1FCC), (0x1FD0, 0x1FD3), (0x1FD6, 0x1FDB),
    (0x1FE0, 0x1FEC), (0x1FF2, 0x1FF4), (0x1FF6, 0x1FFC), (0x200E, 0x200E), (0x2071, 0x2071),
    (0x207F, 0x207F), (0x2102, 0x2102), (0x2107, 0x2107), (0x210A, 0x2113), (0x2115, 0x2115),
    (0x2119, 0x211D), (0x2124, 0x2124), (0x2126, 0x2126), (0x2128, 0x2128), (0x212A, 0x212D),
    (0x212F, 0x2131), (0x2133, 0x2139), (0x213D, 0x213F), (0x2145, 0x2149), (0x2160, 0x2183),
    (0x2336, 0x237A), (0x2395, 0x2395), (0x249C, 0x24E9), (0x3005, 0x3007), (0x3021, 0x3029),
    (0x3031, 0x3035), (0x3038, 0x303C), (0x3041, 0x3096), (0x309D, 0x309F), (0x30A1, 0x30FA),
    (0x30FC, 0x30FF), (0x3105, 0x312C), (0x3131, 0x318E), (0x3190, 0x31B7), (0x31F0, 0x321C),
    (0x3220, 0x3243), (0x3260, 0x327B), (0x327F, 0x32B0), (0x32C0, 0x32CB), (0x32D0, 0x32FE),
    (0x3300, 0x3376), (0x337B, 0x33DD), (0x33E0, 0x33FE), (0x3400, 0x4DB5), (0x4E00, 0x9FA5),
    (0xA000, 0xA48C), (0xAC00, 0xD7A3), (0xE000, 0xFA2D), (0xFA30, 0xFA6A), (0xFB00, 0xFB06),
    (0xFB13, 0xFB17), (0xFF21, 0xFF3A), (0xFF41, 0xFF5A), (0xFF66, 0xFFBE), (0xFFC2, 0xFFC7),
    (0xFFCA, 0xFFCF), (0xFFD2, 0xFFD7), (0xFFDA, 0xFFDC), (0x10300, 0x1031E), (0x10320, 0x10323),
    (0x10330, 0x1034A), (0x10400, 0x10425), (0x10428, 0x1044D), (0x1D000, 0x1D0F5), (0x1D100, 0x1D126),
    (0x1D12A, 0x1D166), (0x1D16A, 0x1D172), (0x1D183, 0x1D184), (0x1D18C, 0x1D1A9), (0x1D1AE, 0x1D1DD),
    (0x1D400, 0x1D454), (0x1D456, 0x1D49C), (0x1D49E, 0x1D49F), (0x1D4A2, 0x1D4A2), (0x1D4A5, 0x1D4A6),
    (0x1D4A9, 0x1D4AC), (0x1D4AE, 0x1D4B9), (0x1D4BB, 0x1D4BB), (0x1D4BD, 0x1D4C0), (0x1D4C2, 0x1D4C3),
    (0x1D4C5, 0x1D505), (0x1D507, 0x1D50A), (0x1D50D, 0x1D514), (0x1D516, 0x1D51C), (0x1D51E, 0x1D539),
    (0x1D53B, 0x1D53E), (0x1D540, 0x1D544), (0x1D546, 0x1D546), (0x1D54A, 0x1D550), (0x1D552, 0x1D6A3),
    (0x1D6A8, 0x1D7C9), (0x20000, 0x2A6D6), (0x2F800, 0x2FA1D), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD),
];

// ---------------------------------------------------------------------------
// Fingerprint
// ---------------------------------------------------------------------------

fn push_hex(out: &mut String, bytes: &[u8]) {
    out.reserve(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(HEX_LOWER[usize::from(b >> 4)]));
        out.push(char::from(HEX_LOWER[usize::from(b & 15)]));
    }
}

/// A JSON string as Python's `json.dumps` writes it with `ensure_ascii=True`.
fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str("\\u");
                    push_hex(out, &unit.to_be_bytes());
                }
            }
        }
    }
    out.push('"');
}

/// The exact JSON text Scrapy's `fingerprint()` hashes:
/// `json.dumps({"method", "url", "body", "headers"}, sort_keys=True)` with
/// the default separators and `ensure_ascii=True`.
///
/// `method` is the request method as Scrapy stores it (upper-cased),
/// `canonical_url` the result of [`canonicalize_url`] (with
/// `keep_blank_values = true`). `headers` holds, for each header named in
/// `include_headers` that the request has, its lower-cased name and all its
/// values in order; they are sorted by name here (a repeated name keeps its
/// last entry, as a Python dict would).
pub fn fingerprint_json(
    method: &str,
    canonical_url: &str,
    body: &[u8],
    headers: &[(&[u8], Vec<&[u8]>)],
) -> String {
    let mut out = String::with_capacity(64 + canonical_url.len() + body.len() * 2);
    out.push_str("{\"body\": \"");
    push_hex(&mut out, body);
    out.push_str("\", \"headers\": {");
    let mut order: Vec<&(&[u8], Vec<&[u8]>)> = headers.iter().collect();
    if !headers.windows(2).all(|w| w[0].0 < w[1].0) {
        // Stable sort, then keep the last of each name.
        order.sort_by(|a, b| a.0.cmp(b.0));
        order.reverse();
        order.dedup_by(|a, b| a.0 == b.0);
        order.reverse();
    }
    for (i, (name, values)) in order.into_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push('"');
        push_hex(&mut out, name);
        out.push_str("\": [");
        for (j, value) in values.iter().enumerate() {
            if j > 0 {
                out.push_str(", ");
            }
            out.push('"');
            push_hex(&mut out, value);
            out.push('"');
        }
        out.push(']');
    }
    out.push_str("}, \"method\": ");
    push_json_str(&mut out, method);
    out.push_str(", \"url\": ");
    push_json_str(&mut out, canonical_url);
    out.push('}');
    out
}

/// Scrapy's request fingerprint: the SHA-1 digest of [`fingerprint_json`].
pub fn fingerprint_bytes(
    method: &str,
    canonical_url: &str,
    body: &[u8],
    headers: &[(&[u8], Vec<&[u8]>)],
) -> [u8; 20] {
    Sha1::digest(fingerprint_json(method, canonical_url, body, headers).as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;
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
        assert!(check_canonicalize_file(CANON_VECTORS) >= 1000);
    }

    /// Differential check against more Python output:
    /// `CANON_VECTORS_FILE=/path/to/vectors.json cargo test -- --ignored extra_canonicalize_vectors`
    #[test]
    #[ignore = "needs CANON_VECTORS_FILE, a file shaped like canonicalize_url.json"]
    fn extra_canonicalize_vectors() {
        check_canonicalize_file(&std::env::var("CANON_VECTORS_FILE").unwrap());
    }

    #[test]
    fn fingerprint_vectors() {
        let vectors = load(FP_VECTORS);
        assert!(vectors.len() >= 300);
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
        push_json_str(&mut s, "a\"\\\n\u{7f}é😀");
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

    /// CPU time of this thread in ns (Linux), so a busy machine does not
    /// inflate the figures; `None` elsewhere.
    fn thread_cpu_ns() -> Option<u64> {
        let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
        stat.split_whitespace().next()?.parse().ok()
    }

    /// `cargo test --release -- --ignored --nocapture canonicalize_timing`
    #[test]
    #[ignore = "timing; run in release mode"]
    fn canonicalize_timing() {
        for url in [
            "http://127.0.0.1:8089/s/001/00150.html",
            "http://example.com/path?b=2&a=1",
        ] {
            let n = 1_000_000;
            let cpu = thread_cpu_ns();
            let start = std::time::Instant::now();
            for _ in 0..n {
                std::hint::black_box(
                    canonicalize_url(std::hint::black_box(url), true, false).unwrap(),
                );
            }
            let wall = start.elapsed().as_secs_f64() * 1e9 / f64::from(n);
            let cpu = thread_cpu_ns()
                .zip(cpu)
                .map(|(b, a)| format!("{:.0}", (b - a) as f64 / f64::from(n)));
            println!(
                "{url}: {wall:.0} ns/call wall, {} ns/call CPU",
                cpu.as_deref().unwrap_or("?")
            );
        }
    }
}
