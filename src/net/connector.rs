//! The [`Connector`]: from an [`Endpoint`] to an open [`Transport`] — resolve the host
//! on the DNS threads (with the cache), try each address in turn, send a `CONNECT`
//! through an http proxy when tunnelling, and start TLS (rustls) — with the same
//! timeouts, DNS cache and error types for every client on the reactor: the HTTP client
//! and the Redis client (`rediss://`) both connect through it.
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
use crate::defer::{CancelledError, Deferred, Failure};
use crate::proto::Headers;
use crate::proto::http1::{Event, ResponseParser, encode_request};
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
    /// An http proxy to go through: with TLS, a `CONNECT` tunnel; without, the caller
    /// talks to the proxy directly (absolute-form requests).
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

/// An http proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyEndpoint {
    /// The proxy's host.
    pub host: String,
    /// The proxy's port.
    pub port: u16,
    /// A `Proxy-Authorization` value for the `CONNECT` (never sent through a tunnel).
    pub authorization: Option<String>,
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
        let direct_tls = endpoint.tls.filter(|_| endpoint.proxy.is_none());
        let tls_config = direct_tls.map(|t| self.tls_config(t));
        let connecting = connect_tcp(
            &self.reactor,
            addr,
            self.config.connect_timeout,
            tls_config
                .as_ref()
                .map(|c| (c.clone(), endpoint.host.as_str())),
            endpoint.bind,
        );
        *attempt.step.borrow_mut() = Some(Box::new(connecting.clone()));
        let a = attempt.clone();
        let _chain: Deferred<()> = connecting.then(move |r| {
            match r {
                Ok(transport) => {
                    if a.done.get() {
                        transport.abort_connection();
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
                Ok(()) if !a.done.get() => match t.start_tls(tls_config, &endpoint.host) {
                    Ok(()) => a.finish(Ok(t as Rc<dyn Transport>)),
                    Err(f) => {
                        t.abort_connection();
                        a.finish(Err(f));
                    }
                },
                Ok(()) => t.abort_connection(),
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
