//! The JOBDIR disk queue ([`JobQueue`]): the scheduler's priority queues with the
//! requests in the journal and only their offsets (8 bytes each) in memory.
//!
//! It keeps the memory queues' semantics and pop order exactly — one queue per
//! priority, highest first, non-start requests before start requests at a priority,
//! LIFO or FIFO inside (`SCHEDULER_MEMORY_QUEUE` / `SCHEDULER_START_MEMORY_QUEUE`), and,
//! for `DownloaderAwarePriorityQueue`, one such set per download slot with the least
//! busy slot first and Scrapy's tie-breaking (tests/jobdir_queue.rs compares pop
//! sequences with the memory queues').
//!
//! # The `ENQUEUE` payload
//!
//! | bytes | field |
//! |---|---|
//! | 1 | flags: bit 0 a fingerprint follows, bit 1 from `start()` |
//! | 20 | the request fingerprint (Scrapy's, default options), if flagged |
//! | varint | priority, zigzag |
//! | varint + n | the download slot |
//! | rest | the request record (`crawl::record`) |

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::rc::Rc;

use super::queues::RequestQueue;
use super::queues::next_slot;
use crate::crawl::base::slots::{SlotActivity, slot_key};
use crate::crawl::http::fingerprint::{FingerprintOptions, fingerprint};
use crate::crawl::http::request::Request;
use crate::crawl::http::request::keys;
use crate::crawl::http::request::record;
use crate::crawl::jobdir::journal::Kind;
use crate::crawl::jobdir::{Job, PendingEntry, get_str, get_varint, put_str, put_varint};
use crate::defer::Failure;

const HAS_FP: u8 = 1;
const START: u8 = 2;

/// An `ENQUEUE` payload, parsed.
#[derive(Debug)]
pub struct ParsedEnqueue<'a> {
    /// The fingerprint, unless the request was scheduled with `dont_filter`.
    pub fingerprint: Option<[u8; 20]>,
    /// The priority.
    pub priority: i32,
    /// Whether it came from `start()`.
    pub start: bool,
    /// The download slot.
    pub slot: &'a str,
    /// The request record.
    pub record: &'a [u8],
}

impl<'a> ParsedEnqueue<'a> {
    /// Parses a payload; `None` when it is malformed.
    pub fn parse(p: &'a [u8]) -> Option<Self> {
        let flags = *p.first()?;
        let mut pos = 1;
        let fingerprint = if flags & HAS_FP != 0 {
            let fp: [u8; 20] = p.get(1..21)?.try_into().ok()?;
            pos = 21;
            Some(fp)
        } else {
            None
        };
        let z = get_varint(p, &mut pos)?;
        let priority = i32::try_from(((z >> 1) as i64) ^ -((z & 1) as i64)).ok()?;
        let slot = std::str::from_utf8(get_str(p, &mut pos)?).ok()?;
        Some(Self {
            fingerprint,
            priority,
            start: flags & START != 0,
            slot,
            record: p.get(pos..)?,
        })
    }
}

/// Encodes an `ENQUEUE` payload.
pub fn encode_enqueue(
    out: &mut Vec<u8>,
    request: &Request,
    fingerprint: Option<[u8; 20]>,
    slot: &str,
) {
    let start = request.meta().get_bool(keys::IS_START_REQUEST);
    out.push((u8::from(fingerprint.is_some()) * HAS_FP) | (u8::from(start) * START));
    if let Some(fp) = fingerprint {
        out.extend_from_slice(&fp);
    }
    let p = i64::from(request.priority());
    put_varint(out, ((p << 1) ^ (p >> 63)) as u64);
    put_str(out, slot.as_bytes());
    record::encode_into(request, out);
}

/// One priority's queues.
#[derive(Default)]
struct Level {
    normal: VecDeque<u64>,
    start: VecDeque<u64>,
}

/// The priorities of one slot.
#[derive(Default)]
struct Levels {
    levels: BTreeMap<i32, Level>,
    len: usize,
}

impl Levels {
    fn push(&mut self, priority: i32, start: bool, offset: u64, front: bool) {
        let level = self.levels.entry(priority).or_default();
        let q = if start {
            &mut level.start
        } else {
            &mut level.normal
        };
        if front {
            q.push_front(offset);
        } else {
            q.push_back(offset);
        }
        self.len += 1;
    }

    fn pop(&mut self, lifo: bool, start_lifo: bool) -> Option<u64> {
        let (&priority, level) = self.levels.iter_mut().next_back()?;
        let take = |q: &mut VecDeque<u64>, lifo: bool| {
            if lifo { q.pop_back() } else { q.pop_front() }
        };
        let r = take(&mut level.normal, lifo).or_else(|| take(&mut level.start, start_lifo));
        if level.normal.is_empty() && level.start.is_empty() {
            self.levels.remove(&priority);
        }
        if r.is_some() {
            self.len -= 1;
        }
        r
    }
}

/// The disk queue of a JOBDIR crawl.
pub struct JobQueue {
    job: Rc<Job>,
    lifo: bool,
    start_lifo: bool,
    /// `None`: `ScrapyPriorityQueue` (one slot); `Some`: downloader-aware.
    activity: Option<Rc<SlotActivity>>,
    slots: HashMap<Rc<str>, Levels>,
    /// The slot the last pop came from (downloader-aware tie-breaking).
    last_selected: Option<Rc<str>>,
    len: usize,
    buf: Vec<u8>,
}

impl JobQueue {
    /// An empty queue on `job`: `activity` makes it downloader-aware.
    pub fn new(
        job: Rc<Job>,
        lifo: bool,
        start_lifo: bool,
        activity: Option<Rc<SlotActivity>>,
    ) -> Self {
        Self {
            job,
            lifo,
            start_lifo,
            activity,
            slots: HashMap::new(),
            last_selected: None,
            len: 0,
            buf: Vec::new(),
        }
    }

    fn slot_for(&mut self, name: &str) -> &mut Levels {
        let key: Rc<str> = if self.activity.is_some() {
            Rc::from(name)
        } else {
            Rc::from("")
        };
        self.slots.entry(key).or_default()
    }

    /// Puts back the requests a resume found, in their original order; the ones that
    /// were in progress when the crawl stopped pop first.
    pub fn restore(&mut self, pending: &[PendingEntry], slots: &[String]) {
        let name_of = |e: &PendingEntry| slots.get(e.slot as usize).cloned().unwrap_or_default();
        for e in pending.iter().filter(|e| !e.leased) {
            self.slot_for(&name_of(e))
                .push(e.priority, e.start, e.offset, false);
            self.len += 1;
        }
        // LIFO: pushed last, they pop first; FIFO: pushed at the front, in reverse so
        // they pop in their original order.
        let leased: Vec<&PendingEntry> = pending.iter().filter(|e| e.leased).collect();
        let (lifo, start_lifo) = (self.lifo, self.start_lifo);
        let is_lifo = |e: &PendingEntry| if e.start { start_lifo } else { lifo };
        for e in &leased {
            if is_lifo(e) {
                self.slot_for(&name_of(e))
                    .push(e.priority, e.start, e.offset, false);
                self.len += 1;
            }
        }
        for e in leased.iter().rev() {
            if !is_lifo(e) {
                self.slot_for(&name_of(e))
                    .push(e.priority, e.start, e.offset, true);
                self.len += 1;
            }
        }
    }

    fn pick_slot(&mut self) -> Option<Rc<str>> {
        let Some(activity) = &self.activity else {
            return self.slots.keys().next().cloned();
        };
        let name = next_slot(
            self.slots.keys().map(|k| &**k),
            activity,
            self.last_selected.as_deref(),
        )?;
        let key = self.slots.get_key_value(name)?.0.clone();
        self.last_selected = Some(key.clone());
        Some(key)
    }

    fn pop_offset(&mut self) -> Option<u64> {
        let key = self.pick_slot()?;
        let (lifo, start_lifo) = (self.lifo, self.start_lifo);
        let levels = self.slots.get_mut(&key)?;
        let r = levels.pop(lifo, start_lifo);
        let empty = levels.len == 0;
        if empty {
            self.slots.remove(&key);
        }
        if r.is_some() {
            self.len -= 1;
        }
        r
    }
}

impl RequestQueue for JobQueue {
    fn push(&mut self, mut request: Request) -> Result<(), Failure> {
        request.meta_mut().remove(keys::JOB_ID);
        let fp =
            (!request.dont_filter()).then(|| fingerprint(&request, &FingerprintOptions::default()));
        let slot = match &self.activity {
            Some(activity) => activity.slot_key(&request),
            None => slot_key(&request),
        };
        self.buf.clear();
        encode_enqueue(&mut self.buf, &request, fp, &slot);
        let offset = self
            .job
            .append(Kind::Enqueue, &self.buf)
            .ok_or_else(|| Failure::msg("the JOBDIR cannot be written"))?;
        let (priority, start) = (
            request.priority(),
            request.meta().get_bool(keys::IS_START_REQUEST),
        );
        self.slot_for(&slot).push(priority, start, offset, false);
        self.len += 1;
        Ok(())
    }

    fn pop(&mut self) -> Result<Option<Request>, Failure> {
        let Some(offset) = self.pop_offset() else {
            return Ok(None);
        };
        let (kind, payload) = self
            .job
            .read(offset)
            .map_err(|e| Failure::msg(format!("JOBDIR: {e}")))?;
        let parsed = (kind == Kind::Enqueue)
            .then(|| ParsedEnqueue::parse(&payload))
            .flatten()
            .ok_or_else(|| Failure::msg(format!("JOBDIR: no request at offset {offset}")))?;
        let mut request = record::decode(parsed.record)
            .map_err(|e| Failure::msg(format!("JOBDIR: request at offset {offset}: {e}")))?;
        request.meta_mut().insert_static(keys::JOB_ID, offset);
        self.job.lease(offset);
        Ok(Some(request))
    }

    fn len(&self) -> usize {
        self.len
    }
}

impl fmt::Debug for JobQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobQueue")
            .field("len", &self.len)
            .field("slots", &self.slots.len())
            .finish()
    }
}
