//! `JOBDIR`: a crawl that can be paused, resumed, and killed (`kill -9`, a power cut)
//! without losing or doubling anything.
//!
//! # What is in the directory
//!
//! * `trawl-job.json` — the format version and the spider's name: a JOBDIR written by an
//!   incompatible version, or for another spider, is refused with a message naming it.
//! * `lock` — held (an exclusive `flock`) for as long as a process uses the JOBDIR; a
//!   second process is refused, not allowed to corrupt it. It holds the owner's pid.
//! * `journal` — the job's only state file, an append-only log of checksummed records
//!   (`journal.rs`) grouped into atomic groups by `COMMIT` records.
//!
//! # The request lifecycle
//!
//! PENDING (an `ENQUEUE` record holds the request record and its fingerprint) → LEASED
//! (a `LEASE` record when the scheduler hands it to the engine) → DONE (a `DONE` record
//! once its response and every output of its callback are committed). Outputs are
//! appended before the `DONE` that ends them: new requests are `ENQUEUE`d as the
//! callback yields them, items wait in the feed exporter until their response is done
//! and are then written to the feed, whose new length (`FEED_POS`) is recorded in the
//! same group as the `DONE`. A group reaches the file with one `write` when it commits,
//! and a resume reads only whole groups, so a crash at any moment leaves either all of a
//! response's outputs or none of them.
//!
//! On resume, every `ENQUEUE` without a `DONE` is queued again (LEASED-not-DONE ones
//! first), the seen set is every committed fingerprint, feeds are cut back to their
//! committed length, the spider state is restored, and `start()` skips the outputs it
//! had produced (`START_POS`).
//!
//! # Durability (`JOBDIR_FSYNC`)
//!
//! * `always` — every commit fsyncs the feeds, then the journal: a power cut loses
//!   nothing committed.
//! * a number of seconds (default `1`) — group commit: commits reach the OS at once
//!   (a process crash loses nothing committed), and every N seconds the feeds then the
//!   journal are fsynced after a `SYNC` record. After a power cut the resume falls back
//!   to the last `SYNC` if the feeds are shorter than the journal says: at most N
//!   seconds of crawling are redone, nothing is doubled.
//! * `never` — no fsync: survives a process crash, not a power cut (the resume then
//!   falls back to the last clean close).

mod fsync;
mod job;
pub mod journal;
mod lock;
pub mod records;
mod replay;
mod state;

pub use fsync::FsyncPolicy;
pub use job::{JOB_FORMAT_VERSION, Job, JobOutput};
pub use replay::{PendingEntry, Recovered};
pub use state::SpiderState;
