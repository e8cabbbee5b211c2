//! The `<base href>` of a page as Scrapy reads it: `scrapy.utils.response.get_base_url`
//! over the first 4,096 characters of `response.text`, with w3lib 2.5.0's
//! `get_base_url` scan — comments and `<script>` / `<noscript>` content skipped, the
//! first `<base>` tag holding an `href` attribute decides, and the first `href` of that
//! tag is the one read (empty or valueless: no base). The page's URL and the base's
//! joining are the caller's (`Response::scrapy_base_url`).
//!
//! The scan is a hand-written form of w3lib's regular expressions (`_base_scan_re`,
//! `_TAG_BODY`, `_attr_re`); it reads at most the 4,096 characters Scrapy cuts, and
//! walks from tag to tag only when a `<base` followed by whitespace is there at all
//! (two `memmem` searches for `<b` / `<B`). The helpers are shared with the meta
//! refresh scan (`crawl::metarefresh`).

/// The href value w3lib's `get_base_url` would read in `text`, untrimmed, or `None`
/// when no `<base>` tag has an `href` attribute. `Some("")` is a valueless or empty
/// `href`, which leaves the page URL as the base.
pub(crate) fn base_href(text: &str) -> Option<&str> {
    let b = text.as_bytes();
    // Only a `<base` followed by whitespace gives an answer: most pages have none,
    // and ruling it out is two vectorised searches instead of a walk from tag to tag.
    if !lt_letter(b, [b"<b", b"<B"]).any(|lt| opens(b, lt, b"<base")) {
        return None;
    }
    let mut i = 0;
    while let Some(lt) = memchr::memchr(b'<', &b[i..]).map(|p| i + p) {
        // Every form below starts `<!`, `<s`, `<n` or `<b` (any case): the other
        // tags of a page are passed over on their second byte.
        if !matches!(
            b.get(lt + 1).map(|c| c | 0x20),
            Some(b'!' | b's' | b'n' | b'b')
        ) {
            i = lt + 1;
            continue;
        }
        if let Some(end) = comment_end(b, lt) {
            i = end;
            continue;
        }
        let rest = &b[lt..];
        // <(script|noscript)\b{_TAG_BODY}>[^<]*(?:<(?!/\1>)[^<]*)*(?:</\1>|$)
        if let Some(name) = [&b"script"[..], b"noscript"]
            .into_iter()
            .find(|n| starts_with_ci(&rest[1..], n) && !word_byte(rest.get(1 + n.len())))
        {
            let body_end = tag_body(b, lt + 1 + name.len());
            if b.get(body_end) == Some(&b'>') {
                i = find_close(b, body_end + 1, name);
                continue;
            }
        }
        // <base\s(?P<attrs>{_TAG_BODY})
        if opens(b, lt, b"<base") {
            let start = lt + 6;
            let end = tag_body(b, start);
            if let Some(value) = first_href(&text[start..end]) {
                return Some(value);
            }
            i = end.max(lt + 1);
            continue;
        }
        i = lt + 1;
    }
    None
}

/// Where `pair` (`<` and a letter) occurs in `b` in either case of the letter: the
/// candidates for a tag whose name starts with it, found by two `memmem` searches (a
/// vectorised match of the two bytes at once), not in order.
pub(super) fn lt_letter<'a>(
    b: &'a [u8],
    pair: [&'static [u8; 2]; 2],
) -> impl Iterator<Item = usize> + 'a {
    memchr::memmem::find_iter(b, pair[0]).chain(memchr::memmem::find_iter(b, pair[1]))
}

/// Whether `b` has, at `lt`, `open` (`<` and a tag name, matched with ASCII case
/// ignored) followed by whitespace: w3lib's `<meta\s` / `<base\s`.
pub(super) fn opens(b: &[u8], lt: usize, open: &[u8]) -> bool {
    starts_with_ci(&b[lt..], open) && b.get(lt + open.len()).is_some_and(|&c| ascii_space(c))
}

/// Where the comment that starts at `lt` ends, if one does:
/// `<!--[^-]*(?:-(?!->)[^-]*)*(?:-->|$)` (an unclosed one runs to the end).
pub(super) fn comment_end(b: &[u8], lt: usize) -> Option<usize> {
    b[lt..]
        .starts_with(b"<!--")
        .then(|| find(b, lt + 4, b"-->").map_or(b.len(), |e| e + 3))
}

/// w3lib's `_TAG_BODY` from `i`: `[^<>=]*(?:(?:=\s*"[^"]*"|=\s*'[^']*'|=(?!\s*["']))[^<>=]*)*`
/// (re.ASCII); returns where it stops.
pub(super) fn tag_body(b: &[u8], mut i: usize) -> usize {
    loop {
        i = memchr::memchr3(b'<', b'>', b'=', &b[i..]).map_or(b.len(), |p| i + p);
        if b.get(i) != Some(&b'=') {
            return i;
        }
        let mut j = i + 1;
        while j < b.len() && ascii_space(b[j]) {
            j += 1;
        }
        match b.get(j) {
            Some(&q @ (b'"' | b'\'')) => match memchr::memchr(q, &b[j + 1..]) {
                Some(k) => i = j + 1 + k + 1,
                // An open quote: the group does not match, the body ends at "=".
                None => return i,
            },
            _ => i += 1,
        }
    }
}

/// The value of the first `href` in a tag's attribute text: `Some("")` for a
/// valueless one.
fn first_href(attrs: &str) -> Option<&str> {
    attributes(attrs)
        .find(|(name, _)| name.eq_ignore_ascii_case("href"))
        .map(|(_, value)| value.unwrap_or(""))
}

/// The attributes of a tag's attribute text as w3lib's `_attr_re` (whose `\s` is
/// Unicode's) finds them one after the other: name and value (`None`: valueless;
/// quotes removed).
pub(super) fn attributes(attrs: &str) -> impl Iterator<Item = (&str, Option<&str>)> {
    let separator = |c: char| py_space(c) || matches!(c, '<' | '>' | '/' | '=');
    let mut i = 0;
    std::iter::from_fn(move || {
        loop {
            let c = attrs[i..].chars().next()?;
            if !separator(c) {
                break;
            }
            i += c.len_utf8();
        }
        let name_end = attrs[i..].find(separator).map_or(attrs.len(), |e| i + e);
        let name = &attrs[i..name_end];
        let mut end = name_end;
        let mut value = None;
        let j = skip_space(attrs, name_end);
        if attrs[j..].starts_with('=') {
            let k = skip_space(attrs, j + 1);
            let quoted = attrs[k..]
                .chars()
                .next()
                .filter(|q| matches!(q, '"' | '\''))
                .and_then(|q| attrs[k + 1..].find(q).map(|e| (k + 1, k + 1 + e)));
            let (v, e) = match quoted {
                Some((from, to)) => (&attrs[from..to], to + 1),
                None => {
                    let e = attrs[k..]
                        .find(|c: char| py_space(c) || matches!(c, '"' | '\'' | '>'))
                        .map_or(attrs.len(), |e| k + e);
                    (&attrs[k..e], e)
                }
            };
            value = Some(v);
            end = e;
        }
        i = end;
        Some((name, value))
    })
}

fn skip_space(s: &str, from: usize) -> usize {
    s[from..]
        .char_indices()
        .find(|&(_, c)| !py_space(c))
        .map_or(s.len(), |(j, _)| from + j)
}

/// Python's `\s` in a Unicode str pattern (`str.isspace`): White_Space plus the
/// separators U+001C..U+001F.
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `\s` under re.ASCII.
pub(super) fn ascii_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// A `\w` byte under re.ASCII (for `\b` after the tag name); `None`, the end of the
/// text, is not one.
pub(super) fn word_byte(c: Option<&u8>) -> bool {
    c.is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

pub(super) fn starts_with_ci(hay: &[u8], needle: &[u8]) -> bool {
    hay.len() >= needle.len() && hay[..needle.len()].eq_ignore_ascii_case(needle)
}

/// Where `needle` first occurs in `hay` at or after `from`.
pub(super) fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay.get(from..)?, needle).map(|p| from + p)
}

/// Whether `hay` holds `needle` (lower-case ASCII), ASCII case ignored: Python's
/// `needle in hay.lower()` for a needle whose letters no other character lower-cases
/// to. Linear: the needles are a few bytes long.
pub(super) fn contains_ci(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

/// Where `[^<]*(?:<(?!/name>)[^<]*)*(?:</name>|$)` ends from `from` (case-insensitive).
fn find_close(b: &[u8], from: usize, name: &[u8]) -> usize {
    let mut i = from;
    while let Some(p) = b.get(i..).and_then(|r| memchr::memchr(b'<', r)) {
        let at = i + p;
        let r = &b[at..];
        if r.get(1) == Some(&b'/')
            && starts_with_ci(&r[2..], name)
            && r.get(2 + name.len()) == Some(&b'>')
        {
            return at + 3 + name.len();
        }
        i = at + 1;
    }
    b.len()
}
