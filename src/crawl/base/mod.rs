//! What every part of a crawl shares: settings, stats, signals, Scrapy's exceptions,
//! items, logging and download-slot keys.

pub mod errors;
pub mod item;
pub mod logformatter;
pub mod logging;
pub mod logoutput;
pub mod settings;
pub mod signals;
pub mod slots;
pub mod stats;
