//! The resume: what a replay of the journal's committed groups finds — the requests
//! still pending (and which were leased), the feeds' committed positions, the spider's
//! state, how far `start()` got.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::journal::{self, Kind};
use super::records::{ParsedEnqueue, decode_feed_pos, decode_id};

/// A pending request found by a resume (packed: 18 bytes, a million of them are
/// held while a resume rebuilds the queues).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, packed)]
pub struct PendingEntry {
    /// The `ENQUEUE` record's offset (the request's id in the job).
    pub offset: u64,
    /// Its priority.
    pub priority: i32,
    /// Its download slot (an index into [`Recovered::slots`]).
    pub slot: u32,
    /// Whether it came from `start()`.
    pub start: bool,
    /// Whether it was handed to the engine before the stop.
    pub leased: bool,
}

/// What a resume found in the journal.
#[derive(Debug, Default)]
pub struct Recovered {
    /// Requests to queue again, in `ENQUEUE` order.
    pub pending: Vec<PendingEntry>,
    /// Slot names.
    pub slots: Vec<String>,
    /// How many requests were leased and not done (re-fetched).
    pub requeued_leased: u64,
    /// Requests done.
    pub done: u64,
}

/// The state a replay accumulates.
#[derive(Default)]
pub(super) struct Replay {
    /// Every committed `ENQUEUE`, in order (offsets increase).
    pub(super) enqueued: Vec<PendingEntry>,
    pub(super) done: Vec<bool>,
    pub(super) slots: Vec<String>,
    pub(super) slot_index: HashMap<String, u32>,
    pub(super) feeds: HashMap<String, (u64, u64)>,
    pub(super) state: Option<Map<String, Value>>,
    pub(super) start_pos: u64,
    pub(super) commit_seq: u64,
}

impl Replay {
    fn index_of(&self, offset: u64) -> Option<usize> {
        self.enqueued
            .binary_search_by_key(&offset, |e| e.offset)
            .ok()
    }

    pub(super) fn apply(&mut self, r: &journal::Record) {
        match r.kind {
            Kind::Enqueue => {
                if let Some(e) = ParsedEnqueue::parse(&r.payload) {
                    let slot = match self.slot_index.get(e.slot) {
                        Some(&i) => i,
                        None => {
                            let i = self.slots.len() as u32;
                            self.slots.push(e.slot.to_owned());
                            self.slot_index.insert(e.slot.to_owned(), i);
                            i
                        }
                    };
                    self.enqueued.push(PendingEntry {
                        offset: r.offset,
                        priority: e.priority,
                        slot,
                        start: e.start,
                        leased: false,
                    });
                    self.done.push(false);
                }
            }
            Kind::Lease | Kind::Done => {
                if let Some(id) = decode_id(&r.payload)
                    && let Some(i) = self.index_of(id)
                {
                    if r.kind == Kind::Done {
                        self.done[i] = true;
                    } else {
                        self.enqueued[i].leased = true;
                    }
                }
            }
            Kind::FeedPos => {
                if let Some(p) = decode_feed_pos(&r.payload) {
                    self.feeds.insert(p.name, (p.len, p.items));
                }
            }
            Kind::State => {
                if let Ok(Value::Object(m)) = serde_json::from_slice(&r.payload) {
                    self.state = Some(m);
                }
            }
            Kind::StartPos => {
                if let Some(n) = decode_id(&r.payload) {
                    self.start_pos = n;
                }
            }
            Kind::Commit => {
                if let Some(n) = decode_id(&r.payload) {
                    self.commit_seq = n;
                }
            }
            Kind::Sync => {}
        }
    }

    pub(super) fn finish(&mut self) -> Recovered {
        let total = self.enqueued.len();
        let mut i = 0;
        let done = std::mem::take(&mut self.done);
        // In place: no second copy of a million entries.
        self.enqueued.retain(|_| {
            let keep = !done[i];
            i += 1;
            keep
        });
        self.enqueued.shrink_to_fit();
        let pending = std::mem::take(&mut self.enqueued);
        let requeued_leased = pending.iter().filter(|e| e.leased).count() as u64;
        Recovered {
            done: (total - pending.len()) as u64,
            pending,
            slots: std::mem::take(&mut self.slots),
            requeued_leased,
        }
    }
}
