//! [`RedisPipeline`] (`trawl.RedisPipeline`, alias
//! `scrapy_redis.pipelines.RedisPipeline`): each item `RPUSH`ed to `REDIS_ITEMS_KEY`
//! (`%(spider)s:items`) as the JSON scrapy-redis writes, through the crawl's shared
//! connection. The item moves on when Redis has it (the command's reply), so a lease
//! is acknowledged only after its items are stored, and a Redis outage holds items
//! (bounded by the scraper's limits) instead of losing them.

use std::rc::Rc;

use super::codec::python_json;
use super::shared::{REDIS_ITEMS_KEY, SharedRedis, format_key, setting_str, shared_client};
use crate::client::redis::Value;
use crate::crawl::context::CrawlContext;
use crate::crawl::item::Item;
use crate::crawl::pipeline::{ItemOutcome, ItemPipeline};
use crate::crawl::response::Response;
use crate::defer::Failure;

/// Stores items in a Redis list.
pub struct RedisPipeline {
    shared: Rc<SharedRedis>,
    key: String,
}

impl std::fmt::Debug for RedisPipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisPipeline")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl RedisPipeline {
    /// The pipeline from the crawl's settings.
    ///
    /// # Errors
    ///
    /// The Redis settings are malformed.
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Self, Failure> {
        let template = setting_str(&ctx.settings, "REDIS_ITEMS_KEY", REDIS_ITEMS_KEY)?;
        let shared = shared_client(ctx)?;
        shared
            .client
            .load_script(&super::scripts::scripts().push_list);
        Ok(Self {
            shared,
            key: format_key(&template, ctx.spider_name()),
        })
    }

    /// The key.
    pub fn key(&self) -> &str {
        &self.key
    }
}

impl ItemPipeline for RedisPipeline {
    fn process_item(
        &self,
        item: Item,
        _response: Option<&Response>,
    ) -> Result<ItemOutcome, Failure> {
        let json = python_json(&serde_json::Value::Object(item.0.clone()), false);
        let scripts = super::scripts::scripts();
        let key = self.key.clone();
        let d = self.shared.client.eval(
            &scripts.push_list,
            &[self.key.as_bytes()],
            &[json.as_bytes()],
        );
        Ok(ItemOutcome::Wait(d.map(move |v: Value| {
            if v.as_array().and_then(|a| a.get(1)).and_then(Value::as_int) > Some(0) {
                log::error!("Redis key {key} was not a list: moved to {key}:bad");
            }
            item
        })))
    }
}
