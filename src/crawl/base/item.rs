//! [`Item`]: scraped data. Any `serde::Serialize` value converts into one; the
//! representation is a JSON object with keys in insertion order (as a Python dict), so
//! pipelines can read and change fields and feed exporters write them in order.

use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

/// A scraped item: a JSON object.
///
/// # Examples
///
/// ```
/// use trawl::crawl::Item;
///
/// #[derive(serde::Serialize)]
/// struct Quote { text: String, author: String }
///
/// let item = Item::from_serialize(&Quote { text: "hi".into(), author: "me".into() }).unwrap();
/// assert_eq!(item.get_str("author"), Some("me"));
/// let dynamic = Item::new().with("url", "http://x/").with("n", 3);
/// assert_eq!(serde_json::to_string(&dynamic).unwrap(), r#"{"url":"http://x/","n":3}"#);
/// ```
#[derive(Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Item(pub Map<String, Value>);

impl Item {
    /// An empty item.
    pub fn new() -> Self {
        Self(Map::new())
    }

    /// Converts any serialisable struct or map.
    ///
    /// # Errors
    ///
    /// The value does not serialise to a JSON object.
    pub fn from_serialize<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        match serde_json::to_value(value)? {
            Value::Object(map) => Ok(Self(map)),
            other => {
                let mut map = Map::new();
                map.insert("value".to_owned(), other);
                Ok(Self(map))
            }
        }
    }

    /// Sets a field (builder style).
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.0.insert(key.to_owned(), value.into());
        self
    }

    /// Sets a field.
    pub fn set(&mut self, key: &str, value: impl Into<Value>) {
        self.0.insert(key.to_owned(), value.into());
    }

    /// A field.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// A string field.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    /// Field names in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the item has no fields.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", Value::Object(self.0.clone()))
    }
}

impl From<Map<String, Value>> for Item {
    fn from(map: Map<String, Value>) -> Self {
        Self(map)
    }
}
