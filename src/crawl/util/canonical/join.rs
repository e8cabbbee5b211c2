//! CPython 3.11's `urllib.parse.urljoin` (with the `urlparse` / `urlunparse` it rests
//! on), as Scrapy's `response.urljoin` uses it — RFC 3986 resolution with Python's
//! quirks (empty segments dropped in relative paths, `..` above the root ignored, the
//! base's query kept for a fragment-only reference). No normalisation: that is
//! `safe_url_string`'s job when a `Request` is built.

use std::borrow::Cow;

use super::error::{CanonicalizeError, Reason};
use super::quote::byte_set;

const USES_RELATIVE: &[&str] = &[
    "", "ftp", "http", "gopher", "nntp", "imap", "wais", "file", "https", "shttp", "mms",
    "prospero", "rtsp", "rtsps", "rtspu", "sftp", "svn", "svn+ssh", "ws", "wss",
];
const USES_NETLOC: &[&str] = &[
    "", "ftp", "http", "gopher", "nntp", "telnet", "imap", "wais", "file", "mms", "https", "shttp",
    "snews", "prospero", "rtsp", "rtsps", "rtspu", "rsync", "svn", "svn+ssh", "sftp", "nfs", "git",
    "git+ssh", "ws", "wss",
];
const USES_PARAMS: &[&str] = &[
    "", "ftp", "hdl", "prospero", "http", "imap", "https", "shttp", "rtsp", "rtsps", "rtspu",
    "sip", "sips", "mms", "sftp", "tel",
];

/// `urlparse`'s six parts, borrowed from the cleaned input.
struct Parsed<'a> {
    scheme: Cow<'a, str>,
    netloc: &'a str,
    path: &'a str,
    params: &'a str,
    query: &'a str,
    fragment: &'a str,
}

/// `urlsplit`'s input cleaning (3.11.7): leading C0 controls and spaces go; tabs and
/// newlines go everywhere.
fn clean(url: &str) -> Cow<'_, str> {
    let url = url.trim_start_matches(|c: char| c <= ' ');
    if memchr::memchr3(b'\t', b'\r', b'\n', url.as_bytes()).is_some() {
        Cow::Owned(url.replace(['\t', '\r', '\n'], ""))
    } else {
        Cow::Borrowed(url)
    }
}

/// `urlsplit(url, default_scheme)` then `_splitparams` (3.11.7), on a [`clean`]ed URL.
fn urlparse<'a>(url: &'a str, default_scheme: &'a str) -> Result<Parsed<'a>, Reason> {
    let mut scheme = Cow::Borrowed(default_scheme);
    let mut rest = url;
    // The first ':' with only scheme characters before it (byte scans: this runs for
    // every link of every page).
    let b = rest.as_bytes();
    let i = b
        .iter()
        .position(|&c| !(c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.')))
        .unwrap_or(b.len());
    if i > 0 && b.get(i) == Some(&b':') && b[0].is_ascii_alphabetic() {
        let s = &rest[..i];
        scheme = if s.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(s.to_ascii_lowercase())
        } else {
            Cow::Borrowed(s)
        };
        rest = &rest[i + 1..];
    }
    let mut netloc = "";
    if let Some(after) = rest.strip_prefix("//") {
        let end = after
            .bytes()
            .position(|c| matches!(c, b'/' | b'?' | b'#'))
            .unwrap_or(after.len());
        netloc = &after[..end];
        rest = &after[end..];
        let nb = netloc.as_bytes();
        if nb.contains(&b'[') != nb.contains(&b']') {
            return Err("ValueError: Invalid IPv6 URL");
        }
    }
    let (rest, fragment) = match memchr::memchr(b'#', rest.as_bytes()) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, ""),
    };
    let (path, query) = match memchr::memchr(b'?', rest.as_bytes()) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, ""),
    };
    let (path, params) = if memchr::memchr(b';', path.as_bytes()).is_some()
        && USES_PARAMS.contains(&scheme.as_ref())
    {
        let from = path.rfind('/').unwrap_or(0);
        match path[from..].find(';') {
            Some(i) => (&path[..from + i], &path[from + i + 1..]),
            None => (path, ""),
        }
    } else {
        (path, "")
    };
    Ok(Parsed {
        scheme,
        netloc,
        path,
        params,
        query,
        fragment,
    })
}

/// `urlunparse` (3.11: `urlunsplit` adds `//` for a netloc-using scheme), with `path`
/// in place of the parsed one, written piece by piece into `put`.
fn unparse_with(p: &Parsed<'_>, path: &str, mut put: impl FnMut(&str)) {
    if !p.scheme.is_empty() {
        put(&p.scheme);
        put(":");
    }
    if !p.netloc.is_empty()
        || (!p.scheme.is_empty()
            && USES_NETLOC.contains(&p.scheme.as_ref())
            && !path.starts_with("//"))
    {
        put("//");
        put(p.netloc);
        // `url = '/' + url` for a path (with params) that does not start with '/'.
        if (!path.is_empty() || !p.params.is_empty()) && !path.starts_with('/') {
            put("/");
        }
    }
    put(path);
    if !p.params.is_empty() {
        put(";");
        put(p.params);
    }
    if !p.query.is_empty() {
        put("?");
        put(p.query);
    }
    if !p.fragment.is_empty() {
        put("#");
        put(p.fragment);
    }
}

/// `urlunparse` into a new string.
fn urlunparse(p: &Parsed<'_>, path: &str) -> String {
    let mut url = String::with_capacity(
        p.scheme.len()
            + p.netloc.len()
            + path.len()
            + p.params.len()
            + p.query.len()
            + p.fragment.len()
            + 8,
    );
    unparse_with(p, path, |piece| url.push_str(piece));
    url
}

/// `urlunparse(p)`, borrowing `original` when that is what it would write (a URL
/// that is already in `urlunparse`'s form: the common case of an absolute link).
fn unparse_or_same<'u>(original: &'u str, p: &Parsed<'_>, path: &str) -> Cow<'u, str> {
    let mut at = 0;
    let mut same = true;
    unparse_with(p, path, |piece| {
        same = same && original.as_bytes()[at..].starts_with(piece.as_bytes());
        at += piece.len();
    });
    if same && at == original.len() {
        Cow::Borrowed(original)
    } else {
        Cow::Owned(urlunparse(p, path))
    }
}

/// `urlparse(url)`'s `netloc` and `path` (params split off as urlparse does), handed
/// to `f` — what Scrapy's `url_is_from_any_domain` and `url_has_any_extension` look
/// at.
///
/// # Errors
///
/// `ValueError: Invalid IPv6 URL` for an authority with unbalanced brackets.
pub fn with_netloc_and_path<R>(url: &str, f: impl FnOnce(&str, &str) -> R) -> Result<R, Reason> {
    if let Some((netloc, path)) = http_netloc_and_path(url) {
        return Ok(f(netloc, path));
    }
    let cleaned = clean(url);
    let p = urlparse(&cleaned, "")?;
    Ok(f(p.netloc, p.path))
}

/// [`urlparse`]'s netloc and path of an `http(s)://` URL with no byte `clean` would
/// touch and no bracket, in one pass (the links a crawl filters); `None` otherwise.
fn http_netloc_and_path(url: &str) -> Option<(&str, &str)> {
    let rest_at = if url.starts_with("http://") {
        7
    } else if url.starts_with("https://") {
        8
    } else {
        return None;
    };
    let b = url.as_bytes();
    let (mut netloc_end, mut query, mut fragment) = (None, None, None);
    // The last '/' of the path (the params of `_splitparams` are after it).
    let mut last_slash = None;
    for (i, &c) in b.iter().enumerate().skip(rest_at) {
        if !SPLIT_SPECIAL[usize::from(c)] {
            continue;
        }
        match c {
            0..=b' ' => return None,
            b'[' | b']' if netloc_end.is_none() => return None,
            b'/' => {
                netloc_end.get_or_insert(i);
                if query.is_none() && fragment.is_none() {
                    last_slash = Some(i);
                }
            }
            b'?' if query.is_none() && fragment.is_none() => {
                netloc_end.get_or_insert(i);
                query = Some(i);
            }
            b'#' if fragment.is_none() => {
                netloc_end.get_or_insert(i);
                fragment = Some(i);
            }
            _ => {}
        }
    }
    let netloc_end = netloc_end.unwrap_or(b.len());
    let path_end = query.or(fragment).unwrap_or(b.len());
    let path = &url[netloc_end..path_end.max(netloc_end)];
    // `_splitparams`: from the first ';' of the last segment.
    let last = last_slash.map_or(0, |i| i - netloc_end);
    let path = match memchr::memchr(b';', &path.as_bytes()[last..]) {
        Some(i) => &path[..last + i],
        None => path,
    };
    Some((&url[rest_at..netloc_end], path))
}

/// The bytes [`http_netloc_and_path`] looks at: controls and space, brackets, and the
/// delimiters of netloc, query and fragment.
static SPLIT_SPECIAL: [bool; 256] = byte_set(b"[]/?#", true, false);

/// CPython 3.11's `urllib.parse.urljoin(base, url)`.
///
/// # Errors
///
/// `ValueError: Invalid IPv6 URL` for an authority with unbalanced brackets.
pub(super) fn urljoin_reason(base: &str, url: &str) -> Result<String, Reason> {
    Joiner::new(base).join(url).map(Cow::into_owned)
}

/// A base URL parsed once for many [`urljoin`]s (the links of one page).
pub struct Joiner<'a> {
    raw: &'a str,
    /// The base parsed, when cleaning left it as it was (always, for a URL that
    /// `safe_url_string` wrote); else it is parsed on each join.
    parsed: Option<Result<Parsed<'a>, Reason>>,
}

impl<'a> Joiner<'a> {
    /// A joiner for `base`.
    pub fn new(base: &'a str) -> Self {
        let parsed = match clean(base) {
            Cow::Borrowed(c) => Some(urlparse(c, "")),
            Cow::Owned(_) => None,
        };
        Self { raw: base, parsed }
    }

    /// `urljoin(base, url)`, borrowing `url` when the result is `url` itself.
    ///
    /// # Errors
    ///
    /// As [`urljoin`].
    pub fn join<'u>(&self, url: &'u str) -> Result<Cow<'u, str>, Reason> {
        if self.raw.is_empty() {
            return Ok(Cow::Borrowed(url));
        }
        if url.is_empty() {
            return Ok(Cow::Owned(self.raw.to_owned()));
        }
        match &self.parsed {
            Some(Ok(b)) => join_parsed(b, url),
            Some(Err(e)) => Err(*e),
            None => {
                let cleaned = clean(self.raw);
                join_parsed(&urlparse(&cleaned, "")?, url)
            }
        }
    }
}

/// The shape of an `http(s)` URL or absolute-path reference that `urlparse` splits
/// and `urlunparse` writes back byte for byte (checked in one pass): printable ASCII
/// only (so [`clean`] and the netloc's NFKC check leave it alone), no `;` in the path
/// (no params to split), no `[`/`]` in the netloc, and no query or fragment that is
/// present but empty (`urlunparse` drops a bare `?` or `#`). With `dots`, a path with
/// a `/.` (a possible dot segment) does not qualify either.
///
/// `rest` is what follows the scheme's `//` (or the reference itself); `netloc`:
/// whether it starts with a netloc, which must then be non-empty.
fn plain(rest: &[u8], netloc: bool, dots: bool) -> bool {
    // 0: netloc, 1: path, 2: query, 3: fragment.
    let mut part = if netloc { 0 } else { 1 };
    let mut i = 0;
    while i < rest.len() {
        // Skip the bytes no part cares about (letters, digits, most punctuation).
        if !PLAIN_SPECIAL[usize::from(rest[i])] {
            i += 1;
            continue;
        }
        match rest[i] {
            b'/' if part == 0 => {
                if i == 0 {
                    return false;
                }
                part = 1;
            }
            b'[' | b']' if part == 0 => return false,
            b';' if part <= 1 => return false,
            b'.' if dots && part == 1 && i > 0 && rest[i - 1] == b'/' => return false,
            b'?' if part <= 1 => {
                if i == 0 && part == 0 {
                    return false;
                }
                part = 2;
                if matches!(rest.get(i + 1), None | Some(b'#')) {
                    return false;
                }
            }
            b'#' if part <= 2 => {
                if i == 0 && part == 0 {
                    return false;
                }
                part = 3;
                if i + 1 == rest.len() {
                    return false;
                }
            }
            b'/' | b'[' | b']' | b';' | b'.' | b'?' | b'#' => {}
            // Outside printable ASCII.
            _ => return false,
        }
        i += 1;
    }
    part > 0 || !rest.is_empty()
}

/// The bytes [`plain`] stops at: outside printable ASCII, and the delimiters.
static PLAIN_SPECIAL: [bool; 256] = byte_set(b"/[];.?#", true, true);

/// Whether `urljoin(base, url)` is `url` for any base: an `http(s)://` URL in
/// [`plain`] shape. (Another scheme than the base's returns `url` as it is; the same
/// scheme with a netloc returns `urlunparse(urlparse(url))`, which is `url`.)
pub(super) fn joins_to_itself(url: &str) -> bool {
    let rest = if let Some(r) = url.strip_prefix("http://") {
        r
    } else if let Some(r) = url.strip_prefix("https://") {
        r
    } else {
        return false;
    };
    plain(rest.as_bytes(), true, false)
}

/// Whether `url` is an absolute path (not `//`) in [`plain`] shape with no dot
/// segment, on an `http(s)` base.
fn keeps_absolute_path(b: &Parsed<'_>, url: &str) -> bool {
    url.starts_with('/')
        && !url.starts_with("//")
        && matches!(b.scheme.as_ref(), "http" | "https")
        && plain(url.as_bytes(), false, true)
}

/// The body of `urljoin` once the base is parsed.
fn join_parsed<'u>(b: &Parsed<'_>, url: &'u str) -> Result<Cow<'u, str>, Reason> {
    if joins_to_itself(url) {
        return Ok(Cow::Borrowed(url));
    }
    // An absolute path on an `http(s)` base, with no dot segment to resolve:
    // `urljoin` keeps the path as it is and `urlunparse` writes
    // `scheme://netloc` + the reference.
    if keeps_absolute_path(b, url) {
        let mut joined = String::with_capacity(b.scheme.len() + 3 + b.netloc.len() + url.len());
        joined.push_str(&b.scheme);
        joined.push_str("://");
        joined.push_str(b.netloc);
        joined.push_str(url);
        return Ok(Cow::Owned(joined));
    }
    if let Some(joined) = join_relative_plain(b, url) {
        return Ok(Cow::Owned(joined));
    }
    join_general(b, url)
}

/// `urljoin` of a relative path reference (`a/b.html`, `./a`, `../../a/`, with a
/// query or fragment) on an `http(s)` base whose directory has no empty or dot
/// segment, written directly: the base's directory less one segment per leading
/// `../`, then the reference after its leading `./` and `../`. `None` for any other
/// shape (dot or empty segments after the leading ones, a `:`, a path ending in `.`
/// or `..`, more `../` than directories, an empty path), which takes the general path.
fn join_relative_plain(b: &Parsed<'_>, url: &str) -> Option<String> {
    if !matches!(b.scheme.as_ref(), "http" | "https") || b.netloc.is_empty() {
        return None;
    }
    let bytes = url.as_bytes();
    if url.starts_with('/') || !plain(bytes, false, false) {
        return None;
    }
    let path_end = memchr::memchr2(b'?', b'#', bytes).unwrap_or(bytes.len());
    let path = &url[..path_end];
    if path.is_empty() || memchr::memchr(b':', path.as_bytes()).is_some() {
        return None;
    }
    let (mut rest, mut pops) = (path, 0usize);
    loop {
        if let Some(r) = rest.strip_prefix("./") {
            rest = r;
        } else if let Some(r) = rest.strip_prefix("../") {
            rest = r;
            pops += 1;
        } else {
            break;
        }
    }
    if rest.starts_with(['.', '/']) || empty_or_dot_segment(rest) {
        return None;
    }
    let dir = &b.path[..=memchr::memrchr(b'/', b.path.as_bytes())?];
    if !dir.starts_with('/') || empty_or_dot_segment(dir) {
        return None;
    }
    let mut keep = dir.len();
    for _ in 0..pops {
        // `..` above the root would pop the leading empty segment: left to the
        // general path.
        keep = memchr::memrchr(b'/', &dir.as_bytes()[..keep - 1])? + 1;
    }
    let mut joined = String::with_capacity(
        b.scheme.len() + 3 + b.netloc.len() + keep + rest.len() + url.len() - path_end,
    );
    joined.push_str(&b.scheme);
    joined.push_str("://");
    joined.push_str(b.netloc);
    joined.push_str(&dir[..keep]);
    joined.push_str(rest);
    joined.push_str(&url[path_end..]);
    Some(joined)
}

/// Whether `path` holds `//` or `/.` (an empty segment, or one that starts with a
/// dot): one pass over a few bytes (cheaper than two `str::contains` searches, each of
/// which sets up a substring searcher).
fn empty_or_dot_segment(path: &str) -> bool {
    path.as_bytes()
        .windows(2)
        .any(|w| w[0] == b'/' && matches!(w[1], b'/' | b'.'))
}

/// `urljoin` step by step, as CPython writes it.
fn join_general<'u>(b: &Parsed<'_>, url: &'u str) -> Result<Cow<'u, str>, Reason> {
    let url_clean = clean(url);
    let mut u = urlparse(&url_clean, &b.scheme)?;
    if u.scheme != b.scheme || !USES_RELATIVE.contains(&u.scheme.as_ref()) {
        return Ok(Cow::Borrowed(url));
    }
    if USES_NETLOC.contains(&u.scheme.as_ref()) {
        if !u.netloc.is_empty() {
            return Ok(unparse_or_same(url, &u, u.path));
        }
        u.netloc = b.netloc;
    }
    if u.path.is_empty() && u.params.is_empty() {
        u.path = b.path;
        u.params = b.params;
        if u.query.is_empty() {
            u.query = b.query;
        }
        return Ok(Cow::Owned(urlunparse(&u, u.path)));
    }
    let mut segments: Vec<&str> = Vec::with_capacity(16);
    if u.path.starts_with('/') {
        segments.extend(u.path.split('/'));
    } else {
        segments.extend(b.path.split('/'));
        if segments.last().is_some_and(|s| !s.is_empty()) {
            segments.pop();
        }
        segments.extend(u.path.split('/'));
        // segments[1:-1] = filter(None, segments[1:-1])
        if segments.len() > 2 {
            let last = segments[segments.len() - 1];
            let mut keep = 1;
            for i in 1..segments.len() - 1 {
                if !segments[i].is_empty() {
                    segments[keep] = segments[i];
                    keep += 1;
                }
            }
            segments.truncate(keep);
            segments.push(last);
        }
    }
    let dot_end = segments.last().is_some_and(|s| *s == "." || *s == "..");
    // Resolved in place: the write index never passes the read index.
    let mut kept: usize = 0;
    for i in 0..segments.len() {
        match segments[i] {
            ".." => kept = kept.saturating_sub(1),
            "." => {}
            s => {
                segments[kept] = s;
                kept += 1;
            }
        }
    }
    segments.truncate(kept);
    if dot_end {
        segments.push("");
    }
    let mut joined = String::with_capacity(u.path.len() + b.path.len());
    for (i, s) in segments.iter().enumerate() {
        if i > 0 {
            joined.push('/');
        }
        joined.push_str(s);
    }
    if joined.is_empty() {
        joined.push('/');
    }
    Ok(Cow::Owned(urlunparse(&u, &joined)))
}

/// CPython's `urllib.parse.urljoin`, with its error as a Python exception text.
pub fn urljoin(base: &str, url: &str) -> Result<String, CanonicalizeError> {
    urljoin_reason(base, url).map_err(|reason| CanonicalizeError {
        url: url.to_owned(),
        reason: reason.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::{clean, http_netloc_and_path, join_general, join_parsed, urlparse};

    fn slow(url: &str) -> Option<(String, String)> {
        let cleaned = clean(url);
        let p = urlparse(&cleaned, "").ok()?;
        Some((p.netloc.to_owned(), p.path.to_owned()))
    }

    fn check(url: &str) -> bool {
        match http_netloc_and_path(url) {
            Some((n, p)) => {
                assert_eq!(Some((n.to_owned(), p.to_owned())), slow(url), "{url:?}");
                true
            }
            None => false,
        }
    }

    #[test]
    fn the_shortcuts_join_as_the_general_path() {
        let bases = [
            "http://a.com/x/y",
            "https://a.com:8443/d/",
            "http://a.com",
            "http:///x",
            "ftp://a.com/x/",
            "http://u@a.com/x;p?q#f",
            "http://a.com/p/q/r.html",
            "http://a.com/p;x/q/",
            "http://a.com/p//q/r",
            "http://a.com/p/./q/r",
            "http://a.com/.p/q",
        ];
        let alphabet: Vec<char> = "ab/?#;:.@[] %é\t\x7fH".chars().collect();
        let heads = [
            "",
            "/",
            "//",
            "http://",
            "https://",
            "HTTP://",
            "ftp://",
            "http:",
            "./",
            "../",
            "../../",
            "../../../../",
            "./../",
            "a/",
            "a/../",
        ];
        let mut next = crate::util::xorshift(0x0DDB_1A5E_5BAD_5EED);
        let (mut shortcut, mut total, mut relative_hits) = (0, 0, 0);
        for _ in 0..200_000 {
            let mut r = next();
            let mut url = String::from(heads[(r % heads.len() as u64) as usize]);
            for _ in 0..(r >> 8) % 16 {
                r = r.rotate_left(5).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                url.push(alphabet[(r >> 33) as usize % alphabet.len()]);
            }
            for base in bases {
                let b = urlparse(base, "").expect("base");
                let fast = join_parsed(&b, &url);
                let slow = join_general(&b, &url);
                assert_eq!(fast, slow, "{base} + {url:?}");
                total += 1;
                let relative = super::join_relative_plain(&b, &url).is_some();
                relative_hits += usize::from(relative);
                if super::joins_to_itself(&url) || super::keeps_absolute_path(&b, &url) || relative
                {
                    shortcut += 1;
                }
            }
        }
        assert!(shortcut > 1000 && total > shortcut, "{shortcut} of {total}");
        assert!(
            relative_hits > 1000,
            "{relative_hits} relative references joined directly"
        );
    }

    #[test]
    fn the_one_pass_split_is_urlparses() {
        let mut fast = 0;
        for file in ["urls.json", "follow.json", "linkextract.json"] {
            let path = format!("{}/tests/data/urls/{file}", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(path).expect("corpus");
            let value: serde_json::Value = serde_json::from_str(&text).expect("json");
            let mut stack = vec![&value];
            while let Some(v) = stack.pop() {
                match v {
                    serde_json::Value::String(s) => fast += usize::from(check(s)),
                    serde_json::Value::Array(a) => stack.extend(a),
                    serde_json::Value::Object(o) => stack.extend(o.values()),
                    _ => {}
                }
            }
        }
        assert!(fast > 1000, "{fast}");
        let alphabet: Vec<char> = "a/?#;:.@[]% é\t".chars().collect();
        let mut next = crate::util::xorshift(0x1234_5678_9ABC_DEF1);
        for _ in 0..100_000 {
            let mut url = String::from("http://");
            let mut r = next();
            for _ in 0..(r % 20) {
                r = r.rotate_left(5).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                url.push(alphabet[(r >> 33) as usize % alphabet.len()]);
            }
            check(&url);
        }
    }
}
