//! Layer 6: distributed crawling on Redis — scrapy-redis's components with its setting
//! names, defaults and key layout, on the reactor's non-blocking [`RedisClient`](crate::client::redis::RedisClient), plus
//! what scrapy-redis lacks: leases, FIFO among equal priorities, no pickle, bad-entry
//! quarantine and outage handling.
//!
//! * [`RedisScheduler`] (`SCHEDULER = "trawl.RedisScheduler"`): the shared request
//!   queue, with a lease per popped request, acknowledged once its outputs are stored.
//! * [`RedisDupeFilter`] / [`RedisBloomDupeFilter`] (`DUPEFILTER_CLASS`): the shared
//!   fingerprint SET (scrapy-redis's own fingerprint, so Python workers share it) or a
//!   Bloom filter on plain Redis bitmaps.
//! * [`RedisPipeline`] (`ITEM_PIPELINES`): items as JSON on `%(spider)s:items`.
//! * [`RedisStatsCollector`] (`STATS_CLASS`): every worker's counters in one hash.
//! * [`RedisSpider`]: wraps any spider so its start requests come from
//!   `%(name)s:start_urls`.
//!
//! [`register`] adds them to a [`Registry`] under their trawl names and their
//! scrapy-redis paths (`scrapy_redis.scheduler.Scheduler`, ...). The key layout, the
//! scripts and the lease protocol are in `DESIGN.md` §10c, the key layout in §12.
//!
//! All components of one crawl share one connection ([`shared_client`]), so their
//! commands reach the server in the order they were issued: a lease is acknowledged
//! after the commands that stored the request's outputs.

pub mod codec;
pub mod dupefilter;
pub mod pipeline;
pub mod scheduler;
pub mod scripts;
mod shared;
pub mod spider;
pub mod stats;

use std::rc::Rc;

use crate::crawl::crawler::Registry;
use crate::crawl::dupefilter::DupeFilter;
use crate::crawl::pipeline::ItemPipeline;
use crate::crawl::scheduler::Scheduler;
use crate::crawl::stats::StatsCollector;

pub use dupefilter::{RedisBloomDupeFilter, RedisDupeFilter, scrapy_redis_fingerprint};
pub use pipeline::RedisPipeline;
pub use scheduler::RedisScheduler;
pub use shared::{
    DEFAULT_FLUSH_DELAY, DEFAULT_LEASE_TIMEOUT, REDIS_ITEMS_KEY, REDIS_START_URLS_KEY,
    SCHEDULER_DUPEFILTER_KEY, SCHEDULER_QUEUE_KEY, STATS_KEY, ShardWrites, SharedRedis, format_key,
    new_shared, redis_config, setting_secs, setting_str, shared_client,
};
pub use spider::{RedisCrawlSpider, RedisSpider};
pub use stats::RedisStatsCollector;

/// Registers the distributed components in `registry`.
pub fn register(registry: &mut Registry) {
    for name in ["trawl.RedisScheduler", "scrapy_redis.scheduler.Scheduler"] {
        registry.register_scheduler(name, |c, sctx| {
            Ok(Box::new(RedisScheduler::from_context(c, sctx)?) as Box<dyn Scheduler>)
        });
    }
    for name in [
        "trawl.RedisDupeFilter",
        "scrapy_redis.dupefilter.RFPDupeFilter",
    ] {
        registry.register_dupefilter(name, |c| {
            Ok(Box::new(RedisDupeFilter::from_context(c)?) as Box<dyn DupeFilter>)
        });
    }
    registry.register_dupefilter("trawl.RedisBloomDupeFilter", |c| {
        Ok(Box::new(RedisBloomDupeFilter::from_context(c)?) as Box<dyn DupeFilter>)
    });
    for name in [
        "trawl.RedisPipeline",
        "scrapy_redis.pipelines.RedisPipeline",
    ] {
        registry.register_pipeline(name, |c| {
            Ok(Rc::new(RedisPipeline::from_context(c)?) as Rc<dyn ItemPipeline>)
        });
    }
    for name in [
        "trawl.RedisStatsCollector",
        "scrapy_redis.stats.RedisStatsCollector",
    ] {
        registry.register_stats(name, |s| {
            Ok(Rc::new(RedisStatsCollector::from_setup(s)?) as Rc<dyn StatsCollector>)
        });
    }
}

/// The settings `trawl crawl --redis URL` sets (each remains a setting a user can
/// override): the scheduler, dupefilter, pipeline and stats classes, and the URL.
pub fn redis_settings(url: &str) -> Vec<(&'static str, serde_json::Value)> {
    vec![
        ("REDIS_URL", url.into()),
        ("SCHEDULER", "trawl.RedisScheduler".into()),
        ("DUPEFILTER_CLASS", "trawl.RedisDupeFilter".into()),
        ("STATS_CLASS", "trawl.RedisStatsCollector".into()),
    ]
}
