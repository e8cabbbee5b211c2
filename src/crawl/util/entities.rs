//! w3lib's `replace_entities`: HTML character references in extracted text resolved as
//! w3lib 2.5 resolves them (parsel's `.re()` and the meta-refresh scan use it).

use super::html4_entities::NAME2CODEPOINT;

/// w3lib's `replace_entities(text, keep=keep, remove_illegal=True)` (`keep`: lower-case
/// names; parsel's `re()` keeps `lt` and `amp`, the meta refresh scan nothing): the
/// pattern `&([a-z0-9]+|#[0-9]+|#x[a-f0-9]+);?` (case ignored); HTML 4 names
/// (`html.entities.name2codepoint`); a NUL or surrogate reference is U+FFFD; 0x80–0x9F
/// are windows-1252; what cannot be resolved goes if it ended with `;`, stays if not.
pub(crate) fn w3lib_replace_entities(text: &str, keep: &[&str]) -> String {
    let Some(first) = memchr::memchr(b'&', text.as_bytes()) else {
        return text.to_owned();
    };
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..first]);
    let mut i = first;
    while i < b.len() {
        if b[i] != b'&' {
            let next = memchr::memchr(b'&', &b[i..]).map_or(b.len(), |p| i + p);
            out.push_str(&text[i..next]);
            i = next;
            continue;
        }
        match entity_at(b, i) {
            Some((end, semicolon, kind)) => {
                let whole = &text[i..end];
                match resolve(kind, &text[i + 1..end - usize::from(semicolon)], keep) {
                    Resolved::Keep => out.push_str(whole),
                    Resolved::Char(c) => out.push(c),
                    Resolved::Illegal if semicolon => {}
                    Resolved::Illegal => out.push_str(whole),
                }
                i = end;
            }
            None => {
                out.push('&');
                i += 1;
            }
        }
    }
    out
}

#[derive(Clone, Copy)]
enum Kind {
    Named,
    Dec,
    Hex,
}

enum Resolved {
    Keep,
    Char(char),
    Illegal,
}

/// The entity match at `i` (an `&`): its end, whether it ended with `;`, its kind.
fn entity_at(b: &[u8], i: usize) -> Option<(usize, bool, Kind)> {
    let run = |from: usize, ok: fn(u8) -> bool| {
        b[from..]
            .iter()
            .position(|&c| !ok(c))
            .map_or(b.len(), |p| from + p)
    };
    let start = i + 1;
    // Alternatives in the pattern's order: named, #dec, #xhex.
    let (end, kind) = {
        let named = run(start, |c| c.is_ascii_alphanumeric());
        if named > start {
            (named, Kind::Named)
        } else if b.get(start) == Some(&b'#') {
            let dec = run(start + 1, |c| c.is_ascii_digit());
            if dec > start + 1 {
                (dec, Kind::Dec)
            } else if matches!(b.get(start + 1), Some(b'x' | b'X')) {
                let hex = run(start + 2, |c| c.is_ascii_hexdigit());
                if hex > start + 2 {
                    (hex, Kind::Hex)
                } else {
                    return None;
                }
            } else {
                return None;
            }
        } else {
            return None;
        }
    };
    let semicolon = b.get(end) == Some(&b';');
    Some((end + usize::from(semicolon), semicolon, kind))
}

fn resolve(kind: Kind, body: &str, keep: &[&str]) -> Resolved {
    let number = match kind {
        Kind::Named => {
            let lower = body.to_ascii_lowercase();
            if keep.contains(&lower.as_str()) {
                return Resolved::Keep;
            }
            let find = |n: &str| {
                NAME2CODEPOINT
                    .binary_search_by(|(k, _)| (*k).cmp(n))
                    .ok()
                    .map(|i| NAME2CODEPOINT[i].1)
            };
            match find(body).or_else(|| find(&lower)) {
                Some(n) => u64::from(n),
                None => return Resolved::Illegal,
            }
        }
        Kind::Dec => match body[1..].parse::<u64>() {
            Ok(n) => n,
            // More digits than any code point: chr() would overflow.
            Err(_) => return Resolved::Illegal,
        },
        Kind::Hex => match u64::from_str_radix(&body[2..], 16) {
            Ok(n) => n,
            Err(_) => return Resolved::Illegal,
        },
    };
    if number == 0 || (0xD800..=0xDFFF).contains(&number) {
        return Resolved::Char('\u{FFFD}');
    }
    if (0x80..=0x9F).contains(&number) {
        // bytes((n,)).decode("cp1252"): five bytes are undefined in Python's cp1252.
        if matches!(number, 0x81 | 0x8D | 0x8F | 0x90 | 0x9D) {
            return Resolved::Illegal;
        }
        let byte = [u8::try_from(number).unwrap_or(0)];
        let (text, _, _) = encoding_rs::WINDOWS_1252.decode(&byte);
        return text
            .chars()
            .next()
            .map_or(Resolved::Illegal, Resolved::Char);
    }
    u32::try_from(number)
        .ok()
        .and_then(char::from_u32)
        .map_or(Resolved::Illegal, Resolved::Char)
}
