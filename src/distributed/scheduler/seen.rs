//! [`SeenCache`]: the fingerprints this worker has already sent to the shared
//! dupefilter and heard back about. A request whose fingerprint is here is a duplicate
//! without asking Redis: on the fixture crawl 94% of extracted links are ones the
//! worker itself has seen, and each cost the server a script argument and an `SADD`.
//!
//! Bounded (`REDIS_DUPEFILTER_CACHE` entries, 0 turns it off) by two generations:
//! when the current one holds half the bound it becomes the previous one and the
//! oldest is dropped, so the most recent fingerprints are always kept. A fingerprint
//! is a 128-bit key: the first 32 hex digits of a SHA-1 fingerprint, or two hashes of
//! another filter's argument (a Bloom filter's probes). It is emptied on every
//! reconnection: after a failover the promoted replica may lack the last fingerprints
//! the old master answered for.

use crate::util::{FxHashSet, fx_hash};

/// The default bound, entries (about 20 MB when full).
pub const DEFAULT_CACHE: usize = 1_000_000;

/// Fingerprints known to the shared dupefilter.
#[derive(Debug, Default)]
pub struct SeenCache {
    cap: usize,
    current: FxHashSet<u128>,
    previous: FxHashSet<u128>,
}

impl SeenCache {
    /// A cache of at most `cap` entries (0: nothing is cached).
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            ..Self::default()
        }
    }

    /// The key of a dupefilter argument.
    pub fn key(argument: &str) -> u128 {
        let b = argument.as_bytes();
        if b.len() == 40
            && let Ok(k) = u128::from_str_radix(&argument[..32], 16)
        {
            return k;
        }
        let mut salted = Vec::with_capacity(b.len() + 1);
        salted.push(0x5a);
        salted.extend_from_slice(b);
        (u128::from(fx_hash(b)) << 64) | u128::from(fx_hash(&salted))
    }

    /// Whether the argument's fingerprint is known.
    pub fn contains(&self, key: u128) -> bool {
        self.cap > 0 && (self.current.contains(&key) || self.previous.contains(&key))
    }

    /// Remembers a fingerprint the dupefilter has (new or not).
    pub fn insert(&mut self, key: u128) {
        if self.cap == 0 || self.previous.contains(&key) {
            return;
        }
        if self.current.len() >= self.cap.div_ceil(2) {
            self.previous = std::mem::take(&mut self.current);
        }
        self.current.insert(key);
    }

    /// Forgets every fingerprint (after a reconnection: the server may be another one).
    pub fn clear(&mut self) {
        self.current.clear();
        self.previous.clear();
    }

    /// How many fingerprints are held.
    pub fn len(&self) -> usize {
        self.current.len() + self.previous.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_fingerprints_key_by_their_first_128_bits() {
        let fp = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(SeenCache::key(fp), 0x0123456789abcdef0123456789abcdef);
        assert_ne!(SeenCache::key("3:17,9:4"), SeenCache::key("3:17,9:5"));
    }

    #[test]
    fn bounded_by_two_generations() {
        let mut c = SeenCache::new(4);
        for k in 0..4u128 {
            c.insert(k);
        }
        // 0 and 1 became the previous generation at the third insert; the fifth
        // drops them.
        assert!((0..4).all(|k| c.contains(k)));
        c.insert(4);
        c.insert(5);
        assert!(!c.contains(0) && !c.contains(1));
        assert!((2..6).all(|k| c.contains(k)));
        assert!(c.len() <= 4);
    }

    #[test]
    fn zero_caches_nothing() {
        let mut c = SeenCache::new(0);
        c.insert(1);
        assert!(!c.contains(1) && c.is_empty());
    }
}
