//! Scrapy's `CsvItemExporter`, byte for byte: a header line of the first item's keys
//! (or of the feed's fields; their output names when the fields rename), then one row
//! per item with Python's `csv` quoting (`QUOTE_MINIMAL`), lists of strings joined with
//! `join_multivalued`, other values as Python's `str()`. `item_export_kwargs`:
//! `include_headers_line`, `join_multivalued`, and the `csv.writer` options
//! `delimiter`, `quotechar`, `lineterminator`.

use serde_json::Value;

use super::encoding::{EncodeError, TextEncoding};
use super::exporter::{EMPTY, ExporterOptions, ItemExporter, Kwargs, serialized_fields};
use crate::crawl::base::item::Item;
use crate::crawl::util::pyjson::{python_number_str, python_repr};

const KNOWN: &[&str] = &[
    "include_headers_line",
    "join_multivalued",
    "delimiter",
    "quotechar",
    "lineterminator",
];

/// `CsvItemExporter`.
#[derive(Debug)]
pub struct CsvExporter {
    fields: Option<Vec<(String, String)>>,
    include_headers_line: bool,
    headers_written: bool,
    join_multivalued: String,
    delimiter: char,
    quotechar: char,
    lineterminator: String,
    encoding: TextEncoding,
    /// The row being written (reused).
    row: String,
}

impl CsvExporter {
    /// Builds the exporter.
    ///
    /// # Errors
    ///
    /// An `item_export_kwargs` key it does not take, or a malformed value.
    pub fn new(opts: &ExporterOptions) -> Result<Self, String> {
        let mut kw = Kwargs::new(opts)?;
        let include_headers_line = kw.bool("include_headers_line", true)?;
        let join_multivalued = kw.string("join_multivalued")?.unwrap_or_else(|| ",".into());
        let one_char = |kw: &mut Kwargs, key: &str, default: char| -> Result<char, String> {
            match kw.string(key)? {
                None => Ok(default),
                Some(s) => {
                    let mut chars = s.chars();
                    match (chars.next(), chars.next()) {
                        (Some(c), None) => Ok(c),
                        _ => Err(format!(
                            "item_export_kwargs {key:?} must be a 1-character string"
                        )),
                    }
                }
            }
        };
        let delimiter = one_char(&mut kw, "delimiter", ',')?;
        let quotechar = one_char(&mut kw, "quotechar", '"')?;
        let lineterminator = kw
            .string("lineterminator")?
            .unwrap_or_else(|| "\r\n".into());
        kw.finish(KNOWN)?;
        Ok(Self {
            // An empty list counts as none (`if not self.fields_to_export`).
            fields: opts.fields.clone().filter(|f| !f.is_empty()),
            include_headers_line,
            headers_written: false,
            join_multivalued,
            delimiter,
            quotechar,
            lineterminator,
            encoding: opts.encoding.clone().unwrap_or_else(TextEncoding::utf8),
            row: String::new(),
        })
    }

    /// A value as Scrapy's `CsvItemExporter` writes it: a list of strings joined with
    /// `join_multivalued`, any other value as Python's `str()` of it (`csv` writes
    /// `None` as nothing, `True`, `1.5`, `['a', 1]`, `{'k': 'v'}`).
    fn value_text(&self, v: &Value) -> String {
        match v {
            Value::Null => String::new(),
            Value::String(s) => s.clone(),
            Value::Bool(b) => if *b { "True" } else { "False" }.to_owned(),
            Value::Number(n) => python_number_str(n),
            Value::Array(items) if items.iter().all(Value::is_string) => items
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(&self.join_multivalued),
            other => python_repr(other),
        }
    }

    /// One field as Python's `csv` writes it (`QUOTE_MINIMAL`): quoted when it holds
    /// the delimiter, the quote character, a line break or a character of the line
    /// terminator, quotes doubled.
    fn push_field(&mut self, s: &str) {
        let needs_quotes = s.chars().any(|c| {
            c == self.delimiter
                || c == self.quotechar
                || c == '\n'
                || c == '\r'
                || self.lineterminator.contains(c)
        });
        if needs_quotes {
            self.row.push(self.quotechar);
            for c in s.chars() {
                if c == self.quotechar {
                    self.row.push(c);
                }
                self.row.push(c);
            }
            self.row.push(self.quotechar);
        } else {
            self.row.push_str(s);
        }
    }

    /// Writes a row (a row of one empty field is `""`, so it reads back as a field).
    fn write_row<'s>(
        &mut self,
        fields: impl Iterator<Item = &'s str>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        self.row.clear();
        let mut n = 0;
        let mut only_empty = false;
        for f in fields {
            if n > 0 {
                self.row.push(self.delimiter);
            }
            only_empty = n == 0 && f.is_empty();
            self.push_field(f);
            n += 1;
        }
        if n == 1 && only_empty {
            self.row.push(self.quotechar);
            self.row.push(self.quotechar);
        }
        self.row.push_str(&self.lineterminator);
        self.encoding.encode_into(&self.row, out)
    }
}

impl ItemExporter for CsvExporter {
    fn start_exporting(&mut self, _out: &mut Vec<u8>) {}

    fn export_item(&mut self, item: &Item, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        if self.include_headers_line && self.fields.is_none() {
            // The columns are the first item's keys (after a resume: the next item's).
            self.fields = Some(item.keys().map(|k| (k.to_owned(), k.to_owned())).collect());
        }
        if !self.headers_written {
            self.headers_written = true;
            if let Some(fields) = self.fields.as_ref().filter(|_| self.include_headers_line) {
                let names: Vec<String> = fields.iter().map(|(_, out)| out.clone()).collect();
                self.write_row(names.iter().map(String::as_str), out)?;
            }
        }
        let values: Vec<String> = serialized_fields(item, self.fields.as_deref(), true, &EMPTY)
            .map(|(_, v)| self.value_text(v))
            .collect();
        self.write_row(values.iter().map(String::as_str), out)
    }

    fn finish_exporting(&mut self, _out: &mut Vec<u8>) {}

    /// The header line is in the file already (its columns are taken again from the
    /// next item, or from the fields).
    fn resume(&mut self, _items: u64) {
        self.headers_written = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exporter() -> CsvExporter {
        CsvExporter::new(&ExporterOptions {
            format: "csv".into(),
            ..ExporterOptions::default()
        })
        .unwrap()
    }

    #[test]
    fn quoting() {
        let mut e = exporter();
        let mut out = Vec::new();
        e.write_row(["plain", "a,b", "say \"hi\""].into_iter(), &mut out)
            .unwrap();
        assert_eq!(out, b"plain,\"a,b\",\"say \"\"hi\"\"\"\r\n");
        out.clear();
        e.write_row([""].into_iter(), &mut out).unwrap();
        assert_eq!(out, b"\"\"\r\n");
        assert_eq!(e.value_text(&serde_json::json!(["a", "b"])), "a,b");
    }
}
