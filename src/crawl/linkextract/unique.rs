//! `LinkExtractor`'s `unique`: the set of URLs already kept on a page, exact as
//! Scrapy's `unique_list` (string equality) and linear on any page.

use super::link::Link;

/// The URLs of the links kept so far, compared exactly as Scrapy's `unique_list`
/// compares them (string equality), in linear time whatever the page holds.
///
/// A set of the URLs' cheap unseeded hashes answers "new" for most links in one probe;
/// a hit (a duplicate, or two URLs with one hash) is confirmed by comparing the URL
/// with the links kept. Those comparisons are counted: past a few per kept link (a
/// page of many duplicates, or of URLs made to collide) the set becomes an index — a
/// hash seeded per process and per set, which a page cannot make collide, mapping to
/// the first kept link with it — and a hit compares two strings. Two different URLs
/// with one seeded hash (by chance: ~n² / 2⁶⁴ for n links) fall back to comparing the
/// URL with every link kept.
#[derive(Clone, Default)]
pub(super) struct UrlSet {
    unseeded: crate::util::FxHashSet<u64>,
    /// Comparisons made on hits of `unseeded`.
    compared: usize,
    /// Seeded hash → index of the first kept link with it, once hits cost too much.
    index: Option<crate::util::FxHashMap<u64, u32>>,
    hasher: foldhash::fast::RandomState,
}

impl UrlSet {
    /// Whether `url` is not the URL of a link in `kept`; if so it is recorded as the
    /// URL of the link the caller pushes next (`kept[kept.len()]`).
    #[inline(always)]
    pub(super) fn insert(&mut self, url: &str, kept: &[Link]) -> bool {
        if self.index.is_none() && self.unseeded.insert(self.unseeded_hash(url)) {
            return true;
        }
        self.confirm(url, kept)
    }

    /// [`insert`](Self::insert) past a hit of the unseeded hashes, or with the index.
    #[inline(never)]
    fn confirm(&mut self, url: &str, kept: &[Link]) -> bool {
        if self.index.is_none() {
            self.compared += kept.len();
            if self.compared <= 4 * kept.len() + 256 {
                return !kept.iter().any(|l| l.url == url);
            }
            self.build_index(kept);
        }
        let h = self.seeded_hash(url);
        let index = self.index.get_or_insert_with(Default::default);
        let Some(first) = index.insert(h, to_u32(kept.len())) else {
            return true;
        };
        index.insert(h, first);
        if kept.get(first as usize).is_some_and(|l| l.url == url) {
            return false;
        }
        !kept.iter().any(|l| l.url == url)
    }

    /// Indexes `kept` (distinct URLs) by their seeded hashes: once per page, linear.
    #[cold]
    fn build_index(&mut self, kept: &[Link]) {
        let mut index = crate::util::FxHashMap::default();
        for (i, link) in kept.iter().enumerate() {
            index
                .entry(self.seeded_hash(&link.url))
                .or_insert(to_u32(i));
        }
        self.index = Some(index);
    }

    #[inline(always)]
    fn unseeded_hash(&self, url: &str) -> u64 {
        #[cfg(test)]
        if COLLIDE.get() >= 1 {
            return 0;
        }
        crate::util::fx_hash(url.as_bytes())
    }

    fn seeded_hash(&self, url: &str) -> u64 {
        #[cfg(test)]
        if COLLIDE.get() >= 2 {
            return 0;
        }
        std::hash::BuildHasher::hash_one(&self.hasher, url)
    }

    /// Empty, and back on the unseeded hash (for the next page).
    pub(super) fn clear(&mut self) {
        self.unseeded.clear();
        self.compared = 0;
        self.index = None;
    }

    pub(super) fn capacity(&self) -> usize {
        self.unseeded.capacity()
    }
}

/// A kept link's index as the set stores it.
fn to_u32(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

#[cfg(test)]
thread_local! {
    /// Test-only collisions: 1, every URL's unseeded hash is alike; 2, the seeded
    /// hash's too.
    pub(super) static COLLIDE: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colliding_hits_past_the_budget_switch_to_the_seeded_index() {
        let links: Vec<Link> = (0..2000)
            .map(|i| Link {
                url: format!("http://example.com/{i}"),
                text: String::new(),
                fragment: String::new(),
                nofollow: false,
            })
            .collect();
        COLLIDE.set(1);
        let mut set = UrlSet::default();
        let mut kept = Vec::new();
        for link in links.iter().chain(&links) {
            if set.insert(&link.url, &kept) {
                kept.push(link.clone());
            }
        }
        COLLIDE.set(0);
        assert_eq!(kept.len(), 2000);
        assert!(
            set.index.is_some(),
            "colliding hits switch to the seeded index"
        );
        assert!(set.compared <= 4 * kept.len() + 256 + kept.len());
    }
}
