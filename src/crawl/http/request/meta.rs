//! [`Meta`]: a request's `meta`, a small ordered map of JSON values whose first entry
//! lives inline and whose keys set by trawl's own components are static strings.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::keys::KNOWN;

/// `Request.meta`: a small ordered map of JSON values. Linear lookups beat hashing for
/// the handful of keys requests carry. The first entry is held inline (most requests
/// carry one key, `depth`), the others in a vector.
#[derive(Default, PartialEq)]
pub struct Meta {
    /// The first entry; `None` only when `rest` is empty too.
    first: Option<(MetaKey, Value)>,
    rest: Vec<(MetaKey, Value)>,
}

/// Room a copied `meta` keeps for the keys written after a copy: a request's box is
/// copied when a holder writes to it while another holds it (the engine's copy during
/// the download), and the download path then adds `download_slot`, `download_timeout`
/// and `download_latency` — with an exact-size copy, a reallocation.
const COPY_ROOM: usize = 4;

impl Clone for Meta {
    fn clone(&self) -> Self {
        let mut rest = Vec::new();
        if !self.rest.is_empty() {
            rest.reserve_exact(self.rest.len() + COPY_ROOM);
            rest.extend(self.rest.iter().cloned());
        }
        Self {
            first: self.first.clone(),
            rest,
        }
    }
}

/// The `meta` of a request that has none.
pub(super) static NO_META: Meta = Meta::new();

/// A meta key: the middlewares' own keys are static strings, so setting them costs no
/// allocation. Keys compare by text, whichever way they are stored.
#[derive(Clone)]
enum MetaKey {
    Static(&'static str),
    Owned(Box<str>),
}

impl PartialEq for MetaKey {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl std::ops::Deref for MetaKey {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            Self::Static(s) => s,
            Self::Owned(s) => s,
        }
    }
}

impl Meta {
    /// An empty map (no allocation).
    pub const fn new() -> Self {
        Self {
            first: None,
            rest: Vec::new(),
        }
    }

    /// Drops spare capacity (for long-lived requests in a queue).
    pub fn shrink_to_fit(&mut self) {
        self.rest.shrink_to_fit();
    }

    fn entries(&self) -> impl Iterator<Item = &(MetaKey, Value)> {
        self.first.iter().chain(self.rest.iter())
    }

    fn entries_mut(&mut self) -> impl Iterator<Item = &mut (MetaKey, Value)> {
        self.first.iter_mut().chain(self.rest.iter_mut())
    }

    /// Appends an entry whose key is not present.
    fn push(&mut self, entry: (MetaKey, Value)) {
        if self.first.is_none() {
            self.first = Some(entry);
        } else {
            self.rest.push(entry);
        }
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries().find(|(k, _)| &**k == key).map(|(_, v)| v)
    }

    /// A mutable reference to the value under `key`.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.entries_mut()
            .find(|(k, _)| &**k == key)
            .map(|(_, v)| v)
    }

    /// Sets `key`, returning the previous value.
    pub fn insert(&mut self, key: &str, value: impl Into<Value>) -> Option<Value> {
        let value = value.into();
        match self.get_mut(key) {
            Some(v) => Some(std::mem::replace(v, value)),
            None => {
                self.push((MetaKey::Owned(key.into()), value));
                None
            }
        }
    }

    /// Sets `key`, stored without allocation when it is one of trawl's own keys (used
    /// when decoding requests).
    pub fn insert_known(&mut self, key: &str, value: impl Into<Value>) -> Option<Value> {
        match KNOWN.binary_search(&key) {
            Ok(i) => self.insert_static(KNOWN[i], value),
            Err(_) => self.insert(key, value),
        }
    }

    /// Whether `key` is stored as a static string (no allocation): what memory tests
    /// check on decoded requests.
    pub fn key_is_static(&self, key: &str) -> bool {
        self.entries()
            .any(|(k, _)| matches!(k, MetaKey::Static(s) if *s == key))
    }

    /// Sets a `'static` key without allocating it.
    pub fn insert_static(&mut self, key: &'static str, value: impl Into<Value>) -> Option<Value> {
        let value = value.into();
        match self.get_mut(key) {
            Some(v) => Some(std::mem::replace(v, value)),
            None => {
                self.push((MetaKey::Static(key), value));
                None
            }
        }
    }

    /// Removes `key`.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        if self.first.as_ref().is_some_and(|(k, _)| &**k == key) {
            let next = (!self.rest.is_empty()).then(|| self.rest.remove(0));
            return std::mem::replace(&mut self.first, next).map(|(_, v)| v);
        }
        let i = self.rest.iter().position(|(k, _)| &**k == key)?;
        Some(self.rest.remove(i).1)
    }

    /// Whether `key` is set (to anything, `null` included).
    pub fn contains_key(&self, key: &str) -> bool {
        self.entries().any(|(k, _)| &**k == key)
    }

    /// A boolean value (JSON `true`/`false`, or a truthy number); false when absent.
    pub fn get_bool(&self, key: &str) -> bool {
        match self.get(key) {
            Some(Value::Bool(b)) => *b,
            Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
            Some(Value::String(s)) => !s.is_empty(),
            _ => false,
        }
    }

    /// An integer value.
    pub fn get_i64(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(Value::as_i64)
    }

    /// A float value (integers convert).
    pub fn get_f64(&self, key: &str) -> Option<f64> {
        self.get(key).and_then(Value::as_f64)
    }

    /// A string value.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    /// The number of keys.
    pub fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// Keys and values in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.entries().map(|(k, v)| (&**k, v))
    }
}

impl fmt::Debug for Meta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Serialize for Meta {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for Meta {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        let mut meta = Meta::new();
        for (k, v) in map {
            // A JSON object's keys are distinct: each is appended.
            let key = match KNOWN.binary_search(&k.as_str()) {
                Ok(i) => MetaKey::Static(KNOWN[i]),
                Err(_) => MetaKey::Owned(k.into_boxed_str()),
            };
            meta.push((key, v));
        }
        Ok(meta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_meta_keys_are_sorted() {
        assert!(KNOWN.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_copy_is_equal_and_has_room_for_the_download_keys() {
        for n in 0..6 {
            let mut m = Meta::new();
            for i in 0..n {
                m.insert(&format!("k{i}"), i);
            }
            let copy = m.clone();
            assert!(copy == m, "{n}");
            assert_eq!(copy.len(), n);
            let room = copy.rest.capacity() - copy.rest.len();
            assert!(n < 2 || room >= COPY_ROOM, "{n}: room for {room}");
            // Three more keys written to the copy do not move its entries.
            let mut copy = copy;
            let at = copy.rest.as_ptr();
            for key in ["download_slot", "download_timeout", "download_latency"] {
                copy.insert_static(key, 1);
            }
            assert!(n < 2 || copy.rest.as_ptr() == at, "{n}: reallocated");
            assert_eq!(copy.len(), n + 3);
        }
    }
}
