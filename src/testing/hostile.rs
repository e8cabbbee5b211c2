//! The fixture server's hostile routes, `/hostile/<name>`: one named fault each, for the
//! mixed-crawl reliability test (healthy pages and every fault in one crawl) and for
//! trying trawl by hand (`trawl serve`, then `trawl fetch .../hostile/nested`).

use super::reply::Reply;

/// Every hostile route name, with what it does and what a crawler should make of it.
pub const HOSTILE_ROUTES: &[(&str, &str)] = &[
    (
        "stacked-codings",
        "Content-Encoding: gzip × 12,000 (a 60 KB header)",
    ),
    ("bad-chunk", "a chunked body whose chunk size is not hex"),
    ("huge-header", "a 1 MB header line"),
    ("many-headers", "10,000 header lines"),
    ("status-000", "status code 000"),
    (
        "content-length-lie",
        "announces 100,000 bytes, sends 10, closes",
    ),
    ("nested", "100,000 nested, unclosed <div>s (HTML)"),
    ("entities", "`&` + 200,000 letters (HTML)"),
    ("attributes", "one tag with 50,000 attributes (HTML)"),
    ("one-line", "4 MB of text on one line (HTML)"),
    ("bad-utf8", "declared UTF-8, full of invalid bytes (HTML)"),
    ("exotic-charset", "an unknown charset label (HTML)"),
    ("silent", "accepts the request and never answers"),
];

fn raw(head: &str, body: &[u8]) -> Reply {
    let mut bytes = head.as_bytes().to_vec();
    bytes.extend_from_slice(body);
    Reply::Raw(bytes)
}

fn page(content_type: &str, body: Vec<u8>) -> Reply {
    Reply::Full {
        status: 200,
        headers: vec![("Content-Type".into(), content_type.into())],
        body,
        close: false,
    }
}

/// The reply of `/hostile/<name>`, if there is such a route.
pub(super) fn reply(name: &str) -> Option<Reply> {
    Some(match name {
        "stacked-codings" => {
            let codings = vec!["gzip"; 12_000].join(",");
            raw(
                &format!(
                    "HTTP/1.1 200 OK\r\nContent-Encoding: {codings}\r\nContent-Length: 7\r\n\r\n"
                ),
                b"abcdefg",
            )
        }
        "bad-chunk" => raw(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"zz\r\nnot a chunk\r\n0\r\n\r\n",
        ),
        "huge-header" => raw(
            &format!("HTTP/1.1 200 OK\r\nX-Huge: {}\r\n\r\n", "h".repeat(1 << 20)),
            b"",
        ),
        "many-headers" => {
            let headers: String = (0..10_000).map(|i| format!("X-H{i}: v\r\n")).collect();
            raw(
                &format!("HTTP/1.1 200 OK\r\n{headers}Content-Length: 2\r\n\r\n"),
                b"ok",
            )
        }
        "status-000" => raw("HTTP/1.1 000 OK\r\nContent-Length: 5\r\n\r\n", b"hello"),
        "content-length-lie" => raw(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n",
            b"<p>short</p>",
        ),
        "nested" => page(
            "text/html; charset=utf-8",
            format!(
                "<html><body>{}<a href=\"/s/000/00001.html\">x</a>",
                "<div>".repeat(100_000)
            )
            .into_bytes(),
        ),
        "entities" => page(
            "text/html; charset=utf-8",
            format!("<html><body><p>&{}</p>", "a".repeat(200_000)).into_bytes(),
        ),
        "attributes" => {
            let attrs: String = (0..50_000).map(|i| format!(" a{i}=\"{i}\"")).collect();
            page(
                "text/html; charset=utf-8",
                format!("<html><body><div{attrs}>x</div>").into_bytes(),
            )
        }
        "one-line" => page(
            "text/html; charset=utf-8",
            format!("<html><body><p>{}</p>", "word ".repeat(800_000)).into_bytes(),
        ),
        "bad-utf8" => {
            let mut body = b"<html><head><title>bad \xff\xfe utf-8</title></head><body>".to_vec();
            body.extend(
                std::iter::repeat_n(&b"\xc3\x28\xa0\xa1\xf0\x28\x8c\x28"[..], 20_000).flatten(),
            );
            page("text/html; charset=utf-8", body)
        }
        "exotic-charset" => page(
            "text/html; charset=x-no-such-charset",
            b"<html><head><title>exotic</title></head><body>\xe9t\xe9</body></html>".to_vec(),
        ),
        "silent" => Reply::Delay(
            3_600_000,
            Box::new(raw("HTTP/1.1 204 No Content\r\n\r\n", b"")),
        ),
        _ => return None,
    })
}
