//! A JOBDIR journal read by its documented layout (`src/crawl/jobdir/journal.rs` and
//! `records.rs`), independently of the code under test: to put a job back to an
//! earlier commit, as a resume that falls back to the last `SYNC` does.

use std::path::Path;

const MAGIC: u8 = 0xA7;
const FEED_POS: u8 = 4;
const COMMIT: u8 = 6;

fn varint(p: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *p.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

/// A `FEED_POS` payload's item count.
fn feed_items(p: &[u8]) -> Option<u64> {
    let mut pos = 0;
    let name_len = usize::try_from(varint(p, &mut pos)?).ok()?;
    pos += name_len;
    varint(p, &mut pos)?; // the committed length
    varint(p, &mut pos)
}

/// Cuts `journal` after the first `COMMIT` whose group records at least `items` feed
/// items; returns the item count there.
///
/// # Panics
///
/// The journal is malformed or never gets that far (a test's setup failed).
pub fn cut_at_items(journal: &Path, items: u64) -> u64 {
    let data = std::fs::read(journal).expect("the journal");
    let mut pos = 0;
    let mut seen = 0;
    while pos + 10 <= data.len() {
        assert_eq!(data[pos], MAGIC, "a record starts at {pos}");
        let kind = data[pos + 1];
        let len = u32::from_le_bytes(data[pos + 2..pos + 6].try_into().expect("4 bytes"));
        let payload = &data[pos + 10..pos + 10 + len as usize];
        pos += 10 + len as usize;
        match kind {
            FEED_POS => seen = feed_items(payload).expect("a FEED_POS payload"),
            COMMIT if seen >= items => {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(journal)
                    .and_then(|f| f.set_len(pos as u64))
                    .expect("the journal cut");
                return seen;
            }
            _ => {}
        }
    }
    panic!("no commit with {items} items in {}", journal.display());
}
