//! The fixture server's side of an exchange: a parsed request ([`Req`]), the reply a
//! route gives ([`Reply`]), and the helpers routes build replies with.

use std::io::{self, Write as _};

/// A parsed request.
pub(super) struct Req {
    pub(super) method: String,
    pub(super) target: String,
    pub(super) path: String,
    pub(super) query: Vec<(String, String)>,
    pub(super) headers: Vec<(String, String)>,
    pub(super) body: Vec<u8>,
    pub(super) version: u8,
    /// The client's address, as the server's socket sees it.
    pub(super) peer: Option<std::net::SocketAddr>,
}

impl Req {
    /// A request header's value (name compared without case).
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub(super) fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub(super) fn param_u64(&self, name: &str, default: u64) -> u64 {
        self.param(name)
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }

    pub(super) fn wants_close(&self) -> bool {
        let conn = self
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("connection"))
            .map(|(_, v)| v.to_ascii_lowercase());
        match conn.as_deref() {
            Some(v) if v.contains("close") => true,
            Some(v) if v.contains("keep-alive") => false,
            _ => self.version == 0,
        }
    }
}

/// What to send back.
pub(super) enum Reply {
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
        close: bool,
    },
    Chunked {
        status: u16,
        headers: Vec<(String, String)>,
        chunks: Vec<Vec<u8>>,
    },
    /// Raw bytes, then close.
    Raw(Vec<u8>),
    Delay(u64, Box<Reply>),
    Drip {
        head: Vec<u8>,
        bytes: u64,
        interval_ms: u64,
    },
    Reset,
}

pub(super) fn reason(status: u16) -> &'static str {
    crate::proto::http1::reason_phrase(status).unwrap_or("Status")
}

pub(super) fn set_cookies(values: Vec<String>) -> Reply {
    let mut headers: Vec<(String, String)> = values
        .into_iter()
        .map(|v| ("Set-Cookie".to_owned(), v))
        .collect();
    headers.push(("Content-Type".into(), "text/plain".into()));
    Reply::Full {
        status: 200,
        headers,
        body: b"cookies set".to_vec(),
        close: false,
    }
}

pub(super) fn html(status: u16, body: String) -> Reply {
    Reply::Full {
        status,
        headers: vec![("Content-Type".into(), "text/html; charset=utf-8".into())],
        body: body.into_bytes(),
        close: false,
    }
}

pub(super) fn text(status: u16, body: impl Into<String>) -> Reply {
    Reply::Full {
        status,
        headers: vec![("Content-Type".into(), "text/plain; charset=utf-8".into())],
        body: body.into().into_bytes(),
        close: false,
    }
}

pub(super) fn redirect(status: u16, location: &str) -> Reply {
    Reply::Full {
        status,
        headers: vec![
            ("Location".into(), location.to_owned()),
            ("Content-Type".into(), "text/html".into()),
        ],
        body: format!("<a href=\"{location}\">moved</a>").into_bytes(),
        close: false,
    }
}

/// `application/x-www-form-urlencoded` decoding: `+` is a space, then percent-decoding.
pub(super) fn form_decode(s: &str) -> String {
    let spaced = s.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced)
        .decode_utf8_lossy()
        .into_owned()
}

pub(super) fn compress(encoding: &str, data: &[u8]) -> io::Result<Vec<u8>> {
    match encoding {
        "gzip" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(data)?;
            e.finish()
        }
        "deflate" => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(data)?;
            e.finish()
        }
        "deflate-raw" => {
            let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(data)?;
            e.finish()
        }
        "zstd" => zstd::stream::encode_all(data, 3),
        _ => {
            let mut out = Vec::new();
            {
                let mut w = brotli::CompressorWriter::new(&mut out, 64 * 1024, 1, 22);
                w.write_all(data)?;
            }
            Ok(out)
        }
    }
}
