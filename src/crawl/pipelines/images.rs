//! The image work of Scrapy's `ImagesPipeline`, off the reactor thread: a downloaded
//! image is decoded (its EXIF orientation applied, as `ImageOps.exif_transpose`),
//! refused when smaller than `IMAGES_MIN_WIDTH` × `IMAGES_MIN_HEIGHT` or larger than
//! Pillow's decompression-bomb limit (checked on the header, before any pixel is
//! decoded), converted to RGB as `convert_image` does (transparency over white),
//! encoded as a JPEG (quality 75, Pillow's default), and resized to each of
//! `IMAGES_THUMBS` as `Image.thumbnail` sizes it. A small pool of threads does it;
//! the reactor gets the results through a `ThreadResult`, so a 50-megapixel image never
//! stalls the crawl.

use std::io::Cursor;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

use image::{DynamicImage, ImageDecoder, ImageReader, Limits, RgbImage};

use crate::defer::{Deferred, Failure};
use crate::reactor::{ReactorHandle, ThreadResult};

/// Pillow's `Image.MAX_IMAGE_PIXELS`: above it a warning, above twice it an error.
pub const MAX_IMAGE_PIXELS: u64 = 89_478_485;

/// The threads that decode and encode.
const THREADS: usize = 2;

/// One stored picture: the full image (`thumb: None`) or a thumbnail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Converted {
    /// `None` for the full image, else the thumbnail's id.
    pub thumb: Option<String>,
    /// The JPEG bytes.
    pub jpeg: Vec<u8>,
    /// The full image's MD5, in hex, computed here off the reactor (empty for a
    /// thumbnail).
    pub md5: String,
    /// Its width.
    pub width: u32,
    /// Its height.
    pub height: u32,
}

/// What to make of one image.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageJob {
    /// `IMAGES_MIN_WIDTH`.
    pub min_width: u32,
    /// `IMAGES_MIN_HEIGHT`.
    pub min_height: u32,
    /// `IMAGES_THUMBS`: id and box.
    pub thumbs: Vec<(String, u32, u32)>,
}

/// `Image.thumbnail`'s size for an image of `w` × `h` in a box of `bw` × `bh` (Pillow
/// 12's `preserve_aspect_ratio`): `None` when the image already fits.
pub fn thumbnail_size(w: u32, h: u32, bw: u32, bh: u32) -> Option<(u32, u32)> {
    if bw >= w && bh >= h {
        return None;
    }
    let aspect = f64::from(w) / f64::from(h);
    let (x, y) = (f64::from(bw), f64::from(bh));
    // round_aspect: of floor and ceil, the one whose aspect is nearer; at least 1.
    let round = |n: f64, key: &dyn Fn(f64) -> f64| -> f64 {
        let (lo, hi) = (n.floor(), n.ceil());
        let pick = if key(hi) < key(lo) { hi } else { lo };
        pick.max(1.0)
    };
    if x / y >= aspect {
        let nx = round(y * aspect, &|n| (aspect - n / y).abs());
        Some((nx as u32, bh))
    } else {
        let ny = round(x / aspect, &|n| {
            if n == 0.0 {
                0.0
            } else {
                (aspect - x / n).abs()
            }
        });
        Some((bw, ny as u32))
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Everything an image becomes, in order: the full image, then each thumbnail.
///
/// # Errors
///
/// Not an image, a decompression bomb, too small, or an encoding failure (the text is
/// the pipeline's message).
pub fn convert(body: &[u8], job: &ImageJob) -> Result<Vec<Converted>, String> {
    let reader = ImageReader::new(Cursor::new(body))
        .with_guessed_format()
        .map_err(err)?;
    if reader.format().is_none() {
        return Err("cannot identify image file".into());
    }
    let (w, h) = ImageReader::new(Cursor::new(body))
        .with_guessed_format()
        .map_err(err)?
        .into_dimensions()
        .map_err(err)?;
    let pixels = u64::from(w) * u64::from(h);
    if pixels > 2 * MAX_IMAGE_PIXELS {
        return Err(format!(
            "Image size ({pixels} pixels) exceeds limit of {} pixels, could be decompression \
             bomb DOS attack.",
            2 * MAX_IMAGE_PIXELS
        ));
    }
    if pixels > MAX_IMAGE_PIXELS {
        log::warn!(
            "DecompressionBombWarning: Image size ({pixels} pixels) exceeds limit of \
             {MAX_IMAGE_PIXELS} pixels, could be decompression bomb DOS attack."
        );
    }
    let mut reader = reader;
    let mut limits = Limits::default();
    // Room for the largest image allowed, as RGBA with 16 bits a channel.
    limits.max_alloc = Some(2 * MAX_IMAGE_PIXELS * 8 + (64 << 20));
    reader.limits(limits);
    let mut decoder = reader.into_decoder().map_err(err)?;
    let orientation = decoder.orientation().map_err(err)?;
    let mut image = DynamicImage::from_decoder(decoder).map_err(err)?;
    image.apply_orientation(orientation);
    let (w, h) = (image.width(), image.height());
    if w < job.min_width || h < job.min_height {
        return Err(format!(
            "Image too small ({w}x{h} < {}x{})",
            job.min_width, job.min_height
        ));
    }
    let rgb = to_rgb(&image);
    drop(image);
    let full = jpeg(&rgb)?;
    let mut out = vec![Converted {
        thumb: None,
        md5: super::store::md5_hex(&full),
        jpeg: full,
        width: w,
        height: h,
    }];
    for (id, bw, bh) in &job.thumbs {
        let thumb = match thumbnail_size(w, h, *bw, *bh) {
            Some((tw, th)) => {
                image::imageops::resize(&rgb, tw, th, image::imageops::FilterType::Lanczos3)
            }
            None => rgb.clone(),
        };
        out.push(Converted {
            thumb: Some(id.clone()),
            md5: String::new(),
            jpeg: jpeg(&thumb)?,
            width: thumb.width(),
            height: thumb.height(),
        });
    }
    Ok(out)
}

/// RGB as `convert_image`: an image with transparency is laid over white.
fn to_rgb(image: &DynamicImage) -> RgbImage {
    if !image.color().has_alpha() {
        return image.to_rgb8();
    }
    let rgba = image.to_rgba8();
    let mut rgb = RgbImage::new(rgba.width(), rgba.height());
    for (dst, src) in rgb.pixels_mut().zip(rgba.pixels()) {
        let a = u32::from(src[3]);
        for c in 0..3 {
            let v = (u32::from(src[c]) * a + 255 * (255 - a) + 127) / 255;
            dst[c] = v as u8;
        }
    }
    rgb
}

fn jpeg(image: &RgbImage) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 75)
        .encode_image(image)
        .map_err(err)?;
    Ok(out)
}

struct Task {
    body: Vec<u8>,
    job: Arc<ImageJob>,
    reply: ThreadResult<Result<Vec<Converted>, String>>,
}

/// The image threads (started on first use).
pub struct ImagePool {
    reactor: ReactorHandle,
    tasks: Sender<Task>,
    queue: Arc<Mutex<Receiver<Task>>>,
    started: std::cell::Cell<usize>,
}

impl std::fmt::Debug for ImagePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImagePool")
            .field("threads", &self.started.get())
            .finish()
    }
}

impl ImagePool {
    /// A pool delivering to `reactor`.
    pub fn new(reactor: &ReactorHandle) -> Self {
        let (tasks, queue) = channel();
        Self {
            reactor: reactor.clone(),
            tasks,
            queue: Arc::new(Mutex::new(queue)),
            started: std::cell::Cell::new(0),
        }
    }

    fn spawn(&self) {
        let queue = self.queue.clone();
        let spawned = std::thread::Builder::new()
            .name("trawl-images".into())
            .spawn(move || {
                loop {
                    let task = {
                        let rx = queue.lock().unwrap_or_else(|p| p.into_inner());
                        rx.recv()
                    };
                    let Ok(task) = task else { return };
                    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        convert(&task.body, &task.job)
                    }))
                    .unwrap_or_else(|_| Err("the image decoder panicked".into()));
                    task.reply.send(result);
                }
            });
        match spawned {
            Ok(_) => self.started.set(self.started.get() + 1),
            Err(e) => log::error!("could not start an image thread: {e}"),
        }
    }

    /// Converts `body` on a pool thread; the Deferred fires on the reactor thread.
    pub fn convert(&self, body: Vec<u8>, job: Arc<ImageJob>) -> Deferred<Vec<Converted>> {
        if self.started.get() < THREADS {
            self.spawn();
        }
        let d = Deferred::new();
        let fire = d.clone();
        let reply = self.reactor.expect_from_thread(move |r| {
            let _ = match r {
                Ok(Ok(images)) => fire.callback(images),
                Ok(Err(e)) => fire.errback(Failure::msg(e)),
                Err(_) => fire.errback(Failure::msg("the image thread is gone")),
            };
        });
        if self.tasks.send(Task { body, job, reply }).is_err() {
            // The receiver lives in this pool: unreachable, but the dropped reply
            // reports it all the same.
            log::error!("the image queue is closed");
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thumbnail_sizes_as_pillow() {
        // Recorded with Pillow 12.3 (`Image.new("RGB", (w, h)).thumbnail(box)`).
        let cases = [
            ((640, 480, 50, 50), (50, 38)),
            ((480, 640, 50, 50), (37, 50)),
            ((640, 480, 270, 270), (270, 203)),
            ((100, 3, 50, 50), (50, 2)),
            ((1000, 333, 270, 270), (270, 90)),
            ((333, 1000, 50, 50), (17, 50)),
            ((7, 1000, 50, 50), (1, 50)),
        ];
        for ((w, h, bw, bh), size) in cases {
            assert_eq!(
                thumbnail_size(w, h, bw, bh),
                Some(size),
                "{w}x{h} in {bw}x{bh}"
            );
        }
        assert_eq!(thumbnail_size(40, 30, 50, 50), None);
    }
}
