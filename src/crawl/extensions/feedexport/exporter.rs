//! The item exporter interface (Scrapy's `BaseItemExporter`): what a feed format
//! writes before the first item, for each item and after the last, as bytes appended
//! to a buffer (sans-IO: the feed slot hands them to its storage). Also the options
//! every exporter takes — the fields to export (a list, or a map renaming them), the
//! indent, the encoding, `item_export_kwargs` — and the field selection Scrapy's
//! `_get_serialized_fields` makes.

use std::rc::Rc;

use serde_json::{Map, Value};

use super::encoding::{EncodeError, TextEncoding};
use crate::crawl::base::item::Item;

/// A feed format's writer (Scrapy's `BaseItemExporter` subclasses).
pub trait ItemExporter {
    /// Appends what comes before the first item (`[`, an XML declaration).
    fn start_exporting(&mut self, out: &mut Vec<u8>);

    /// Appends one item.
    ///
    /// # Errors
    ///
    /// The item holds a character the feed's encoding cannot write: nothing is
    /// appended and the item is left out of the feed (Scrapy's `UnicodeEncodeError`).
    fn export_item(&mut self, item: &Item, out: &mut Vec<u8>) -> Result<(), EncodeError>;

    /// Appends what comes after the last item (`]`, the XML root's end).
    fn finish_exporting(&mut self, out: &mut Vec<u8>);

    /// The output already holds the start and `items` items (a JOBDIR resume of a
    /// file a previous run wrote): go on after them.
    fn resume(&mut self, _items: u64) {}
}

/// What an exporter is built from: the feed's options as Scrapy's `FeedSlot` passes
/// them to the exporter class.
#[derive(Debug, Clone, Default)]
pub struct ExporterOptions {
    /// The format's name as the feed gives it (`jl`, `json`).
    pub format: String,
    /// `fields`: `(item field, output name)` pairs in order (a list names both the
    /// same); `None`: every field of each item.
    pub fields: Option<Vec<(String, String)>>,
    /// `indent` (`None`: Python's `None`).
    pub indent: Option<usize>,
    /// `encoding` (`None`: Python's `None`, which the JSON exporters answer with
    /// ASCII-only text and the others with UTF-8).
    pub encoding: Option<TextEncoding>,
    /// `item_export_kwargs`: the exporter's own options.
    pub kwargs: Map<String, Value>,
}

/// Builds an exporter (`FEED_EXPORTERS`); an `Err` is a start-up error naming the
/// option at fault.
pub type ExporterFactory = Rc<dyn Fn(&ExporterOptions) -> Result<Box<dyn ItemExporter>, String>>;

/// Reads `item_export_kwargs`: each exporter takes its keys out, and what is left is
/// refused by [`finish`](Self::finish).
#[derive(Debug)]
pub struct Kwargs {
    format: String,
    rest: Map<String, Value>,
}

impl Kwargs {
    /// The options' `item_export_kwargs`, with the keys every exporter refuses
    /// (`indent`, `encoding`, `fields_to_export`: the feed's own options, which Scrapy
    /// passes too, so that a second value is Python's `TypeError`).
    ///
    /// # Errors
    ///
    /// One of those keys is present.
    pub fn new(opts: &ExporterOptions) -> Result<Self, String> {
        for (key, option) in [
            ("indent", "indent"),
            ("encoding", "encoding"),
            ("fields_to_export", "fields"),
        ] {
            if opts.kwargs.contains_key(key) {
                return Err(format!(
                    "item_export_kwargs may not hold {key:?}: set the feed's {option:?} option \
                     (Scrapy fails with \"got multiple values for keyword argument '{key}'\")"
                ));
            }
        }
        Ok(Self {
            format: opts.format.clone(),
            rest: opts.kwargs.clone(),
        })
    }

    /// Takes a boolean option.
    ///
    /// # Errors
    ///
    /// The value is not a boolean.
    pub fn bool(&mut self, key: &str, default: bool) -> Result<bool, String> {
        match self.rest.remove(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(b),
            Some(other) => Err(format!(
                "item_export_kwargs {key:?} must be true or false, not {other}"
            )),
        }
    }

    /// Takes a string option.
    ///
    /// # Errors
    ///
    /// The value is not a string.
    pub fn string(&mut self, key: &str) -> Result<Option<String>, String> {
        match self.rest.remove(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(format!(
                "item_export_kwargs {key:?} must be a string, not {other}"
            )),
        }
    }

    /// Takes any value.
    pub fn value(&mut self, key: &str) -> Option<Value> {
        self.rest.remove(key)
    }

    /// Refuses the keys no one took (Scrapy: `TypeError: Unexpected options`).
    ///
    /// # Errors
    ///
    /// A key is left; the message names what the exporter takes.
    pub fn finish(self, known: &[&str]) -> Result<(), String> {
        if self.rest.is_empty() {
            return Ok(());
        }
        let unknown: Vec<&str> = self.rest.keys().map(String::as_str).collect();
        Err(format!(
            "item_export_kwargs: unexpected options for the {} exporter: {} (it takes {})",
            self.format,
            unknown.join(", "),
            known.join(", ")
        ))
    }
}

/// `None`, the value Scrapy's JSON exporters give a missing field with
/// `export_empty_fields`.
pub static NONE: Value = Value::Null;
/// `""`, the value the XML and CSV exporters give a missing field.
pub static EMPTY: Value = Value::String(String::new());

/// An item's fields as Scrapy's `_get_serialized_fields` yields them: `(output name,
/// value)` in the order of `fields` (or of the item), a field the item lacks left out
/// or, with `include_empty`, given `default`.
pub fn serialized_fields<'a>(
    item: &'a Item,
    fields: Option<&'a [(String, String)]>,
    include_empty: bool,
    default: &'a Value,
) -> SerializedFields<'a> {
    SerializedFields {
        item,
        fields,
        include_empty,
        default,
        at: 0,
        own: item.0.iter(),
    }
}

/// The iterator of [`serialized_fields`].
#[derive(Debug)]
pub struct SerializedFields<'a> {
    item: &'a Item,
    fields: Option<&'a [(String, String)]>,
    include_empty: bool,
    default: &'a Value,
    at: usize,
    own: serde_json::map::Iter<'a>,
}

impl<'a> Iterator for SerializedFields<'a> {
    type Item = (&'a str, &'a Value);

    fn next(&mut self) -> Option<Self::Item> {
        let Some(fields) = self.fields else {
            return self.own.next().map(|(k, v)| (k.as_str(), v));
        };
        while let Some((field, output)) = fields.get(self.at) {
            self.at += 1;
            match self.item.get(field) {
                Some(v) => return Some((output.as_str(), v)),
                None if self.include_empty => return Some((output.as_str(), self.default)),
                None => {}
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_select_rename_and_fill() {
        let item = Item(json!({"a": 1, "b": 2}).as_object().unwrap().clone());
        let fields = vec![
            ("b".to_owned(), "B".to_owned()),
            ("missing".to_owned(), "missing".to_owned()),
            ("a".to_owned(), "a".to_owned()),
        ];
        let got: Vec<(&str, &Value)> =
            serialized_fields(&item, Some(&fields), false, &NONE).collect();
        assert_eq!(got, vec![("B", &json!(2)), ("a", &json!(1))]);
        let got: Vec<(&str, &Value)> =
            serialized_fields(&item, Some(&fields), true, &EMPTY).collect();
        assert_eq!(got[1], ("missing", &json!("")));
        assert_eq!(serialized_fields(&item, None, true, &NONE).count(), 2);
    }
}
