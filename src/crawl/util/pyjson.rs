//! Python's `json.dumps` text, byte for byte, for the places where Scrapy users compare
//! trawl's output with Scrapy's: feed exports (`JsonItemExporter` /
//! `JsonLinesItemExporter`) and the scrapy-redis item list. Python's rules: separators
//! `", "` and `": "` (`","` between lines with `indent`), `ensure_ascii` escaping every
//! character outside `' '..='~'` as `\uXXXX` (surrogate pairs above U+FFFF), control
//! characters escaped either way, floats as `repr(float)`.

use serde_json::Value;

/// How [`dumps`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PyJson<'a> {
    /// `ensure_ascii` (Python's default: true).
    pub ensure_ascii: bool,
    /// `indent`: pretty-print with this many spaces (`None`: one line).
    pub indent: Option<usize>,
    /// `separators=(",", ":")` (only without `indent`).
    pub compact: bool,
    /// `separators=(item_separator, key_separator)` as given (they win over `compact`
    /// and over the defaults for `indent`).
    pub separators: Option<(&'a str, &'a str)>,
    /// `sort_keys`: every object's keys in code point order.
    pub sort_keys: bool,
}

impl Default for PyJson<'_> {
    fn default() -> Self {
        Self {
            ensure_ascii: true,
            indent: None,
            compact: false,
            separators: None,
            sort_keys: false,
        }
    }
}

impl<'a> PyJson<'a> {
    /// `(item_separator, key_separator)` as Python's `JSONEncoder` picks them.
    fn separators(&self) -> (&'a str, &'a str) {
        match (self.separators, self.indent, self.compact) {
            (Some(given), _, _) => given,
            (None, Some(_), _) => (",", ": "),
            (None, None, true) => (",", ":"),
            (None, None, false) => (", ", ": "),
        }
    }
}

/// `json.dumps(value, ...)` with the options in `opts`.
pub fn dumps(value: &Value, opts: PyJson<'_>) -> String {
    let mut out = String::new();
    write(&mut out, value, opts, 0);
    out
}

/// `json.dumps` of a dict given as borrowed `(key, value)` entries, appended to `out`
/// (an exporter writes an item's selected fields without building a map of copies).
pub fn dumps_entries_into<'a>(
    out: &mut String,
    entries: impl Iterator<Item = (&'a str, &'a Value)>,
    opts: PyJson<'_>,
) {
    if opts.sort_keys {
        let mut sorted: Vec<(&str, &Value)> = entries.collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        return write_entries(out, sorted.into_iter(), opts);
    }
    write_entries(out, entries, opts);
}

fn write_entries<'a>(
    out: &mut String,
    entries: impl Iterator<Item = (&'a str, &'a Value)>,
    opts: PyJson<'_>,
) {
    write_object(out, entries, opts, 0);
}

fn newline(out: &mut String, indent: usize, level: usize) {
    out.push('\n');
    for _ in 0..indent * level {
        out.push(' ');
    }
}

fn write(out: &mut String, value: &Value, opts: PyJson<'_>, level: usize) {
    let (item_sep, _) = opts.separators();
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (_, Some(u), _) => out.push_str(&u.to_string()),
            (_, _, Some(f)) => out.push_str(&python_float_repr(f)),
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => push_str(out, s, opts.ensure_ascii),
        Value::Array(a) if a.is_empty() => out.push_str("[]"),
        Value::Object(m) if m.is_empty() => out.push_str("{}"),
        Value::Array(a) => {
            out.push('[');
            for (i, v) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                if let Some(indent) = opts.indent {
                    newline(out, indent, level + 1);
                }
                write(out, v, opts, level + 1);
            }
            if let Some(indent) = opts.indent {
                newline(out, indent, level);
            }
            out.push(']');
        }
        Value::Object(m) if opts.sort_keys => {
            let mut entries: Vec<(&str, &Value)> = m.iter().map(|(k, v)| (k.as_str(), v)).collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            write_object(out, entries.into_iter(), opts, level);
        }
        Value::Object(m) => write_object(out, m.iter().map(|(k, v)| (k.as_str(), v)), opts, level),
    }
}

/// An object's entries at `level` (`{}` when there are none).
fn write_object<'v>(
    out: &mut String,
    entries: impl Iterator<Item = (&'v str, &'v Value)>,
    opts: PyJson<'_>,
    level: usize,
) {
    let (item_sep, key_sep) = opts.separators();
    let start = out.len();
    out.push('{');
    let mut any = false;
    for (k, v) in entries {
        if any {
            out.push_str(item_sep);
        }
        any = true;
        if let Some(indent) = opts.indent {
            newline(out, indent, level + 1);
        }
        push_str(out, k, opts.ensure_ascii);
        out.push_str(key_sep);
        write(out, v, opts, level + 1);
    }
    if !any {
        out.truncate(start);
        out.push_str("{}");
        return;
    }
    if let Some(indent) = opts.indent {
        newline(out, indent, level);
    }
    out.push('}');
}

/// A JSON string as Python writes it (`ensure_ascii` or not).
pub fn push_str(out: &mut String, s: &str, ensure_ascii: bool) {
    if ensure_ascii {
        put_ascii_str(out, s);
        return;
    }
    out.push('"');
    let bytes = s.as_bytes();
    let mut run = 0;
    let mut i = 0;
    // Only ASCII bytes are escaped, so every cut is at a character boundary.
    while let Some(found) = next_escape(bytes, i, false) {
        let b = bytes[found];
        out.push_str(&s[run..found]);
        match json_short_escape(b) {
            Some(e) => out.push_str(e),
            None => out.push_str(&format!("\\u{b:04x}")),
        }
        run = found + 1;
        i = found + 1;
    }
    out.push_str(&s[run..]);
    out.push('"');
}

/// JSON's two-character escape of `b` (`\\"`, `\\\\`, `\\n`, `\\r`, `\\t`, `\\b`, `\\f`), as
/// Python's `json` writes them; `None` for every other byte.
fn json_short_escape(b: u8) -> Option<&'static str> {
    match b {
        b'"' => Some("\\\""),
        b'\\' => Some("\\\\"),
        b'\n' => Some("\\n"),
        b'\r' => Some("\\r"),
        b'\t' => Some("\\t"),
        0x08 => Some("\\b"),
        0x0c => Some("\\f"),
        _ => None,
    }
}

/// Python's `ensure_ascii` escape of one character that is not printable ASCII, or
/// is `"` or `\\`, into `buf`; the escape's length.
fn escape_ascii_json(c: char, buf: &mut [u8; 12]) -> usize {
    if let Some(e) = u8::try_from(c).ok().and_then(json_short_escape) {
        buf[..2].copy_from_slice(e.as_bytes());
        return 2;
    }
    let mut units = [0u16; 2];
    let mut n = 0;
    for unit in c.encode_utf16(&mut units) {
        buf[n] = b'\\';
        buf[n + 1] = b'u';
        for (k, shift) in [12, 8, 4, 0].into_iter().enumerate() {
            buf[n + 2 + k] = crate::util::HEX_LOWER[usize::from((*unit >> shift) & 15)];
        }
        n += 6;
    }
    n
}

/// Where ASCII JSON text is written: a `String`, or a SHA-1 hasher (a request
/// fingerprint's document is hashed as it is written, never held: a body's hex is
/// twice its size).
pub trait AsciiSink {
    /// Appends ASCII text.
    fn put(&mut self, ascii: &str);
}

impl AsciiSink for String {
    fn put(&mut self, ascii: &str) {
        self.push_str(ascii);
    }
}

impl AsciiSink for sha1::Sha1 {
    fn put(&mut self, ascii: &str) {
        sha1::Digest::update(self, ascii.as_bytes());
    }
}

/// A JSON string as Python's `json.dumps` writes it (`ensure_ascii=True`) into `out`:
/// runs that need no escape (found eight bytes at a time) go through as they are,
/// without a copy.
pub fn put_ascii_str(out: &mut impl AsciiSink, s: &str) {
    out.put("\"");
    let bytes = s.as_bytes();
    let mut run = 0;
    // Every byte before an escaped one is printable ASCII: `found` starts a character.
    while let Some(found) = next_escape(bytes, run, true) {
        let Some(c) = s.get(found..).and_then(|t| t.chars().next()) else {
            break;
        };
        out.put(&s[run..found]);
        let mut buf = [0u8; 12];
        let n = escape_ascii_json(c, &mut buf);
        // The escape is ASCII.
        out.put(std::str::from_utf8(&buf[..n]).unwrap_or_default());
        run = found + c.len_utf8();
    }
    out.put(&s[run..]);
    out.put("\"");
}

/// The index of the first byte at or after `from` that JSON escapes (`"`, `\\`, a
/// control below 0x20; with `ascii`, Python's `ensure_ascii`, also DEL and every byte
/// of a non-ASCII character): eight bytes at a time (SWAR), then byte by byte.
pub(crate) fn next_escape(bytes: &[u8], from: usize, ascii: bool) -> Option<usize> {
    use crate::util::swar;
    let mut i = from;
    while let Some(x) = swar::word_at(bytes, i) {
        // A control below 0x20 (a byte with its top bit set is never taken for one),
        // a quote, a backslash.
        let mut hit = swar::below(x, 0x20) | swar::eq(x, b'"') | swar::eq(x, b'\\');
        if ascii {
            hit |= (x & swar::HI) | swar::eq(x, 0x7f);
        }
        if hit != 0 {
            break;
        }
        i += 8;
    }
    bytes
        .get(i..)?
        .iter()
        .position(|&b| escaped(b, ascii))
        .map(|p| i + p)
}

/// Whether JSON (with `ascii`, Python's `ensure_ascii`) escapes byte `b`.
fn escaped(b: u8, ascii: bool) -> bool {
    b < 0x20 || b == b'"' || b == b'\\' || (ascii && b >= 0x7f)
}

/// Python's `repr()` of a JSON value as Python holds it: `str` in single quotes
/// (double quotes when it holds a `'` and no `"`), `None`, `True` / `False`, `int`, `float`
/// (`repr(float)`), `list` as `[a, b]`, `dict` as `{'k': v}` in insertion order.
pub fn python_repr(value: &Value) -> String {
    let mut out = String::new();
    push_repr(&mut out, value);
    out
}

fn push_repr(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => push_number(out, n),
        Value::String(s) => push_str_repr(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                push_repr(out, v);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                push_str_repr(out, k);
                out.push_str(": ");
                push_repr(out, v);
            }
            out.push('}');
        }
    }
}

/// Python's `str()` of a JSON number: an integer's digits, or `repr(float)`.
pub fn python_number_str(n: &serde_json::Number) -> String {
    let mut out = String::new();
    push_number(&mut out, n);
    out
}

fn push_number(out: &mut String, n: &serde_json::Number) {
    if n.is_f64() {
        out.push_str(&python_float_repr(n.as_f64().unwrap_or_default()));
    } else {
        out.push_str(&n.to_string());
    }
}

/// Python's `repr(str)` (CPython's `unicode_repr`): backslash, the quote, `\t`, `\n`,
/// `\r` escaped; other characters that are not printable as `\xhh`, `\uhhhh` or
/// `\Uhhhhhhhh`.
fn push_str_repr(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if is_printable(c) => out.push(c),
            c => {
                let n = u32::from(c);
                let (prefix, width) = match n {
                    0..=0xff => ("\\x", 2),
                    0x100..=0xffff => ("\\u", 4),
                    _ => ("\\U", 8),
                };
                out.push_str(prefix);
                out.push_str(&format!("{n:0width$x}"));
            }
        }
    }
    out.push(quote);
}

/// Python's `str.isprintable()` for one character: not a control (Cc), format (Cf),
/// private-use (Co) character, nor a separator (Zs, Zl, Zp) other than the space.
/// Unassigned code points (Cn), which Python also escapes, are kept (DESIGN.md §15).
fn is_printable(c: char) -> bool {
    let n = u32::from(c);
    if n < 0x7f {
        return n >= 0x20;
    }
    !matches!(n,
        0x7f..=0xa0 | 0xad | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x890..=0x891
        | 0x8e2 | 0x1680 | 0x180e | 0x2000..=0x200f | 0x2028..=0x202f | 0x205f..=0x2064
        | 0x2066..=0x206f | 0x3000 | 0xe000..=0xf8ff | 0xfeff | 0xfff9..=0xfffb
        | 0x110bd | 0x110cd | 0x13430..=0x1343f | 0x1bca0..=0x1bca3 | 0x1d173..=0x1d17a
        | 0xe0001 | 0xe0020..=0xe007f | 0xf0000..=0xffffd | 0x100000..=0x10fffd)
}

/// Python's `repr(float)`: the shortest round-trip digits, fixed notation for
/// decimal exponents in [-4, 16), scientific (`1e+16`, `1.5e-05`) otherwise.
pub fn python_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    crate::util::python_float_repr(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CPython's `repr()` of values recorded in `tests/data/feeds/python_repr.json`
    /// (`record_repr.py`): quotes, escapes, the characters `str.isprintable()` rejects
    /// (controls, format characters, separators, private use) and numbers.
    #[test]
    fn python_repr_matches_cpython() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/feeds/python_repr.json"
        );
        let text = std::fs::read_to_string(path).expect("python_repr.json");
        let data: Value = serde_json::from_str(&text).expect("json");
        let cases = data["cases"].as_array().expect("cases");
        assert_eq!(cases.len(), data["count"].as_u64().expect("count") as usize);
        assert!(cases.len() > 70);
        let bad: Vec<String> = cases
            .iter()
            .filter(|c| python_repr(&c["value"]) != c["repr"].as_str().expect("repr"))
            .map(|c| {
                format!(
                    "{}: {} != {}",
                    c["value"],
                    python_repr(&c["value"]),
                    c["repr"]
                )
            })
            .collect();
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    #[test]
    fn the_word_scan_finds_what_the_byte_scan_finds() {
        // Every escapable byte and its neighbours, at every offset of a 24-byte text,
        // among ASCII and UTF-8 bytes with the top bit set.
        let fillers: [&[u8]; 3] = [
            b"abcdefghijklmnopqrstuvwx",
            "é—ツxyzab".as_bytes(),
            b"  ~~!!##",
        ];
        for filler in fillers {
            for special in [
                0u8, 0x01, 0x08, 0x1f, b' ', b'!', b'"', b'#', b'[', b'\\', b']', 0x7f,
            ] {
                for at in 0..filler.len() {
                    let mut text = filler.to_vec();
                    text[at] = special;
                    for (from, ascii) in [0, 1, 7, 8, 9]
                        .into_iter()
                        .flat_map(|f| [(f, false), (f, true)])
                    {
                        let naive = text
                            .iter()
                            .enumerate()
                            .skip(from)
                            .find(|&(_, &b)| {
                                b < 0x20
                                    || b == b'"'
                                    || b == b'\\'
                                    || (ascii && !(b' '..=b'~').contains(&b))
                            })
                            .map(|(i, _)| i);
                        assert_eq!(
                            super::next_escape(&text, from, ascii),
                            naive,
                            "{text:?} {from} {ascii}"
                        );
                    }
                }
            }
        }
    }
}
