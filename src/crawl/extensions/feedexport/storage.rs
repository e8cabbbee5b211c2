//! Feed storages (Scrapy's `FEED_STORAGES`): where a batch's bytes go. A storage opens
//! a [`FeedFile`] for each batch and stores it when the batch closes. `file` (and
//! plain paths) writes the file in place, appending unless `overwrite`, creating
//! missing directories; `stdout:` writes to the standard output.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::crawl::base::settings::Settings;
use crate::crawl::context::CrawlContext;
use crate::defer::Deferred;

/// An open batch (the file object Scrapy's exporters write to).
pub trait FeedFile: Write {
    /// Writes what is buffered and asks the OS to put it on the disk.
    ///
    /// # Errors
    ///
    /// The write or the sync failed.
    fn sync_data(&mut self) -> io::Result<()>;

    /// How many bytes the batch holds (for a JOBDIR commit), after a flush.
    ///
    /// # Errors
    ///
    /// The flush failed or the target has no position (a pipe).
    fn position(&mut self) -> io::Result<u64>;

    /// Ends what this layer adds to the stream (a compressor's last block and
    /// trailer) and flushes; called once, when the batch closes.
    ///
    /// # Errors
    ///
    /// The last bytes could not be written.
    fn finish(&mut self) -> io::Result<()> {
        self.flush()
    }
}

/// A storage for one feed URI (a batch's, placeholders filled).
pub trait FeedStorage {
    /// Scrapy's class name, used in stats keys (`feedexport/success_count/<kind>`).
    fn kind(&self) -> &str;

    /// Opens the batch's file.
    ///
    /// # Errors
    ///
    /// The target cannot be opened.
    fn open(&self) -> io::Result<Box<dyn FeedFile>>;

    /// Stores a finished batch: closes the file (a remote storage uploads it). The
    /// Deferred fires when the batch is stored.
    fn store(&self, file: Box<dyn FeedFile>) -> Deferred<()>;

    /// Reopens the batch cut back to `len` bytes, to continue it (a JOBDIR resume);
    /// `None` when this storage cannot take back what it was given.
    ///
    /// # Errors
    ///
    /// The target cannot be opened or cut.
    fn reopen_at(&self, _len: u64) -> io::Result<Option<Box<dyn FeedFile>>> {
        Ok(None)
    }

    /// Uploads a batch a previous run left behind in `path` (a remote storage: the run
    /// could not upload it, or was killed); `None` for a storage that keeps nothing
    /// aside.
    fn upload_pending(&self, _path: &Path) -> Option<Deferred<()>> {
        None
    }

    /// The local file the open batch is written to, once opened (a JOBDIR records it
    /// with the committed length).
    fn local_path(&self) -> Option<PathBuf> {
        None
    }

    /// Removes what a killed run left of this batch: a JOBDIR resume from a point
    /// before the batch began makes it again. `Ok(true)` when something was there.
    ///
    /// # Errors
    ///
    /// What was there cannot be removed.
    fn discard(&self) -> io::Result<bool> {
        Ok(false)
    }
}

/// What a storage factory gets.
pub struct StorageSetup<'a> {
    /// The batch's URI.
    pub uri: &'a str,
    /// The feed's `overwrite` option as given (`None`: not set).
    pub overwrite: Option<bool>,
    /// The crawl's settings (credentials, temporary directory).
    pub settings: &'a Settings,
    /// The crawl (its reactor, clock and stats, for a remote storage).
    pub ctx: &'a Rc<CrawlContext>,
}

impl std::fmt::Debug for StorageSetup<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorageSetup")
            .field("uri", &super::uri::redact(self.uri))
            .field("overwrite", &self.overwrite)
            .finish_non_exhaustive()
    }
}

/// Builds a storage for a URI (`FEED_STORAGES`); an `Err` is a start-up error.
pub type StorageFactory = Rc<dyn Fn(&StorageSetup<'_>) -> Result<Rc<dyn FeedStorage>, String>>;

/// Scrapy's `FileFeedStorage`: a local file, appended to unless `overwrite`.
#[derive(Debug)]
pub struct FileFeedStorage {
    path: String,
    overwrite: bool,
}

impl FileFeedStorage {
    /// The storage for a path or a `file:` URI (decoded as w3lib's
    /// `file_uri_to_path`).
    pub fn new(setup: &StorageSetup<'_>) -> Self {
        let path = if setup.uri.starts_with("file:") {
            super::uri::file_uri_to_path(setup.uri)
        } else {
            setup.uri.to_owned()
        };
        Self {
            path,
            overwrite: setup.overwrite.unwrap_or(false),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    fn create_parent(&self) -> io::Result<()> {
        if let Some(parent) = Path::new(&self.path).parent()
            && !parent.as_os_str().is_empty()
        {
            std::fs::create_dir_all(parent)?;
        }
        Ok(())
    }
}

impl FeedStorage for FileFeedStorage {
    fn kind(&self) -> &str {
        "FileFeedStorage"
    }

    fn open(&self) -> io::Result<Box<dyn FeedFile>> {
        self.create_parent()?;
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .append(!self.overwrite)
            .truncate(self.overwrite)
            .open(&self.path)?;
        Ok(Box::new(BufWriter::with_capacity(64 * 1024, file)))
    }

    fn store(&self, mut file: Box<dyn FeedFile>) -> Deferred<()> {
        match file.flush() {
            Ok(()) => crate::defer::succeed(()),
            Err(e) => crate::defer::fail(crate::defer::Failure::msg(format!(
                "cannot write {}: {e}",
                self.path
            ))),
        }
    }

    fn reopen_at(&self, len: u64) -> io::Result<Option<Box<dyn FeedFile>>> {
        self.create_parent()?;
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .write(true)
            .truncate(false)
            .open(&self.path)?;
        file.set_len(len)?;
        file.seek(SeekFrom::End(0))?;
        Ok(Some(Box::new(BufWriter::with_capacity(64 * 1024, file))))
    }

    fn local_path(&self) -> Option<PathBuf> {
        Some(PathBuf::from(&self.path))
    }

    fn discard(&self) -> io::Result<bool> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
}

impl FeedFile for BufWriter<File> {
    fn sync_data(&mut self) -> io::Result<()> {
        self.flush()?;
        self.get_ref().sync_data()
    }

    fn position(&mut self) -> io::Result<u64> {
        self.flush()?;
        self.get_mut().stream_position()
    }
}

/// Scrapy's `StdoutFeedStorage` (`stdout:`, `-o -:FORMAT`): the standard output.
#[derive(Debug)]
pub struct StdoutFeedStorage;

impl StdoutFeedStorage {
    /// The storage; warns, as Scrapy does, that `overwrite` means nothing here.
    pub fn new(setup: &StorageSetup<'_>) -> Self {
        if setup.overwrite == Some(true) {
            log::warn!(
                "Standard output (stdout) storage does not support overwriting. To suppress \
                 this warning, remove the overwrite option from your FEEDS setting, or set it \
                 to False."
            );
        }
        Self
    }
}

/// The standard output as a batch's file.
struct StdoutFile(BufWriter<io::Stdout>);

impl Write for StdoutFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl FeedFile for StdoutFile {
    fn sync_data(&mut self) -> io::Result<()> {
        self.0.flush()
    }

    fn position(&mut self) -> io::Result<u64> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "the standard output has no position",
        ))
    }
}

impl FeedStorage for StdoutFeedStorage {
    fn kind(&self) -> &str {
        "StdoutFeedStorage"
    }

    fn open(&self) -> io::Result<Box<dyn FeedFile>> {
        Ok(Box::new(StdoutFile(BufWriter::with_capacity(
            64 * 1024,
            io::stdout(),
        ))))
    }

    fn store(&self, mut file: Box<dyn FeedFile>) -> Deferred<()> {
        match file.flush() {
            Ok(()) => crate::defer::succeed(()),
            Err(e) => crate::defer::fail(crate::defer::Failure::msg(format!(
                "cannot write to the standard output: {e}"
            ))),
        }
    }
}
