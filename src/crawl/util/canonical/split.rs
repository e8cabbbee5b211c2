//! `urllib.parse` / w3lib splitting: schemes, `_urlsplit`, netloc checks, ports.

use std::borrow::Cow;

use unicode_normalization::UnicodeNormalization;

use super::error::{INVALID_IPV6, Reason};
use super::ip::{IpAddr, ip_address};

/// w3lib `_SPECIAL_SCHEMES`.
pub(super) fn is_special(scheme: &str) -> bool {
    matches!(scheme, "ftp" | "file" | "http" | "https" | "ws" | "wss")
}

/// `urllib.parse.uses_params`.
pub(super) fn uses_params(scheme: &str) -> bool {
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
pub(super) fn uses_netloc(scheme: &str) -> bool {
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
pub(super) fn strip(url: &str) -> Cow<'_, str> {
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
pub(super) fn split_scheme(url: &str) -> (&str, &str) {
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
pub(super) struct Parts<'a> {
    pub(super) netloc: &'a str,
    pub(super) path: &'a str,
    pub(super) query: &'a str,
    pub(super) fragment: &'a str,
    /// Whether the authority held `[` and `]` (IPv6 host parsing).
    pub(super) bracketed: bool,
}

pub(super) fn find_from(b: &[u8], from: usize, c: u8) -> Option<usize> {
    b.get(from..)?
        .iter()
        .position(|&x| x == c)
        .map(|p| p + from)
}

/// The body of `_urlsplit` after the scheme (and backslash handling).
pub(super) fn split_rest(url: &str) -> Result<Parts<'_>, Reason> {
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
pub(super) fn check_bracketed_netloc(netloc: &str) -> Result<(), Reason> {
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
pub(super) fn check_netloc(netloc: &str) -> Result<(), Reason> {
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
pub(super) fn parse_port(port: &str) -> Result<Option<u16>, Reason> {
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
pub(super) fn lower(s: &str) -> Cow<'_, str> {
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
