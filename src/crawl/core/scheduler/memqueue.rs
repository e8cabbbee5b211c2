//! The memory queues (Scrapy's `LifoMemoryQueue` / `FifoMemoryQueue`), holding each
//! request as its record ([`crate::crawl::record`]) in one byte buffer.
//!
//! A pending request held as a `Request` costs its struct, the URL's string, the
//! meta's and headers' allocations and the queue's slack; as a record it costs its
//! encoded size plus 4: ~70 bytes for a followed link with its `depth`
//! (`cargo bench --bench scheduler_memory` measures both). The frontier of a large crawl is most of its memory (110,000 pending
//! requests on the 200,000-page fixture crawl), so the queues keep records. Encoding is
//! lossless (the record round-trips every field), so what comes out is equal to what
//! went in; the cost is one encode and one decode per scheduled request.
//!
//! Layout: a queue of less than 4 KiB lives in one buffer sized to its first record and
//! grown in place (doubling, a copy of at most 4 KiB); past that, records go to chunks
//! that double up to 256 KiB (a record larger than that gets a chunk of its own), so the
//! slack is at most one chunk and growing never copies what is stored. Starting small
//! matters to the downloader-aware queue, which keeps a queue per slot and priority:
//! 10,000 hosts with a few requests each touched 10,000 fresh 256 KiB chunks (213 MB of
//! RSS on a 10,000-host broad crawl, 57 MB with one queue) before chunks started small,
//! and 256-byte first chunks still left most of each slot's buffer empty. The buffer a
//! request is encoded into is one per thread, not one per queue. LIFO appends `record ‖ len (u32 LE)` to the last chunk and pops from its end;
//! FIFO appends `len ‖ record` and reads the first chunk from a head offset. A chunk is
//! freed as soon as it is consumed (one empty chunk is kept for the next push).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use crate::crawl::http::request::Request;
use crate::crawl::http::request::record;
use crate::defer::Failure;

use super::queues::{QueueFactory, QueueKey, RequestQueue};

/// Bytes of a record's length.
const LEN: usize = 4;
/// The largest chunk's capacity.
const CHUNK: usize = 256 << 10;
/// A queue grows its one buffer in place up to this capacity; then new chunks, each
/// double the last one's, up to `CHUNK`.
const SMALL: usize = 4 << 10;

thread_local! {
    /// The record being pushed (kept to reuse its allocation).
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

#[derive(Debug, Default)]
struct Chunk {
    buf: Vec<u8>,
    /// FIFO: where the next record's length starts.
    head: usize,
}

/// A memory queue: LIFO (depth-first, Scrapy's default) or FIFO.
#[derive(Debug)]
pub struct MemoryQueue {
    chunks: VecDeque<Chunk>,
    len: usize,
    lifo: bool,
}

impl MemoryQueue {
    /// An empty queue.
    pub fn new(lifo: bool) -> Self {
        Self {
            chunks: VecDeque::new(),
            len: 0,
            lifo,
        }
    }

    /// Bytes the queue holds (records and their lengths, consumed FIFO bytes of the
    /// first chunk included).
    pub fn bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.buf.len()).sum()
    }

    /// Bytes allocated for the queue's chunks.
    pub fn capacity(&self) -> usize {
        self.chunks.iter().map(|c| c.buf.capacity()).sum()
    }

    fn corrupt(&mut self) -> Failure {
        // Only a bug could get here (the queue decodes what it encoded): drop the
        // queue's contents rather than read garbage, and say how many were lost.
        let lost = self.len;
        self.chunks.clear();
        self.len = 0;
        Failure::msg(format!(
            "memory queue corrupted: {lost} pending requests dropped"
        ))
    }

    /// The chunk to append `need` bytes to: the last one if it has room.
    fn tail_for(&mut self, need: usize) -> &mut Chunk {
        let room = self
            .chunks
            .back()
            .is_some_and(|c| c.buf.capacity() - c.buf.len() >= need);
        let small = self.chunks.len() == 1 && self.chunks[0].buf.capacity() < SMALL;
        if !room && small {
            // One small buffer: grown in place (consumed FIFO bytes dropped first).
            let c = &mut self.chunks[0];
            if c.head > 0 {
                c.buf.drain(..c.head);
                c.head = 0;
            }
            c.buf.reserve(need);
        } else if !room {
            let size = self
                .chunks
                .back()
                .map_or(need, |c| c.buf.capacity().saturating_mul(2).min(CHUNK));
            // An empty last chunk (kept after a pop) that is too small goes.
            if self.chunks.back().is_some_and(|c| c.buf.len() == c.head) {
                self.chunks.pop_back();
            }
            if self.chunks.capacity() == 0 {
                self.chunks.reserve_exact(1);
            }
            self.chunks.push_back(Chunk {
                buf: Vec::with_capacity(need.max(size)),
                head: 0,
            });
        }
        let last = self.chunks.len() - 1;
        &mut self.chunks[last]
    }

    fn pop_lifo(&mut self) -> Result<std::ops::Range<usize>, Failure> {
        // Empty chunks at the end (kept from earlier pops) are skipped.
        while self.chunks.len() > 1 && self.chunks.back().is_some_and(|c| c.buf.is_empty()) {
            self.chunks.pop_back();
        }
        let Some(chunk) = self.chunks.back() else {
            return Err(self.corrupt());
        };
        let end = chunk.buf.len();
        let n = end
            .checked_sub(LEN)
            .and_then(|at| Some((at, read_len(&chunk.buf, at)?)))
            .and_then(|(at, n)| Some(at.checked_sub(n)?..at));
        n.ok_or_else(|| self.corrupt())
    }

    fn pop_fifo(&mut self) -> Result<std::ops::Range<usize>, Failure> {
        while self.chunks.len() > 1 && self.chunks.front().is_some_and(|c| c.head == c.buf.len()) {
            self.chunks.pop_front();
        }
        let Some(chunk) = self.chunks.front() else {
            return Err(self.corrupt());
        };
        let at = chunk.head;
        match read_len(&chunk.buf, at) {
            Some(n) if at + LEN + n <= chunk.buf.len() => Ok(at + LEN..at + LEN + n),
            _ => Err(self.corrupt()),
        }
    }
}

fn read_len(buf: &[u8], at: usize) -> Option<usize> {
    let b = buf.get(at..at + LEN)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
}

impl RequestQueue for MemoryQueue {
    fn push(&mut self, request: Request) -> Result<(), Failure> {
        let mut record = SCRATCH.with_borrow_mut(std::mem::take);
        record.clear();
        record::encode_into(&request, &mut record);
        let Ok(n) = u32::try_from(record.len()) else {
            return Err(Failure::msg(format!(
                "request too large for a memory queue: {}",
                request.url_str()
            )));
        };
        let lifo = self.lifo;
        let chunk = self.tail_for(record.len() + LEN);
        if lifo {
            chunk.buf.extend_from_slice(&record);
            chunk.buf.extend_from_slice(&n.to_le_bytes());
        } else {
            chunk.buf.extend_from_slice(&n.to_le_bytes());
            chunk.buf.extend_from_slice(&record);
        }
        // A huge record's scratch is not kept.
        if record.capacity() <= 64 << 10 {
            SCRATCH.with_borrow_mut(|s| *s = record);
        }
        self.len += 1;
        Ok(())
    }

    fn pop(&mut self) -> Result<Option<Request>, Failure> {
        if self.len == 0 {
            return Ok(None);
        }
        let decoded = if self.lifo {
            let range = self.pop_lifo()?;
            let last = self.chunks.len() - 1;
            let chunk = &mut self.chunks[last];
            let decoded = record::decode(&chunk.buf[range.clone()]);
            chunk.buf.truncate(range.start);
            decoded
        } else {
            let range = self.pop_fifo()?;
            let chunk = &mut self.chunks[0];
            let decoded = record::decode(&chunk.buf[range.clone()]);
            chunk.head = range.end;
            if chunk.head == chunk.buf.len() {
                chunk.buf.clear();
                chunk.head = 0;
                if self.chunks.len() > 1 {
                    self.chunks.pop_front();
                }
            }
            decoded
        };
        self.len -= 1;
        if self.len == 0 {
            // Keep one chunk of the usual size for the next push.
            self.chunks.truncate(1);
            if let Some(c) = self.chunks.front_mut() {
                c.buf.clear();
                c.head = 0;
                if c.buf.capacity() > CHUNK {
                    self.chunks.clear();
                }
            }
        }
        match decoded {
            Ok(request) => Ok(Some(request)),
            Err(e) => Err(Failure::msg(format!(
                "memory queue: a request could not be read back: {e}"
            ))),
        }
    }

    fn len(&self) -> usize {
        self.len
    }
}

/// The factory of memory queues: `lifo` for ordinary requests, `start_lifo` for
/// requests from `start()`.
pub fn memory_queues(lifo: bool, start_lifo: bool) -> QueueFactory {
    Rc::new(move |key: &QueueKey<'_>| {
        Ok(
            Box::new(MemoryQueue::new(if key.start { start_lifo } else { lifo }))
                as Box<dyn RequestQueue>,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(i: usize) -> Request {
        let mut r = Request::get(&format!("http://example.com/p/{i}?q=a b"))
            .expect("url")
            .with_priority(i as i32 - 5)
            .with_callback("parse_item");
        r.meta_mut().insert("depth", json!(i));
        if i.is_multiple_of(3) {
            r = r.with_body(vec![b'x'; i]).with_dont_filter(true);
        }
        r
    }

    #[test]
    fn lifo_and_fifo_give_back_equal_requests_in_order() {
        for lifo in [true, false] {
            let mut q = MemoryQueue::new(lifo);
            for i in 0..50 {
                q.push(req(i)).expect("push");
            }
            assert_eq!(q.len(), 50);
            let mut out = Vec::new();
            // Interleave pushes and pops, as a crawl does.
            for i in 50..60 {
                out.push(q.pop().expect("pop").expect("some"));
                q.push(req(i)).expect("push");
            }
            while let Some(r) = q.pop().expect("pop") {
                out.push(r);
            }
            assert!(q.is_empty());
            assert_eq!(q.bytes(), 0);
            let mut expected: Vec<Request> = Vec::new();
            let mut model: std::collections::VecDeque<Request> = (0..50).map(req).collect();
            for i in 50..60 {
                expected.push(
                    if lifo {
                        model.pop_back()
                    } else {
                        model.pop_front()
                    }
                    .expect("x"),
                );
                model.push_back(req(i));
            }
            while let Some(r) = if lifo {
                model.pop_back()
            } else {
                model.pop_front()
            } {
                expected.push(r);
            }
            assert_eq!(out, expected, "lifo={lifo}");
        }
    }

    #[test]
    fn a_large_frontier_is_compact_and_memory_comes_back() {
        for lifo in [true, false] {
            let mut q = MemoryQueue::new(lifo);
            for i in 0..100_000 {
                let r = Request::get(&format!(
                    "http://www.example.com/s/{:03}/{i:05}.html",
                    i / 100
                ))
                .expect("url");
                q.push(r).expect("push");
            }
            // ~55 bytes per pending request, against ~250+ as a Request.
            assert!(q.bytes() < 100_000 * 64, "{} bytes", q.bytes());
            for _ in 0..99_000 {
                q.pop().expect("pop").expect("some");
            }
            assert!(q.capacity() <= 2 * CHUNK, "capacity {}", q.capacity());
        }
    }

    #[test]
    fn a_record_larger_than_a_chunk_gets_its_own() {
        for lifo in [true, false] {
            let mut q = MemoryQueue::new(lifo);
            let big = Request::get("http://example.com/upload")
                .expect("url")
                .with_body(vec![7u8; 3 * CHUNK]);
            q.push(req(1)).expect("push");
            q.push(big.clone()).expect("push");
            q.push(req(2)).expect("push");
            let order: Vec<Request> = std::iter::from_fn(|| q.pop().expect("pop")).collect();
            let expected = if lifo {
                vec![req(2), big.clone(), req(1)]
            } else {
                vec![req(1), big.clone(), req(2)]
            };
            assert_eq!(order, expected, "lifo={lifo}");
            assert!(q.capacity() <= CHUNK, "capacity {}", q.capacity());
        }
    }

    #[test]
    fn damaged_bytes_are_an_error_not_a_panic() {
        let mut q = MemoryQueue::new(true);
        q.push(req(1)).expect("push");
        q.chunks[0].buf[0] = 0xFF; // the record's version
        assert!(q.pop().is_err());
        assert!(q.is_empty());
        let mut q = MemoryQueue::new(false);
        q.push(req(1)).expect("push");
        q.chunks[0].buf[3] = 0xFF; // a length past the end
        assert!(q.pop().is_err());
        assert!(q.pop().expect("empty").is_none());
    }
}
