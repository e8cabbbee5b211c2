//! The public test doubles: StringTransport driving a protocol, and the trial-style
//! result helpers.

use std::cell::RefCell;
use std::rc::Rc;

use trawl::defer::{Deferred, Failure};
use trawl::net::{ConnectionDone, Protocol, Transport};
use trawl::testing::{StringTransport, assert_no_result, failure_result_of, success_result_of};

/// A line protocol: answers "PING" with "PONG", "QUIT" closes; reports the end.
#[derive(Default)]
struct Pinger {
    transport: RefCell<Option<Rc<dyn Transport>>>,
    buffer: RefCell<Vec<u8>>,
    closed: Deferred<String>,
}

impl Protocol for Pinger {
    fn connection_made(&self, transport: Rc<dyn Transport>) {
        *self.transport.borrow_mut() = Some(transport);
    }

    fn data_received(&self, data: &[u8]) {
        self.buffer.borrow_mut().extend_from_slice(data);
        loop {
            let line = {
                let mut buf = self.buffer.borrow_mut();
                let Some(pos) = buf.iter().position(|&b| b == b'\n') else {
                    break;
                };
                buf.drain(..=pos).collect::<Vec<u8>>()
            };
            let transport = self.transport.borrow().clone();
            let Some(t) = transport else { return };
            match line.as_slice() {
                b"PING\n" => t.write(b"PONG\n"),
                b"QUIT\n" => t.lose_connection(),
                _ => t.write(b"ERR\n"),
            }
        }
    }

    fn connection_lost(&self, reason: Failure) {
        let _ = self.closed.callback(reason.to_string());
    }
}

#[test]
fn string_transport_records_protocol_output() {
    let p = Pinger::default();
    let t = StringTransport::connect(&p);
    p.data_received(b"PI");
    assert!(t.value().is_empty(), "partial line: no answer yet");
    p.data_received(b"NG\nHELLO\nPING\n");
    assert_eq!(t.value(), b"PONG\nERR\nPONG\n");
    t.clear();
    p.data_received(b"QUIT\n");
    assert!(t.disconnecting() && !t.aborted());
    p.data_received(b"PING\n");
    assert!(
        t.value().is_empty(),
        "writes after lose_connection are dropped"
    );
    assert_no_result(&p.closed);
    p.connection_lost(Failure::new(ConnectionDone));
    assert_eq!(
        success_result_of(p.closed.clone()),
        "connection was closed cleanly"
    );
}

#[test]
fn string_transport_abort_and_producer_state() {
    let t = StringTransport::new();
    t.pause_producing();
    assert!(t.producer_paused());
    t.resume_producing();
    assert!(!t.producer_paused());
    t.abort_connection();
    assert!(t.aborted() && t.disconnecting());
    assert_eq!(t.peer(), None);
    let a = "127.0.0.1:1".parse().unwrap();
    let b = "127.0.0.1:2".parse().unwrap();
    let t = StringTransport::with_addresses(a, b);
    assert_eq!((t.host(), t.peer()), (Some(a), Some(b)));
}

#[test]
#[should_panic(expected = "found no result")]
fn success_result_of_panics_without_result() {
    let d: Deferred<i32> = Deferred::new();
    success_result_of(d);
}

#[test]
#[should_panic(expected = "found failure result")]
fn success_result_of_panics_on_failure() {
    let d: Deferred<i32> = Deferred::new();
    d.errback(Failure::msg("x")).unwrap();
    success_result_of(d);
}

#[test]
#[should_panic(expected = "found success result")]
fn failure_result_of_panics_on_success() {
    let d = Deferred::new();
    d.callback(1).unwrap();
    failure_result_of(d);
}

#[test]
#[should_panic(expected = "expected no result")]
fn assert_no_result_panics_on_result() {
    let d = Deferred::new();
    d.callback(1).unwrap();
    assert_no_result(&d);
}
