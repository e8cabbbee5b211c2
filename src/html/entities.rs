//! Character references: `&amp;`, `&#8220;`, `&#x201D;` and the whole HTML5 named
//! table (from markup5ever), with the HTML5 rules for legacy references without `;`.

use std::borrow::Cow;

/// Decodes HTML character references. In attribute values a legacy reference without
/// `;` followed by `=` or an alphanumeric is left alone (HTML5 §13.2.5.73).
pub fn decode_entities(s: &str, in_attribute: bool) -> Cow<'_, str> {
    if !s.contains('&') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        if let Some((ch, used)) = decode_one(after, in_attribute) {
            out.push_str(&ch);
            rest = &after[used..];
        } else {
            out.push('&');
            rest = after;
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

fn decode_one(s: &str, in_attribute: bool) -> Option<(String, usize)> {
    let bytes = s.as_bytes();
    if bytes.first() == Some(&b'#') {
        let (hex, digits_start) = match bytes.get(1) {
            Some(b'x' | b'X') => (true, 2),
            _ => (false, 1),
        };
        let digits = bytes[digits_start..]
            .iter()
            .take_while(|b| {
                if hex {
                    b.is_ascii_hexdigit()
                } else {
                    b.is_ascii_digit()
                }
            })
            .count();
        if digits == 0 {
            return None;
        }
        let text = &s[digits_start..digits_start + digits];
        let code = u32::from_str_radix(text, if hex { 16 } else { 10 }).unwrap_or(0x110000);
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
        return Some((ch.to_string(), used));
    }
    let name_len = bytes
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric())
        .count();
    if name_len == 0 {
        return None;
    }
    // Longest match first: "notin;" before "not".
    for len in (1..=name_len).rev() {
        let with_semi = bytes.get(len) == Some(&b';');
        let key_owned;
        let key: &str = if with_semi {
            key_owned = format!("{};", &s[..len]);
            &key_owned
        } else {
            &s[..len]
        };
        // The table also lists every prefix of a name, with code point 0.
        if let Some(&(a, b)) = markup5ever::data::NAMED_ENTITIES
            .get(key)
            .filter(|(a, _)| *a != 0)
        {
            if !with_semi && in_attribute {
                let next = bytes.get(len).copied();
                if next == Some(b'=') || next.is_some_and(|c| c.is_ascii_alphanumeric()) {
                    return None;
                }
            }
            let mut out = String::new();
            out.extend(char::from_u32(a));
            if b != 0 {
                out.extend(char::from_u32(b));
            }
            return Some((out, len + usize::from(with_semi)));
        }
    }
    None
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
    }
}
