//! The fixture site's media section, for the files and images pipelines:
//! `/media/index.html` lists items (`<div class="item">` with a name and links to
//! files), and `/media/files/NAME` serves each file's bytes — a duplicate link across
//! and within items, a redirect to a file (`/media/redirect/NAME`), a 404, an empty
//! file, a name without an extension and one with a query. `/media/images.html` lists
//! items with images (`/media/images/NAME`): a JPEG, a PNG with transparency, a GIF
//! with a palette, one too small, a decompression bomb (a PNG header announcing
//! 30,000 × 30,000 pixels), a corrupt one, a missing one, and `/media/images/large-N.jpg`
//! (a 12-megapixel photo-like JPEG, for the stall check).

use super::reply::{Reply, Req, html, redirect};

/// The items of `/media/index.html`: a name and the paths its file links point to.
pub const ITEMS: &[(&str, &[&str])] = &[
    (
        "report",
        &["/media/files/report.pdf", "/media/files/data.csv"],
    ),
    (
        "duplicates",
        &[
            "/media/files/report.pdf",
            "/media/files/photo.jpg",
            "/media/files/photo.jpg",
        ],
    ),
    ("redirected", &["/media/redirect/moved.pdf"]),
    (
        "missing",
        &["/media/files/missing.pdf", "/media/files/notes.txt"],
    ),
    ("empty", &["/media/files/empty.bin"]),
    (
        "no-extension",
        &["/media/files/download?id=7", "/media/files/archive.tar.gz"],
    ),
    ("none", &[]),
];

/// The items of `/media/images.html`.
pub const IMAGE_ITEMS: &[(&str, &[&str])] = &[
    (
        "photos",
        &["/media/images/photo.jpg", "/media/images/logo.png"],
    ),
    (
        "icons",
        &[
            "/media/images/icon.gif",
            "/media/images/tiny.png",
            "/media/images/logo.png",
        ],
    ),
    (
        "broken",
        &[
            "/media/images/bomb.png",
            "/media/images/corrupt.jpg",
            "/media/images/missing.png",
        ],
    ),
];

/// A deterministic picture of `w` × `h` with an alpha channel when `alpha`.
fn picture(w: u32, h: u32, alpha: bool) -> image::DynamicImage {
    let img = image::RgbaImage::from_fn(w, h, |x, y| {
        let a = if alpha {
            ((x * 255) / w.max(1)) as u8
        } else {
            255
        };
        image::Rgba([
            (x * 7 % 256) as u8,
            (y * 5 % 256) as u8,
            ((x + y) % 256) as u8,
            a,
        ])
    });
    image::DynamicImage::ImageRgba8(img)
}

fn encode(img: &image::DynamicImage, format: image::ImageFormat) -> Option<Vec<u8>> {
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, format).ok()?;
    Some(out.into_inner())
}

/// A PNG whose header announces `w` × `h` pixels and whose data is one empty block.
fn png_header_only(w: u32, h: u32) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = |kind: &[u8], data: &[u8]| {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(kind);
        crc.update(data);
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        out.extend_from_slice(&crc.finalize().to_be_bytes());
    };
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(b"IHDR", &ihdr);
    chunk(b"IDAT", &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]);
    chunk(b"IEND", &[]);
    out
}

/// The bytes of image `name` (deterministic; `None`: a 404).
pub fn image_body(name: &str) -> Option<Vec<u8>> {
    use image::ImageFormat;
    match name {
        "photo.jpg" => encode(
            &picture(640, 480, false).to_rgb8().into(),
            ImageFormat::Jpeg,
        ),
        "logo.png" => encode(&picture(200, 100, true), ImageFormat::Png),
        "icon.gif" => encode(&picture(64, 64, false), ImageFormat::Gif),
        "tiny.png" => encode(&picture(10, 10, false), ImageFormat::Png),
        "bomb.png" => Some(png_header_only(30_000, 30_000)),
        "corrupt.jpg" => Some(b"\xff\xd8\xff\xe0 this is not really a JPEG".to_vec()),
        _ => {
            let n = name.strip_prefix("large-")?.strip_suffix(".jpg")?;
            n.parse::<u32>().ok()?;
            static LARGE: std::sync::OnceLock<Option<Vec<u8>>> = std::sync::OnceLock::new();
            LARGE
                .get_or_init(|| {
                    encode(
                        &picture(4000, 3000, false).to_rgb8().into(),
                        ImageFormat::Jpeg,
                    )
                })
                .clone()
        }
    }
}

/// The page listing [`IMAGE_ITEMS`].
pub fn images_index() -> String {
    listing(IMAGE_ITEMS)
}

/// The bytes of file `name` (deterministic; `None`: a 404).
pub fn file_body(name: &str) -> Option<Vec<u8>> {
    match name {
        "missing.pdf" => None,
        "empty.bin" => Some(Vec::new()),
        _ => {
            let line = format!("fixture file {name}\n");
            let times = 1 + name.len() * 37;
            Some(line.repeat(times).into_bytes())
        }
    }
}

/// The page listing [`ITEMS`].
pub fn index() -> String {
    listing(ITEMS)
}

fn listing(items: &[(&str, &[&str])]) -> String {
    let mut out = String::from("<html><head><title>Media</title></head><body>\n");
    for (name, links) in items {
        out.push_str(&format!("<div class=\"item\"><h2>{name}</h2>\n"));
        for l in *links {
            out.push_str(&format!("  <a class=\"file\" href=\"{l}\">{l}</a>\n"));
        }
        out.push_str("</div>\n");
    }
    out.push_str("</body></html>\n");
    out
}

/// Answers a path under `/media/` (`rest` is after `/media/`), or `None`.
pub(super) fn route(req: &Req, rest: &str) -> Option<Reply> {
    if rest == "index.html" {
        return Some(html(200, index()));
    }
    if rest == "images.html" {
        return Some(html(200, images_index()));
    }
    if let Some(name) = rest.strip_prefix("images/") {
        return Some(match image_body(name) {
            Some(body) => Reply::Full {
                status: 200,
                headers: vec![("Content-Type".into(), "image/octet-stream".into())],
                body,
                close: false,
            },
            None => html(404, "<h1>Not Found</h1>".into()),
        });
    }
    if let Some(name) = rest.strip_prefix("redirect/") {
        return Some(redirect(302, &format!("/media/files/{name}")));
    }
    let name = rest.strip_prefix("files/")?;
    let name = if req.query.is_empty() {
        name.to_owned()
    } else {
        let q: Vec<String> = req.query.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{name}?{}", q.join("&"))
    };
    Some(match file_body(&name) {
        Some(body) => Reply::Full {
            status: 200,
            headers: vec![("Content-Type".into(), "application/octet-stream".into())],
            body,
            close: false,
        },
        None => html(404, "<h1>Not Found</h1>".into()),
    })
}
