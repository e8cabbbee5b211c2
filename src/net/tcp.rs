//! TCP connections on the reactor, optionally wrapped in TLS: [`connect_tcp`],
//! [`listen_tcp`] and the [`TcpTransport`] that carries bytes between a socket and a
//! [`Protocol`].
//!
//! # Implementation notes
//!
//! mio is edge-triggered, so every readiness event is drained until `WouldBlock` — or,
//! for plain TCP on Linux, until a read returns less than the buffer (the socket buffer
//! was emptied; epoll reports the next arrival), which saves a syscall per response.
//! Writes go straight to the socket when nothing is queued; what the kernel does not
//! take is buffered, and only then is WRITABLE interest registered (and dropped again
//! once the buffer is empty). TLS sits inside the same transport: plaintext goes through
//! rustls's `writer()`, records through `write_tls`/`read_tls`, and the interest follows
//! rustls's `wants_write`. `connection_lost` is always delivered from a fresh reactor
//! call, never from inside `lose_connection`, so a protocol never re-enters itself.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::rc::{Rc, Weak};
use std::sync::Arc;

use mio::net::{TcpListener, TcpStream};
use mio::{Interest, Token};

use super::protocol::{ConnectionDone, ConnectionLost, Protocol, Transport};
use crate::defer::{Deferred, Failure, TimeoutError};
use crate::reactor::{IoHandler, ReactorHandle, Readiness};

/// Bytes read per `read` call.
const READ_CHUNK: usize = 64 * 1024;

/// Connecting failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectError {
    /// The address tried.
    pub addr: SocketAddr,
    /// What the operating system said.
    pub reason: String,
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "could not connect to {}: {}", self.addr, self.reason)
    }
}

impl std::error::Error for ConnectError {}

/// No socket could be created: the process (EMFILE) or the system (ENFILE) is out of
/// file descriptors. Not the peer's fault: the connector waits and tries again.
#[derive(Debug, Clone)]
pub struct DescriptorsExhausted {
    /// The address that was to be tried.
    pub addr: SocketAddr,
    /// What the operating system said.
    pub reason: String,
}

impl fmt::Display for DescriptorsExhausted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no socket for {}: {}", self.addr, self.reason)
    }
}

impl std::error::Error for DescriptorsExhausted {}

/// Whether an I/O error means "out of file descriptors" (EMFILE 24, ENFILE 23 on Linux
/// and the BSDs).
pub fn is_descriptor_exhaustion(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(23 | 24))
}

/// A TLS protocol error on an established connection (bad certificate, say).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsError(pub String);

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TLS error: {}", self.0)
    }
}

impl std::error::Error for TlsError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Connecting,
    Open,
    /// `lose_connection` called: close once the write buffer is flushed.
    Closing,
    Closed,
}

struct Conn {
    stream: TcpStream,
    phase: Phase,
    out: Vec<u8>,
    out_pos: usize,
    tls: Option<rustls::Connection>,
    paused: bool,
    interest: Option<Interest>,
    peer: Option<SocketAddr>,
    host: Option<SocketAddr>,
    bytes_read: u64,
    /// TLS close_notify queued (always true for plain TCP once closing).
    close_notify_sent: bool,
}

/// A TCP (or TLS-over-TCP) connection registered with the reactor.
pub struct TcpTransport {
    conn: RefCell<Conn>,
    reactor: ReactorHandle,
    token: Cell<Option<Token>>,
    protocol: RefCell<Option<Rc<dyn Protocol>>>,
    connected: RefCell<Option<Deferred<Rc<TcpTransport>>>>,
    /// A pull producer, called when the write buffer has drained.
    producer: RefCell<Option<Rc<dyn Fn()>>>,
    /// A call of the producer is scheduled.
    producer_due: Cell<bool>,
    me: Weak<TcpTransport>,
}

impl TcpTransport {
    fn create(
        reactor: &ReactorHandle,
        stream: TcpStream,
        phase: Phase,
        tls: Option<rustls::Connection>,
    ) -> Rc<Self> {
        Rc::new_cyclic(|me| Self {
            conn: RefCell::new(Conn {
                stream,
                phase,
                out: Vec::new(),
                out_pos: 0,
                tls,
                paused: false,
                interest: None,
                peer: None,
                host: None,
                bytes_read: 0,
                close_notify_sent: false,
            }),
            reactor: reactor.clone(),
            token: Cell::new(None),
            protocol: RefCell::new(None),
            connected: RefCell::new(None),
            producer: RefCell::new(None),
            producer_due: Cell::new(false),
            me: me.clone(),
        })
    }

    fn rc(&self) -> Option<Rc<Self>> {
        self.me.upgrade()
    }

    /// Switches an open plaintext connection to TLS as a client (Twisted's
    /// `startTLS`), for example after a proxy's CONNECT. Bytes written afterwards are
    /// encrypted; the handshake starts at once.
    ///
    /// # Errors
    ///
    /// The server name is invalid or rustls refused the configuration.
    pub fn start_tls(&self, config: Arc<rustls::ClientConfig>, host: &str) -> Result<(), Failure> {
        let name = super::tls::server_name(host)?;
        let tls = rustls::ClientConnection::new(config, name)
            .map_err(|e| Failure::new(TlsError(e.to_string())))?;
        self.conn.borrow_mut().tls = Some(rustls::Connection::Client(tls));
        self.flush();
        Ok(())
    }

    /// Whether the connection is TLS.
    pub fn is_tls(&self) -> bool {
        self.conn.borrow().tls.is_some()
    }

    /// The ALPN protocol the TLS peer agreed to, if any.
    pub fn alpn_protocol(&self) -> Option<Vec<u8>> {
        self.conn
            .borrow()
            .tls
            .as_ref()
            .and_then(|t| t.alpn_protocol().map(<[u8]>::to_vec))
    }

    /// Whether the connection is closed (or closing with nothing left to send).
    pub fn is_closed(&self) -> bool {
        self.conn.borrow().phase == Phase::Closed
    }

    /// Bytes received so far (ciphertext for TLS).
    pub fn bytes_read(&self) -> u64 {
        self.conn.borrow().bytes_read
    }

    /// Attaches the protocol that will receive this connection's bytes and calls its
    /// `connection_made`.
    pub fn attach(&self, protocol: Rc<dyn Protocol>) {
        *self.protocol.borrow_mut() = Some(protocol.clone());
        if let Some(me) = self.rc() {
            protocol.connection_made(me);
        }
    }

    fn protocol(&self) -> Option<Rc<dyn Protocol>> {
        self.protocol.borrow().clone()
    }

    /// Computes and applies the interest the connection needs now.
    fn update_interest(&self) {
        let Some(token) = self.token.get() else {
            return;
        };
        let mut conn = self.conn.borrow_mut();
        if conn.phase == Phase::Closed {
            return;
        }
        let tls_wants_write = conn.tls.as_ref().is_some_and(|t| t.wants_write());
        let want_write =
            conn.phase == Phase::Connecting || conn.out_pos < conn.out.len() || tls_wants_write;
        let want_read = !conn.paused || conn.phase == Phase::Connecting;
        let interest = match (want_read, want_write) {
            (true, true) => Some(Interest::READABLE | Interest::WRITABLE),
            (true, false) => Some(Interest::READABLE),
            (false, true) => Some(Interest::WRITABLE),
            (false, false) => None,
        };
        if interest == conn.interest {
            return;
        }
        // mio needs some interest to stay registered; "paused with nothing to write"
        // keeps READABLE registered and simply does not read on its events.
        let effective = interest.unwrap_or(Interest::READABLE);
        if conn.interest != Some(effective) {
            let conn = &mut *conn;
            if let Err(e) = self.reactor.reregister(&mut conn.stream, token, effective) {
                log::debug!("reregister failed: {e}");
            }
            conn.interest = Some(effective);
        }
    }

    /// Writes buffered (and TLS) bytes to the socket. Returns an error only for a
    /// fatal socket error.
    fn write_pending(conn: &mut Conn) -> io::Result<()> {
        loop {
            if let Some(tls) = conn.tls.as_mut() {
                // Move queued plaintext into rustls, then records to the socket.
                if conn.out_pos < conn.out.len() && !tls.is_handshaking() {
                    let n = tls.writer().write(&conn.out[conn.out_pos..])?;
                    conn.out_pos += n;
                }
                if tls.wants_write() {
                    match tls.write_tls(&mut conn.stream) {
                        Ok(_) => continue,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(e),
                    }
                }
                if conn.out_pos < conn.out.len() && !tls.is_handshaking() {
                    continue;
                }
                break;
            }
            if conn.out_pos >= conn.out.len() {
                break;
            }
            match conn.stream.write(&conn.out[conn.out_pos..]) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "socket accepted no bytes",
                    ));
                }
                Ok(n) => conn.out_pos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if conn.out_pos >= conn.out.len() {
            conn.out.clear();
            conn.out_pos = 0;
        } else if conn.out_pos > 64 * 1024 && conn.out_pos * 2 > conn.out.len() {
            conn.out.drain(..conn.out_pos);
            conn.out_pos = 0;
        }
        Ok(())
    }

    fn flush(&self) {
        let result = {
            let mut conn = self.conn.borrow_mut();
            if matches!(conn.phase, Phase::Connecting | Phase::Closed) {
                return;
            }
            let mut r = Self::write_pending(&mut conn);
            // Closing a TLS stream: close_notify goes out after the last plaintext.
            if r.is_ok()
                && conn.phase == Phase::Closing
                && conn.out_pos >= conn.out.len()
                && !conn.close_notify_sent
            {
                match conn.tls.as_mut() {
                    Some(tls) if !tls.is_handshaking() => {
                        tls.send_close_notify();
                        conn.close_notify_sent = true;
                        r = Self::write_pending(&mut conn);
                    }
                    Some(_) => {}
                    None => conn.close_notify_sent = true,
                }
            }
            let drained = conn.close_notify_sent
                && conn.out_pos >= conn.out.len()
                && !conn.tls.as_ref().is_some_and(|t| t.wants_write());
            (r, drained && conn.phase == Phase::Closing)
        };
        match result {
            (Err(e), _) => self.close(Some(Failure::new(ConnectionLost {
                reason: e.to_string(),
            }))),
            (Ok(()), true) => self.close(None),
            (Ok(()), false) => {
                self.update_interest();
                self.schedule_producer();
            }
        }
    }

    /// Calls the pull producer on the next turn if the write buffer is empty.
    fn schedule_producer(&self) {
        if self.producer_due.get() || self.producer.borrow().is_none() {
            return;
        }
        {
            let conn = self.conn.borrow();
            if conn.phase != Phase::Open || conn.out_pos < conn.out.len() {
                return;
            }
        }
        let Some(me) = self.rc() else {
            return;
        };
        self.producer_due.set(true);
        self.reactor.call_later(0.0, move || {
            me.producer_due.set(false);
            let ready = {
                let conn = me.conn.borrow();
                conn.phase == Phase::Open && conn.out_pos >= conn.out.len()
            };
            let producer = me.producer.borrow().clone();
            if ready && let Some(p) = producer {
                p();
            }
        });
    }

    /// Reads until `WouldBlock`, handing plaintext to the protocol. With `short_ok`,
    /// a short plain read ends the loop (see the module docs).
    fn read_ready(&self, short_ok: bool) {
        let mut buf = ReadBuf::take();
        self.read_loop(&mut buf.0, short_ok);
    }

    fn read_loop(&self, buf: &mut [u8], short_ok: bool) {
        loop {
            let outcome = {
                let mut conn = self.conn.borrow_mut();
                if conn.paused || conn.phase == Phase::Closed {
                    return;
                }
                Self::read_some(&mut conn, buf)
            };
            match outcome {
                ReadOutcome::Data(n) => {
                    if let Some(p) = self.protocol() {
                        p.data_received(&buf[..n]);
                    }
                    // A short plain read emptied the socket buffer: epoll (edge-triggered)
                    // reports the next arrival, so skip the read that would only say
                    // WouldBlock — one syscall less per response (as tokio does on Unix).
                    if short_ok
                        && cfg!(target_os = "linux")
                        && n < buf.len()
                        && self.conn.borrow().tls.is_none()
                    {
                        return;
                    }
                }
                ReadOutcome::Progress => {}
                ReadOutcome::WouldBlock => {
                    // A TLS handshake step may have produced records to send.
                    self.flush();
                    return;
                }
                ReadOutcome::Eof => {
                    self.close(Some(Failure::new(ConnectionDone)));
                    return;
                }
                ReadOutcome::Error(f) => {
                    self.close(Some(f));
                    return;
                }
            }
        }
    }

    fn read_some(conn: &mut Conn, buf: &mut [u8]) -> ReadOutcome {
        let Conn {
            stream,
            tls,
            bytes_read,
            ..
        } = conn;
        let Some(tls) = tls.as_mut() else {
            return match stream.read(buf) {
                Ok(0) => ReadOutcome::Eof,
                Ok(n) => {
                    *bytes_read += n as u64;
                    ReadOutcome::Data(n)
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => ReadOutcome::WouldBlock,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => ReadOutcome::Progress,
                Err(e) => ReadOutcome::Error(Failure::new(ConnectionLost {
                    reason: e.to_string(),
                })),
            };
        };
        // Plaintext already decrypted comes first.
        match tls.reader().read(buf) {
            Ok(0) => return ReadOutcome::Eof, // close_notify
            Ok(n) => return ReadOutcome::Data(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return ReadOutcome::Error(Failure::new(ConnectionLost {
                    reason: "TLS peer closed without close_notify".into(),
                }));
            }
            Err(e) => {
                return ReadOutcome::Error(Failure::new(ConnectionLost {
                    reason: e.to_string(),
                }));
            }
        }
        match tls.read_tls(stream) {
            Ok(0) => {
                // EOF from the socket: let rustls report how the stream ended.
                match tls.process_new_packets() {
                    Ok(state) if state.plaintext_bytes_to_read() > 0 => ReadOutcome::Progress,
                    Ok(state) if state.peer_has_closed() => ReadOutcome::Eof,
                    Ok(_) => ReadOutcome::Error(Failure::new(ConnectionLost {
                        reason: "TLS connection closed without close_notify".into(),
                    })),
                    Err(e) => ReadOutcome::Error(Failure::new(TlsError(e.to_string()))),
                }
            }
            Ok(n) => {
                *bytes_read += n as u64;
                match tls.process_new_packets() {
                    Ok(_) => ReadOutcome::Progress,
                    Err(e) => {
                        // Send the alert rustls queued, best effort.
                        let _ = tls.write_tls(stream);
                        ReadOutcome::Error(Failure::new(TlsError(e.to_string())))
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => ReadOutcome::WouldBlock,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => ReadOutcome::Progress,
            Err(e) => ReadOutcome::Error(Failure::new(ConnectionLost {
                reason: e.to_string(),
            })),
        }
    }

    /// Closes the socket and reports `connection_lost` on the next reactor turn.
    /// `None` means a clean close we initiated.
    fn close(&self, reason: Option<Failure>) {
        let token = self.token.take();
        {
            let mut conn = self.conn.borrow_mut();
            if conn.phase == Phase::Closed {
                return;
            }
            conn.phase = Phase::Closed;
            if let Some(token) = token {
                let conn = &mut *conn;
                let _ = self.reactor.deregister(&mut conn.stream, token);
            }
            let _ = conn.stream.shutdown(Shutdown::Both);
            conn.out = Vec::new();
            conn.out_pos = 0;
        }
        self.producer.borrow_mut().take();
        let reason = reason.unwrap_or_else(|| Failure::new(ConnectionDone));
        // A connect that never completed fails its Deferred instead.
        let connecting = self.connected.borrow_mut().take();
        if let Some(d) = connecting {
            let _ = d.errback(reason);
            return;
        }
        let protocol = self.protocol.borrow_mut().take();
        if let Some(protocol) = protocol {
            self.reactor
                .call_later(0.0, move || protocol.connection_lost(reason));
        }
    }

    fn finish_connect(&self) {
        let result = {
            let conn = self.conn.borrow();
            match conn.stream.take_error() {
                Ok(Some(e)) | Err(e) => Err(e),
                Ok(None) => match conn.stream.peer_addr() {
                    Ok(addr) => Ok(addr),
                    Err(e) if e.kind() == io::ErrorKind::NotConnected => return, // not yet
                    Err(e) => Err(e),
                },
            }
        };
        match result {
            Ok(peer) => {
                {
                    let mut conn = self.conn.borrow_mut();
                    conn.phase = Phase::Open;
                    conn.peer = Some(peer);
                    conn.host = conn.stream.local_addr().ok();
                    let _ = conn.stream.set_nodelay(true);
                }
                self.update_interest();
                let d = self.connected.borrow_mut().take();
                if let (Some(d), Some(me)) = (d, self.rc()) {
                    let _ = d.callback(me);
                }
                self.flush();
            }
            Err(e) => {
                let addr = self
                    .conn
                    .borrow()
                    .peer
                    .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
                self.close(Some(Failure::new(ConnectError {
                    addr,
                    reason: e.to_string(),
                })));
            }
        }
    }
}

thread_local! {
    /// Read buffers reused across readiness events (one per nesting level).
    static READ_BUFS: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// A pooled read buffer, returned to the pool on drop.
struct ReadBuf(Vec<u8>);

impl ReadBuf {
    fn take() -> Self {
        let buf = READ_BUFS
            .with(|b| b.borrow_mut().pop())
            .unwrap_or_else(|| vec![0u8; READ_CHUNK]);
        Self(buf)
    }
}

impl Drop for ReadBuf {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.0);
        READ_BUFS.with(|b| {
            let mut pool = b.borrow_mut();
            if pool.len() < 4 {
                pool.push(buf);
            }
        });
    }
}

enum ReadOutcome {
    Data(usize),
    Progress,
    WouldBlock,
    Eof,
    Error(Failure),
}

impl IoHandler for TcpTransport {
    fn ready(&self, _token: Token, readiness: Readiness) {
        let phase = self.conn.borrow().phase;
        match phase {
            Phase::Closed => {}
            Phase::Connecting => {
                if readiness.writable
                    || readiness.error
                    || readiness.readable
                    || readiness.write_closed
                {
                    self.finish_connect();
                }
            }
            Phase::Open | Phase::Closing => {
                if readiness.writable {
                    self.flush();
                }
                if readiness.readable || readiness.read_closed || readiness.error {
                    // A hang-up or error in this event: drain to EOF, the edge is spent.
                    self.read_ready(!(readiness.read_closed || readiness.error));
                }
            }
        }
    }
}

impl Transport for TcpTransport {
    fn attach(&self, protocol: Rc<dyn Protocol>) {
        TcpTransport::attach(self, protocol);
    }

    fn is_closed(&self) -> bool {
        TcpTransport::is_closed(self)
    }

    fn write(&self, data: &[u8]) {
        {
            let mut conn = self.conn.borrow_mut();
            if conn.phase != Phase::Open && conn.phase != Phase::Connecting {
                return;
            }
            conn.out.extend_from_slice(data);
        }
        self.flush();
    }

    fn lose_connection(&self) {
        let phase = {
            let mut conn = self.conn.borrow_mut();
            if conn.phase == Phase::Open {
                conn.phase = Phase::Closing;
            }
            conn.phase
        };
        match phase {
            Phase::Closing => self.flush(),
            Phase::Connecting => self.close(Some(Failure::new(ConnectionDone))),
            _ => {}
        }
    }

    fn abort_connection(&self) {
        self.close(Some(Failure::new(ConnectionLost {
            reason: "connection aborted".into(),
        })));
    }

    fn pause_producing(&self) {
        self.conn.borrow_mut().paused = true;
        self.update_interest();
    }

    fn resume_producing(&self) {
        let was_paused = std::mem::replace(&mut self.conn.borrow_mut().paused, false);
        self.update_interest();
        if was_paused && let Some(me) = self.rc() {
            // Edge-triggered: data may already be waiting; read it on the next turn.
            self.reactor.call_later(0.0, move || me.read_ready(false));
        }
    }

    fn peer(&self) -> Option<SocketAddr> {
        self.conn.borrow().peer
    }

    fn host(&self) -> Option<SocketAddr> {
        self.conn.borrow().host
    }

    fn tls_resumed(&self) -> Option<bool> {
        let conn = self.conn.borrow();
        let tls = conn.tls.as_ref().filter(|t| !t.is_handshaking())?;
        tls.handshake_kind()
            .map(|k| k == rustls::HandshakeKind::Resumed)
    }

    fn register_producer(&self, producer: Rc<dyn Fn()>) {
        *self.producer.borrow_mut() = Some(producer);
        self.schedule_producer();
    }

    fn unregister_producer(&self) {
        self.producer.borrow_mut().take();
    }
}

impl fmt::Debug for TcpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let conn = self.conn.borrow();
        f.debug_struct("TcpTransport")
            .field("phase", &conn.phase)
            .field("peer", &conn.peer)
            .field("tls", &conn.tls.is_some())
            .field("queued", &(conn.out.len() - conn.out_pos))
            .finish()
    }
}

/// A non-blocking socket bound to `bind`, its connect to `addr` started (Twisted's
/// `bindAddress`): std and mio connect only from an address the system picks.
fn connect_from(addr: SocketAddr, bind: SocketAddr) -> io::Result<TcpStream> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    socket.set_nonblocking(true)?;
    socket.bind(&bind.into())?;
    match socket.connect(&addr.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
        Err(e) => return Err(e),
    }
    Ok(TcpStream::from_std(std::net::TcpStream::from(socket)))
}

/// Connects to `addr` (from `bind` when given: the local address and port, port 0 for
/// any); the Deferred fires with the open transport, or fails with a [`ConnectError`]
/// (or [`TimeoutError`] after `timeout` seconds). `tls` wraps the connection as a
/// client for `(config, server name)`. Cancelling the Deferred closes the socket.
pub fn connect_tcp(
    reactor: &ReactorHandle,
    addr: SocketAddr,
    timeout: f64,
    tls: Option<(Arc<rustls::ClientConfig>, &str)>,
    bind: Option<SocketAddr>,
) -> Deferred<Rc<TcpTransport>> {
    let session = match tls {
        Some((config, host)) => {
            let name = match super::tls::server_name(host) {
                Ok(n) => n,
                Err(e) => return crate::defer::fail(e),
            };
            match rustls::ClientConnection::new(config, name) {
                Ok(c) => Some(rustls::Connection::Client(c)),
                Err(e) => return crate::defer::fail(TlsError(e.to_string())),
            }
        }
        None => None,
    };
    let stream = match bind.map_or_else(|| TcpStream::connect(addr), |b| connect_from(addr, b)) {
        Ok(s) => s,
        Err(e) if is_descriptor_exhaustion(&e) => {
            return crate::defer::fail(DescriptorsExhausted {
                addr,
                reason: e.to_string(),
            });
        }
        Err(e) => {
            return crate::defer::fail(ConnectError {
                addr,
                reason: e.to_string(),
            });
        }
    };
    let transport = TcpTransport::create(reactor, stream, Phase::Connecting, session);
    transport.conn.borrow_mut().peer = Some(addr);
    let weak = Rc::downgrade(&transport);
    let d = Deferred::with_canceller(move |_: &Deferred<Rc<TcpTransport>>| {
        if let Some(t) = weak.upgrade() {
            t.close(Some(Failure::new(crate::defer::CancelledError)));
        }
    });
    *transport.connected.borrow_mut() = Some(d.clone());
    let token = {
        let mut conn = transport.conn.borrow_mut();
        let r = reactor.register(
            &mut conn.stream,
            Interest::READABLE | Interest::WRITABLE,
            transport.clone(),
        );
        conn.interest = Some(Interest::READABLE | Interest::WRITABLE);
        r
    };
    match token {
        Ok(t) => transport.token.set(Some(t)),
        Err(e) => {
            transport.close(Some(Failure::new(ConnectError {
                addr,
                reason: e.to_string(),
            })));
            return d;
        }
    }
    if timeout > 0.0 && timeout.is_finite() {
        d.add_timeout(timeout, reactor.clock());
        d.add_errback(move |f| {
            if f.check::<TimeoutError>() {
                Err(Failure::new(ConnectError {
                    addr,
                    reason: format!("connection timed out after {timeout} s"),
                }))
            } else {
                Err(f)
            }
        });
    }
    d
}

/// A listening socket accepting connections for a protocol factory.
pub struct ListeningPort {
    listener: RefCell<Option<TcpListener>>,
    reactor: ReactorHandle,
    token: Cell<Option<Token>>,
    local: SocketAddr,
    factory: Box<dyn Fn(SocketAddr) -> Rc<dyn Protocol>>,
    tls: Option<Arc<rustls::ServerConfig>>,
    accepted: Cell<u64>,
}

impl ListeningPort {
    /// The bound address (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.accepted.get()
    }

    /// Stops accepting; open connections are not affected.
    pub fn stop_listening(&self) {
        let listener = self.listener.borrow_mut().take();
        if let (Some(mut l), Some(token)) = (listener, self.token.take()) {
            let _ = self.reactor.deregister(&mut l, token);
        }
    }
}

impl IoHandler for ListeningPort {
    fn ready(&self, _token: Token, _readiness: Readiness) {
        loop {
            let accepted = {
                let listener = self.listener.borrow();
                let Some(l) = listener.as_ref() else { return };
                l.accept()
            };
            match accepted {
                Ok((stream, peer)) => {
                    self.accepted.set(self.accepted.get() + 1);
                    let session = match &self.tls {
                        Some(config) => match rustls::ServerConnection::new(config.clone()) {
                            Ok(s) => Some(rustls::Connection::Server(s)),
                            Err(e) => {
                                log::error!("TLS server session failed: {e}");
                                continue;
                            }
                        },
                        None => None,
                    };
                    let _ = stream.set_nodelay(true);
                    let transport =
                        TcpTransport::create(&self.reactor, stream, Phase::Open, session);
                    {
                        let mut conn = transport.conn.borrow_mut();
                        conn.peer = Some(peer);
                        conn.host = conn.stream.local_addr().ok();
                    }
                    let token = {
                        let mut conn = transport.conn.borrow_mut();
                        conn.interest = Some(Interest::READABLE);
                        self.reactor.register(
                            &mut conn.stream,
                            Interest::READABLE,
                            transport.clone(),
                        )
                    };
                    match token {
                        Ok(t) => transport.token.set(Some(t)),
                        Err(e) => {
                            log::error!("could not register an accepted connection: {e}");
                            continue;
                        }
                    }
                    transport.attach((self.factory)(peer));
                    // Data may have arrived with the connection (edge-triggered).
                    transport.read_ready(false);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // EMFILE and friends: log and wait for the next readiness event.
                    log::error!("accept failed on {}: {e}", self.local);
                    return;
                }
            }
        }
    }
}

impl fmt::Debug for ListeningPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListeningPort")
            .field("local", &self.local)
            .field("tls", &self.tls.is_some())
            .field("accepted", &self.accepted.get())
            .finish()
    }
}

/// Listens on `addr` (port 0 picks a free port); each accepted connection gets a
/// protocol from `factory` (called with the peer address). With `tls`, connections
/// are TLS servers.
///
/// # Errors
///
/// Binding or registering failed.
pub fn listen_tcp<F>(
    reactor: &ReactorHandle,
    addr: SocketAddr,
    factory: F,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> io::Result<Rc<ListeningPort>>
where
    F: Fn(SocketAddr) -> Rc<dyn Protocol> + 'static,
{
    let mut listener = TcpListener::bind(addr)?;
    let local = listener.local_addr()?;
    let port = Rc::new(ListeningPort {
        listener: RefCell::new(None),
        reactor: reactor.clone(),
        token: Cell::new(None),
        local,
        factory: Box::new(factory),
        tls,
        accepted: Cell::new(0),
    });
    let token = reactor.register(&mut listener, Interest::READABLE, port.clone())?;
    port.token.set(Some(token));
    *port.listener.borrow_mut() = Some(listener);
    Ok(port)
}
