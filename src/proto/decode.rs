//! Streaming content decoding (`Content-Encoding: gzip | deflate | br | zstd`, stacked
//! in any order) with a limit on the *decoded* size.
//!
//! Each compressed piece is decoded as it arrives, through a sink that refuses to grow
//! past the limit, so a decompression bomb — even one whose single chunk expands to
//! gigabytes — is cut off at the limit with [`DecodeError::TooLarge`], having used at
//! most the limit plus one internal buffer of memory. `deflate` accepts both the
//! zlib-wrapped form (RFC 1950, what the RFC means) and raw deflate (what some servers
//! send), as Scrapy does. `zstd` decodes every frame of the body (skippable ones
//! skipped) and refuses frames whose window is over 8 MB, as RFC 9659 allows a
//! decoder to (browsers do too): a small body cannot make the decoder allocate more.

use std::fmt;
use std::io::{self, Write};

/// A content coding this module decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Encoding {
    /// `identity` (or none).
    Identity,
    /// `gzip` / `x-gzip`.
    Gzip,
    /// `deflate` (zlib-wrapped or raw).
    Deflate,
    /// `br` (Brotli).
    Brotli,
    /// `zstd` (Zstandard, RFC 8878 / RFC 9659).
    Zstd,
}

impl Encoding {
    /// Parses one coding name; `None` for codings this module does not know.
    pub fn from_name(name: &[u8]) -> Option<Self> {
        let name = name.trim_ascii();
        if name.eq_ignore_ascii_case(b"gzip") || name.eq_ignore_ascii_case(b"x-gzip") {
            Some(Self::Gzip)
        } else if name.eq_ignore_ascii_case(b"deflate") {
            Some(Self::Deflate)
        } else if name.eq_ignore_ascii_case(b"br") {
            Some(Self::Brotli)
        } else if name.eq_ignore_ascii_case(b"zstd") {
            Some(Self::Zstd)
        } else if name.eq_ignore_ascii_case(b"identity") || name.is_empty() {
            Some(Self::Identity)
        } else {
            None
        }
    }

    /// The codings in a `Content-Encoding` value, in the order they were applied.
    ///
    /// # Errors
    ///
    /// The name of the first coding this module cannot decode.
    pub fn parse_list(value: &[u8]) -> Result<Vec<Self>, String> {
        value
            .split(|&b| b == b',')
            .filter(|c| !c.trim_ascii().is_empty())
            .map(|c| {
                Self::from_name(c)
                    .ok_or_else(|| String::from_utf8_lossy(c.trim_ascii()).into_owned())
            })
            .filter(|r| r != &Ok(Self::Identity))
            .collect()
    }

    /// The `Accept-Encoding` value for everything this module decodes.
    pub const ACCEPT: &'static str = "gzip, deflate, br, zstd";
}

/// Why decoding stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The decoded body would exceed the limit.
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// The compressed data is invalid.
    Corrupt {
        /// Which coding failed.
        encoding: Encoding,
        /// The decoder's message.
        reason: String,
    },
    /// `Content-Encoding` lists more codings than [`MAX_CODINGS`] (each would need its
    /// own decoder: 12,000 `gzip`s fit in a 60 KB header and would cost 900 MB).
    TooManyCodings {
        /// How many the header lists.
        count: usize,
    },
}

/// The most content codings a response may stack (browsers and servers use one or
/// two); more fails the download.
pub const MAX_CODINGS: usize = 8;

/// How many codings a `Content-Encoding` value lists (identity included), without
/// allocating per entry.
pub fn count_codings(value: &[u8]) -> usize {
    value
        .split(|&b| b == b',')
        .filter(|c| !c.trim_ascii().is_empty())
        .count()
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { limit } => {
                write!(f, "decompressed body larger than the {limit}-byte limit")
            }
            Self::Corrupt { encoding, reason } => {
                write!(f, "invalid {encoding:?} data: {reason}")
            }
            Self::TooManyCodings { count } => write!(
                f,
                "Content-Encoding lists {count} codings (at most {MAX_CODINGS} are decoded)"
            ),
        }
    }
}

impl std::error::Error for DecodeError {}

/// A `Write` sink that holds decoded bytes and refuses to exceed a total limit.
#[derive(Debug)]
struct Sink {
    buf: Vec<u8>,
    total: u64,
    limit: u64,
    exceeded: bool,
}

impl Write for Sink {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.total.saturating_add(data.len() as u64) > self.limit {
            self.exceeded = true;
            return Err(io::Error::other("decoded size limit exceeded"));
        }
        self.total += data.len() as u64;
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

enum Stage {
    Gzip(flate2::write::GzDecoder<Sink>),
    Zlib(flate2::write::ZlibDecoder<Sink>),
    RawDeflate(flate2::write::DeflateDecoder<Sink>),
    /// Deflate whose wrapping is not known yet (fewer than 2 bytes seen).
    DeflateUnknown(Vec<u8>, Sink),
    Brotli(Box<brotli::DecompressorWriter<Sink>>),
    Zstd(Box<ZstdStage>),
    Spent,
}

/// The largest zstd window decoded: RFC 9659 §4 lets a `zstd` content-coding decoder
/// refuse frames needing more than 8 MB.
const ZSTD_WINDOW_LOG_MAX: u32 = 23;

/// A zstd decoder driven by the bytes as they arrive, writing into the bounded sink.
struct ZstdStage {
    dec: Option<zstd::stream::raw::Decoder<'static>>,
    sink: Sink,
    /// Inside a frame (the decoder's last hint was not "frame complete").
    mid_frame: bool,
    buf: Vec<u8>,
}

impl ZstdStage {
    fn new(sink: Sink) -> Self {
        let dec = zstd::stream::raw::Decoder::new().and_then(|mut d| {
            d.set_parameter(zstd::stream::raw::DParameter::WindowLogMax(
                ZSTD_WINDOW_LOG_MAX,
            ))?;
            Ok(d)
        });
        Self {
            dec: dec.ok(),
            sink,
            mid_frame: false,
            buf: vec![0; 32 * 1024],
        }
    }

    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
        let dec = self
            .dec
            .as_mut()
            .ok_or_else(|| io::Error::other("cannot create a zstd decoder"))?;
        let mut input = InBuffer::around(data);
        loop {
            let (hint, n) = {
                let mut out = OutBuffer::around(&mut self.buf[..]);
                let hint = dec.run(&mut input, &mut out).map_err(|e| {
                    if e.to_string().contains("memory") {
                        io::Error::other(format!(
                            "the frame's window is over 8 MB, the most a zstd content \
                             coding may use (RFC 9659) ({e})"
                        ))
                    } else {
                        e
                    }
                })?;
                (hint, out.pos())
            };
            self.sink.write_all(&self.buf[..n])?;
            if n > 0 || input.pos() > 0 {
                self.mid_frame = hint != 0;
            }
            if input.pos() == data.len() && n < self.buf.len() {
                return Ok(());
            }
        }
    }

    fn finish(&mut self) -> io::Result<()> {
        self.write(&[])?;
        if self.mid_frame {
            return Err(io::Error::other("truncated zstd stream"));
        }
        Ok(())
    }
}

impl Stage {
    fn new(encoding: Encoding, limit: u64) -> Self {
        let sink = Sink {
            buf: Vec::new(),
            total: 0,
            limit,
            exceeded: false,
        };
        match encoding {
            Encoding::Gzip => Self::Gzip(flate2::write::GzDecoder::new(sink)),
            Encoding::Deflate => Self::DeflateUnknown(Vec::new(), sink),
            Encoding::Brotli => {
                Self::Brotli(Box::new(brotli::DecompressorWriter::new(sink, 32 * 1024)))
            }
            Encoding::Zstd => Self::Zstd(Box::new(ZstdStage::new(sink))),
            Encoding::Identity => Self::Spent,
        }
    }

    fn encoding(&self) -> Encoding {
        match self {
            Self::Gzip(_) => Encoding::Gzip,
            Self::Zlib(_) | Self::RawDeflate(_) | Self::DeflateUnknown(..) => Encoding::Deflate,
            Self::Brotli(_) => Encoding::Brotli,
            Self::Zstd(_) => Encoding::Zstd,
            Self::Spent => Encoding::Identity,
        }
    }

    fn sink(&mut self) -> Option<&mut Sink> {
        match self {
            Self::Gzip(d) => Some(d.get_mut()),
            Self::Zlib(d) => Some(d.get_mut()),
            Self::RawDeflate(d) => Some(d.get_mut()),
            Self::DeflateUnknown(_, s) => Some(s),
            Self::Brotli(d) => Some(d.get_mut()),
            Self::Zstd(z) => Some(&mut z.sink),
            Self::Spent => None,
        }
    }

    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        if let Self::DeflateUnknown(pending, _) = self {
            pending.extend_from_slice(data);
            if pending.len() < 2 {
                return Ok(());
            }
            let pending = std::mem::take(pending);
            let Self::DeflateUnknown(_, sink) = std::mem::replace(self, Self::Spent) else {
                return Ok(());
            };
            // zlib: CM = 8 in the low nibble and the 16-bit header divisible by 31.
            let zlib = pending[0] & 0x0f == 8
                && (u16::from(pending[0]) << 8 | u16::from(pending[1])) % 31 == 0;
            *self = if zlib {
                Self::Zlib(flate2::write::ZlibDecoder::new(sink))
            } else {
                Self::RawDeflate(flate2::write::DeflateDecoder::new(sink))
            };
            return self.write(&pending);
        }
        match self {
            // Bytes after the end of the gzip member are ignored, as browsers and
            // Scrapy's gunzip keep what was decoded (a server's trailing junk).
            Self::Gzip(d) => {
                let mut rest = data;
                while !rest.is_empty() {
                    match d.write(rest)? {
                        0 => break,
                        n => rest = &rest[n..],
                    }
                }
                Ok(())
            }
            Self::Zlib(d) => d.write_all(data),
            Self::RawDeflate(d) => d.write_all(data),
            Self::Brotli(d) => d.write_all(data),
            Self::Zstd(z) => z.write(data),
            Self::DeflateUnknown(..) | Self::Spent => Ok(()),
        }
    }

    fn finish(&mut self) -> io::Result<()> {
        match self {
            Self::Gzip(d) => d.try_finish(),
            Self::Zlib(d) => d.try_finish(),
            Self::RawDeflate(d) => d.try_finish(),
            Self::Brotli(d) => d.flush().and_then(|()| d.close()),
            Self::Zstd(z) => z.finish(),
            Self::DeflateUnknown(pending, _) if !pending.is_empty() => {
                Err(io::Error::other("truncated deflate stream"))
            }
            Self::DeflateUnknown(..) | Self::Spent => Ok(()),
        }
    }
}

/// Decodes a body encoded with one or more content codings, piece by piece.
///
/// # Examples
///
/// ```
/// use std::io::Write;
/// use trawl::proto::decode::{ContentDecoder, DecodeError, Encoding};
///
/// let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
/// gz.write_all(&vec![b'a'; 100_000]).unwrap();
/// let bomb = gz.finish().unwrap();
///
/// let mut out = Vec::new();
/// let mut dec = ContentDecoder::new(&[Encoding::Gzip], 10_000);
/// assert_eq!(dec.feed(&bomb, &mut out), Err(DecodeError::TooLarge { limit: 10_000 }));
/// assert!(out.len() <= 10_000);
/// ```
pub struct ContentDecoder {
    /// Stages in decoding order (last applied coding first).
    stages: Vec<Stage>,
    limit: u64,
    failed: Option<DecodeError>,
    /// Whether any body byte arrived: an empty body (HEAD, 204, 304, or a server that
    /// labels nothing) decodes to nothing instead of failing as a truncated stream.
    fed: bool,
}

impl ContentDecoder {
    /// A decoder for codings listed in the order they were applied (as in the
    /// `Content-Encoding` header), refusing to produce more than `limit` bytes.
    pub fn new(applied: &[Encoding], limit: u64) -> Self {
        Self {
            stages: applied
                .iter()
                .rev()
                .filter(|e| **e != Encoding::Identity)
                .map(|&e| Stage::new(e, limit))
                .collect(),
            limit,
            failed: None,
            fed: false,
        }
    }

    /// Whether any decoding happens (false for identity).
    pub fn is_identity(&self) -> bool {
        self.stages.is_empty()
    }

    fn fail(&mut self, e: DecodeError) -> DecodeError {
        self.failed = Some(e.clone());
        e
    }

    fn run(&mut self, input: &[u8], out: &mut Vec<u8>, finish: bool) -> Result<(), DecodeError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if self.stages.is_empty() {
            if out.len() as u64 + input.len() as u64 > self.limit {
                return Err(self.fail(DecodeError::TooLarge { limit: self.limit }));
            }
            out.extend_from_slice(input);
            return Ok(());
        }
        let mut carry: Vec<u8> = input.to_vec();
        let count = self.stages.len();
        for i in 0..count {
            let stage = &mut self.stages[i];
            let mut result = stage.write(&carry);
            if result.is_ok() && finish {
                result = stage.finish();
            }
            let encoding = stage.encoding();
            let Some(sink) = stage.sink() else { continue };
            let exceeded = sink.exceeded;
            carry = std::mem::take(&mut sink.buf);
            if let Err(e) = result {
                let err = if exceeded {
                    DecodeError::TooLarge { limit: self.limit }
                } else {
                    DecodeError::Corrupt {
                        encoding,
                        reason: e.to_string(),
                    }
                };
                return Err(self.fail(err));
            }
        }
        out.extend_from_slice(&carry);
        Ok(())
    }

    /// Decodes the next piece of the encoded body, appending decoded bytes to `out`.
    ///
    /// # Errors
    ///
    /// The limit was exceeded or the data is corrupt; the error is sticky.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), DecodeError> {
        self.fed |= !input.is_empty();
        self.run(input, out, false)
    }

    /// Ends the body: flushes what the decoders hold and checks the streams ended
    /// properly.
    ///
    /// # Errors
    ///
    /// As [`feed`](Self::feed), plus truncated streams.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), DecodeError> {
        if !self.fed && self.failed.is_none() {
            return Ok(());
        }
        self.run(&[], out, true)
    }
}

impl fmt::Debug for ContentDecoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContentDecoder")
            .field(
                "stages",
                &self.stages.iter().map(Stage::encoding).collect::<Vec<_>>(),
            )
            .field("limit", &self.limit)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_junk_after_a_gzip_member_is_ignored() {
        let mut wire = gzip(b"the decoded text");
        wire.extend_from_slice(b"<junk after the member>");
        let mut d = ContentDecoder::new(&[Encoding::Gzip], 1 << 20);
        let mut out = Vec::new();
        for piece in wire.chunks(5) {
            d.feed(piece, &mut out).expect("junk is ignored");
        }
        d.finish(&mut out).expect("finished");
        assert_eq!(out, b"the decoded text");
    }

    #[test]
    fn too_many_codings_are_counted_without_allocating_decoders() {
        let header = "gzip, ".repeat(12_000);
        assert_eq!(count_codings(header.as_bytes()), 12_000);
        assert!(count_codings(header.as_bytes()) > MAX_CODINGS);
        assert_eq!(count_codings(b"gzip, ,br"), 2);
    }

    #[test]
    fn an_empty_body_decodes_to_nothing() {
        // HEAD, 204 and 304 answers may repeat Content-Encoding with no body.
        for enc in [Encoding::Gzip, Encoding::Deflate, Encoding::Brotli] {
            let mut d = ContentDecoder::new(&[enc], 1000);
            let mut out = Vec::new();
            d.feed(&[], &mut out).expect("no input is fine");
            assert_eq!(d.finish(&mut out), Ok(()), "{enc:?}");
            assert!(out.is_empty());
        }
        // A stream cut after some bytes is still an error.
        let mut d = ContentDecoder::new(&[Encoding::Gzip], 1000);
        let mut out = Vec::new();
        let g = gzip(b"hello world");
        d.feed(&g[..5], &mut out).expect("partial");
        assert!(d.finish(&mut out).is_err());
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn raw(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn br(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
            w.write_all(data).unwrap();
        }
        out
    }

    fn decode_split(
        enc: &[Encoding],
        data: &[u8],
        step: usize,
        limit: u64,
    ) -> Result<Vec<u8>, DecodeError> {
        let mut d = ContentDecoder::new(enc, limit);
        let mut out = Vec::new();
        for piece in data.chunks(step.max(1)) {
            d.feed(piece, &mut out)?;
        }
        d.finish(&mut out)?;
        Ok(out)
    }

    #[test]
    fn each_coding_roundtrips_at_any_split() {
        let body: Vec<u8> = (0..20_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for (enc, data) in [
            (Encoding::Gzip, gzip(&body)),
            (Encoding::Deflate, zlib(&body)),
            (Encoding::Deflate, raw(&body)),
            (Encoding::Brotli, br(&body)),
        ] {
            for step in [1, 2, 3, 7, 100, 4096, usize::MAX] {
                let out = decode_split(&[enc], &data, step, u64::MAX).unwrap();
                assert_eq!(out, body, "{enc:?} step {step}");
            }
        }
    }

    #[test]
    fn stacked_codings_decode_in_reverse() {
        let body = b"hello stacked world".repeat(50);
        let data = br(&gzip(&body));
        let encs = Encoding::parse_list(b"gzip, br").unwrap();
        assert_eq!(decode_split(&encs, &data, 13, u64::MAX).unwrap(), body);
    }

    #[test]
    fn bombs_stop_at_the_limit() {
        let zeros = vec![0u8; 10_000_000];
        for (enc, data) in [
            (Encoding::Gzip, gzip(&zeros)),
            (Encoding::Deflate, zlib(&zeros)),
            (Encoding::Deflate, raw(&zeros)),
            (Encoding::Brotli, br(&zeros)),
        ] {
            assert!(data.len() < 100_000, "{enc:?} bomb is {} bytes", data.len());
            let r = decode_split(&[enc], &data, usize::MAX, 1_000_000);
            assert_eq!(
                r,
                Err(DecodeError::TooLarge { limit: 1_000_000 }),
                "{enc:?}"
            );
        }
    }

    #[test]
    fn corrupt_and_truncated_data() {
        let r = decode_split(&[Encoding::Gzip], b"definitely not gzip", 5, u64::MAX);
        assert!(
            matches!(
                r,
                Err(DecodeError::Corrupt {
                    encoding: Encoding::Gzip,
                    ..
                })
            ),
            "{r:?}"
        );
        let full = gzip(b"some body that is long enough to matter");
        let r = decode_split(&[Encoding::Gzip], &full[..full.len() - 6], 5, u64::MAX);
        assert!(r.is_err(), "truncated gzip must fail: {r:?}");
    }

    #[test]
    fn unknown_coding_is_reported() {
        assert_eq!(Encoding::parse_list(b"gzip, xz"), Err("xz".to_owned()));
        assert_eq!(
            Encoding::parse_list(b"gzip, zstd"),
            Ok(vec![Encoding::Gzip, Encoding::Zstd])
        );
        assert_eq!(Encoding::parse_list(b"identity"), Ok(vec![]));
    }
}
