//! [`Limits`]: the bounds a response parse keeps to, and [`HttpError`], how a
//! response breaks them or HTTP/1.1's rules.

use std::fmt;

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
