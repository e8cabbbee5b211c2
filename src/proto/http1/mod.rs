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

mod limits;
mod request;
mod response;
mod status;

pub use limits::{HttpError, Limits};
pub use request::{EncodeError, encode_request};
pub use response::{Event, ResponseHead, ResponseParser};
pub use status::{reason_phrase, status_message};
