//! The priority queues over any downstream queue (Scrapy's `scrapy.pqueues`):
//! [`PriorityQueue`] (`ScrapyPriorityQueue`) and [`DownloaderAwareQueue`]
//! (`DownloaderAwarePriorityQueue`), selected by `SCHEDULER_PRIORITY_QUEUE`.
//!
//! A priority queue asks a [`QueueFactory`] for one downstream queue per
//! ([`QueueKey`]) slot, priority and kind (start requests wait in their own queues), so
//! the same priority logic runs over memory queues and over disk queues (JOBDIR).

use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;

use super::queues::{QueueFactory, QueueKey, RequestQueue};
use crate::crawl::base::settings::normalize_component;
use crate::crawl::base::slots::SlotActivity;
use crate::crawl::http::request::{Request, keys};
use crate::defer::Failure;
use crate::util::SeededMap;

/// The queues of one priority: ordinary requests pop before start requests.
struct Level {
    normal: Option<Box<dyn RequestQueue>>,
    start: Option<Box<dyn RequestQueue>>,
}

impl Level {
    fn len(&self) -> usize {
        self.normal.as_ref().map_or(0, |q| q.len()) + self.start.as_ref().map_or(0, |q| q.len())
    }
}

/// Scrapy's `ScrapyPriorityQueue`: one downstream queue per priority, highest first; at
/// one priority, non-start requests before start requests.
pub struct PriorityQueue {
    levels: BTreeMap<i32, Level>,
    factory: QueueFactory,
    slot: Option<String>,
    len: usize,
}

impl PriorityQueue {
    /// An empty priority queue over `factory`'s queues (`slot` names the download slot
    /// for a downloader-aware parent).
    pub fn new(factory: QueueFactory, slot: Option<String>) -> Self {
        Self {
            levels: BTreeMap::new(),
            factory,
            slot,
            len: 0,
        }
    }
}

impl PriorityQueue {
    /// The downstream queue of `priority` and kind, made on first use.
    fn downstream(
        &mut self,
        priority: i32,
        start: bool,
    ) -> Result<&mut Box<dyn RequestQueue>, Failure> {
        let level = self.levels.entry(priority).or_insert(Level {
            normal: None,
            start: None,
        });
        let q = if start {
            &mut level.start
        } else {
            &mut level.normal
        };
        if q.is_none() {
            let key = QueueKey {
                slot: self.slot.as_deref(),
                priority,
                start,
            };
            *q = Some((self.factory)(&key)?);
        }
        q.as_mut()
            .ok_or_else(|| Failure::msg("internal: no downstream queue"))
    }
}

impl RequestQueue for PriorityQueue {
    fn push(&mut self, request: Request) -> Result<(), Failure> {
        let priority = request.priority();
        let start = request.meta().get_bool(keys::IS_START_REQUEST);
        self.downstream(priority, start)?.push(request)?;
        self.len += 1;
        Ok(())
    }

    fn pop(&mut self) -> Result<Option<Request>, Failure> {
        let Some((&priority, level)) = self.levels.iter_mut().next_back() else {
            return Ok(None);
        };
        let before = level.len();
        let mut r = Ok(None);
        if let Some(q) = level.normal.as_mut() {
            r = q.pop();
        }
        if matches!(r, Ok(None))
            && let Some(q) = level.start.as_mut()
        {
            r = q.pop();
        }
        // A disk queue that fails to read a request back has still taken it out.
        self.len -= before - level.len();
        if level.len() == 0
            && let Some(mut level) = self.levels.remove(&priority)
        {
            for q in [level.normal.as_mut(), level.start.as_mut()]
                .into_iter()
                .flatten()
            {
                q.close()?;
            }
        }
        r
    }

    fn push_stored(&mut self, key: &QueueKey<'_>, stored: u64, front: bool) -> Result<(), Failure> {
        self.downstream(key.priority, key.start)?
            .push_stored(key, stored, front)?;
        self.len += 1;
        Ok(())
    }

    fn len(&self) -> usize {
        self.len
    }

    fn close(&mut self) -> Result<(), Failure> {
        let mut first_error = None;
        for level in self.levels.values_mut() {
            for q in [level.normal.as_mut(), level.start.as_mut()]
                .into_iter()
                .flatten()
            {
                if let Err(e) = q.close() {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl fmt::Debug for PriorityQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PriorityQueue")
            .field("len", &self.len)
            .field("priorities", &self.levels.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Scrapy's `DownloaderAwarePriorityQueue`: one [`PriorityQueue`] per download slot;
/// pops from the slot with the fewest active downloads, so one busy host cannot starve
/// the others. Ties go as in Scrapy 2.19's `_next_slot`: the first slot name after the
/// last one chosen, in byte order, wrapping around to the smallest.
pub struct DownloaderAwareQueue {
    slots: SeededMap<String, PriorityQueue>,
    /// The slot the last pop came from.
    last_selected: Option<String>,
    activity: Rc<SlotActivity>,
    factory: QueueFactory,
    len: usize,
}

impl DownloaderAwareQueue {
    /// An empty queue reading the downloader's per-slot activity.
    pub fn new(factory: QueueFactory, activity: Rc<SlotActivity>) -> Self {
        Self {
            slots: SeededMap::default(),
            last_selected: None,
            activity,
            factory,
            len: 0,
        }
    }
}

impl RequestQueue for DownloaderAwareQueue {
    fn push(&mut self, request: Request) -> Result<(), Failure> {
        let key = self.activity.slot_key(&request);
        // Looked up by `&str`: the key is copied only for a slot new to the queue.
        let q = match self.slots.get_mut(key.as_ref()) {
            Some(q) => q,
            None => {
                let key = key.into_owned();
                let q = PriorityQueue::new(self.factory.clone(), Some(key.clone()));
                self.slots.entry(key).or_insert(q)
            }
        };
        q.push(request)?;
        self.len += 1;
        Ok(())
    }

    fn pop(&mut self) -> Result<Option<Request>, Failure> {
        let Some(key) = next_slot(
            self.slots.keys().map(String::as_str),
            &self.activity,
            self.last_selected.as_deref(),
        ) else {
            return Ok(None);
        };
        // The chosen name is written into the last one's buffer: no allocation once
        // the buffer has grown to the longest slot name.
        let mut last = self.last_selected.take().unwrap_or_default();
        last.clear();
        last.push_str(key);
        let key = self.last_selected.insert(last).as_str();
        let Some(q) = self.slots.get_mut(key) else {
            return Ok(None);
        };
        let before = q.len();
        let r = q.pop();
        // A disk queue that fails to read a request back has still taken it out.
        self.len -= before - q.len();
        if q.is_empty()
            && let Some(mut q) = self.slots.remove(key)
        {
            q.close()?;
        }
        r
    }

    fn push_stored(&mut self, key: &QueueKey<'_>, stored: u64, front: bool) -> Result<(), Failure> {
        let slot = key.slot.unwrap_or("");
        let q = match self.slots.get_mut(slot) {
            Some(q) => q,
            None => {
                let q = PriorityQueue::new(self.factory.clone(), Some(slot.to_owned()));
                self.slots.entry(slot.to_owned()).or_insert(q)
            }
        };
        q.push_stored(key, stored, front)?;
        self.len += 1;
        Ok(())
    }

    fn len(&self) -> usize {
        self.len
    }

    fn close(&mut self) -> Result<(), Failure> {
        let mut first_error = None;
        for q in self.slots.values_mut() {
            if let Err(e) = q.close() {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// Scrapy 2.19's `DownloaderAwarePriorityQueue._next_slot`: the slot with the fewest
/// active downloads; among those, the smallest name after `last` (the slot chosen
/// before), else the smallest name. Shared with the JOBDIR queue.
pub fn next_slot<'a>(
    slots: impl Iterator<Item = &'a str>,
    activity: &SlotActivity,
    last: Option<&str>,
) -> Option<&'a str> {
    let mut min_active: Option<usize> = None;
    let mut best: Option<&str> = None;
    let mut best_after_last: Option<&str> = None;
    for slot in slots {
        let active = activity.active(slot);
        if min_active.is_none_or(|m| active < m) {
            min_active = Some(active);
            best = Some(slot);
            best_after_last = last.filter(|l| slot > *l).map(|_| slot);
        } else if min_active == Some(active) {
            if best.is_none_or(|b| slot < b) {
                best = Some(slot);
            }
            if last.is_some_and(|l| slot > l) && best_after_last.is_none_or(|b| slot < b) {
                best_after_last = Some(slot);
            }
        }
    }
    best_after_last.or(best)
}

impl fmt::Debug for DownloaderAwareQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut slots: Vec<&String> = self.slots.keys().collect();
        slots.sort();
        f.debug_struct("DownloaderAwareQueue")
            .field("len", &self.len)
            .field("slots", &slots)
            .finish()
    }
}

/// Builds the priority queue named by `SCHEDULER_PRIORITY_QUEUE` over `factory`.
///
/// # Errors
///
/// An unknown class name.
pub fn priority_queue(
    name: &str,
    factory: QueueFactory,
    activity: Rc<SlotActivity>,
) -> Result<Box<dyn RequestQueue>, Failure> {
    match normalize_component(name).as_str() {
        "trawl.ScrapyPriorityQueue" => Ok(Box::new(PriorityQueue::new(factory, None))),
        "trawl.DownloaderAwarePriorityQueue" => {
            Ok(Box::new(DownloaderAwareQueue::new(factory, activity)))
        }
        other => Err(Failure::msg(format!(
            "unknown SCHEDULER_PRIORITY_QUEUE {other:?} (ScrapyPriorityQueue or DownloaderAwarePriorityQueue)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crawl::core::scheduler::memqueue::{MemoryQueue, memory_queues};

    fn req(url: &str, prio: i32) -> Request {
        Request::get(url).expect("url").with_priority(prio)
    }

    fn drain(q: &mut dyn RequestQueue) -> Vec<String> {
        std::iter::from_fn(|| q.pop().expect("memory queues do not fail"))
            .map(|r| r.url().path().to_owned())
            .collect()
    }

    #[test]
    fn priority_order_lifo_and_start_queues() {
        let mut q = PriorityQueue::new(memory_queues(true, false), None);
        for r in [
            req("http://a/1", 0),
            req("http://a/2", 0),
            req("http://a/hi", 5),
            req("http://a/s1", 0).with_meta(keys::IS_START_REQUEST, true),
            req("http://a/s2", 0).with_meta(keys::IS_START_REQUEST, true),
        ] {
            q.push(r).expect("push");
        }
        assert_eq!(q.len(), 5);
        assert_eq!(drain(&mut q), ["/hi", "/2", "/1", "/s1", "/s2"]);
        assert!(q.is_empty());
    }

    #[test]
    fn downloader_aware_prefers_idle_slots_round_robin() {
        let activity = Rc::new(SlotActivity::default());
        let mut q = DownloaderAwareQueue::new(memory_queues(false, false), activity.clone());
        for host in ["a", "b", "c"] {
            for i in 0..2 {
                q.push(req(&format!("http://{host}/{i}"), 0)).expect("push");
            }
        }
        activity.add("a", 3);
        let hosts: Vec<String> = (0..4)
            .filter_map(|_| q.pop().expect("pop"))
            .map(|r| r.url().host_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(
            hosts,
            ["b", "c", "b", "c"],
            "busy slot a waits, b and c alternate"
        );
        assert_eq!(
            q.pop().expect("pop").expect("a request").url().host_str(),
            Some("a")
        );
    }

    #[test]
    fn the_factory_sees_slot_priority_and_kind() {
        let seen = Rc::new(std::cell::RefCell::new(Vec::new()));
        let log = seen.clone();
        let factory: QueueFactory = Rc::new(move |k: &QueueKey<'_>| {
            log.borrow_mut()
                .push((k.slot.map(str::to_owned), k.priority, k.start));
            Ok(Box::new(MemoryQueue::new(false)) as Box<dyn RequestQueue>)
        });
        let mut q = DownloaderAwareQueue::new(factory, Rc::new(SlotActivity::default()));
        q.push(req("http://a/1", 3)).expect("push");
        q.push(req("http://a/2", 3)).expect("push");
        q.push(req("http://b/1", -1).with_meta(keys::IS_START_REQUEST, true))
            .expect("push");
        assert_eq!(
            *seen.borrow(),
            [(Some("a".into()), 3, false), (Some("b".into()), -1, true)]
        );
    }
}
