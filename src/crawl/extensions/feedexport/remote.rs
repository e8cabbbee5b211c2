//! Remote feed storages (S3, FTP, a project's own): a batch is written to a local file
//! and uploaded when the batch closes, so memory stays flat however large the batch
//! (Scrapy's `BlockingFeedStorage`, whose temporary file is in `FEED_TEMPDIR`).
//!
//! The local files live in a directory of the run, `<FEED_TEMPDIR>/trawl-feeds/<spider>/
//! <pid>-<start>/`, locked (`flock`) for as long as the run lasts. Each batch is a
//! `<n>.feed` file with a `<n>.json` note of its URI. An upload that fails is retried
//! with backoff (`FEED_STORAGE_RETRY_TIMES`, `FEED_STORAGE_RETRY_BACKOFF`); one that still
//! fails is logged (credentials redacted), counted, and its file kept. A run finds the
//! directories no live run holds — what a run could not upload, or the open batch of a
//! worker that was killed, whose items were written to the OS before their requests
//! were acknowledged — and uploads them before its own batches close.

use std::cell::{Cell, RefCell};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::rc::{Rc, Weak};

use serde_json::{Value, json};

use super::storage::{FeedFile, FeedStorage, StorageFactory, StorageSetup};
use super::uri::{redact, uri_scheme};
use crate::crawl::base::settings::Settings;
use crate::crawl::context::CrawlContext;
use crate::defer::{Deferred, Failure};

/// What a remote storage does with a finished batch.
pub trait Uploader {
    /// Scrapy's class name (`S3FeedStorage`), used in stats keys.
    fn kind(&self) -> &str;

    /// Uploads the file at `path`; the Deferred fires when the storage has it.
    fn upload(&self, path: &Path) -> Deferred<()>;
}

/// How a failed upload is retried.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// `FEED_STORAGE_RETRY_TIMES`: retries after the first attempt (default 3).
    pub times: u32,
    /// `FEED_STORAGE_RETRY_BACKOFF`: seconds before the first retry, doubled for each
    /// next one, at most 60 (default 1.0).
    pub backoff: f64,
}

impl RetryPolicy {
    /// Reads the settings.
    ///
    /// # Errors
    ///
    /// A setting is malformed or negative.
    pub fn from_settings(s: &Settings) -> Result<Self, String> {
        let times = s
            .get_int("FEED_STORAGE_RETRY_TIMES")
            .map_err(|e| e.to_string())?;
        let backoff = s
            .get_float("FEED_STORAGE_RETRY_BACKOFF")
            .map_err(|e| e.to_string())?;
        if !(0.0..=3600.0).contains(&backoff) {
            return Err(format!(
                "FEED_STORAGE_RETRY_BACKOFF must be from 0 to 3600 seconds, not {backoff}"
            ));
        }
        Ok(Self {
            times: u32::try_from(times)
                .map_err(|_| format!("FEED_STORAGE_RETRY_TIMES must not be negative: {times}"))?,
            backoff,
        })
    }

    /// The delay before retry `n` (from 1).
    pub fn delay(&self, n: u32) -> f64 {
        (self.backoff * 2f64.powi(n.saturating_sub(1).min(30) as i32)).min(60.0)
    }
}

/// The directory of `FEED_TEMPDIR` (or the system's) where a spider's runs keep their
/// batches.
///
/// # Errors
///
/// `FEED_TEMPDIR` is set but is not a directory (Scrapy: `Not a Directory`).
pub fn pending_root(settings: &Settings, spider: &str) -> Result<PathBuf, String> {
    let base = match settings
        .get_str("FEED_TEMPDIR")
        .map_err(|e| e.to_string())?
    {
        Some(p) if !p.is_empty() => {
            let p = PathBuf::from(p);
            if !p.is_dir() {
                return Err(format!("Not a Directory: {}", p.display()));
            }
            p
        }
        _ => std::env::temp_dir(),
    };
    let name: String = spider
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    Ok(base.join("trawl-feeds").join(name))
}

/// This run's directory of batches, locked while the run lasts; removed at the end
/// when every batch in it was uploaded.
pub struct PendingDir {
    dir: PathBuf,
    _lock: File,
    next: Cell<u64>,
    /// A JOBDIR's: files named by the SHA-1 of their URI.
    by_uri: bool,
}

impl std::fmt::Debug for PendingDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingDir")
            .field("dir", &self.dir)
            .finish()
    }
}

impl PendingDir {
    /// The crawl's directory, made on first use.
    ///
    /// # Errors
    ///
    /// `FEED_TEMPDIR` is not a directory, or the directory cannot be made or locked.
    pub fn of(ctx: &CrawlContext) -> io::Result<Rc<Self>> {
        ctx.resource(|| {
            if let Some(job) = ctx.job() {
                // A job keeps its batches with it, named by URI (a resume reopens the
                // open batch's file); the job's own lock guards them.
                let dir = job_batches_dir(job.dir());
                std::fs::create_dir_all(&dir)
                    .map_err(|e| Failure::msg(format!("{}: {e}", dir.display())))?;
                let lock = File::open(&dir)
                    .map_err(|e| Failure::msg(format!("{}: {e}", dir.display())))?;
                return Ok(Rc::new(Self {
                    dir,
                    _lock: lock,
                    next: Cell::new(0),
                    by_uri: true,
                }));
            }
            let root = pending_root(&ctx.settings, ctx.spider_name()).map_err(Failure::msg)?;
            let micros = (ctx.clock().wall_seconds() * 1e6) as u64;
            let dir = root.join(format!("{}-{micros}", std::process::id()));
            let io = |e: io::Error| Failure::msg(format!("{}: {e}", dir.display()));
            std::fs::create_dir_all(&dir).map_err(io)?;
            let lock = File::create(dir.join("lock")).map_err(io)?;
            lock.try_lock()
                .map_err(|e| Failure::msg(format!("{}: cannot lock: {e}", dir.display())))?;
            Ok(Rc::new(Self {
                dir,
                _lock: lock,
                next: Cell::new(1),
                by_uri: false,
            }))
        })
        .map_err(|f| io::Error::other(f.to_string()))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// A new batch file for `uri`: its note is written first, so a file is never
    /// without its destination.
    fn new_entry(&self, uri: &str, kind: &str) -> io::Result<PathBuf> {
        let n = if self.by_uri {
            uri_file_stem(uri)
        } else {
            let n = self.next.get();
            self.next.set(n + 1);
            n.to_string()
        };
        let note = json!({"uri": uri, "storage": kind}).to_string();
        let tmp = self.dir.join(format!("{n}.json.tmp"));
        std::fs::write(&tmp, note)?;
        std::fs::rename(&tmp, self.dir.join(format!("{n}.json")))?;
        Ok(self.dir.join(format!("{n}.feed")))
    }
}

impl Drop for PendingDir {
    fn drop(&mut self) {
        if !self.by_uri {
            remove_if_done(&self.dir);
        }
    }
}

/// Where a JOBDIR job keeps the local batches of its remote feeds.
pub fn job_batches_dir(jobdir: &Path) -> PathBuf {
    jobdir.join("feeds")
}

/// A JOBDIR batch file's name without extension: the SHA-1 of its URI.
fn uri_file_stem(uri: &str) -> String {
    use sha1::Digest as _;
    crate::util::to_hex(&sha1::Sha1::digest(uri.as_bytes()))
}

/// Removes a batch directory that holds nothing but its lock.
fn remove_if_done(dir: &Path) {
    let only_lock = std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .all(|e| e.file_name().to_str() == Some("lock"))
    });
    if only_lock {
        let _ = std::fs::remove_file(dir.join("lock"));
        let _ = std::fs::remove_dir(dir);
    }
}

/// The note next to a batch file.
fn note_path(data: &Path) -> PathBuf {
    data.with_extension("json")
}

/// A storage that writes a batch to a local file and uploads it when it closes.
pub struct RemoteFeedStorage {
    uploader: Rc<dyn Uploader>,
    uri: String,
    ctx: Weak<CrawlContext>,
    policy: RetryPolicy,
    local: RefCell<Option<PathBuf>>,
}

impl std::fmt::Debug for RemoteFeedStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteFeedStorage")
            .field("kind", &self.uploader.kind())
            .field("uri", &redact(&self.uri))
            .finish()
    }
}

impl RemoteFeedStorage {
    /// The storage of `setup`'s URI, uploading with `uploader`.
    ///
    /// # Errors
    ///
    /// The retry settings are malformed, or `FEED_TEMPDIR` is not a directory.
    pub fn new(setup: &StorageSetup<'_>, uploader: Rc<dyn Uploader>) -> Result<Self, String> {
        pending_root(setup.settings, setup.ctx.spider_name())?;
        Ok(Self {
            uploader,
            uri: setup.uri.to_owned(),
            ctx: Rc::downgrade(setup.ctx),
            policy: RetryPolicy::from_settings(setup.settings)?,
            local: RefCell::new(None),
        })
    }

    fn upload(&self, path: PathBuf) -> Deferred<()> {
        let result = Deferred::new();
        attempt(
            Rc::new(Attempt {
                uploader: self.uploader.clone(),
                ctx: self.ctx.clone(),
                policy: self.policy,
                uri: redact(&self.uri),
                path,
            }),
            1,
            result.clone(),
        );
        result
    }
}

/// One batch's upload, tried again after a failure.
struct Attempt {
    uploader: Rc<dyn Uploader>,
    ctx: Weak<CrawlContext>,
    policy: RetryPolicy,
    uri: String,
    path: PathBuf,
}

fn attempt(a: Rc<Attempt>, n: u32, result: Deferred<()>) {
    let uploading = a.uploader.upload(&a.path);
    uploading.add_both(move |r| {
        match r {
            Ok(()) => {
                let _ = std::fs::remove_file(note_path(&a.path));
                let _ = std::fs::remove_file(&a.path);
                let _ = result.callback(());
            }
            Err(f) => {
                let ctx = a.ctx.upgrade();
                if n <= a.policy.times
                    && let Some(c) = &ctx
                {
                    let delay = a.policy.delay(n);
                    log::warn!(
                        "Uploading {} failed (attempt {n} of {}): {f}; retrying in {delay:.1} s",
                        a.uri,
                        a.policy.times + 1,
                    );
                    c.stats
                        .inc_value(&format!("feedexport/retry_count/{}", a.uploader.kind()), 1);
                    let a = a.clone();
                    c.clock()
                        .call_later(delay, move || attempt(a, n + 1, result));
                } else {
                    let _ = result.errback(Failure::msg(format!(
                        "{f}; the batch is kept in {} and the next run uploads it",
                        a.path.display()
                    )));
                }
            }
        }
        Ok(())
    });
}

impl FeedStorage for RemoteFeedStorage {
    fn kind(&self) -> &str {
        self.uploader.kind()
    }

    fn open(&self) -> io::Result<Box<dyn FeedFile>> {
        let ctx = self
            .ctx
            .upgrade()
            .ok_or_else(|| io::Error::other("the crawl is gone"))?;
        let dir = PendingDir::of(&ctx)?;
        let path = dir.new_entry(&self.uri, self.uploader.kind())?;
        let file = File::create(&path)?;
        *self.local.borrow_mut() = Some(path);
        Ok(Box::new(BufWriter::with_capacity(64 * 1024, file)))
    }

    fn store(&self, mut file: Box<dyn FeedFile>) -> Deferred<()> {
        let flushed = file.flush();
        drop(file);
        let Some(path) = self.local.borrow_mut().take() else {
            return crate::defer::fail(Failure::msg("the batch was never opened"));
        };
        if let Err(e) = flushed {
            return crate::defer::fail(Failure::msg(format!(
                "cannot write {}: {e}",
                path.display()
            )));
        }
        self.upload(path)
    }

    fn upload_pending(&self, path: &Path) -> Option<Deferred<()>> {
        Some(self.upload(path.to_path_buf()))
    }

    fn local_path(&self) -> Option<PathBuf> {
        self.local.borrow().clone()
    }

    fn discard(&self) -> io::Result<bool> {
        let Some(job) = self.ctx.upgrade().and_then(|c| c.job().cloned()) else {
            return Ok(false);
        };
        let data = job_batches_dir(job.dir()).join(format!("{}.feed", uri_file_stem(&self.uri)));
        let mut found = false;
        for path in [data.clone(), note_path(&data)] {
            match std::fs::remove_file(&path) {
                Ok(()) => found = true,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(found)
    }

    fn reopen_at(&self, len: u64) -> io::Result<Option<Box<dyn FeedFile>>> {
        let ctx = self
            .ctx
            .upgrade()
            .ok_or_else(|| io::Error::other("the crawl is gone"))?;
        let dir = PendingDir::of(&ctx)?;
        let path = dir.new_entry(&self.uri, self.uploader.kind())?;
        let mut file = File::options()
            .create(true)
            .read(true)
            .write(true)
            .truncate(false)
            .open(&path)?;
        let have = file.metadata()?.len();
        if have < len {
            return Err(io::Error::other(format!(
                "the local batch {} holds {have} bytes, the job committed {len}",
                path.display()
            )));
        }
        file.set_len(len)?;
        std::io::Seek::seek(&mut file, std::io::SeekFrom::End(0))?;
        *self.local.borrow_mut() = Some(path);
        Ok(Some(Box::new(BufWriter::with_capacity(64 * 1024, file))))
    }
}

/// Uploads what earlier runs of this spider left behind (directories no live run
/// holds), each through the storage its URI's scheme has now. Returns the uploads,
/// which the close waits for.
pub fn upload_pending(
    ctx: &Rc<CrawlContext>,
    storage_for: &dyn Fn(&str) -> Option<StorageFactory>,
) -> Vec<Deferred<()>> {
    let Ok(root) = pending_root(&ctx.settings, ctx.spider_name()) else {
        return Vec::new();
    };
    let Ok(dirs) = std::fs::read_dir(&root) else {
        return Vec::new();
    };
    let mut all = Vec::new();
    for dir in dirs.flatten().map(|e| e.path()).filter(|p| p.is_dir()) {
        let Ok(lock) = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("lock"))
        else {
            continue;
        };
        if lock.try_lock().is_err() {
            continue; // a live run's
        }
        let mine = upload_dir(ctx, &dir, storage_for, &[]);
        if mine.is_empty() {
            drop(lock);
            remove_if_done(&dir);
            continue;
        }
        let held = (dir.clone(), lock);
        let d = Deferred::new();
        let done = d.clone();
        crate::defer::DeferredList::new(mine)
            .consume_errors(true)
            .deferred()
            .add_both(move |r| {
                let (dir, lock) = held;
                drop(lock);
                remove_if_done(&dir);
                let _ = done.callback(());
                r
            });
        all.push(d);
    }
    all
}

/// In a resumed JOBDIR job: uploads the closed batches a killed run left in the job
/// (their commit was durable, their upload had not finished), all but the open
/// batches `open` names, which the resume continues.
pub fn upload_job_batches(
    ctx: &Rc<CrawlContext>,
    jobdir: &Path,
    open: &[String],
    storage_for: &dyn Fn(&str) -> Option<StorageFactory>,
) -> Vec<Deferred<()>> {
    let dir = job_batches_dir(jobdir);
    if !dir.is_dir() {
        return Vec::new();
    }
    upload_dir(ctx, &dir, storage_for, open)
}

/// The uploads of one left-behind directory, but for the batches of the URIs in
/// `skip`.
fn upload_dir(
    ctx: &Rc<CrawlContext>,
    dir: &Path,
    storage_for: &dyn Fn(&str) -> Option<StorageFactory>,
    skip: &[String],
) -> Vec<Deferred<()>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut uploads = Vec::new();
    for note in entries.flatten().map(|e| e.path()) {
        if note.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let data = note.with_extension("feed");
        if !data.exists() {
            let _ = std::fs::remove_file(&note); // killed before the batch began
            continue;
        }
        let uri = std::fs::read_to_string(&note)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|v| v.get("uri").and_then(Value::as_str).map(str::to_owned));
        if uri.as_ref().is_some_and(|u| skip.contains(u)) {
            continue;
        }
        let Some(uri) = uri else {
            log::error!(
                "A batch left by an earlier run has an unreadable note: {}",
                note.display()
            );
            ctx.stats.inc_value("feedexport/pending_error_count", 1);
            continue;
        };
        let storage = storage_for(&uri_scheme(&uri))
            .ok_or_else(|| format!("no storage for the scheme {:?}", uri_scheme(&uri)));
        let storage = storage.and_then(|factory| {
            factory(&StorageSetup {
                uri: &uri,
                overwrite: None,
                settings: &ctx.settings,
                ctx,
            })
        });
        let shown = redact(&uri);
        let upload = match storage {
            Ok(s) => s.upload_pending(&data).map(|d| (d, s.kind().to_owned())),
            Err(e) => {
                log::error!(
                    "Cannot upload {} (left by an earlier run): {e}",
                    data.display()
                );
                ctx.stats.inc_value("feedexport/pending_error_count", 1);
                None
            }
        };
        let Some((d, kind)) = upload else {
            continue;
        };
        log::info!(
            "Uploading a batch an earlier run left: {} to {shown}",
            data.display()
        );
        let c = Rc::downgrade(ctx);
        let done = Deferred::new();
        let fired = done.clone();
        d.add_both(move |r| {
            if let Some(c) = c.upgrade() {
                match r {
                    Ok(()) => {
                        log::info!("Stored a batch an earlier run left in: {shown}");
                        c.stats
                            .inc_value(&format!("feedexport/success_count/{kind}"), 1);
                    }
                    Err(f) => {
                        log::error!("Error storing a batch an earlier run left in {shown}: {f}");
                        c.stats
                            .inc_value(&format!("feedexport/failed_count/{kind}"), 1);
                    }
                }
            }
            let _ = fired.callback(());
            Ok(())
        });
        uploads.push(done);
    }
    uploads
}
