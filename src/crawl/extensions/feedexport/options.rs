//! One `FEEDS` entry read as Scrapy's `feed_complete_default_values_from_settings`
//! completes it — `format` (else the URI's extension), `encoding`, `fields`, `indent`,
//! `overwrite`, `store_empty`, `batch_item_count`, `uri_params`, `item_filter` /
//! `item_classes`, `item_export_kwargs` — with the exporter and the storage found by
//! name, and every check Scrapy makes before a crawl (a known format, a known scheme,
//! a batch placeholder in a batched URI). trawl refuses a feed it cannot write at
//! start-up, where Scrapy logs an error and crawls without feeds.

use serde_json::{Map, Value};

use super::encoding::TextEncoding;
use super::exporter::{ExporterFactory, ExporterOptions};
use super::plugins::{FeedPlugins, ItemFilterFn, UriParamsFn};
use super::postprocessing::{PluginFactory, PluginSetup};
use super::storage::{FeedFile, StorageFactory};
use super::uri::{has_batch_placeholder, uri_scheme};
use crate::crawl::base::item::Item;
use crate::crawl::base::settings::Settings;

/// The keys of a `FEEDS` entry.
const FEED_KEYS: &[&str] = &[
    "format",
    "encoding",
    "fields",
    "indent",
    "overwrite",
    "store_empty",
    "batch_item_count",
    "uri_params",
    "item_filter",
    "item_classes",
    "item_export_kwargs",
    "postprocessing",
];

/// One feed, complete.
pub struct FeedOptions {
    /// The URI as `FEEDS` gives it (placeholders not filled).
    pub uri_template: String,
    /// The format's name (`jl`, `json`).
    pub format: String,
    /// What the exporter is built from (once per batch).
    pub exporter_options: ExporterOptions,
    /// The exporter's factory.
    pub exporter: ExporterFactory,
    /// The storage's factory (for the URI's scheme).
    pub storage: StorageFactory,
    /// `overwrite` as given.
    pub overwrite: Option<bool>,
    /// `store_empty`.
    pub store_empty: bool,
    /// `batch_item_count` (0: one file).
    pub batch_item_count: u64,
    /// The `uri_params` function.
    pub uri_params: Option<UriParamsFn>,
    /// `item_filter` and `item_classes`.
    pub filters: Vec<ItemFilterFn>,
    /// The URI's scheme (`""` for a plain path).
    pub scheme: String,
    /// The postprocessing plugins, in list order (the first compresses the feed).
    pub postprocessing: Vec<PluginFactory>,
    /// The entry's options as given (the plugins read their own keys).
    pub raw: Map<String, Value>,
}

impl FeedOptions {
    /// Whether the feed takes `item` (every filter must; `item_classes` is one filter
    /// that takes an item any of its classes takes).
    pub fn accepts(&self, item: &Item) -> bool {
        self.filters.iter().all(|f| f(item, &self.raw))
    }
}

/// Python's `PurePath(uri).suffix` without its dot: what Scrapy reads a feed's format
/// from when the entry has none.
pub fn path_suffix(uri: &str) -> &str {
    let name = uri.rsplit('/').next().unwrap_or(uri);
    match name.rfind('.') {
        Some(i) if i > 0 && i + 1 < name.len() => &name[i + 1..],
        _ => "",
    }
}

/// A map setting merged with its `_BASE` (a `null` value removes an entry).
fn with_base(settings: &Settings, name: &str) -> Result<Map<String, Value>, String> {
    let mut merged = settings
        .get_dict(&format!("{name}_BASE"))
        .map_err(|e| e.to_string())?;
    for (k, v) in settings.get_dict(name).map_err(|e| e.to_string())? {
        merged.insert(k, v);
    }
    merged.retain(|_, v| !v.is_null());
    Ok(merged)
}

/// The formats `FEED_EXPORTERS` knows, in order.
///
/// # Errors
///
/// The setting is malformed.
pub fn known_formats(settings: &Settings) -> Result<Vec<String>, String> {
    Ok(with_base(settings, "FEED_EXPORTERS")?
        .keys()
        .cloned()
        .collect())
}

/// The feeds' shared defaults (the `FEED_*` settings).
pub struct Defaults {
    encoding: Option<Value>,
    fields: Option<Vec<(String, String)>>,
    indent: Option<usize>,
    store_empty: bool,
    batch_item_count: u64,
    uri_params: Option<String>,
    exporters: Map<String, Value>,
    storages: Map<String, Value>,
}

impl Defaults {
    /// Reads the `FEED_*` settings.
    ///
    /// # Errors
    ///
    /// A setting is malformed.
    pub fn from_settings(s: &Settings) -> Result<Self, String> {
        let fields = match fields_option(s.get("FEED_EXPORT_FIELDS"), "FEED_EXPORT_FIELDS")? {
            Some(f) if f.is_empty() => None,
            other => other,
        };
        Ok(Self {
            encoding: s.get("FEED_EXPORT_ENCODING").cloned(),
            fields,
            indent: match s.get("FEED_EXPORT_INDENT") {
                None => None,
                Some(_) => Some(
                    s.get_usize("FEED_EXPORT_INDENT")
                        .map_err(|e| e.to_string())?,
                ),
            },
            store_empty: match s.get("FEED_STORE_EMPTY") {
                None => true,
                Some(_) => s.get_bool("FEED_STORE_EMPTY").map_err(|e| e.to_string())?,
            },
            batch_item_count: u64::try_from(
                s.get_int("FEED_EXPORT_BATCH_ITEM_COUNT")
                    .map_err(|e| e.to_string())?,
            )
            .map_err(|_| "FEED_EXPORT_BATCH_ITEM_COUNT must not be negative".to_owned())?,
            uri_params: s.get_str("FEED_URI_PARAMS").map_err(|e| e.to_string())?,
            exporters: with_base(s, "FEED_EXPORTERS")?,
            storages: with_base(s, "FEED_STORAGES")?,
        })
    }

    /// The storage `FEED_STORAGES` names for `scheme`, if it is registered.
    pub fn storage_for_scheme(
        &self,
        scheme: &str,
        plugins: &FeedPlugins,
    ) -> Option<StorageFactory> {
        let name = self.storages.get(scheme).and_then(Value::as_str)?;
        plugins.storage(name).cloned()
    }

    /// The schemes `FEED_STORAGES` knows, for error messages.
    fn known_schemes(&self) -> String {
        let names: Vec<String> = self
            .storages
            .keys()
            .map(|k| {
                if k.is_empty() {
                    "(a path)".to_owned()
                } else {
                    format!("{k}:")
                }
            })
            .collect();
        names.join(", ")
    }
}

/// `fields` (or `FEED_EXPORT_FIELDS`, Scrapy's `getdictorlist`): a list of names, a
/// map renaming them, or a string holding a JSON list or map, else names separated by
/// commas (not trimmed).
fn fields_option(
    value: Option<&Value>,
    what: &str,
) -> Result<Option<Vec<(String, String)>>, String> {
    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
    let list = |a: &[Value]| a.iter().map(|v| (text(v), text(v))).collect::<Vec<_>>();
    let map = |m: &Map<String, Value>| {
        m.iter()
            .map(|(k, v)| (k.clone(), text(v)))
            .collect::<Vec<_>>()
    };
    Ok(match value {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) => Some(list(a)),
        Some(Value::Object(m)) => Some(map(m)),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Array(a)) => Some(list(&a)),
            Ok(Value::Object(m)) => Some(map(&m)),
            _ if s.is_empty() => None,
            _ => Some(s.split(',').map(|p| (p.to_owned(), p.to_owned())).collect()),
        },
        Some(other) => {
            return Err(format!(
                "{what} must be a list of field names or a map renaming them, not {other}"
            ));
        }
    })
}

/// Reads one `FEEDS` entry.
///
/// # Errors
///
/// What Scrapy refuses (an unknown format or scheme, a batched URI without a batch
/// placeholder), a malformed option, or a name nothing is registered under.
pub fn feed_options(
    uri: &str,
    options: &Value,
    defaults: &Defaults,
    plugins: &FeedPlugins,
) -> Result<FeedOptions, String> {
    let empty = Map::new();
    let opts = match options {
        Value::Object(m) => m,
        Value::Null => &empty,
        other => {
            return Err(format!(
                "FEEDS[{uri:?}] must be a map of options, not {other}"
            ));
        }
    };
    for key in opts.keys() {
        if !FEED_KEYS.contains(&key.as_str()) {
            log::warn!("FEEDS[{uri:?}]: unknown option {key:?} (ignored)");
        }
    }
    let postprocessing = match opts.get("postprocessing") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(names)) => {
            let mut plugins_found = Vec::new();
            for name in names {
                let found = name
                    .as_str()
                    .and_then(|n| plugins.postprocessing(n))
                    .cloned();
                plugins_found.push(found.ok_or_else(|| {
                    format!("FEEDS[{uri:?}]: postprocessing: no plugin is registered as {name}")
                })?);
            }
            plugins_found
        }
        Some(other) => {
            return Err(format!(
                "FEEDS[{uri:?}]: postprocessing must be a list of plugin names, not {other}"
            ));
        }
    };
    // Build the layers once over nothing so that bad plugin options stop the crawl
    // before it starts.
    let setup = PluginSetup {
        options: opts,
        file_name: uri.rsplit('/').next().unwrap_or(uri),
        now: 0.0,
    };
    let mut probe: Box<dyn FeedFile> = Box::new(NullFile);
    for plugin in postprocessing.iter().rev() {
        probe = plugin(probe, &setup).map_err(|m| format!("FEEDS[{uri:?}]: {m}"))?;
    }
    let format = match opts.get("format") {
        Some(Value::String(f)) => f.clone(),
        Some(other) => {
            return Err(format!(
                "FEEDS[{uri:?}]: format must be a string, not {other}"
            ));
        }
        None => path_suffix(uri).to_owned(),
    };
    if format.is_empty() {
        return Err(format!(
            "FEEDS[{uri:?}]: Feed format not set and it could not be inferred from the feed URI; \
             set it explicitly with the 'format' key"
        ));
    }
    let exporter_name = defaults.exporters.get(&format).and_then(Value::as_str);
    let Some(exporter) = exporter_name.and_then(|n| plugins.exporter(n)) else {
        let known: Vec<&String> = defaults.exporters.keys().collect();
        return Err(match exporter_name {
            Some(name) => format!(
                "FEEDS[{uri:?}]: the exporter {name:?} of format {format:?} is not registered"
            ),
            None => format!("FEEDS[{uri:?}]: Unknown feed format: {format} (known: {known:?})"),
        });
    };
    let scheme = uri_scheme(uri);
    let storage_name = defaults.storages.get(&scheme).and_then(Value::as_str);
    let Some(storage) = storage_name.and_then(|n| plugins.storage(n)) else {
        return Err(match storage_name {
            Some(name) => format!(
                "FEEDS[{uri:?}]: the storage {name:?} of scheme {scheme:?} is not registered"
            ),
            None => format!(
                "FEEDS[{uri:?}]: Unknown feed storage scheme: {scheme} (known: {})",
                defaults.known_schemes()
            ),
        });
    };
    let encoding = match opts.get("encoding").or(defaults.encoding.as_ref()) {
        None | Some(Value::Null) => None,
        Some(Value::String(e)) if e.is_empty() => None,
        Some(Value::String(e)) => {
            Some(TextEncoding::from_name(e).map_err(|m| format!("FEEDS[{uri:?}]: {m}"))?)
        }
        Some(other) => {
            return Err(format!(
                "FEEDS[{uri:?}]: encoding must be a string, not {other}"
            ));
        }
    };
    let fields = match opts.get("fields") {
        Some(v) => fields_option(Some(v), "fields").map_err(|m| format!("FEEDS[{uri:?}]: {m}"))?,
        None => defaults.fields.clone(),
    };
    let indent = match opts.get("indent") {
        None => defaults.indent,
        Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|i| usize::try_from(i).ok())
                .ok_or_else(|| {
                    format!(
                        "FEEDS[{uri:?}]: indent must be a non-negative integer or null, not {v}"
                    )
                })?,
        ),
    };
    let flag = |key: &str| -> Result<Option<bool>, String> {
        match opts.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(format!(
                "FEEDS[{uri:?}]: {key} must be true or false, not {other}"
            )),
        }
    };
    let overwrite = flag("overwrite")?;
    let store_empty = flag("store_empty")?.unwrap_or(defaults.store_empty);
    let batch_item_count = match opts.get("batch_item_count") {
        None => defaults.batch_item_count,
        Some(v) => v.as_u64().ok_or_else(|| {
            format!("FEEDS[{uri:?}]: batch_item_count must be a non-negative integer, not {v}")
        })?,
    };
    if batch_item_count > 0 && !has_batch_placeholder(uri) {
        return Err(format!(
            "%(batch_time)s or %(batch_id)d must be in the feed URI ({uri}) if \
             FEED_EXPORT_BATCH_ITEM_COUNT setting or FEEDS.batch_item_count is specified and \
             greater than 0. For more info see: \
             https://docs.scrapy.org/en/latest/topics/feed-exports.html#feed-export-batch-item-count"
        ));
    }
    let uri_params_name = match opts.get("uri_params") {
        None => defaults.uri_params.clone(),
        Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(format!(
                "FEEDS[{uri:?}]: uri_params must be a registered name, not {other}"
            ));
        }
    };
    let uri_params = match uri_params_name {
        None => None,
        Some(name) => Some(plugins.uri_params(&name).cloned().ok_or_else(|| {
            format!("FEEDS[{uri:?}]: no uri_params function is registered as {name:?}")
        })?),
    };
    let mut filters = Vec::new();
    match opts.get("item_filter") {
        None | Some(Value::Null) => {}
        Some(Value::String(name)) => {
            filters.push(plugins.item_filter(name).cloned().ok_or_else(|| {
                format!("FEEDS[{uri:?}]: no item filter is registered as {name:?}")
            })?)
        }
        Some(other) => {
            return Err(format!(
                "FEEDS[{uri:?}]: item_filter must be a registered name, not {other}"
            ));
        }
    }
    match opts.get("item_classes") {
        None | Some(Value::Null) => {}
        Some(Value::Array(names)) if names.is_empty() => {}
        Some(Value::Array(names)) => {
            let mut classes = Vec::new();
            for name in names {
                let found = name.as_str().and_then(|n| plugins.item_filter(n)).cloned();
                classes.push(found.ok_or_else(|| {
                    format!("FEEDS[{uri:?}]: item_classes: no item filter is registered as {name}")
                })?);
            }
            filters.push(std::rc::Rc::new(
                move |item: &Item, o: &Map<String, Value>| classes.iter().any(|c| c(item, o)),
            ));
        }
        Some(other) => {
            return Err(format!(
                "FEEDS[{uri:?}]: item_classes must be a list of registered names, not {other}"
            ));
        }
    }
    let kwargs = match opts.get("item_export_kwargs") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(format!(
                "FEEDS[{uri:?}]: item_export_kwargs must be a map, not {other}"
            ));
        }
    };
    let exporter_options = ExporterOptions {
        format: format.clone(),
        fields,
        indent,
        encoding,
        kwargs,
    };
    // Build one exporter now so that a bad item_export_kwargs stops the crawl before
    // it starts.
    exporter(&exporter_options).map_err(|m| format!("FEEDS[{uri:?}]: {m}"))?;
    Ok(FeedOptions {
        uri_template: uri.to_owned(),
        format,
        exporter_options,
        exporter: exporter.clone(),
        storage: storage.clone(),
        overwrite,
        store_empty,
        batch_item_count,
        uri_params,
        filters,
        scheme,
        postprocessing,
        raw: opts.clone(),
    })
}

/// A file that keeps nothing (the plugins' options are checked on it).
struct NullFile;

impl std::io::Write for NullFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl FeedFile for NullFile {
    fn sync_data(&mut self) -> std::io::Result<()> {
        Ok(())
    }

    fn position(&mut self) -> std::io::Result<u64> {
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_as_python_reads_them() {
        assert_eq!(path_suffix("out/items.jl"), "jl");
        assert_eq!(path_suffix("out.json:nosuch"), "json:nosuch");
        assert_eq!(path_suffix("out"), "");
        assert_eq!(path_suffix(".hidden"), "");
        assert_eq!(path_suffix("a.b/c"), "");
        assert_eq!(path_suffix("items."), "");
    }
}
