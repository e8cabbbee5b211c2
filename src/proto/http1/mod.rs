//! HTTP/1.1, sans-IO: [`encode_request`] writes a request into a `Vec<u8>`;
//! [`ResponseParser`] turns response bytes, split anywhere, into [`Event`]s.
//!
//! ```text
//!            ┌──────────── interim 1xx: skipped ───────────┐
//!            v                                             │
//!   ReadingHead ──head──> (HEAD / 204 / 304 / 1xx) ──────> Done
//!            │
//!            ├──Transfer-Encoding: …chunked──> Chunked: Size → Data → CRLF → … → Trailer → Done
//!            ├──Content-Length: n────────────> Length(n) → Done
//!            └──neither──────────────────────> UntilClose ──eof──> Done
//!   any state ──bad bytes / limit──> Failed(error)   (sticky: every later call returns it)
//! ```
//!
//! Incomplete input is never an error: the parser reports how many bytes it consumed
//! and waits for more. The caller owns the buffer.

mod request;
mod response;

use std::fmt;

pub use request::{EncodeError, encode_request};
pub use response::{Event, ResponseHead, ResponseParser};

/// Size limits for parsing a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest status line + header section, in bytes (64 KiB).
    pub max_head: usize,
    /// Most header fields (100, which is also the ceiling).
    pub max_headers: usize,
    /// Longest chunk-size or trailer line, in bytes (8 KiB).
    pub max_line: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_head: 64 * 1024,
            max_headers: 100,
            max_line: 8 * 1024,
        }
    }
}

/// Why a response could not be parsed. Errors are sticky: once returned, the parser
/// returns the same error on every later call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HttpError {
    /// The status line and headers exceed [`Limits::max_head`].
    HeadTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// More header fields than [`Limits::max_headers`].
    TooManyHeaders {
        /// The limit.
        limit: usize,
    },
    /// The status line or a header is malformed.
    InvalidHead(String),
    /// A chunk-size or trailer line exceeds [`Limits::max_line`].
    LineTooLong {
        /// The limit, in bytes.
        limit: usize,
    },
    /// A chunk size is not a hexadecimal number that fits in 64 bits.
    InvalidChunkSize,
    /// A chunk's data is not followed by CRLF.
    InvalidChunkTerminator,
    /// Content-Length is not a decimal number.
    InvalidContentLength,
    /// Several Content-Length values that disagree.
    ConflictingContentLength,
    /// The connection closed before any byte of a response.
    EmptyResponse,
    /// The connection closed in the middle of the head or body.
    Incomplete {
        /// Body bytes received so far.
        received: u64,
        /// Body bytes announced, when known.
        expected: Option<u64>,
    },
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::HeadTooLarge { limit } => {
                write!(f, "response head larger than {limit} bytes")
            }
            Self::TooManyHeaders { limit } => write!(f, "more than {limit} response headers"),
            Self::InvalidHead(why) => write!(f, "malformed response head: {why}"),
            Self::LineTooLong { limit } => {
                write!(f, "chunk or trailer line longer than {limit} bytes")
            }
            Self::InvalidChunkSize => f.write_str("invalid chunk size"),
            Self::InvalidChunkTerminator => f.write_str("chunk data not followed by CRLF"),
            Self::InvalidContentLength => f.write_str("invalid Content-Length"),
            Self::ConflictingContentLength => f.write_str("conflicting Content-Length values"),
            Self::EmptyResponse => f.write_str("connection closed before any response byte"),
            Self::Incomplete { received, expected } => match expected {
                Some(n) => write!(f, "response body cut short: got {received} of {n} bytes"),
                None => write!(f, "response cut short after {received} body bytes"),
            },
        }
    }
}

impl std::error::Error for HttpError {}

/// The standard reason phrase of a status code (the IANA registry, as Python's
/// `http.HTTPStatus` and Twisted's `RESPONSES` list them), or `None` for an unknown code.
pub fn reason_phrase(status: u16) -> Option<&'static str> {
    Some(match status {
        100 => "Continue",
        101 => "Switching Protocols",
        102 => "Processing",
        103 => "Early Hints",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        207 => "Multi-Status",
        208 => "Already Reported",
        226 => "IM Used",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        305 => "Use Proxy",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        418 => "I'm a Teapot",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        423 => "Locked",
        424 => "Failed Dependency",
        425 => "Too Early",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        506 => "Variant Also Negotiates",
        507 => "Insufficient Storage",
        508 => "Loop Detected",
        510 => "Not Extended",
        511 => "Network Authentication Required",
        _ => return None,
    })
}

/// Scrapy's `response_status_message`: `"503 Service Unavailable"`, or
/// `"599 Unknown Status"`.
pub fn status_message(status: u16) -> String {
    format!(
        "{status} {}",
        reason_phrase(status).unwrap_or("Unknown Status")
    )
}
