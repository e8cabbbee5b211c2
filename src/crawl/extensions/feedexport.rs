//! Feed exports (`FEEDS`, `-o FILE` / `-O FILE`): JSON lines, JSON array and CSV files,
//! written as items are scraped and closed on `spider_closed`, so a JSON array is valid
//! even after a Ctrl+C shutdown.
//!
//! `FEEDS` maps a path (or `file://` URI) to options: `format` (`jsonlines` / `jl`,
//! `json`, `csv`; by default from the extension), `overwrite` (false: append), `fields`
//! (a list; default `FEED_EXPORT_FIELDS`, else the first item's keys for CSV), `indent`
//! (JSON only).
//!
//! With a JOBDIR the feeds are part of the job: an item scraped from a response waits
//! until that response is DONE and is then written with the others of its response;
//! the feed's length is committed with the `DONE`, and a resume cuts the file back to
//! the committed length and continues (a JSON array loses its closing bracket and
//! gets it back at the end), so every item appears exactly once.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::rc::Rc;

use serde_json::Value;

use crate::crawl::base::errors::NotConfigured;
use crate::crawl::base::item::Item;
use crate::crawl::base::signals::{Signal, SignalArgs};
use crate::crawl::context::{CrawlContext, OutputBuffer};
use crate::crawl::http::request::keys;
use crate::crawl::jobdir::JobOutput;
use crate::crawl::util::pyjson::{PyJson, dumps_entries_into, python_number_str, python_repr};
use crate::defer::Failure;

/// A feed file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedFormat {
    /// One JSON object per line.
    JsonLines,
    /// One JSON array.
    Json,
    /// Comma-separated values with a header line.
    Csv,
}

impl FeedFormat {
    /// Parses a format name.
    pub fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "jsonlines" | "jsonl" | "jl" => Some(Self::JsonLines),
            "json" => Some(Self::Json),
            "csv" => Some(Self::Csv),
            _ => None,
        }
    }

    /// The format implied by a file name's extension.
    pub fn from_path(path: &str) -> Option<Self> {
        let ext = path.rsplit('.').next()?;
        Self::from_name(ext)
    }
}

struct Feed {
    path: String,
    format: FeedFormat,
    fields: Option<Vec<String>>,
    indent: usize,
    overwrite: bool,
    /// `encoding` null (Scrapy's default `FEED_EXPORT_ENCODING`): JSON escapes every
    /// non-ASCII character as `\uXXXX`, as Python's `ensure_ascii`.
    ensure_ascii: bool,
    out: Option<BufWriter<File>>,
    count: u64,
    wrote_header: bool,
    /// The line being written (reused from item to item).
    line: String,
    /// Items held back until their request is done (JOBDIR), by request id.
    held: HashMap<u64, Vec<Item>>,
}

impl Feed {
    /// Reopens the feed at its committed `(length, items)` (a JOBDIR resume).
    fn resume(&mut self, len: u64, items: u64) -> std::io::Result<()> {
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .write(true)
            .truncate(false)
            .open(&self.path)?;
        file.set_len(len)?;
        let mut file = file;
        file.seek(SeekFrom::End(0))?;
        let mut out = BufWriter::with_capacity(64 * 1024, file);
        if len == 0 && self.format == FeedFormat::Json {
            out.write_all(b"[\n")?;
        }
        self.wrote_header = self.format == FeedFormat::Csv && len > 0;
        self.count = items;
        self.out = Some(out);
        Ok(())
    }

    fn open(&mut self) -> std::io::Result<()> {
        if let Some(parent) = std::path::Path::new(&self.path).parent()
            && !parent.as_os_str().is_empty()
        {
            std::fs::create_dir_all(parent)?;
        }
        let existed = std::fs::metadata(&self.path).is_ok_and(|m| m.len() > 0);
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .append(!self.overwrite)
            .truncate(self.overwrite)
            .open(&self.path)?;
        let mut out = BufWriter::with_capacity(64 * 1024, file);
        if self.format == FeedFormat::Json {
            out.write_all(b"[\n")?;
        }
        if self.format == FeedFormat::Csv && existed && !self.overwrite {
            self.wrote_header = true;
        }
        self.out = Some(out);
        Ok(())
    }

    fn write(&mut self, item: &Item) -> std::io::Result<()> {
        let Some(out) = self.out.as_mut() else {
            return Ok(());
        };
        match self.format {
            // Scrapy's JsonLinesItemExporter / JsonItemExporter, byte for byte.
            FeedFormat::JsonLines => {
                let opts = PyJson {
                    ensure_ascii: self.ensure_ascii,
                    ..PyJson::default()
                };
                let mut line = std::mem::take(&mut self.line);
                line.clear();
                write_selected(&mut line, item, self.fields.as_deref(), opts);
                line.push('\n');
                let written = out.write_all(line.as_bytes());
                self.line = line;
                written?;
            }
            FeedFormat::Json => {
                if self.count > 0 {
                    out.write_all(b",\n")?;
                }
                let opts = PyJson {
                    ensure_ascii: self.ensure_ascii,
                    indent: (self.indent > 0).then_some(self.indent),
                    compact: false,
                };
                let mut text = std::mem::take(&mut self.line);
                text.clear();
                write_selected(&mut text, item, self.fields.as_deref(), opts);
                let written = out.write_all(text.as_bytes());
                self.line = text;
                written?;
            }
            FeedFormat::Csv => {
                let fields = self
                    .fields
                    .get_or_insert_with(|| item.keys().map(str::to_owned).collect());
                if !self.wrote_header {
                    write_csv_row(out, fields)?;
                    self.wrote_header = true;
                }
                let row: Vec<String> = fields
                    .iter()
                    .map(|f| csv_value(item.get(f).unwrap_or(&Value::Null)))
                    .collect();
                write_csv_row(out, &row)?;
            }
        }
        self.count += 1;
        Ok(())
    }

    fn close(&mut self) -> std::io::Result<()> {
        let Some(mut out) = self.out.take() else {
            return Ok(());
        };
        if self.format == FeedFormat::Json {
            out.write_all(b"\n]")?;
        }
        out.flush()
    }
}

/// The item's fields (`FEED_EXPORT_FIELDS`, else all, in the item's order) as Python's
/// `json.dumps` of a dict, written from the item itself (no copy of it).
fn write_selected(out: &mut String, item: &Item, fields: Option<&[String]>, opts: PyJson) {
    match fields {
        None => dumps_entries_into(out, item.0.iter().map(|(k, v)| (k.as_str(), v)), opts),
        Some(fields) => dumps_entries_into(
            out,
            fields
                .iter()
                .filter_map(|f| item.get(f).map(|v| (f.as_str(), v))),
            opts,
        ),
    }
}

/// A value as Scrapy's `CsvItemExporter` writes it: a list of strings joined with
/// `,`, any other value as Python's `str()` of it (`csv` writes `None` as nothing,
/// `True`, `1.5`, `['a', 1]`, `{'k': 'v'}`).
fn csv_value(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => if *b { "True" } else { "False" }.to_owned(),
        Value::Number(n) => python_number_str(n),
        Value::Array(items) if items.iter().all(Value::is_string) => items
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(","),
        other => python_repr(other),
    }
}

/// One field as Python's `csv` writes it (`QUOTE_MINIMAL`): quoted when it holds a
/// comma, a quote or a line break, quotes doubled.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// One row as Python's `csv` writes it: a row of a single empty field is `""` (so it
/// reads back as one field, not as an empty line).
fn write_csv_row(out: &mut impl Write, fields: &[String]) -> std::io::Result<()> {
    if let [only] = fields
        && only.is_empty()
    {
        return out.write_all(b"\"\"\r\n");
    }
    let quoted: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
    out.write_all(quoted.join(",").as_bytes())?;
    out.write_all(b"\r\n")
}

/// `FEED_EXPORT_FIELDS` as Scrapy's `getdictorlist` reads it: a list, or a string that
/// is a JSON list or else split on commas as it is (no trimming); empty means unset.
/// A dict (Scrapy's column renaming) is refused.
fn fields_setting(value: Option<&Value>) -> Result<Option<Vec<String>>, Failure> {
    let list = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(a)) => a.clone(),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Array(a)) => a,
            Ok(Value::Object(_)) => return Err(renaming_refused()),
            _ => s.split(',').map(|p| Value::String(p.to_owned())).collect(),
        },
        Some(Value::Object(_)) => return Err(renaming_refused()),
        Some(other) => {
            return Err(Failure::msg(format!(
                "FEED_EXPORT_FIELDS must be a list of field names, not {other}"
            )));
        }
    };
    let fields: Vec<String> = list
        .into_iter()
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
        .collect();
    Ok((!fields.is_empty()).then_some(fields))
}

/// `FEED_FSYNC`: whether a feed is synced to the disk, not only written to the OS,
/// before a shared queue acknowledges requests whose items it holds (a power cut then
/// loses nothing acknowledged). Off by default: a killed worker loses nothing either
/// way; a power cut can lose what the OS had not written yet.
fn fsync_setting(value: Option<&Value>) -> Result<bool, Failure> {
    match value {
        None | Some(Value::Null) | Some(Value::Bool(false)) => Ok(false),
        Some(Value::Bool(true)) => Ok(true),
        Some(Value::String(s)) => match s.to_ascii_lowercase().as_str() {
            "" | "0" | "false" | "never" => Ok(false),
            "1" | "true" | "always" => Ok(true),
            other => Err(Failure::msg(format!(
                "FEED_FSYNC must be \"always\" or \"never\", not {other:?}"
            ))),
        },
        Some(other) => Err(Failure::msg(format!(
            "FEED_FSYNC must be \"always\" or \"never\", not {other}"
        ))),
    }
}

fn renaming_refused() -> Failure {
    Failure::msg("FEED_EXPORT_FIELDS as a dict (renaming columns) is not supported; give a list")
}

/// One feed as an output of the crawl: a part of a JOBDIR job, and a buffer a shared
/// queue has emptied before it acknowledges requests (`FEED_FSYNC`: synced too).
struct FeedOutput {
    feed: Rc<RefCell<Feed>>,
    fsync: bool,
}

impl OutputBuffer for FeedOutput {
    fn flush_output(&self) -> std::io::Result<()> {
        match self.feed.borrow_mut().out.as_mut() {
            Some(out) => {
                out.flush()?;
                if self.fsync {
                    out.get_ref().sync_data()?;
                }
                Ok(())
            }
            None => Ok(()),
        }
    }

    fn output_name(&self) -> String {
        format!("feed {}", self.feed.borrow().path)
    }
}

impl JobOutput for FeedOutput {
    fn name(&self) -> String {
        self.feed.borrow().path.clone()
    }

    fn request_done(&self, id: u64) {
        let mut feed = self.feed.borrow_mut();
        let Some(items) = feed.held.remove(&id) else {
            return;
        };
        for item in &items {
            if let Err(e) = feed.write(item) {
                log::error!("Error writing to feed {}: {e}", feed.path);
            }
        }
    }

    fn position(&self) -> std::io::Result<(u64, u64)> {
        let mut feed = self.feed.borrow_mut();
        let count = feed.count;
        match feed.out.as_mut() {
            Some(out) => {
                out.flush()?;
                Ok((out.get_mut().stream_position()?, count))
            }
            None => Ok((0, count)),
        }
    }

    fn sync(&self) -> std::io::Result<()> {
        match self.feed.borrow_mut().out.as_mut() {
            Some(out) => {
                out.flush()?;
                out.get_ref().sync_data()
            }
            None => Ok(()),
        }
    }
}

/// The feed exporter extension.
pub struct FeedExporter {
    feeds: Vec<Rc<RefCell<Feed>>>,
    /// Each feed as an output, kept alive for the context's and the job's weak
    /// references.
    outputs: Vec<Rc<FeedOutput>>,
}

impl FeedExporter {
    /// Builds the extension and connects it to the crawl's signals.
    pub fn install(ctx: &Rc<CrawlContext>) -> Result<Rc<Self>, Failure> {
        let s = &ctx.settings;
        let default_fields = fields_setting(s.get("FEED_EXPORT_FIELDS"))?;
        let default_indent = s.get_usize("FEED_EXPORT_INDENT")?;
        let default_encoding = s
            .get("FEED_EXPORT_ENCODING")
            .cloned()
            .unwrap_or(Value::Null);
        let mut feeds = Vec::new();
        for (uri, options) in s.get_dict("FEEDS")? {
            let path = uri.strip_prefix("file://").unwrap_or(&uri).to_owned();
            let opts = options.as_object().cloned().unwrap_or_default();
            let format = match opts.get("format").and_then(Value::as_str) {
                Some(name) => FeedFormat::from_name(name).ok_or_else(|| {
                    Failure::msg(format!("FEEDS: unknown format {name:?} for {uri}"))
                })?,
                None => FeedFormat::from_path(&path).ok_or_else(|| {
                    Failure::msg(format!(
                        "FEEDS: cannot tell the format of {uri}; give \"format\""
                    ))
                })?,
            };
            let fields = match opts.get("fields") {
                Some(Value::Array(a)) => Some(
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect(),
                ),
                _ => default_fields.clone(),
            };
            let encoding = opts.get("encoding").unwrap_or(&default_encoding);
            let ensure_ascii = match encoding {
                Value::Null => true,
                Value::String(e) if e.is_empty() => true,
                Value::String(e)
                    if matches!(
                        e.to_ascii_lowercase().replace('_', "-").as_str(),
                        "utf-8" | "utf8"
                    ) =>
                {
                    false
                }
                other => {
                    return Err(Failure::new(crate::crawl::base::settings::SettingsError {
                        name: "FEED_EXPORT_ENCODING".into(),
                        reason: format!(
                            "{other} for {uri}: trawl writes utf-8, or ASCII-escaped JSON with null"
                        ),
                    }));
                }
            };
            feeds.push(Feed {
                path,
                format,
                fields,
                ensure_ascii,
                indent: opts
                    .get("indent")
                    .and_then(Value::as_u64)
                    .map_or(default_indent, |i| i as usize),
                overwrite: opts
                    .get("overwrite")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                out: None,
                count: 0,
                line: String::new(),
                wrote_header: false,
                held: HashMap::new(),
            });
        }
        if feeds.is_empty() {
            return Err(Failure::new(NotConfigured("no FEEDS".into())));
        }
        let fsync = fsync_setting(s.get("FEED_FSYNC"))?;
        let feeds: Vec<Rc<RefCell<Feed>>> = feeds
            .into_iter()
            .map(|f| Rc::new(RefCell::new(f)))
            .collect();
        let outputs: Vec<Rc<FeedOutput>> = feeds
            .iter()
            .map(|feed| {
                Rc::new(FeedOutput {
                    feed: feed.clone(),
                    fsync,
                })
            })
            .collect();
        for o in &outputs {
            let o: Rc<dyn OutputBuffer> = o.clone();
            ctx.register_output(Rc::downgrade(&o));
        }
        let me = Rc::new(Self { feeds, outputs });
        let m = me.clone();
        let c = Rc::downgrade(ctx);
        ctx.signals.connect(Signal::SpiderOpened, move |_| {
            let job = c.upgrade().and_then(|c| c.job().cloned());
            for (feed, output) in m.feeds.iter().zip(&m.outputs) {
                let mut f = feed.borrow_mut();
                let resumed = job.as_ref().and_then(|j| j.feed_position(&f.path));
                let r = match resumed {
                    Some((len, items)) => {
                        log::info!("Resuming feed {} at {len} bytes ({items} items)", f.path);
                        f.resume(len, items)
                    }
                    None => f.open(),
                };
                r.map_err(|e| Failure::msg(format!("cannot open feed {}: {e}", f.path)))?;
                drop(f);
                if let Some(job) = &job {
                    let output: Rc<dyn JobOutput> = output.clone();
                    job.register_output(Rc::downgrade(&output));
                }
            }
            Ok(())
        });
        let m = me.clone();
        let c = Rc::downgrade(ctx);
        ctx.signals.connect(Signal::ItemScraped, move |args| {
            if let SignalArgs::Item { item, response, .. } = args {
                // With a JOBDIR, items wait for their request to be done.
                let held_for = c
                    .upgrade()
                    .filter(|c| c.job().is_some())
                    .and(*response)
                    .and_then(|r| r.request().meta().get(keys::JOB_ID))
                    .and_then(Value::as_u64);
                for feed in &m.feeds {
                    let mut f = feed.borrow_mut();
                    if let Some(id) = held_for {
                        f.held.entry(id).or_default().push((*item).clone());
                    } else if let Err(e) = f.write(item) {
                        log::error!("Error writing to feed {}: {e}", f.path);
                    }
                }
            }
            Ok(())
        });
        let m = me.clone();
        let c = Rc::downgrade(ctx);
        ctx.signals.connect(Signal::SpiderClosed, move |_| {
            for feed in &m.feeds {
                // The signal is sent after the borrow ends (handlers may read the feed).
                let closed = {
                    let mut feed = feed.borrow_mut();
                    match feed.close() {
                        Ok(()) => {
                            log::info!(
                                "Stored {:?} feed ({} items) in: {}",
                                feed.format,
                                feed.count,
                                feed.path
                            );
                            if let Some(c) = c.upgrade() {
                                c.stats.inc_value(
                                    &format!("feedexport/success_count/{:?}", feed.format),
                                    1,
                                );
                            }
                            Some((feed.path.clone(), feed.count))
                        }
                        Err(e) => {
                            log::error!("Error closing feed {}: {e}", feed.path);
                            None
                        }
                    }
                };
                if let (Some((uri, items)), Some(c)) = (closed, c.upgrade()) {
                    c.signals.send_catch_log(
                        Signal::FeedSlotClosed,
                        SignalArgs::FeedSlot { uri: &uri, items },
                    );
                }
            }
            if let Some(c) = c.upgrade() {
                c.signals
                    .send_catch_log(Signal::FeedExporterClosed, SignalArgs::None);
            }
            Ok(())
        });
        Ok(me)
    }

    /// A forced stop (the second Ctrl+C): flushes every feed and closes it (a JSON feed
    /// gets its closing bracket), so nothing already scraped is lost. Items held for a
    /// JOBDIR commit stay out: the resume fetches them again.
    pub fn force_close(&self) {
        for feed in &self.feeds {
            let mut f = feed.borrow_mut();
            match f.close() {
                Ok(()) => log::info!("Forced stop: {} items stored in {}", f.count, f.path),
                Err(e) => log::error!("Forced stop: error closing feed {}: {e}", f.path),
            }
        }
    }

    /// Items written to each feed.
    pub fn counts(&self) -> Vec<(String, u64)> {
        self.feeds
            .iter()
            .map(|f| {
                let f = f.borrow();
                (f.path.clone(), f.count)
            })
            .collect()
    }
}

impl std::fmt::Debug for FeedExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.counts()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quoting() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_value(&serde_json::json!(["a", "b"])), "a,b");
        assert_eq!(
            FeedFormat::from_path("out/items.jl"),
            Some(FeedFormat::JsonLines)
        );
    }
}
