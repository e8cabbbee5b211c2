//! # trawl
//!
//! Scrapy's execution engine and the scrapy-redis layer, in Rust, on a hand-written,
//! single-threaded, Twisted-style reactor built on `mio`. No async runtime: the reactor,
//! its timers and its Deferreds are this crate's own.
//!
//! ## Layers, bottom up
//!
//! ```text
//! reactor   mio loop, Clock + timers (call_later), I/O dispatch by Token, thread waker
//! defer     Deferred<T>, Failure, DeferredList          task  LoopingCall, CallLaterOnce
//! net       Protocol / Transport (TCP, TLS)             (sans-IO codecs: HTTP/1.1, RESP)
//! clients   HTTP client with pooling, Redis client
//! crawl     engine, scheduler, downloader, scraper, middlewares, extensions, JOBDIR
//! distributed  shared queue with leases, dupefilter, pipeline, stats, Redis-fed spider
//! cli       the `trawl` command
//! ```
//!
//! A lower layer never imports a higher one (`tests/layering.rs` enforces it).
//! `DESIGN.md` describes each layer, the data flow of one request and the Deferred chain.
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
