//! The crawl's hot path, per page, and the scheduler's memory per pending request.
//!
//! * HTML: trawl's own DOM (`trawl::html`) against `scraper` (html5ever + the same
//!   `selectors` crate) on the fixture site's pages — parse alone, then parse + the
//!   fixture spider's selections (`div.quote` → `span.text`, `small.author`, `a[href]`).
//! * Selection on a parsed page: parsel's API with CSS against the same answers with
//!   XPath.
//! * The fixture spider's whole callback (items + `LinkExtractor` + joins) on a
//!   `Response`, and the fingerprint + dupefilter cost per extracted link.
//!
//! (The scheduler's memory per request is `benches/scheduler_memory.rs`: it needs a
//! counting allocator, which would slow these down.)
//!
//! `cargo bench --bench crawl_hot` for the numbers; `cargo test --benches` smoke-runs it.

mod support;

use support::{bench, smoke};
use trawl::crawl::{Request, Response, Selection, Spider};
use trawl::html::{Document, Selector};
use trawl::proto::Headers;
use trawl::testing::Site;
use trawl::testing::spiders::FixtureSpider;

const BASE: &str = "http://127.0.0.1:8089";

fn pages(n: usize) -> Vec<(String, String)> {
    let site = Site::new(n, BASE);
    (0..n)
        .map(|i| (format!("{BASE}{}", Site::page_path(i)), site.render_page(i)))
        .collect()
}

/// Runs `f` over every page per iteration; returns µs per page.
fn per_page(name: &str, pages: &[(String, String)], mut f: impl FnMut(&str, &str) -> usize) {
    let n = pages.len() as f64;
    let ns = bench(name, 1, || {
        pages.iter().map(|(u, p)| f(u, p)).sum::<usize>()
    });
    println!("{:<60} {:>10.2} µs/page", "", ns / n / 1000.0);
}

fn html_benches() {
    let pages = pages(if smoke() { 50 } else { 2000 });
    let bytes: usize = pages.iter().map(|(_, p)| p.len()).sum();
    println!(
        "fixture: {} pages, mean {} B",
        pages.len(),
        bytes / pages.len()
    );

    let quote = Selector::parse("div.quote").expect("selector");
    let text = Selector::parse("span.text").expect("selector");
    let author = Selector::parse("small.author").expect("selector");
    let links = Selector::parse("a[href]").expect("selector");
    per_page("html/trawl: Document::parse", &pages, |_, p| {
        Document::parse(p).len()
    });
    per_page("html/trawl: parse + quotes + a[href]", &pages, |_, p| {
        let doc = Document::parse(p);
        let mut n = 0;
        for q in doc.select(&quote) {
            n += q.select(&text).len() + q.select(&author).len();
        }
        n + doc
            .select(&links)
            .iter()
            .filter_map(|a| a.attr("href"))
            .count()
    });

    let s_quote = scraper::Selector::parse("div.quote").expect("selector");
    let s_text = scraper::Selector::parse("span.text").expect("selector");
    let s_author = scraper::Selector::parse("small.author").expect("selector");
    let s_links = scraper::Selector::parse("a[href]").expect("selector");
    per_page(
        "html/scraper (html5ever): Html::parse_document",
        &pages,
        |_, p| scraper::Html::parse_document(p).tree.values().count(),
    );
    per_page("html/scraper: parse + quotes + a[href]", &pages, |_, p| {
        let doc = scraper::Html::parse_document(p);
        let mut n = 0;
        for q in doc.select(&s_quote) {
            n += q.select(&s_text).count() + q.select(&s_author).count();
        }
        n + doc
            .select(&s_links)
            .filter_map(|a| a.value().attr("href"))
            .count()
    });

    // Same answers from both, or the comparison means nothing.
    for (_, p) in pages.iter().take(50) {
        let doc = Document::parse(p);
        let ours: Vec<&str> = doc
            .select(&links)
            .iter()
            .filter_map(|a| a.attr("href"))
            .collect();
        let sdoc = scraper::Html::parse_document(p);
        let theirs: Vec<&str> = sdoc
            .select(&s_links)
            .filter_map(|a| a.value().attr("href"))
            .collect();
        assert_eq!(ours, theirs, "trawl and scraper disagree on a page's links");
    }

    // Selection on a parsed page, as a spider writes it: parsel's API with CSS, then
    // the same answers with XPath (compiled expressions cached, as CSS selectors are).
    let docs: Vec<Document> = pages.iter().map(|(_, p)| Document::parse(p)).collect();
    let by_css = |doc: &Document| {
        let page = Selection::of_document(doc);
        let mut out: Vec<Option<String>> = Vec::new();
        for q in page.css("div.quote") {
            out.push(q.css("span.text::text").get());
            out.push(q.css("small.author::text").get());
        }
        out.extend(page.css("a::attr(href)").getall().into_iter().map(Some));
        out
    };
    let by_xpath = |doc: &Document| {
        let page = Selection::of_document(doc);
        let mut out: Vec<Option<String>> = Vec::new();
        for q in page.xpath("//div[has-class('quote')]") {
            out.push(q.xpath("./span[has-class('text')]/text()").get());
            out.push(q.xpath(".//small[has-class('author')]/text()").get());
        }
        out.extend(page.xpath("//a/@href").getall().into_iter().map(Some));
        out
    };
    for doc in docs.iter().take(50) {
        assert_eq!(
            by_css(doc),
            by_xpath(doc),
            "CSS and XPath disagree on a page"
        );
    }
    let n_docs = docs.len() as f64;
    let css_ns = bench("select: CSS (quotes, authors, a::attr(href))", 1, || {
        docs.iter().map(|d| by_css(d).len()).sum::<usize>()
    });
    println!("{:<60} {:>10.2} µs/page", "", css_ns / n_docs / 1000.0);
    let xpath_ns = bench("select: XPath (the same answers)", 1, || {
        docs.iter().map(|d| by_xpath(d).len()).sum::<usize>()
    });
    println!(
        "{:<60} {:>10.2} µs/page ({:.2}× CSS)",
        "",
        xpath_ns / n_docs / 1000.0,
        xpath_ns / css_ns
    );

    let responses: Vec<Response> = pages
        .iter()
        .map(|(u, p)| {
            let req = Request::get(u).expect("fixture URL");
            Response::new(req, 200, Headers::new(), p.clone().into_bytes())
        })
        .collect();
    let mut spider = FixtureSpider::new(&format!("{BASE}/index.html"));
    let n = responses.len() as f64;
    let ns = bench("spider: FixtureSpider::parse (items + links)", 1, || {
        let mut outs = 0;
        for r in &responses {
            // A fresh Response each time, so the DOM cache does not carry over.
            let r = Response::new(r.request().clone(), 200, Headers::new(), r.body().to_vec());
            outs += spider.parse(&r).map(|o| o.len()).unwrap_or(0);
        }
        outs
    });
    println!("{:<60} {:>10.2} µs/page", "", ns / n / 1000.0);

    let mut reqs = Vec::new();
    for r in &responses {
        if let Ok(out) = spider.parse(r) {
            for o in out {
                if let trawl::crawl::Output::Request(req) = o {
                    reqs.push(req);
                }
            }
        }
    }
    let opts = trawl::crawl::fingerprint::FingerprintOptions::default();
    let per_link = bench("fingerprint: per extracted link", 1, || {
        reqs.iter()
            .map(|r| trawl::crawl::fingerprint::fingerprint(r, &opts)[0] as usize)
            .sum::<usize>()
    }) / reqs.len() as f64;
    println!(
        "{:<60} {:>10.1} ns/link ({} links, {:.1}/page)",
        "",
        per_link,
        reqs.len(),
        reqs.len() as f64 / n
    );
}

fn main() {
    html_benches();
}
