//! The fixture site's media section, for the files pipeline: `/media/index.html` lists
//! items (`<div class="item">` with a name and links to files), and `/media/files/NAME`
//! serves each file's bytes — a duplicate link across and within items, a redirect to a
//! file (`/media/redirect/NAME`), a 404, an empty file, a name without an extension and
//! one with a query.

use super::reply::{Reply, Req, html, redirect};

/// The items of `/media/index.html`: a name and the paths its file links point to.
pub const ITEMS: &[(&str, &[&str])] = &[
    (
        "report",
        &["/media/files/report.pdf", "/media/files/data.csv"],
    ),
    (
        "duplicates",
        &[
            "/media/files/report.pdf",
            "/media/files/photo.jpg",
            "/media/files/photo.jpg",
        ],
    ),
    ("redirected", &["/media/redirect/moved.pdf"]),
    (
        "missing",
        &["/media/files/missing.pdf", "/media/files/notes.txt"],
    ),
    ("empty", &["/media/files/empty.bin"]),
    (
        "no-extension",
        &["/media/files/download?id=7", "/media/files/archive.tar.gz"],
    ),
    ("none", &[]),
];

/// The bytes of file `name` (deterministic; `None`: a 404).
pub fn file_body(name: &str) -> Option<Vec<u8>> {
    match name {
        "missing.pdf" => None,
        "empty.bin" => Some(Vec::new()),
        _ => {
            let line = format!("fixture file {name}\n");
            let times = 1 + name.len() * 37;
            Some(line.repeat(times).into_bytes())
        }
    }
}

/// The page listing [`ITEMS`].
pub fn index() -> String {
    let mut out = String::from("<html><head><title>Media</title></head><body>\n");
    for (name, links) in ITEMS {
        out.push_str(&format!("<div class=\"item\"><h2>{name}</h2>\n"));
        for l in *links {
            out.push_str(&format!("  <a class=\"file\" href=\"{l}\">{l}</a>\n"));
        }
        out.push_str("</div>\n");
    }
    out.push_str("</body></html>\n");
    out
}

/// Answers a path under `/media/` (`rest` is after `/media/`), or `None`.
pub(super) fn route(req: &Req, rest: &str) -> Option<Reply> {
    if rest == "index.html" {
        return Some(html(200, index()));
    }
    if let Some(name) = rest.strip_prefix("redirect/") {
        return Some(redirect(302, &format!("/media/files/{name}")));
    }
    let name = rest.strip_prefix("files/")?;
    let name = if req.query.is_empty() {
        name.to_owned()
    } else {
        let q: Vec<String> = req.query.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{name}?{}", q.join("&"))
    };
    Some(match file_body(&name) {
        Some(body) => Reply::Full {
            status: 200,
            headers: vec![("Content-Type".into(), "application/octet-stream".into())],
            body,
            close: false,
        },
        None => html(404, "<h1>Not Found</h1>".into()),
    })
}
