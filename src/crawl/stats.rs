//! The stats collector with Scrapy's key names (`downloader/request_count`,
//! `item_scraped_count`, `finish_reason`...), dumped at close like Scrapy's
//! "Dumping Scrapy stats".

use std::cell::RefCell;
use std::collections::BTreeMap;

use crate::util::FxHashMap;
use std::fmt;

use serde_json::Value;

/// The stats of one crawl. Keys sort as in Scrapy's pretty-printed dump.
#[derive(Default)]
pub struct Stats {
    values: RefCell<FxHashMap<String, Value>>,
}

impl Stats {
    /// No stats.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `n` to an integer stat (created at 0).
    pub fn inc_value(&self, key: &str, n: i64) {
        let mut v = self.values.borrow_mut();
        match v.get_mut(key) {
            Some(Value::Number(num)) => {
                let cur = num.as_i64().unwrap_or(0);
                *num = (cur + n).into();
            }
            _ => {
                v.insert(key.to_owned(), n.into());
            }
        }
    }

    /// Increments by one.
    pub fn inc(&self, key: &str) {
        self.inc_value(key, 1);
    }

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

    /// Sets a stat.
    pub fn set_value(&self, key: &str, value: impl Into<Value>) {
        self.values
            .borrow_mut()
            .insert(key.to_owned(), value.into());
    }

    /// Keeps the larger of the stat and `value`.
    pub fn max_value(&self, key: &str, value: i64) {
        let mut v = self.values.borrow_mut();
        let cur = v.get(key).and_then(Value::as_i64);
        if cur.is_none_or(|c| value > c) {
            v.insert(key.to_owned(), value.into());
        }
    }

    /// Keeps the smaller of the stat and `value`.
    pub fn min_value(&self, key: &str, value: i64) {
        let mut v = self.values.borrow_mut();
        let cur = v.get(key).and_then(Value::as_i64);
        if cur.is_none_or(|c| value < c) {
            v.insert(key.to_owned(), value.into());
        }
    }

    /// A stat's value.
    pub fn get_value(&self, key: &str) -> Option<Value> {
        self.values.borrow().get(key).cloned()
    }

    /// An integer stat (0 when absent).
    pub fn get_int(&self, key: &str) -> i64 {
        self.values
            .borrow()
            .get(key)
            .and_then(Value::as_i64)
            .unwrap_or(0)
    }

    /// Every stat, sorted by key.
    pub fn get_stats(&self) -> BTreeMap<String, Value> {
        self.values
            .borrow()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Forgets every stat.
    pub fn clear(&self) {
        self.values.borrow_mut().clear();
    }

    /// The dump as Scrapy prints it: one `'key': value` per line in braces.
    pub fn format_dump(&self) -> String {
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

impl fmt::Debug for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.format_dump())
    }
}
