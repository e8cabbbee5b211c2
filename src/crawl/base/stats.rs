//! Stats collectors (`STATS_CLASS`) with Scrapy's key names (`downloader/request_count`,
//! `item_scraped_count`, `finish_reason`...), dumped at close like Scrapy's
//! "Dumping Scrapy stats".
//!
//! [`StatsCollector`] is the seam (Scrapy's `StatsCollector` API); the built-ins are
//! [`MemoryStatsCollector`] (the default) and [`DummyStatsCollector`] (keeps nothing).
//! A collector that writes elsewhere (a Redis hash shared by many workers) implements
//! the trait; `open`/`close` return Deferreds so it can connect and flush.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
#[cfg(test)]
use std::rc::Rc;

use crate::defer::Deferred;
use crate::util::FxBuildHasher;
use indexmap::IndexMap;
use std::fmt;

use serde_json::Value;

/// What a stats collector does. Every method takes `&self` (collectors are shared by
/// every component of a crawl).
pub trait StatsCollector {
    /// A stat's value.
    fn get_value(&self, key: &str) -> Option<Value>;

    /// Every stat, sorted by key.
    fn get_stats(&self) -> BTreeMap<String, Value>;

    /// Sets a stat.
    fn set_value(&self, key: &str, value: Value);

    /// Adds `n` to an integer stat (created at 0).
    fn inc_value(&self, key: &str, n: i64);

    /// Keeps the larger of the stat and `value`.
    fn max_value(&self, key: &str, value: i64);

    /// Keeps the smaller of the stat and `value`.
    fn min_value(&self, key: &str, value: i64);

    /// Forgets every stat.
    fn clear(&self);

    /// The spider opened (Scrapy's `open_spider`).
    fn open(&self) -> Deferred<()> {
        crate::defer::succeed(())
    }

    /// The spider closed (Scrapy's `close_spider`): persist, flush.
    fn close(&self, reason: &str) -> Deferred<()> {
        let _ = reason;
        crate::defer::succeed(())
    }

    /// Increments by one.
    fn inc(&self, key: &str) {
        self.inc_value(key, 1);
    }

    /// An integer stat (0 when absent).
    fn get_int(&self, key: &str) -> i64 {
        self.get_value(key).and_then(|v| v.as_i64()).unwrap_or(0)
    }

    /// The dump as Scrapy prints it: one `'key': value` per line in braces.
    fn format_dump(&self) -> String {
        let v = self.get_stats();
        let mut out = String::from("{");
        for (i, (k, val)) in v.iter().enumerate() {
            if i > 0 {
                out.push_str(",\n ");
            }
            out.push_str(&format!("'{k}': {val}"));
        }
        out.push('}');
        out
    }
}

impl dyn StatsCollector {
    /// Increments `prefix` + `suffix` by one, building the key in a reused buffer (no
    /// allocation once the stat exists): `inc_joined("downloader/response_status_count/", 200)`.
    pub fn inc_joined(&self, prefix: &str, suffix: impl std::fmt::Display) {
        use std::fmt::Write as _;
        thread_local! {
            static KEY: RefCell<String> = const { RefCell::new(String::new()) };
        }
        KEY.with(|k| {
            let mut k = k.borrow_mut();
            k.clear();
            k.push_str(prefix);
            let _ = write!(k, "{suffix}");
            self.inc_value(&k, 1);
        });
    }
}

impl fmt::Debug for dyn StatsCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.format_dump())
    }
}

/// Scrapy's `MemoryStatsCollector`: the stats of one crawl in memory.
///
/// A crawl updates a few dozen keys, each many times a page (`dupefilter/filtered`
/// and `request_depth_max` once per extracted link): a small table of recent keys,
/// by length and last bytes, remembers where each one is in the map, and a hit is a
/// compare of the key instead of hashing it and probing.
#[derive(Default)]
pub struct MemoryStatsCollector {
    values: RefCell<IndexMap<String, Value, FxBuildHasher>>,
    /// Where a recent key was found, plus one (0: nothing); checked against the key.
    recent: [Cell<u32>; RECENT],
}

/// Slots of [`MemoryStatsCollector`]'s recent-key table.
const RECENT: usize = 32;

impl MemoryStatsCollector {
    /// No stats.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value of `key`, found through the recent-key table when it can be;
    /// `None` when the key is absent.
    fn find<'m>(
        &self,
        map: &'m mut IndexMap<String, Value, FxBuildHasher>,
        key: &str,
    ) -> Option<&'m mut Value> {
        let b = key.as_bytes();
        let last = usize::from(b.last().copied().unwrap_or(0));
        let before = usize::from(b.len().checked_sub(2).map_or(0, |i| b[i]));
        let h = (b.len() ^ (last * 7) ^ (before * 3)) % RECENT;
        let cell = &self.recent[h];
        let at = (cell.get() as usize).wrapping_sub(1);
        let at = if map.get_index(at).is_some_and(|(k, _)| k == key) {
            at
        } else {
            let at = map.get_index_of(key)?;
            cell.set(u32::try_from(at + 1).unwrap_or(0));
            at
        };
        map.get_index_mut(at).map(|(_, v)| v)
    }

    /// Sets `key` to `value` when it is absent, not an integer, or `better(current)`.
    fn replace_if(&self, key: &str, value: i64, better: impl Fn(i64) -> bool) {
        let mut v = self.values.borrow_mut();
        match self.find(&mut v, key) {
            Some(slot) => {
                if slot.as_i64().is_none_or(better) {
                    *slot = value.into();
                }
            }
            None => {
                v.insert(key.to_owned(), value.into());
            }
        }
    }
}

impl StatsCollector for MemoryStatsCollector {
    fn inc_value(&self, key: &str, n: i64) {
        let mut v = self.values.borrow_mut();
        match self.find(&mut v, key) {
            Some(Value::Number(num)) => {
                let cur = num.as_i64().unwrap_or(0);
                *num = (cur + n).into();
            }
            Some(other) => *other = n.into(),
            None => {
                v.insert(key.to_owned(), n.into());
            }
        }
    }

    fn set_value(&self, key: &str, value: Value) {
        let mut v = self.values.borrow_mut();
        // An existing key is updated in place: its name is not copied again.
        match self.find(&mut v, key) {
            Some(slot) => *slot = value,
            None => {
                v.insert(key.to_owned(), value);
            }
        }
    }

    fn max_value(&self, key: &str, value: i64) {
        self.replace_if(key, value, |cur| value > cur);
    }

    fn min_value(&self, key: &str, value: i64) {
        self.replace_if(key, value, |cur| value < cur);
    }

    fn get_value(&self, key: &str) -> Option<Value> {
        self.values.borrow().get(key).cloned()
    }

    fn get_int(&self, key: &str) -> i64 {
        self.values
            .borrow()
            .get(key)
            .and_then(Value::as_i64)
            .unwrap_or(0)
    }

    fn get_stats(&self) -> BTreeMap<String, Value> {
        self.values
            .borrow()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    fn clear(&self) {
        self.values.borrow_mut().clear();
    }
}

impl fmt::Debug for MemoryStatsCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.format_dump())
    }
}

/// Scrapy's `DummyStatsCollector`: keeps nothing (`STATS_CLASS` for the fastest crawls).
#[derive(Debug, Default)]
pub struct DummyStatsCollector;

impl StatsCollector for DummyStatsCollector {
    fn get_value(&self, _key: &str) -> Option<Value> {
        None
    }

    fn get_stats(&self) -> BTreeMap<String, Value> {
        BTreeMap::new()
    }

    fn set_value(&self, _key: &str, _value: Value) {}

    fn inc_value(&self, _key: &str, _n: i64) {}

    fn max_value(&self, _key: &str, _value: i64) {}

    fn min_value(&self, _key: &str, _value: i64) {}

    fn clear(&self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random updates of keys that share recent-key slots, with clears and values of
    /// other types between them, answer as a plain map does.
    #[test]
    fn the_recent_key_table_answers_as_a_map() {
        let m = MemoryStatsCollector::new();
        let mut model: BTreeMap<String, Value> = BTreeMap::new();
        let keys: Vec<String> = (0..200)
            .map(|i| format!("k/{}{}", "x".repeat(i % 7), i))
            .collect();
        let mut next = crate::util::xorshift(0x9E37_79B9_7F4A_7C15);
        for step in 0..50_000 {
            let state = next();
            let key = &keys[(state % 200) as usize];
            let n = (state >> 20) as i64 % 100;
            match (state >> 40) % 6 {
                0 | 1 => {
                    m.inc_value(key, n);
                    let e = model.entry(key.clone()).or_insert(Value::from(0));
                    *e = Value::from(e.as_i64().map_or(n, |c| c + n));
                }
                2 => {
                    m.max_value(key, n);
                    let e = model.entry(key.clone()).or_insert(Value::from(n));
                    if e.as_i64().is_none_or(|c| n > c) {
                        *e = Value::from(n);
                    }
                }
                3 => {
                    m.min_value(key, n);
                    let e = model.entry(key.clone()).or_insert(Value::from(n));
                    if e.as_i64().is_none_or(|c| n < c) {
                        *e = Value::from(n);
                    }
                }
                4 => {
                    m.set_value(key, Value::from("text"));
                    model.insert(key.clone(), Value::from("text"));
                }
                _ => {
                    if step % 997 == 0 {
                        m.clear();
                        model.clear();
                    }
                }
            }
            assert_eq!(m.get_value(key), model.get(key).cloned(), "{key} at {step}");
        }
        assert_eq!(m.get_stats(), model);
    }

    #[test]
    fn memory_and_dummy_collectors() {
        let m: Rc<dyn StatsCollector> = Rc::new(MemoryStatsCollector::new());
        m.inc("a");
        m.inc_value("a", 2);
        m.inc_joined("status/", 200);
        m.max_value("max", 3);
        m.max_value("max", 1);
        m.min_value("min", 3);
        m.min_value("min", 1);
        m.set_value("s", Value::from("x"));
        assert_eq!(m.get_int("a"), 3);
        assert_eq!(m.get_int("status/200"), 1);
        assert_eq!((m.get_int("max"), m.get_int("min")), (3, 1));
        assert!(m.format_dump().contains("'s': \"x\""));
        let d: Rc<dyn StatsCollector> = Rc::new(DummyStatsCollector);
        d.inc("a");
        assert_eq!(d.get_int("a"), 0);
        assert!(d.get_stats().is_empty());
    }
}
