//! Small shared helpers with no place in a layer: a fast non-cryptographic hasher for
//! hot-path maps keyed by short strings (stats keys, per-page link sets), the one
//! base64 (RFC 4648) of the crate, Python's float repr, the process's peak RSS,
//! per-thread pools (byte buffers for response bodies; `html` keeps its own), and the
//! word-at-a-time byte tests of the byte scanners (`swar`). Nothing here depends on
//! any other module of the crate. (Percent-decoding is the `percent-encoding` crate's,
//! which `url` brings.)

use std::cell::RefCell;
use std::hash::{BuildHasherDefault, Hasher};

/// The Firefox/rustc "Fx" hash: a multiply-rotate per word. Not DoS-resistant, so only
/// for keys trawl chooses or that are bounded per page.
#[derive(Debug, Default, Clone, Copy)]
pub struct FxHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    /// Whole words, then the last one to eight bytes as one word read without a
    /// byte copy: the last eight bytes (overlapping the words before) when there are
    /// eight, else two overlapping 4-byte reads or three single bytes, with the length
    /// in the top bits (a copy of the tail into a zeroed word was a `memcpy` call per
    /// key).
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let word = |b: &[u8]| swar::word_at(b, 0).unwrap_or(0);
        let half = |b: &[u8]| {
            let mut w = [0u8; 4];
            w.copy_from_slice(b);
            u64::from(u32::from_le_bytes(w))
        };
        let n = bytes.len();
        if n > 8 {
            let mut chunks = bytes[..n - 1].chunks_exact(8);
            for c in &mut chunks {
                self.add(word(c));
            }
            self.add(word(&bytes[n - 8..]));
        } else if n == 8 {
            self.add(word(bytes));
        } else if n >= 4 {
            self.add((half(&bytes[..4]) | half(&bytes[n - 4..]) << 32) ^ (n as u64) << 61);
        } else if n > 0 {
            let w =
                u64::from(bytes[0]) | u64::from(bytes[n / 2]) << 8 | u64::from(bytes[n - 1]) << 16;
            self.add(w | (n as u64) << 61);
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A hash map for keys that come from the network — hosts and download slots, robots.txt
/// origins, cookie jar names — hashed with foldhash's fast hasher, randomly seeded per
/// process and per map (what `hashbrown` uses by default): a few instructions a short
/// key where the standard library's SipHash-1-3 takes ~200, and, unlike [`FxHasher`],
/// no fixed set of keys that collide in every map.
pub type SeededMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A `BuildHasher` for [`FxHasher`].
pub type FxBuildHasher = BuildHasherDefault<FxHasher>;

/// A `HashMap` with [`FxHasher`].
pub type FxHashMap<K, V> = std::collections::HashMap<K, V, FxBuildHasher>;

/// A `HashSet` with [`FxHasher`].
pub type FxHashSet<T> = std::collections::HashSet<T, FxBuildHasher>;

/// The [`FxHasher`] hash of some bytes.
pub fn fx_hash(bytes: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(bytes);
    h.finish()
}

thread_local! {
    /// Byte buffers of dropped responses, reused for the next body on this thread
    /// (a crawl receives body after body of a few KiB each: large blocks take the
    /// allocator's slow path). Bounded in count and in the size of what is kept.
    static BYTE_POOL: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// Buffers [`BYTE_POOL`] keeps.
const BYTE_POOL_BUFFERS: usize = 8;
/// The largest buffer it keeps.
const BYTE_POOL_MAX: usize = 256 << 10;

/// An item from the per-thread `pool`, or `T::default()` when it is empty (or in
/// use, or the thread is ending).
pub fn pool_take<T: Default>(pool: &'static std::thread::LocalKey<RefCell<Vec<T>>>) -> T {
    pool.try_with(|p| p.try_borrow_mut().ok().and_then(|mut p| p.pop()))
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Puts `item` into the per-thread `pool` unless it holds `max` items already (the
/// item is then dropped).
pub fn pool_give<T>(pool: &'static std::thread::LocalKey<RefCell<Vec<T>>>, item: T, max: usize) {
    let _ = pool.try_with(|p| {
        if let Ok(mut p) = p.try_borrow_mut()
            && p.len() < max
        {
            p.push(item);
        }
    });
}

/// An empty buffer: a recycled one when there is one.
pub fn take_buffer() -> Vec<u8> {
    pool_take(&BYTE_POOL)
}

/// Gives `buf` back for [`take_buffer`] (emptied), unless it is empty, too large, or
/// the pool is full.
pub fn recycle_buffer(mut buf: Vec<u8>) {
    if buf.capacity() == 0 || buf.capacity() > BYTE_POOL_MAX {
        return;
    }
    buf.clear();
    pool_give(&BYTE_POOL, buf, BYTE_POOL_BUFFERS);
}

/// Lower-case hex digits.
pub const HEX_LOWER: &[u8; 16] = b"0123456789abcdef";

/// Appends `bytes` as lower-case hex.
pub fn push_hex(out: &mut String, bytes: &[u8]) {
    out.reserve(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(HEX_LOWER[usize::from(b >> 4)]));
        out.push(char::from(HEX_LOWER[usize::from(b & 15)]));
    }
}

/// `bytes` as lower-case hex.
pub fn to_hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    push_hex(&mut s, bytes);
    s
}

/// The value of one hex digit (either case).
#[inline]
pub fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// The `N` bytes that exactly `2 * N` hex digits spell (`None` for anything else).
pub fn from_hex<const N: usize>(hex: &[u8]) -> Option<[u8; N]> {
    if hex.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (o, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        *o = (hex_digit(pair[0])? << 4) | hex_digit(pair[1])?;
    }
    Some(out)
}

/// Standard base64 (RFC 4648 §4, with padding): `Basic` credentials, binary request
/// bodies in JSON.
pub fn base64_encode(input: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(TABLE[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes base64 in the standard or the URL-safe alphabet (RFC 4648 §4 and §5),
/// padded or not, ignoring line breaks; `None` on any other character.
pub fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => break,
            b'\n' | b'\r' => continue,
            _ => return None,
        };
        acc = (acc << 6 | u32::from(v)) & 0xff_ffff;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// Peak resident set size of this process, in bytes (Linux `VmHWM`, what Scrapy's
/// `ru_maxrss` reports); `None` where `/proc` does not have it.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// w3lib's `strip_html5_whitespace`: space, tab, LF, CR and FF off both ends.
pub fn strip_html5_whitespace(text: &str) -> &str {
    text.trim_matches([' ', '\t', '\n', '\r', '\x0c'])
}

/// Python's `str.isspace`: Rust's `char::is_whitespace` and the four information
/// separators U+001C..U+001F.
pub fn python_isspace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.strip()`: [`python_isspace`] characters off both ends.
pub fn python_strip(text: &str) -> &str {
    text.trim_matches(python_isspace)
}

/// The first `n` characters of `text` (Python's `text[0:n]`), without decoding
/// characters: `n` characters take at least `n` bytes, so only the character starts
/// in the first `n` bytes are counted (a loop the compiler vectorises), then the
/// walk goes on byte by byte.
pub fn prefix_chars(text: &str, n: usize) -> &str {
    let bytes = text.as_bytes();
    if bytes.len() <= n {
        return text;
    }
    let head = &bytes[..n];
    if head.is_ascii() {
        return &text[..n];
    }
    // A character starts at every byte that is not a continuation byte (10xxxxxx).
    let is_start = |b: u8| (b as i8) >= -0x40;
    let mut chars = head.iter().filter(|&&b| is_start(b)).count();
    for (i, &b) in bytes.iter().enumerate().skip(n) {
        if is_start(b) {
            if chars == n {
                return &text[..i];
            }
            chars += 1;
        }
    }
    text
}

/// Word-at-a-time byte tests (SWAR), shared by the scanners that look at eight bytes
/// at once: the HTML tokenizer's [`memchr2_near`] and the JSON writers' escape scan.
pub(crate) mod swar {
    /// `0x01` in every byte.
    pub(crate) const LO: u64 = 0x0101_0101_0101_0101;
    /// `0x80` in every byte.
    pub(crate) const HI: u64 = 0x8080_8080_8080_8080;

    /// `b` in every byte of a word.
    #[inline]
    pub(crate) const fn splat(b: u8) -> u64 {
        LO * b as u64
    }

    /// The top bit of each byte of `x` that is below `n` (for bytes without their own
    /// top bit; bytes above the first flagged one may be flagged too — the lowest
    /// flag is exact). With `n` = 1: the zero bytes.
    #[inline]
    pub(crate) const fn below(x: u64, n: u8) -> u64 {
        x.wrapping_sub(splat(n)) & !x & HI
    }

    /// The top bit of each byte of `x` equal to `b` (the lowest flag is exact).
    #[inline]
    pub(crate) const fn eq(x: u64, b: u8) -> u64 {
        below(x ^ splat(b), 1)
    }

    /// The eight bytes at `i`, little-endian, if there are eight.
    #[inline]
    pub(crate) fn word_at(bytes: &[u8], i: usize) -> Option<u64> {
        let chunk = bytes.get(i..i.checked_add(8)?)?;
        let mut w = [0u8; 8];
        w.copy_from_slice(chunk);
        Some(u64::from_le_bytes(w))
    }
}

/// `memchr::memchr2(a, b, hay)`, for a match that is usually near: the first 16 bytes
/// are tested eight at a time in registers (a zero-byte test on `word ^ a` and
/// `word ^ b`), the rest goes to `memchr2`. The HTML tokenizer asks this of every
/// text and attribute value, most a few bytes long, where `memchr2`'s set-up and
/// dispatch cost more than the search.
#[inline]
pub fn memchr2_near(a: u8, b: u8, hay: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < 16 {
        let Some(x) = swar::word_at(hay, i) else {
            return hay
                .get(i..)?
                .iter()
                .position(|&c| c == a || c == b)
                .map(|p| i + p);
        };
        let hit = swar::eq(x, a) | swar::eq(x, b);
        if hit != 0 {
            return Some(i + (hit.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    memchr::memchr2(a, b, hay.get(i..)?).map(|p| i + p)
}

/// Whether `hay` contains `needle_lower` (lower-case ASCII), ASCII case ignored: each
/// 4 KiB of `hay` is lower-cased in one vectorised pass into a buffer the thread
/// keeps, and searched with `memchr::memmem` (SIMD, rare-byte prefilter), chunks
/// overlapping by the needle's length less one.
pub fn contains_ascii_ci(hay: &[u8], needle_lower: &[u8]) -> bool {
    let [found] = contains_each_ascii_ci(hay, [needle_lower]);
    found
}

/// [`contains_ascii_ci`] for several needles in one lower-casing pass: whether `hay`
/// contains each of `needles` (lower-case ASCII), in their order. A page's head is
/// asked for both `refresh` and `<base` at once (the meta refresh and the base URL).
pub fn contains_each_ascii_ci<const N: usize>(hay: &[u8], needles: [&[u8]; N]) -> [bool; N] {
    const CHUNK: usize = 4096;
    thread_local! {
        static LOWER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let mut found = needles.map(<[u8]>::is_empty);
    // Needles over half a chunk (none in the crate) are compared window by window.
    for (f, n) in found.iter_mut().zip(needles) {
        if n.len() > CHUNK / 2 {
            *f = hay.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n));
        }
    }
    let shortest = needles.iter().map(|n| n.len()).min().unwrap_or(0).max(1);
    let overlap = needles
        .iter()
        .map(|n| n.len())
        .filter(|&l| l <= CHUNK / 2)
        .max()
        .unwrap_or(1)
        .saturating_sub(1);
    let finders = needles.map(memchr::memmem::Finder::new);
    LOWER.with_borrow_mut(|buf| {
        let mut start = 0;
        while !found.iter().all(|&f| f) && hay.len() - start >= shortest {
            let end = (start + CHUNK).min(hay.len());
            buf.clear();
            buf.extend(hay[start..end].iter().map(u8::to_ascii_lowercase));
            for (f, finder) in found.iter_mut().zip(&finders) {
                if !*f && finder.needle().len() <= CHUNK / 2 && finder.find(buf).is_some() {
                    *f = true;
                }
            }
            if end == hay.len() {
                break;
            }
            start = end - overlap;
        }
        found
    })
}

/// Python's `repr(float)` of a finite number: the shortest round-trip digits, fixed
/// notation for decimal exponents in [-4, 16), scientific (`1e+16`, `1.5e-05`)
/// otherwise. (JSON and `str()` spell NaN and the infinities differently: callers
/// handle those.)
pub fn python_float_repr(f: f64) -> String {
    // `{:e}` gives the shortest round-trip digits: "-1.2345e-7".
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if (-4..16).contains(&exp) {
        let point = exp + 1; // digits before the decimal point
        let body = if point <= 0 {
            format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
        } else if point as usize >= digits.len() {
            format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..point as usize],
                &digits[point as usize..]
            )
        };
        format!("{sign}{body}")
    } else {
        let m = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{m}e{esign}{:02}", exp.unsigned_abs())
    }
}

/// A xorshift64 generator for tests' generated cases: the state after each step, from
/// `seed` (not zero). The same seed gives the same cases on every run.
#[cfg(test)]
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

#[cfg(test)]
mod buffer_pool_tests {
    use super::*;

    #[test]
    fn buffers_come_back_emptied_and_bounded() {
        BYTE_POOL.with(|p| p.borrow_mut().clear());
        let mut b = take_buffer();
        assert_eq!(b.capacity(), 0, "an empty pool lends nothing");
        b.extend_from_slice(b"body bytes");
        let cap = b.capacity();
        recycle_buffer(b);
        let again = take_buffer();
        assert!(
            again.is_empty() && again.capacity() == cap,
            "reused, emptied"
        );
        recycle_buffer(Vec::with_capacity(BYTE_POOL_MAX + 1));
        recycle_buffer(Vec::new());
        assert_eq!(
            BYTE_POOL.with(|p| p.borrow().len()),
            0,
            "too large or empty: dropped"
        );
        for _ in 0..BYTE_POOL_BUFFERS + 5 {
            recycle_buffer(Vec::with_capacity(16));
        }
        assert_eq!(BYTE_POOL.with(|p| p.borrow().len()), BYTE_POOL_BUFFERS);
        BYTE_POOL.with(|p| p.borrow_mut().clear());
    }
}

#[cfg(test)]
mod fx_tests {
    #[test]
    fn every_byte_and_the_length_reach_the_hash() {
        for n in 0..40usize {
            let base: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            let h = super::fx_hash(&base);
            for at in 0..n {
                let mut other = base.clone();
                other[at] ^= 0x04;
                assert_ne!(super::fx_hash(&other), h, "byte {at} of {n}");
            }
            let mut longer = base.clone();
            longer.push(0);
            assert_ne!(super::fx_hash(&longer), h, "length {n} and a NUL more");
        }
    }
}

#[cfg(test)]
mod memchr2_near_tests {
    #[test]
    fn agrees_with_memchr2_at_every_length_and_position() {
        // Each haystack length up to 40 (the word steps, the 16-byte hand-over, the
        // tail), each position of either needle, none, both, and bytes whose
        // zero-byte test borrows (0x00, 0x80, 0xff, a needle plus one).
        for len in 0..40 {
            for fill in [b'x', 0x00, 0x80, 0xff, b'<' + 1, b'&' - 1] {
                let base = vec![fill; len];
                assert_eq!(
                    super::memchr2_near(b'<', b'&', &base),
                    memchr::memchr2(b'<', b'&', &base),
                    "{len} {fill}"
                );
                for at in 0..len {
                    for (first, second) in [(b'<', None), (b'&', None), (b'&', Some(b'<'))] {
                        let mut h = base.clone();
                        h[at] = first;
                        if let Some(s) = second {
                            for later in at + 1..len {
                                let mut h2 = h.clone();
                                h2[later] = s;
                                assert_eq!(
                                    super::memchr2_near(b'<', b'&', &h2),
                                    Some(at),
                                    "{len} {fill} {at} {later}"
                                );
                            }
                        }
                        assert_eq!(
                            super::memchr2_near(b'<', b'&', &h),
                            memchr::memchr2(b'<', b'&', &h),
                            "{len} {fill} {at}"
                        );
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod base64_tests {
    use super::{base64_decode, base64_encode};

    #[test]
    fn rfc4648_vectors_both_ways() {
        for (input, expected) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64_encode(input.as_bytes()), expected);
            assert_eq!(base64_decode(expected).as_deref(), Some(input.as_bytes()));
        }
        assert_eq!(base64_decode("-_8").as_deref(), Some(&[0xfb, 0xff][..]));
        assert_eq!(base64_decode("a b"), None);
    }

    #[test]
    fn prefix_and_case_free_search_agree_with_the_naive_forms() {
        let texts = [
            "",
            "abc",
            "refresh",
            "xxREFRESHyy",
            "re fresh",
            "ééréfresh",
            "refres",
            "<BaSe href",
            "rrrrefresh",
            "ツrefreshツ",
        ];
        for t in texts {
            for n in [0, 1, 3, 5, 100] {
                let naive = t.char_indices().nth(n).map_or(t, |(i, _)| &t[..i]);
                assert_eq!(super::prefix_chars(t, n), naive, "{t:?} {n}");
            }
            for needle in ["refresh", "<base", "r", "ツ"] {
                let lower = needle.as_bytes();
                let naive = t
                    .as_bytes()
                    .windows(lower.len())
                    .any(|w| w.eq_ignore_ascii_case(lower));
                assert_eq!(
                    super::contains_ascii_ci(t.as_bytes(), lower),
                    naive,
                    "{t:?} {needle}"
                );
            }
            let naive = |n: &str| {
                t.as_bytes()
                    .windows(n.len())
                    .any(|w| w.eq_ignore_ascii_case(n.as_bytes()))
            };
            assert_eq!(
                super::contains_each_ascii_ci(
                    t.as_bytes(),
                    [&b"refresh"[..], b"<base", b"", "ツ".as_bytes()]
                ),
                [naive("refresh"), naive("<base"), true, naive("ツ")],
                "{t:?}"
            );
        }
    }

    #[test]
    fn long_texts_across_the_search_chunks_and_prefix_walk() {
        // Needles straddling every 4 KiB chunk boundary, in mixed case, and
        // multi-byte characters before the prefix's end.
        for at in [
            0, 1, 4088, 4089, 4090, 4095, 4096, 4097, 8185, 8190, 8192, 9000,
        ] {
            for pad in ["a", "é", "ツ"] {
                let mut t = pad.repeat(at / pad.len());
                t.push_str("ReFrEsH");
                t.push_str(&"b".repeat(5000));
                for needle in ["refresh", "<base", "h", "hb"] {
                    let naive = t
                        .as_bytes()
                        .windows(needle.len())
                        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()));
                    assert_eq!(
                        super::contains_ascii_ci(t.as_bytes(), needle.as_bytes()),
                        naive,
                        "{at} {pad} {needle}"
                    );
                    // Asked together with a needle found early or never: each answer
                    // is its own (the pass goes on until all are found or the end).
                    for other in [&b"a"[..], b"zzzz", b"<base"] {
                        assert_eq!(
                            super::contains_each_ascii_ci(t.as_bytes(), [other, needle.as_bytes()])
                                [1],
                            naive,
                            "{at} {pad} {needle} with {other:?}"
                        );
                    }
                }
                for n in [0, 4095, 4096, 4097, at, at + 3, t.len(), t.len() + 1] {
                    let naive = t.char_indices().nth(n).map_or(&t[..], |(i, _)| &t[..i]);
                    assert_eq!(super::prefix_chars(&t, n), naive, "{at} {pad} {n}");
                }
            }
        }
    }
}

#[cfg(test)]
mod seeded_map_tests {
    use super::*;
    use std::hash::BuildHasher;

    /// Each map hashes with a seed of its own: the same hosts land in different places
    /// in two maps (an `FxHasher` or an unseeded hasher would agree on every one).
    #[test]
    fn each_map_has_its_own_seed() {
        let a: SeededMap<String, ()> = SeededMap::default();
        let b: SeededMap<String, ()> = SeededMap::default();
        let hosts = ["example.com", "127.0.0.1:8089", "a.example.org", ""];
        let same = hosts
            .iter()
            .filter(|h| a.hasher().hash_one(h) == b.hasher().hash_one(h))
            .count();
        assert_eq!(same, 0, "two maps agree on {same} of {} keys", hosts.len());
        let mut map = SeededMap::default();
        for h in hosts {
            map.insert(h.to_owned(), h.len());
        }
        assert_eq!(map.get("example.com"), Some(&11));
        assert_eq!(map.len(), 4);
    }
}

#[cfg(test)]
mod hex_tests {
    use super::*;

    #[test]
    fn from_hex_reads_exactly_n_bytes_of_either_case() {
        assert_eq!(from_hex::<2>(b"0aFf"), Some([0x0a, 0xff]));
        assert_eq!(from_hex::<2>(to_hex(&[1, 254]).as_bytes()), Some([1, 254]));
        assert_eq!(from_hex::<2>(b"0aF"), None);
        assert_eq!(from_hex::<2>(b"0aFf0"), None);
        assert_eq!(from_hex::<2>(b"0g00"), None);
    }
}
