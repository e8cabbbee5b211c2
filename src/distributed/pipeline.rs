//! [`RedisPipeline`] (`trawl.RedisPipeline`, alias
//! `scrapy_redis.pipelines.RedisPipeline`): each item `RPUSH`ed to `REDIS_ITEMS_KEY`
//! (`%(spider)s:items`) as the JSON scrapy-redis writes, through the crawl's shared
//! connection. The item moves on when Redis has it (the command's reply), so a lease
//! is acknowledged only after its items are stored, and a Redis outage holds items
//! (bounded by the scraper's limits) instead of losing them.
//!
//! Items handed over in one reactor turn (a response's items are in the pipelines
//! together, up to `CONCURRENT_ITEMS`) go to Redis in one plain `RPUSH` of at most
//! [`MAX_BATCH`] values: what Redis spends per item is then one argument, not a script
//! call (the fixture crawl's 4.5 items per page, one script call each, were 36% of the
//! server's time). Only a key of the wrong type takes the `PUSH_LIST` script, which
//! moves it aside. The list's order is the order the items reached the pipeline.

use std::cell::RefCell;
use std::rc::Rc;

use super::codec::python_json;
use super::shared::{REDIS_ITEMS_KEY, SharedRedis, format_key, setting_str, shared_client};
use crate::client::redis::{ReplyError, Value};
use crate::crawl::context::CrawlContext;
use crate::crawl::item::Item;
use crate::crawl::pipeline::{ItemOutcome, ItemPipeline};
use crate::crawl::response::Response;
use crate::defer::{Deferred, Failure, Step};
use crate::reactor::{DelayedCall, ReactorHandle};

/// The most items one push carries (the `PUSH_LIST` fallback's `unpack` has a Lua
/// stack limit of about 8,000 values).
pub const MAX_BATCH: usize = 1000;

/// Stores items in a Redis list.
pub struct RedisPipeline {
    shared: Rc<SharedRedis>,
    key: Rc<str>,
    reactor: ReactorHandle,
    batch: Rc<RefCell<Batch>>,
}

/// Items waiting for this turn's flush.
#[derive(Default)]
struct Batch {
    json: Vec<Vec<u8>>,
    waiting: Vec<(Item, Deferred<Item>)>,
    timer: Option<DelayedCall>,
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
        let reactor = ctx
            .reactor()
            .ok_or_else(|| Failure::msg("RedisPipeline needs a crawl with a reactor"))?
            .clone();
        shared
            .client
            .load_script(&super::scripts::scripts().push_list);
        Ok(Self {
            shared,
            key: format_key(&template, ctx.spider_name()).into(),
            reactor,
            batch: Rc::default(),
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
        let d = Deferred::new();
        let mut b = self.batch.borrow_mut();
        b.json.push(json.into_bytes());
        b.waiting.push((item, d.clone()));
        if b.json.len() >= MAX_BATCH {
            drop(b);
            flush(&self.shared, &self.key, &self.batch);
        } else if b.timer.is_none() {
            let (shared, key, batch) = (self.shared.clone(), self.key.clone(), self.batch.clone());
            b.timer = Some(self.reactor.call_later(0.0, move || {
                batch.borrow_mut().timer = None;
                flush(&shared, &key, &batch);
            }));
        }
        Ok(ItemOutcome::Wait(d))
    }
}

/// Sends the waiting items in one `RPUSH`; each item's Deferred fires with the reply
/// (the item) or its failure.
fn flush(shared: &SharedRedis, key: &Rc<str>, batch: &RefCell<Batch>) {
    let (json, waiting) = {
        let mut b = batch.borrow_mut();
        if let Some(t) = b.timer.take() {
            let _ = t.cancel();
        }
        (std::mem::take(&mut b.json), std::mem::take(&mut b.waiting))
    };
    if json.is_empty() {
        return;
    }
    let key = key.clone();
    let mut args: Vec<&[u8]> = Vec::with_capacity(2 + json.len());
    args.push(b"RPUSH");
    args.push(key.as_bytes());
    args.extend(json.iter().map(Vec::as_slice));
    // A plain RPUSH (no script: a script's arguments cost the server more than the
    // push); only a key of the wrong type takes the repairing script.
    let client = shared.client.clone();
    let retry_key = key.clone();
    let _ = shared
        .client
        .command(&args)
        .then(move |r: Result<Value, Failure>| match r {
            Err(f)
                if f.downcast_ref::<ReplyError>()
                    .is_some_and(|e| e.kind() == "WRONGTYPE") =>
            {
                let scripts = super::scripts::scripts();
                Step::Wait(client.eval(&scripts.push_list, &[retry_key.as_bytes()], &json))
            }
            other => Step::Done(other),
        })
        .then(move |r: Result<Value, Failure>| {
            match r {
                Ok(v) => {
                    if v.as_array().and_then(|a| a.get(1)).and_then(Value::as_int) > Some(0) {
                        log::error!("Redis key {key} was not a list: moved to {key}:bad");
                    }
                    for (item, d) in waiting {
                        let _ = d.callback(item);
                    }
                }
                Err(f) => {
                    for (_, d) in waiting {
                        let _ = d.errback(f.clone());
                    }
                }
            }
            Ok::<(), Failure>(())
        });
}
