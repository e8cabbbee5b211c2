//! The fixture server's route table (see the table in `fixture.rs`'s docs): what each
//! path answers, as a [`Reply`] the server then writes.

use std::rc::Rc;

use super::fixture::Shared;
use super::reply::{Reply, Req, compress, html, redirect, set_cookies, text};
use super::site::Site;

impl Shared {
    pub(super) fn route(&self, req: &Req) -> Reply {
        let path = req.path.as_str();
        let site = &self.site;
        if path == "/" || path == "/index.html" {
            return html(200, site.render_index());
        }
        if let Some(i) = site.page_number(path) {
            return html(200, site.render_page(i));
        }
        if let Some(reply) = super::login::route(req, path, site) {
            return reply;
        }
        if let Some(reply) = path
            .strip_prefix("/media/")
            .and_then(|rest| super::media::route(req, rest))
        {
            return reply;
        }
        let mut parts = path.trim_start_matches('/').splitn(3, '/');
        let first = parts.next().unwrap_or("");
        let second = parts.next().unwrap_or("");
        match first {
            "robots.txt" => match &self.robots {
                None => text(200, site.robots()),
                Some((0, _)) => Reply::Reset,
                Some((status, body)) => text(*status, body.clone()),
            },
            "feeds" if second == "products.xml" => Reply::Full {
                status: 200,
                headers: vec![("Content-Type".into(), "application/xml".into())],
                body: site.products_xml().into_bytes(),
                close: false,
            },
            "feeds" if second == "quotes.rss" || second == "quotes.atom" => Reply::Full {
                status: 200,
                headers: vec![(
                    "Content-Type".into(),
                    if second == "quotes.rss" {
                        "application/rss+xml".into()
                    } else {
                        "application/atom+xml".into()
                    },
                )],
                body: if second == "quotes.rss" {
                    site.quotes_rss()
                } else {
                    site.quotes_atom()
                }
                .into_bytes(),
                close: false,
            },
            "feeds" if second == "quotes.csv" => Reply::Full {
                status: 200,
                headers: vec![("Content-Type".into(), "text/csv; charset=utf-8".into())],
                body: site.quotes_csv().into_bytes(),
                close: false,
            },
            "sitemap.xml" => Reply::Full {
                status: 200,
                headers: vec![("Content-Type".into(), "application/xml".into())],
                body: site.sitemap().into_bytes(),
                close: false,
            },
            "sitemap.xml.gz" => match compress("gzip", site.sitemap().as_bytes()) {
                Ok(body) => Reply::Full {
                    status: 200,
                    headers: vec![("Content-Type".into(), "application/x-gzip".into())],
                    body,
                    close: false,
                },
                Err(e) => text(500, e.to_string()),
            },
            "sitemap-index.xml" => Reply::Full {
                status: 200,
                headers: vec![("Content-Type".into(), "application/xml".into())],
                body: format!(
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n\
                     <sitemap><loc>{0}/sitemap.xml</loc></sitemap>\n<sitemap><loc>{0}/sitemap.xml.gz</loc></sitemap>\n</sitemapindex>\n",
                    site.base
                )
                .into_bytes(),
                close: false,
            },
            "page" => match second.parse::<usize>().ok().and_then(|n| site.render_list_page(n)) {
                Some(body) => html(200, body),
                None => html(404, "<h1>No quotes found!</h1>".into()),
            },
            "author" => match site.render_author(second) {
                Some(body) => html(200, body),
                None => html(404, "<h1>Unknown author</h1>".into()),
            },
            "status" => {
                let code = second.parse().unwrap_or(500);
                text(code, format!("status {code}\n"))
            }
            "redirect" => {
                let code = second.parse().unwrap_or(302);
                let to = req.param("to").map_or_else(|| Site::page_path(0), str::to_owned);
                redirect(code, &to)
            }
            "redirect-chain" => match second.parse::<u32>().unwrap_or(0) {
                0 => html(200, site.render_page(0)),
                n => redirect(302, &format!("/redirect-chain/{}", n - 1)),
            },
            "redirect-loop" => redirect(302, "/redirect-loop"),
            "delay" => {
                let ms = second.parse().unwrap_or(100);
                Reply::Delay(ms, Box::new(html(200, site.render_page(1))))
            }
            "gzip" | "deflate" | "deflate-raw" | "br" | "zstd" => {
                let body = site.render_page(2);
                match compress(first, body.as_bytes()) {
                    Ok(encoded) => Reply::Full {
                        status: 200,
                        headers: vec![
                            ("Content-Type".into(), "text/html; charset=utf-8".into()),
                            (
                                "Content-Encoding".into(),
                                if first == "deflate-raw" { "deflate".into() } else { first.to_owned() },
                            ),
                        ],
                        body: encoded,
                        close: false,
                    },
                    Err(e) => text(500, e.to_string()),
                }
            }
            "chunked" => {
                let body = site.render_page(3).into_bytes();
                let n = req.param_u64("n", 5).clamp(1, 1000) as usize;
                let size = body.len().div_ceil(n).max(1);
                Reply::Chunked {
                    status: 200,
                    headers: vec![("Content-Type".into(), "text/html; charset=utf-8".into())],
                    chunks: body.chunks(size).map(<[u8]>::to_vec).collect(),
                }
            }
            "cut" => {
                let mut raw = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n".to_vec();
                raw.extend(std::iter::repeat_n(b'x', 100));
                Reply::Raw(raw)
            }
            "reset" => Reply::Reset,
            "hostile" => super::hostile::reply(second)
                .unwrap_or_else(|| html(404, "<h1>No such hostile route</h1>".into())),
            "close" => Reply::Full {
                status: 200,
                headers: vec![("Content-Type".into(), "text/plain".into())],
                body: b"closing after this".to_vec(),
                close: true,
            },
            "http10" => {
                let mut raw = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n".to_vec();
                raw.extend_from_slice(b"an HTTP/1.0 body delimited by the connection closing");
                Reply::Raw(raw)
            }
            "drip" => {
                let bytes = req.param_u64("bytes", 10).min(10_000);
                let ms = req.param_u64("ms", 100);
                Reply::Drip {
                    head: format!("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {bytes}\r\n\r\n").into_bytes(),
                    bytes,
                    interval_ms: ms,
                }
            }
            "big" => {
                let size = req.param_u64("size", 1 << 20).min(1 << 31) as usize;
                Reply::Full {
                    status: 200,
                    headers: vec![("Content-Type".into(), "application/octet-stream".into())],
                    body: vec![b'b'; size],
                    close: false,
                }
            }
            "big-chunked" => {
                let size = req.param_u64("size", 1 << 20).min(1 << 31) as usize;
                let chunk = vec![b'c'; 64 * 1024];
                let mut chunks = vec![chunk; size / (64 * 1024)];
                if !size.is_multiple_of(64 * 1024) {
                    chunks.push(vec![b'c'; size % (64 * 1024)]);
                }
                Reply::Chunked {
                    status: 200,
                    headers: vec![("Content-Type".into(), "application/octet-stream".into())],
                    chunks,
                }
            }
            "bomb" => {
                let size = req.param_u64("size", 100_000_000).min(4 << 30);
                let encoding = match second {
                    "gzip" | "deflate" | "deflate-raw" | "br" | "zstd" => second,
                    _ => "gzip",
                };
                let key = (encoding.to_owned(), size);
                let cached = self.bombs.borrow().get(&key).cloned();
                let body = match cached {
                    Some(b) => b,
                    None => {
                        let zeros = vec![0u8; size as usize];
                        match compress(encoding, &zeros) {
                            Ok(b) => {
                                let b = Rc::new(b);
                                self.bombs.borrow_mut().insert(key, b.clone());
                                b
                            }
                            Err(e) => return text(500, e.to_string()),
                        }
                    }
                };
                Reply::Full {
                    status: 200,
                    headers: vec![
                        ("Content-Type".into(), "text/html".into()),
                        (
                            "Content-Encoding".into(),
                            if encoding == "deflate-raw" { "deflate".into() } else { encoding.to_owned() },
                        ),
                    ],
                    body: (*body).clone(),
                    close: false,
                }
            }
            "set-cookie" => set_cookies(
                req.query
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect(),
            ),
            "set-cookie-raw" => set_cookies(
                req.query
                    .iter()
                    .filter(|(k, _)| k == "c")
                    .map(|(_, v)| v.clone())
                    .collect(),
            ),
            "links" => {
                let mut body = String::from("<html><head><title>links</title></head><body>\n");
                for (k, v) in &req.query {
                    if k == "to" {
                        let v = v.replace('&', "&amp;").replace('"', "&quot;");
                        body.push_str(&format!("<a href=\"{v}\">{v}</a>\n"));
                    }
                }
                body.push_str("</body></html>\n");
                let mut headers = vec![("Content-Type".to_owned(), "text/html; charset=utf-8".to_owned())];
                if let Some(p) = req.param("policy") {
                    headers.push(("Referrer-Policy".into(), p.to_owned()));
                }
                Reply::Full {
                    status: 200,
                    headers,
                    body: body.into_bytes(),
                    close: false,
                }
            }
            // The client's address as the server sees it (`bindaddress` tests).
            "peer" => text(
                200,
                req.peer.map_or_else(String::new, |p| p.to_string()),
            ),
            "echo" => {
                let mut out = format!("{} {}\n", req.method, req.target);
                for (k, v) in &req.headers {
                    out.push_str(&format!("{k}: {v}\n"));
                }
                out.push('\n');
                out.push_str(&String::from_utf8_lossy(&req.body));
                text(200, out)
            }
            "flaky" => {
                let failures: u32 = second.parse().unwrap_or(1);
                let key = req.param("key").unwrap_or("default").to_owned();
                let mut flaky = self.flaky.borrow_mut();
                let seen = flaky.entry(key).or_insert(0);
                *seen += 1;
                if *seen <= failures {
                    text(503, "try again later\n")
                } else {
                    html(200, site.render_page(4))
                }
            }
            "api" if second == "quotes" => api_quotes(req, site),
            "api" if second == "authors" => {
                let slug = parts.next().unwrap_or("").trim_end_matches('/');
                match site.author_details(slug) {
                    Some((name, born)) => json_reply(
                        200,
                        &serde_json::json!({"name": name, "slug": slug, "born": born}),
                    ),
                    None => json_reply(404, &serde_json::json!({"error": "no such author"})),
                }
            }
            "meta-refresh" => {
                let to = req.param("to").unwrap_or("/index.html");
                let delay = req.param("delay").unwrap_or("0");
                html(
                    200,
                    format!("<html><head><meta http-equiv=\"refresh\" content=\"{delay}; url={to}\"></head><body>refresh</body></html>"),
                )
            }
            _ => html(404, "<h1>Not Found</h1>".into()),
        }
    }
}

/// `/api/quotes`: a JSON API over the tutorial's quote pages. `GET ?page=N`, or `POST`
/// with `Content-Type: application/json` and a body `{"page": N}` (what a
/// `JsonRequest` sends); answers `{"page", "quotes": [{"text", "author", "tags"}],
/// "has_next"}`. A POST without the JSON content type is 415, a bad body 400.
fn api_quotes(req: &Req, site: &Site) -> Reply {
    let page = if req.method == "POST" {
        let json_type = req
            .header("content-type")
            .is_some_and(|v| v.starts_with("application/json"));
        if !json_type {
            return text(415, "expected application/json\n");
        }
        match serde_json::from_slice::<serde_json::Value>(&req.body) {
            Ok(v) => v["page"].as_u64().unwrap_or(1),
            Err(e) => return text(400, format!("bad JSON body: {e}\n")),
        }
    } else {
        req.param("page").and_then(|p| p.parse().ok()).unwrap_or(1)
    };
    let n = usize::try_from(page).unwrap_or(0);
    if n == 0 || n > site.quote_list_pages() {
        return json_reply(404, &serde_json::json!({"error": "no such page"}));
    }
    let quotes: Vec<serde_json::Value> = site
        .list_quotes(n)
        .into_iter()
        .map(|q| serde_json::json!({"text": q.text, "author": q.author, "tags": q.tags}))
        .collect();
    json_reply(
        200,
        &serde_json::json!({"page": n, "quotes": quotes, "has_next": n < site.quote_list_pages()}),
    )
}

fn json_reply(status: u16, value: &serde_json::Value) -> Reply {
    Reply::Full {
        status,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: value.to_string().into_bytes(),
        close: false,
    }
}
