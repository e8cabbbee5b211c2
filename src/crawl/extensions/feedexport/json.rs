//! Scrapy's `JsonLinesItemExporter` and `JsonItemExporter`, byte for byte: Python's
//! `json.dumps` of each item's fields (`ensure_ascii` unless an encoding is set,
//! `sort_keys`, `separators` from `item_export_kwargs`), one per line, or one JSON
//! array with `FEED_EXPORT_INDENT`'s layout (`None`: one line; `0`: an item per line;
//! `N`: items pretty-printed), encoded strictly in the feed's encoding.

use serde_json::Value;

use super::encoding::{EncodeError, TextEncoding};
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

    /// The item as JSON text in `self.text`.
    fn dump(&mut self, item: &Item, indent: Option<usize>) {
        let opts = PyJson {
            ensure_ascii: self.ensure_ascii,
            indent,
            compact: false,
            separators: self
                .separators
                .as_ref()
                .map(|(i, k)| (i.as_str(), k.as_str())),
            sort_keys: self.sort_keys,
        };
        self.text.clear();
        let fields = serialized_fields(
            item,
            self.fields.as_deref(),
            self.export_empty_fields,
            &NONE,
        );
        dumps_entries_into(&mut self.text, fields, opts);
    }

    /// Appends `self.text` (after `prefix`) in the feed's encoding; nothing on error.
    fn put(&self, prefix: &[u8], suffix: &[u8], out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let start = out.len();
        out.extend_from_slice(prefix);
        let encoded = match &self.encoding {
            None => {
                out.extend_from_slice(self.text.as_bytes());
                Ok(())
            }
            Some(e) => e.encode_into(&self.text, out),
        };
        match encoded {
            Ok(()) => {
                out.extend_from_slice(suffix);
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
        self.0.dump(item, None);
        self.0.put(b"", b"\n", out)
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
        self.core.dump(item, self.indent.filter(|&i| i > 0));
        let prefix: &[u8] = match (self.first, self.indent.is_some()) {
            (true, _) => b"",
            (false, true) => b",\n",
            (false, false) => b",",
        };
        self.core.put(prefix, b"", out)?;
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
