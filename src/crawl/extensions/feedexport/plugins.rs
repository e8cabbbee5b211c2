//! What feeds are built from, by name: exporters (`FEED_EXPORTERS` maps a format to an
//! exporter's name), storages (`FEED_STORAGES` maps a URI scheme to a storage's name),
//! `uri_params` functions (`FEED_URI_PARAMS`, the feed option `uri_params`), item
//! filters (the feed options `item_filter` and `item_classes`) and postprocessing
//! plugins (the feed option `postprocessing`). The built-ins are
//! registered under Scrapy's class names (`trawl.JsonItemExporter`, which
//! `scrapy.exporters.JsonItemExporter` also finds); a project registers its own
//! through the crawl's `Registry`.

use std::rc::Rc;

use serde_json::{Map, Value};

use super::csv::CsvExporter;
use super::exporter::{ExporterFactory, ExporterOptions, ItemExporter};
use super::json::{JsonExporter, JsonLinesExporter};
use super::postprocessing::{PluginFactory, PluginSetup};
use super::storage::{
    FeedFile, FeedStorage, FileFeedStorage, StdoutFeedStorage, StorageFactory, StorageSetup,
};
use super::xml::XmlExporter;
use crate::crawl::base::item::Item;
use crate::crawl::base::settings::normalize_component;

/// Changes a feed URI's parameters before the URI is made (Scrapy's `uri_params`
/// function: it may add, change or remove entries).
pub type UriParamsFn = Rc<dyn Fn(&mut Map<String, Value>)>;

/// Whether a feed takes an item (Scrapy's `ItemFilter.accepts`), given the item and
/// the feed's options (a filter may read options of its own from them).
pub type ItemFilterFn = Rc<dyn Fn(&Item, &Map<String, Value>) -> bool>;

/// The named exporters, storages, URI parameter functions and item filters a crawl's
/// feeds may use.
#[derive(Clone)]
pub struct FeedPlugins {
    exporters: Vec<(String, ExporterFactory)>,
    storages: Vec<(String, StorageFactory)>,
    uri_params: Vec<(String, UriParamsFn)>,
    item_filters: Vec<(String, ItemFilterFn)>,
    postprocessing: Vec<(String, PluginFactory)>,
}

impl std::fmt::Debug for FeedPlugins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |v: Vec<&String>| v.into_iter().cloned().collect::<Vec<_>>();
        f.debug_struct("FeedPlugins")
            .field(
                "exporters",
                &names(self.exporters.iter().map(|(n, _)| n).collect()),
            )
            .field(
                "storages",
                &names(self.storages.iter().map(|(n, _)| n).collect()),
            )
            .field(
                "uri_params",
                &names(self.uri_params.iter().map(|(n, _)| n).collect()),
            )
            .field(
                "item_filters",
                &names(self.item_filters.iter().map(|(n, _)| n).collect()),
            )
            .finish()
    }
}

impl Default for FeedPlugins {
    /// The built-in exporters and storages.
    fn default() -> Self {
        let mut p = Self {
            exporters: Vec::new(),
            storages: Vec::new(),
            uri_params: Vec::new(),
            item_filters: Vec::new(),
            postprocessing: Vec::new(),
        };
        fn boxed<E: ItemExporter + 'static>(
            r: Result<E, String>,
        ) -> Result<Box<dyn ItemExporter>, String> {
            r.map(|e| Box::new(e) as Box<dyn ItemExporter>)
        }
        p.register_exporter("trawl.JsonItemExporter", |o| boxed(JsonExporter::new(o)));
        p.register_exporter("trawl.JsonLinesItemExporter", |o| {
            boxed(JsonLinesExporter::new(o))
        });
        p.register_exporter("trawl.CsvItemExporter", |o| boxed(CsvExporter::new(o)));
        p.register_exporter("trawl.XmlItemExporter", |o| boxed(XmlExporter::new(o)));
        p.register_storage("trawl.FileFeedStorage", |s| {
            Ok(Rc::new(FileFeedStorage::new(s)) as Rc<dyn FeedStorage>)
        });
        p.register_storage("trawl.StdoutFeedStorage", |s| {
            Ok(Rc::new(StdoutFeedStorage::new(s)) as Rc<dyn FeedStorage>)
        });
        p.register_storage("trawl.S3FeedStorage", super::s3::s3_storage);
        p.register_storage("trawl.FTPFeedStorage", super::ftp::ftp_storage);
        p.register_postprocessing("trawl.GzipPlugin", super::postprocessing::gzip);
        p.register_postprocessing("trawl.LZMAPlugin", super::postprocessing::lzma);
        p.register_postprocessing("trawl.Bz2Plugin", super::postprocessing::bz2);
        p
    }
}

fn find<'a, T>(list: &'a [(String, T)], name: &str) -> Option<&'a T> {
    let key = normalize_component(name);
    list.iter().rev().find(|(n, _)| *n == key).map(|(_, t)| t)
}

impl FeedPlugins {
    /// Registers an exporter under `name` (a `FEED_EXPORTERS` value).
    pub fn register_exporter<F>(&mut self, name: &str, f: F)
    where
        F: Fn(&ExporterOptions) -> Result<Box<dyn ItemExporter>, String> + 'static,
    {
        self.exporters.push((normalize_component(name), Rc::new(f)));
    }

    /// Registers a storage under `name` (a `FEED_STORAGES` value).
    pub fn register_storage<F>(&mut self, name: &str, f: F)
    where
        F: Fn(&StorageSetup<'_>) -> Result<Rc<dyn FeedStorage>, String> + 'static,
    {
        self.storages.push((normalize_component(name), Rc::new(f)));
    }

    /// Registers a `uri_params` function under `name` (`FEED_URI_PARAMS`, the feed
    /// option `uri_params`).
    pub fn register_uri_params<F>(&mut self, name: &str, f: F)
    where
        F: Fn(&mut Map<String, Value>) + 'static,
    {
        self.uri_params.push((name.to_owned(), Rc::new(f)));
    }

    /// Registers an item filter under `name` (the feed options `item_filter` and
    /// `item_classes`: trawl's items are maps, so an "item class" is a predicate on
    /// the item, registered by the class's name).
    pub fn register_item_filter<F>(&mut self, name: &str, f: F)
    where
        F: Fn(&Item, &Map<String, Value>) -> bool + 'static,
    {
        self.item_filters.push((name.to_owned(), Rc::new(f)));
    }

    /// Registers a postprocessing plugin under `name` (the feed option
    /// `postprocessing`): it wraps a batch's file in a layer of its own.
    pub fn register_postprocessing<F>(&mut self, name: &str, f: F)
    where
        F: Fn(Box<dyn FeedFile>, &PluginSetup<'_>) -> Result<Box<dyn FeedFile>, String> + 'static,
    {
        self.postprocessing
            .push((normalize_component(name), Rc::new(f)));
    }

    /// The postprocessing plugin registered as `name`.
    pub fn postprocessing(&self, name: &str) -> Option<&PluginFactory> {
        find(&self.postprocessing, name)
    }

    /// The exporter registered as `name`.
    pub fn exporter(&self, name: &str) -> Option<&ExporterFactory> {
        find(&self.exporters, name)
    }

    /// The storage registered as `name`.
    pub fn storage(&self, name: &str) -> Option<&StorageFactory> {
        find(&self.storages, name)
    }

    /// The `uri_params` function registered as `name`.
    pub fn uri_params(&self, name: &str) -> Option<&UriParamsFn> {
        self.uri_params
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, f)| f)
    }

    /// The item filter registered as `name`.
    pub fn item_filter(&self, name: &str) -> Option<&ItemFilterFn> {
        self.item_filters
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, f)| f)
    }
}
