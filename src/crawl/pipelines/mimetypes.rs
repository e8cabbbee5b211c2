//! Python's `mimetypes.guess_type` / `guess_extension` on its built-in tables, and the
//! `pathlib` / `posixpath` / `urlparse` pieces Scrapy's `FilesPipeline.file_path` names
//! a file with. The tables are generated from Python (`mimetypes_table.rs`).

use super::mimetypes_table::{ENCODINGS_MAP, EXTENSIONS, SUFFIX_MAP, TYPES_MAP};

fn lookup<'a>(table: &'a [(&str, &'a str)], key: &str) -> Option<&'a str> {
    table.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

/// Whether `ext` is a key of `mimetypes.types_map` (case-sensitive).
pub fn in_types_map(ext: &str) -> bool {
    lookup(TYPES_MAP, ext).is_some()
}

/// `mimetypes.guess_extension(type)`.
pub fn guess_extension(mime: &str) -> Option<&'static str> {
    lookup(EXTENSIONS, &mime.to_ascii_lowercase()).filter(|e| !e.is_empty())
}

/// `posixpath.splitext`: the extension is from the last dot of the last component,
/// leading dots of the component excluded.
pub fn splitext(p: &str) -> (&str, &str) {
    let sep = p.rfind('/').map_or(0, |i| i + 1);
    let Some(dot) = p.rfind('.').filter(|&d| d >= sep) else {
        return (p, "");
    };
    if p[sep..dot].bytes().any(|b| b != b'.') {
        (&p[..dot], &p[dot..])
    } else {
        (p, "")
    }
}

/// `mimetypes.guess_type(url)[0]` (strict).
pub fn guess_type(url: &str) -> Option<String> {
    // urllib.parse._splittype: `([^/:]+):(.*)`.
    let (scheme, rest) = match url.find(':') {
        Some(i) if i > 0 && !url[..i].contains('/') => {
            (Some(url[..i].to_ascii_lowercase()), &url[i + 1..])
        }
        _ => (None, url),
    };
    if scheme.as_deref() == Some("data") {
        let comma = rest.find(',')?;
        let head = &rest[..comma];
        let t = head.find(';').map_or(head, |s| &head[..s]);
        return Some(if t.contains('=') || !t.contains('/') {
            "text/plain".to_owned()
        } else {
            t.to_owned()
        });
    }
    let split = |p: &str| {
        let (b, e) = splitext(p);
        (b.to_owned(), e.to_owned())
    };
    let (mut base, mut ext) = split(rest);
    // The suffix map rewrites `.tgz` as `.tar.gz`; its values end in an encoding
    // suffix, so the loop ends (a bound guards a table that would not).
    for _ in 0..16 {
        let Some(to) = lookup(SUFFIX_MAP, &ext.to_lowercase()) else {
            break;
        };
        (base, ext) = split(&format!("{base}{to}"));
    }
    if lookup(ENCODINGS_MAP, &ext).is_some() {
        (_, ext) = split(&base);
    }
    lookup(TYPES_MAP, &ext.to_lowercase()).map(str::to_owned)
}

/// `pathlib.PurePosixPath(p).suffix`: of the last non-empty, non-`.` component, from
/// its last dot, unless the dot is first or last.
pub fn path_suffix(p: &str) -> &str {
    let name = p
        .split('/')
        .rfind(|c| !c.is_empty() && *c != ".")
        .unwrap_or("");
    match name.rfind('.') {
        Some(i) if i > 0 && i < name.len() - 1 => &name[i..],
        _ => "",
    }
}

/// The `path` of Python's `urlparse(url)`: after the scheme and the authority, before
/// `;params`, `?query` and `#fragment`.
pub fn urlparse_path(url: &str) -> &str {
    let mut rest = url;
    if let Some(i) = rest.find(':') {
        let scheme = &rest[..i];
        if !scheme.is_empty()
            && scheme.as_bytes()[0].is_ascii_alphabetic()
            && scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
        {
            rest = &rest[i + 1..];
        }
    }
    if let Some(after) = rest.strip_prefix("//") {
        let end = after.find(['/', '?', '#']).unwrap_or(after.len());
        rest = &after[end..];
    }
    let rest = &rest[..rest.find('#').unwrap_or(rest.len())];
    let rest = &rest[..rest.find('?').unwrap_or(rest.len())];
    let last = rest.rfind('/').map_or(0, |i| i + 1);
    match rest[last..].find(';') {
        Some(i) => &rest[..last + i],
        None => rest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_as_python() {
        assert_eq!(splitext("a/b.tar.gz"), ("a/b.tar", ".gz"));
        assert_eq!(splitext("a/.bashrc"), ("a/.bashrc", ""));
        assert_eq!(splitext("a.b/c"), ("a.b/c", ""));
        assert_eq!(path_suffix("http://example.com/"), ".com");
        assert_eq!(path_suffix("/trailing."), "");
        assert_eq!(urlparse_path("http://h/a.txt;p?q#f"), "/a.txt");
        assert_eq!(
            guess_type("http://h/a.tar.gz").as_deref(),
            Some("application/x-tar")
        );
        assert_eq!(
            guess_type("http://h/a.tgz").as_deref(),
            Some("application/x-tar")
        );
        assert_eq!(
            guess_type("data:image/png;base64,xx").as_deref(),
            Some("image/png")
        );
    }
}
