//! The shared dupefilters.
//!
//! * [`RedisDupeFilter`] (`trawl.RedisDupeFilter`, alias
//!   `scrapy_redis.dupefilter.RFPDupeFilter`): a SET at `SCHEDULER_DUPEFILTER_KEY`
//!   (`%(spider)s:dupefilter`) of 40-character hex fingerprints computed exactly as
//!   scrapy-redis 0.9.1 does — SHA-1 of `json.dumps({"body": hex, "method", "url":
//!   canonicalize_url(url)}, sort_keys=True)`, Scrapy's document without its
//!   `headers` key — so trawl and Python workers share one filter.
//! * [`RedisBloomDupeFilter`] (`trawl.RedisBloomDupeFilter`): the same fingerprints
//!   into a Bloom filter on plain Redis bitmaps, `BLOOMFILTER_CAPACITY` (100,000,000)
//!   at `BLOOMFILTER_ERROR_RATE` (0.0001): about 2.4 bytes per URL instead of ~90 for
//!   the SET. Bits live in blocks of 2^28 bits (32 MiB strings,
//!   `<key>:bloom:<n>`), checked and set by one script, so two workers never both
//!   see a URL as new. The configured rate and the estimate for the URLs stored so
//!   far are reported in the stats (`dupefilter/bloom/*`).
//!
//! Under the [`RedisScheduler`](super::RedisScheduler) the check runs inside the
//! script that pushes the request (one atomic step); with another scheduler each
//! `request_seen` is one `SADD` (or script) answered later.

use std::rc::Rc;

use sha1::{Digest, Sha1};

use super::shared::{
    SCHEDULER_DUPEFILTER_KEY, SharedRedis, format_key, setting_str, shared_client,
};
use crate::crawl::context::CrawlContext;
use crate::crawl::dupefilter::{BloomFilter, DupeFilter, Seen};
use crate::crawl::fingerprint::{
    DEFAULT_FINGERPRINTER, RequestFingerprinter, canonical_url, put_hex, to_hex,
};
use crate::crawl::pyjson::{AsciiSink, push_str};
use crate::crawl::request::Request;
use crate::crawl::stats::StatsCollector;
use crate::defer::{Deferred, Failure};
use crate::util::push_hex;

/// Bits per Bloom block (a Redis string of 32 MiB).
pub const BLOOM_BLOCK_BITS: u64 = 1 << 28;

/// The JSON text scrapy-redis 0.9.1 hashes for `request`.
pub fn scrapy_redis_fingerprint_json(request: &Request) -> String {
    let mut out = String::with_capacity(48 + request.body().len() * 2);
    write_scrapy_redis_document(&mut out, request);
    out
}

fn write_scrapy_redis_document(out: &mut impl AsciiSink, request: &Request) {
    let url = canonical_url(request, false);
    out.put("{\"body\": \"");
    put_hex(out, request.body());
    out.put("\", \"method\": ");
    let mut rest = String::with_capacity(32 + url.len());
    push_str(&mut rest, request.method().as_str(), true);
    rest.push_str(", \"url\": ");
    push_str(&mut rest, &url, true);
    rest.push('}');
    out.put(&rest);
}

/// The 40-character fingerprint scrapy-redis 0.9.1 `SADD`s for `request` (the body's
/// hex is hashed as it is written, never held).
pub fn scrapy_redis_fingerprint(request: &Request) -> String {
    let mut hasher = Sha1::new();
    write_scrapy_redis_document(&mut hasher, request);
    let digest: [u8; 20] = hasher.finalize().into();
    let mut out = String::with_capacity(40);
    push_hex(&mut out, &digest);
    out
}

/// What a Redis dupefilter stores.
#[derive(Debug, Clone, PartialEq)]
pub enum FilterKind {
    /// The SET of hex fingerprints.
    Set,
    /// A Bloom filter of `bits` bits and `hashes` probes.
    Bloom {
        /// Total bits (`m`).
        bits: u64,
        /// Probes per fingerprint (`k`).
        hashes: u32,
        /// `BLOOMFILTER_CAPACITY`.
        capacity: u64,
        /// `BLOOMFILTER_ERROR_RATE`.
        rate: f64,
    },
}

impl FilterKind {
    /// The Bloom blocks (0 for a SET).
    pub fn blocks(&self) -> u64 {
        match self {
            Self::Set => 0,
            Self::Bloom { bits, .. } => bits.div_ceil(BLOOM_BLOCK_BITS),
        }
    }

    /// The script argument for `request`: the hex fingerprint, or the Bloom probes
    /// as `block:bit,block:bit,...`.
    /// With `custom` (a `REQUEST_FINGERPRINTER_CLASS` of the user's), its fingerprint
    /// instead of scrapy-redis's.
    pub fn argument(&self, request: &Request, custom: Option<&dyn RequestFingerprinter>) -> String {
        match (self, custom) {
            (Self::Set, None) => scrapy_redis_fingerprint(request),
            (Self::Set, Some(f)) => to_hex(&f.fingerprint(request)),
            (Self::Bloom { bits, hashes, .. }, custom) => {
                let fp: [u8; 20] = match custom {
                    Some(f) => f.fingerprint(request),
                    None => Sha1::digest(scrapy_redis_fingerprint_json(request).as_bytes()).into(),
                };
                bloom_probes(&fp, *bits, *hashes)
            }
        }
    }

    /// The name the scripts use.
    pub fn script_name(&self) -> &'static str {
        match self {
            Self::Set => "set",
            Self::Bloom { .. } => "bloom",
        }
    }
}

/// The probes of `fp` in a filter of `bits` bits with `hashes` probes (double hashing
/// as in [`BloomFilter`]), as `block:bit` pairs.
pub fn bloom_probes(fp: &[u8; 20], bits: u64, hashes: u32) -> String {
    let word = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&fp[i..i + 8]);
        u64::from_le_bytes(b)
    };
    let (h1, h2) = (word(0), word(8) | 1);
    let mut out = String::with_capacity(hashes as usize * 14);
    for i in 0..u64::from(hashes) {
        let idx = h1.wrapping_add(i.wrapping_mul(h2)) % bits;
        if i > 0 {
            out.push(',');
        }
        out.push_str(&(idx / BLOOM_BLOCK_BITS).to_string());
        out.push(':');
        out.push_str(&(idx % BLOOM_BLOCK_BITS).to_string());
    }
    out
}

/// A Redis-backed dupefilter (the SET, or with [`FilterKind::Bloom`] the Bloom
/// variant).
pub struct RedisDupeFilter {
    shared: Rc<SharedRedis>,
    key: String,
    kind: FilterKind,
    debug: bool,
    logged: bool,
    stats: Rc<dyn StatsCollector>,
    custom: Option<Rc<dyn RequestFingerprinter>>,
}

impl std::fmt::Debug for RedisDupeFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisDupeFilter")
            .field("key", &self.key)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl RedisDupeFilter {
    /// The SET filter from the crawl's settings (`SCHEDULER_DUPEFILTER_KEY`,
    /// `DUPEFILTER_DEBUG`).
    ///
    /// # Errors
    ///
    /// The Redis settings are malformed.
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<Self, Failure> {
        Self::build(ctx, FilterKind::Set)
    }

    fn build(ctx: &Rc<CrawlContext>, kind: FilterKind) -> Result<Self, Failure> {
        let template = setting_str(
            &ctx.settings,
            "SCHEDULER_DUPEFILTER_KEY",
            SCHEDULER_DUPEFILTER_KEY,
        )?;
        Ok(Self {
            shared: shared_client(ctx)?,
            key: format_key(&template, ctx.spider_name()),
            kind,
            debug: ctx.settings.get_bool("DUPEFILTER_DEBUG")?,
            logged: false,
            stats: ctx.stats.clone(),
            // The default keeps scrapy-redis's fingerprint (Python workers share the
            // set); a fingerprinter of the user's replaces it.
            custom: (ctx.fingerprinter_name() != DEFAULT_FINGERPRINTER)
                .then(|| ctx.fingerprinter()),
        })
    }

    /// The user's fingerprinter, when `REQUEST_FINGERPRINTER_CLASS` names one.
    pub fn fingerprinter(&self) -> Option<Rc<dyn RequestFingerprinter>> {
        self.custom.clone()
    }

    /// The key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// What it stores.
    pub fn kind(&self) -> &FilterKind {
        &self.kind
    }

    /// Logs a filtered request the way Scrapy's filter does and counts it.
    pub fn log_filtered(&mut self, url: &str) {
        if self.debug {
            log::debug!("Filtered duplicate request: <GET {url}>");
        } else if !self.logged {
            log::debug!(
                "Filtered duplicate request: <GET {url}> - no more duplicates will be \
                 shown (see DUPEFILTER_DEBUG to show all duplicates)"
            );
            self.logged = true;
        }
        self.stats.inc("dupefilter/filtered");
    }

    fn report_bloom(&self) {
        if let FilterKind::Bloom {
            bits,
            hashes,
            capacity,
            rate,
        } = self.kind
        {
            let s = &self.stats;
            s.set_value("dupefilter/bloom/capacity", capacity.into());
            s.set_value("dupefilter/bloom/error_rate", rate.into());
            s.set_value("dupefilter/bloom/bits", bits.into());
            s.set_value("dupefilter/bloom/hashes", hashes.into());
        }
    }
}

impl DupeFilter for RedisDupeFilter {
    fn open(&mut self) -> Deferred<()> {
        self.report_bloom();
        crate::defer::succeed(())
    }

    fn request_seen(&mut self, request: &Request) -> Seen {
        let arg = self.kind.argument(request, self.custom.as_deref());
        let d = match self.kind {
            FilterKind::Set => {
                self.shared
                    .client
                    .command(&[b"SADD".as_ref(), self.key.as_bytes(), arg.as_bytes()])
            }
            FilterKind::Bloom { .. } => {
                let scripts = super::scripts::scripts();
                self.shared.client.load_script(&scripts.bloom);
                self.shared
                    .client
                    .eval(&scripts.bloom, &[self.key.as_bytes()], &[arg.as_bytes()])
            }
        };
        Seen::Later(d.map(|v| v.as_int() == Some(0)))
    }

    fn close(&mut self, _reason: &str) -> Deferred<()> {
        if let FilterKind::Bloom { bits, hashes, .. } = self.kind {
            let stats = self.stats.clone();
            let d = self
                .shared
                .client
                .command(&[b"GET".as_ref(), format!("{}:count", self.key).as_bytes()]);
            return d.then(move |r| {
                let n = r.ok().and_then(|v| v.as_int()).unwrap_or(0).max(0) as f64;
                let fpr = (1.0 - (-f64::from(hashes) * n / bits as f64).exp()).powi(hashes as i32);
                stats.set_value("dupefilter/bloom/stored", (n as u64).into());
                stats.set_value("dupefilter/bloom/estimated_error_rate", fpr.into());
                Ok::<(), Failure>(())
            });
        }
        crate::defer::succeed(())
    }

    fn log(&mut self, request: &Request, _stats: &dyn StatsCollector) {
        self.log_filtered(request.url().as_str());
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

/// The Bloom variant: a [`RedisDupeFilter`] with [`FilterKind::Bloom`] sized from
/// `BLOOMFILTER_CAPACITY` and `BLOOMFILTER_ERROR_RATE`.
#[derive(Debug)]
pub struct RedisBloomDupeFilter;

impl RedisBloomDupeFilter {
    /// Builds the filter.
    ///
    /// # Errors
    ///
    /// The capacity or rate is invalid, or the Redis settings are malformed.
    #[allow(clippy::new_ret_no_self)]
    pub fn from_context(ctx: &Rc<CrawlContext>) -> Result<RedisDupeFilter, Failure> {
        let s = &ctx.settings;
        let capacity = if s.get("BLOOMFILTER_CAPACITY").is_some() {
            s.get_int("BLOOMFILTER_CAPACITY")?.max(1) as u64
        } else {
            100_000_000
        };
        let rate = if s.get("BLOOMFILTER_ERROR_RATE").is_some() {
            s.get_float("BLOOMFILTER_ERROR_RATE")?
        } else {
            1e-4
        };
        let (bits, hashes) = BloomFilter::dimensions(capacity, rate).map_err(Failure::msg)?;
        RedisDupeFilter::build(
            ctx,
            FilterKind::Bloom {
                bits,
                hashes,
                capacity,
                rate,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probes spread as a Bloom filter's must: the measured false-positive rate
    /// of 10,000 fresh URLs against 10,000 stored stays near the configured one.
    #[test]
    fn probes_keep_the_configured_rate() {
        let (bits, hashes) = BloomFilter::dimensions(10_000, 1e-3).expect("dims");
        let kind = FilterKind::Bloom {
            bits,
            hashes,
            capacity: 10_000,
            rate: 1e-3,
        };
        let mut set = std::collections::HashSet::new();
        let probe = |i: usize, phase: usize| {
            let r = Request::get(&format!("http://h.test/{phase}/{i}")).expect("url");
            kind.argument(&r, None)
        };
        for i in 0..10_000 {
            for p in probe(i, 0).split(',') {
                set.insert(p.to_owned());
            }
        }
        let fp = (0..10_000)
            .filter(|&i| probe(i, 1).split(',').all(|p| set.contains(p)))
            .count();
        assert!(fp < 30, "{fp} false positives in 10,000 (configured 0.1%)");
    }
}
