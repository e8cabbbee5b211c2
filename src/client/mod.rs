//! Layer 4: protocol clients on the reactor. Each one moves bytes between a transport
//! (`net`) and a sans-IO codec (`proto`) and reports results as Deferreds.
//!
//! * [`http`]: the HTTP/1.1 client the downloader uses — connection pool, proxies,
//!   TLS, timeouts, size limits, content decoding.
//! * [`redis`]: the Redis client the distributed layer uses — pipelining, scripts,
//!   transactions, reconnection with backoff.
//! * [`ftp`]: an FTP client that stores a file (passive or active data connection,
//!   missing directories made) for feed storages and media stores.
//! * [`s3`]: an S3 client over [`http`] (Signature Version 4, single and multipart
//!   uploads) for feed storages and media stores.

pub mod ftp;
pub mod http;
pub mod redis;
pub mod s3;
