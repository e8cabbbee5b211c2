//! The crawl's state split into shards on a Redis Cluster. Each shard is a complete
//! copy of the single-server layout — queue, meta, workers, leases, `:bad`, dupefilter
//! — whose keys share one hash tag, so every script runs on one slot of one master,
//! unchanged. A request belongs to the shard `CRC16(fingerprint) mod N` (its URL when
//! it has no fingerprint): its duplicate check and its queue entry live together, so
//! checking and pushing stay one atomic step, and one site's pages spread over every
//! master. Shard `i` of `N` takes the first tag `s<i>.<j>` whose slot falls in the
//! middle half of the `i`-th `N`th of the slot space, so on a cluster created with
//! even slot ranges the shards land on different masters.

use crate::proto::cluster::key_slot;

/// A queue's keys: the single-server layout, or one shard's.
#[derive(Debug, Clone)]
pub(super) struct Keys {
    pub(super) queue: String,
    pub(super) meta: String,
    pub(super) workers: String,
    pub(super) lease_prefix: String,
    pub(super) mine: String,
    pub(super) bad: String,
    pub(super) dupefilter: String,
}

/// Redis Cluster's slot count.
const SLOTS: usize = 16384;

/// Most shards a crawl may have (`SCHEDULER_SHARDS`).
pub const MAX_SHARDS: usize = 1024;

/// The hash tag of shard `i` of `n` (`n` at most [`MAX_SHARDS`]).
pub fn tag(i: usize, n: usize) -> String {
    let (lo, hi) = (i * SLOTS / n, (i + 1) * SLOTS / n);
    let quarter = (hi - lo) / 4;
    let (want_lo, want_hi) = (lo + quarter, hi - quarter);
    let mut j = 0u32;
    loop {
        let t = format!("s{i}.{j}");
        let slot = usize::from(key_slot(t.as_bytes()));
        if (want_lo..want_hi.max(want_lo + 1)).contains(&slot) {
            return t;
        }
        j += 1;
    }
}

/// The shard of a request with this fingerprint argument (or URL).
pub fn shard_of(key: &[u8], n: usize) -> usize {
    usize::from(key_slot_raw(key)) % n.max(1)
}

/// CRC16 (XMODEM, Redis Cluster's) of the whole key, braces included.
fn key_slot_raw(key: &[u8]) -> u16 {
    crate::proto::cluster::crc16(key)
}

/// The keys of every shard of a crawl whose single-server keys are `base`.
pub fn shard_keys(base: &Keys, n: usize, worker: &str) -> Vec<Keys> {
    (0..n)
        .map(|i| {
            let t = tag(i, n);
            let q = format!("{}:{{{t}}}", base.queue);
            Keys {
                meta: format!("{q}:meta"),
                workers: format!("{q}:workers"),
                lease_prefix: format!("{q}:leases:"),
                mine: format!("{q}:leases:{worker}"),
                bad: format!("{q}:bad"),
                dupefilter: if base.dupefilter.is_empty() {
                    String::new()
                } else {
                    format!("{}:{{{t}}}", base.dupefilter)
                },
                queue: q,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_spread_over_the_slot_space_and_share_a_slot_within() {
        for n in [1, 2, 3, 4, 6, 12, 64] {
            for i in 0..n {
                let slot = usize::from(key_slot(tag(i, n).as_bytes()));
                assert!(
                    (i * SLOTS / n..(i + 1) * SLOTS / n).contains(&slot),
                    "shard {i} of {n} at slot {slot}"
                );
            }
        }
        let base = Keys {
            queue: "q:requests".into(),
            meta: String::new(),
            workers: String::new(),
            lease_prefix: String::new(),
            mine: String::new(),
            bad: String::new(),
            dupefilter: "q:dupefilter".into(),
        };
        for k in shard_keys(&base, 3, "w1") {
            let slot = key_slot(k.queue.as_bytes());
            for other in [&k.meta, &k.workers, &k.mine, &k.bad, &k.dupefilter] {
                assert_eq!(key_slot(other.as_bytes()), slot, "{other}");
            }
            assert_eq!(
                key_slot(format!("{}:last", k.mine).as_bytes()),
                slot,
                "the pop's :last key"
            );
        }
    }

    #[test]
    fn a_request_has_one_shard() {
        let fp = b"0123456789abcdef0123456789abcdef01234567";
        assert_eq!(shard_of(fp, 3), shard_of(fp, 3));
        assert!(shard_of(fp, 3) < 3);
        assert_eq!(shard_of(fp, 1), 0);
    }
}
