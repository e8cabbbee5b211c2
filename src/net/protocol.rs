//! Twisted's [`Protocol`] and [`Transport`]: the seam between a connection and the
//! code that speaks over it, and how a connection ends ([`ConnectionDone`],
//! [`ConnectionLost`]).

use std::fmt;
use std::net::SocketAddr;
use std::rc::Rc;

use crate::defer::Failure;

/// The byte pipe a [`Protocol`] writes to: Twisted's `ITransport` with
/// `IPushProducer`.
pub trait Transport {
    /// Queues bytes for sending. Writing after `lose_connection` is ignored.
    fn write(&self, data: &[u8]);

    /// Closes the connection once everything written so far has been sent.
    fn lose_connection(&self);

    /// Closes the connection now, discarding unsent data.
    fn abort_connection(&self);

    /// Stops reading from the connection until [`resume_producing`](Self::resume_producing)
    /// (backpressure from a slow consumer).
    fn pause_producing(&self);

    /// Resumes reading after [`pause_producing`](Self::pause_producing).
    fn resume_producing(&self);

    /// The remote address, when connected over a network.
    fn peer(&self) -> Option<SocketAddr>;

    /// The local address, when connected over a network.
    fn host(&self) -> Option<SocketAddr>;

    /// Hands this connection's bytes to `protocol` from now on and calls its
    /// `connection_made`.
    fn attach(&self, protocol: Rc<dyn Protocol>);

    /// Whether the connection is closed (or closing with nothing left to send).
    fn is_closed(&self) -> bool;

    /// Registers a pull producer (Twisted's `registerProducer(producer, False)`):
    /// `producer` is called, on a later reactor turn, whenever everything written so
    /// far has been sent, until [`unregister_producer`](Self::unregister_producer) or
    /// the close. A sender of a large body writes one chunk per call and so holds one
    /// chunk in memory.
    fn register_producer(&self, producer: Rc<dyn Fn()>);

    /// Stops calling the registered producer.
    fn unregister_producer(&self);

    /// For a TLS connection whose handshake is done: whether it resumed an earlier
    /// session. `None` for plain connections and handshakes still running.
    fn tls_resumed(&self) -> Option<bool> {
        None
    }
}

/// What reacts to a connection's events: Twisted's `IProtocol`.
pub trait Protocol {
    /// The connection is up; `transport` is how to write to it.
    fn connection_made(&self, transport: Rc<dyn Transport>);

    /// Bytes arrived. They may be any slice of the stream: split anywhere.
    fn data_received(&self, data: &[u8]);

    /// The connection is gone: [`ConnectionDone`] for a clean close, anything else
    /// (usually [`ConnectionLost`]) otherwise.
    fn connection_lost(&self, reason: Failure);
}

/// The connection was closed cleanly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionDone;

impl fmt::Display for ConnectionDone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("connection was closed cleanly")
    }
}

impl std::error::Error for ConnectionDone {}

/// The connection was lost in a non-clean fashion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionLost {
    /// What happened, for logs.
    pub reason: String,
}

impl fmt::Display for ConnectionLost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "connection was lost in a non-clean fashion: {}",
            self.reason
        )
    }
}

impl std::error::Error for ConnectionLost {}
