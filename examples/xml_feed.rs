// cargo run --release --example xml_feed -- [--atom | --products] [OUTPUT.jsonl]
//
// Scrapy's XMLFeedSpider on trawl: the fixture site's quotes as an RSS feed
// (`/feeds/quotes.rss`, read with the streaming `iternodes` iterator: `dc:` and
// `content:` prefixes, CDATA) or, with `--atom`, as an Atom feed with a default
// namespace (`/feeds/quotes.atom`, read with the `xml` iterator and a registered `a`
// prefix, as Scrapy users must for Atom), or with `--products` as a product feed with
// `g:`-namespaced elements and attributes (`/feeds/products.xml`, `iternodes` over
// `product`); one item per node, exported as JSON lines.

use trawl::crawl::{
    CallbackResult, Item, Output, Priority, Response, Selection, Settings, Spider, XmlFeed,
    XmlFeedSpider, XmlIterator, run_spider,
};
use trawl::testing::{FixtureOptions, FixtureServer};

const ATOM: &str = "http://www.w3.org/2005/Atom";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Rss,
    Atom,
    Products,
}

struct Quotes {
    feed: String,
    kind: Kind,
}

impl Spider for Quotes {
    fn name(&self) -> &str {
        "quotes_xml"
    }

    fn start_urls(&self) -> Vec<String> {
        vec![self.feed.clone()]
    }
}

impl XmlFeed for Quotes {
    fn parse_node(&mut self, _response: &Response, node: &Selection<'_>) -> CallbackResult {
        let item = if self.kind == Kind::Products {
            Item::new()
                .with("id", node.xpath("@id").get())
                .with("gid", node.xpath("@g:id").get())
                .with("name", node.xpath("name/text()").get())
                .with("price", node.xpath("g:price/text()").get())
                .with(
                    "in_stock",
                    node.xpath("g:availability/text()").get().as_deref() == Some("in stock"),
                )
                .with("link", node.xpath("link/text()").get())
        } else if self.kind == Kind::Atom {
            Item::new()
                .with("text", node.xpath("a:title/text()").get())
                .with("author", node.xpath("a:author/a:name/text()").get())
                .with("link", node.xpath("a:link/@href").get())
        } else {
            Item::new()
                .with(
                    "text",
                    node.xpath("content:encoded/text()")
                        .re_first("<p>(.*)</p>")
                        .ok()
                        .flatten(),
                )
                .with("author", node.xpath("dc:creator/text()").get())
                .with("link", node.xpath("link/text()").get())
                .with("tags", node.xpath("category/text()").getall())
        };
        Ok(vec![Output::Item(item)])
    }
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kind = if args.iter().any(|a| a == "--atom") {
        Kind::Atom
    } else if args.iter().any(|a| a == "--products") {
        Kind::Products
    } else {
        Kind::Rss
    };
    let output = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .cloned()
        .unwrap_or_else(|| "quotes_xml.jsonl".into());
    let server = FixtureServer::start(FixtureOptions::default()).expect("fixture server");
    let feed = server.url(match kind {
        Kind::Atom => "/feeds/quotes.atom",
        Kind::Products => "/feeds/products.xml",
        Kind::Rss => "/feeds/quotes.rss",
    });
    let spider = XmlFeedSpider::new(Quotes { feed, kind });
    let spider = match kind {
        Kind::Atom => spider
            .iterator(XmlIterator::Xml)
            .itertag("a:entry")
            .namespaces(&[("a", ATOM)]),
        Kind::Products => spider
            .itertag("product")
            .namespaces(&[("g", "http://base.google.com/ns/1.0")]),
        Kind::Rss => spider.itertag("item").namespaces(&[
            ("content", "http://purl.org/rss/1.0/modules/content/"),
            ("dc", "http://purl.org/dc/elements/1.1/"),
        ]),
    };
    let mut settings = Settings::new();
    settings.set(
        "FEEDS",
        serde_json::json!({ output.clone(): {"format": "jsonlines", "overwrite": true} }),
        Priority::Project,
    );
    settings.set("LOG_LEVEL", "INFO", Priority::Project);
    match run_spider(Box::new(spider), settings) {
        Ok(crawler) => println!(
            "{} items from the {} feed, written to {output}",
            crawler.stats.get_int("item_scraped_count"),
            match kind {
                Kind::Atom => "Atom",
                Kind::Products => "product",
                Kind::Rss => "RSS",
            },
        ),
        Err(f) => {
            eprintln!("crawl failed: {f}");
            std::process::exit(1);
        }
    }
}
