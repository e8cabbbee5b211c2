//! The JOBDIR disk queues: [`DiskQueue`], a LIFO or FIFO queue whose requests live in
//! the job's journal (an `ENQUEUE` record each, [`crate::crawl::jobdir::records`]) with
//! only their offsets (8 bytes each) in memory, and [`JobQueue`], the scheduler's disk
//! queue: the same priority queues as memory ([`PriorityQueue`] or
//! [`DownloaderAwareQueue`]) over disk queues instead of memory queues.
//!
//! So the pop order is the memory queues' by construction — one queue per priority,
//! highest first, non-start requests before start requests at a priority, LIFO or
//! FIFO inside, and with `DownloaderAwarePriorityQueue` the least busy slot first with
//! Scrapy's tie-breaking (tests/jobdir_queue.rs checks pop sequences against the
//! memory queues across close and reopen). A resume puts the journal's pending
//! requests back by offset ([`RequestQueue::push_stored`]), without reading them.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::rc::Rc;

use super::pqueues::{DownloaderAwareQueue, PriorityQueue};
use super::queues::{QueueFactory, QueueKey, RequestQueue};
use crate::crawl::base::slots::{SlotActivity, slot_key};
use crate::crawl::http::request::{Request, keys, record};
use crate::crawl::jobdir::journal::Kind;
use crate::crawl::jobdir::records::{ParsedEnqueue, encode_enqueue};
use crate::crawl::jobdir::{Job, PendingEntry};
use crate::defer::Failure;

/// One downstream queue of a JOBDIR crawl (one slot, priority and kind): offsets of
/// `ENQUEUE` records, popped LIFO or FIFO.
pub struct DiskQueue {
    job: Rc<Job>,
    lifo: bool,
    /// The download slot its requests go to (downloader-aware queues), else each
    /// request's own.
    slot: Option<Rc<str>>,
    offsets: VecDeque<u64>,
    /// The encoding buffer, shared by the queues of one job.
    buf: Rc<RefCell<Vec<u8>>>,
}

impl RequestQueue for DiskQueue {
    fn push(&mut self, mut request: Request) -> Result<(), Failure> {
        request.meta_mut().remove(keys::JOB_ID);
        let fp = (!request.dont_filter()).then(|| self.job.fingerprint(&request));
        let offset = {
            let mut buf = self.buf.borrow_mut();
            buf.clear();
            match &self.slot {
                Some(slot) => encode_enqueue(&mut buf, &request, fp, slot),
                None => encode_enqueue(&mut buf, &request, fp, &slot_key(&request)),
            }
            self.job.append(Kind::Enqueue, &buf)
        }
        .ok_or_else(|| Failure::msg("the JOBDIR cannot be written"))?;
        self.offsets.push_back(offset);
        Ok(())
    }

    fn pop(&mut self) -> Result<Option<Request>, Failure> {
        let offset = if self.lifo {
            self.offsets.pop_back()
        } else {
            self.offsets.pop_front()
        };
        let Some(offset) = offset else {
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
        self.offsets.len()
    }

    fn push_stored(
        &mut self,
        _key: &QueueKey<'_>,
        stored: u64,
        front: bool,
    ) -> Result<(), Failure> {
        if front {
            self.offsets.push_front(stored);
        } else {
            self.offsets.push_back(stored);
        }
        Ok(())
    }
}

impl fmt::Debug for DiskQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DiskQueue")
            .field("lifo", &self.lifo)
            .field("len", &self.offsets.len())
            .finish()
    }
}

/// The factory of disk queues on `job`: `lifo` for ordinary requests, `start_lifo`
/// for requests from `start()`.
pub fn disk_queues(job: Rc<Job>, lifo: bool, start_lifo: bool) -> QueueFactory {
    let buf = Rc::new(RefCell::new(Vec::new()));
    Rc::new(move |key: &QueueKey<'_>| {
        Ok(Box::new(DiskQueue {
            job: job.clone(),
            lifo: if key.start { start_lifo } else { lifo },
            slot: key.slot.map(Rc::from),
            offsets: VecDeque::new(),
            buf: buf.clone(),
        }) as Box<dyn RequestQueue>)
    })
}

/// The disk queue of a JOBDIR crawl: a priority queue (downloader-aware when
/// `activity` is given) over [`DiskQueue`]s.
pub struct JobQueue {
    inner: Box<dyn RequestQueue>,
    aware: bool,
    lifo: bool,
    start_lifo: bool,
}

impl JobQueue {
    /// An empty queue on `job`: `activity` makes it downloader-aware.
    pub fn new(
        job: Rc<Job>,
        lifo: bool,
        start_lifo: bool,
        activity: Option<Rc<SlotActivity>>,
    ) -> Self {
        let factory = disk_queues(job, lifo, start_lifo);
        let aware = activity.is_some();
        let inner: Box<dyn RequestQueue> = match activity {
            Some(activity) => Box::new(DownloaderAwareQueue::new(factory, activity)),
            None => Box::new(PriorityQueue::new(factory, None)),
        };
        Self {
            inner,
            aware,
            lifo,
            start_lifo,
        }
    }

    /// Puts back the requests a resume found, in their original order; the ones that
    /// were in progress when the crawl stopped pop first.
    ///
    /// # Errors
    ///
    /// Only a queue without a store fails, which a `JobQueue` never is.
    pub fn restore(&mut self, pending: &[PendingEntry], slots: &[String]) -> Result<(), Failure> {
        let mut put = |e: &PendingEntry, front: bool| {
            let slot = slots.get(e.slot as usize).map_or("", String::as_str);
            let key = QueueKey {
                slot: self.aware.then_some(slot),
                priority: e.priority,
                start: e.start,
            };
            self.inner.push_stored(&key, e.offset, front)
        };
        for e in pending.iter().filter(|e| !e.leased) {
            put(e, false)?;
        }
        // LIFO: pushed last, they pop first; FIFO: pushed at the front, in reverse so
        // they pop in their original order.
        let leased: Vec<&PendingEntry> = pending.iter().filter(|e| e.leased).collect();
        let (lifo, start_lifo) = (self.lifo, self.start_lifo);
        let is_lifo = |e: &PendingEntry| if e.start { start_lifo } else { lifo };
        for e in &leased {
            if is_lifo(e) {
                put(e, false)?;
            }
        }
        for e in leased.iter().rev() {
            if !is_lifo(e) {
                put(e, true)?;
            }
        }
        Ok(())
    }
}

impl RequestQueue for JobQueue {
    fn push(&mut self, request: Request) -> Result<(), Failure> {
        self.inner.push(request)
    }

    fn pop(&mut self) -> Result<Option<Request>, Failure> {
        self.inner.pop()
    }

    fn len(&self) -> usize {
        self.inner.len()
    }

    fn close(&mut self) -> Result<(), Failure> {
        self.inner.close()
    }
}

impl fmt::Debug for JobQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobQueue")
            .field("len", &self.inner.len())
            .field("aware", &self.aware)
            .finish()
    }
}
