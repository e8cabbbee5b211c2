//! `RFPDupeFilter`: an in-memory set of request fingerprints (the 20 bytes, not hex
//! strings), with Scrapy's logging: the first duplicate is logged with "no more
//! duplicates will be shown", every one with `DUPEFILTER_DEBUG`.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

use super::fingerprint::{FingerprintOptions, fingerprint};
use super::request::Request;
use super::settings::Settings;
use super::stats::Stats;
use crate::defer::Failure;

/// Hashes a fingerprint by its first 8 bytes: SHA1 output is already uniform.
#[derive(Default, Debug)]
pub struct FingerprintHasher(u64);

impl Hasher for FingerprintHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.0 ^= u64::from_le_bytes(b);
        }
    }
}

/// A set of fingerprints.
pub type FingerprintSet = HashSet<[u8; 20], BuildHasherDefault<FingerprintHasher>>;

/// Scrapy's `RFPDupeFilter`.
#[derive(Debug)]
pub struct RfpDupeFilter {
    seen: FingerprintSet,
    debug: bool,
    logged: bool,
    options: FingerprintOptions,
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
            options: FingerprintOptions::default(),
        })
    }

    /// Whether the request was seen before; records it if not.
    pub fn request_seen(&mut self, request: &Request) -> bool {
        !self.seen.insert(fingerprint(request, &self.options))
    }

    /// Records a fingerprint computed elsewhere; `true` if it was already there.
    pub fn seen_fingerprint(&mut self, fp: [u8; 20]) -> bool {
        !self.seen.insert(fp)
    }

    /// How many fingerprints are stored.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    /// Whether no fingerprint is stored.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// Logs a filtered request and counts it (`dupefilter/filtered`).
    pub fn log(&mut self, request: &Request, stats: &Stats) {
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

    /// The crawl ended.
    pub fn close(&mut self, _reason: &str) {}
}
