// cargo run --release --example feed_memory -- [MEGABYTES] [iternodes|xml|csv]
//
// The memory of reading a large feed with XMLFeedSpider and CSVFeedSpider: builds an
// RSS (or CSV) feed of MEGABYTES (default 200) in memory as a response, pulls every
// output of the spider's `parse`, and prints the peak resident set (the kernel's
// VmHWM) against the resident set once the response was built. `iternodes` and `csv`
// hold one node or row at a time; `xml` parses the whole document first, as Scrapy's
// `xml` iterator does. Each mode runs in its own process (the peak is per process).

use serde_json::{Map, Value};
use trawl::crawl::{
    CallbackResult, CsvFeed, CsvFeedSpider, Item, Output, Request, Response, Selection, Spider,
    XmlFeed, XmlFeedSpider, XmlIterator,
};
use trawl::proto::Headers;

struct Feed;

impl Spider for Feed {
    fn name(&self) -> &str {
        "feed"
    }
}

impl XmlFeed for Feed {
    fn parse_node(&mut self, _response: &Response, node: &Selection<'_>) -> CallbackResult {
        Ok(vec![Output::Item(
            Item::new()
                .with("title", node.xpath("title/text()").get())
                .with("price", node.xpath("price/text()").get()),
        )])
    }
}

impl CsvFeed for Feed {
    fn parse_row(&mut self, _response: &Response, row: &Map<String, Value>) -> CallbackResult {
        Ok(vec![Output::Item(Item(row.clone()))])
    }
}

/// `VmRSS` or `VmHWM` of this process, in KiB.
fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mb: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(200);
    let mode = args.get(1).map_or("iternodes", String::as_str);
    let target = mb << 20;
    let mut body = String::with_capacity(target + 4096);
    let content_type;
    if mode == "csv" {
        content_type = "text/csv";
        body.push_str("id,title,price\n");
        let mut i = 0u64;
        while body.len() < target {
            body.push_str(&format!(
                "{i},\"Product {i}, the \"\"best\"\"\",{}.99\n",
                i % 100
            ));
            i += 1;
        }
    } else {
        content_type = "application/rss+xml";
        body.push_str(
            "<?xml version=\"1.0\"?>\n<rss version=\"2.0\"><channel><title>Big</title>\n",
        );
        let mut i = 0u64;
        while body.len() < target {
            body.push_str(&format!(
                "<item><title>Product {i} &amp; more</title><price>{}.99</price><description>A long enough description of product {i}</description></item>\n",
                i % 100
            ));
            i += 1;
        }
        body.push_str("</channel></rss>\n");
    }
    let feed_bytes = body.len();
    let mut headers = Headers::new();
    headers.append("Content-Type", content_type);
    let response = Response::new(
        Request::get("http://example.com/feed").expect("url"),
        200,
        headers,
        body,
    );
    let _ = response.text();
    let before = status_kib("VmRSS");
    let outputs = match mode {
        "csv" => CsvFeedSpider::new(Feed).callback_outputs("parse", &response),
        "xml" => XmlFeedSpider::new(Feed)
            .iterator(XmlIterator::Xml)
            .callback_outputs("parse", &response),
        _ => XmlFeedSpider::new(Feed).callback_outputs("parse", &response),
    }
    .expect("outputs");
    let mut items = 0u64;
    for o in outputs {
        if o.is_ok() {
            items += 1;
        }
    }
    let peak = status_kib("VmHWM");
    println!(
        "{{\"mode\": \"{mode}\", \"feed_mib\": {:.1}, \"items\": {items}, \"rss_before_mib\": {:.1}, \"peak_mib\": {:.1}, \"peak_over_before_mib\": {:.1}}}",
        feed_bytes as f64 / 1048576.0,
        before as f64 / 1024.0,
        peak as f64 / 1024.0,
        peak.saturating_sub(before) as f64 / 1024.0
    );
}
