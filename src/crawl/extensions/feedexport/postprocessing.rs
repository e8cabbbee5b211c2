//! Scrapy's feed postprocessing plugins (the `postprocessing` feed option):
//! `GzipPlugin` (`gzip_compresslevel`, `gzip_mtime`, `gzip_filename`), `LZMAPlugin`
//! (`lzma_format`, `lzma_check`, `lzma_preset`, `lzma_filters`) and `Bz2Plugin`
//! (`bz2_compresslevel`), each a [`FeedFile`] layer that compresses as the bytes pass
//! (a batch is never held whole). A list of plugins nests in list order: the first
//! compresses the feed, the next compresses that.
//!
//! The gzip header is written here, as Python's `GzipFile` writes it (the `FNAME` of
//! the file's name without `.gz`, `MTIME`, `XFL` 2 for level 9 and 4 for level 1, OS
//! 255); the deflate stream and the xz / bzip2 streams come from the `flate2`,
//! `liblzma` and `bzip2` crates.

use std::io::{self, Write};

use serde_json::{Map, Value};

use super::storage::FeedFile;

/// What a plugin is built with.
#[derive(Debug)]
pub struct PluginSetup<'a> {
    /// The feed's options (the plugin's own keys among them).
    pub options: &'a Map<String, Value>,
    /// The batch's file name (the default gzip `FNAME`).
    pub file_name: &'a str,
    /// Now, in UNIX seconds (the default gzip `MTIME`).
    pub now: f64,
}

/// Wraps a batch's file in a plugin's layer.
pub type PluginFactory =
    std::rc::Rc<dyn Fn(Box<dyn FeedFile>, &PluginSetup<'_>) -> Result<Box<dyn FeedFile>, String>>;

fn int_option(options: &Map<String, Value>, key: &str) -> Result<Option<i64>, String> {
    match options.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_i64()
            .map(Some)
            .ok_or_else(|| format!("{key} must be an integer, not {v}")),
    }
}

/// `GzipPlugin`.
pub fn gzip(
    inner: Box<dyn FeedFile>,
    setup: &PluginSetup<'_>,
) -> Result<Box<dyn FeedFile>, String> {
    let level = int_option(setup.options, "gzip_compresslevel")?.unwrap_or(9);
    let level = u32::try_from(level)
        .ok()
        .filter(|l| *l <= 9)
        .ok_or_else(|| format!("gzip_compresslevel must be 0 to 9, not {level}"))?;
    let mtime = match int_option(setup.options, "gzip_mtime")? {
        Some(m) => u32::try_from(m).map_err(|_| format!("gzip_mtime out of range: {m}"))?,
        None => setup.now as u32,
    };
    let name = match setup.options.get("gzip_filename") {
        None | Some(Value::Null) => setup.file_name.to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => return Err(format!("gzip_filename must be a string, not {v}")),
    };
    // Python: the basename, encoded as Latin-1, without ".gz".
    let base = name.rsplit('/').next().unwrap_or(&name);
    let base = base.strip_suffix(".gz").unwrap_or(base);
    let mut fname = Vec::with_capacity(base.len());
    for c in base.chars() {
        let b = u8::try_from(u32::from(c))
            .map_err(|_| format!("gzip_filename {name:?} is not Latin-1 text"))?;
        fname.push(b);
    }
    let mut header = vec![0x1f, 0x8b, 8, if fname.is_empty() { 0 } else { 8 }];
    header.extend_from_slice(&mtime.to_le_bytes());
    header.push(match level {
        9 => 2,
        1 => 4,
        _ => 0,
    });
    header.push(255);
    if !fname.is_empty() {
        header.extend_from_slice(&fname);
        header.push(0);
    }
    Ok(Box::new(Gzip {
        deflate: flate2::write::DeflateEncoder::new(inner, flate2::Compression::new(level)),
        header: Some(header),
        crc: crc32fast::Hasher::new(),
        size: 0,
    }))
}

/// A gzip member: the header (written with the first bytes), raw deflate, then CRC-32
/// and size.
struct Gzip {
    deflate: flate2::write::DeflateEncoder<Box<dyn FeedFile>>,
    header: Option<Vec<u8>>,
    crc: crc32fast::Hasher,
    size: u32,
}

impl Gzip {
    fn write_header(&mut self) -> io::Result<()> {
        if let Some(h) = self.header.take() {
            self.deflate.get_mut().write_all(&h)?;
        }
        Ok(())
    }
}

impl Write for Gzip {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_header()?;
        let n = self.deflate.write(buf)?;
        self.crc.update(&buf[..n]);
        self.size = self.size.wrapping_add(n as u32);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.write_header()?;
        self.deflate.flush()
    }
}

impl FeedFile for Gzip {
    fn sync_data(&mut self) -> io::Result<()> {
        self.flush()?;
        self.deflate.get_mut().sync_data()
    }

    fn position(&mut self) -> io::Result<u64> {
        Err(compressed_position())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.write_header()?;
        self.deflate.try_finish()?;
        let crc = self.crc.clone().finalize();
        let out = self.deflate.get_mut();
        out.write_all(&crc.to_le_bytes())?;
        out.write_all(&self.size.to_le_bytes())?;
        out.finish()
    }
}

fn compressed_position() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "a compressed feed cannot be resumed at a byte position",
    )
}

/// Python's `lzma` constants.
const FORMAT_XZ: i64 = 1;
const FORMAT_ALONE: i64 = 2;
const FORMAT_RAW: i64 = 3;
const FILTER_LZMA1: i64 = 0x4000_0000_0000_0001;
const FILTER_LZMA2: i64 = 0x21;

fn lzma_options(spec: &Map<String, Value>) -> Result<liblzma::stream::LzmaOptions, String> {
    let preset = int_option(spec, "preset")?.unwrap_or(6);
    let preset = u32::try_from(preset).map_err(|_| format!("lzma filter preset {preset}"))?;
    let mut opts = liblzma::stream::LzmaOptions::new_preset(preset)
        .map_err(|e| format!("lzma filter preset {preset}: {e}"))?;
    if let Some(d) = int_option(spec, "dict_size")? {
        opts.dict_size(u32::try_from(d).map_err(|_| format!("lzma dict_size {d}"))?);
    }
    for key in spec.keys() {
        if !matches!(key.as_str(), "id" | "preset" | "dict_size") {
            return Err(format!("lzma_filters: the option {key:?} is not supported"));
        }
    }
    Ok(opts)
}

/// `lzma_filters`: LZMA1 or LZMA2 with `preset` / `dict_size` (other filters are
/// refused).
fn lzma_filters(v: &Value) -> Result<liblzma::stream::Filters, String> {
    let mut filters = liblzma::stream::Filters::new();
    let list = v
        .as_array()
        .ok_or_else(|| format!("lzma_filters must be a list, not {v}"))?;
    for f in list {
        let spec = f
            .as_object()
            .ok_or_else(|| format!("an lzma filter must be a map, not {f}"))?;
        match spec.get("id").and_then(Value::as_i64) {
            Some(FILTER_LZMA2) => filters.lzma2(&lzma_options(spec)?),
            Some(FILTER_LZMA1) => filters.lzma1(&lzma_options(spec)?),
            _ => {
                return Err(format!(
                    "lzma_filters: only LZMA1 and LZMA2 are supported, not {f}"
                ));
            }
        };
    }
    Ok(filters)
}

/// `LZMAPlugin`.
pub fn lzma(
    inner: Box<dyn FeedFile>,
    setup: &PluginSetup<'_>,
) -> Result<Box<dyn FeedFile>, String> {
    use liblzma::stream::{Check, LzmaOptions, Stream};
    let o = setup.options;
    let format = int_option(o, "lzma_format")?.unwrap_or(FORMAT_XZ);
    let check = int_option(o, "lzma_check")?.unwrap_or(-1);
    let preset = int_option(o, "lzma_preset")?;
    let filters = o.get("lzma_filters").filter(|v| !v.is_null());
    if format != FORMAT_XZ && check != -1 {
        return Err("Integrity checks are only supported by FORMAT_XZ".into());
    }
    if preset.is_some() && filters.is_some() {
        return Err("Cannot specify both preset and filter chain".into());
    }
    let preset = match preset {
        None => 6,
        Some(p) => u32::try_from(p).map_err(|_| format!("lzma_preset {p}"))?,
    };
    let err = |e: liblzma::stream::Error| format!("lzma: {e}");
    let stream = match format {
        FORMAT_XZ => {
            let check = match check {
                -1 | 4 => Check::Crc64,
                0 => Check::None,
                1 => Check::Crc32,
                10 => Check::Sha256,
                other => return Err(format!("lzma_check {other} is not a check Python knows")),
            };
            match filters {
                Some(f) => Stream::new_stream_encoder(&lzma_filters(f)?, check).map_err(err)?,
                None => Stream::new_easy_encoder(preset, check).map_err(err)?,
            }
        }
        FORMAT_ALONE => match filters {
            Some(_) => return Err("lzma_filters with FORMAT_ALONE are not supported".into()),
            None => Stream::new_lzma_encoder(&LzmaOptions::new_preset(preset).map_err(err)?)
                .map_err(err)?,
        },
        FORMAT_RAW => match filters {
            Some(f) => Stream::new_raw_encoder(&lzma_filters(f)?).map_err(err)?,
            None => return Err("Must specify filters for FORMAT_RAW".into()),
        },
        other => {
            return Err(format!(
                "lzma_format {other}: use 1 (xz), 2 (alone) or 3 (raw)"
            ));
        }
    };
    Ok(Box::new(Layer {
        encoder: liblzma::write::XzEncoder::new_stream(inner, stream),
        flushes: format == FORMAT_XZ,
    }))
}

/// `Bz2Plugin`.
pub fn bz2(inner: Box<dyn FeedFile>, setup: &PluginSetup<'_>) -> Result<Box<dyn FeedFile>, String> {
    let level = int_option(setup.options, "bz2_compresslevel")?.unwrap_or(9);
    let level = u32::try_from(level)
        .ok()
        .filter(|l| (1..=9).contains(l))
        .ok_or_else(|| format!("bz2_compresslevel must be 1 to 9, not {level}"))?;
    Ok(Box::new(Layer {
        encoder: bzip2::write::BzEncoder::new(inner, bzip2::Compression::new(level)),
        flushes: true,
    }))
}

/// A compressor from a crate, over a batch's file.
trait Encoder: Write {
    /// The file it writes to.
    fn inner(&mut self) -> &mut Box<dyn FeedFile>;

    /// Writes the end of the stream.
    fn try_finish(&mut self) -> io::Result<()>;
}

impl Encoder for liblzma::write::XzEncoder<Box<dyn FeedFile>> {
    fn inner(&mut self) -> &mut Box<dyn FeedFile> {
        self.get_mut()
    }

    fn try_finish(&mut self) -> io::Result<()> {
        liblzma::write::XzEncoder::try_finish(self)
    }
}

impl Encoder for bzip2::write::BzEncoder<Box<dyn FeedFile>> {
    fn inner(&mut self) -> &mut Box<dyn FeedFile> {
        self.get_mut()
    }

    fn try_finish(&mut self) -> io::Result<()> {
        bzip2::write::BzEncoder::try_finish(self)
    }
}

/// An xz, `.lzma`, raw LZMA or bzip2 stream.
struct Layer<E> {
    encoder: E,
    /// Whether the stream can be flushed midway (xz: a full flush ends a block; bzip2:
    /// a block; `.lzma` and raw LZMA hold their data to the end).
    flushes: bool,
}

impl<E: Encoder> Write for Layer<E> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.encoder.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.flushes {
            self.encoder.flush()
        } else {
            self.encoder.inner().flush()
        }
    }
}

impl<E: Encoder> FeedFile for Layer<E> {
    fn sync_data(&mut self) -> io::Result<()> {
        self.flush()?;
        self.encoder.inner().sync_data()
    }

    fn position(&mut self) -> io::Result<u64> {
        Err(compressed_position())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.encoder.try_finish()?;
        self.encoder.inner().finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// A file in memory.
    struct Mem(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

    impl Write for Mem {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl FeedFile for Mem {
        fn sync_data(&mut self) -> io::Result<()> {
            Ok(())
        }
        fn position(&mut self) -> io::Result<u64> {
            Ok(self.0.borrow().len() as u64)
        }
    }

    #[test]
    fn each_plugin_round_trips_and_nests() {
        let data = b"{\"a\": 1}\n".repeat(1000);
        let opts = Map::new();
        let setup = PluginSetup {
            options: &opts,
            file_name: "items.jl.gz",
            now: 0.0,
        };
        let bytes = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        // gzip inside bz2: the file is bz2(gzip(data)).
        let outer = bz2(Box::new(Mem(bytes.clone())), &setup).unwrap();
        let mut file = gzip(outer, &setup).unwrap();
        file.write_all(&data).unwrap();
        file.flush().unwrap();
        file.finish().unwrap();
        let compressed = bytes.borrow().clone();
        let mut gz = Vec::new();
        bzip2::read::BzDecoder::new(&compressed[..])
            .read_to_end(&mut gz)
            .unwrap();
        assert_eq!(&gz[..10], &[0x1f, 0x8b, 8, 8, 0, 0, 0, 0, 2, 255]);
        assert_eq!(&gz[10..19], b"items.jl\0");
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut plain)
            .unwrap();
        assert_eq!(plain, data);
    }
}
