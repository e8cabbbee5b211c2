//! The [`Connector`]: from an [`Endpoint`] to an open [`Transport`] — resolve the host
//! on the DNS threads (with the cache), try each address in turn, go through a proxy
//! when there is one, and start TLS (rustls) — with the same timeouts, DNS cache and
//! error types for every client on the reactor: the HTTP client and the Redis client
//! (`rediss://`) both connect through it.
//!
//! Proxies ([`ProxyKind`]): an `http://` proxy is reached over TCP, an `https://` one
//! over TLS; through either, an https target gets a `CONNECT` tunnel and its own TLS
//! inside it (TLS in TLS through an `https://` proxy, by [`TlsLayer`]), while an http
//! target is the caller's to address in absolute form. A `socks5://` proxy gets the
//! target's address (resolved here), a `socks5h://` one its name (resolved by the
//! proxy); after the SOCKS5 handshake ([`crate::proto::socks5`]) the tunnel carries
//! the target's bytes, with TLS inside it for https.
//!
//! The Deferred it returns can be cancelled at any step (the lookup, a connect attempt,
//! the tunnel): the step is cancelled and any socket already open is aborted.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;

use super::dns::{Resolver, ResolverConfig};
use super::protocol::{Protocol, Transport};
use super::tcp::{TcpTransport, connect_tcp};
use super::tls;
use super::tls_layer::TlsLayer;
use crate::defer::{CancelledError, Deferred, Failure};
use crate::proto::Headers;
use crate::proto::http1::{Event, ResponseParser, encode_request};
use crate::proto::socks5::{ClientHandshake, Credentials, TargetAddr};
use crate::reactor::ReactorHandle;

/// Where to connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The host name or IP address of the server.
    pub host: String,
    /// The server's port.
    pub port: u16,
    /// TLS to the server, when `Some`.
    pub tls: Option<TlsOptions>,
    /// A proxy to go through: for an http(s) proxy with TLS to the server, a `CONNECT`
    /// tunnel; without, the caller talks to the proxy (absolute-form requests); a SOCKS5
    /// proxy always tunnels.
    pub proxy: Option<ProxyEndpoint>,
    /// The local address to connect from (`bindaddress`), port 0 for any.
    pub bind: Option<SocketAddr>,
}

/// TLS options for an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlsOptions {
    /// Verify the server's certificate against the configured roots.
    pub verify: bool,
}

/// What a proxy speaks, from its URL's scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyKind {
    /// `http://`: HTTP over TCP (`CONNECT` for https targets, absolute-form requests
    /// for http ones).
    Http,
    /// `https://`: the same over TLS to the proxy.
    Https,
    /// `socks5://`: SOCKS5, the target's name resolved by the client.
    Socks5,
    /// `socks5h://`: SOCKS5, the target's name resolved by the proxy.
    Socks5h,
}

impl ProxyKind {
    /// The kind for a proxy URL's scheme, `None` for a scheme no proxy here speaks.
    pub fn from_scheme(scheme: &str) -> Option<Self> {
        // Asked per request sent through a proxy: compared in place, not lower-cased
        // into a new string.
        [
            ("http", Self::Http),
            ("https", Self::Https),
            ("socks5", Self::Socks5),
            ("socks5h", Self::Socks5h),
        ]
        .into_iter()
        .find(|(name, _)| scheme.eq_ignore_ascii_case(name))
        .map(|(_, kind)| kind)
    }

    /// Whether requests to http targets go to the proxy itself, in absolute form
    /// (http and https proxies); SOCKS proxies tunnel everything.
    pub fn forwards_http(self) -> bool {
        matches!(self, Self::Http | Self::Https)
    }
}

/// A proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyEndpoint {
    /// What it speaks.
    pub kind: ProxyKind,
    /// The proxy's host.
    pub host: String,
    /// The proxy's port.
    pub port: u16,
    /// A `Proxy-Authorization` value for the `CONNECT` (never sent through a tunnel);
    /// for a SOCKS5 proxy, its `Basic` user name and password are the RFC 1929
    /// credentials.
    pub authorization: Option<String>,
    /// Verify an `https://` proxy's certificate.
    pub verify: bool,
}

/// The RFC 1929 user name and password in a `Basic` authorization value.
fn socks_credentials(authorization: &str) -> Option<Credentials> {
    let (scheme, token) = authorization.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = crate::util::base64_decode(token.trim())?;
    let colon = raw.iter().position(|&b| b == b':')?;
    Some(Credentials {
        username: raw[..colon].to_vec(),
        password: raw[colon + 1..].to_vec(),
    })
}

/// The proxy refused to open a tunnel (Scrapy's `TunnelError`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunnelError {
    /// The proxy's status code.
    pub status: u16,
    /// Its reason phrase.
    pub reason: String,
}

impl fmt::Display for TunnelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "could not open CONNECT tunnel with proxy: {} {}",
            self.status, self.reason
        )
    }
}

impl std::error::Error for TunnelError {}

/// Connector configuration.
#[derive(Clone)]
pub struct ConnectorConfig {
    /// TLS client config used when verifying (default: webpki roots).
    pub tls_verify: Arc<rustls::ClientConfig>,
    /// TLS client config used when verification is off.
    pub tls_no_verify: Arc<rustls::ClientConfig>,
    /// Seconds one connect attempt may take (0 = no limit of its own).
    pub connect_timeout: f64,
    /// DNS settings.
    pub resolver: ResolverConfig,
}

impl ConnectorConfig {
    /// Defaults with the Mozilla root set.
    ///
    /// # Errors
    ///
    /// The TLS provider refused the configuration.
    pub fn new() -> Result<Self, Failure> {
        Ok(Self {
            tls_verify: tls::client_config_webpki()?,
            tls_no_verify: tls::client_config_dangerous_no_verify()?,
            connect_timeout: 0.0,
            resolver: ResolverConfig::default(),
        })
    }
}

impl fmt::Debug for ConnectorConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectorConfig")
            .field("connect_timeout", &self.connect_timeout)
            .field("resolver", &self.resolver)
            .finish_non_exhaustive()
    }
}

/// A step in progress that can be cancelled.
trait Cancel {
    fn cancel(&self);
}

impl<T: 'static> Cancel for Deferred<T> {
    fn cancel(&self) {
        Deferred::cancel(self);
    }
}

/// One connection attempt's shared state.
struct Attempt {
    result: Deferred<Rc<dyn Transport>>,
    step: RefCell<Option<Box<dyn Cancel>>>,
    done: Cell<bool>,
}

impl Attempt {
    fn finish(&self, r: Result<Rc<dyn Transport>, Failure>) {
        if self.done.replace(true) {
            if let Ok(t) = r {
                t.abort_connection();
            }
            return;
        }
        self.step.borrow_mut().take();
        let _ = self.result.resolve(r);
    }
}

/// Opens connections on a reactor (cheap to clone).
#[derive(Clone)]
pub struct Connector {
    reactor: ReactorHandle,
    resolver: Resolver,
    config: ConnectorConfig,
}

impl Connector {
    /// A connector on `reactor` with its own DNS resolver and cache.
    pub fn new(reactor: &ReactorHandle, config: ConnectorConfig) -> Self {
        Self {
            reactor: reactor.clone(),
            resolver: Resolver::new(reactor, config.resolver.clone()),
            config,
        }
    }

    /// The DNS resolver.
    pub fn resolver(&self) -> &Resolver {
        &self.resolver
    }

    /// The configuration.
    pub fn config(&self) -> &ConnectorConfig {
        &self.config
    }

    /// Connects to `endpoint`; fails with [`super::dns::DnsLookupError`],
    /// [`super::tcp::ConnectError`] (the last address's), [`TunnelError`] or
    /// [`super::tcp::TlsError`]. Cancelling it cancels the step in progress.
    pub fn connect(&self, endpoint: &Endpoint) -> Deferred<Rc<dyn Transport>> {
        let cell: Rc<RefCell<std::rc::Weak<Attempt>>> = Rc::default();
        let c = cell.clone();
        let result = Deferred::with_canceller(move |_: &Deferred<Rc<dyn Transport>>| {
            if let Some(a) = c.borrow().upgrade() {
                let step = a.step.borrow_mut().take();
                if let Some(s) = step {
                    s.cancel();
                }
                a.finish(Err(Failure::new(CancelledError)));
            }
        });
        let attempt = Rc::new(Attempt {
            result: result.clone(),
            step: RefCell::new(None),
            done: Cell::new(false),
        });
        *cell.borrow_mut() = Rc::downgrade(&attempt);
        let (host, port) = match &endpoint.proxy {
            Some(p) => (p.host.clone(), p.port),
            None => (endpoint.host.clone(), endpoint.port),
        };
        let lookup = self.resolver.resolve(&host, port);
        *attempt.step.borrow_mut() = Some(Box::new(lookup.clone()));
        let me = self.clone();
        let endpoint = endpoint.clone();
        let a = attempt.clone();
        let _chain: Deferred<()> = lookup.then(move |r| {
            match r {
                Ok(addrs) => me.connect_any(a, endpoint, addrs, 0),
                Err(f) => a.finish(Err(f)),
            }
            Ok(())
        });
        result
    }

    fn tls_config(&self, tls: TlsOptions) -> Arc<rustls::ClientConfig> {
        if tls.verify {
            self.config.tls_verify.clone()
        } else {
            self.config.tls_no_verify.clone()
        }
    }

    fn connect_any(
        self,
        attempt: Rc<Attempt>,
        endpoint: Endpoint,
        addrs: Vec<SocketAddr>,
        index: usize,
    ) {
        if attempt.done.get() {
            return;
        }
        let Some(&addr) = addrs.get(index) else {
            attempt.finish(Err(Failure::msg(format!(
                "no address for {}",
                endpoint.host
            ))));
            return;
        };
        // TLS on the TCP connection: to the server, or to an https proxy.
        let first_tls = match &endpoint.proxy {
            None => endpoint
                .tls
                .map(|t| (self.tls_config(t), endpoint.host.as_str())),
            Some(p) if p.kind == ProxyKind::Https => Some((
                self.tls_config(TlsOptions { verify: p.verify }),
                p.host.as_str(),
            )),
            Some(_) => None,
        };
        let connecting = connect_tcp(
            &self.reactor,
            addr,
            self.config.connect_timeout,
            first_tls,
            endpoint.bind,
        );
        *attempt.step.borrow_mut() = Some(Box::new(connecting.clone()));
        let a = attempt.clone();
        let _chain: Deferred<()> = connecting.then(move |r| {
            match r {
                Ok(transport) => {
                    let kind = endpoint.proxy.as_ref().map(|p| p.kind);
                    if a.done.get() {
                        transport.abort_connection();
                    } else if matches!(kind, Some(ProxyKind::Socks5 | ProxyKind::Socks5h)) {
                        self.socks(a, endpoint, transport);
                    } else if let (Some(tls), Some(_)) = (endpoint.tls, &endpoint.proxy) {
                        let config = self.tls_config(tls);
                        Self::tunnel(a, endpoint, transport, config);
                    } else {
                        a.finish(Ok(transport as Rc<dyn Transport>));
                    }
                }
                // Out of descriptors: no other address will do better; the caller
                // (the HTTP client's pool) decides how to wait.
                Err(f) if f.check::<super::tcp::DescriptorsExhausted>() => a.finish(Err(f)),
                Err(f) if index + 1 < addrs.len() && !a.done.get() => {
                    log::debug!("connect to {addr} failed ({f}); trying the next address");
                    self.connect_any(a, endpoint, addrs, index + 1);
                }
                Err(f) => a.finish(Err(f)),
            }
            Ok(())
        });
    }

    /// Opens a CONNECT tunnel through the proxy, then starts TLS inside it.
    fn tunnel(
        attempt: Rc<Attempt>,
        endpoint: Endpoint,
        transport: Rc<TcpTransport>,
        tls_config: Arc<rustls::ClientConfig>,
    ) {
        let target = format!("{}:{}", endpoint.host, endpoint.port);
        let mut headers = Headers::new();
        if let Some(auth) = endpoint
            .proxy
            .as_ref()
            .and_then(|p| p.authorization.as_ref())
        {
            headers.append("Proxy-Authorization", auth);
        }
        headers.append("Connection", "keep-alive");
        let mut bytes = Vec::new();
        if let Err(e) = encode_request("CONNECT", &target, &target, &headers, b"", &mut bytes) {
            transport.abort_connection();
            attempt.finish(Err(Failure::msg(format!("cannot encode CONNECT: {e}"))));
            return;
        }
        let setup = Rc::new(TunnelSetup {
            parser: RefCell::new(ResponseParser::for_connect()),
            buf: RefCell::new(Vec::new()),
            done: Deferred::new(),
        });
        let done = setup.done.clone();
        *attempt.step.borrow_mut() = Some(Box::new(done.clone()));
        transport.attach(setup);
        transport.write(&bytes);
        let t = transport.clone();
        let a = attempt.clone();
        done.add_both(move |r| {
            match r {
                Ok(()) if !a.done.get() => Self::start_inner_tls(&a, &endpoint, t, tls_config),
                Ok(()) => t.abort_connection(),
                Err(f) => {
                    t.abort_connection();
                    a.finish(Err(f));
                }
            }
            Ok(())
        });
    }

    /// TLS to the server inside a tunnel: on the socket itself when the tunnel is plain
    /// TCP, in a [`TlsLayer`] over the proxy's TLS otherwise.
    fn start_inner_tls(
        attempt: &Attempt,
        endpoint: &Endpoint,
        t: Rc<TcpTransport>,
        tls_config: Arc<rustls::ClientConfig>,
    ) {
        if t.is_tls() {
            match TlsLayer::start(t.clone(), tls_config, &endpoint.host) {
                Ok(layer) => attempt.finish(Ok(layer as Rc<dyn Transport>)),
                Err(f) => {
                    t.abort_connection();
                    attempt.finish(Err(f));
                }
            }
            return;
        }
        match t.start_tls(tls_config, &endpoint.host) {
            Ok(()) => attempt.finish(Ok(t as Rc<dyn Transport>)),
            Err(f) => {
                t.abort_connection();
                attempt.finish(Err(f));
            }
        }
    }

    /// Through a SOCKS5 proxy: the target's address (resolved here for `socks5://`),
    /// the handshake, then TLS inside the tunnel for an https target.
    fn socks(self, attempt: Rc<Attempt>, endpoint: Endpoint, transport: Rc<TcpTransport>) {
        let Some(proxy) = endpoint.proxy.clone() else {
            return;
        };
        let literal: Option<std::net::IpAddr> = endpoint
            .host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .ok();
        if let Some(ip) = literal {
            self.socks_handshake(attempt, endpoint, transport, TargetAddr::Ip(ip));
            return;
        }
        if proxy.kind == ProxyKind::Socks5h {
            let name = TargetAddr::Domain(endpoint.host.clone());
            self.socks_handshake(attempt, endpoint, transport, name);
            return;
        }
        let lookup = self.resolver.resolve(&endpoint.host, endpoint.port);
        *attempt.step.borrow_mut() = Some(Box::new(lookup.clone()));
        let _chain: Deferred<()> = lookup.then(move |r| {
            match r {
                Ok(addrs) if !attempt.done.get() => match addrs.first() {
                    Some(addr) => {
                        let ip = TargetAddr::Ip(addr.ip());
                        self.socks_handshake(attempt, endpoint, transport, ip);
                    }
                    None => {
                        transport.abort_connection();
                        attempt.finish(Err(Failure::msg(format!(
                            "no address for {}",
                            endpoint.host
                        ))));
                    }
                },
                Ok(_) => transport.abort_connection(),
                Err(f) => {
                    transport.abort_connection();
                    attempt.finish(Err(f));
                }
            }
            Ok(())
        });
    }

    fn socks_handshake(
        self,
        attempt: Rc<Attempt>,
        endpoint: Endpoint,
        transport: Rc<TcpTransport>,
        target: TargetAddr,
    ) {
        let credentials = endpoint
            .proxy
            .as_ref()
            .and_then(|p| p.authorization.as_deref())
            .and_then(socks_credentials);
        let (handshake, greeting) = match ClientHandshake::new(&target, endpoint.port, credentials)
        {
            Ok(h) => h,
            Err(e) => {
                transport.abort_connection();
                attempt.finish(Err(Failure::new(e)));
                return;
            }
        };
        let setup = Rc::new(SocksSetup {
            handshake: RefCell::new(handshake),
            buf: RefCell::new(Vec::new()),
            transport: RefCell::new(None),
            done: Deferred::new(),
        });
        let done = setup.done.clone();
        *attempt.step.borrow_mut() = Some(Box::new(done.clone()));
        transport.attach(setup);
        transport.write(&greeting);
        let t = transport.clone();
        let a = attempt.clone();
        done.add_both(move |r| {
            match r {
                Ok(()) if a.done.get() => t.abort_connection(),
                Ok(()) => match endpoint.tls {
                    Some(tls) => {
                        let config = self.tls_config(tls);
                        Self::start_inner_tls(&a, &endpoint, t, config);
                    }
                    None => a.finish(Ok(t as Rc<dyn Transport>)),
                },
                Err(f) => {
                    t.abort_connection();
                    a.finish(Err(f));
                }
            }
            Ok(())
        });
    }
}

impl fmt::Debug for Connector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connector")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Reads a proxy's answer to CONNECT.
struct TunnelSetup {
    parser: RefCell<ResponseParser>,
    buf: RefCell<Vec<u8>>,
    done: Deferred<()>,
}

impl Protocol for TunnelSetup {
    fn connection_made(&self, _transport: Rc<dyn Transport>) {}

    fn data_received(&self, data: &[u8]) {
        let result = {
            let mut buf = self.buf.borrow_mut();
            buf.extend_from_slice(data);
            let mut parser = self.parser.borrow_mut();
            match parser.parse(&buf) {
                Ok((_, Some(Event::Head(head)))) if (200..300).contains(&head.status) => {
                    Some(Ok(()))
                }
                Ok((_, Some(Event::Head(head)))) => Some(Err(Failure::new(TunnelError {
                    status: head.status,
                    reason: head.reason,
                }))),
                Ok(_) => None,
                Err(e) => Some(Err(Failure::new(e))),
            }
        };
        if let Some(r) = result {
            let _ = self.done.resolve(r);
        }
    }

    fn connection_lost(&self, reason: Failure) {
        let _ = self.done.errback(reason);
    }
}

/// Runs a SOCKS5 handshake over a fresh connection to the proxy.
struct SocksSetup {
    handshake: RefCell<ClientHandshake>,
    buf: RefCell<Vec<u8>>,
    transport: RefCell<Option<std::rc::Weak<dyn Transport>>>,
    done: Deferred<()>,
}

impl Protocol for SocksSetup {
    fn connection_made(&self, transport: Rc<dyn Transport>) {
        *self.transport.borrow_mut() = Some(Rc::downgrade(&transport));
    }

    fn data_received(&self, data: &[u8]) {
        let mut sends = Vec::new();
        let result = {
            let mut buf = self.buf.borrow_mut();
            buf.extend_from_slice(data);
            let mut hs = self.handshake.borrow_mut();
            loop {
                match hs.receive(&buf) {
                    Ok(p) => {
                        let n = p.consumed.min(buf.len());
                        buf.drain(..n);
                        if !p.send.is_empty() {
                            sends.push(p.send);
                        }
                        if p.done.is_some() {
                            break Some(Ok(()));
                        }
                        if p.consumed == 0 {
                            break None;
                        }
                    }
                    Err(e) => break Some(Err(Failure::new(e))),
                }
            }
        };
        let transport = self
            .transport
            .borrow()
            .as_ref()
            .and_then(std::rc::Weak::upgrade);
        if let Some(t) = transport {
            for s in &sends {
                t.write(s);
            }
        }
        if let Some(r) = result {
            let _ = self.done.resolve(r);
        }
    }

    fn connection_lost(&self, reason: Failure) {
        // Closed by the proxy mid-handshake: say which step it refused.
        let reason = if reason.check::<super::protocol::ConnectionDone>() {
            Failure::new(self.handshake.borrow().closed())
        } else {
            reason
        };
        let _ = self.done.errback(reason);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socks_credentials_come_from_basic_authorization() {
        let c = socks_credentials("Basic dXNlcjpwYTpzcw==").expect("user:pa:ss");
        assert_eq!(c.username, b"user");
        assert_eq!(c.password, b"pa:ss");
        assert!(socks_credentials("Bearer abc").is_none());
        assert!(socks_credentials("Basic !!!").is_none());
        assert!(socks_credentials("Basic dXNlcg==").is_none()); // "user": no colon
    }

    #[test]
    fn proxy_kinds_by_scheme() {
        assert_eq!(ProxyKind::from_scheme("HTTPS"), Some(ProxyKind::Https));
        assert_eq!(ProxyKind::from_scheme("socks5h"), Some(ProxyKind::Socks5h));
        assert_eq!(ProxyKind::from_scheme("socks4"), None);
        assert!(ProxyKind::Https.forwards_http() && !ProxyKind::Socks5.forwards_http());
    }
}
