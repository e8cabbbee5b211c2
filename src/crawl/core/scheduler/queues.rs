//! The [`RequestQueue`] seam every scheduler queue implements — the memory queues
//! (`memqueue.rs`), the JOBDIR disk queues (`diskqueue.rs`) and the priority queues
//! over either (`pqueues.rs`) — the [`QueueKey`] a priority queue names a downstream
//! queue by, and the queue class names of the settings (`SCHEDULER_MEMORY_QUEUE`,
//! `SCHEDULER_START_MEMORY_QUEUE`, `SCHEDULER_DISK_QUEUE`, ...; Scrapy's names, and
//! the `scrapy.squeues.…` paths).

use std::rc::Rc;

use crate::crawl::base::settings::normalize_component;
use crate::crawl::http::request::Request;
use crate::defer::Failure;

/// A queue of requests (Scrapy's queue interface: `push`, `pop`, `len`, `close`).
/// Memory queues never fail; disk queues report I/O and decoding errors.
pub trait RequestQueue {
    /// Adds a request.
    ///
    /// # Errors
    ///
    /// The queue cannot store it (disk full, encoding failed): the scheduler falls back
    /// to memory and counts it.
    fn push(&mut self, request: Request) -> Result<(), Failure>;

    /// Takes the next request.
    ///
    /// # Errors
    ///
    /// A stored request cannot be read back.
    fn pop(&mut self) -> Result<Option<Request>, Failure>;

    /// Requests held.
    fn len(&self) -> usize;

    /// Whether no request is held.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes back a request its store already holds, by the store's handle
    /// (`stored`): a JOBDIR resume puts the journal's pending requests back by offset,
    /// without reading or writing them. `key` names the downstream queue it goes to;
    /// `front` puts it first in line instead of last.
    ///
    /// # Errors
    ///
    /// The queue keeps no store (memory queues).
    fn push_stored(&mut self, key: &QueueKey<'_>, stored: u64, front: bool) -> Result<(), Failure> {
        let _ = (key, stored, front);
        Err(Failure::msg("this queue keeps no stored requests"))
    }

    /// The crawl is closing (a disk queue flushes and writes its state).
    ///
    /// # Errors
    ///
    /// The state cannot be written.
    fn close(&mut self) -> Result<(), Failure> {
        Ok(())
    }
}

/// Which downstream queue a priority queue asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueKey<'a> {
    /// The download slot (downloader-aware queues), else `None`.
    pub slot: Option<&'a str>,
    /// The request priority.
    pub priority: i32,
    /// Whether it holds requests from `start()`.
    pub start: bool,
}

/// Builds one downstream queue.
pub type QueueFactory = Rc<dyn Fn(&QueueKey<'_>) -> Result<Box<dyn RequestQueue>, Failure>>;

/// Whether a memory queue class name is LIFO (`LifoMemoryQueue`) or FIFO.
///
/// # Errors
///
/// An unknown class name.
pub fn memory_queue_is_lifo(name: &str) -> Result<bool, Failure> {
    match normalize_component(name).as_str() {
        "trawl.LifoMemoryQueue" => Ok(true),
        "trawl.FifoMemoryQueue" => Ok(false),
        other => Err(Failure::msg(format!(
            "unknown memory queue {other:?} (LifoMemoryQueue or FifoMemoryQueue)"
        ))),
    }
}

/// Whether a disk queue class name is LIFO. Scrapy's names are accepted
/// (`PickleLifoDiskQueue`, `MarshalFifoDiskQueue`...) for their order only: trawl's
/// disk queues store request records, never pickles.
///
/// # Errors
///
/// An unknown class name.
pub fn disk_queue_is_lifo(name: &str) -> Result<bool, Failure> {
    match normalize_component(name).as_str() {
        "trawl.LifoDiskQueue" | "trawl.PickleLifoDiskQueue" | "trawl.MarshalLifoDiskQueue" => {
            Ok(true)
        }
        "trawl.FifoDiskQueue" | "trawl.PickleFifoDiskQueue" | "trawl.MarshalFifoDiskQueue" => {
            Ok(false)
        }
        other => Err(Failure::msg(format!(
            "unknown disk queue {other:?} (LifoDiskQueue or FifoDiskQueue)"
        ))),
    }
}
