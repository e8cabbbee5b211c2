//! The crawl framework's building blocks that know nothing of a crawl: Scrapy- and
//! w3lib-compatible URL handling, Python-compatible JSON, the varint codec of the
//! record formats, HTML entities, the `<base href>` and meta-refresh scans, robots.txt,
//! the sitemap parser, the fingerprint sets and Python's log-record formatting.

pub mod basehref;
pub mod canonical;
pub mod datetime;
pub mod entities;
mod html4_entities;
pub mod metarefresh;
pub mod pycsv;
pub mod pyjson;
pub mod pylogfmt;
pub mod redact;
pub mod robots;
pub mod seen;
pub mod sitemap;
pub mod varint;
