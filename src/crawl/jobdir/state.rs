//! [`SpiderState`]: Scrapy's `spider.state`, kept in the job and restored on resume.

use std::cell::{Cell, RefCell};

use serde_json::{Map, Value};

/// The spider's state (Scrapy's `spider.state`), kept in the job.
#[derive(Debug, Default)]
pub struct SpiderState {
    map: RefCell<Map<String, Value>>,
    dirty: Cell<bool>,
}

impl SpiderState {
    /// A value.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.map.borrow().get(key).cloned()
    }

    /// Sets a value (persisted at the next commit).
    pub fn set(&self, key: &str, value: impl Into<Value>) {
        self.map.borrow_mut().insert(key.to_owned(), value.into());
        self.dirty.set(true);
    }

    /// Changes the map in place.
    pub fn update<R>(&self, f: impl FnOnce(&mut Map<String, Value>) -> R) -> R {
        let r = f(&mut self.map.borrow_mut());
        self.dirty.set(true);
        r
    }

    /// A copy of the whole state.
    pub fn snapshot(&self) -> Map<String, Value> {
        self.map.borrow().clone()
    }

    /// Whether it changed since the last call (the job writes it at the next commit).
    pub(super) fn take_dirty(&self) -> bool {
        self.dirty.replace(false)
    }

    /// Puts back the state a resume found.
    pub(super) fn restore(&self, map: Map<String, Value>) {
        *self.map.borrow_mut() = map;
    }
}
