//! The job journal: an append-only file of checksummed records, grouped by `COMMIT`
//! records into atomic groups.
//!
//! # Record layout
//!
//! | bytes | field |
//! |---|---|
//! | 1 | magic `0xA7` (resynchronisation point) |
//! | 1 | kind |
//! | 4 | payload length, little-endian |
//! | 4 | CRC-32 (IEEE) of kind, length and payload, little-endian |
//! | n | payload |
//!
//! Everything after the last `COMMIT` record belongs to a group that never finished:
//! replay ignores it and the journal is cut back to the end of that `COMMIT`. A record
//! whose checksum fails, or that the file ends inside, is a *torn tail* when no valid
//! `COMMIT` follows it (the last write was interrupted: dropped with a log line and a
//! stat), and *corruption* when one does (the middle of the file changed: a clear error
//! naming the file and offset, unless salvage is asked for, which skips to the next
//! valid record and counts what it skipped).

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The first byte of every record.
pub const MAGIC: u8 = 0xA7;
/// Bytes before the payload.
pub const HEADER: usize = 10;
/// The largest payload a record may have (a request record with a huge body fits).
pub const MAX_PAYLOAD: u32 = 256 * 1024 * 1024;

/// What a record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// A request entered the frontier (PENDING): see `records.rs` for the payload.
    Enqueue = 1,
    /// A request was handed to the engine (LEASED).
    Lease = 2,
    /// A request's response and every output of its callback are committed (DONE).
    Done = 3,
    /// A feed's committed length.
    FeedPos = 4,
    /// The spider's state (a JSON object).
    State = 5,
    /// The end of an atomic group.
    Commit = 6,
    /// Outputs were fsynced before this point (a durable group boundary).
    Sync = 7,
    /// How many outputs of `start()` were consumed.
    StartPos = 8,
}

impl Kind {
    fn from_byte(b: u8) -> Option<Self> {
        Some(match b {
            1 => Self::Enqueue,
            2 => Self::Lease,
            3 => Self::Done,
            4 => Self::FeedPos,
            5 => Self::State,
            6 => Self::Commit,
            7 => Self::Sync,
            8 => Self::StartPos,
            _ => return None,
        })
    }
}

/// A journal problem that stops a resume.
#[derive(Debug)]
pub enum JournalError {
    /// Reading or writing failed.
    Io(PathBuf, io::Error),
    /// A record in the middle of the journal is damaged.
    Corrupt {
        /// The journal file.
        path: PathBuf,
        /// The damaged record's offset.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
}

impl std::fmt::Display for JournalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io(p, e) => write!(f, "{}: {e}", p.display()),
            Self::Corrupt {
                path,
                offset,
                reason,
            } => write!(
                f,
                "{}: corrupt record at byte {offset} ({reason}); resume with \
                 JOBDIR_SALVAGE=true (--jobdir-salvage) to skip it",
                path.display()
            ),
        }
    }
}

impl std::error::Error for JournalError {}

fn crc(kind: u8, len: u32, payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&[kind]);
    h.update(&len.to_le_bytes());
    h.update(payload);
    h.finalize()
}

/// Encodes one record into `out`.
pub fn encode_record(out: &mut Vec<u8>, kind: Kind, payload: &[u8]) {
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
    out.push(MAGIC);
    out.push(kind as u8);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc(kind as u8, len, payload).to_le_bytes());
    out.extend_from_slice(payload);
}

impl std::fmt::Debug for JournalWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JournalWriter")
            .field("path", &self.path)
            .field("flushed", &self.flushed)
            .field("buffered", &self.buf.len())
            .finish()
    }
}

/// The append side: records go to a buffer and reach the file at each commit (one
/// `write` per group), so a process crash loses at most the group in progress.
pub struct JournalWriter {
    path: PathBuf,
    file: File,
    /// Bytes already in the file.
    flushed: u64,
    buf: Vec<u8>,
    /// Whether bytes were written since the last fsync.
    unsynced: bool,
}

impl JournalWriter {
    /// Opens `path` for appending after its first `len` bytes (the valid prefix: the
    /// rest is cut off).
    ///
    /// # Errors
    ///
    /// The file cannot be opened or cut.
    pub fn open(path: &Path, len: u64) -> Result<Self, JournalError> {
        let io = |e| JournalError::Io(path.to_owned(), e);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .write(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        file.set_len(len).map_err(io)?;
        let mut file = file;
        file.seek(SeekFrom::Start(len)).map_err(io)?;
        Ok(Self {
            path: path.to_owned(),
            file,
            flushed: len,
            buf: Vec::with_capacity(64 * 1024),
            unsynced: false,
        })
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The offset the next record will have.
    pub fn next_offset(&self) -> u64 {
        self.flushed + self.buf.len() as u64
    }

    /// Appends a record (to the buffer); returns its offset.
    pub fn append(&mut self, kind: Kind, payload: &[u8]) -> u64 {
        let at = self.next_offset();
        encode_record(&mut self.buf, kind, payload);
        at
    }

    /// Whether records wait in the buffer.
    pub fn has_pending(&self) -> bool {
        !self.buf.is_empty()
    }

    /// Ends the group with a `COMMIT` record and writes the buffer to the file.
    ///
    /// # Errors
    ///
    /// The write failed (disk full...): the file may now end inside this group, which
    /// the next resume drops as a torn tail.
    pub fn commit(&mut self, seq: u64) -> Result<(), JournalError> {
        let mut payload = Vec::with_capacity(10);
        crate::crawl::util::varint::put_varint(&mut payload, seq);
        self.append(Kind::Commit, &payload);
        self.write_out()
    }

    fn write_out(&mut self) -> Result<(), JournalError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let r = self.file.write_all(&self.buf);
        match r {
            Ok(()) => {
                self.flushed += self.buf.len() as u64;
                self.buf.clear();
                self.unsynced = true;
                Ok(())
            }
            Err(e) => {
                // Keep offsets consistent with the file: whatever reached it is there.
                if let Ok(len) = self.file.metadata().map(|m| m.len()) {
                    self.flushed = len;
                }
                self.buf.clear();
                Err(JournalError::Io(self.path.clone(), e))
            }
        }
    }

    /// `fdatasync`s the journal if anything was written since the last time.
    ///
    /// # Errors
    ///
    /// The sync failed.
    pub fn sync(&mut self) -> Result<(), JournalError> {
        if !self.unsynced {
            return Ok(());
        }
        self.file
            .sync_data()
            .map_err(|e| JournalError::Io(self.path.clone(), e))?;
        self.unsynced = false;
        Ok(())
    }

    /// Reads the record at `offset` (in the file or still in the buffer).
    ///
    /// # Errors
    ///
    /// The record cannot be read or its checksum fails.
    pub fn read_at(&self, offset: u64) -> Result<(Kind, Vec<u8>), JournalError> {
        let corrupt = |reason: &str| JournalError::Corrupt {
            path: self.path.clone(),
            offset,
            reason: reason.to_owned(),
        };
        let mut header = [0u8; HEADER];
        let from_buf = offset >= self.flushed;
        if from_buf {
            let i = (offset - self.flushed) as usize;
            let h = self
                .buf
                .get(i..i + HEADER)
                .ok_or_else(|| corrupt("beyond the end"))?;
            header.copy_from_slice(h);
        } else {
            self.file
                .read_exact_at(&mut header, offset)
                .map_err(|e| JournalError::Io(self.path.clone(), e))?;
        }
        let (kind, len) = parse_header(&header).ok_or_else(|| corrupt("bad header"))?;
        let mut payload = vec![0u8; len as usize];
        if from_buf {
            let i = (offset - self.flushed) as usize + HEADER;
            let p = self
                .buf
                .get(i..i + len as usize)
                .ok_or_else(|| corrupt("beyond the end"))?;
            payload.copy_from_slice(p);
        } else {
            self.file
                .read_exact_at(&mut payload, offset + HEADER as u64)
                .map_err(|e| JournalError::Io(self.path.clone(), e))?;
        }
        let stored = u32::from_le_bytes([header[6], header[7], header[8], header[9]]);
        if crc(kind as u8, len, &payload) != stored {
            return Err(corrupt("checksum mismatch"));
        }
        Ok((kind, payload))
    }
}

fn parse_header(h: &[u8; HEADER]) -> Option<(Kind, u32)> {
    if h[0] != MAGIC {
        return None;
    }
    let kind = Kind::from_byte(h[1])?;
    let len = u32::from_le_bytes([h[2], h[3], h[4], h[5]]);
    (len <= MAX_PAYLOAD).then_some((kind, len))
}

/// One record met during a scan.
#[derive(Debug)]
pub struct Record {
    /// Its offset.
    pub offset: u64,
    /// Its kind.
    pub kind: Kind,
    /// Its payload.
    pub payload: Vec<u8>,
}

/// What a scan found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ScanSummary {
    /// The end of the last `COMMIT` record: the valid length of the journal.
    pub committed_end: u64,
    /// The end of the last `COMMIT` that followed a `SYNC`: the last durable point.
    pub synced_end: u64,
    /// Bytes after `committed_end` (a group that never finished, or a torn record).
    pub torn_bytes: u64,
    /// Damaged regions skipped in salvage mode, and their bytes.
    pub skipped_regions: u64,
    /// Bytes in them.
    pub skipped_bytes: u64,
}

/// Reads a journal from the start, calling `each` for every record of every committed
/// group, up to `stop` bytes (the whole file when `None`).
///
/// # Errors
///
/// Corruption before the last valid `COMMIT` (unless `salvage`), or an I/O error.
pub fn scan(
    path: &Path,
    stop: Option<u64>,
    salvage: bool,
    mut each: impl FnMut(&Record),
) -> Result<ScanSummary, JournalError> {
    let io = |e| JournalError::Io(path.to_owned(), e);
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(ScanSummary::default()),
        Err(e) => return Err(io(e)),
    };
    let file_len = file.metadata().map_err(io)?.len();
    let end = stop.unwrap_or(file_len).min(file_len);
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    let mut summary = ScanSummary::default();
    // Records of the group in progress, delivered at its COMMIT.
    let mut group: Vec<Record> = Vec::new();
    let mut pos: u64 = 0;
    let mut saw_sync = false;
    while pos < end {
        match read_record(&mut reader, pos, end).map_err(io)? {
            Some(record) => {
                let len = HEADER as u64 + record.payload.len() as u64;
                pos += len;
                match record.kind {
                    Kind::Commit => {
                        for r in group.drain(..) {
                            each(&r);
                        }
                        each(&record);
                        summary.committed_end = pos;
                        if saw_sync {
                            summary.synced_end = pos;
                            saw_sync = false;
                        }
                    }
                    Kind::Sync => {
                        saw_sync = true;
                        group.push(record);
                    }
                    _ => group.push(record),
                }
            }
            None => {
                // A damaged record: torn tail, or corruption if a valid COMMIT follows.
                let bad_at = pos;
                let next = resync(path, bad_at + 1, end)?;
                match next {
                    None => break,
                    Some(next_valid) => {
                        if !salvage {
                            return Err(JournalError::Corrupt {
                                path: path.to_owned(),
                                offset: bad_at,
                                reason: "checksum or framing error before later valid records"
                                    .into(),
                            });
                        }
                        log::warn!(
                            "{}: skipping {} damaged bytes at {bad_at} (salvage)",
                            path.display(),
                            next_valid - bad_at
                        );
                        summary.skipped_regions += 1;
                        summary.skipped_bytes += next_valid - bad_at;
                        // The group that contained the damage is incomplete: drop it.
                        group.clear();
                        saw_sync = false;
                        pos = next_valid;
                        reader.seek(SeekFrom::Start(pos)).map_err(io)?;
                    }
                }
            }
        }
    }
    summary.torn_bytes = file_len.saturating_sub(summary.committed_end);
    if stop.is_some() {
        summary.torn_bytes = end.saturating_sub(summary.committed_end);
    }
    Ok(summary)
}

/// Reads the record at `pos` from `reader` (positioned there); `None` when it is
/// damaged or cut by `end`. The reader is left after the record, or anywhere on `None`.
fn read_record(reader: &mut BufReader<File>, pos: u64, end: u64) -> io::Result<Option<Record>> {
    if pos + HEADER as u64 > end {
        return Ok(None);
    }
    let mut header = [0u8; HEADER];
    reader.read_exact(&mut header)?;
    let Some((kind, len)) = parse_header(&header) else {
        return Ok(None);
    };
    if pos + HEADER as u64 + u64::from(len) > end {
        return Ok(None);
    }
    let mut payload = vec![0u8; len as usize];
    reader.read_exact(&mut payload)?;
    let stored = u32::from_le_bytes([header[6], header[7], header[8], header[9]]);
    if crc(kind as u8, len, &payload) != stored {
        return Ok(None);
    }
    Ok(Some(Record {
        offset: pos,
        kind,
        payload,
    }))
}

/// The first offset at or after `from` where a valid record starts and is followed by
/// valid records up to a `COMMIT` (so random bytes that happen to look like a header
/// do not count); `None` when there is none before `end`.
fn resync(path: &Path, from: u64, end: u64) -> Result<Option<u64>, JournalError> {
    let io = |e| JournalError::Io(path.to_owned(), e);
    let file = File::open(path).map_err(io)?;
    let mut data = Vec::new();
    let mut f = file;
    f.seek(SeekFrom::Start(from)).map_err(io)?;
    f.take(end.saturating_sub(from))
        .read_to_end(&mut data)
        .map_err(io)?;
    let mut i = 0;
    while let Some(j) = memchr::memchr(MAGIC, &data[i..]) {
        let start = i + j;
        if valid_run_to_commit(&data[start..]) {
            return Ok(Some(from + start as u64));
        }
        i = start + 1;
    }
    Ok(None)
}

fn valid_run_to_commit(data: &[u8]) -> bool {
    let mut p = 0;
    loop {
        let Some(h) = data.get(p..p + HEADER) else {
            return false;
        };
        let mut header = [0u8; HEADER];
        header.copy_from_slice(h);
        let Some((kind, len)) = parse_header(&header) else {
            return false;
        };
        let Some(payload) = data.get(p + HEADER..p + HEADER + len as usize) else {
            return false;
        };
        let stored = u32::from_le_bytes([header[6], header[7], header[8], header[9]]);
        if crc(kind as u8, len, payload) != stored {
            return false;
        }
        if kind == Kind::Commit {
            return true;
        }
        p += HEADER + len as usize;
    }
}
