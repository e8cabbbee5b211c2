//! Python's `json.dumps` text, byte for byte, for the places where Scrapy users compare
//! trawl's output with Scrapy's: feed exports (`JsonItemExporter` /
//! `JsonLinesItemExporter`) and the scrapy-redis item list. Python's rules: separators
//! `", "` and `": "` (`","` between lines with `indent`), `ensure_ascii` escaping every
//! character outside `' '..='~'` as `\uXXXX` (surrogate pairs above U+FFFF), control
//! characters escaped either way, floats as `repr(float)`.

use serde_json::Value;

/// How [`dumps`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PyJson {
    /// `ensure_ascii` (Python's default: true).
    pub ensure_ascii: bool,
    /// `indent`: pretty-print with this many spaces (`None`: one line).
    pub indent: Option<usize>,
    /// `separators=(",", ":")` (only without `indent`).
    pub compact: bool,
}

impl Default for PyJson {
    fn default() -> Self {
        Self {
            ensure_ascii: true,
            indent: None,
            compact: false,
        }
    }
}

/// `json.dumps(value, ...)` with the options in `opts`.
pub fn dumps(value: &Value, opts: PyJson) -> String {
    let mut out = String::new();
    write(&mut out, value, opts, 0);
    out
}

/// `json.dumps` of a dict given as borrowed `(key, value)` entries, appended to `out`
/// (an exporter writes an item's selected fields without building a map of copies).
pub fn dumps_entries_into<'a>(
    out: &mut String,
    entries: impl Iterator<Item = (&'a str, &'a Value)>,
    opts: PyJson,
) {
    let item_sep = match (opts.indent, opts.compact) {
        (Some(_), _) | (None, true) => ",",
        (None, false) => ", ",
    };
    let key_sep = if opts.indent.is_none() && opts.compact {
        ":"
    } else {
        ": "
    };
    let start = out.len();
    out.push('{');
    let mut any = false;
    for (i, (k, v)) in entries.enumerate() {
        if i > 0 {
            out.push_str(item_sep);
        }
        if let Some(indent) = opts.indent {
            newline(out, indent, 1);
        }
        push_str(out, k, opts.ensure_ascii);
        out.push_str(key_sep);
        write(out, v, opts, 1);
        any = true;
    }
    if !any {
        out.truncate(start);
        out.push_str("{}");
        return;
    }
    if let Some(indent) = opts.indent {
        newline(out, indent, 0);
    }
    out.push('}');
}

fn newline(out: &mut String, indent: usize, level: usize) {
    out.push('\n');
    for _ in 0..indent * level {
        out.push(' ');
    }
}

fn write(out: &mut String, value: &Value, opts: PyJson, level: usize) {
    let (item_sep, key_sep) = match (opts.indent, opts.compact) {
        (Some(_), _) => (",", ": "),
        (None, true) => (",", ":"),
        (None, false) => (", ", ": "),
    };
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
        Value::Object(m) => {
            out.push('{');
            for (i, (k, v)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                if let Some(indent) = opts.indent {
                    newline(out, indent, level + 1);
                }
                push_str(out, k, opts.ensure_ascii);
                out.push_str(key_sep);
                write(out, v, opts, level + 1);
            }
            if let Some(indent) = opts.indent {
                newline(out, indent, level);
            }
            out.push('}');
        }
    }
}

/// A JSON string as Python writes it (`ensure_ascii` or not).
pub fn push_str(out: &mut String, s: &str, ensure_ascii: bool) {
    if ensure_ascii {
        super::fingerprint::push_json_str(out, s);
        return;
    }
    out.push('"');
    let bytes = s.as_bytes();
    let mut run = 0;
    // Only ASCII bytes are escaped, so every cut is at a character boundary.
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &str = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..0x20 => "",
            _ => continue,
        };
        out.push_str(&s[run..i]);
        if escape.is_empty() {
            out.push_str(&format!("\\u{b:04x}"));
        } else {
            out.push_str(escape);
        }
        run = i + 1;
    }
    out.push_str(&s[run..]);
    out.push('"');
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
