//! TLS over any [`Transport`] (Twisted's `TLSMemoryBIOProtocol`): [`TlsLayer`] is the
//! protocol of the transport below it and the transport of the protocol above it, so a
//! TLS session can run inside another — a site's TLS inside an `https://` proxy's
//! `CONNECT` tunnel, itself TLS to the proxy.
//!
//! A TCP connection's own TLS stays inside [`TcpTransport`](super::tcp::TcpTransport),
//! where records go straight to the socket; this layer is for what runs over a
//! transport that is not a socket. Plaintext written during the handshake waits in a
//! buffer and goes out once the handshake is done, as the TCP transport's does.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::rc::{Rc, Weak};
use std::sync::Arc;

use super::protocol::{ConnectionDone, ConnectionLost, Protocol, Transport};
use super::tcp::TlsError;
use crate::defer::Failure;

struct State {
    tls: rustls::ClientConnection,
    /// Plaintext written before the handshake finished.
    pending: Vec<u8>,
    /// The peer sent close_notify.
    peer_closed: bool,
    /// Closing: close_notify goes out once the handshake allows.
    closing: bool,
}

/// A TLS client session over the transport below.
pub struct TlsLayer {
    lower: Rc<dyn Transport>,
    state: RefCell<State>,
    upper: RefCell<Option<Rc<dyn Protocol>>>,
    /// `connection_lost` was delivered upward (once only).
    lost: Cell<bool>,
    me: Weak<TlsLayer>,
}

impl TlsLayer {
    /// Starts a TLS client handshake for `host` over `lower` and attaches itself as
    /// `lower`'s protocol. Attach the protocol that speaks over TLS with
    /// [`Transport::attach`]; a failed handshake reaches it as `connection_lost` with a
    /// [`TlsError`].
    ///
    /// # Errors
    ///
    /// The server name is invalid or rustls refused the configuration.
    pub fn start(
        lower: Rc<dyn Transport>,
        config: Arc<rustls::ClientConfig>,
        host: &str,
    ) -> Result<Rc<Self>, Failure> {
        let name = super::tls::server_name(host)?;
        let tls = rustls::ClientConnection::new(config, name)
            .map_err(|e| Failure::new(TlsError(e.to_string())))?;
        let layer = Rc::new_cyclic(|me| Self {
            lower: lower.clone(),
            state: RefCell::new(State {
                tls,
                pending: Vec::new(),
                peer_closed: false,
                closing: false,
            }),
            upper: RefCell::new(None),
            lost: Cell::new(false),
            me: me.clone(),
        });
        lower.attach(layer.clone());
        layer.pump();
        Ok(layer)
    }

    /// Whether the handshake is still running.
    pub fn is_handshaking(&self) -> bool {
        self.state.borrow().tls.is_handshaking()
    }

    /// Moves pending plaintext into rustls once the handshake allows, and every record
    /// rustls has to send down to the transport below.
    fn pump(&self) {
        let out = {
            let mut st = self.state.borrow_mut();
            let st = &mut *st;
            if !st.tls.is_handshaking() {
                if !st.pending.is_empty() {
                    let pending = std::mem::take(&mut st.pending);
                    // The writer buffers whatever the session cannot seal yet.
                    let _ = st.tls.writer().write_all(&pending);
                }
                if st.closing {
                    st.tls.send_close_notify();
                }
            }
            let mut out = Vec::new();
            while st.tls.wants_write() {
                match st.tls.write_tls(&mut out) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            out
        };
        if !out.is_empty() {
            self.lower.write(&out);
        }
        let close = {
            let st = self.state.borrow();
            st.closing && !st.tls.is_handshaking() && !st.tls.wants_write()
        };
        if close {
            self.lower.lose_connection();
        }
    }

    /// Reports the end upward, once.
    fn lost(&self, reason: Failure) {
        if self.lost.replace(true) {
            return;
        }
        let upper = self.upper.borrow_mut().take();
        if let Some(p) = upper {
            p.connection_lost(reason);
        }
    }
}

impl Protocol for TlsLayer {
    fn connection_made(&self, _transport: Rc<dyn Transport>) {}

    fn data_received(&self, data: &[u8]) {
        let mut plain = Vec::new();
        let mut failure = None;
        {
            let mut st = self.state.borrow_mut();
            let mut rest = data;
            while !rest.is_empty() {
                match st.tls.read_tls(&mut rest) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) => {
                        failure = Some(Failure::new(TlsError(e.to_string())));
                        break;
                    }
                }
                match st.tls.process_new_packets() {
                    Ok(state) => {
                        if state.peer_has_closed() {
                            st.peer_closed = true;
                        }
                    }
                    Err(e) => {
                        failure = Some(Failure::new(TlsError(e.to_string())));
                        break;
                    }
                }
                let mut buf = [0u8; 16 * 1024];
                loop {
                    match st.tls.reader().read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => plain.extend_from_slice(&buf[..n]),
                        Err(_) => break,
                    }
                }
            }
        }
        // Handshake records, the alert of a failure, or pending plaintext.
        self.pump();
        if !plain.is_empty() {
            let upper = self.upper.borrow().clone();
            if let Some(p) = upper {
                p.data_received(&plain);
            }
        }
        if let Some(f) = failure {
            self.lower.abort_connection();
            self.lost(f);
        } else if self.state.borrow().peer_closed {
            self.lower.lose_connection();
        }
    }

    fn connection_lost(&self, reason: Failure) {
        let clean = self.state.borrow().peer_closed;
        let reason = if clean {
            Failure::new(ConnectionDone)
        } else if reason.check::<ConnectionDone>() {
            Failure::new(ConnectionLost {
                reason: "TLS connection closed without close_notify".into(),
            })
        } else {
            reason
        };
        self.lost(reason);
    }
}

impl Transport for TlsLayer {
    fn write(&self, data: &[u8]) {
        {
            let mut st = self.state.borrow_mut();
            if st.closing {
                return;
            }
            if st.tls.is_handshaking() || !st.pending.is_empty() {
                st.pending.extend_from_slice(data);
            } else {
                let _ = st.tls.writer().write_all(data);
            }
        }
        self.pump();
    }

    fn lose_connection(&self) {
        self.state.borrow_mut().closing = true;
        self.pump();
    }

    fn abort_connection(&self) {
        self.lower.abort_connection();
    }

    fn pause_producing(&self) {
        self.lower.pause_producing();
    }

    fn resume_producing(&self) {
        self.lower.resume_producing();
    }

    fn peer(&self) -> Option<SocketAddr> {
        self.lower.peer()
    }

    fn host(&self) -> Option<SocketAddr> {
        self.lower.host()
    }

    fn attach(&self, protocol: Rc<dyn Protocol>) {
        *self.upper.borrow_mut() = Some(protocol.clone());
        if let Some(me) = self.me.upgrade() {
            protocol.connection_made(me);
        }
    }

    fn is_closed(&self) -> bool {
        self.lost.get() || self.lower.is_closed()
    }

    fn register_producer(&self, producer: Rc<dyn Fn()>) {
        self.lower.register_producer(producer);
    }

    fn unregister_producer(&self) {
        self.lower.unregister_producer();
    }

    fn tls_resumed(&self) -> Option<bool> {
        let st = self.state.borrow();
        if st.tls.is_handshaking() {
            return None;
        }
        st.tls
            .handshake_kind()
            .map(|k| k == rustls::HandshakeKind::Resumed)
    }
}

impl fmt::Debug for TlsLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsLayer")
            .field("handshaking", &self.is_handshaking())
            .field("lost", &self.lost.get())
            .finish_non_exhaustive()
    }
}
