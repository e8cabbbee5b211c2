//! Dupefilters (`DUPEFILTER_CLASS`): the [`DupeFilter`] seam and Scrapy's two built-ins,
//! [`BaseDupeFilter`] (filters nothing) and [`RfpDupeFilter`] (an in-memory set of
//! request fingerprints — the 20 bytes, not hex strings — with Scrapy's logging: the
//! first duplicate is logged with "no more duplicates will be shown", every one with
//! `DUPEFILTER_DEBUG`).
//!
//! The contract is asynchronous where it must be: `request_seen` answers at once
//! ([`Seen::New`], [`Seen::Duplicate`]) when the answer is local, or with a
//! [`Seen::Later`] Deferred when it is not (a Redis `SADD`); `open` and `close` return
//! Deferreds. The memory filter never allocates a Deferred.

use std::rc::Rc;

use crate::crawl::base::settings::Settings;
use crate::crawl::base::stats::StatsCollector;
use crate::crawl::http::fingerprint::{RequestFingerprinter, ScrapyRequestFingerprinter};
use crate::crawl::http::request::{Method, Request};
use crate::defer::{Deferred, Failure};

/// A dupefilter's answer to "was this request seen?".
#[derive(Debug)]
pub enum Seen {
    /// Not seen before (and now recorded).
    New,
    /// Seen before: drop it.
    Duplicate,
    /// The answer comes later: `true` means seen before.
    Later(Deferred<bool>),
}

/// What a dupefilter does (Scrapy's `BaseDupeFilter` interface).
pub trait DupeFilter {
    /// The spider is opening.
    fn open(&mut self) -> Deferred<()> {
        crate::defer::succeed(())
    }

    /// Whether `request` was seen before; records it if not.
    fn request_seen(&mut self, request: &Request) -> Seen;

    /// A hint: `requests` are about to be checked, in this order (the requests of one
    /// callback's output). A filter may start work on them —
    /// [`RfpDupeFilter`] fingerprints them and starts loading their seen-set slots
    /// together. What [`request_seen`](Self::request_seen) answers does not change.
    fn prefetch(&mut self, requests: &mut dyn Iterator<Item = &Request>) {
        let _ = requests;
    }

    /// The spider is closing with `reason`.
    fn close(&mut self, reason: &str) -> Deferred<()> {
        let _ = reason;
        crate::defer::succeed(())
    }

    /// Logs a filtered request and counts it (`dupefilter/filtered`).
    fn log(&mut self, request: &Request, stats: &dyn StatsCollector) {
        let _ = request;
        stats.inc("dupefilter/filtered");
    }

    /// Fingerprints held, when the filter knows (for monitoring and memory reports).
    fn fingerprint_count(&self) -> Option<usize> {
        None
    }

    /// The filter as `Any`, so a scheduler that knows a concrete filter can reach it:
    /// the Redis scheduler folds a Redis dupefilter's check into the script that
    /// pushes the request (one atomic step instead of two round trips).
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
}

/// Scrapy's `BaseDupeFilter`: every request is new.
#[derive(Debug, Default, Clone, Copy)]
pub struct BaseDupeFilter;

impl DupeFilter for BaseDupeFilter {
    fn request_seen(&mut self, _request: &Request) -> Seen {
        Seen::New
    }
}

pub use crate::crawl::util::seen::{BloomFilter, FingerprintSet};

/// Scrapy's `RFPDupeFilter`. With a JOBDIR, its seen set is the job's committed
/// fingerprints, loaded when it opens.
pub struct RfpDupeFilter {
    seen: FingerprintSet,
    debug: bool,
    logged: bool,
    fingerprinter: Rc<dyn RequestFingerprinter>,
    job: Option<std::rc::Rc<crate::crawl::jobdir::Job>>,
    prefetched: Prefetched,
}

/// The fingerprints [`DupeFilter::prefetch`] computed, with what they were computed
/// from (method and URL; the body was empty and no header counts), looked up by
/// `request_seen` from the last match on: a request with that method and URL string
/// has that fingerprint, whatever happened in between. The entries' buffers are
/// reused from one prefetch to the next.
#[derive(Default)]
struct Prefetched {
    entries: Vec<(Method, String, [u8; 20])>,
    len: usize,
    next: usize,
}

/// Most requests fingerprinted by one prefetch (the rest are fingerprinted when
/// checked).
const PREFETCH_MAX: usize = 64;
/// Longest URL kept by a prefetch.
const PREFETCH_URL_MAX: usize = 512;

impl Prefetched {
    /// The fingerprint of `request` if a prefetch computed it.
    fn take(&mut self, request: &Request) -> Option<[u8; 20]> {
        if self.next >= self.len || !request.body().is_empty() {
            return None;
        }
        let url = request.url_str();
        let method = request.method();
        let at = self.entries[self.next..self.len]
            .iter()
            .position(|(m, u, _)| u == url && m == method)?
            + self.next;
        self.next = at + 1;
        Some(self.entries[at].2)
    }
}

impl std::fmt::Debug for RfpDupeFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RfpDupeFilter")
            .field("seen", &self.seen.len())
            .finish_non_exhaustive()
    }
}

impl RfpDupeFilter {
    /// A filter reading `DUPEFILTER_DEBUG`.
    ///
    /// # Errors
    ///
    /// An invalid setting.
    pub fn from_settings(settings: &Settings) -> Result<Self, Failure> {
        Ok(Self {
            seen: FingerprintSet::default(),
            debug: settings.get_bool("DUPEFILTER_DEBUG")?,
            logged: false,
            fingerprinter: Rc::new(ScrapyRequestFingerprinter::default()),
            job: None,
            prefetched: Prefetched::default(),
        })
    }

    /// Fingerprints with the crawl's `REQUEST_FINGERPRINTER_CLASS`.
    pub fn with_fingerprinter(mut self, fingerprinter: Rc<dyn RequestFingerprinter>) -> Self {
        self.fingerprinter = fingerprinter;
        self
    }

    /// Loads the seen set from `job` when the filter opens.
    pub fn with_job(mut self, job: Option<std::rc::Rc<crate::crawl::jobdir::Job>>) -> Self {
        self.job = job;
        self
    }

    /// Records a fingerprint computed elsewhere; `true` if it was already there.
    pub fn seen_fingerprint(&mut self, fp: [u8; 20]) -> bool {
        !self.seen.insert(fp)
    }

    /// How many fingerprints are stored.
    pub fn fingerprints(&self) -> usize {
        self.seen.len()
    }
}

impl DupeFilter for RfpDupeFilter {
    fn open(&mut self) -> Deferred<()> {
        if let Some(job) = self.job.clone() {
            let seen = &mut self.seen;
            if let Err(f) = job.for_each_fingerprint(|fp| {
                seen.insert(*fp);
            }) {
                return crate::defer::fail(f);
            }
            if !seen.is_empty() {
                log::info!("Loaded {} request fingerprints from the JOBDIR", seen.len());
            }
        }
        crate::defer::succeed(())
    }

    fn request_seen(&mut self, request: &Request) -> Seen {
        let fp = match self.prefetched.take(request) {
            Some(fp) => fp,
            None => self.fingerprinter.fingerprint(request),
        };
        if self.seen.insert(fp) {
            Seen::New
        } else {
            Seen::Duplicate
        }
    }

    fn prefetch(&mut self, requests: &mut dyn Iterator<Item = &Request>) {
        let p = &mut self.prefetched;
        (p.len, p.next) = (0, 0);
        if !self.fingerprinter.depends_on_method_and_url_only() {
            // Headers (or whatever a fingerprinter of yours reads) count: the method
            // and URL do not decide the fingerprint.
            return;
        }
        for request in requests {
            if p.len == PREFETCH_MAX {
                break;
            }
            let url = request.url_str();
            if !request.body().is_empty() || url.len() > PREFETCH_URL_MAX {
                continue;
            }
            let fp = self.fingerprinter.fingerprint(request);
            match p.entries.get_mut(p.len) {
                Some((m, u, f)) => {
                    m.clone_from(request.method());
                    u.clear();
                    u.push_str(url);
                    *f = fp;
                }
                None => p
                    .entries
                    .push((request.method().clone(), url.to_owned(), fp)),
            }
            p.len += 1;
        }
        self.seen
            .prefetch(p.entries[..p.len].iter().map(|(_, _, fp)| fp));
    }

    fn fingerprint_count(&self) -> Option<usize> {
        Some(self.seen.len())
    }

    fn log(&mut self, request: &Request, stats: &dyn StatsCollector) {
        if self.debug {
            let referer = request.headers().get_str("referer").unwrap_or("None");
            log::debug!("Filtered duplicate request: {request} (referer: {referer})");
        } else if !self.logged {
            log::debug!(
                "Filtered duplicate request: {request} - no more duplicates will be shown (see DUPEFILTER_DEBUG to show all duplicates)"
            );
            self.logged = true;
        }
        stats.inc("dupefilter/filtered");
    }
}

/// An opt-in dupefilter on a [`BloomFilter`] (`DUPEFILTER_CLASS =
/// "trawl.BloomDupeFilter"`): fixed memory for `BLOOMFILTER_CAPACITY` fingerprints
/// (default 10,000,000: 24 MB) at `BLOOMFILTER_ERROR_RATE` (default 1e-4), for crawls of
/// hundreds of millions of URLs (100,000,000 at 1e-4: 240 MB). A false positive drops
/// a request that was never fetched; the estimated rate is in the stats
/// (`dupefilter/bloom_estimated_fpr`, parts per million, updated as it grows). With a
/// JOBDIR it is rebuilt from the job's fingerprints when it opens.
pub struct BloomDupeFilter {
    filter: BloomFilter,
    fingerprinter: Rc<dyn RequestFingerprinter>,
    job: Option<std::rc::Rc<crate::crawl::jobdir::Job>>,
    stats: std::rc::Weak<dyn StatsCollector>,
    logged: bool,
}

impl BloomDupeFilter {
    /// A filter from `BLOOMFILTER_CAPACITY` and `BLOOMFILTER_ERROR_RATE`.
    ///
    /// # Errors
    ///
    /// Invalid settings.
    pub fn from_context(
        ctx: &std::rc::Rc<crate::crawl::context::CrawlContext>,
    ) -> Result<Self, Failure> {
        let s = &ctx.settings;
        let capacity = u64::try_from(s.get_int("BLOOMFILTER_CAPACITY")?).unwrap_or(0);
        let rate = s.get_float("BLOOMFILTER_ERROR_RATE")?;
        let filter = BloomFilter::new(capacity, rate).map_err(Failure::msg)?;
        let (m, k) = BloomFilter::dimensions(capacity, rate).map_err(Failure::msg)?;
        log::info!(
            "BloomDupeFilter: {capacity} fingerprints at {rate}: {} MB, {k} probes",
            m / 8 / 1_000_000
        );
        Ok(Self {
            filter,
            fingerprinter: ctx.fingerprinter(),
            job: ctx.job().cloned(),
            stats: std::rc::Rc::downgrade(&ctx.stats),
            logged: false,
        })
    }

    fn report(&self) {
        if let Some(stats) = self.stats.upgrade() {
            stats.set_value(
                "dupefilter/bloom_estimated_fpr",
                serde_json::Value::from((self.filter.estimated_fpr() * 1e6).round() as u64),
            );
        }
    }
}

impl std::fmt::Debug for BloomDupeFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BloomDupeFilter")
            .field("filter", &self.filter)
            .finish_non_exhaustive()
    }
}

impl DupeFilter for BloomDupeFilter {
    fn open(&mut self) -> Deferred<()> {
        if let Some(job) = self.job.clone() {
            let filter = &mut self.filter;
            if let Err(f) = job.for_each_fingerprint(|fp| {
                filter.insert(fp);
            }) {
                return crate::defer::fail(f);
            }
        }
        self.report();
        crate::defer::succeed(())
    }

    fn request_seen(&mut self, request: &Request) -> Seen {
        let fp = self.fingerprinter.fingerprint(request);
        if self.filter.insert(&fp) {
            if self.filter.shape().2.is_multiple_of(4096) {
                self.report();
            }
            Seen::New
        } else {
            Seen::Duplicate
        }
    }

    fn close(&mut self, _reason: &str) -> Deferred<()> {
        self.report();
        crate::defer::succeed(())
    }

    fn log(&mut self, request: &Request, stats: &dyn StatsCollector) {
        if !self.logged {
            log::debug!(
                "Filtered duplicate request: {request} - no more duplicates will be shown (BloomDupeFilter)"
            );
            self.logged = true;
        }
        stats.inc("dupefilter/filtered");
    }

    fn fingerprint_count(&self) -> Option<usize> {
        Some(self.filter.shape().2 as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(url: &str) -> Request {
        Request::get(url).expect("url")
    }

    /// A filter that was told what comes answers every check as one that was not:
    /// whatever is checked in the end (other URLs, other methods, a body, requests
    /// left out or taken in another order, more than a prefetch keeps).
    #[test]
    fn a_prefetch_changes_no_answer() {
        let settings = Settings::default();
        let mut told = RfpDupeFilter::from_settings(&settings).expect("filter");
        let mut plain = RfpDupeFilter::from_settings(&settings).expect("filter");
        let check = |told: &mut RfpDupeFilter, plain: &mut RfpDupeFilter, r: &Request| {
            let (a, b) = (told.request_seen(r), plain.request_seen(r));
            assert_eq!(
                matches!(a, Seen::New),
                matches!(b, Seen::New),
                "{r:?} answered differently after a prefetch"
            );
            matches!(a, Seen::New)
        };
        let page: Vec<Request> = (0..100)
            .map(|i| get(&format!("http://example.com/p/{}", i % 40)))
            .collect();
        told.prefetch(&mut page.iter());
        // The same URLs, some POSTed (same URL, another fingerprint), one with a
        // body, one changed, some skipped, in order and out of it.
        let mut news = 0;
        for (i, r) in page.iter().enumerate() {
            let r = match i % 7 {
                1 => r.clone().with_method("POST"),
                2 => r.clone().with_body(b"x".to_vec()),
                3 => get(&format!("{}?changed", r.url_str())),
                5 => continue,
                _ => r.clone(),
            };
            news += usize::from(check(&mut told, &mut plain, &r));
        }
        for r in page.iter().rev() {
            check(&mut told, &mut plain, r);
        }
        assert!(news > 40, "{news} new requests");
        // A prefetch of requests already seen, then a GET and a POST of one of them.
        told.prefetch(&mut page.iter().take(3));
        let post = page[0].clone().with_method("POST").with_body(Vec::new());
        assert!(!check(&mut told, &mut plain, &page[0]));
        check(&mut told, &mut plain, &post);
        assert_eq!(told.fingerprints(), plain.fingerprints());
    }
}
