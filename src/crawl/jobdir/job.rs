//! [`Job`]: an open job directory — the journal writer, the commit and fsync
//! cadence, the outputs (feeds) whose positions each commit records, and what the
//! resume found.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::{Rc, Weak};

use serde_json::Value;

use super::fsync::FsyncPolicy;
use super::journal::{self, JournalError, JournalWriter, Kind, ScanSummary};
use super::lock::{self, io_err};
use super::records::{ParsedEnqueue, decode_feed_pos, encode_feed_pos, encode_id};
use super::replay::{Recovered, Replay};
use super::state::SpiderState;
use crate::crawl::base::settings::Settings;
use crate::crawl::base::stats::StatsCollector;
use crate::crawl::http::fingerprint::{
    DEFAULT_FINGERPRINTER, RequestFingerprinter, ScrapyRequestFingerprinter,
};
use crate::defer::Failure;
use crate::reactor::Clock;

/// The job directory format this build writes and reads.
pub const JOB_FORMAT_VERSION: u64 = 1;

/// Something whose contents are part of the job (a file feed).
pub trait JobOutput {
    /// Its name in the journal (a feed's path).
    fn name(&self) -> String;

    /// The request `id` is done: write what was held back for it.
    fn request_done(&self, id: u64);

    /// Flushes to the OS and returns the committed length and item count.
    ///
    /// # Errors
    ///
    /// The flush failed.
    fn position(&self) -> std::io::Result<(u64, u64)>;

    /// The local file the committed length is of, when it is not the file the name
    /// says (the open batch's file; a remote feed's local batch in the JOBDIR). A
    /// resume checks that file's length to tell a power cut from a process kill.
    fn local_file(&self) -> Option<PathBuf> {
        None
    }

    /// fsyncs its file.
    ///
    /// # Errors
    ///
    /// The sync failed.
    fn sync(&self) -> std::io::Result<()>;

    /// What was committed so far is durable (the journal is synced): what may only
    /// leave once its commit cannot be lost (a feed batch's upload) may go.
    fn durable(&self) {}
}

/// An open job directory.
pub struct Job {
    dir: PathBuf,
    _lock: lock::DirLock,
    journal: RefCell<JournalWriter>,
    policy: FsyncPolicy,
    stats: Rc<dyn StatsCollector>,
    outputs: RefCell<Vec<Weak<dyn JobOutput>>>,
    feed_positions: HashMap<String, (u64, u64)>,
    /// The local file this run last named in each feed's `FEED_POS`.
    files_written: RefCell<HashMap<String, PathBuf>>,
    recovered: RefCell<Option<Recovered>>,
    state: Rc<SpiderState>,
    start_pos: Cell<u64>,
    start_pos_written: Cell<u64>,
    resumed_start_pos: u64,
    commit_seq: Cell<u64>,
    since_sync: Cell<bool>,
    failed: RefCell<Option<String>>,
    salvage: bool,
    timer: RefCell<Option<crate::task::LoopingCall>>,
    /// The journal's valid length when it was opened.
    resume_end: u64,
    /// What its records' fingerprints are computed with (`REQUEST_FINGERPRINTER_CLASS`,
    /// recorded in `trawl-job.json`).
    fingerprinter: RefCell<Rc<dyn RequestFingerprinter>>,
}

impl Job {
    /// Uses `fingerprinter` for the fingerprints of its records (the crawl's, set by
    /// the crawler once it is built; the name was checked when the job opened).
    pub fn set_fingerprinter(&self, fingerprinter: Rc<dyn RequestFingerprinter>) {
        *self.fingerprinter.borrow_mut() = fingerprinter;
    }

    /// A request's fingerprint, as the crawl's fingerprinter computes it.
    pub fn fingerprint(&self, request: &crate::crawl::http::request::Request) -> [u8; 20] {
        let fingerprinter = self.fingerprinter.borrow().clone();
        fingerprinter.fingerprint(request)
    }

    /// Opens (creating, or resuming) the JOBDIR named by the settings, if any.
    ///
    /// # Errors
    ///
    /// Another process holds it, it was written by another format version or for
    /// another spider, its journal is corrupt (without `JOBDIR_SALVAGE`), or I/O fails.
    pub fn from_settings(
        settings: &Settings,
        spider: &str,
        stats: Rc<dyn StatsCollector>,
    ) -> Result<Option<Rc<Self>>, Failure> {
        let Some(dir) = settings.get_str("JOBDIR")?.filter(|d| !d.is_empty()) else {
            return Ok(None);
        };
        let policy = FsyncPolicy::parse(settings.get("JOBDIR_FSYNC").unwrap_or(&Value::Null))?;
        let salvage = settings.get_bool("JOBDIR_SALVAGE")?;
        let fingerprinter = crate::crawl::base::settings::fingerprinter_name(settings)?;
        Self::open_with(
            Path::new(&dir),
            spider,
            &fingerprinter,
            policy,
            salvage,
            stats,
        )
        .map(Some)
    }

    /// Opens `dir` for `spider`.
    ///
    /// # Errors
    ///
    /// As [`from_settings`](Self::from_settings).
    pub fn open(
        dir: &Path,
        spider: &str,
        policy: FsyncPolicy,
        salvage: bool,
        stats: Rc<dyn StatsCollector>,
    ) -> Result<Rc<Self>, Failure> {
        Self::open_with(dir, spider, DEFAULT_FINGERPRINTER, policy, salvage, stats)
    }

    /// Opens `dir` for `spider`, whose requests are fingerprinted by the fingerprinter
    /// named `fingerprinter` (refused if the JOBDIR was written with another: its seen
    /// set and records would not match).
    ///
    /// # Errors
    ///
    /// As [`from_settings`](Self::from_settings).
    pub fn open_with(
        dir: &Path,
        spider: &str,
        fingerprinter: &str,
        policy: FsyncPolicy,
        salvage: bool,
        stats: Rc<dyn StatsCollector>,
    ) -> Result<Rc<Self>, Failure> {
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        let lock = lock::lock_dir(dir)?;
        check_version(dir, spider, fingerprinter)?;
        let path = dir.join("journal");
        // Pass 1: where the valid prefix ends; whether the feeds are as long as it says.
        // Each feed's committed length, and the file it is of (a record names the file
        // when it changes; before that, the feed's name is its file).
        let mut feed_at_commit: HashMap<String, (u64, Option<PathBuf>)> = HashMap::new();
        let mut feed_now: HashMap<String, (u64, Option<PathBuf>)> = HashMap::new();
        let summary = journal::scan(&path, None, salvage, |r| match r.kind {
            Kind::FeedPos => {
                if let Some(p) = decode_feed_pos(&r.payload) {
                    let entry = feed_now.entry(p.name).or_insert((0, None));
                    entry.0 = p.len;
                    if p.file.is_some() {
                        entry.1 = p.file;
                    }
                }
            }
            Kind::Commit => feed_at_commit.clone_from(&feed_now),
            _ => {}
        })
        .map_err(journal_failure)?;
        let feeds_intact = feed_at_commit.iter().all(|(name, (len, file))| {
            let file = file.as_deref().unwrap_or_else(|| Path::new(name));
            *len == 0 || std::fs::metadata(file).is_ok_and(|m| m.len() >= *len)
        });
        let end = if feeds_intact {
            summary.committed_end
        } else {
            log::warn!(
                "JOBDIR {}: a feed is shorter than the journal says (a power cut with \
                 JOBDIR_FSYNC={policy:?}?): resuming from the last synced point",
                dir.display()
            );
            stats.inc("jobdir/rolled_back_to_sync");
            summary.synced_end
        };
        report_scan(&summary, end, &stats, &path);
        // Pass 2: the state up to `end`.
        let mut rec = Replay::default();
        journal::scan(&path, Some(end), salvage, |r| rec.apply(r)).map_err(journal_failure)?;
        let recovered = rec.finish();
        if recovered.done > 0 || !recovered.pending.is_empty() {
            log::info!(
                "Resuming the job in {}: {} requests pending ({} were in progress and are \
                 fetched again), {} done",
                dir.display(),
                recovered.pending.len(),
                recovered.requeued_leased,
                recovered.done
            );
        }
        stats.set_value(
            "jobdir/resumed_pending",
            Value::from(recovered.pending.len()),
        );
        stats.set_value(
            "jobdir/requeued_leased",
            Value::from(recovered.requeued_leased),
        );
        let writer = JournalWriter::open(&path, end).map_err(journal_failure)?;
        let state = Rc::new(SpiderState::default());
        if let Some(m) = rec.state.take() {
            state.restore(m);
        }
        Ok(Rc::new(Self {
            dir: dir.to_owned(),
            _lock: lock,
            journal: RefCell::new(writer),
            policy,
            stats,
            outputs: RefCell::new(Vec::new()),
            feed_positions: rec.feeds,
            files_written: RefCell::new(HashMap::new()),
            recovered: RefCell::new(Some(recovered)),
            state,
            start_pos: Cell::new(rec.start_pos),
            start_pos_written: Cell::new(rec.start_pos),
            resumed_start_pos: rec.start_pos,
            commit_seq: Cell::new(rec.commit_seq),
            since_sync: Cell::new(false),
            failed: RefCell::new(None),
            salvage,
            timer: RefCell::new(None),
            resume_end: end,
            fingerprinter: RefCell::new(Rc::new(ScrapyRequestFingerprinter::default())),
        }))
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The fsync policy.
    pub fn policy(&self) -> FsyncPolicy {
        self.policy
    }

    /// Whether damaged records are skipped on resume.
    pub fn salvage(&self) -> bool {
        self.salvage
    }

    /// What the resume found (taken once, by the scheduler).
    pub fn take_recovered(&self) -> Option<Recovered> {
        self.recovered.borrow_mut().take()
    }

    /// Calls `f` with every fingerprint the job had seen when it was opened (the
    /// dupefilter's seen set; requests scheduled with `dont_filter` have none).
    ///
    /// # Errors
    ///
    /// The journal cannot be read.
    pub fn for_each_fingerprint(&self, mut f: impl FnMut(&[u8; 20])) -> Result<(), Failure> {
        let path = self.dir.join("journal");
        journal::scan(&path, Some(self.resume_end), self.salvage, |r| {
            if r.kind == Kind::Enqueue
                && let Some(e) = ParsedEnqueue::parse(&r.payload)
                && let Some(fp) = e.fingerprint
            {
                f(&fp);
            }
        })
        .map(|_| ())
        .map_err(journal_failure)
    }

    /// The committed `(length, items)` of a feed, on resume.
    pub fn feed_position(&self, name: &str) -> Option<(u64, u64)> {
        self.feed_positions.get(name).copied()
    }

    /// The spider's state.
    pub fn spider_state(&self) -> &Rc<SpiderState> {
        &self.state
    }

    /// How many outputs of `start()` the previous runs consumed (skipped on resume).
    pub fn resumed_start_pos(&self) -> u64 {
        self.resumed_start_pos
    }

    /// Records that `n` outputs of `start()` are fully processed.
    pub fn set_start_pos(&self, n: u64) {
        self.start_pos.set(n);
    }

    /// Registers an output (a feed) to flush and record at each commit.
    pub fn register_output(&self, output: Weak<dyn JobOutput>) {
        self.outputs.borrow_mut().push(output);
    }

    /// The error that stopped the job's writes, if any.
    pub fn failed(&self) -> Option<String> {
        self.failed.borrow().clone()
    }

    /// Appends a record to the current group; its offset, or `None` once failed.
    pub fn append(&self, kind: Kind, payload: &[u8]) -> Option<u64> {
        if self.failed.borrow().is_some() {
            return None;
        }
        Some(self.journal.borrow_mut().append(kind, payload))
    }

    /// Reads a record back.
    ///
    /// # Errors
    ///
    /// Unreadable or damaged.
    pub fn read(&self, offset: u64) -> Result<(Kind, Vec<u8>), JournalError> {
        self.journal.borrow().read_at(offset)
    }

    /// The request `id` is leased to the engine.
    pub fn lease(&self, id: u64) {
        let _ = self.append(Kind::Lease, &encode_id(id));
    }

    /// The request `id` is done: its held-back outputs are written, its `DONE`
    /// appended, and the group committed.
    pub fn request_done(&self, id: u64) {
        let outputs: Vec<Rc<dyn JobOutput>> = self
            .outputs
            .borrow()
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for o in &outputs {
            o.request_done(id);
        }
        if self.append(Kind::Done, &encode_id(id)).is_some() {
            self.commit();
        }
    }

    /// Commits the group in progress: feed positions, the spider state and the start
    /// position as they are now, then `COMMIT`; fsyncs per the policy.
    pub fn commit(&self) {
        if self.failed.borrow().is_some() {
            return;
        }
        let outputs: Vec<Rc<dyn JobOutput>> = self
            .outputs
            .borrow()
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        let always = self.policy == FsyncPolicy::Always;
        for o in &outputs {
            match o.position() {
                Ok((len, items)) => {
                    let name = o.name();
                    let file = o
                        .local_file()
                        .filter(|f| self.files_written.borrow().get(&name) != Some(f));
                    let payload = encode_feed_pos(&name, len, items, file.as_deref());
                    if let Some(f) = file {
                        self.files_written.borrow_mut().insert(name, f);
                    }
                    let _ = self.append(Kind::FeedPos, &payload);
                }
                Err(e) => {
                    self.fail(format!("feed {}: {e}", o.name()));
                    return;
                }
            }
            if always && let Err(e) = o.sync() {
                self.fail(format!("feed {}: {e}", o.name()));
                return;
            }
        }
        if self.state.take_dirty() {
            let json = Value::Object(self.state.snapshot()).to_string();
            let _ = self.append(Kind::State, json.as_bytes());
        }
        if self.start_pos.get() != self.start_pos_written.get() {
            let _ = self.append(Kind::StartPos, &encode_id(self.start_pos.get()));
            self.start_pos_written.set(self.start_pos.get());
        }
        if always {
            let _ = self.append(Kind::Sync, &[]);
        }
        let seq = self.commit_seq.get() + 1;
        self.commit_seq.set(seq);
        let r = {
            let mut j = self.journal.borrow_mut();
            j.commit(seq)
                .and_then(|()| if always { j.sync() } else { Ok(()) })
        };
        match r {
            Ok(()) => {
                self.stats.inc("jobdir/commits");
                self.since_sync.set(true);
                if always {
                    for o in &outputs {
                        o.durable();
                    }
                }
            }
            Err(e) => self.fail(e.to_string()),
        }
    }

    /// fsyncs the outputs, then (after a `SYNC` record) the journal: a durable point.
    pub fn sync(&self) {
        if self.failed.borrow().is_some() || !self.since_sync.get() {
            return;
        }
        let outputs: Vec<Rc<dyn JobOutput>> = self
            .outputs
            .borrow()
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for o in &outputs {
            // Positions first, so the SYNC group records what was synced.
            if let Err(e) = o.position().and_then(|_| o.sync()) {
                self.fail(format!("feed {}: {e}", o.name()));
                return;
            }
        }
        let _ = self.append(Kind::Sync, &[]);
        self.commit();
        if let Err(e) = self.journal.borrow_mut().sync() {
            self.fail(e.to_string());
            return;
        }
        self.since_sync.set(false);
        self.stats.inc("jobdir/syncs");
        for o in &outputs {
            o.durable();
        }
    }

    /// Starts the group-commit timer (interval policy) on `clock`.
    pub fn start_timer(self: &Rc<Self>, clock: &Clock) {
        let FsyncPolicy::Interval(secs) = self.policy else {
            return;
        };
        let weak = Rc::downgrade(self);
        let call = crate::task::LoopingCall::new(clock, move || {
            if let Some(job) = weak.upgrade() {
                // Anything appended since the last commit (start requests, leases)
                // commits too, then the durable point.
                if job.journal.borrow().has_pending() {
                    job.commit();
                }
                job.sync();
            }
            Ok(())
        });
        if let Err(e) = call.start(secs, false) {
            log::error!("JOBDIR sync timer: {e}");
        }
        *self.timer.borrow_mut() = Some(call);
    }

    /// The crawl is closing: commit what is pending and sync (whatever the policy, a
    /// clean stop is a durable point).
    pub fn close(&self) {
        if let Some(t) = self.timer.borrow_mut().take()
            && t.running()
        {
            let _ = t.stop();
        }
        self.commit();
        self.since_sync.set(true);
        self.sync();
    }

    fn fail(&self, why: String) {
        log::error!(
            "JOBDIR {}: cannot write the job ({why}): stopping the crawl",
            self.dir.display()
        );
        self.stats.inc("jobdir/write_errors");
        *self.failed.borrow_mut() = Some(why);
    }
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("dir", &self.dir)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

fn journal_failure(e: JournalError) -> Failure {
    Failure::msg(format!("JOBDIR: {e}"))
}

fn report_scan(s: &ScanSummary, end: u64, stats: &Rc<dyn StatsCollector>, path: &Path) {
    let dropped = s.torn_bytes + s.committed_end.saturating_sub(end);
    if dropped > 0 {
        log::warn!(
            "{}: dropping {dropped} bytes after the last complete group (a stop in the \
             middle of a write)",
            path.display()
        );
        stats.inc_value("jobdir/torn_tail_bytes", dropped as i64);
    }
    if s.skipped_regions > 0 {
        stats.inc_value("jobdir/salvaged_regions", s.skipped_regions as i64);
        stats.inc_value("jobdir/salvaged_bytes", s.skipped_bytes as i64);
    }
}

fn check_version(dir: &Path, spider: &str, fingerprinter: &str) -> Result<(), Failure> {
    let path = dir.join("trawl-job.json");
    match std::fs::read(&path) {
        Ok(bytes) => {
            let v: Value = serde_json::from_slice(&bytes).map_err(|e| {
                Failure::msg(format!("JOBDIR {}: unreadable ({e})", path.display()))
            })?;
            let version = v.get("version").and_then(Value::as_u64).unwrap_or(0);
            if version != JOB_FORMAT_VERSION {
                return Err(Failure::msg(format!(
                    "JOBDIR {} was written by {} (job format {version}); this trawl reads \
                     job format {JOB_FORMAT_VERSION}",
                    dir.display(),
                    v.get("written_by")
                        .and_then(Value::as_str)
                        .unwrap_or("an unknown version")
                )));
            }
            let owner = v.get("spider").and_then(Value::as_str).unwrap_or("");
            if owner != spider {
                return Err(Failure::msg(format!(
                    "JOBDIR {} belongs to spider {owner:?}, not {spider:?}",
                    dir.display()
                )));
            }
            // A job written before the name was recorded used the default.
            let written = v
                .get("fingerprinter")
                .and_then(Value::as_str)
                .unwrap_or(DEFAULT_FINGERPRINTER);
            if written != fingerprinter {
                return Err(Failure::msg(format!(
                    "JOBDIR {} was written with the request fingerprinter {written}; this \
                     crawl uses {fingerprinter} (REQUEST_FINGERPRINTER_CLASS): its seen \
                     requests and queue would not match. Use {written}, or another JOBDIR",
                    dir.display()
                )));
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let v = serde_json::json!({
                "format": "trawl-job",
                "version": JOB_FORMAT_VERSION,
                "written_by": format!("trawl {}", env!("CARGO_PKG_VERSION")),
                "spider": spider,
                "fingerprinter": fingerprinter,
            });
            let tmp = dir.join("trawl-job.json.tmp");
            std::fs::write(&tmp, format!("{v:#}\n")).map_err(io_err(&tmp))?;
            std::fs::rename(&tmp, &path).map_err(io_err(&path))?;
            Ok(())
        }
        Err(e) => Err(io_err(&path)(e)),
    }
}
