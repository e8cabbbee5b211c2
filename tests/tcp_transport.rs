//! TCP transports over loopback: connect/listen, large writes (buffering and writable
//! interest), lose_connection after flushing, abort, pause/resume producing, addresses,
//! and TLS between our own client and server.

mod util;

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;

use trawl::defer::{Deferred, Failure};
use trawl::net::tcp::{ConnectError, TcpTransport, connect_tcp, listen_tcp};
use trawl::net::{ConnectionDone, Protocol, Transport, tls};
use trawl::reactor::Reactor;
use trawl::testing::fixture::{TEST_CA_PEM, TEST_SERVER_CERT_PEM, TEST_SERVER_KEY_PEM};

/// Collects bytes and reports the end of the connection.
#[derive(Default)]
struct Sink {
    transport: RefCell<Option<Rc<dyn Transport>>>,
    data: RefCell<Vec<u8>>,
    reads: Cell<u32>,
    lost: Deferred<String>,
    /// Pause after this many bytes (0 = never).
    pause_at: Cell<usize>,
}

impl Protocol for Sink {
    fn connection_made(&self, transport: Rc<dyn Transport>) {
        *self.transport.borrow_mut() = Some(transport);
    }

    fn data_received(&self, data: &[u8]) {
        self.reads.set(self.reads.get() + 1);
        self.data.borrow_mut().extend_from_slice(data);
        let at = self.pause_at.get();
        if at > 0 && self.data.borrow().len() >= at {
            self.pause_at.set(0);
            if let Some(t) = self.transport.borrow().clone() {
                t.pause_producing();
            }
        }
    }

    fn connection_lost(&self, reason: Failure) {
        let clean = reason.check::<ConnectionDone>();
        let _ = self.lost.callback(if clean {
            "clean".into()
        } else {
            reason.to_string()
        });
    }
}

/// Sends `payload` on connect, then loses the connection.
struct Sender {
    payload: Vec<u8>,
}

impl Protocol for Sender {
    fn connection_made(&self, transport: Rc<dyn Transport>) {
        transport.write(&self.payload);
        transport.lose_connection();
    }
    fn data_received(&self, _data: &[u8]) {}
    fn connection_lost(&self, _reason: Failure) {}
}

fn run<T: 'static>(reactor: &mut Reactor, d: &Deferred<T>) {
    reactor.run_until(d).unwrap();
}

#[test]
fn large_write_is_flushed_before_lose_connection_closes() {
    let mut reactor = Reactor::new().unwrap();
    let h = reactor.handle();
    let payload: Vec<u8> = (0..8_000_000u32).map(|i| (i % 251) as u8).collect();
    let p = payload.clone();
    let port = listen_tcp(
        &h,
        "127.0.0.1:0".parse().unwrap(),
        move |_| Rc::new(Sender { payload: p.clone() }) as Rc<dyn Protocol>,
        None,
    )
    .unwrap();
    let sink = Rc::new(Sink::default());
    let connected = connect_tcp(&h, port.local_addr(), 5.0, None, None);
    let s = sink.clone();
    connected.add_callback(move |t: Rc<TcpTransport>| {
        t.attach(s);
        Ok(t)
    });
    run(&mut reactor, &sink.lost);
    assert_eq!(sink.data.borrow().len(), payload.len());
    assert!(*sink.data.borrow() == payload);
    assert_eq!(sink.lost.take_result().unwrap().unwrap(), "clean");
    assert_eq!(port.accepted(), 1);
}

#[test]
fn pause_producing_stops_delivery_until_resumed() {
    let mut reactor = Reactor::new().unwrap();
    let h = reactor.handle();
    let payload = vec![7u8; 2_000_000];
    let p = payload.clone();
    let port = listen_tcp(
        &h,
        "127.0.0.1:0".parse().unwrap(),
        move |_| Rc::new(Sender { payload: p.clone() }) as Rc<dyn Protocol>,
        None,
    )
    .unwrap();
    let sink = Rc::new(Sink::default());
    sink.pause_at.set(1);
    let connected = connect_tcp(&h, port.local_addr(), 5.0, None, None);
    let s = sink.clone();
    connected.add_callback(move |t: Rc<TcpTransport>| {
        t.attach(s);
        Ok(t)
    });
    // Run a while: paused after the first read, nothing more arrives.
    let wait = Deferred::new();
    let w = wait.clone();
    reactor.call_later(0.2, move || w.callback(()).unwrap());
    run(&mut reactor, &wait);
    let paused_len = sink.data.borrow().len();
    assert!(
        paused_len < payload.len(),
        "delivery stopped while paused ({paused_len} bytes)"
    );
    assert!(!sink.lost.is_called());
    sink.transport.borrow().clone().unwrap().resume_producing();
    run(&mut reactor, &sink.lost);
    assert_eq!(sink.data.borrow().len(), payload.len());
}

#[test]
fn abort_connection_reports_a_non_clean_loss_and_addresses_are_known() {
    let mut reactor = Reactor::new().unwrap();
    let h = reactor.handle();
    let server_side: Rc<RefCell<Vec<Rc<Sink>>>> = Rc::default();
    let ss = server_side.clone();
    let port = listen_tcp(
        &h,
        "127.0.0.1:0".parse().unwrap(),
        move |_| {
            let s = Rc::new(Sink::default());
            ss.borrow_mut().push(s.clone());
            s as Rc<dyn Protocol>
        },
        None,
    )
    .unwrap();
    let client = Rc::new(Sink::default());
    let connected = connect_tcp(&h, port.local_addr(), 5.0, None, None);
    let c = client.clone();
    let addrs: Rc<RefCell<Option<(SocketAddr, SocketAddr)>>> = Rc::default();
    let a = addrs.clone();
    connected.add_callback(move |t: Rc<TcpTransport>| {
        *a.borrow_mut() = Some((t.host().unwrap(), t.peer().unwrap()));
        t.attach(c);
        t.write(b"hello");
        t.abort_connection();
        Ok(t)
    });
    run(&mut reactor, &client.lost);
    assert!(
        client
            .lost
            .take_result()
            .unwrap()
            .unwrap()
            .contains("aborted")
    );
    let (host, peer) = addrs.borrow().unwrap();
    assert_eq!(peer, port.local_addr());
    assert_eq!(host.ip(), peer.ip());
    // The server side ends too.
    let server = server_side.borrow()[0].clone();
    run(&mut reactor, &server.lost);
}

#[test]
fn connection_refused_is_a_connect_error() {
    let mut reactor = Reactor::new().unwrap();
    let d = connect_tcp(
        &reactor.handle(),
        "127.0.0.1:1".parse().unwrap(),
        5.0,
        None,
        None,
    );
    run(&mut reactor, &d);
    let f = d.take_result().unwrap().unwrap_err();
    let e = f.trap::<ConnectError>().unwrap();
    assert_eq!(e.addr.port(), 1);
}

#[test]
fn tls_between_our_client_and_server() {
    let mut reactor = Reactor::new().unwrap();
    let h = reactor.handle();
    let server_config =
        tls::server_config_from_pem(TEST_SERVER_CERT_PEM, TEST_SERVER_KEY_PEM).unwrap();
    let payload = vec![42u8; 300_000];
    let p = payload.clone();
    let port = listen_tcp(
        &h,
        "127.0.0.1:0".parse().unwrap(),
        move |_| Rc::new(Sender { payload: p.clone() }) as Rc<dyn Protocol>,
        Some(server_config),
    )
    .unwrap();
    let client_config = tls::client_config_with_pem_roots(TEST_CA_PEM).unwrap();
    let sink = Rc::new(Sink::default());
    let connected = connect_tcp(
        &h,
        port.local_addr(),
        5.0,
        Some((client_config, "localhost")),
        None,
    );
    let s = sink.clone();
    let alpn: Rc<RefCell<Option<Rc<TcpTransport>>>> = Rc::default();
    let a = alpn.clone();
    connected.add_callback(move |t: Rc<TcpTransport>| {
        assert!(t.is_tls());
        *a.borrow_mut() = Some(t.clone());
        t.attach(s);
        Ok(t)
    });
    run(&mut reactor, &sink.lost);
    assert_eq!(*sink.data.borrow(), payload);
    assert_eq!(
        sink.lost.take_result().unwrap().unwrap(),
        "clean",
        "close_notify makes a clean end"
    );
    assert_eq!(
        alpn.borrow().as_ref().unwrap().alpn_protocol().as_deref(),
        Some(&b"http/1.1"[..])
    );
}

#[test]
fn tls_name_mismatch_is_rejected() {
    let mut reactor = Reactor::new().unwrap();
    let h = reactor.handle();
    let server_config =
        tls::server_config_from_pem(TEST_SERVER_CERT_PEM, TEST_SERVER_KEY_PEM).unwrap();
    let port = listen_tcp(
        &h,
        "127.0.0.1:0".parse().unwrap(),
        move |_| {
            Rc::new(Sender {
                payload: b"x".to_vec(),
            }) as Rc<dyn Protocol>
        },
        Some(server_config),
    )
    .unwrap();
    let client_config = tls::client_config_with_pem_roots(TEST_CA_PEM).unwrap();
    let sink = Rc::new(Sink::default());
    let connected = connect_tcp(
        &h,
        port.local_addr(),
        5.0,
        Some((client_config, "other.example")),
        None,
    );
    let s = sink.clone();
    connected.add_callback(move |t: Rc<TcpTransport>| {
        t.attach(s);
        Ok(t)
    });
    run(&mut reactor, &sink.lost);
    let reason = sink.lost.take_result().unwrap().unwrap();
    assert!(
        reason.contains("TLS") || reason.to_lowercase().contains("certificate"),
        "{reason}"
    );
    assert!(sink.data.borrow().is_empty());
}
