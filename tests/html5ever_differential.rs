//! Differential test against html5ever (the `scraper` dev-dependency): on every page of
//! the HTML corpus (`tests/data/html/`, Scrapy's link-extractor samples and 64 pages of
//! nasty markup and charsets), trawl's DOM and html5ever's must agree on the `a[href]`
//! values, in order, and the `<title>` text — except where trawl follows libxml2 (what
//! Scrapy users get from lxml) on purpose, listed in `LXML_LIKE` with the reason and in
//! DESIGN.md §15.

use serde_json::Value;
use trawl::crawl::{Request, Response};
use trawl::proto::Headers;

/// Pages where trawl's answer is lxml's, not html5ever's (checked: `tests/html_lxml.rs`).
const LXML_LIKE: &[(&str, &str)] = &[
    (
        "pages/custom/in_noscript.html",
        "html5ever parses <noscript> as raw text (scripting on); lxml parses its links",
    ),
    (
        "pages/custom/selfclose_then_p.html",
        "html5ever's adoption agency clones an unclosed <a> into the next block; lxml does not",
    ),
    (
        "pages/custom/a_across_blocks.html",
        "html5ever reopens an unclosed <a> in each following block (cloned hrefs)",
    ),
    (
        "pages/custom/a_unclosed.html",
        "html5ever clones an unclosed <a> when a block starts inside it",
    ),
    (
        "pages/custom/nul_bytes.html",
        "NUL in markup: html5ever keeps U+FFFD in the value and drops a tag lxml keeps",
    ),
];

fn html5ever_view(text: &str) -> (Vec<String>, Option<String>) {
    let doc = scraper::Html::parse_document(text);
    let a = scraper::Selector::parse("a[href]").expect("selector");
    let title = scraper::Selector::parse("title").expect("selector");
    let hrefs = doc
        .select(&a)
        .filter_map(|e| e.value().attr("href").map(str::to_owned))
        .collect();
    let title = doc
        .select(&title)
        .next()
        .map(|t| t.text().collect::<String>());
    (hrefs, title)
}

#[test]
fn trawl_and_html5ever_see_the_same_links_and_titles() {
    let data: Value =
        serde_json::from_str(include_str!("data/html/links.json")).expect("links.json");
    let cases = data["cases"].as_array().expect("cases");
    assert!(cases.len() >= 60);
    let mut differ = Vec::new();
    for case in cases {
        let page = case["page"].as_str().expect("page");
        let path = format!("{}/tests/data/html/{page}", env!("CARGO_MANIFEST_DIR"));
        let body = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let req = Request::get(case["url"].as_str().expect("url")).expect("url");
        let mut headers = Headers::new();
        if let Some(ct) = case["content_type"].as_str() {
            headers.append("Content-Type", ct);
        }
        let r = Response::new(req, 200, headers, body);
        let ours_hrefs = r.css("a::attr(href)").getall();
        let ours_title = r.css("title::text").get();
        let (theirs_hrefs, theirs_title) = html5ever_view(r.text());
        let listed = LXML_LIKE.iter().any(|(p, _)| *p == page);
        let same = ours_hrefs == theirs_hrefs
            && ours_title.as_deref().unwrap_or("") == theirs_title.as_deref().unwrap_or("");
        if same && listed {
            differ.push(format!("{page}: listed in LXML_LIKE but now the same"));
        }
        if !same && !listed {
            differ.push(format!(
                "{page}:\n  trawl     {ours_hrefs:?} {ours_title:?}\n  html5ever {theirs_hrefs:?} {theirs_title:?}"
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{} pages differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
}
