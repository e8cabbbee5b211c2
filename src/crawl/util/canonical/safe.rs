//! w3lib's `safe_url_string` (w3lib 2.5.0), for UTF-8 pages: the URL string Scrapy's
//! `Request(url).url` holds — percent-encoding only what must be, an IDNA host, the
//! port as a number, userinfo re-quoted, nothing else normalised (no query sorting, no
//! dot segments, the default port kept), checked against `tests/data/urls/urls.json`.
//! `Request::get` and the link extractor build their URLs with it.

use std::borrow::Cow;

use super::error::{CanonicalizeError, Reason};
use super::netloc::write_netloc;
use super::quote::{PATH_SAFEST, byte_set, quote_into, quote_plus_into, safe_table};
use super::split::{is_special, lower, split_rest, split_scheme, strip};

/// w3lib `_SPECIAL_QUERY_SAFEST_CHARS`: the path set less `'`.
static SPECIAL_QUERY_SAFEST: [bool; 256] = safe_table(b"!$%&()*+,/:;=?@");

/// Schemes whose `_urlunsplit` adds `//` before a netloc-less path (urllib's
/// `uses_netloc`).
fn uses_netloc(scheme: &str) -> bool {
    super::split::uses_netloc(scheme)
}

/// `w3lib.url.safe_url_string(url)` with the default UTF-8 encodings.
///
/// # Errors
///
/// Where w3lib raises `ValueError`: an invalid port, unbalanced brackets in the
/// authority, delimiters in an NFKC-normalised host.
pub fn safe_url_string(url: &str) -> Result<String, CanonicalizeError> {
    safe_url_string_encoded(url, encoding_rs::UTF_8)
}

/// `safe_url_string(url, encoding)`: the query and fragment are encoded with the
/// page's `encoding` before quoting (the path is always UTF-8), as Scrapy builds a
/// followed link's request on a non-UTF-8 page.
///
/// # Errors
///
/// As [`safe_url_string`], and `UnicodeEncodeError` when the query or fragment holds
/// a character `encoding` cannot represent (Python's strict encoding).
pub fn safe_url_string_encoded(
    url: &str,
    encoding: &'static encoding_rs::Encoding,
) -> Result<String, CanonicalizeError> {
    safe(url, encoding).map_err(|reason| CanonicalizeError {
        url: url.to_owned(),
        reason: reason.to_owned(),
    })
}

/// [`safe_url_string_encoded`] taking the URL by value: an already-safe URL that is
/// already owned (a joined link) is returned without a copy. The flag says whether
/// the URL was already safe and has no `;`, and so is its own `urljoin` on any base
/// (`urljoin` splits a path's `;` off as params and can drop it).
pub(crate) fn safe_url_string_owned(
    url: Cow<'_, str>,
    encoding: &'static encoding_rs::Encoding,
) -> Result<(String, bool), CanonicalizeError> {
    if already_safe(&url) {
        let joins_to_itself = memchr::memchr(b';', url.as_bytes()).is_none();
        return Ok((url.into_owned(), joins_to_itself));
    }
    safe_url_string_encoded(&url, encoding).map(|s| (s, false))
}

/// Python's `urlencode(pairs, doseq=True)` over the pairs encoded (strictly) with
/// `encoding` — Scrapy's `FormRequest` form data: `quote_plus` each side, `&`-joined.
///
/// # Errors
///
/// `UnicodeEncodeError` for a character `encoding` cannot represent.
pub(crate) fn urlencode(
    pairs: &[(&str, &str)],
    encoding: &'static encoding_rs::Encoding,
) -> Result<String, Reason> {
    let mut out: Vec<u8> = Vec::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(b'&');
        }
        quote_plus_into(&mut out, encode(k, encoding)?.iter().copied());
        out.push(b'=');
        quote_plus_into(&mut out, encode(v, encoding)?.iter().copied());
    }
    // Only ASCII was written.
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// `text.encode(encoding)`, strict.
fn encode<'a>(
    text: &'a str,
    encoding: &'static encoding_rs::Encoding,
) -> Result<Cow<'a, [u8]>, Reason> {
    if encoding == encoding_rs::UTF_8 || text.is_ascii() {
        return Ok(Cow::Borrowed(text.as_bytes()));
    }
    let (bytes, _, unmappable) = encoding.encode(text);
    if unmappable {
        return Err("UnicodeEncodeError: a character the page's encoding cannot encode");
    }
    Ok(bytes)
}

/// Whether `safe` would give `url` back unchanged, decided conservatively in one pass:
/// `http`/`https`, a lower-case ASCII host of letters, digits, `.` and `-` with an
/// optional canonical port, and a path, query and fragment of bytes the quoting keeps
/// (no empty `?` or `#`, no query without a path). The usual link of a crawl is such
/// a URL; anything else takes the full path. Checked against the full path on the
/// recorded corpora and on generated strings (`already_safe_implies_identity`).
fn already_safe(url: &str) -> bool {
    safe_host(url).is_some()
}

/// [`already_safe`]'s check, answering with the URL's host when it passes.
fn safe_host(url: &str) -> Option<&[u8]> {
    let origin = checked_origin(url)?;
    let b = url.as_bytes();
    safe_tail(&b[origin.end..]).then(|| &b[origin.host.0..origin.host.1])
}

/// The origin (`scheme://host[:port]`) of a URL whose scheme, host and port pass
/// [`already_safe`]'s test: where its host is and where it ends.
#[derive(Clone, Copy)]
struct Origin {
    host: (usize, usize),
    end: usize,
    /// [`host_parses_as_is`]'s answer for the host, when the thread knew it.
    host_as_is: Option<bool>,
}

/// [`already_safe`]'s test of the scheme, host and port: `http`/`https`, a host of
/// lower-case letters, digits, `.` and `-` up to a `:`, `/`, `?`, `#` or the end, and a
/// canonical port. An origin just passed is kept for the thread (see [`KNOWN`]).
fn checked_origin(url: &str) -> Option<Origin> {
    if let Some(known) = known_origin(url.as_bytes()) {
        return Some(known);
    }
    let (start, len) = leading_host(url)?;
    if len == 0 {
        return None;
    }
    let b = url.as_bytes();
    let mut i = start + len;
    if b.get(i) == Some(&b':') {
        // A canonical port: 1 to 65535, no leading zero.
        i += 1;
        let digits = i;
        let mut port = 0u32;
        while i < b.len() && b[i].is_ascii_digit() && i - digits < 5 {
            port = port * 10 + u32::from(b[i] - b'0');
            i += 1;
        }
        if i == digits || b[digits] == b'0' || port > 65535 {
            return None;
        }
    }
    let origin = Origin {
        host: (start, start + len),
        end: i,
        host_as_is: None,
    };
    remember_origin(b, origin);
    Some(origin)
}

/// [`already_safe`]'s test of what follows the origin, in one pass: the path up to
/// `?` or `#`, a non-empty query (needing a path), a non-empty fragment.
fn safe_tail(tail: &[u8]) -> bool {
    let n = tail.len();
    let mut i = 0;
    while i < n && PATH_BODY[usize::from(tail[i])] {
        i += 1;
    }
    let path_len = i;
    if path_len > 0 && tail[0] != b'/' {
        // Not where a netloc ends (a sixth port digit, a byte a host cannot hold).
        return false;
    }
    if i < n && tail[i] == b'?' {
        i += 1;
        let start = i;
        while i < n && SPECIAL_QUERY_SAFEST[usize::from(tail[i])] {
            i += 1;
        }
        if i == start || path_len == 0 {
            return false;
        }
    }
    if i < n {
        if tail[i] != b'#' {
            return false;
        }
        i += 1;
        if i == n {
            return false;
        }
        while i < n {
            if !PATH_SAFEST[usize::from(tail[i])] {
                return false;
            }
            i += 1;
        }
    }
    true
}

/// The longest origin [`KNOWN`] holds.
const KNOWN_ORIGIN_BYTES: usize = 64;

/// The thread's last origin that passed [`checked_origin`]'s test, as bytes.
/// (Its bytes are `bytes[..origin.end]`; an `end` of 0: nothing known.)
struct KnownOrigin {
    bytes: [u8; KNOWN_ORIGIN_BYTES],
    origin: Origin,
}

thread_local! {
    /// The last origin [`checked_origin`] passed: a crawl's links and requests are
    /// mostly on a few hosts, and a URL that starts with this origin followed by `/`,
    /// `?`, `#` or nothing has the same host and port (the host ends at a `:` or at a
    /// byte it cannot hold, the port at a non-digit), so the test of the host and port
    /// — and [`host_parses_as_is`]'s, once made — is not made again. Tested against the
    /// uncached test (`the_known_origin_answers_as_the_full_test`).
    static KNOWN: std::cell::RefCell<KnownOrigin> = const {
        std::cell::RefCell::new(KnownOrigin {
            bytes: [0; KNOWN_ORIGIN_BYTES],
            origin: Origin { host: (0, 0), end: 0, host_as_is: None },
        })
    };
}

/// Where `url`'s origin ends, if it is the thread's [`KNOWN`] origin.
pub(super) fn known_origin_end(url: &[u8]) -> Option<usize> {
    known_origin(url).map(|o| o.end)
}

/// [`KNOWN`]'s answer for `url`, if `url` starts with that origin.
fn known_origin(url: &[u8]) -> Option<Origin> {
    KNOWN
        .try_with(|k| {
            let k = k.try_borrow().ok()?;
            let end = k.origin.end;
            let known = &k.bytes[..end];
            (end > 0
                && url.starts_with(known)
                && matches!(url.get(end), None | Some(b'/' | b'?' | b'#')))
            .then_some(k.origin)
        })
        .ok()
        .flatten()
}

/// Keeps `origin` (of `url`) as the thread's [`KNOWN`] origin, when it fits. (One
/// read from a URL whose port has a sixth digit is kept too: [`known_origin`] matches
/// it only where an origin ends.)
fn remember_origin(url: &[u8], origin: Origin) {
    if origin.end > KNOWN_ORIGIN_BYTES {
        return;
    }
    let _ = KNOWN.try_with(|k| {
        if let Ok(mut k) = k.try_borrow_mut() {
            k.bytes[..origin.end].copy_from_slice(&url[..origin.end]);
            k.origin = origin;
        }
    });
}

/// Empties [`KNOWN`] (tests compare answers with and without it).
#[cfg(test)]
fn forget_origin() {
    let _ = KNOWN.try_with(|k| {
        if let Ok(mut k) = k.try_borrow_mut() {
            k.origin.end = 0;
        }
    });
}

/// Records [`host_parses_as_is`]'s answer for the [`KNOWN`] origin, `url`'s.
fn remember_host_as_is(url: &[u8], origin: Origin, as_is: bool) {
    let _ = KNOWN.try_with(|k| {
        if let Ok(mut k) = k.try_borrow_mut()
            && k.origin.end == origin.end
            && origin.end > 0
            && url.get(..origin.end) == Some(&k.bytes[..origin.end])
        {
            k.origin.host_as_is = Some(as_is);
        }
    });
}

/// Bytes of an already-safe URL's host: lower-case letters, digits, `.` and `-`.
static SAFE_HOST: [bool; 256] = byte_set(b"abcdefghijklmnopqrstuvwxyz0123456789.-", false, false);

/// [`PATH_SAFEST`] less `?`: the bytes of an already-safe path.
static PATH_BODY: [bool; 256] = {
    let mut t = PATH_SAFEST;
    t[b'?' as usize] = false;
    t
};

/// Whether `url` is already safe (see `already_safe`) and certain to parse with the
/// `url` crate: its host has no `xn--` label (decoded and checked by the parser), and
/// a host whose last label is numeric (the WHATWG IPv4 path) is a plain dotted quad.
/// `Request::get` defers the parse of such a URL until something needs it. Tested
/// against the parser on the URL corpora and generated hosts.
pub(crate) fn parses_as_is(url: &str) -> bool {
    let Some(origin) = checked_origin(url) else {
        return false;
    };
    let b = url.as_bytes();
    if !safe_tail(&b[origin.end..]) {
        return false;
    }
    origin.host_as_is.unwrap_or_else(|| {
        let as_is = host_parses_as_is(&b[origin.host.0..origin.host.1]);
        remember_host_as_is(b, origin, as_is);
        as_is
    })
}

/// The `url` crate's parse of `url`, a URL [`parses_as_is`] admitted, without parsing
/// its host again when the thread has seen that origin before: an origin that comes
/// round a second time in its slot (eight, picked by the origin's hash) is parsed once
/// as a base, and its URLs are parsed relative to it — `base.join("/path?query#frag")`,
/// the WHATWG parser's "path-absolute" state, which copies the base's scheme, host and
/// port and parses the rest as the full parse would. The host is the costly part of a
/// parse (IDNA mapping, the IPv4 reading): a crawl parses the same few hosts for every
/// request it downloads. Anything else (`http://h` alone, `http://h?q`, `http://h//p`)
/// is parsed whole. Equal to `Url::parse(url)`, serialisation and every part: tested
/// on the URL corpora and on generated URLs (`parse_as_is_equals_the_full_parse`).
pub(crate) fn parse_as_is(url: &str) -> Result<url::Url, url::ParseError> {
    let Some(end) = checked_origin(url).map(|o| o.end) else {
        return url::Url::parse(url);
    };
    let (origin, rest) = url.split_at(end);
    if !rest.starts_with('/') || rest.starts_with("//") {
        return url::Url::parse(url);
    }
    let slot = (crate::util::fx_hash(origin.as_bytes()) % BASE_SLOTS as u64) as usize;
    BASES
        .try_with(|bases| {
            let Ok(mut bases) = bases.try_borrow_mut() else {
                return url::Url::parse(url);
            };
            match &mut bases[slot] {
                Some((known, base)) if **known == *origin => {
                    if base.is_none() {
                        *base = url::Url::parse(origin).ok();
                    }
                    match base {
                        Some(base) => base.join(rest),
                        None => url::Url::parse(url),
                    }
                }
                entry => {
                    // First sight (in this slot): remembered, parsed whole.
                    *entry = Some((origin.into(), None));
                    url::Url::parse(url)
                }
            }
        })
        .unwrap_or_else(|_| url::Url::parse(url))
}

/// Slots of [`parse_as_is`]'s bases.
const BASE_SLOTS: usize = 8;

/// An origin [`parse_as_is`] saw, with its parse once it came round again.
type Base = Option<(Box<str>, Option<url::Url>)>;

thread_local! {
    /// [`parse_as_is`]'s origins (`scheme://host[:port]`), each with its parse once it
    /// came round a second time.
    static BASES: std::cell::RefCell<[Base; BASE_SLOTS]> =
        const { std::cell::RefCell::new([const { None }; BASE_SLOTS]) };
}

/// [`parses_as_is`]'s test of a host of ASCII letters, digits, `.` and `-`, in one
/// pass over its bytes: no IDNA (`xn--`) label; a last non-empty label that is a number
/// (or `0x`...) makes the host an IPv4 address, which must be four canonical octets.
/// (`last_numeric` starts true: a host of dots only is left to the parser.)
fn host_parses_as_is(host: &[u8]) -> bool {
    let n = host.len();
    let (mut parts, mut octets_canonical, mut last_numeric) = (0u32, true, true);
    let mut i = 0;
    loop {
        let start = i;
        // The label's digits as a number (saturating: only values of up to three
        // digits are compared), and whether it is all digits.
        let (mut value, mut digits) = (0u32, true);
        while i < n && host[i] != b'.' {
            let c = host[i];
            if c.is_ascii_digit() {
                value = value.saturating_mul(10).saturating_add(u32::from(c - b'0'));
            } else {
                digits = false;
            }
            i += 1;
        }
        let label = &host[start..i];
        if label.starts_with(b"xn--") {
            return false;
        }
        parts += 1;
        let len = label.len();
        octets_canonical &=
            len != 0 && len <= 3 && digits && (len == 1 || label[0] != b'0') && value <= 255;
        if len != 0 {
            last_numeric = digits || label.starts_with(b"0x");
        }
        if i == n {
            break;
        }
        i += 1;
    }
    !last_numeric || (octets_canonical && parts == 4)
}

/// The host of a URL [`parses_as_is`] admitted, read from the string without parsing
/// it: what the `url` crate's `host_str()` gives for its parse (checked against the
/// parser wherever `parses_as_is` is). For other URLs the answer means nothing.
pub(crate) fn host_as_is(url: &str) -> Option<&str> {
    let (start, len) = leading_host(url)?;
    url.get(start..start + len)
}

/// After an `http://` or `https://` prefix, where the run of [`SAFE_HOST`] bytes starts
/// and how long it is (possibly 0).
fn leading_host(url: &str) -> Option<(usize, usize)> {
    let b = url.as_bytes();
    let rest = b
        .strip_prefix(b"http://")
        .or_else(|| b.strip_prefix(b"https://"))?;
    let len = rest
        .iter()
        .position(|&c| !SAFE_HOST[usize::from(c)])
        .unwrap_or(rest.len());
    Some((b.len() - rest.len(), len))
}

fn safe(url: &str, encoding: &'static encoding_rs::Encoding) -> Result<String, Reason> {
    if already_safe(url) {
        return Ok(url.to_owned());
    }
    safe_full(url, encoding)
}

fn safe_full(url: &str, encoding: &'static encoding_rs::Encoding) -> Result<String, Reason> {
    let stripped = strip(url);
    let (scheme, rest) = split_scheme(&stripped);
    let scheme = lower(scheme);
    // `_urlsplit`: for special schemes "\" is "/" before the query and fragment.
    let rest: Cow<'_, str> = if is_special(&scheme) && rest.contains('\\') {
        let cut = rest.find(['?', '#']).unwrap_or(rest.len());
        Cow::Owned(rest[..cut].replace('\\', "/") + &rest[cut..])
    } else {
        Cow::Borrowed(rest)
    };
    let parts = split_rest(&rest)?;

    let mut netloc: Vec<u8> = Vec::new();
    write_netloc(&mut netloc, &parts)?;
    let mut path: Vec<u8> = Vec::with_capacity(parts.path.len());
    quote_into(&mut path, parts.path.as_bytes(), &PATH_SAFEST);
    let mut query: Vec<u8> = Vec::with_capacity(parts.query.len());
    let query_safe = if w3lib_special(&scheme) {
        &SPECIAL_QUERY_SAFEST
    } else {
        &PATH_SAFEST
    };
    quote_into(&mut query, &encode(parts.query, encoding)?, query_safe);
    let mut fragment: Vec<u8> = Vec::new();
    quote_into(
        &mut fragment,
        &encode(parts.fragment, encoding)?,
        &PATH_SAFEST,
    );
    // "https://example.com?a=b": a special URL's query needs a path.
    if path.is_empty() && !query.is_empty() && w3lib_special(&scheme) {
        path.push(b'/');
    }

    // `_urlunsplit`.
    let mut out: Vec<u8> = Vec::with_capacity(url.len() + 8);
    if !scheme.is_empty() {
        out.extend_from_slice(scheme.as_bytes());
        out.push(b':');
    }
    if !netloc.is_empty() {
        out.extend_from_slice(b"//");
        out.extend_from_slice(&netloc);
        if !path.is_empty() && path[0] != b'/' {
            out.push(b'/');
        }
    } else if path.starts_with(b"//")
        || (!scheme.is_empty() && uses_netloc(&scheme) && (path.is_empty() || path[0] == b'/'))
    {
        out.extend_from_slice(b"//");
    }
    out.extend_from_slice(&path);
    if !query.is_empty() {
        out.push(b'?');
        out.extend_from_slice(&query);
    }
    if !fragment.is_empty() {
        out.push(b'#');
        out.extend_from_slice(&fragment);
    }
    String::from_utf8(out).map_err(|_| "UnicodeDecodeError: invalid UTF-8 in result")
}

/// The full path, for the fast path's test.
#[cfg(test)]
fn safe_slow(url: &str) -> Result<String, Reason> {
    safe_full(url, encoding_rs::UTF_8)
}

/// w3lib `_SPECIAL_SCHEMES`.
fn w3lib_special(scheme: &str) -> bool {
    matches!(scheme, "ftp" | "file" | "http" | "https" | "ws" | "wss")
}

#[cfg(test)]
mod tests {
    use super::{already_safe, safe_slow};

    fn check(url: &str) {
        if already_safe(url) && !url.contains(';') {
            assert!(
                super::super::join::joins_to_itself(url),
                "{url:?} is already safe, has no `;` but is not its own urljoin"
            );
        }
        if super::parses_as_is(url) {
            let parsed = url::Url::parse(url);
            assert_eq!(
                parsed.as_ref().ok().and_then(|u| u.host_str()),
                super::host_as_is(url),
                "the host read from {url:?} is not the parser's"
            );
        }
        if already_safe(url) {
            assert_eq!(
                safe_slow(url).as_deref(),
                Ok(url),
                "the fast path is wrong for {url:?}"
            );
        }
    }

    /// Hosts built of the pieces the IPv4 and IDNA tests tell apart: whatever the one
    /// pass admits, the `url` crate parses to the same host; and it answers as the
    /// label-by-label reading it replaced.
    #[test]
    fn host_test_admits_only_what_parses_as_is() {
        fn by_labels(host: &[u8]) -> bool {
            let (mut parts, mut canonical, mut last_numeric) = (0, true, true);
            for label in host.split(|&c| c == b'.') {
                if label.starts_with(b"xn--") {
                    return false;
                }
                parts += 1;
                let digits = label.iter().all(u8::is_ascii_digit);
                canonical &= !label.is_empty()
                    && label.len() <= 3
                    && digits
                    && (label.len() == 1 || label[0] != b'0')
                    && label
                        .iter()
                        .fold(0u32, |v, &d| v.saturating_mul(10) + u32::from(d - b'0'))
                        <= 255;
                if !label.is_empty() {
                    last_numeric = digits || label.starts_with(b"0x");
                }
            }
            !last_numeric || (canonical && parts == 4)
        }
        // Mostly numbers: four-label dotted quads have to come up often.
        let pieces = [
            "0", "1", "9", "25", "255", "256", "00", "012", "1000", "0x", "0x1f", "xn--", "xn--a",
            "a", "-", "1a", "", "7", "42", "199",
        ];
        let mut next = crate::util::xorshift(0x2545_F491_4F6C_DD1D);
        let (mut admitted, mut refused) = (0, 0);
        for _ in 0..100_000 {
            let labels: Vec<&str> = (0..1 + next() % 6)
                .map(|_| pieces[(next() % pieces.len() as u64) as usize])
                .collect();
            let host = labels.join(".");
            let url = format!("http://{host}/p");
            let Some(bytes) = super::safe_host(&url) else {
                continue;
            };
            let ok = super::parses_as_is(&url);
            assert_eq!(ok, by_labels(bytes), "{url:?}");
            if ok {
                admitted += 1;
                let parsed = url::Url::parse(&url);
                assert_eq!(
                    parsed.as_ref().ok().and_then(|u| u.host_str()),
                    super::host_as_is(&url),
                    "{url:?} admitted, but the parser reads {parsed:?}"
                );
            } else {
                refused += 1;
            }
        }
        assert!(admitted > 1000 && refused > 1000, "{admitted} / {refused}");
    }

    /// `parse_as_is` against `Url::parse`: serialisation, parts and `Debug` (which
    /// shows every index), three times each so the base path runs.
    fn assert_parse_as_is(url: &str) {
        if !super::parses_as_is(url) {
            return;
        }
        let full = url::Url::parse(url).expect("admitted, so it parses");
        for _ in 0..3 {
            let fast = super::parse_as_is(url);
            assert_eq!(
                fast.as_ref().map(url::Url::as_str),
                Ok(full.as_str()),
                "{url:?}"
            );
            let fast = fast.expect("compared above");
            assert_eq!(format!("{fast:?}"), format!("{full:?}"), "{url:?}");
            assert_eq!(
                (
                    fast.host_str(),
                    fast.port(),
                    fast.path(),
                    fast.query(),
                    fast.fragment()
                ),
                (
                    full.host_str(),
                    full.port(),
                    full.path(),
                    full.query(),
                    full.fragment()
                ),
                "{url:?}"
            );
        }
    }

    /// `safe_host`'s, `parses_as_is`'s and the canonical fast path's answers for `url`.
    type Answer = (Option<Vec<u8>>, bool, [Option<String>; 2]);

    fn fast(url: &str, keep_fragments: bool) -> Option<String> {
        super::super::canonicalize::fast_path(url, true, keep_fragments).map(|c| c.into_owned())
    }

    /// [`Answer`] for `url` with the origin the thread knows (the fast path first:
    /// `safe_host` makes `url`'s own origin known).
    fn answer(url: &str) -> Answer {
        let fast = [fast(url, false), fast(url, true)];
        (
            super::safe_host(url).map(<[u8]>::to_vec),
            super::parses_as_is(url),
            fast,
        )
    }

    /// [`Answer`] for `url` with no origin known before each of its tests.
    fn answer_fresh(url: &str) -> Answer {
        super::forget_origin();
        let host = super::safe_host(url).map(<[u8]>::to_vec);
        super::forget_origin();
        let as_is = super::parses_as_is(url);
        let fast = [false, true].map(|keep| {
            super::forget_origin();
            fast(url, keep)
        });
        (host, as_is, fast)
    }

    /// The known origin changes no answer (`safe_host`, `parses_as_is`, the canonical
    /// fast path): URL `b` tested after URL `a` made its origin known, and `a` again
    /// after `b` (which may have replaced it, or recorded its own host's test), answer
    /// as with no origin known; over origins that prefix one another (`.co` / `.com`, a
    /// port and a longer port, a port's sixth digit), a host too long to keep, IDNA and
    /// IPv4 hosts, then the corpora after each generated origin.
    #[test]
    fn the_known_origin_answers_as_the_full_test() {
        let long_host = format!("http://{}.example", "a".repeat(60));
        let long_idna = format!("http://xn--{}.example", "b".repeat(60));
        let origins = [
            "http://example.co",
            "http://example.com",
            "https://example.com",
            "http://example.com:8080",
            "http://example.com:80801",
            "http://example.com:12345",
            "http://example.com:123456",
            "http://127.0.0.1",
            "http://127.0.0.1.5",
            "http://0x7f.1",
            "http://xn--bcher-kva.de",
            "http://Example.com",
            long_host.as_str(),
            long_idna.as_str(),
        ];
        let tails = [
            "",
            "/",
            "/a/b.html",
            "?q=1",
            "/?q",
            "#f",
            "/p#",
            "x/",
            ":80/",
            "6/",
            ".5/",
            "/b?z=1&a=2#f",
            "/./a",
            "/A%2fB",
        ];
        let urls: Vec<String> = origins
            .iter()
            .flat_map(|o| tails.iter().map(move |t| format!("{o}{t}")))
            .collect();
        let (mut compared, mut safe, mut as_is, mut fast) = (0, 0, 0, 0);
        for a in &urls {
            for b in &urls {
                super::forget_origin();
                let _ = super::safe_host(a);
                let (b_known, a_known) = (answer(b), answer(a));
                for (url, known) in [(b, b_known), (a, a_known)] {
                    assert_eq!(known, answer_fresh(url), "{url:?} after {a:?}, {b:?}");
                    safe += usize::from(known.0.is_some());
                    as_is += usize::from(known.1);
                    fast += usize::from(known.2[0].is_some());
                    compared += 1;
                }
            }
        }
        // Both answers, both ways, were seen.
        assert!(safe > compared / 4 && as_is > compared / 8 && as_is < safe && safe < compared);
        assert!(
            fast > compared / 4 && fast < compared,
            "{fast} of {compared}"
        );
        let corpus = corpus_strings();
        for o in origins {
            let primer = format!("{o}/");
            for url in &corpus {
                super::forget_origin();
                let _ = super::parses_as_is(&primer);
                let known = answer(url);
                assert_eq!(known, answer_fresh(url), "{url:?} after {primer:?}");
            }
        }
    }

    /// Origins in every shape of what follows them (URLs a crawl parses again and
    /// again), then the recorded corpora in their order.
    #[test]
    fn parse_as_is_equals_the_full_parse() {
        let origins = [
            "http://example.com",
            "https://example.com",
            "http://example.com:8080",
            "https://example.com:443",
            "http://127.0.0.1:8089",
            "http://10.0.0.1",
            "http://a-b.c.example",
            "http://0x7f.1",
            "http://1.2.3",
        ];
        let tails = [
            "",
            "/",
            "//",
            "//x/y",
            "/a/b.html",
            "/a/./b/../c",
            "/..",
            "/%2e%2E/x",
            "/a?",
            "/a?b=1&c",
            "/a?q#f",
            "/#",
            "/#frag",
            "?q",
            "#f",
            "/a;p?q",
            "/~user/%7e",
            "/a/b/",
            "/.",
            "/a/..",
            "/A/B?C=D#E",
        ];
        let mut checked = 0;
        for o in origins {
            for t in tails {
                let url = format!("{o}{t}");
                checked += usize::from(super::parses_as_is(&url));
                assert_parse_as_is(&url);
            }
        }
        assert!(checked > 100, "{checked} admitted");
        for s in corpus_strings() {
            assert_parse_as_is(&s);
        }
    }

    /// Every string of the recorded URL corpora (inputs and Scrapy's outputs), in
    /// the files' order.
    fn corpus_strings() -> Vec<String> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/urls");
        let mut out = Vec::new();
        for file in [
            "urls.json",
            "follow.json",
            "linkextract.json",
            "redirects.json",
        ] {
            let text = std::fs::read_to_string(format!("{dir}/{file}")).expect("corpus");
            let value: serde_json::Value = serde_json::from_str(&text).expect("json");
            let mut stack = vec![&value];
            while let Some(v) = stack.pop() {
                match v {
                    serde_json::Value::String(s) => out.push(s.clone()),
                    serde_json::Value::Array(a) => stack.extend(a),
                    serde_json::Value::Object(m) => stack.extend(m.values()),
                    _ => {}
                }
            }
        }
        out
    }

    #[test]
    fn already_safe_implies_identity() {
        let (mut strings, mut fast) = (0, 0);
        for s in corpus_strings() {
            strings += 1;
            fast += usize::from(already_safe(&s));
            check(&s);
            if super::parses_as_is(&s) {
                assert!(
                    url::Url::parse(&s).is_ok(),
                    "admitted but does not parse: {s}"
                );
            }
        }
        assert!(
            strings > 5000 && fast > 1000,
            "{strings} strings, {fast} fast"
        );
        // Generated: http(s) URLs of characters each part treats differently.
        let alphabet: Vec<char> = "aZ09.-:/?#%;@[]\\ '\"<>^`{|}~!$&()*+,=_\té"
            .chars()
            .collect();
        let mut next = crate::util::xorshift(0x9E37_79B9_7F4A_7C15);
        for _ in 0..200_000 {
            let mut url = String::from(if next().is_multiple_of(2) {
                "http://"
            } else {
                "https://"
            });
            for _ in 0..next() % 24 {
                let r = next();
                url.push(if r.is_multiple_of(3) {
                    'a'
                } else {
                    alphabet[(r as usize / 3) % alphabet.len()]
                });
            }
            check(&url);
        }
    }
}
