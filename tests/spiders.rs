//! CrawlSpider rules and SitemapSpider over loopback against the fixture server.

mod util;

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use serde_json::json;
use trawl::crawl::{
    CallbackResult, CrawlSpider, Item, LinkExtractor, Output, Priority, Response, Rule, Settings,
    SitemapSpider, Spider, run_spider,
};
use trawl::testing::{FixtureOptions, FixtureServer, author_slug};

fn server(pages: usize) -> FixtureServer {
    FixtureServer::start(FixtureOptions {
        pages,
        record: true,
        ..FixtureOptions::default()
    })
    .expect("fixture server")
}

fn settings() -> Settings {
    let mut s = Settings::new();
    s.set("LOGSTATS_INTERVAL", 0, Priority::Project);
    s
}

/// The callbacks rules and sitemaps name; records what it sees.
struct Callbacks {
    start: String,
    seen: Rc<RefCell<Vec<(String, String)>>>,
}

impl Spider for Callbacks {
    fn name(&self) -> &str {
        "callbacks"
    }
    fn allowed_domains(&self) -> Vec<String> {
        vec!["127.0.0.1".into()]
    }
    fn start_urls(&self) -> Vec<String> {
        vec![self.start.clone()]
    }
    fn callback(&mut self, name: &str, response: &Response) -> CallbackResult {
        self.seen
            .borrow_mut()
            .push((name.to_owned(), response.url().path().to_owned()));
        match name {
            "parse_author" => Ok(vec![Output::Item(
                Item::new().with("name", response.css("h3.author-title::text").get()),
            )]),
            "parse_start_url" | "parse" | "parse_first" => Ok(Vec::new()),
            other => Err(trawl::defer::Failure::new(
                trawl::crawl::spiders::UnknownCallback(other.to_owned()),
            )),
        }
    }
}

#[test]
fn crawl_spider_follows_rules_and_calls_back() {
    let srv = server(20);
    let seen = Rc::new(RefCell::new(Vec::new()));
    let processed = Rc::new(RefCell::new(0usize));
    let p = processed.clone();
    let spider = CrawlSpider::new(
        Callbacks {
            start: srv.url("/page/1/"),
            seen: seen.clone(),
        },
        vec![
            // Pagination: followed, no callback.
            Rule::new(
                LinkExtractor::new()
                    .allow(&[r"/page/\d+/$"])
                    .expect("regex")
                    .restrict_css(["ul.pager"]),
            ),
            // Authors: a callback, not followed further.
            Rule::new(LinkExtractor::new().allow(&["/author/"]).expect("regex"))
                .callback("parse_author")
                .process_request(move |r, _| {
                    *p.borrow_mut() += 1;
                    Some(r.with_header("X-Rule", "authors"))
                }),
        ],
    );
    let crawler = run_spider(Box::new(spider), settings()).expect("crawl");
    let site = srv.site();
    let expected_authors: BTreeSet<String> = (1..=site.quote_list_pages())
        .flat_map(|n| site.list_quotes(n))
        .map(|q| q.author)
        .collect();
    let seen = seen.borrow();
    let authors: BTreeSet<&str> = seen
        .iter()
        .filter(|(cb, _)| cb == "parse_author")
        .map(|(_, p)| p.as_str())
        .collect();
    let expected_paths: BTreeSet<String> = expected_authors
        .iter()
        .map(|a| format!("/author/{}/", author_slug(a)))
        .collect();
    assert_eq!(
        authors,
        expected_paths
            .iter()
            .map(String::as_str)
            .collect::<BTreeSet<_>>()
    );
    assert_eq!(
        crawler.stats.get_int("item_scraped_count") as usize,
        expected_authors.len()
    );
    // Every list page was visited once (page 1 twice: the start request bypasses the
    // dupefilter, as in Scrapy); tag pages were never followed (no rule).
    let targets = srv.stats().targets();
    for n in 1..=site.quote_list_pages() {
        let expected = if n == 1 { 2 } else { 1 };
        assert_eq!(
            targets.get(&format!("/page/{n}/")),
            Some(&expected),
            "page {n}"
        );
    }
    assert!(targets.keys().all(|t| !t.starts_with("/tag/")));
    assert!(
        seen.iter()
            .any(|(cb, p)| cb == "parse_start_url" && p == "/page/1/")
    );
    assert!(*processed.borrow() >= expected_authors.len());
}

#[test]
fn sitemap_spider_from_robots_txt() {
    let srv = server(30);
    let seen = Rc::new(RefCell::new(Vec::new()));
    let spider = SitemapSpider::new(
        Callbacks {
            start: String::new(),
            seen: seen.clone(),
        },
        [srv.url("/robots.txt")],
    );
    run_spider(Box::new(spider), settings()).expect("crawl");
    let seen = seen.borrow();
    let pages: BTreeSet<&str> = seen
        .iter()
        .filter(|(cb, _)| cb == "parse")
        .map(|(_, p)| p.as_str())
        .collect();
    assert_eq!(pages.len(), 30);
    assert!(pages.contains("/s/000/00029.html"));
}

#[test]
fn sitemap_index_gzip_rules_and_dupes() {
    let srv = server(30);
    let seen = Rc::new(RefCell::new(Vec::new()));
    let spider = SitemapSpider::new(
        Callbacks {
            start: String::new(),
            seen: seen.clone(),
        },
        [srv.url("/sitemap-index.xml")],
    )
    .rules(&[(r"/s/000/0000\d\.html$", "parse_first"), (r"/s/", "parse")])
    .expect("regex");
    let crawler = run_spider(Box::new(spider), settings()).expect("crawl");
    let seen = seen.borrow();
    let first: Vec<&str> = seen
        .iter()
        .filter(|(cb, _)| cb == "parse_first")
        .map(|(_, p)| p.as_str())
        .collect();
    assert_eq!(first.len(), 10, "{first:?}");
    let rest = seen.iter().filter(|(cb, _)| cb == "parse").count();
    assert_eq!(rest, 20);
    // Both sitemaps (plain and gzipped) list every page; each page is fetched once.
    let targets = srv.stats().targets();
    assert_eq!(targets.get("/sitemap.xml.gz"), Some(&1));
    assert_eq!(targets.get("/s/000/00005.html"), Some(&1));
    assert_eq!(crawler.stats.get_int("dupefilter/filtered"), 30);
}

#[test]
fn sitemap_gzip_limit_follows_download_maxsize() {
    let srv = server(30);
    let seen = Rc::new(RefCell::new(Vec::new()));
    let spider = SitemapSpider::new(
        Callbacks {
            start: String::new(),
            seen: seen.clone(),
        },
        [srv.url("/sitemap.xml.gz")],
    );
    let mut s = settings();
    // Large enough for the compressed download, too small for the unzipped sitemap.
    s.set("DOWNLOAD_MAXSIZE", 1000, Priority::Project);
    run_spider(Box::new(spider), s).expect("crawl");
    assert_eq!(srv.stats().targets().get("/sitemap.xml.gz"), Some(&1));
    assert!(seen.borrow().iter().all(|(cb, _)| cb != "parse"));
}

#[test]
fn sitemap_follow_and_size_limit() {
    let srv = server(30);
    let seen = Rc::new(RefCell::new(Vec::new()));
    let spider = SitemapSpider::new(
        Callbacks {
            start: String::new(),
            seen: seen.clone(),
        },
        [srv.url("/sitemap-index.xml")],
    )
    .follow(&[r"\.gz$"])
    .expect("regex")
    .max_size(100);
    let mut s = settings();
    s.set("ROBOTSTXT_OBEY", json!(false), Priority::Project);
    run_spider(Box::new(spider), s).expect("crawl");
    let targets = srv.stats().targets();
    assert_eq!(targets.get("/sitemap.xml"), None, "not followed");
    assert_eq!(targets.get("/sitemap.xml.gz"), Some(&1));
    assert!(
        seen.borrow().iter().all(|(cb, _)| cb != "parse"),
        "the gzipped sitemap is larger than 100 bytes decompressed: ignored"
    );
}
