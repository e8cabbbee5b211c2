//! Which encoding a response's body is read in, as Scrapy's `TextResponse` decides it
//! with w3lib 2.5: a byte-order mark, then the `Content-Type` charset
//! ([`http_content_type_encoding`]), then a declaration in the first 4,096 bytes
//! ([`html_body_declared_encoding`]: `<meta charset>`, `<meta http-equiv=Content-Type
//! content=...charset=...>`, `<?xml encoding=...?>`, comments skipped, nothing after
//! `<body>`), then Scrapy's guess (`ascii` — windows-1252, as w3lib resolves it —,
//! UTF-8, else windows-1252); and how a label resolves ([`resolve_encoding`]).
//!
//! The scans are hand-written forms of w3lib's regular expressions, each a single
//! forward pass over a bounded prefix.

use encoding_rs::Encoding;

/// Scrapy's order: BOM, then the Content-Type charset, then the body's declaration,
/// then (nothing declared) windows-1252 for a pure-ASCII body (what Scrapy's `ascii`
/// guess resolves to: the encoding of non-ASCII text put into followed URLs' queries
/// and form data), UTF-8 if the body is valid UTF-8 (`known_utf8`: checked already),
/// else windows-1252.
///
/// Scrapy's last step runs `charset-normalizer`, a statistical guess; trawl's
/// windows-1252 is what Scrapy guessed before it and what browsers in Western locales
/// use (DESIGN.md lists the difference).
pub(crate) fn detect_encoding(
    content_type: Option<&[u8]>,
    body: &[u8],
    known_utf8: bool,
) -> &'static Encoding {
    if let Some((enc, _)) = Encoding::for_bom(body) {
        return enc;
    }
    if let Some(enc) = content_type.and_then(http_content_type_encoding) {
        return enc;
    }
    if let Some(enc) = html_body_declared_encoding(body) {
        // A page declaring UTF-16 in ASCII is really ASCII-compatible (HTML spec).
        if enc == encoding_rs::UTF_16LE || enc == encoding_rs::UTF_16BE {
            return encoding_rs::UTF_8;
        }
        return enc;
    }
    // Scrapy's `_auto_detect_fun` tries ascii, then utf-8, and resolves the first that
    // decodes: a pure-ASCII body is `ascii`, which w3lib resolves to cp1252.
    if body.is_ascii() {
        encoding_rs::WINDOWS_1252
    } else if known_utf8 || std::str::from_utf8(body).is_ok() {
        encoding_rs::UTF_8
    } else {
        encoding_rs::WINDOWS_1252
    }
}

/// Python's `str.isspace` on a character decoded from Latin-1 (w3lib decodes the bytes
/// it scans as Latin-1, and its `\s` is Unicode's).
fn space(b: u8) -> bool {
    matches!(b, b'\t'..=b'\r' | 0x1c..=0x20 | 0x85 | 0xa0)
}

/// Python's `\w` on a Latin-1 character: letters, digits, `_` (and the Latin-1
/// letters `ª`, `µ`, `º`, `À`-`ÿ` but `×` and `÷`, and the digits `²³¹`... which a
/// label never resolves with, but which keep a match going as Python's do).
fn word(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || b == b'_'
        || matches!(b, 0xaa | 0xb2 | 0xb3 | 0xb5 | 0xb9 | 0xba | 0xbc..=0xbe)
        || (b >= 0xc0 && b != 0xd7 && b != 0xf7)
}

/// w3lib's `[\w-]+` at the start of `s` (after Unicode whitespace, for
/// `_leading_label`), or `None`.
fn leading_label(s: &[u8]) -> Option<&[u8]> {
    let start = s.iter().position(|&b| !space(b))?;
    let s = &s[start..];
    let end = s
        .iter()
        .position(|&b| !(word(b) || b == b'-'))
        .unwrap_or(s.len());
    (end > 0).then(|| &s[..end])
}

/// w3lib's `http_content_type_encoding`: the first `charset=` parameter of a
/// `Content-Type` value — at the start or after a `;`, the label (`[\w-]+`, quoted or
/// not) followed by the end, whitespace, `;` or `,` — resolved. When a `"` comes
/// before it (the match may be inside a quoted parameter value), the parameters are
/// walked with their quoted strings whole instead.
pub fn http_content_type_encoding(value: &[u8]) -> Option<&'static Encoding> {
    let (start, label) = header_charset_fast(value)?;
    if !value[..start].contains(&b'"') {
        return resolve_encoding(label);
    }
    quoted_aware_charset(value)
}

/// `_HEADER_ENCODING_RE.search`: the match's start and its label.
fn header_charset_fast(value: &[u8]) -> Option<(usize, &[u8])> {
    let starts = std::iter::once(0).chain(
        value
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b';')
            .map(|(i, _)| i),
    );
    for start in starts {
        let mut i = if value.get(start) == Some(&b';') {
            start + 1
        } else {
            start
        };
        while matches!(value.get(i), Some(b' ' | b'\t')) {
            i += 1;
        }
        let Some(rest) = value.get(i..).filter(|r| r.len() >= 8) else {
            continue;
        };
        if !rest[..8].eq_ignore_ascii_case(b"charset=") {
            continue;
        }
        let rest = &rest[8..];
        let is_label = |b: u8| word(b) || b == b'-';
        let ends = |after: Option<&u8>| after.is_none_or(|&b| space(b) || b == b';' || b == b',');
        let label = if let Some(q) = rest.strip_prefix(b"\"") {
            let n = q.iter().position(|&b| !is_label(b)).unwrap_or(q.len());
            (n > 0 && q.get(n) == Some(&b'"') && ends(q.get(n + 1))).then(|| &q[..n])
        } else {
            None
        };
        let label = label.or_else(|| {
            let n = rest
                .iter()
                .position(|&b| !is_label(b))
                .unwrap_or(rest.len());
            (n > 0 && ends(rest.get(n))).then(|| &rest[..n])
        });
        if let Some(label) = label {
            return Some((start, label));
        }
    }
    None
}

/// w3lib's `_quoted_aware_charset`: the parameters (`_HEADER_PARAMETER_RE`: at the
/// start or after a `;`, `name=` and a quoted string taken whole or a token) walked
/// for the first `charset` whose value is a label.
fn quoted_aware_charset(value: &[u8]) -> Option<&'static Encoding> {
    let mut p = 0;
    while p < value.len() {
        let Some((name, val, end)) =
            parameter_at(value, p, true).or_else(|| parameter_at(value, p, false))
        else {
            p += 1;
            continue;
        };
        if name.eq_ignore_ascii_case(b"charset")
            && !val.is_empty()
            && val.iter().all(|&b| word(b) || b == b'-')
        {
            return resolve_encoding(val);
        }
        p = end;
    }
    None
}

/// One `_HEADER_PARAMETER_RE` match at `p` (`at_start`: the `^` alternative, else
/// the `;` one): the name, the value (a quoted string's inside, or the token) and
/// where the match ends.
fn parameter_at(value: &[u8], p: usize, at_start: bool) -> Option<(&[u8], &[u8], usize)> {
    let mut j = if at_start {
        (p == 0).then_some(0)?
    } else {
        (value.get(p) == Some(&b';')).then_some(p + 1)?
    };
    while matches!(value.get(j), Some(b' ' | b'\t')) {
        j += 1;
    }
    let name_end = value[j..]
        .iter()
        .position(|&b| space(b) || b == b';' || b == b'=')
        .map_or(value.len(), |e| j + e);
    if name_end == j || value.get(name_end) != Some(&b'=') {
        return None;
    }
    let v = name_end + 1;
    if let Some(close) = quoted_string(value, v)
        && value
            .get(close + 1)
            .is_none_or(|&b| space(b) || b == b';' || b == b',')
    {
        return Some((&value[j..name_end], &value[v + 1..close], close + 1));
    }
    let n = value[v..]
        .iter()
        .position(|&b| b == b';' || b == b',' || space(b))
        .map_or(value.len(), |e| v + e);
    Some((&value[j..name_end], &value[v..n], n))
}

/// The index of the `"` closing a quoted string that opens at `at`: `[^"\\]` and
/// `\\.` (any character but a newline after the backslash) inside.
fn quoted_string(value: &[u8], at: usize) -> Option<usize> {
    if value.get(at) != Some(&b'"') {
        return None;
    }
    let mut k = at + 1;
    while k < value.len() {
        match value[k] {
            b'"' => return Some(k),
            b'\\' if value.get(k + 1).is_some_and(|&c| c != b'\n') => k += 2,
            b'\\' => return None,
            _ => k += 1,
        }
    }
    None
}

/// w3lib's `html_body_declared_encoding`: the first declaration in the first 4,096
/// bytes that names a label — a `<meta>` with a `charset` attribute, or with
/// `http-equiv` naming the content type and a `content` holding `charset=`; an XML
/// declaration's `encoding` — resolved. Comments are skipped whole, and the scan
/// stops at `<body`.
pub fn html_body_declared_encoding(body: &[u8]) -> Option<&'static Encoding> {
    let chunk = &body[..body.len().min(4096)];
    let mut i = 0;
    while i < chunk.len() {
        let p = memchr::memchr(b'<', &chunk[i..])?;
        let lt = i + p;
        let rest = &chunk[lt..];
        // A comment, up to `-->` or the end.
        if rest.starts_with(b"<!--") {
            i = memchr::memmem::find(&rest[4..], b"-->").map_or(chunk.len(), |e| lt + 4 + e + 3);
            continue;
        }
        let mut j = lt + 1;
        while j < chunk.len() && space(chunk[j]) {
            j += 1;
        }
        let after_spaces = &chunk[j..];
        if after_spaces.len() > 4
            && after_spaces[..4].eq_ignore_ascii_case(b"meta")
            && (space(after_spaces[4]) || after_spaces[4] == b'/')
        {
            let attrs_start = j + 4;
            let attrs_end = meta_attrs_end(chunk, attrs_start);
            let attrs = &chunk[attrs_start..attrs_end];
            i = attrs_end;
            if !contains_ignore_case(attrs, b"charset") {
                continue;
            }
            if let Some(label) = meta_charset_label(attrs) {
                return resolve_encoding(label);
            }
            continue;
        }
        if rest.len() > 6 && rest[1..5].eq_ignore_ascii_case(b"?xml") && space(rest[5]) {
            let attrs_start = lt + 6;
            let attrs_end = chunk[attrs_start..]
                .iter()
                .position(|&b| b == b'<' || b == b'>')
                .map_or(chunk.len(), |p| attrs_start + p);
            let attrs = &chunk[attrs_start..attrs_end];
            i = attrs_end;
            let label = tag_attributes(attrs)
                .find(|(name, _)| name.eq_ignore_ascii_case(b"encoding"))
                .and_then(|(_, value)| leading_label(value));
            if let Some(label) = label {
                return resolve_encoding(label);
            }
            continue;
        }
        if after_spaces.len() >= 4 && after_spaces[..4].eq_ignore_ascii_case(b"body") {
            return None;
        }
        i = lt + 1;
    }
    None
}

/// The end of a meta tag's attribute text from `from`: `(?:[^<>=]|=\s*(?:"[^"]*"|'[^']*')?)*`,
/// a quoted value after `=` taken whole (a `>` inside it does not end the tag).
fn meta_attrs_end(chunk: &[u8], from: usize) -> usize {
    let mut k = from;
    while k < chunk.len() {
        match chunk[k] {
            b'<' | b'>' => return k,
            b'=' => {
                k += 1;
                while k < chunk.len() && space(chunk[k]) {
                    k += 1;
                }
                if let Some(&q @ (b'"' | b'\'')) = chunk.get(k)
                    && let Some(close) = memchr::memchr(q, &chunk[k + 1..])
                {
                    k += close + 2;
                }
            }
            _ => k += 1,
        }
    }
    k
}

fn contains_ignore_case(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

/// w3lib's `_meta_charset_label`: a `charset` attribute's leading label; else, when an
/// `http-equiv` (or `http_equiv`, `httpequiv`) attribute names the content type
/// (`content[-_ ]?type`), the label after `charset=` in the first `content` that has
/// one.
fn meta_charset_label(attrs: &[u8]) -> Option<&[u8]> {
    let mut has_pragma = false;
    let mut content_label = None;
    for (name, value) in tag_attributes(attrs) {
        if name.eq_ignore_ascii_case(b"charset") {
            if let Some(label) = leading_label(value) {
                return Some(label);
            }
        } else if name.eq_ignore_ascii_case(b"content") {
            if content_label.is_none() {
                content_label = content_charset(value);
            }
        } else if (name.eq_ignore_ascii_case(b"http-equiv")
            || name.eq_ignore_ascii_case(b"http_equiv")
            || name.eq_ignore_ascii_case(b"httpequiv"))
            && content_type_pragma(value)
        {
            has_pragma = true;
        }
    }
    if has_pragma { content_label } else { None }
}

/// `charset\s*=\s*["']?\s*(?P<label>[\w-]+)` searched in a `content` value.
fn content_charset(value: &[u8]) -> Option<&[u8]> {
    let mut from = 0;
    while from + 7 <= value.len() {
        let p = value[from..]
            .windows(7)
            .position(|w| w.eq_ignore_ascii_case(b"charset"))?;
        let mut k = from + p + 7;
        let skip = |k: &mut usize| {
            while *k < value.len() && space(value[*k]) {
                *k += 1;
            }
        };
        skip(&mut k);
        if value.get(k) == Some(&b'=') {
            k += 1;
            skip(&mut k);
            if matches!(value.get(k), Some(b'"' | b'\'')) {
                k += 1;
            }
            skip(&mut k);
            let n = value[k..]
                .iter()
                .position(|&b| !(word(b) || b == b'-'))
                .unwrap_or(value.len() - k);
            if n > 0 {
                return Some(&value[k..k + n]);
            }
        }
        from += p + 1;
    }
    None
}

/// `content[-_ ]?type` searched, ignoring case.
fn content_type_pragma(value: &[u8]) -> bool {
    let starts = |s: &[u8], w: &[u8]| s.len() >= w.len() && s[..w.len()].eq_ignore_ascii_case(w);
    (0..value.len()).any(|i| {
        let rest = &value[i..];
        starts(rest, b"content") && {
            let t = &rest[7..];
            starts(t, b"type")
                || (matches!(t.first(), Some(b'-' | b'_' | b' ')) && starts(&t[1..], b"type"))
        }
    })
}

/// w3lib's `iter_tag_attributes`: `(name, value)` for each attribute with a value
/// (`name`, then optionally `\s*=\s*` and a double-quoted, single-quoted or bare
/// value), names as written.
fn tag_attributes(attrs: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    let is_name = |b: u8| !(space(b) || matches!(b, b'<' | b'>' | b'/' | b'='));
    let mut k = 0;
    std::iter::from_fn(move || {
        loop {
            let start = k + attrs[k..].iter().position(|&b| is_name(b))?;
            let end = attrs[start..]
                .iter()
                .position(|&b| !is_name(b))
                .map_or(attrs.len(), |p| start + p);
            k = end;
            let mut v = end;
            while v < attrs.len() && space(attrs[v]) {
                v += 1;
            }
            if attrs.get(v) != Some(&b'=') {
                // A valueless attribute: passed over.
                continue;
            }
            v += 1;
            while v < attrs.len() && space(attrs[v]) {
                v += 1;
            }
            let value = match attrs.get(v) {
                Some(&q @ (b'"' | b'\'')) => match memchr::memchr(q, &attrs[v + 1..]) {
                    Some(close) => {
                        k = v + 1 + close + 1;
                        &attrs[v + 1..v + 1 + close]
                    }
                    // No closing quote: the bare alternative matches nothing.
                    None => {
                        k = v;
                        &attrs[v..v]
                    }
                },
                _ => {
                    let n = attrs[v..]
                        .iter()
                        .position(|&b| space(b) || matches!(b, b'"' | b'\'' | b'>'))
                        .map_or(attrs.len(), |p| v + p);
                    k = n;
                    &attrs[v..n]
                }
            };
            return Some((&attrs[start..end], value));
        }
    })
}

/// An encoding label as Scrapy resolves it (w3lib's `resolve_encoding`: Python's
/// codec names after `encodings.normalize_encoding`, then w3lib's translation
/// table). The WHATWG table behind `encoding_rs` already makes most of w3lib's
/// substitutions (`latin1` and `ascii` → windows-1252, `shift_jis` → windows-31j,
/// `euc-kr` → windows-949, `big5` → big5-hkscs, `iso-8859-9` → windows-1254,
/// `tis-620` → windows-874); `gb2312` / `gbk` go to gb18030 as w3lib sends them
/// (WHATWG: GBK), `x-user-defined` (no Python codec) to nothing, and Python's own
/// spellings (`latin-1`, `iso8859_15`, `cp932`, `utf8`, `big5hkscs`...) are added.
pub fn resolve_encoding(label: &[u8]) -> Option<&'static encoding_rs::Encoding> {
    use encoding_rs as e;
    // Python's `normalize_encoding` on the label read as Latin-1: runs of other
    // characters become one separator (none at the ends), non-ASCII letters and
    // digits are dropped.
    let mut dashed = String::with_capacity(label.len());
    let mut punct = false;
    for &b in label {
        let alnum = b.is_ascii_alphanumeric() || (b >= 0x80 && word(b));
        if alnum || b == b'.' {
            if punct && !dashed.is_empty() {
                dashed.push('-');
            }
            if b.is_ascii() {
                dashed.push(char::from(b.to_ascii_lowercase()));
            }
            punct = false;
        } else {
            punct = true;
        }
    }
    match dashed.as_str() {
        "gb2312" | "gbk" | "gb-2312-80" | "cp936" | "ms936" | "936" | "zh-cn" | "euc-cn" => {
            return Some(e::GB18030);
        }
        "x-user-defined" => return None,
        _ => {}
    }
    if let Some(enc) = e::Encoding::for_label(label) {
        return Some(enc);
    }
    if let Some(enc) = e::Encoding::for_label(dashed.as_bytes()) {
        return Some(enc);
    }
    Some(match dashed.as_str() {
        "latin" | "latin-1" | "iso8859" | "8859" | "cp819" | "iso-ir-100" => e::WINDOWS_1252,
        "latin-2" => e::ISO_8859_2,
        "latin-3" => e::ISO_8859_3,
        "latin-4" => e::ISO_8859_4,
        "latin-5" => e::WINDOWS_1254,
        "latin-6" => e::ISO_8859_10,
        "latin-7" | "l7" => e::ISO_8859_13,
        "latin-8" | "latin8" | "l8" => e::ISO_8859_14,
        "latin-9" | "latin9" => e::ISO_8859_15,
        "latin-10" | "latin10" | "l10" => e::ISO_8859_16,
        "utf" | "u8" | "utf8-ucs2" | "cp65001" => e::UTF_8,
        "cp932" | "ms932" | "mskanji" | "ms-kanji" | "sjis" | "s-jis" => e::SHIFT_JIS,
        "cp949" | "ms949" | "uhc" => e::EUC_KR,
        "cp950" | "ms950" | "big5-hkscs" | "big5hkscs" | "hkscs" => e::BIG5,
        "utf-16-le" => e::UTF_16LE,
        "utf-16-be" => e::UTF_16BE,
        "cp874" | "ms874" => e::WINDOWS_874,
        "mac-roman" | "macroman" => e::MACINTOSH,
        "cp1250" | "cp1251" | "cp1253" | "cp1254" | "cp1255" | "cp1256" | "cp1257" | "cp1258" => {
            return e::Encoding::for_label(format!("windows-{}", &dashed[2..]).as_bytes());
        }
        _ => return None,
    })
}
