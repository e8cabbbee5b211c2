// RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir tests/fuzz html5ever_diff -- -timeout=2
//
// Differential: the fuzzer's bytes drive a generator of well-formed HTML (every element
// closed, no <a> inside <a>, only inline content inside <p> and <a>, no <noscript>, no
// NUL — the places where trawl gives lxml's answer on purpose are excluded by
// construction; DESIGN.md §15), with odd but valid tokens: attribute quoting styles,
// character references with and without `;`, comments, uppercase names, whitespace in
// tags. trawl and html5ever (`scraper`) must agree on every `a[href]` value, in order,
// and on the `<title>` text.
#![no_main]

use trawl::crawl::{Request, Response};
use trawl::proto::Headers;

struct Gen<'a> {
    data: &'a [u8],
    pos: usize,
    out: String,
    budget: usize,
}

const TEXTS: &[&str] = &[
    "word", " ", "a b", "&amp;", "&lt;", "&gt;", "&copy;", "&copy", "&#65;", "&#x42;",
    "&#x1F600;", "&nbsp;", "&notin;", "&not", "é", "ツ", "\n", "\t", "x=y", "&", "&#;",
    "&unknown;", "\"", "'",
];
const VALUES: &[&str] = &[
    "/p", "page.html", "http://example.com/x?a=1&b=2", "?q=&amp;", "#frag", "&amp;x",
    "a&copy=1", "a&copy;b", "&#47;s", " spaced ", "", "javascript:void(0)", "é/ツ",
    "x&lt;y", "mailto:a@b", "a&not=1",
];
const INLINE: &[&str] = &["span", "b", "i", "em", "STRONG", "code", "small"];
const BLOCK: &[&str] = &["div", "section", "article", "DIV", "blockquote"];

impl Gen<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    fn pick<'s>(&mut self, from: &[&'s str]) -> &'s str {
        from[usize::from(self.byte()) % from.len()]
    }

    fn done(&self) -> bool {
        self.pos >= self.data.len() || self.budget == 0
    }

    fn text(&mut self) {
        for _ in 0..1 + self.byte() % 4 {
            let t = self.pick(TEXTS);
            self.out.push_str(t);
        }
    }

    fn attr(&mut self, name: &str, value: &str) {
        let sep = if self.byte() % 3 == 0 { "  " } else { " " };
        self.out.push_str(sep);
        self.out.push_str(name);
        match self.byte() % 4 {
            0 if !value.is_empty()
                && !value.contains([' ', '"', '\'', '=', '<', '>', '`'])
                && !value.ends_with('/') =>
            {
                self.out.push('=');
                self.out.push_str(value);
            }
            1 if !value.contains('\'') => {
                self.out.push_str("='");
                self.out.push_str(value);
                self.out.push('\'');
            }
            2 => {
                self.out.push_str(" = \"");
                self.out.push_str(&value.replace('"', "&quot;"));
                self.out.push('"');
            }
            _ => {
                self.out.push_str("=\"");
                self.out.push_str(&value.replace('"', "&quot;"));
                self.out.push('"');
            }
        }
    }

    fn open(&mut self, name: &str) {
        self.out.push('<');
        self.out.push_str(name);
        if self.byte() % 4 == 0 {
            let v = self.pick(VALUES);
            self.attr("class", v);
        }
    }

    fn link(&mut self, depth: usize) {
        let open = if self.byte() % 2 == 0 { "<a" } else { "<A" };
        self.out.push_str(open);
        if self.byte() % 3 == 0 {
            self.attr("title", "t");
        }
        let v = self.pick(VALUES);
        let name = if self.byte() % 5 == 0 { "HREF" } else { "href" };
        self.attr(name, v);
        if self.byte() % 7 == 0 {
            // A duplicate attribute: the first one wins in both.
            self.attr("href", "/dup");
        }
        self.out.push('>');
        self.inline(depth + 1, false);
        self.out.push_str("</a>");
    }

    /// Inline content (inside <p>, <a> or inline elements); `links`: an <a> may start.
    fn inline(&mut self, depth: usize, links: bool) {
        let n = self.byte() % 4;
        for _ in 0..n {
            if self.done() || depth > 12 {
                return;
            }
            self.budget -= 1;
            match self.byte() % 5 {
                0 | 1 => self.text(),
                2 if links => self.link(depth),
                3 => {
                    let name = self.pick(INLINE);
                    self.open(name);
                    self.out.push('>');
                    self.inline(depth + 1, links);
                    self.out.push_str("</");
                    self.out.push_str(name);
                    self.out.push('>');
                }
                _ => self.out.push_str("<!-- c -->"),
            }
        }
    }

    /// Flow content (inside <body>, blocks, <li>).
    fn flow(&mut self, depth: usize) {
        while !self.done() && depth < 12 {
            self.budget -= 1;
            match self.byte() % 8 {
                0 => self.text(),
                1 => self.link(depth),
                2 => {
                    self.open("p");
                    self.out.push('>');
                    self.inline(depth + 1, true);
                    self.out.push_str("</p>");
                }
                3 | 4 => {
                    let name = self.pick(BLOCK);
                    self.open(name);
                    self.out.push('>');
                    self.flow(depth + 1);
                    self.out.push_str("</");
                    self.out.push_str(name);
                    self.out.push('>');
                }
                5 => {
                    self.out.push_str("<ul>");
                    for _ in 0..1 + self.byte() % 3 {
                        self.out.push_str("<li>");
                        self.flow(depth + 2);
                        self.out.push_str("</li>");
                    }
                    self.out.push_str("</ul>");
                }
                6 => self.out.push_str("<br><img src=\"/i.png\" alt=\"&amp;\"><!---->"),
                _ => return,
            }
        }
    }
}

fn html5ever_view(text: &str) -> (Vec<String>, String) {
    let doc = scraper::Html::parse_document(text);
    let (Ok(a), Ok(title)) = (
        scraper::Selector::parse("a[href]"),
        scraper::Selector::parse("title"),
    ) else {
        return (Vec::new(), String::new());
    };
    let hrefs = doc
        .select(&a)
        .filter_map(|e| e.value().attr("href").map(str::to_owned))
        .collect();
    let title = doc
        .select(&title)
        .next()
        .map(|t| t.text().collect::<String>())
        .unwrap_or_default();
    (hrefs, title)
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut g = Gen {
        data,
        pos: 0,
        out: String::from("<!DOCTYPE html><html><head><title>"),
        budget: 400,
    };
    g.text();
    g.out.push_str("</title></head><body>");
    g.flow(0);
    g.out.push_str("</body></html>");
    let html = g.out;

    let Ok(request) = Request::get("http://example.com/") else {
        return;
    };
    let mut headers = Headers::new();
    headers.append("Content-Type", "text/html; charset=utf-8");
    let response = Response::new(request, 200, headers, html.clone().into_bytes());
    let ours = response.css("a::attr(href)").getall();
    let our_title = response.css("title::text").get().unwrap_or_default();
    let (theirs, their_title) = html5ever_view(&html);
    assert_eq!(ours, theirs, "a[href] differ on:\n{html}");
    assert_eq!(our_title, their_title, "titles differ on:\n{html}");
});
