//! Layer 2: sans-IO protocol codecs. Bytes in, events out; encoders append to a
//! `Vec<u8>`. Nothing here touches a socket, a clock, the reactor or a Deferred (see
//! `tests/layering.rs`), so every codec is tested byte by byte — every split point of
//! the input — and fuzzed.
//!
//! * [`http1`]: HTTP/1.1 request serialisation and the response parser (status line,
//!   headers, Content-Length / chunked / read-until-close bodies, limits).
//! * [`decode`]: streaming content decoding (gzip, deflate, br, zstd) with an output limit, so
//!   a decompression bomb stops at the limit instead of filling memory.
//! * [`date`]: HTTP dates (IMF-fixdate, RFC 850, asctime) to and from UNIX seconds.
//! * [`resp`]: RESP, the Redis protocol: command encoding and a resumable reply
//!   parser.
//! * [`sigv4`]: AWS Signature Version 4 for S3 requests (botocore's signer).
//! * [`socks5`]: the SOCKS5 client handshake (RFC 1928) with username/password
//!   authentication (RFC 1929).
//! * [`ftp`]: the FTP control connection: replies (single and multi-line), commands,
//!   `PASV` / `PORT` addresses.
//! * [`Headers`]: ordered, multi-valued, case-insensitive header storage shared by
//!   requests and responses at every layer above.

pub mod cluster;
pub mod date;
pub mod decode;
pub mod ftp;
pub mod headers;
pub mod http1;
pub mod resp;
pub mod sigv4;
pub mod socks5;

#[doc(hidden)]
pub mod fuzzing;

pub use headers::Headers;
