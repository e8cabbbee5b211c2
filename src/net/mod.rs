//! Layer 3 (network): Twisted's connection model — a [`Protocol`] reacts to bytes, a
//! [`Transport`] moves them — and the errors a connection ends with.
//!
//! The protocol/transport split keeps protocols testable without sockets: a protocol
//! written against `Rc<dyn Transport>` runs unchanged over a TCP or TLS transport or over
//! [`StringTransport`](crate::testing::StringTransport) in a unit test.
//!
//! # Re-entrancy
//!
//! Transports and protocols take `&self` and use interior mutability. A transport never
//! holds a borrow of its own state while calling into its protocol, and a protocol never
//! holds one while firing Deferreds, because a callback may call straight back into
//! either of them (write a follow-up request, close the connection).

pub mod connector;
pub mod dns;
mod protocol;
pub mod tcp;
pub mod tls;
pub mod tls_ciphers;
pub mod tls_layer;
pub mod tls_sessions;

pub use connector::{
    Connector, ConnectorConfig, Endpoint, ProxyEndpoint, ProxyKind, TlsOptions, TunnelError,
};
pub use protocol::{ConnectionDone, ConnectionLost, Protocol, Transport};
