//! `w3lib.url.canonicalize_url` (w3lib 2.5.0): the fast path for `http(s)` URLs that
//! are canonical up to their query, and the general path that follows w3lib step by
//! step.

use std::borrow::Cow;

use super::error::{CanonicalizeError, Reason};
use super::ip::*;
use super::netloc::write_netloc;
use super::quote::*;
use super::safe;
use super::split::*;

// ---------------------------------------------------------------------------
// Byte tables
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
/// for anything else, which the general path then handles. Borrows `url` (or its
/// part before a dropped fragment) when that is the canonical form.
pub(super) fn fast_path(
    url: &str,
    keep_blank_values: bool,
    keep_fragments: bool,
) -> Option<Cow<'_, str>> {
    let b = url.as_bytes();
    let i = match safe::known_origin_end(b) {
        Some(end) => end,
        None => fast_origin_end(b)?,
    };
    fast_path_rest(url, i, keep_blank_values, keep_fragments)
}

/// The fast path's scheme, host and port: where they end, when they are canonical.
/// (A URL that starts with the thread's known safe origin ends its origin at the
/// same place: that origin's `http`/`https`, host of `SAFE_HOST` bytes (all
/// [`FAST_HOST`] bytes) and canonical port passed a stricter test, and the byte after
/// it — `/`, `?`, `#` or the end — is neither a host byte nor a digit.)
fn fast_origin_end(b: &[u8]) -> Option<usize> {
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
    Some(i)
}

/// The fast path after the origin, which ends at `i`.
fn fast_path_rest(
    url: &str,
    mut i: usize,
    keep_blank_values: bool,
    keep_fragments: bool,
) -> Option<Cow<'_, str>> {
    let b = url.as_bytes();
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
    if i > path_start && (rest.is_empty() || (rest.starts_with('#') && !keep_fragments)) {
        // Nothing to add, sort or quote: the URL up to its fragment is the answer.
        return Some(Cow::Borrowed(&url[..i]));
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
    String::from_utf8(out).ok().map(Cow::Owned)
}

/// [`canonicalize_url`], borrowing `url` when it is already canonical (the
/// fingerprint of the usual link hashes it without a copy), and saying whether the
/// answer is *plain*: printable ASCII without `"` or `\`, which JSON writes as it
/// is. Said of the fast path's borrowed answers (`scheme://`, then [`FAST_HOST`],
/// port and [`FAST_PATH`] bytes, which a constant below checks at compile time);
/// other answers say `false` (not known, not necessarily escaped).
pub(crate) fn canonicalize_cow_plain(
    url: &str,
    keep_blank_values: bool,
    keep_fragments: bool,
) -> Result<(Cow<'_, str>, bool), CanonicalizeError> {
    if let Some(canonical) = fast_path(url, keep_blank_values, keep_fragments) {
        let plain = matches!(canonical, Cow::Borrowed(_));
        return Ok((canonical, plain));
    }
    canonicalize_url(url, keep_blank_values, keep_fragments).map(|c| (Cow::Owned(c), false))
}

/// The fast path's borrowed answers are plain (see [`canonicalize_cow_plain`]): every
/// byte its host and path tables admit is printable ASCII other than `"` and `\`.
const _: () = {
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        let plain = c > b' ' && c < 0x7f && c != b'"' && c != b'\\';
        assert!(plain || !(FAST_HOST[b] || FAST_PATH[b]));
        b += 1;
    }
};

pub(super) fn canonicalize(
    url: &str,
    keep_blank_values: bool,
    keep_fragments: bool,
) -> Result<String, Reason> {
    if let Some(canonical) = fast_path(url, keep_blank_values, keep_fragments) {
        return Ok(canonical.into_owned());
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
