//! Scrapy's `JsonLinesItemExporter` and `JsonItemExporter`, byte for byte: Python's
//! `json.dumps` of each item's fields (`ensure_ascii` unless an encoding is set,
//! `sort_keys`, `separators` from `item_export_kwargs`), one per line, or one JSON
//! array with `FEED_EXPORT_INDENT`'s layout (`None`: one line; `0`: an item per line;
//! `N`: items pretty-printed), encoded strictly in the feed's encoding.

use serde_json::Value;

use super::encoding::{Charset, EncodeError, TextEncoding};
use super::exporter::{ExporterOptions, ItemExporter, Kwargs, NONE, serialized_fields};
use crate::crawl::base::item::Item;
use crate::crawl::util::pyjson::{PyJson, dumps_entries_into};

/// What both JSON exporters share: the encoder's options and the field selection.
#[derive(Debug)]
struct JsonCore {
    fields: Option<Vec<(String, String)>>,
    export_empty_fields: bool,
    encoding: Option<TextEncoding>,
    ensure_ascii: bool,
    sort_keys: bool,
    separators: Option<(String, String)>,
    /// The item's text (reused from item to item).
    text: String,
}

const KNOWN: &[&str] = &[
    "ensure_ascii",
    "sort_keys",
    "separators",
    "export_empty_fields",
];

impl JsonCore {
    fn new(opts: &ExporterOptions) -> Result<Self, String> {
        let mut kw = Kwargs::new(opts)?;
        let export_empty_fields = kw.bool("export_empty_fields", false)?;
        let ensure_ascii = kw.bool("ensure_ascii", opts.encoding.is_none())?;
        let sort_keys = kw.bool("sort_keys", false)?;
        let separators = match kw.value("separators") {
            None | Some(Value::Null) => None,
            Some(Value::Array(pair)) => match pair.as_slice() {
                [Value::String(item), Value::String(key)] => Some((item.clone(), key.clone())),
                _ => return Err(separators_error(&Value::Array(pair))),
            },
            Some(other) => return Err(separators_error(&other)),
        };
        kw.finish(KNOWN)?;
        Ok(Self {
            fields: opts.fields.clone(),
            export_empty_fields,
            encoding: opts.encoding.clone(),
            ensure_ascii,
            sort_keys,
            separators,
            text: String::new(),
        })
    }

    fn opts(&self, indent: Option<usize>) -> PyJson<'_> {
        PyJson {
            ensure_ascii: self.ensure_ascii,
            indent,
            compact: false,
            separators: self
                .separators
                .as_ref()
                .map(|(i, k)| (i.as_str(), k.as_str())),
            sort_keys: self.sort_keys,
        }
    }

    /// The item's fields as a JSON object, appended to `text`.
    fn dump(&self, item: &Item, indent: Option<usize>, text: &mut String) {
        let opts = self.opts(indent);
        match self.fields.as_deref() {
            // Every field, in the item's order (the common case, without the selection).
            None => dumps_entries_into(text, item.0.iter().map(|(k, v)| (k.as_str(), v)), opts),
            fields => dumps_entries_into(
                text,
                serialized_fields(item, fields, self.export_empty_fields, &NONE),
                opts,
            ),
        }
    }

    /// Appends `prefix`, the item as JSON and `suffix` to `out`, in the feed's
    /// encoding; nothing on error.
    fn export(
        &mut self,
        item: &Item,
        indent: Option<usize>,
        prefix: &str,
        suffix: &str,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        let utf8 = self
            .encoding
            .as_ref()
            .is_none_or(|e| e.charset == Charset::Utf8);
        if utf8 {
            // Written straight into the output (the feed's bytes are its UTF-8 text).
            match String::from_utf8(std::mem::take(out)) {
                Ok(mut text) => {
                    text.push_str(prefix);
                    self.dump(item, indent, &mut text);
                    text.push_str(suffix);
                    *out = text.into_bytes();
                    return Ok(());
                }
                Err(e) => *out = e.into_bytes(),
            }
        }
        let mut text = std::mem::take(&mut self.text);
        text.clear();
        self.dump(item, indent, &mut text);
        self.text = text;
        self.put(prefix, suffix, out)
    }

    /// Appends `self.text` (after `prefix`) in the feed's encoding; nothing on error.
    fn put(&self, prefix: &str, suffix: &str, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let start = out.len();
        out.extend_from_slice(prefix.as_bytes());
        let encoded = match &self.encoding {
            None => {
                out.extend_from_slice(self.text.as_bytes());
                Ok(())
            }
            Some(e) => e.encode_into(&self.text, out),
        };
        match encoded {
            Ok(()) => {
                out.extend_from_slice(suffix.as_bytes());
                Ok(())
            }
            Err(e) => {
                out.truncate(start);
                Err(e)
            }
        }
    }
}

fn separators_error(v: &Value) -> String {
    format!("item_export_kwargs \"separators\" must be a pair of strings, not {v}")
}

/// `JsonLinesItemExporter`: one JSON object per line (`indent` is ignored, as in
/// Scrapy).
#[derive(Debug)]
pub struct JsonLinesExporter(JsonCore);

impl JsonLinesExporter {
    /// Builds the exporter.
    ///
    /// # Errors
    ///
    /// An `item_export_kwargs` key it does not take, or a malformed value.
    pub fn new(opts: &ExporterOptions) -> Result<Self, String> {
        JsonCore::new(opts).map(Self)
    }
}

impl ItemExporter for JsonLinesExporter {
    fn start_exporting(&mut self, _out: &mut Vec<u8>) {}

    fn export_item(&mut self, item: &Item, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        self.0.export(item, None, "", "\n", out)
    }

    fn finish_exporting(&mut self, _out: &mut Vec<u8>) {}
}

/// `JsonItemExporter`: one JSON array.
#[derive(Debug)]
pub struct JsonExporter {
    core: JsonCore,
    /// `indent`: `None` writes the array on one line; `Some(0)` puts each item on its
    /// own line; `Some(n)` also pretty-prints the items.
    indent: Option<usize>,
    first: bool,
}

impl JsonExporter {
    /// Builds the exporter.
    ///
    /// # Errors
    ///
    /// An `item_export_kwargs` key it does not take, or a malformed value.
    pub fn new(opts: &ExporterOptions) -> Result<Self, String> {
        Ok(Self {
            core: JsonCore::new(opts)?,
            indent: opts.indent,
            first: true,
        })
    }

    fn newline(&self) -> &'static [u8] {
        if self.indent.is_some() { b"\n" } else { b"" }
    }
}

impl ItemExporter for JsonExporter {
    fn start_exporting(&mut self, out: &mut Vec<u8>) {
        out.push(b'[');
        out.extend_from_slice(self.newline());
    }

    fn export_item(&mut self, item: &Item, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let prefix = match (self.first, self.indent.is_some()) {
            (true, _) => "",
            (false, true) => ",\n",
            (false, false) => ",",
        };
        self.core
            .export(item, self.indent.filter(|&i| i > 0), prefix, "", out)?;
        self.first = false;
        Ok(())
    }

    fn finish_exporting(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.newline());
        out.push(b']');
    }

    fn resume(&mut self, items: u64) {
        self.first = items == 0;
    }
}
