//! One batch of one feed (Scrapy's `FeedSlot`): its URI, storage and exporter; the file
//! is opened at the first item (or at the close, for an empty first batch that
//! `store_empty` keeps), so a batch that gets no item leaves no file.

use std::io::Write;
use std::rc::Rc;

use super::encoding::EncodeError;
use super::exporter::ItemExporter;
use super::storage::{FeedFile, FeedStorage};
use crate::crawl::base::item::Item;
use crate::defer::Deferred;

/// Why an item did not reach a feed.
#[derive(Debug)]
pub enum SlotError {
    /// The storage could not be opened or written.
    Io(std::io::Error),
    /// The item holds a character outside the feed's encoding (left out).
    Encode(EncodeError),
}

impl std::fmt::Display for SlotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io(e) => e.fmt(f),
            Self::Encode(e) => e.fmt(f),
        }
    }
}

/// Puts the postprocessing layers over a batch's file.
pub type Layers = Rc<dyn Fn(Box<dyn FeedFile>) -> std::io::Result<Box<dyn FeedFile>>>;

/// One batch.
pub struct FeedSlot {
    /// The batch's number, from 1.
    pub batch_id: u64,
    /// The batch's URI (placeholders filled).
    pub uri: String,
    /// Items written.
    pub itemcount: u64,
    storage: Rc<dyn FeedStorage>,
    exporter: Box<dyn ItemExporter>,
    layers: Option<Layers>,
    file: Option<Box<dyn FeedFile>>,
    exporting: bool,
    /// Closed by a forced stop: nothing more is written.
    closed: bool,
    /// The bytes of one item (reused).
    buf: Vec<u8>,
}

impl FeedSlot {
    /// A batch; nothing is opened yet.
    pub fn new(
        batch_id: u64,
        uri: String,
        storage: Rc<dyn FeedStorage>,
        exporter: Box<dyn ItemExporter>,
        layers: Option<Layers>,
    ) -> Self {
        Self {
            batch_id,
            uri,
            itemcount: 0,
            storage,
            exporter,
            layers,
            file: None,
            exporting: false,
            closed: false,
            buf: Vec::new(),
        }
    }

    /// The storage's kind (for stats keys).
    pub fn storage_kind(&self) -> String {
        self.storage.kind().to_owned()
    }

    /// The local file the batch is written to, once it is opened.
    pub fn local_path(&self) -> Option<std::path::PathBuf> {
        self.file.as_ref().and_then(|_| self.storage.local_path())
    }

    /// Removes what a killed run left of this batch (see [`FeedStorage::discard`]).
    ///
    /// # Errors
    ///
    /// What was there cannot be removed.
    pub fn discard(&self) -> std::io::Result<bool> {
        self.storage.discard()
    }

    /// Continues a batch a previous run wrote `len` bytes and `items` items of (a
    /// JOBDIR resume): the file is cut back to `len`; an empty one starts again.
    ///
    /// # Errors
    ///
    /// The storage cannot be reopened (or cannot take back what it was given).
    pub fn resume(&mut self, len: u64, items: u64) -> std::io::Result<()> {
        let Some(file) = self.storage.reopen_at(len)? else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                format!("{} cannot be resumed", self.storage.kind()),
            ));
        };
        self.file = Some(file);
        if len == 0 {
            self.start_exporting()?;
        } else {
            self.exporter.resume(items);
            self.exporting = true;
        }
        self.itemcount = items;
        Ok(())
    }

    /// Opens the file (once) and writes what comes before the first item.
    ///
    /// # Errors
    ///
    /// The storage cannot be opened or written.
    pub fn start_exporting(&mut self) -> std::io::Result<()> {
        if self.closed {
            return Err(std::io::Error::other(
                "the feed was closed by a forced stop",
            ));
        }
        if self.file.is_none() {
            let file = self.storage.open()?;
            self.file = Some(match &self.layers {
                Some(wrap) => wrap(file)?,
                None => file,
            });
        }
        if !self.exporting {
            self.buf.clear();
            self.exporter.start_exporting(&mut self.buf);
            self.write_buf()?;
            self.exporting = true;
        }
        Ok(())
    }

    fn write_buf(&mut self) -> std::io::Result<()> {
        match self.file.as_mut() {
            Some(f) if !self.buf.is_empty() => f.write_all(&self.buf),
            _ => Ok(()),
        }
    }

    /// Writes one item.
    ///
    /// # Errors
    ///
    /// The storage failed, or the item cannot be encoded (it is left out).
    pub fn export_item(&mut self, item: &Item) -> Result<(), SlotError> {
        self.start_exporting().map_err(SlotError::Io)?;
        self.buf.clear();
        self.exporter
            .export_item(item, &mut self.buf)
            .map_err(SlotError::Encode)?;
        self.write_buf().map_err(SlotError::Io)?;
        self.itemcount += 1;
        Ok(())
    }

    /// Hands what is buffered to the OS (and to the disk with `sync`).
    ///
    /// # Errors
    ///
    /// The write or the sync failed.
    pub fn flush(&mut self, sync: bool) -> std::io::Result<()> {
        match self.file.as_mut() {
            Some(f) if sync => f.sync_data(),
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }

    /// The batch's length in bytes, after a flush (0 before it is opened).
    ///
    /// # Errors
    ///
    /// The flush failed or the target has no position.
    pub fn position(&mut self) -> std::io::Result<u64> {
        match self.file.as_mut() {
            Some(f) => f.position(),
            None => Ok(0),
        }
    }

    /// Closes the batch as Scrapy's `_close_slot` does: a batch with items is
    /// finished, an empty first batch is written whole when `store_empty`, any other
    /// empty batch is dropped (`Ok(None)`: nothing to store). Otherwise the finished
    /// batch is handed back, to be stored now or — in a JOBDIR job — once the commit
    /// that closed it is durable.
    ///
    /// # Errors
    ///
    /// The last bytes could not be written.
    pub fn finish_batch(&mut self, store_empty: bool) -> std::io::Result<Option<ClosedBatch>> {
        if self.itemcount == 0 && !(store_empty && self.batch_id == 1) {
            return Ok(None);
        }
        self.start_exporting()?;
        self.finish()?;
        if let Some(file) = self.file.as_mut() {
            file.finish()?;
        }
        Ok(self.file.take().map(|file| ClosedBatch {
            storage: self.storage.clone(),
            file,
        }))
    }

    fn finish(&mut self) -> std::io::Result<()> {
        if self.exporting {
            self.buf.clear();
            self.exporter.finish_exporting(&mut self.buf);
            self.write_buf()?;
            self.exporting = false;
        }
        Ok(())
    }

    /// A forced stop: finishes what was started and flushes, without storing.
    ///
    /// # Errors
    ///
    /// The last bytes could not be written.
    pub fn force_close(&mut self) -> std::io::Result<()> {
        self.finish()?;
        self.closed = true;
        match self.file.take() {
            Some(mut file) => file.finish(),
            None => Ok(()),
        }
    }
}

/// A finished batch waiting to be stored.
pub struct ClosedBatch {
    storage: Rc<dyn FeedStorage>,
    file: Box<dyn FeedFile>,
}

impl ClosedBatch {
    /// Stores it; the Deferred fires when the storage has it.
    pub fn store(self) -> Deferred<()> {
        self.storage.store(self.file)
    }
}
