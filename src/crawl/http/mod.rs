//! What a crawl sends and receives: [`Request`](request::Request) with its meta keys,
//! record format and Scrapy's request kinds; [`Response`](response::Response);
//! Scrapy's request fingerprints; parsel's selectors.

pub mod encoding;
pub mod fingerprint;
pub mod request;
pub mod response;
pub mod selector;
