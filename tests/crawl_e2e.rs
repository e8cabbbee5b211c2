//! End to end over loopback: the fixture spider crawls a 2,000-page fixture site on the
//! real reactor; every page is fetched exactly once, every item exported, the stats
//! agree with each other and with the server's own count.

mod util;

use std::collections::BTreeSet;

use serde_json::{Value, json};
use trawl::crawl::{Priority, Settings, run_spider};
use trawl::testing::spiders::FixtureSpider;
use trawl::testing::{FixtureOptions, FixtureServer};

#[test]
fn crawl_the_fixture_site_exactly_once_with_every_item_exported() {
    let pages = 2000;
    let server = FixtureServer::start(FixtureOptions {
        pages,
        record: true,
        ..FixtureOptions::default()
    })
    .unwrap();
    let dir = std::env::temp_dir().join(format!("trawl-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let items_path = dir.join("items.jsonl");
    let mut settings = Settings::new();
    settings.set("LOG_LEVEL", "INFO", Priority::Project);
    settings.set("CONCURRENT_REQUESTS_PER_DOMAIN", 16, Priority::Project);
    settings.set(
        "FEEDS",
        json!({ items_path.to_string_lossy(): {"format": "jsonlines", "overwrite": true} }),
        Priority::Project,
    );
    let crawler = run_spider(
        Box::new(FixtureSpider::new(&server.url("/index.html"))),
        settings,
    )
    .unwrap();
    let stats = &crawler.stats;

    let (expected_urls, expected_items) = server.site().expected_crawl();
    // The server's view: every page requested exactly once; /index.html twice (the
    // start request bypasses the dupefilter, as in Scrapy); robots.txt once.
    let targets = server.stats().targets();
    for i in 0..pages {
        let path = trawl::testing::Site::page_path(i);
        assert_eq!(targets.get(&path), Some(&1), "{path}");
    }
    assert_eq!(targets.get("/index.html"), Some(&2));
    assert_eq!(targets.get("/robots.txt"), Some(&1));
    let fetched: u32 = targets.values().sum();
    assert_eq!(fetched as usize, expected_urls.len() + 2);
    assert!(
        targets.keys().all(|t| !t.contains('#')),
        "fragments never sent"
    );

    // Items: one JSON line per quote block, all parseable.
    let text = std::fs::read_to_string(&items_path).unwrap();
    let items: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(items.len(), expected_items);
    assert!(items.iter().all(|i| {
        i["text"]
            .as_str()
            .is_some_and(|t| t.starts_with('\u{201c}'))
            && i["author"].is_string()
    }));
    let urls: BTreeSet<&str> = items.iter().filter_map(|i| i["url"].as_str()).collect();
    assert_eq!(
        urls.len(),
        expected_urls.len() - 1,
        "every page but the index has quotes"
    );

    // Stats agree.
    let n = |k: &str| stats.get_int(k);
    assert_eq!(n("item_scraped_count") as usize, expected_items);
    assert_eq!(n("scheduler/enqueued"), n("scheduler/dequeued"));
    assert_eq!(n("downloader/response_status_count/200") as u32, fetched);
    assert_eq!(n("response_received_count") as u32, fetched);
    assert_eq!(n("downloader/request_count") as u32, fetched);
    assert_eq!(n("robotstxt/request_count"), 1);
    assert_eq!(n("robotstxt/response_status_count/200"), 1);
    assert_eq!(n("robotstxt/forbidden"), 0);
    assert_eq!(stats.get_value("finish_reason"), Some(json!("finished")));
    assert_eq!(server.stats().requests() as u32, fetched);
    std::fs::remove_dir_all(&dir).ok();
}
