//! Hostile pages must parse in linear time: regressions for the pages that froze the
//! reactor for seconds to minutes (deep unclosed nesting, long entity runs, thousands
//! of attributes on one tag, stray end tags under a deep stack, a million comments).
//!
//! Time is not measured here (benches/html_adversarial.rs does that); the parser's
//! work counter ([`ParseStats::steps`]: tokens, open-stack pops and checks, attribute
//! comparisons, entity-table lookups) is, and it must stay within a small constant
//! times the input length — for the DOM and for the DOM-free link scanner. Before the
//! fix each of these inputs cost work quadratic in its size (the open-element stack was
//! scanned per tag, duplicate attributes were found by a scan per attribute, entity
//! names were tried at every prefix length).

use trawl::html::{Document, MAX_ATTRIBUTES, MAX_DEPTH, ParseStats, Selector, scan_links};

/// Work allowed per input byte.
const PER_BYTE: u64 = 6;

fn check(name: &str, html: &str) -> (Document, ParseStats) {
    let (doc, stats) = Document::parse_with_stats(html);
    let len = html.len() as u64;
    assert!(
        stats.steps <= PER_BYTE * len + 64,
        "{name}: {} steps for {len} bytes",
        stats.steps
    );
    let mut links = 0;
    let scanned = scan_links(html, &["a".into()], &["href".into()], true, |_| links += 1);
    assert!(
        scanned.steps <= PER_BYTE * len + 64,
        "{name} (scanner): {} steps for {len} bytes",
        scanned.steps
    );
    // No element has more than MAX_DEPTH element ancestors.
    let deepest = doc
        .elements()
        .map(|e| {
            let mut d = 0;
            let mut p = e.parent_element();
            while let Some(x) = p {
                d += 1;
                p = x.parent_element();
            }
            d
        })
        .max()
        .unwrap_or(0);
    assert!(deepest <= MAX_DEPTH, "{name}: depth {deepest}");
    (doc, stats)
}

#[test]
fn deep_unclosed_inline_nesting() {
    // The page that froze a crawl for ~150 s.
    let html = format!("<body>{}", "<div><span><b><i>".repeat(100_000));
    let (doc, stats) = check("div span b i", &html);
    assert!(stats.depth_limited > 0);
    assert!(doc.len() > 400_000, "every element is kept, flattened");
}

#[test]
fn deep_nested_divs_and_stray_end_tags() {
    let html = format!(
        "{}{}{}",
        "<div>".repeat(100_000),
        "</x>".repeat(100_000),
        "</div>".repeat(100_000)
    );
    check("nested divs", &html);
    // Blocked end tags under a deep stack: each `</a>` meets a `div` (higher
    // priority) above the `a` it would close.
    let html = format!(
        "<a href=x>{}{}",
        "<div>".repeat(MAX_DEPTH),
        "</a>".repeat(200_000)
    );
    check("blocked end tags", &html);
}

#[test]
fn an_entity_run_of_letters() {
    for html in [
        format!("<p>&{}</p>", "a".repeat(200_000)),
        format!("<a href=\"&{}\">x</a>", "b".repeat(200_000)),
        "&aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".repeat(20_000),
        format!("<p>&#{}</p>", "9".repeat(200_000)),
    ] {
        check("entity run", &html);
    }
}

#[test]
fn many_attributes_on_one_tag() {
    let mut html = String::from("<a href=x");
    for i in 0..100_000 {
        html.push_str(&format!(" a{i}=v"));
    }
    html.push_str(">text</a>");
    let (doc, stats) = check("100,000 attributes", &html);
    let a = doc.select(&Selector::parse("a").expect("selector"));
    assert_eq!(a[0].attrs().count(), MAX_ATTRIBUTES);
    assert_eq!(
        stats.dropped_attributes,
        100_000 + 1 - MAX_ATTRIBUTES as u64
    );
    // The same name 100,000 times: one kept.
    let html = format!("<a{}>t</a>", " href=x".repeat(100_000));
    let (doc, _) = check("one name repeated", &html);
    let a = doc.select(&Selector::parse("a").expect("selector"));
    assert_eq!(a[0].attrs().count(), 1);
}

#[test]
fn a_million_comments_and_unclosed_constructs() {
    check("comments", &"<!---->".repeat(1_000_000));
    check("bogus comments", &"<!x>".repeat(500_000));
    check(
        "unclosed comment",
        &format!("<p><!--{}", "a-".repeat(500_000)),
    );
    check(
        "unclosed attribute",
        &format!("<a href=\"{}", "x".repeat(1_000_000)),
    );
    check(
        "unclosed script",
        &format!("<script>{}", "</scrip <!-- <script ".repeat(50_000)),
    );
    check("lone <", &"< ".repeat(500_000));
}

#[test]
fn many_links_and_long_lines() {
    let (_, _) = check("100,000 links", &"<a href=/x>x</a>".repeat(100_000));
    let mut n = 0;
    scan_links(
        &"<a href=/x>x</a>".repeat(100_000),
        &["a".into()],
        &["href".into()],
        true,
        |_| n += 1,
    );
    assert_eq!(n, 100_000);
    check("one long line", &"x".repeat(5_000_000));
    // Nested links repeat their text; the budget bounds the total.
    let html = format!(
        "{}{}",
        "<a href=x><b>".repeat(MAX_DEPTH),
        "t".repeat(1_000_000)
    );
    let mut text = 0;
    scan_links(&html, &["a".into()], &["href".into()], true, |l| {
        text += l.text.len()
    });
    assert!(
        text <= 8 * html.len() + 64 * 1024,
        "{text} bytes of link text"
    );
}

#[test]
fn a_document_costs_what_it_holds() {
    // A 4 MB one-line text page once kept ~4.9× its size reserved (node and attribute
    // arrays sized from the input); the DOM of dense markup stays a bounded multiple.
    let text = format!("<html><body><p>{}</p>", "word ".repeat(800_000));
    let doc = Document::parse(&text);
    let ratio = doc.heap_size() as f64 / text.len() as f64;
    assert!(ratio < 1.25, "text page: {ratio:.2}× its size");
    let dense = "<p>w</p>".repeat(500_000);
    let doc = Document::parse(&dense);
    let ratio = doc.heap_size() as f64 / dense.len() as f64;
    assert!(ratio < 16.0, "dense elements: {ratio:.2}× their size");
}
