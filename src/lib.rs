//! # trawl
//!
//! Scrapy's execution engine and the scrapy-redis layer, in Rust, on a hand-written,
//! single-threaded, Twisted-style reactor built on `mio`. No async runtime: the reactor,
//! its timers and its Deferreds are this crate's own.
//!
//! ## Layers, bottom up
//!
//! ```text
//! util         leaf helpers every layer may use (Fx hashing, buffer pools, base64, hex)
//! reactor      mio loop, Clock + timers (call_later), I/O dispatch by Token, thread calls
//! defer, task  Deferred<T>, Failure, DeferredList; LoopingCall, CallLaterOnce
//! proto        sans-IO codecs: HTTP/1.1, RESP, content decoding (beside the reactor, not on it)
//! net          Protocol / Transport, TCP, TLS, DNS, the connector
//! client       the HTTP client with pooling, the Redis client
//! html         the HTML parser, CSS selectors, XPath (independent of the I/O layers)
//! crawl        Scrapy's engine, scheduler, downloader, scraper, middlewares,
//!              extensions, spiders, JOBDIR (crawl/mod.rs has its rooms)
//! distributed  the shared queue with leases, dupefilter, pipeline, stats, Redis-fed spider
//! testing      test doubles, the fixture site and server
//! cli          the `trawl` command
//! ```
//!
//! A lower layer never imports a higher one, and no files import each other in a
//! circle (`tests/layering.rs` enforces both, with the same table). `DESIGN.md`
//! describes each layer, the data flow of one request and the Deferred chain.
//!
//! ## Test doubles
//!
//! [`testing`] ships what a user needs to unit-test code built on these layers without a
//! network or a real clock: `ManualClock`, `success_result_of`, `StringTransport`.

#![forbid(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations, rust_2018_idioms)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![doc(test(attr(deny(warnings))))]

pub mod cli;
pub mod client;
pub mod crawl;
pub mod defer;
pub mod distributed;
pub mod html;
pub mod net;
pub mod proto;
pub mod reactor;
pub mod task;
pub mod testing;
pub mod util;

/// The README's code examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
