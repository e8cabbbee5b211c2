//! Spiders (Scrapy's `scrapy.spiders`): the [`Spider`] trait and what its callbacks
//! return, contracts, [`CrawlSpider`] with its [`Rule`]s, and [`SitemapSpider`].

pub mod contracts;
pub mod crawl;
pub mod feed;
pub mod outputs;
pub mod sitemap;
pub mod spider;

pub use contracts::Contract;
pub use crawl::{CrawlSpider, Rule};
pub use feed::{CsvFeed, CsvFeedSpider, XmlFeed, XmlFeedSpider, XmlIterator};
pub use outputs::{CallbackResult, Later, Output, OutputStack, Outputs, later, outputs};
pub use sitemap::SitemapSpider;
pub use spider::{Spider, SpiderAttributes, SpiderCell, UnknownCallback};
