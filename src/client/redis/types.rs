//! The Redis client's public types: its errors, [`Script`] and [`RedisCounters`].

use std::fmt;
use std::rc::Rc;

use sha1::{Digest, Sha1};

/// The server answered a command with an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyError {
    /// The error line, e.g. `WRONGTYPE Operation against a key holding the wrong kind
    /// of value`.
    pub message: String,
}

impl ReplyError {
    /// The error's first word (`ERR`, `WRONGTYPE`, `NOSCRIPT`, `NOAUTH`, ...).
    pub fn kind(&self) -> &str {
        self.message.split(' ').next().unwrap_or("")
    }
}

impl fmt::Display for ReplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Redis error: {}", self.message)
    }
}

impl std::error::Error for ReplyError {}

/// The connection carrying a command sent with [`RedisClient::command_once`](super::RedisClient::command_once) was lost
/// before its reply: it may or may not have run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisConnectionError {
    /// What happened.
    pub reason: String,
}

impl fmt::Display for RedisConnectionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Redis connection lost: {}", self.reason)
    }
}

impl std::error::Error for RedisConnectionError {}

/// Too many commands are waiting for a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferFull {
    /// [`RedisConfig::max_buffered`](super::RedisConfig::max_buffered).
    pub limit: usize,
}

impl fmt::Display for BufferFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Redis is unreachable and {} commands are already waiting",
            self.limit
        )
    }
}

impl std::error::Error for BufferFull {}

/// The client was closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientClosed;

impl fmt::Display for ClientClosed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the Redis client is closed")
    }
}

impl std::error::Error for ClientClosed {}

/// A Lua script, run with `EVALSHA` (falling back to `EVAL`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    source: Rc<str>,
    sha: Rc<str>,
}

impl Script {
    /// A script; its SHA-1 is computed once.
    pub fn new(source: &str) -> Self {
        let mut out = String::with_capacity(40);
        for b in Sha1::digest(source.as_bytes()) {
            out.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
            out.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
        }
        Self {
            source: source.into(),
            sha: out.into(),
        }
    }

    /// The source.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The SHA-1 in hex, as `EVALSHA` wants it.
    pub fn sha(&self) -> &str {
        &self.sha
    }
}

/// What the client has done, for stats and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RedisCounters {
    /// Commands written (a transaction counts each of its commands plus
    /// `MULTI`/`EXEC`; a retried command counts again).
    pub commands: u64,
    /// Writes that carried at least one command: each is one round trip, however
    /// many commands it pipelined.
    pub round_trips: u64,
    /// Replies received.
    pub replies: u64,
    /// Bytes written.
    pub bytes_sent: u64,
    /// Bytes read.
    pub bytes_received: u64,
    /// Connections established (the first one included).
    pub connects: u64,
    /// Connection attempts that failed.
    pub connect_failures: u64,
    /// Connections lost after being established.
    pub disconnects: u64,
    /// Commands sent again after a connection was lost.
    pub retried: u64,
    /// Sentinel mode: failovers announced by the sentinels (`+switch-master`) that
    /// moved the client off the master it was connected or connecting to.
    pub master_switches: u64,
}
