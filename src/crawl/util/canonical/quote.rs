//! w3lib's quoting: the byte tables of safe characters, `%HH` escapes, `_quote`,
//! `_unquote` and their `+` variants.

use crate::util::hex_digit;

// ---------------------------------------------------------------------------
// Byte tables
// ---------------------------------------------------------------------------

pub(super) const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// RFC 3986 unreserved characters plus `extra`: the bytes `_quote` keeps.
pub(super) const fn safe_table(extra: &[u8]) -> [bool; 256] {
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

/// A byte set: the bytes of `listed`, plus the controls and space (`0..=0x20`) with
/// `controls`, plus DEL and the non-ASCII bytes (`0x7f..`) with `high`. For the
/// one-pass scanners that stop only at the bytes they care about.
pub(super) const fn byte_set(listed: &[u8], controls: bool, high: bool) -> [bool; 256] {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = (controls && b <= b' ' as usize) || (high && b >= 0x7f);
        b += 1;
    }
    let mut i = 0;
    while i < listed.len() {
        t[listed[i] as usize] = true;
        i += 1;
    }
    t
}

/// w3lib `_PATH_SAFEST_CHARS` (also its query and fragment sets).
pub(super) static PATH_SAFEST: [bool; 256] = safe_table(b"!$%&'()*+,/:;=?@");
/// w3lib `_USERINFO_SAFEST_CHARS`.
pub(super) static USERINFO_SAFEST: [bool; 256] = safe_table(b"!$&'()*+,");
/// w3lib `_PATH_SAFE_CHARS`, used to re-quote the decoded path.
pub(super) static PATH_SAFE: [bool; 256] = safe_table(b"!$%&'()*+,/:;=?@[]|");
/// `_quote(..., quote_plus=True)` for query keys and values.
pub(super) static QUERY_PLUS_SAFE: [bool; 256] = safe_table(b"");
/// Path bytes the fast path copies verbatim: `PATH_SAFE` less `%` (escapes),
/// `;` (params) and `?` (the query).
pub(super) static FAST_PATH: [bool; 256] = safe_table(b"!$&'()*+,/:=@[]|");
/// Host bytes the fast path copies verbatim (no upper case, no escapes).
pub(super) static FAST_HOST: [bool; 256] = {
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

/// The byte a valid `%HH` escape at `s[i]` stands for.
#[inline]
pub(super) fn escape_at(s: &[u8], i: usize) -> Option<u8> {
    if s.get(i) != Some(&b'%') {
        return None;
    }
    let hi = hex_digit(*s.get(i + 1)?)?;
    let lo = hex_digit(*s.get(i + 2)?)?;
    Some(hi << 4 | lo)
}

#[inline]
pub(super) fn push_escape(out: &mut Vec<u8>, b: u8) {
    out.extend_from_slice(&[
        b'%',
        HEX_UPPER[usize::from(b >> 4)],
        HEX_UPPER[usize::from(b & 15)],
    ]);
}

/// `_quote_into(data, safe)`: keep safe bytes, `%HH` the rest.
pub(super) fn quote_into(out: &mut Vec<u8>, data: &[u8], safe: &[bool; 256]) {
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
pub(super) fn requote_into(out: &mut Vec<u8>, data: &[u8], safe: &[bool; 256]) {
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
pub(super) fn requote_path_into(out: &mut Vec<u8>, path: &[u8]) {
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
pub(super) struct UnquotePlus<'a> {
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

pub(super) fn unquote_plus(s: &[u8]) -> UnquotePlus<'_> {
    UnquotePlus { s, i: 0 }
}

/// `_quote_into(data, quote_plus=True)`: unreserved kept, space as `+`.
pub(super) fn quote_plus_into(out: &mut Vec<u8>, data: impl Iterator<Item = u8>) {
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

/// w3lib's `to_unicode(bytes, "utf-8", errors="percentencode")`: UTF-8, with each
/// byte of an invalid sequence written as `%XX` (how Scrapy reads a `Location` header).
pub fn decode_utf8_percentencode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
