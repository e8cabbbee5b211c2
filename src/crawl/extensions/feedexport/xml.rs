//! Scrapy's `XmlItemExporter`, byte for byte: Python's `XMLGenerator` writing
//! `<?xml version="1.0" encoding="E"?>`, a root element (`items`) holding one element
//! per item (`item`; both renamed by `item_export_kwargs` `root_element` /
//! `item_element`), a field as an element named verbatim, a map as child elements, a
//! list as `<value>` children, any other value as Python's `str()` with `&`, `<`, `>`
//! escaped. `FEED_EXPORT_INDENT`: `None` writes no line breaks, `0` one item per line,
//! `N` indents every level by `N` spaces. Characters outside the encoding become
//! `&#N;` references (`xmlcharrefreplace`), names included.

use serde_json::Value;

use super::encoding::{EncodeError, TextEncoding};
use super::exporter::{EMPTY, ExporterOptions, ItemExporter, Kwargs, serialized_fields};
use crate::crawl::base::item::Item;
use crate::crawl::util::pyjson::python_number_str;

const KNOWN: &[&str] = &["item_element", "root_element", "export_empty_fields"];

/// `XmlItemExporter`.
#[derive(Debug)]
pub struct XmlExporter {
    fields: Option<Vec<(String, String)>>,
    export_empty_fields: bool,
    item_element: String,
    root_element: String,
    indent: Option<usize>,
    encoding: TextEncoding,
    /// The text being written (reused), encoded at the end of each call.
    text: String,
}

impl XmlExporter {
    /// Builds the exporter.
    ///
    /// # Errors
    ///
    /// An `item_export_kwargs` key it does not take, or a malformed value.
    pub fn new(opts: &ExporterOptions) -> Result<Self, String> {
        let mut kw = Kwargs::new(opts)?;
        let item_element = kw.string("item_element")?.unwrap_or_else(|| "item".into());
        let root_element = kw.string("root_element")?.unwrap_or_else(|| "items".into());
        let export_empty_fields = kw.bool("export_empty_fields", false)?;
        kw.finish(KNOWN)?;
        Ok(Self {
            fields: opts.fields.clone(),
            export_empty_fields,
            item_element,
            root_element,
            indent: opts.indent,
            encoding: opts.encoding.clone().unwrap_or_else(TextEncoding::utf8),
            text: String::new(),
        })
    }

    /// `_beautify_newline`: a line break with an indent, or (`new_item`) with any
    /// indent but `None`.
    fn newline(&mut self, new_item: bool) {
        if let Some(indent) = self.indent
            && (indent > 0 || new_item)
        {
            self.text.push('\n');
        }
    }

    /// `_beautify_indent`.
    fn indent(&mut self, depth: usize) {
        if let Some(indent) = self.indent {
            for _ in 0..indent * depth {
                self.text.push(' ');
            }
        }
    }

    fn start_element(&mut self, name: &str) {
        self.text.push('<');
        self.text.push_str(name);
        self.text.push('>');
    }

    fn end_element(&mut self, name: &str) {
        self.text.push_str("</");
        self.text.push_str(name);
        self.text.push('>');
    }

    /// `XMLGenerator.characters`: `&`, `<` and `>` escaped.
    fn characters(&mut self, s: &str) {
        for c in s.chars() {
            match c {
                '&' => self.text.push_str("&amp;"),
                '<' => self.text.push_str("&lt;"),
                '>' => self.text.push_str("&gt;"),
                c => self.text.push(c),
            }
        }
    }

    /// `_export_xml_field`.
    fn field(&mut self, name: &str, value: &Value, depth: usize) {
        self.indent(depth);
        self.start_element(name);
        match value {
            Value::Object(map) => {
                self.newline(false);
                for (k, v) in map {
                    self.field(k, v, depth + 1);
                }
                self.indent(depth);
            }
            Value::Array(values) => {
                self.newline(false);
                for v in values {
                    self.field("value", v, depth + 1);
                }
                self.indent(depth);
            }
            Value::String(s) => self.characters(s),
            Value::Null => self.characters("None"),
            Value::Bool(b) => self.characters(if *b { "True" } else { "False" }),
            Value::Number(n) => self.characters(&python_number_str(n)),
        }
        self.end_element(name);
        self.newline(false);
    }

    fn flush(&mut self, out: &mut Vec<u8>) {
        self.encoding.encode_xml_into(&self.text, out);
        self.text.clear();
    }
}

impl ItemExporter for XmlExporter {
    fn start_exporting(&mut self, out: &mut Vec<u8>) {
        self.text.clear();
        self.text.push_str("<?xml version=\"1.0\" encoding=\"");
        self.text.push_str(&self.encoding.name);
        self.text.push_str("\"?>\n");
        let root = std::mem::take(&mut self.root_element);
        self.start_element(&root);
        self.root_element = root;
        self.newline(true);
        self.flush(out);
    }

    fn export_item(&mut self, item: &Item, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        self.text.clear();
        self.indent(1);
        let element = std::mem::take(&mut self.item_element);
        self.start_element(&element);
        self.newline(false);
        let fields = self.fields.take();
        for (name, value) in
            serialized_fields(item, fields.as_deref(), self.export_empty_fields, &EMPTY)
        {
            self.field(name, value, 2);
        }
        self.fields = fields;
        self.indent(1);
        self.end_element(&element);
        self.item_element = element;
        self.newline(true);
        self.flush(out);
        Ok(())
    }

    fn finish_exporting(&mut self, out: &mut Vec<u8>) {
        self.text.clear();
        let root = std::mem::take(&mut self.root_element);
        self.end_element(&root);
        self.root_element = root;
        self.flush(out);
    }
}
