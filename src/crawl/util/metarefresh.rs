//! The meta refresh of a page as Scrapy reads it: `scrapy.utils.response.get_meta_refresh`
//! over the first 4,096 characters of `response.text`, with w3lib 2.5.0's
//! `get_meta_refresh` scan — comments and the content of the ignored tags
//! (`METAREFRESH_IGNORE_TAGS`) skipped, every other `<meta` followed by whitespace read
//! up to where its tag body ends, and the first one whose attributes declare a refresh
//! decides. A tag is read only if its raw text holds `refresh` (case ignored), then with
//! its character references replaced: an `http-equiv` holding `refresh`, and the first
//! `content` of the form `N; url=...`.
//!
//! The scan is a hand-written form of w3lib's regular expressions (`_meta_scan_source`,
//! `_TAG_BODY`, `_attr_re`, `_meta_refresh_content_re`), one pass from `<` to `<`
//! (`memchr`): no DOM is built. It runs only when some `<meta` tag body holds
//! `refresh` (`may_declare_refresh`: two `memmem` searches for `<m` / `<M`), which
//! most pages rule out without the walk from tag to tag. Joining the URL to the base
//! is the caller's (`middlewares::redirect::get_meta_refresh`). `tests/url_reference.rs` replays
//! Scrapy's answers (`tests/data/urls/gen_meta_refresh.py`).

use std::borrow::Cow;

use super::basehref::{
    ascii_space, attributes, comment_end, contains_ci, lt_letter, opens, starts_with_ci, tag_body,
    word_byte,
};

/// The interval and the URL (as written, stripped of spaces and quotes) of the first
/// meta refresh w3lib's `get_meta_refresh` finds in `text`; `ignore_tags` as the
/// setting gives them (lower-cased, sorted and deduplicated here, as w3lib does).
pub(crate) fn meta_refresh(text: &str, ignore_tags: &[String]) -> Option<(f64, String)> {
    let b = text.as_bytes();
    if !may_declare_refresh(b) {
        return None;
    }
    // w3lib's `sorted({tag.lower() for tag in ignore_tags})`, borrowed when the
    // setting is already that.
    let lower = |t: &String| {
        t.chars().all(|c| {
            let mut l = c.to_lowercase();
            l.next() == Some(c) && l.next().is_none()
        })
    };
    let normalized;
    let ignored: &[String] =
        if ignore_tags.is_sorted_by(|a, b| a < b) && ignore_tags.iter().all(lower) {
            ignore_tags
        } else {
            let mut tags: Vec<String> = ignore_tags.iter().map(|t| t.to_lowercase()).collect();
            tags.sort();
            tags.dedup();
            normalized = tags;
            &normalized
        };
    // The bytes that can follow the `<` of a form below: `!`, `m` and the first byte
    // of each ignored tag (both cases of a letter); an empty tag name starts anywhere.
    let mut second = [false; 256];
    for c in [b'!', b'm', b'M'] {
        second[usize::from(c)] = true;
    }
    for tag in ignored {
        match tag.as_bytes().first() {
            Some(&c) => {
                second[usize::from(c.to_ascii_lowercase())] = true;
                second[usize::from(c.to_ascii_uppercase())] = true;
            }
            None => second = [true; 256],
        }
    }
    let mut i = 0;
    while let Some(lt) = memchr::memchr(b'<', &b[i..]).map(|p| i + p) {
        if !b.get(lt + 1).is_some_and(|&c| second[usize::from(c)]) {
            i = lt + 1;
            continue;
        }
        if let Some(end) = comment_end(b, lt) {
            i = end;
            continue;
        }
        // <(?P<t>tags)\b{_TAG_BODY}>[^<]*(?:<(?!/(?P=t)[\s/>])[^<]*)*(?:</(?P=t){_TAG_BODY}>?|$)
        if let Some(end) = ignored
            .iter()
            .find_map(|t| ignored_region_end(b, lt, t.as_bytes()))
        {
            i = end;
            continue;
        }
        // <meta\s(?P<attrs>{_TAG_BODY})
        if opens(b, lt, b"<meta") {
            let start = lt + 6;
            let end = tag_body(b, start);
            let attrs = &text[start..end];
            if contains_ci(attrs.as_bytes(), b"refresh")
                && let Some(found) = refresh(attrs)
            {
                return Some(found);
            }
            i = end;
            continue;
        }
        i = lt + 1;
    }
    None
}

/// Whether the scan below can find a refresh in `b`: only if some `<meta` followed by
/// whitespace has `refresh` in its tag body (the scan reads a subset of those tags:
/// the ones outside comments and ignored tags). Most pages have one `<meta charset>`
/// at most, ruled out with two vectorised searches and one tag body; past 16 such
/// tags the scan decides, so this stays linear in the head.
fn may_declare_refresh(b: &[u8]) -> bool {
    let mut metas = 0;
    lt_letter(b, [b"<m", b"<M"]).any(|lt| {
        if !opens(b, lt, b"<meta") {
            return false;
        }
        metas += 1;
        metas > 16 || contains_ci(&b[lt + 6..tag_body(b, lt + 6)], b"refresh")
    })
}

/// Where the ignored tag `tag` (lower-case) that starts at `lt` ends with its content,
/// if one starts there.
fn ignored_region_end(b: &[u8], lt: usize, tag: &[u8]) -> Option<usize> {
    let name_end = lt + 1 + tag.len();
    if !starts_with_ci(&b[lt + 1..], tag) {
        return None;
    }
    // `\b`: a word character on one side of the end of the name and not on the other.
    let last = tag.last().unwrap_or(&b'<');
    if word_byte(Some(last)) == word_byte(b.get(name_end)) {
        return None;
    }
    let body_end = tag_body(b, name_end);
    if b.get(body_end) != Some(&b'>') {
        return None;
    }
    // [^<]*(?:<(?!/(?P=t)[\s/>])[^<]*)*: up to `</tag` followed by \s, `/` or `>`.
    let mut at = body_end + 1;
    while let Some(p) = memchr::memchr(b'<', &b[at..]) {
        let close = at + p;
        let after = close + 2 + tag.len();
        if b.get(close + 1) == Some(&b'/')
            && starts_with_ci(&b[close + 2..], tag)
            && b.get(after)
                .is_some_and(|&c| ascii_space(c) || c == b'/' || c == b'>')
        {
            // </(?P=t){_TAG_BODY}>?
            let end = tag_body(b, after);
            return Some(end + usize::from(b.get(end) == Some(&b'>')));
        }
        at = close + 1;
    }
    Some(b.len())
}

/// w3lib's `_refresh`: the interval and the URL an `http-equiv` holding `refresh` and
/// the first `content` of the refresh form declare in a `<meta>` tag's attribute text.
fn refresh(attrs: &str) -> Option<(f64, String)> {
    let decoded: Cow<'_, str> = if attrs.contains('&') {
        Cow::Owned(super::entities::w3lib_replace_entities(attrs, &[]))
    } else {
        Cow::Borrowed(attrs)
    };
    let mut pragma = false;
    let mut declared = None;
    for (name, value) in attributes(&decoded) {
        // Valueless attributes are skipped (`iter_tag_attributes`).
        let Some(value) = value else { continue };
        if name.eq_ignore_ascii_case("http-equiv") {
            pragma |= contains_ci(value.as_bytes(), b"refresh");
        } else if name.eq_ignore_ascii_case("content") && declared.is_none() {
            declared = refresh_content(value);
        }
    }
    let (interval, url) = declared.filter(|_| pragma)?;
    Some((interval, url.trim_matches([' ', '"', '\'']).to_owned()))
}

/// `\s*(?P<int>([0-9]*\.)?[0-9]+)\s*;\s*url=\s*(?P<url>.*)` (re.ASCII, case ignored,
/// anchored at the start): the interval and the rest of the value after `url=`.
fn refresh_content(value: &str) -> Option<(f64, &str)> {
    let b = value.as_bytes();
    let skip = |mut i: usize, ok: fn(u8) -> bool| {
        while i < b.len() && ok(b[i]) {
            i += 1;
        }
        i
    };
    let start = skip(0, ascii_space);
    let whole = skip(start, |c| c.is_ascii_digit());
    // `([0-9]*\.)?[0-9]+`: a fraction needs digits after its dot, else the dot ends
    // the number and the `;` that must follow is missing.
    let end = if b.get(whole) == Some(&b'.') {
        let fraction = skip(whole + 1, |c| c.is_ascii_digit());
        if fraction == whole + 1 {
            return None;
        }
        fraction
    } else if whole > start {
        whole
    } else {
        return None;
    };
    let interval: f64 = value[start..end].parse().ok()?;
    let i = skip(end, ascii_space);
    if b.get(i) != Some(&b';') {
        return None;
    }
    let i = skip(i + 1, ascii_space);
    if !starts_with_ci(&b[i..], b"url=") {
        return None;
    }
    Some((interval, &value[skip(i + 4, ascii_space)..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_content_reads_what_the_pattern_matches() {
        assert_eq!(refresh_content(" 5 ; URL= /a b"), Some((5.0, "/a b")));
        assert_eq!(refresh_content(".5;url=x"), Some((0.5, "x")));
        assert_eq!(refresh_content("007.25;url="), Some((7.25, "")));
        assert_eq!(refresh_content("1.;url=x"), None);
        assert_eq!(refresh_content("1.2.3;url=x"), None);
        assert_eq!(refresh_content("5"), None);
        assert_eq!(refresh_content("5, url=x"), None);
        assert_eq!(refresh_content("5; x"), None);
        assert_eq!(refresh_content("-1; url=x"), None);
    }

    #[test]
    fn ignored_tags_hide_their_content_up_to_their_end_tag() {
        let tags = ["noscript".to_owned()];
        let page = r#"<noscript x='>'><meta http-equiv=refresh content="0;url=/a"></NOSCRIPT ><meta http-equiv=refresh content="0;url=/b">"#;
        assert_eq!(meta_refresh(page, &tags), Some((0.0, "/b".to_owned())));
        // `\b`: `<noscripts>` is not a noscript tag.
        let page = r#"<noscripts><meta http-equiv=refresh content="0;url=/c">"#;
        assert_eq!(meta_refresh(page, &tags), Some((0.0, "/c".to_owned())));
        // Unterminated: the rest of the text is its content.
        let page = r#"<noscript><meta http-equiv=refresh content="0;url=/d">"#;
        assert_eq!(meta_refresh(page, &tags), None);
        // Tags as a setting may give them: case and order do not matter.
        let tags = ["SCRIPT".to_owned(), "noscript".to_owned()];
        let page = r#"<script><meta http-equiv=refresh content="0;url=/e"></script>"#;
        assert_eq!(meta_refresh(page, &tags), None);
    }

    #[test]
    fn metas_inside_a_quoted_value_are_not_tags() {
        // The scan goes on after the tag that holds them (w3lib's regex does).
        let fake = "<meta http-equiv=refresh content='0; url=/fake'>";
        let page = format!("<meta name=\"{}\">", fake.repeat(10_000));
        assert_eq!(meta_refresh(&page, &[]), None);
        let page = format!("<meta name=\"{fake}\" http-equiv=refresh content=\"1;url=/x\">");
        assert_eq!(meta_refresh(&page, &[]), Some((1.0, "/x".to_owned())));
    }

    #[test]
    fn the_prefilter_rules_out_only_what_the_scan_would() {
        let refresh = r#"<MeTa HTTP-EQUIV=Refresh content="0;url=/u">"#;
        assert_eq!(meta_refresh(refresh, &[]), Some((0.0, "/u".to_owned())));
        assert!(!may_declare_refresh(b"<meta charset=utf-8><p>refresh</p>"));
        // Past 16 metas the scan decides: found after many, not found in a comment.
        let many = "<meta charset=x>".repeat(40);
        let page = format!("{many}{refresh}");
        assert_eq!(meta_refresh(&page, &[]), Some((0.0, "/u".to_owned())));
        let page = format!("{many}<!-- {refresh} -->");
        assert!(may_declare_refresh(page.as_bytes()));
        assert_eq!(meta_refresh(&page, &[]), None);
        let page = format!("{}<!-- {refresh} -->", "<meta charset=x>".repeat(3));
        assert!(may_declare_refresh(page.as_bytes()));
        assert_eq!(meta_refresh(&page, &[]), None);
    }
}
