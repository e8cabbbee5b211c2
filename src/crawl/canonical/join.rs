//! CPython 3.11's `urllib.parse.urljoin` (with the `urlparse` / `urlunparse` it rests
//! on), as Scrapy's `response.urljoin` uses it — RFC 3986 resolution with Python's
//! quirks (empty segments dropped in relative paths, `..` above the root ignored, the
//! base's query kept for a fragment-only reference). No normalisation: that is
//! `safe_url_string`'s job when a `Request` is built.

use super::Reason;

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

/// `urlparse`'s six parts.
struct Parsed {
    scheme: String,
    netloc: String,
    path: String,
    params: String,
    query: String,
    fragment: String,
}

fn scheme_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')
}

/// `urlsplit(url, default_scheme)` then `_splitparams` (3.11.7).
fn urlparse(url: &str, default_scheme: &str) -> Result<Parsed, Reason> {
    // Leading C0 controls and spaces go; tabs and newlines go everywhere.
    let url = url.trim_start_matches(|c: char| c <= ' ');
    let url: String = url
        .chars()
        .filter(|c| !matches!(c, '\t' | '\r' | '\n'))
        .collect();
    let mut scheme = default_scheme
        .trim_matches(|c: char| c <= ' ')
        .replace(['\t', '\r', '\n'], "");
    let mut rest = url.as_str();
    if let Some(i) = rest.find(':')
        && i > 0
        && rest.as_bytes()[0].is_ascii_alphabetic()
        && rest[..i].chars().all(scheme_char)
    {
        scheme = rest[..i].to_ascii_lowercase();
        rest = &rest[i + 1..];
    }
    let mut netloc = "";
    if let Some(after) = rest.strip_prefix("//") {
        let end = after.find(['/', '?', '#']).unwrap_or(after.len());
        netloc = &after[..end];
        rest = &after[end..];
        if netloc.contains('[') != netloc.contains(']') {
            return Err("ValueError: Invalid IPv6 URL");
        }
    }
    let (rest, fragment) = match rest.split_once('#') {
        Some((r, f)) => (r, f),
        None => (rest, ""),
    };
    let (path, query) = match rest.split_once('?') {
        Some((p, q)) => (p, q),
        None => (rest, ""),
    };
    let (path, params) = if USES_PARAMS.contains(&scheme.as_str()) && path.contains(';') {
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
        netloc: netloc.to_owned(),
        path: path.to_owned(),
        params: params.to_owned(),
        query: query.to_owned(),
        fragment: fragment.to_owned(),
    })
}

/// `urlunparse` (3.11: `urlunsplit` adds `//` for a netloc-using scheme).
fn urlunparse(p: &Parsed) -> String {
    let mut url = p.path.clone();
    if !p.params.is_empty() {
        url = format!("{url};{}", p.params);
    }
    if !p.netloc.is_empty()
        || (!p.scheme.is_empty()
            && USES_NETLOC.contains(&p.scheme.as_str())
            && !url.starts_with("//"))
    {
        if !url.is_empty() && !url.starts_with('/') {
            url.insert(0, '/');
        }
        url = format!("//{}{url}", p.netloc);
    }
    if !p.scheme.is_empty() {
        url = format!("{}:{url}", p.scheme);
    }
    if !p.query.is_empty() {
        url = format!("{url}?{}", p.query);
    }
    if !p.fragment.is_empty() {
        url = format!("{url}#{}", p.fragment);
    }
    url
}

/// CPython 3.11's `urllib.parse.urljoin(base, url)`.
///
/// # Errors
///
/// `ValueError: Invalid IPv6 URL` for an authority with unbalanced brackets.
pub fn urljoin(base: &str, url: &str) -> Result<String, Reason> {
    if base.is_empty() {
        return Ok(url.to_owned());
    }
    if url.is_empty() {
        return Ok(base.to_owned());
    }
    let b = urlparse(base, "")?;
    let mut u = urlparse(url, &b.scheme)?;
    if u.scheme != b.scheme || !USES_RELATIVE.contains(&u.scheme.as_str()) {
        return Ok(url.to_owned());
    }
    if USES_NETLOC.contains(&u.scheme.as_str()) {
        if !u.netloc.is_empty() {
            return Ok(urlunparse(&u));
        }
        u.netloc = b.netloc.clone();
    }
    if u.path.is_empty() && u.params.is_empty() {
        u.path = b.path.clone();
        u.params = b.params.clone();
        if u.query.is_empty() {
            u.query = b.query.clone();
        }
        return Ok(urlunparse(&u));
    }
    let mut base_parts: Vec<&str> = b.path.split('/').collect();
    if base_parts.last().is_some_and(|s| !s.is_empty()) {
        base_parts.pop();
    }
    let segments: Vec<&str> = if u.path.starts_with('/') {
        u.path.split('/').collect()
    } else {
        let mut all: Vec<&str> = base_parts;
        all.extend(u.path.split('/'));
        // segments[1:-1] = filter(None, segments[1:-1])
        if all.len() > 2 {
            let last = all.len() - 1;
            let mut kept = vec![all[0]];
            kept.extend(all[1..last].iter().copied().filter(|s| !s.is_empty()));
            kept.push(all[last]);
            all = kept;
        }
        all
    };
    let mut resolved: Vec<&str> = Vec::with_capacity(segments.len());
    for seg in &segments {
        match *seg {
            ".." => {
                resolved.pop();
            }
            "." => {}
            s => resolved.push(s),
        }
    }
    if segments.last().is_some_and(|s| *s == "." || *s == "..") {
        resolved.push("");
    }
    let joined = resolved.join("/");
    u.path = if joined.is_empty() {
        "/".to_owned()
    } else {
        joined
    };
    Ok(urlunparse(&u))
}
