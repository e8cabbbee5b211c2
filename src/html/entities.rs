//! Character references: `&amp;`, `&#8220;`, `&#x201D;` and the whole HTML5 named
//! table (from markup5ever), with the HTML5 rules for legacy references without `;`.
//!
//! # Linear time
//!
//! A named reference is matched by walking its name forward, one table lookup per
//! character, and the walk stops as soon as the text read is no longer a prefix of any
//! name (the table lists every prefix) or after [`LONGEST_NAME`] characters — so a `&`
//! followed by a million letters costs at most 33 lookups, not a million. A numeric
//! reference is one scan of its digits.

use std::borrow::Cow;

/// The longest named reference, `;` included (`&CounterClockwiseContourIntegral;`).
pub const LONGEST_NAME: usize = 32;

/// Decodes HTML character references. In attribute values a legacy reference without
/// `;` followed by `=` or an alphanumeric is left alone (HTML5 §13.2.5.73).
pub fn decode_entities(s: &str, in_attribute: bool) -> Cow<'_, str> {
    if memchr::memchr(b'&', s.as_bytes()).is_none() {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    decode_into(s, in_attribute, &mut out);
    Cow::Owned(out)
}

/// Appends `s` to `out` with references decoded; returns the work done (table
/// lookups and references tried).
pub(crate) fn decode_into(s: &str, in_attribute: bool, out: &mut String) -> u64 {
    let mut rest = s;
    let mut steps = 0;
    while let Some(amp) = memchr::memchr(b'&', rest.as_bytes()) {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        steps += 1;
        match decode_one(after, in_attribute, &mut steps) {
            Some((a, b, used)) => {
                out.push(a);
                if let Some(b) = b {
                    out.push(b);
                }
                rest = &after[used..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    steps
}

/// The reference at the start of `s` (just after `&`): its one or two characters and
/// the bytes it used.
fn decode_one(s: &str, in_attribute: bool, steps: &mut u64) -> Option<(char, Option<char>, usize)> {
    let bytes = s.as_bytes();
    if bytes.first() == Some(&b'#') {
        return decode_numeric(bytes);
    }
    // Walk forward while the text is a prefix of some name; remember the longest
    // complete name.
    let mut best: Option<(u32, u32, usize)> = None;
    let mut len = 0;
    while len < bytes.len() && len < LONGEST_NAME {
        let b = bytes[len];
        if !(b.is_ascii_alphanumeric() || (b == b';' && len > 0)) {
            break;
        }
        len += 1;
        *steps += 1;
        // `s[..len]` is ASCII, so the slice is on a char boundary.
        match markup5ever::data::NAMED_ENTITIES.get(&s[..len]) {
            None => break,
            Some(&(0, _)) => {}
            Some(&(a, b2)) => best = Some((a, b2, len)),
        }
        if b == b';' {
            break;
        }
    }
    let (a, b, used) = best?;
    if in_attribute && bytes[used - 1] != b';' {
        let next = bytes.get(used).copied();
        if next == Some(b'=') || next.is_some_and(|c| c.is_ascii_alphanumeric()) {
            return None;
        }
    }
    let a = char::from_u32(a)?;
    let b = if b == 0 { None } else { char::from_u32(b) };
    Some((a, b, used))
}

fn decode_numeric(bytes: &[u8]) -> Option<(char, Option<char>, usize)> {
    let (radix, digits_start) = match bytes.get(1) {
        Some(b'x' | b'X') => (16, 2),
        _ => (10, 1),
    };
    let mut code: u32 = 0;
    let mut digits = 0;
    for &b in &bytes[digits_start..] {
        let Some(d) = (b as char).to_digit(radix) else {
            break;
        };
        // Saturates above the Unicode range (one pass, no big-number parsing).
        code = code.saturating_mul(radix).saturating_add(d).min(0x11_0000);
        digits += 1;
    }
    if digits == 0 {
        return None;
    }
    let mut used = digits_start + digits;
    if bytes.get(used) == Some(&b';') {
        used += 1;
    }
    let ch = match code {
        0 => '\u{fffd}',
        0x80..=0x9f => markup5ever::data::C1_REPLACEMENTS[(code - 0x80) as usize]
            .unwrap_or_else(|| char::from_u32(code).unwrap_or('\u{fffd}')),
        _ => char::from_u32(code).unwrap_or('\u{fffd}'),
    };
    Some((ch, None, used))
}

#[cfg(test)]
mod tests {
    use super::decode_entities;

    #[test]
    fn entities() {
        assert_eq!(
            decode_entities(
                "&#8220;hi&#x201D; &amp; &lt;&notin; &notit; &unknown;",
                false
            ),
            "\u{201c}hi\u{201d} & <\u{2209} \u{ac}it; &unknown;"
        );
        assert_eq!(
            decode_entities("a&copy=1", true),
            "a&copy=1",
            "legacy ref before = in attribute"
        );
        assert_eq!(
            decode_entities("&#128;", false),
            "\u{20ac}",
            "C1 replacement"
        );
        assert_eq!(decode_entities("no refs", false), "no refs");
        assert_eq!(
            decode_entities("&CounterClockwiseContourIntegral;x", false),
            "\u{2233}x"
        );
        assert_eq!(
            decode_entities("&#x110000;&#99999999999999999999;&#xD800;", false),
            "\u{fffd}\u{fffd}\u{fffd}"
        );
        assert_eq!(decode_entities("&NotEqualTilde;", false), "\u{2242}\u{338}");
    }

    #[test]
    fn a_long_run_of_letters_is_one_bounded_walk() {
        let long = format!("&{}", "a".repeat(100_000));
        assert_eq!(decode_entities(&long, false), long);
        let mut out = String::new();
        let steps = super::decode_into(&long, false, &mut out);
        assert!(steps <= 1 + super::LONGEST_NAME as u64, "{steps} lookups");
        let many = "&aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".repeat(10_000);
        let steps = super::decode_into(&many, false, &mut out);
        assert!(
            steps <= 10_000 * (1 + super::LONGEST_NAME as u64),
            "{steps} lookups"
        );
        let long = format!("&amp{}", "b".repeat(100_000));
        assert_eq!(decode_entities(&long, false)[..3], *"&bb");
    }
}
