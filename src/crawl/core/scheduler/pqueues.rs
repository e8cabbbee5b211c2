//! The priority queues over any downstream queue (Scrapy's `scrapy.pqueues`):
//! [`PriorityQueue`] (`ScrapyPriorityQueue`) and [`DownloaderAwareQueue`]
//! (`DownloaderAwarePriorityQueue`), selected by `SCHEDULER_PRIORITY_QUEUE`.
//!
//! A priority queue asks a [`QueueFactory`] for one downstream queue per
//! ([`QueueKey`]) slot, priority and kind (start requests wait in their own queues), so
//! the same priority logic runs over memory queues and over disk queues (JOBDIR).

use std::collections::BTreeSet;
use std::fmt;
use std::ops::Bound;
use std::rc::Rc;

use super::queues::{QueueFactory, QueueKey, RequestQueue};
use crate::crawl::base::settings::normalize_component;
use crate::crawl::base::slots::{ChangeFeed, SlotActivity};
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
    /// By priority, ascending (the last pops first). A sorted `Vec`: a queue holds few
    /// priorities, and the downloader-aware queue keeps one of these per slot, where a
    /// `BTreeMap`'s first node (room for 11) cost 400 bytes for one priority.
    levels: Vec<(i32, Level)>,
    factory: QueueFactory,
    slot: Option<String>,
    len: usize,
}

impl PriorityQueue {
    /// An empty priority queue over `factory`'s queues (`slot` names the download slot
    /// for a downloader-aware parent).
    pub fn new(factory: QueueFactory, slot: Option<String>) -> Self {
        Self {
            levels: Vec::new(),
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
        let at = match self.levels.binary_search_by_key(&priority, |(p, _)| *p) {
            Ok(at) => at,
            Err(at) => {
                self.levels.insert(
                    at,
                    (
                        priority,
                        Level {
                            normal: None,
                            start: None,
                        },
                    ),
                );
                at
            }
        };
        let level = &mut self.levels[at].1;
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
        let Some((_, level)) = self.levels.last_mut() else {
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
            && let Some((_, mut level)) = self.levels.pop()
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
        for (_, level) in &mut self.levels {
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
            .field(
                "priorities",
                &self.levels.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Scrapy's `DownloaderAwarePriorityQueue`: one [`PriorityQueue`] per download slot;
/// pops from the slot with the fewest active downloads, so one busy host cannot starve
/// the others. Ties go as in Scrapy 2.19's `_next_slot`: the first slot name after the
/// last one chosen, in byte order, wrapping around to the smallest.
///
/// Scrapy asks every queued slot's count at each pop; here the queued slots are kept
/// ordered by (active downloads, name), re-filed only when the downloader reports a
/// slot's count changed ([`SlotActivity::subscribe`]): a pop costs O(log slots), not
/// O(slots), which is what a crawl of 10,000 hosts needs. [`next_slot`] is the
/// reference it agrees with.
pub struct DownloaderAwareQueue {
    /// Each slot's queue and the active count it is filed under in `order`.
    slots: SeededMap<Rc<str>, (PriorityQueue, usize)>,
    /// The queued slots by (active downloads, name): the first is the least busy.
    order: BTreeSet<(usize, Rc<str>)>,
    /// Slots whose count changed since the last pop.
    changes: ChangeFeed,
    /// Drained changes (kept for its capacity).
    scratch: Vec<Rc<str>>,
    /// The slot the last pop came from.
    last_selected: Option<Rc<str>>,
    activity: Rc<SlotActivity>,
    factory: QueueFactory,
    len: usize,
}

impl DownloaderAwareQueue {
    /// An empty queue reading the downloader's per-slot activity.
    pub fn new(factory: QueueFactory, activity: Rc<SlotActivity>) -> Self {
        Self {
            slots: SeededMap::default(),
            order: BTreeSet::new(),
            changes: activity.subscribe(),
            scratch: Vec::new(),
            last_selected: None,
            activity,
            factory,
            len: 0,
        }
    }

    /// The queue of `slot`, made (and filed under its current count) if new.
    fn slot_queue(&mut self, slot: &str) -> Result<&mut PriorityQueue, Failure> {
        if !self.slots.contains_key(slot) {
            let name: Rc<str> = Rc::from(slot);
            let active = self.activity.active(slot);
            let q = PriorityQueue::new(self.factory.clone(), Some(slot.to_owned()));
            self.order.insert((active, name.clone()));
            self.slots.insert(name, (q, active));
        }
        self.slots
            .get_mut(slot)
            .map(|(q, _)| q)
            .ok_or_else(|| Failure::msg(format!("slot {slot:?} vanished from its queue")))
    }

    /// Re-files the queued slots whose active count changed.
    fn refresh(&mut self) {
        std::mem::swap(&mut self.scratch, &mut *self.changes.borrow_mut());
        for name in self.scratch.drain(..) {
            if let Some((_, filed)) = self.slots.get_mut(&*name) {
                let now = self.activity.active(&name);
                if now != *filed {
                    self.order.remove(&(*filed, name.clone()));
                    self.order.insert((now, name));
                    *filed = now;
                }
            }
        }
    }

    /// The slot to pop from: the least busy; among those, the first name after the
    /// last one chosen, else the first.
    fn choose(&self) -> Option<Rc<str>> {
        let (min, first) = self.order.first()?;
        let after_last = self.last_selected.as_ref().and_then(|last| {
            self.order
                .range((Bound::Excluded((*min, last.clone())), Bound::Unbounded))
                .next()
                .filter(|(active, _)| active == min)
        });
        Some(after_last.map_or_else(|| first.clone(), |(_, name)| name.clone()))
    }
}

impl RequestQueue for DownloaderAwareQueue {
    fn push(&mut self, request: Request) -> Result<(), Failure> {
        let key = self.activity.slot_key(&request);
        self.slot_queue(&key)?.push(request)?;
        self.len += 1;
        Ok(())
    }

    fn pop(&mut self) -> Result<Option<Request>, Failure> {
        self.refresh();
        let Some(key) = self.choose() else {
            return Ok(None);
        };
        self.last_selected = Some(key.clone());
        let Some((q, filed)) = self.slots.get_mut(&*key) else {
            return Ok(None);
        };
        let before = q.len();
        let r = q.pop();
        // A disk queue that fails to read a request back has still taken it out.
        self.len -= before - q.len();
        if q.is_empty() {
            let filed = *filed;
            self.order.remove(&(filed, key.clone()));
            if let Some((mut q, _)) = self.slots.remove(&*key) {
                q.close()?;
            }
        }
        r
    }

    fn push_stored(&mut self, key: &QueueKey<'_>, stored: u64, front: bool) -> Result<(), Failure> {
        let slot = key.slot.unwrap_or("");
        self.slot_queue(slot)?.push_stored(key, stored, front)?;
        self.len += 1;
        Ok(())
    }

    fn len(&self) -> usize {
        self.len
    }

    fn close(&mut self) -> Result<(), Failure> {
        let mut first_error = None;
        for (q, _) in self.slots.values_mut() {
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
        let mut slots: Vec<&str> = self.slots.keys().map(|k| &**k).collect();
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
    use std::collections::BTreeMap;

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
    fn the_indexed_choice_is_scrapys_scan_under_random_activity() {
        // Pushes, pops and activity changes at random; every pop must come from the
        // slot Scrapy's scan (`next_slot` over the queued slots) picks.
        let activity = Rc::new(SlotActivity::default());
        let mut q = DownloaderAwareQueue::new(memory_queues(false, false), activity.clone());
        let mut queued: BTreeMap<String, usize> = BTreeMap::new();
        let mut last: Option<String> = None;
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut pops = 0;
        for _ in 0..20_000 {
            let host = format!("h{}", next(40));
            match next(10) {
                0..=3 => {
                    q.push(req(&format!("http://{host}/"), 0)).expect("push");
                    *queued.entry(host).or_default() += 1;
                }
                4..=5 => activity.add(&host, 1),
                6 => activity.add(&host, -1),
                _ => {
                    let want = next_slot(
                        queued.keys().map(String::as_str),
                        &activity,
                        last.as_deref(),
                    )
                    .map(str::to_owned);
                    let got = q
                        .pop()
                        .expect("pop")
                        .and_then(|r| r.url().host_str().map(str::to_owned));
                    assert_eq!(got, want, "pop {pops}");
                    if let Some(h) = &got {
                        pops += 1;
                        let n = queued.get_mut(h).expect("queued");
                        *n -= 1;
                        if *n == 0 {
                            queued.remove(h);
                        }
                        last = got;
                    }
                }
            }
            assert_eq!(q.len(), queued.values().sum::<usize>());
        }
        assert!(pops > 3_000, "{pops} pops");
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
