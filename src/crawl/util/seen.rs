//! Seen sets of request fingerprints: [`FingerprintSet`] (exact, ≤ 32 bytes per
//! fingerprint) and [`BloomFilter`] (approximate, a fixed size for a capacity and a
//! false-positive rate).
//!
//! # The exact set
//!
//! 256 shards (by the fingerprint's last byte), each an open-addressing table of the
//! 20-byte fingerprints themselves with linear probing, grown by 1.25× past 80 % load:
//! steady memory is 20 / 0.8 = 25 to 20 × 1.25 / 0.8 = 31.25 bytes per fingerprint, and
//! growing one shard at a time keeps the transient small (a single table grown by
//! doubling would momentarily hold 3× its entries). A fingerprint is a SHA-1, uniform
//! already: its first 8 bytes place it, no second hash is computed.
//!
//! # The Bloom filter
//!
//! `m = -n ln p / ln² 2` bits and `k = (m / n) ln 2` probes for capacity `n` and rate
//! `p` (100,000,000 fingerprints at 1e-4: 240 MB, 13 probes), indices by double hashing
//! of the fingerprint's bytes. A false positive drops a request that was never fetched;
//! [`BloomFilter::estimated_fpr`] reports the current rate, `(1 - e^(-k·inserted/m))^k`.

/// An empty slot (the all-zero fingerprint is kept aside).
const EMPTY: [u8; 20] = [0; 20];
/// Grow past this load.
const MAX_LOAD_NUM: usize = 4;
const MAX_LOAD_DEN: usize = 5;

#[derive(Default, Clone)]
struct Shard {
    slots: Vec<[u8; 20]>,
    len: usize,
}

fn home(fp: &[u8; 20], cap: usize) -> usize {
    let h = u64::from_le_bytes([fp[0], fp[1], fp[2], fp[3], fp[4], fp[5], fp[6], fp[7]]);
    ((u128::from(h) * cap as u128) >> 64) as usize
}

impl Shard {
    /// Inserts; `true` when it was not there.
    fn insert(&mut self, fp: [u8; 20]) -> bool {
        if (self.len + 1) * MAX_LOAD_DEN > self.slots.len() * MAX_LOAD_NUM {
            self.grow();
        }
        let cap = self.slots.len();
        let mut i = home(&fp, cap);
        loop {
            let slot = &mut self.slots[i];
            if *slot == EMPTY {
                *slot = fp;
                self.len += 1;
                return true;
            }
            if *slot == fp {
                return false;
            }
            i += 1;
            if i == cap {
                i = 0;
            }
        }
    }

    fn contains(&self, fp: &[u8; 20]) -> bool {
        let cap = self.slots.len();
        if cap == 0 {
            return false;
        }
        let mut i = home(fp, cap);
        loop {
            let slot = &self.slots[i];
            if *slot == EMPTY {
                return false;
            }
            if slot == fp {
                return true;
            }
            i += 1;
            if i == cap {
                i = 0;
            }
        }
    }

    fn grow(&mut self) {
        let cap = self.slots.len();
        let new_cap = (cap + cap / 4).max(cap + 8);
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; new_cap]);
        self.len = 0;
        for fp in old {
            if fp != EMPTY {
                // Cannot recurse into grow: the new table has room.
                let mut i = home(&fp, new_cap);
                while self.slots[i] != EMPTY {
                    i = if i + 1 == new_cap { 0 } else { i + 1 };
                }
                self.slots[i] = fp;
                self.len += 1;
            }
        }
    }
}

/// An exact set of 20-byte fingerprints in ≤ 32 bytes each.
#[derive(Clone)]
pub struct FingerprintSet {
    shards: Vec<Shard>,
    zero: bool,
    len: usize,
}

impl Default for FingerprintSet {
    fn default() -> Self {
        Self {
            shards: vec![Shard::default(); 256],
            zero: false,
            len: 0,
        }
    }
}

impl FingerprintSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Inserts `fp`; `true` when it was not there.
    pub fn insert(&mut self, fp: [u8; 20]) -> bool {
        let new = if fp == EMPTY {
            !std::mem::replace(&mut self.zero, true)
        } else {
            self.shards[usize::from(fp[19])].insert(fp)
        };
        self.len += usize::from(new);
        new
    }

    /// Whether `fp` is in the set.
    pub fn contains(&self, fp: &[u8; 20]) -> bool {
        if *fp == EMPTY {
            return self.zero;
        }
        self.shards[usize::from(fp[19])].contains(fp)
    }

    /// Reads where each of `fps` would be found, all in one go: the reads do not
    /// depend on one another, so their cache misses overlap instead of stalling one
    /// [`insert`](Self::insert) after another (the slot of a random fingerprint is
    /// rarely in cache). A lookup reads the home slot and usually the next one or two
    /// (probing at up to 80 % load): 60 bytes from the home slot's start, which can
    /// reach into the next cache line, so the first and the last of those bytes are
    /// read. Changes nothing.
    pub fn prefetch<'a>(&self, fps: impl Iterator<Item = &'a [u8; 20]>) {
        let mut touched = 0u8;
        for fp in fps {
            let slots = &self.shards[usize::from(fp[19])].slots;
            let cap = slots.len();
            if cap == 0 {
                continue;
            }
            let h = home(fp, cap);
            // A non-empty table has at least 8 slots: one wrap at most.
            let third = if h + 2 < cap { h + 2 } else { (h + 2) % cap };
            touched ^= slots[h][0] ^ slots[third][19];
        }
        std::hint::black_box(touched);
    }

    /// Fingerprints held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of memory the tables hold.
    pub fn memory_bytes(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.slots.capacity() * 20)
            .sum::<usize>()
            + self.shards.capacity() * std::mem::size_of::<Shard>()
    }
}

impl std::fmt::Debug for FingerprintSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FingerprintSet")
            .field("len", &self.len)
            .field("bytes", &self.memory_bytes())
            .finish()
    }
}

/// A Bloom filter over fingerprints.
#[derive(Clone)]
pub struct BloomFilter {
    bits: Vec<u64>,
    m: u64,
    k: u32,
    inserted: u64,
}

impl BloomFilter {
    /// A filter for `capacity` fingerprints at false-positive rate `rate`.
    ///
    /// # Errors
    ///
    /// A capacity of 0, a rate outside (0, 1), or a size beyond 2^40 bits.
    pub fn new(capacity: u64, rate: f64) -> Result<Self, String> {
        let (m, k) = Self::dimensions(capacity, rate)?;
        Ok(Self {
            bits: vec![0; m.div_ceil(64) as usize],
            m,
            k,
            inserted: 0,
        })
    }

    /// The bits and probes a filter for `capacity` at `rate` needs (nothing allocated).
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn dimensions(capacity: u64, rate: f64) -> Result<(u64, u32), String> {
        if capacity == 0 || !(rate > 0.0 && rate < 1.0) {
            return Err(format!(
                "a Bloom filter needs a capacity > 0 and a rate in (0, 1), not {capacity} and {rate}"
            ));
        }
        let ln2 = std::f64::consts::LN_2;
        let m = (-(capacity as f64) * rate.ln() / (ln2 * ln2)).ceil();
        if m > (1u64 << 40) as f64 {
            return Err(format!("a Bloom filter of {m} bits is too large"));
        }
        let m = (m as u64).max(64);
        let k = ((m as f64 / capacity as f64) * ln2)
            .round()
            .clamp(1.0, 30.0) as u32;
        Ok((m, k))
    }

    fn indices(&self, fp: &[u8; 20]) -> impl Iterator<Item = u64> + '_ {
        let h1 = u64::from_le_bytes([fp[0], fp[1], fp[2], fp[3], fp[4], fp[5], fp[6], fp[7]]);
        let h2 =
            u64::from_le_bytes([fp[8], fp[9], fp[10], fp[11], fp[12], fp[13], fp[14], fp[15]]) | 1;
        (0..u64::from(self.k)).map(move |i| h1.wrapping_add(i.wrapping_mul(h2)) % self.m)
    }

    /// Adds `fp`; `true` when at least one bit was unset (certainly new).
    pub fn insert(&mut self, fp: &[u8; 20]) -> bool {
        let mut new = false;
        let h1 = u64::from_le_bytes([fp[0], fp[1], fp[2], fp[3], fp[4], fp[5], fp[6], fp[7]]);
        let h2 =
            u64::from_le_bytes([fp[8], fp[9], fp[10], fp[11], fp[12], fp[13], fp[14], fp[15]]) | 1;
        for i in 0..u64::from(self.k) {
            let idx = h1.wrapping_add(i.wrapping_mul(h2)) % self.m;
            let (w, b) = ((idx / 64) as usize, idx % 64);
            if self.bits[w] & (1 << b) == 0 {
                self.bits[w] |= 1 << b;
                new = true;
            }
        }
        if new {
            self.inserted += 1;
        }
        new
    }

    /// Whether `fp` may have been added (false positives at the configured rate).
    pub fn contains(&self, fp: &[u8; 20]) -> bool {
        self.indices(fp)
            .all(|i| self.bits[(i / 64) as usize] & (1 << (i % 64)) != 0)
    }

    /// The false-positive rate now: `(1 - e^(-k·inserted/m))^k`.
    pub fn estimated_fpr(&self) -> f64 {
        let k = f64::from(self.k);
        (1.0 - (-k * self.inserted as f64 / self.m as f64).exp()).powf(k)
    }

    /// Bits, probes per fingerprint, fingerprints added.
    pub fn shape(&self) -> (u64, u32, u64) {
        (self.m, self.k, self.inserted)
    }

    /// Bytes of memory.
    pub fn memory_bytes(&self) -> usize {
        self.bits.len() * 8
    }
}

impl std::fmt::Debug for BloomFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BloomFilter")
            .field("m", &self.m)
            .field("k", &self.k)
            .field("inserted", &self.inserted)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha1::{Digest, Sha1};

    fn fp(i: u64) -> [u8; 20] {
        Sha1::digest(i.to_le_bytes()).into()
    }

    #[test]
    fn exact_set_is_exact_and_compact() {
        let mut s = FingerprintSet::new();
        let n = 200_000;
        for i in 0..n {
            assert!(s.insert(fp(i)));
        }
        for i in 0..n {
            assert!(!s.insert(fp(i)));
            assert!(s.contains(&fp(i)));
        }
        for i in n..n + 10_000 {
            assert!(!s.contains(&fp(i)));
        }
        assert_eq!(s.len(), n as usize);
        assert!(s.insert(EMPTY) && !s.insert(EMPTY) && s.contains(&EMPTY));
        let per = s.memory_bytes() as f64 / s.len() as f64;
        assert!(per <= 32.0, "{per} bytes per fingerprint");
    }

    /// `prefetch` reads inside every table it looks at — the home slot at the end of a
    /// table too, where the slots read after it wrap to the start — and changes nothing.
    #[test]
    fn prefetch_reads_within_the_tables_and_changes_nothing() {
        let mut s = FingerprintSet::new();
        let mut wrapped = 0;
        for n in 0..3_000u64 {
            assert!(s.insert(fp(n)));
            if n % 7 == 0 {
                let fps: Vec<[u8; 20]> = (0..n + 50).map(fp).collect();
                s.prefetch(fps.iter());
                for f in &fps {
                    let cap = s.shards[usize::from(f[19])].slots.len();
                    wrapped += usize::from(cap > 0 && home(f, cap) + 2 >= cap);
                }
                assert_eq!(s.len(), n as usize + 1);
            }
        }
        assert!(wrapped > 100, "{wrapped}");
        for i in 0..3_000 {
            assert!(s.contains(&fp(i)));
        }
        assert!(!s.contains(&fp(3_000)));
    }

    #[test]
    fn bloom_filter_rate_holds() {
        let n = 100_000;
        let mut b = BloomFilter::new(n, 1e-3).expect("filter");
        for i in 0..n {
            b.insert(&fp(i));
        }
        for i in 0..n {
            assert!(b.contains(&fp(i)), "no false negatives");
        }
        let fp_count = (n..n + 100_000).filter(|i| b.contains(&fp(*i))).count();
        let rate = fp_count as f64 / 100_000.0;
        assert!(rate < 2e-3, "false positives {rate}");
        assert!(
            (b.estimated_fpr() - 1e-3).abs() < 5e-4,
            "{}",
            b.estimated_fpr()
        );
        // 100,000,000 at 1e-4 fits in 256 MB.
        let (m, k) = BloomFilter::dimensions(100_000_000, 1e-4).expect("big");
        assert!(
            m / 8 <= 256 * 1024 * 1024 && k == 13,
            "{m} bits, {k} probes"
        );
        assert!(BloomFilter::new(0, 0.1).is_err() && BloomFilter::new(10, 1.5).is_err());
    }
}
