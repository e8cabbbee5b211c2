//! Feed exports (`FEEDS`, `-o URI` / `-O URI`), as Scrapy's `FeedExporter`: for each
//! feed, the items the crawl scrapes go through the feed's item filters to its
//! exporter (JSON lines, JSON, CSV, XML, or one registered in `FEED_EXPORTERS`), whose
//! bytes go to the feed's storage (a file, the standard output, or one registered in
//! `FEED_STORAGES`). A feed's URI may hold placeholders (`%(name)s`, `%(time)s`,
//! `%(batch_id)d`, `%(batch_time)s`, any spider attribute or argument, what a
//! `uri_params` function adds); with `batch_item_count` a new batch (a new URI) starts
//! after every N items. Every batch is closed (a JSON array gets its `]`) on
//! `spider_closed`, so the files are valid after a Ctrl+C shutdown too.
//!
//! With a JOBDIR the feeds are part of the job: an item scraped from a response waits
//! until that response is DONE and is then written with the others of its response;
//! the feed's length is committed with the `DONE`, and a resume cuts the file back to
//! the committed length and continues (a JSON array loses its closing bracket and
//! gets it back at the end), so every item appears exactly once. With batches, the
//! item count names the open batch; a finished batch is stored once the commit that
//! closed it is durable. A job's feeds are files, `s3://` or `ftp://` whose URIs do not
//! change from run to run (no time placeholders) and can be cut back (no
//! postprocessing).
//!
//! Before a shared queue acknowledges requests, the feeds hand what they buffer to the
//! OS ([`OutputBuffer`]; `FEED_FSYNC = "always"`: to the disk), so a worker killed
//! after an acknowledgement has lost none of the items of the acknowledged requests.

pub mod encoding;
pub mod exporter;
pub mod ftp;
pub mod plugins;
pub mod remote;
pub mod s3;
pub mod storage;
pub mod uri;

mod csv;
mod json;
mod options;
pub mod postprocessing;
mod slot;
mod xml;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use serde_json::{Map, Value};

pub use self::csv::CsvExporter;
pub use self::json::{JsonExporter, JsonLinesExporter};
pub use self::options::{known_formats, path_suffix};
pub use self::plugins::FeedPlugins;
pub use self::xml::XmlExporter;

use self::options::{Defaults, FeedOptions, feed_options};
use self::slot::{FeedSlot, SlotError};
use self::storage::StorageSetup;
use crate::crawl::base::errors::NotConfigured;
use crate::crawl::base::item::Item;
use crate::crawl::base::signals::{Signal, SignalArgs};
use crate::crawl::context::{CrawlContext, OutputBuffer};
use crate::crawl::http::request::keys;
use crate::crawl::jobdir::JobOutput;
use crate::crawl::spiders::SpiderAttributes;
use crate::defer::Failure;

/// One feed: its options, its open batch, the items held for a JOBDIR commit.
struct Feed {
    options: Rc<FeedOptions>,
    /// The open batch (`None` before `spider_opened` and after the close).
    slot: Option<FeedSlot>,
    /// Items held back until their request is done (JOBDIR), by request id.
    held: HashMap<u64, Vec<Item>>,
    /// Items written, over every batch.
    total: u64,
    /// The first batch's URI (the feed's name in a JOBDIR journal and in logs).
    first_uri: String,
    /// Finished batches waiting for their commit to be durable (JOBDIR).
    awaiting: Vec<PendingStore>,
}

/// What the signal handlers share.
struct Shared {
    ctx: Weak<CrawlContext>,
    attributes: Map<String, Value>,
    fsync: bool,
}

impl Shared {
    /// The wall clock in microseconds (the crawl's clock: a manual one in tests).
    fn now_micros(&self) -> i64 {
        self.ctx
            .upgrade()
            .map_or(0, |c| (c.clock().wall_seconds() * 1e6).round() as i64)
    }

    /// The URI of batch `batch_id` (Scrapy's `_get_uri_params` + `apply_uri_params`).
    fn batch_uri(&self, options: &FeedOptions, batch_id: u64) -> Result<String, String> {
        let mut params = uri::uri_params(&self.attributes, self.now_micros(), batch_id);
        if let Some(f) = &options.uri_params {
            f(&mut params);
        }
        uri::apply_uri_params(&options.uri_template, &params)
    }

    /// A new batch of `feed`.
    fn new_batch(&self, options: &FeedOptions, batch_id: u64) -> Result<FeedSlot, String> {
        let uri = self.batch_uri(options, batch_id)?;
        let Some(ctx) = self.ctx.upgrade() else {
            return Err("the crawl is gone".into());
        };
        let storage = (options.storage)(&StorageSetup {
            uri: &uri,
            overwrite: options.overwrite,
            settings: &ctx.settings,
            ctx: &ctx,
        })?;
        let exporter = (options.exporter)(&options.exporter_options)?;
        let layers = (!options.postprocessing.is_empty()).then(|| {
            let plugins = options.postprocessing.clone();
            let raw = options.raw.clone();
            let file_name = uri.rsplit('/').next().unwrap_or(&uri).to_owned();
            let now = ctx.clock().wall_seconds();
            Rc::new(move |mut file: Box<dyn storage::FeedFile>| {
                let setup = postprocessing::PluginSetup {
                    options: &raw,
                    file_name: &file_name,
                    now,
                };
                for plugin in plugins.iter().rev() {
                    file = plugin(file, &setup).map_err(std::io::Error::other)?;
                }
                Ok(file)
            }) as slot::Layers
        });
        Ok(FeedSlot::new(batch_id, uri, storage, exporter, layers))
    }

    /// In a job: removes the batches a killed run made after batch `open`, the one the
    /// job resumes (the resume makes them again: a remote one must not be uploaded as
    /// the killed run left it, a local one not appended to). A resume is behind the
    /// killed run when it falls back to the last `SYNC` or the group that closed a
    /// batch was cut off.
    ///
    /// # Errors
    ///
    /// A batch's URI cannot be made, or what is left of it cannot be removed.
    fn discard_ahead(&self, options: &FeedOptions, open: u64) -> Result<(), String> {
        if options.batch_item_count == 0 {
            return Ok(());
        }
        let mut discarded = 0;
        for batch in open + 1.. {
            let slot = self.new_batch(options, batch)?;
            let found = slot
                .discard()
                .map_err(|e| format!("cannot remove batch {batch}: {e}"))?;
            if !found {
                break;
            }
            discarded += 1;
        }
        if discarded > 0 {
            log::info!(
                "Removed {discarded} batch(es) of feed {} a killed run made after batch \
                 {open}, where the job resumes (they are made again)",
                uri::redact(&options.uri_template)
            );
            if let Some(c) = self.ctx.upgrade() {
                c.stats.inc_value("feedexport/discarded_batches", discarded);
            }
        }
        Ok(())
    }

    /// Writes `item` to `feed` (if its filters take it) and starts the next batch when
    /// this one is full.
    fn write(&self, feed: &Rc<RefCell<Feed>>, item: &Item) {
        let full = {
            let mut f = feed.borrow_mut();
            let f = &mut *f;
            if !f.options.accepts(item) {
                return;
            }
            let Some(slot) = f.slot.as_mut() else {
                return;
            };
            if let Err(e) = slot.export_item(item) {
                log::error!(
                    "Error exporting an item to feed {}: {e}",
                    uri::redact(&slot.uri)
                );
                if let Some(c) = self.ctx.upgrade() {
                    let key = match e {
                        SlotError::Encode(_) => "feedexport/item_error_count".to_owned(),
                        SlotError::Io(_) => {
                            format!("feedexport/write_error_count/{}", slot.storage_kind())
                        }
                    };
                    c.stats.inc_value(&key, 1);
                }
                return;
            }
            f.total += 1;
            let count = f.options.batch_item_count;
            count > 0 && slot.itemcount >= count
        };
        if full {
            self.roll_over(feed);
        }
    }

    /// Closes `feed`'s full batch and opens the next (Scrapy: right after the item
    /// that filled it, so the next batch's `%(batch_time)s` is that moment).
    fn roll_over(&self, feed: &Rc<RefCell<Feed>>) {
        let (options, next) = {
            let f = feed.borrow();
            let Some(slot) = f.slot.as_ref() else {
                return;
            };
            (f.options.clone(), slot.batch_id + 1)
        };
        // Built without a borrow: the storage and uri_params may be a project's code.
        let new = match self.new_batch(&options, next) {
            Ok(new) => new,
            Err(e) => {
                log::error!(
                    "Cannot start batch {next} of feed {}: {e} (the batch goes on)",
                    options.uri_template
                );
                return;
            }
        };
        let old = feed.borrow_mut().slot.replace(new);
        if let Some(mut old) = old {
            // In a JOBDIR job the batch is stored once the commit that closed it is
            // durable: a kill before then resumes this batch from the journal.
            let in_job = self.ctx.upgrade().is_some_and(|c| c.job().is_some());
            if let Some(p) = self.close_slot(&mut old, options.store_empty, &options.format, in_job)
            {
                feed.borrow_mut().awaiting.push(p);
            }
        }
    }

    /// Closes a batch and stores it (Scrapy's `_close_slot`): logged, counted by
    /// storage kind, then `feed_slot_closed`. With `later`, the finished batch is
    /// handed back instead of stored (a JOBDIR job stores it once durable).
    fn close_slot(
        &self,
        slot: &mut FeedSlot,
        store_empty: bool,
        format: &str,
        later: bool,
    ) -> Option<PendingStore> {
        let pending = PendingStore {
            what: format!(
                "{format} feed ({} items) in: {}",
                slot.itemcount,
                uri::redact(&slot.uri)
            ),
            kind: slot.storage_kind(),
            uri: slot.uri.clone(),
            items: slot.itemcount,
            batch: None,
        };
        let batch = match slot.finish_batch(store_empty) {
            Ok(None) => return None,
            Ok(Some(b)) => Ok(b),
            Err(e) => Err(Failure::msg(e.to_string())),
        };
        let pending = PendingStore {
            batch: Some(batch),
            ..pending
        };
        if later {
            return Some(pending);
        }
        self.store(pending);
        None
    }

    /// Stores a finished batch: logged and counted when stored, `feed_slot_closed`.
    fn store(&self, pending: PendingStore) {
        let PendingStore {
            what,
            kind,
            uri,
            items,
            batch,
        } = pending;
        let stored = match batch {
            Some(Ok(b)) => b.store(),
            Some(Err(f)) => crate::defer::fail(f),
            None => return,
        };
        let ctx = self.ctx.clone();
        stored.add_both(move |r| {
            let Some(c) = ctx.upgrade() else {
                return Ok(());
            };
            match r {
                Ok(()) => {
                    log::info!("Stored {what}");
                    c.stats
                        .inc_value(&format!("feedexport/success_count/{kind}"), 1);
                }
                Err(f) => {
                    log::error!("Error storing {what}: {}", f.describe());
                    c.stats
                        .inc_value(&format!("feedexport/failed_count/{kind}"), 1);
                }
            }
            c.signals.send_catch_log(
                Signal::FeedSlotClosed,
                SignalArgs::FeedSlot { uri: &uri, items },
            );
            Ok(())
        });
        // An upload still running when the spider closes is waited for.
        if !stored.is_called()
            && let Some(c) = self.ctx.upgrade()
        {
            c.wait_before_close(stored);
        }
    }
}

/// A finished batch to store, with what its log lines and stats say.
struct PendingStore {
    what: String,
    kind: String,
    uri: String,
    items: u64,
    batch: Option<Result<slot::ClosedBatch, Failure>>,
}

/// One feed as an output of the crawl: a part of a JOBDIR job, and a buffer a shared
/// queue has emptied before it acknowledges requests (`FEED_FSYNC`: synced too).
struct FeedOutput {
    feed: Rc<RefCell<Feed>>,
    shared: Rc<Shared>,
}

impl OutputBuffer for FeedOutput {
    fn flush_output(&self) -> std::io::Result<()> {
        match self.feed.borrow_mut().slot.as_mut() {
            Some(slot) => slot.flush(self.shared.fsync),
            None => Ok(()),
        }
    }

    fn output_name(&self) -> String {
        format!("feed {}", uri::redact(&self.feed.borrow().first_uri))
    }
}

impl JobOutput for FeedOutput {
    fn name(&self) -> String {
        self.feed.borrow().first_uri.clone()
    }

    fn request_done(&self, id: u64) {
        let items = self.feed.borrow_mut().held.remove(&id);
        for item in items.iter().flatten() {
            self.shared.write(&self.feed, item);
        }
    }

    fn position(&self) -> std::io::Result<(u64, u64)> {
        let mut feed = self.feed.borrow_mut();
        let total = feed.total;
        match feed.slot.as_mut() {
            Some(slot) => Ok((slot.position()?, total)),
            None => Ok((0, total)),
        }
    }

    fn local_file(&self) -> Option<std::path::PathBuf> {
        self.feed
            .borrow()
            .slot
            .as_ref()
            .and_then(FeedSlot::local_path)
    }

    fn sync(&self) -> std::io::Result<()> {
        match self.feed.borrow_mut().slot.as_mut() {
            Some(slot) => slot.flush(true),
            None => Ok(()),
        }
    }

    fn durable(&self) {
        let awaiting = std::mem::take(&mut self.feed.borrow_mut().awaiting);
        for p in awaiting {
            self.shared.store(p);
        }
    }
}

/// The feed exporter extension.
pub struct FeedExporter {
    feeds: Vec<Rc<RefCell<Feed>>>,
    /// Each feed as an output, kept alive for the context's and the job's weak
    /// references.
    outputs: Vec<Rc<FeedOutput>>,
    shared: Rc<Shared>,
    /// The storage of a URI scheme (for the batches earlier runs left).
    storage_for: StorageLookup,
}

/// Finds the storage factory of a URI scheme.
type StorageLookup = Rc<dyn Fn(&str) -> Option<storage::StorageFactory>>;

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

/// A feed a JOBDIR job cannot resume exactly once, and why.
fn job_refusal(options: &FeedOptions) -> Option<&'static str> {
    let t = &options.uri_template;
    if t.contains("%(time)") || t.contains("%(batch_time)") {
        Some("%(time)s / %(batch_time)s: a resumed job continues the batch of the first run")
    } else if !options.postprocessing.is_empty() {
        Some("postprocessing: a compressed stream cannot be cut back to a committed length")
    } else if options.scheme == "ftp" && options.overwrite == Some(false) {
        Some("overwrite false on FTP appends (APPE): a batch sent again would be doubled")
    } else if !matches!(options.scheme.as_str(), "" | "file" | "s3" | "ftp") {
        Some(
            "a resume cuts the open batch back to its committed length: a file, or a local batch of s3:// or ftp://",
        )
    } else {
        None
    }
}

impl FeedExporter {
    /// Builds the extension and connects it to the crawl's signals.
    ///
    /// # Errors
    ///
    /// No `FEEDS` ([`NotConfigured`]), or a feed trawl cannot write: an unknown format
    /// or scheme, a batched URI without a batch placeholder, a placeholder no
    /// parameter fills, a malformed option (Scrapy logs these and crawls without
    /// feeds; trawl refuses to start).
    pub fn install(ctx: &Rc<CrawlContext>) -> Result<Rc<Self>, Failure> {
        let s = &ctx.settings;
        let feeds_setting = s.get_dict("FEEDS")?;
        if feeds_setting.is_empty() {
            return Err(Failure::new(NotConfigured("no FEEDS".into())));
        }
        let plugins = ctx.resource(|| Ok(Rc::new(FeedPlugins::default())))?;
        let attributes = ctx
            .resource(|| {
                let mut m = Map::new();
                m.insert("name".into(), ctx.spider_name().into());
                Ok(Rc::new(SpiderAttributes(m)))
            })?
            .0
            .clone();
        let shared = Rc::new(Shared {
            ctx: Rc::downgrade(ctx),
            attributes,
            fsync: fsync_setting(s.get("FEED_FSYNC"))?,
        });
        let defaults = Defaults::from_settings(s).map_err(Failure::msg)?;
        let mut feeds = Vec::new();
        for (uri, options) in &feeds_setting {
            let options = feed_options(uri, options, &defaults, &plugins).map_err(Failure::msg)?;
            if ctx.job().is_some()
                && let Some(why) = job_refusal(&options)
            {
                return Err(Failure::msg(format!(
                    "FEEDS[{uri:?}] cannot be part of a JOBDIR job ({why})"
                )));
            }
            // The placeholders and the storage are checked now: a crawl whose feed has
            // no URI or no storage does not start (Scrapy builds the storage once at
            // start-up too, `_storage_supported`).
            let first_uri = shared.batch_uri(&options, 1).map_err(Failure::msg)?;
            (options.storage)(&StorageSetup {
                uri: &first_uri,
                overwrite: options.overwrite,
                settings: s,
                ctx,
            })
            .map_err(|e| Failure::msg(format!("FEEDS[{:?}]: {e}", uri::redact(uri))))?;
            feeds.push(Rc::new(RefCell::new(Feed {
                options: Rc::new(options),
                slot: None,
                held: HashMap::new(),
                total: 0,
                first_uri,
                awaiting: Vec::new(),
            })));
        }
        let outputs: Vec<Rc<FeedOutput>> = feeds
            .iter()
            .map(|feed| {
                Rc::new(FeedOutput {
                    feed: feed.clone(),
                    shared: shared.clone(),
                })
            })
            .collect();
        for o in &outputs {
            let o: Rc<dyn OutputBuffer> = o.clone();
            ctx.register_output(Rc::downgrade(&o));
        }
        let defaults = Rc::new(defaults);
        let storage_for: StorageLookup =
            Rc::new(move |scheme| defaults.storage_for_scheme(scheme, &plugins));
        let me = Rc::new(Self {
            feeds,
            outputs,
            shared,
            storage_for,
        });
        me.connect(ctx);
        Ok(me)
    }

    fn connect(self: &Rc<Self>, ctx: &Rc<CrawlContext>) {
        let m = self.clone();
        let c = Rc::downgrade(ctx);
        ctx.signals.connect(Signal::SpiderOpened, move |_| {
            if let Some(c) = c.upgrade()
                && c.job().is_none()
            {
                // What earlier runs could not upload goes first.
                for d in remote::upload_pending(&c, &*m.storage_for) {
                    c.wait_before_close(d);
                }
            }
            let job = c.upgrade().and_then(|c| c.job().cloned());
            for (feed, output) in m.feeds.iter().zip(&m.outputs) {
                let options = feed.borrow().options.clone();
                let mut slot = m.shared.new_batch(&options, 1).map_err(Failure::msg)?;
                let mut f = feed.borrow_mut();
                f.first_uri = slot.uri.clone();
                if let Some(job) = &job {
                    // A job's feed is opened now, so that every commit records its length.
                    // The journal holds the open batch's length and the feed's item
                    // count; batches roll over at once, so the count names the batch.
                    let (opened, batch) = match job.feed_position(&f.first_uri) {
                        Some((len, items)) => {
                            let count = options.batch_item_count;
                            let (batch, in_batch) = match items.checked_div(count) {
                                Some(full) => (full + 1, items % count),
                                None => (1, items),
                            };
                            if batch > 1 {
                                slot = m.shared.new_batch(&options, batch).map_err(Failure::msg)?;
                            }
                            log::info!(
                                "Resuming feed {} at {len} bytes of batch {batch} ({items} items)",
                                uri::redact(&slot.uri)
                            );
                            f.total = items;
                            (slot.resume(len, in_batch), Some(batch))
                        }
                        None => (slot.start_exporting(), None),
                    };
                    opened.map_err(|e| {
                        Failure::msg(format!("cannot open feed {}: {e}", f.first_uri))
                    })?;
                    if let Some(batch) = batch {
                        m.shared.discard_ahead(&options, batch).map_err(|e| {
                            Failure::msg(format!("feed {}: {e}", uri::redact(&f.first_uri)))
                        })?;
                    }
                    let output: Rc<dyn JobOutput> = output.clone();
                    job.register_output(Rc::downgrade(&output));
                }
                f.slot = Some(slot);
            }
            if let (Some(job), Some(c)) = (&job, c.upgrade()) {
                // Closed batches a killed run had not uploaded yet go up now.
                let open: Vec<String> = m
                    .feeds
                    .iter()
                    .filter_map(|f| f.borrow().slot.as_ref().map(|s| s.uri.clone()))
                    .collect();
                for d in remote::upload_job_batches(&c, job.dir(), &open, &*m.storage_for) {
                    c.wait_before_close(d);
                }
            }
            Ok(())
        });
        let m = self.clone();
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
                    match held_for {
                        Some(id) => feed
                            .borrow_mut()
                            .held
                            .entry(id)
                            .or_default()
                            .push((*item).clone()),
                        None => m.shared.write(feed, item),
                    }
                }
            }
            Ok(())
        });
        let m = self.clone();
        let c = Rc::downgrade(ctx);
        ctx.signals.connect(Signal::SpiderClosed, move |_| {
            for feed in &m.feeds {
                let closing = {
                    let mut f = feed.borrow_mut();
                    let format = f.options.format.clone();
                    let store_empty = f.options.store_empty;
                    f.slot.take().map(|s| (s, store_empty, format))
                };
                let awaiting = std::mem::take(&mut feed.borrow_mut().awaiting);
                for p in awaiting {
                    m.shared.store(p);
                }
                if let Some((mut slot, store_empty, format)) = closing {
                    m.shared.close_slot(&mut slot, store_empty, &format, false);
                }
            }
            if let Some(c) = c.upgrade() {
                c.signals
                    .send_catch_log(Signal::FeedExporterClosed, SignalArgs::None);
            }
            Ok(())
        });
    }

    /// A forced stop (the second Ctrl+C): flushes every feed and closes it (a JSON feed
    /// gets its closing bracket), so nothing already scraped is lost. Items held for a
    /// JOBDIR commit stay out: the resume fetches them again.
    pub fn force_close(&self) {
        for feed in &self.feeds {
            let mut f = feed.borrow_mut();
            let Feed { slot, total, .. } = &mut *f;
            if let Some(slot) = slot.as_mut() {
                match slot.force_close() {
                    Ok(()) => log::info!(
                        "Forced stop: {total} items stored in {}",
                        uri::redact(&slot.uri)
                    ),
                    Err(e) => log::error!(
                        "Forced stop: error closing feed {}: {e}",
                        uri::redact(&slot.uri)
                    ),
                }
            }
        }
    }

    /// Items written to each feed (over all its batches), by the feed's first URI.
    pub fn counts(&self) -> Vec<(String, u64)> {
        self.feeds
            .iter()
            .map(|f| {
                let f = f.borrow();
                (f.first_uri.clone(), f.total)
            })
            .collect()
    }
}

impl std::fmt::Debug for FeedExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.counts()).finish()
    }
}
