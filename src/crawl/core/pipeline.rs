//! Item pipelines and their manager: `process_item` of each pipeline in order; a
//! pipeline may return the item (changed or not), a Deferred of it, or fail with
//! [`DropItem`](crate::crawl::base::errors::DropItem).

use std::rc::Rc;

use crate::crawl::base::item::Item;
use crate::crawl::http::response::Response;
use crate::defer::{Deferred, Failure};

/// What `process_item` returned.
#[derive(Debug)]
pub enum ItemOutcome {
    /// The item, for the next pipeline.
    Item(Item),
    /// The item, later.
    Wait(Deferred<Item>),
}

/// An item pipeline.
pub trait ItemPipeline {
    /// The spider opened.
    ///
    /// # Errors
    ///
    /// The crawl does not start.
    fn open_spider(&self) -> Result<(), Failure> {
        Ok(())
    }

    /// The spider closed.
    ///
    /// # Errors
    ///
    /// Logged.
    fn close_spider(&self) -> Result<(), Failure> {
        Ok(())
    }

    /// Processes one item.
    ///
    /// # Errors
    ///
    /// `DropItem` drops the item (`item_dropped`); anything else is an `item_error`.
    fn process_item(&self, item: Item, response: Option<&Response>)
    -> Result<ItemOutcome, Failure>;
}

/// Runs items through the pipelines.
pub struct ItemPipelineManager {
    pipelines: Vec<(String, Rc<dyn ItemPipeline>)>,
}

impl ItemPipelineManager {
    /// A manager over `pipelines` in order.
    pub fn new(pipelines: Vec<(String, Rc<dyn ItemPipeline>)>) -> Rc<Self> {
        Rc::new(Self { pipelines })
    }

    /// Whether there are no pipelines (items pass straight through).
    pub fn is_empty(&self) -> bool {
        self.pipelines.is_empty()
    }

    /// Calls `open_spider` on each pipeline.
    ///
    /// # Errors
    ///
    /// The first failure.
    pub fn open_spider(&self) -> Result<(), Failure> {
        for (_, p) in &self.pipelines {
            p.open_spider()?;
        }
        Ok(())
    }

    /// Calls `close_spider` on each pipeline, logging failures.
    pub fn close_spider(&self) {
        for (name, p) in &self.pipelines {
            if let Err(f) = p.close_spider() {
                log::error!("Error closing item pipeline {name}:\n{}", f.describe());
            }
        }
    }

    /// Runs `item` through every pipeline.
    pub fn process_item(self: &Rc<Self>, item: Item, response: Option<Response>) -> Deferred<Item> {
        let out = Deferred::new();
        self.clone().step(item, response, 0, out.clone());
        out
    }

    fn step(
        self: Rc<Self>,
        mut item: Item,
        response: Option<Response>,
        start: usize,
        out: Deferred<Item>,
    ) {
        for i in start..self.pipelines.len() {
            let p = self.pipelines[i].1.clone();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                p.process_item(item.clone(), response.as_ref())
            }))
            .unwrap_or_else(|e| Err(Failure::from_panic(e.as_ref())));
            match r {
                Ok(ItemOutcome::Item(next)) => item = next,
                Ok(ItemOutcome::Wait(d)) => {
                    let me = self.clone();
                    let _chain: Deferred<()> = d.then(move |r| {
                        match r {
                            Ok(next) => me.step(next, response, i + 1, out),
                            Err(f) => {
                                let _ = out.errback(f);
                            }
                        }
                        Ok(())
                    });
                    return;
                }
                Err(f) => {
                    let _ = out.errback(f);
                    return;
                }
            }
        }
        let _ = out.callback(item);
    }
}

impl std::fmt::Debug for ItemPipelineManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.pipelines.iter().map(|(n, _)| n))
            .finish()
    }
}
