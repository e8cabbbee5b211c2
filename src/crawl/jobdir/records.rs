//! The payloads of the journal's records (`journal.rs` frames them):
//!
//! | record | payload |
//! |---|---|
//! | `ENQUEUE` | 1 byte of flags (bit 0: a fingerprint follows, bit 1: from `start()`), the 20-byte request fingerprint (Scrapy's, default options) if flagged, the priority (zigzag varint), the download slot (varint length + bytes), the request record ([`crate::crawl::record`]) |
//! | `LEASE`, `DONE` | the request's id: its `ENQUEUE` record's offset (varint) |
//! | `FEED_POS` | the feed's name (varint length + bytes), its committed length and item count (varints) |
//! | `STATE` | the spider's state as a JSON object |
//! | `START_POS` | how many outputs of `start()` are processed (varint) |
//! | `COMMIT` | the group's sequence number (varint) |
//! | `SYNC` | empty |

use crate::crawl::http::request::{Request, keys, record};
use crate::crawl::util::varint::{get_bytes, get_varint, put_bytes, put_varint, unzigzag, zigzag};

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
        let priority = i32::try_from(unzigzag(get_varint(p, &mut pos)?)).ok()?;
        let slot = std::str::from_utf8(get_bytes(p, &mut pos)?).ok()?;
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
    put_varint(out, zigzag(i64::from(request.priority())));
    put_bytes(out, slot.as_bytes());
    record::encode_into(request, out);
}

/// Encodes a `FEED_POS` payload.
pub fn encode_feed_pos(name: &str, len: u64, items: u64) -> Vec<u8> {
    let mut p = Vec::new();
    put_bytes(&mut p, name.as_bytes());
    put_varint(&mut p, len);
    put_varint(&mut p, items);
    p
}

/// Parses a `FEED_POS` payload: the feed's name, its length and item count.
pub fn decode_feed_pos(p: &[u8]) -> Option<(String, (u64, u64))> {
    let mut pos = 0;
    let name = std::str::from_utf8(get_bytes(p, &mut pos)?)
        .ok()?
        .to_owned();
    let len = get_varint(p, &mut pos)?;
    let items = get_varint(p, &mut pos)?;
    Some((name, (len, items)))
}

/// Encodes a one-number payload (`LEASE`, `DONE`, `START_POS`, `COMMIT`).
pub fn encode_id(id: u64) -> Vec<u8> {
    let mut p = Vec::with_capacity(10);
    put_varint(&mut p, id);
    p
}

/// Parses a one-number payload.
pub fn decode_id(p: &[u8]) -> Option<u64> {
    get_varint(p, &mut 0)
}
