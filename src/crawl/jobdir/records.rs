//! The payloads of the journal's records (`journal.rs` frames them):
//!
//! | record | payload |
//! |---|---|
//! | `ENQUEUE` | 1 byte of flags (bit 0: a fingerprint follows, bit 1: from `start()`), the 20-byte request fingerprint (Scrapy's, default options) if flagged, the priority (zigzag varint), the download slot (varint length + bytes), the request record ([`crate::crawl::record`]) |
//! | `LEASE`, `DONE` | the request's id: its `ENQUEUE` record's offset (varint) |
//! | `FEED_POS` | the feed's name (varint length + bytes), its committed length and item count (varints), then, when it changed since the run's last `FEED_POS` of the feed, the local file that length is of (varint length + path bytes: the open batch's file, a remote feed's in the JOBDIR) |
//! | `STATE` | the spider's state as a JSON object |
//! | `START_POS` | how many outputs of `start()` are processed (varint) |
//! | `COMMIT` | the group's sequence number (varint) |
//! | `SYNC` | empty |

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

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

/// Encodes a `FEED_POS` payload; `file` only when it changed (see the module table).
pub fn encode_feed_pos(name: &str, len: u64, items: u64, file: Option<&Path>) -> Vec<u8> {
    let mut p = Vec::new();
    put_bytes(&mut p, name.as_bytes());
    put_varint(&mut p, len);
    put_varint(&mut p, items);
    if let Some(f) = file {
        put_bytes(&mut p, f.as_os_str().as_bytes());
    }
    p
}

/// A parsed `FEED_POS` payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedPos {
    /// The feed's name (its first URI).
    pub name: String,
    /// The committed length of the open batch.
    pub len: u64,
    /// Items written over every batch.
    pub items: u64,
    /// The local file `len` is of, when the record names it.
    pub file: Option<PathBuf>,
}

/// Parses a `FEED_POS` payload (one written before the file field was added has none).
pub fn decode_feed_pos(p: &[u8]) -> Option<FeedPos> {
    let mut pos = 0;
    let name = std::str::from_utf8(get_bytes(p, &mut pos)?)
        .ok()?
        .to_owned();
    let len = get_varint(p, &mut pos)?;
    let items = get_varint(p, &mut pos)?;
    let file = if pos < p.len() {
        Some(PathBuf::from(std::ffi::OsStr::from_bytes(get_bytes(
            p, &mut pos,
        )?)))
    } else {
        None
    };
    Some(FeedPos {
        name,
        len,
        items,
        file,
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_feed_pos_names_its_file_only_when_given_one() {
        let file = Path::new("job/feeds/ab.feed");
        let with = decode_feed_pos(&encode_feed_pos("s3://b/k.jl", 17, 3, Some(file)));
        assert_eq!(
            with,
            Some(FeedPos {
                name: "s3://b/k.jl".into(),
                len: 17,
                items: 3,
                file: Some(file.to_path_buf()),
            })
        );
        let without = decode_feed_pos(&encode_feed_pos("out.jl", 0, 0, None)).map(|p| p.file);
        assert_eq!(without, Some(None));
        // A file field cut short is a malformed record, not a shorter path.
        let mut cut = encode_feed_pos("out.jl", 5, 1, Some(file));
        cut.pop();
        assert_eq!(decode_feed_pos(&cut), None);
    }
}
