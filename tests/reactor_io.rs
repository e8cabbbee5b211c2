//! The real reactor: monotonic clock, a real socket pair, the cross-thread waker.

mod util;

use std::cell::{Cell, RefCell};
use std::io::{Read, Write};
use std::rc::Rc;
use std::time::{Duration, Instant};

use mio::net::UnixStream;
use mio::{Interest, Token};
use trawl::defer::Deferred;
use trawl::reactor::{IoHandler, Reactor, ReactorHandle, Readiness, RunError};
use trawl::testing::success_result_of;
use util::Events;

struct Reader {
    stream: RefCell<UnixStream>,
    received: RefCell<Vec<u8>>,
    events: Cell<u32>,
    reactor: ReactorHandle,
}

impl IoHandler for Reader {
    fn ready(&self, _token: Token, readiness: Readiness) {
        self.events.set(self.events.get() + 1);
        if readiness.readable {
            let mut buf = [0u8; 1024];
            loop {
                match self.stream.borrow_mut().read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => self.received.borrow_mut().extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => panic!("read failed: {e}"),
                }
            }
            if self.received.borrow().ends_with(b"!") {
                self.reactor.stop();
            }
        }
    }
}

#[test]
fn readable_event_is_dispatched_and_stop_ends_run() {
    let mut reactor = Reactor::new().unwrap();
    let handle = reactor.handle();
    let (a, mut b) = UnixStream::pair().unwrap();
    let reader = Rc::new(Reader {
        stream: RefCell::new(a),
        received: RefCell::new(Vec::new()),
        events: Cell::new(0),
        reactor: handle.clone(),
    });
    let token = handle
        .register(
            &mut *reader.stream.borrow_mut(),
            Interest::READABLE,
            reader.clone(),
        )
        .unwrap();
    // write later, from a timer, so run() must wait in poll first
    handle.call_later(0.01, move || {
        b.write_all(b"hello!").unwrap();
        std::mem::forget(b); // keep the peer open
    });
    reactor.run().unwrap();
    assert_eq!(&*reader.received.borrow(), b"hello!");
    assert!(reader.events.get() >= 1);
    handle
        .deregister(&mut *reader.stream.borrow_mut(), token)
        .unwrap();
    assert_eq!(handle.source_count(), 0);
}

#[test]
fn timers_on_real_clock_fire_in_order() {
    let mut reactor = Reactor::new().unwrap();
    let ev = Events::new();
    let h = reactor.handle();
    for (delay, name) in [(0.02, "b"), (0.01, "a"), (0.02, "c")] {
        let e = ev.clone();
        reactor.call_later(delay, move || e.push(name));
    }
    reactor.call_later(0.03, move || h.stop());
    let start = Instant::now();
    reactor.run().unwrap();
    assert!(start.elapsed() >= Duration::from_millis(30));
    assert_eq!(ev.get(), ["a", "b", "c"]);
}

#[test]
fn zero_delay_call_scheduled_in_a_pass_runs_next_iteration() {
    let mut reactor = Reactor::new().unwrap();
    let h = reactor.handle();
    let seen_iteration = Rc::new(Cell::new(0));
    let s = seen_iteration.clone();
    let h2 = h.clone();
    reactor.call_later(0.0, move || {
        let first = h2.iterations();
        let h3 = h2.clone();
        h2.call_later(0.0, move || {
            s.set(h3.iterations() - first);
            h3.stop();
        });
    });
    reactor.run().unwrap();
    assert_eq!(
        seen_iteration.get(),
        1,
        "ran one iteration later, not in the same pass"
    );
}

#[test]
fn self_rescheduling_zero_delay_call_does_not_starve_io() {
    let mut reactor = Reactor::new().unwrap();
    let handle = reactor.handle();
    fn spin(h: ReactorHandle, n: Rc<Cell<u64>>) {
        n.set(n.get() + 1);
        let h2 = h.clone();
        h.call_later(0.0, move || spin(h2, n));
    }
    let spins = Rc::new(Cell::new(0));
    spin(handle.clone(), spins.clone());
    let (a, mut b) = UnixStream::pair().unwrap();
    let reader = Rc::new(Reader {
        stream: RefCell::new(a),
        received: RefCell::new(Vec::new()),
        events: Cell::new(0),
        reactor: handle.clone(),
    });
    handle
        .register(
            &mut *reader.stream.borrow_mut(),
            Interest::READABLE,
            reader.clone(),
        )
        .unwrap();
    b.write_all(b"data!").unwrap();
    reactor.run().unwrap();
    assert_eq!(&*reader.received.borrow(), b"data!");
    assert!(
        spins.get() < 100,
        "I/O was served promptly ({} spins)",
        spins.get()
    );
}

#[test]
fn run_until_a_deferred_fires() {
    let mut reactor = Reactor::new().unwrap();
    let d = Deferred::new();
    let d2 = d.clone();
    reactor.call_later(0.005, move || d2.callback(42).unwrap());
    reactor.run_until(&d).unwrap();
    assert_eq!(success_result_of(d), 42);
}

#[test]
fn run_until_reports_a_stall_instead_of_hanging() {
    let mut reactor = Reactor::new().unwrap();
    let d: Deferred<()> = Deferred::new();
    assert!(matches!(reactor.run_until(&d), Err(RunError::Stalled)));
}

#[test]
fn run_until_reports_stop() {
    let mut reactor = Reactor::new().unwrap();
    let h = reactor.handle();
    let d: Deferred<()> = Deferred::new();
    let keepalive = reactor.call_later(10.0, || {});
    reactor.call_later(0.0, move || h.stop());
    assert!(matches!(reactor.run_until(&d), Err(RunError::Stopped)));
    keepalive.cancel().unwrap();
}

#[test]
fn call_from_thread_wakes_a_blocked_reactor() {
    let mut reactor = Reactor::new().unwrap();
    let caller = reactor.handle().thread_caller();
    let worker = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        caller.call_from_thread(|h| h.stop());
    });
    let start = Instant::now();
    reactor.run().unwrap();
    assert!(start.elapsed() >= Duration::from_millis(15));
    worker.join().unwrap();
}

#[test]
fn expect_from_thread_delivers_value_and_dropped() {
    let mut reactor = Reactor::new().unwrap();
    let handle = reactor.handle();
    let d = Deferred::new();
    let d2 = d.clone();
    let sender = handle.expect_from_thread(move |r: Result<u64, trawl::reactor::Dropped>| {
        d2.callback(r.unwrap()).unwrap();
    });
    std::thread::spawn(move || sender.send((1..=10).sum()));
    reactor.run_until(&d).unwrap();
    assert_eq!(success_result_of(d), 55);

    let d = Deferred::new();
    let d2 = d.clone();
    let sender = handle.expect_from_thread(move |r: Result<u64, trawl::reactor::Dropped>| {
        d2.callback(r.is_err()).unwrap();
    });
    std::thread::spawn(move || {
        let _s = sender;
        panic!("worker died without sending");
    });
    reactor.run_until(&d).unwrap();
    assert!(success_result_of(d), "dropping the sender delivers Dropped");
}

#[test]
fn idle_reactor_blocks_in_poll() {
    // One timer 50 ms away: the loop must wait in poll, not spin.
    let mut reactor = Reactor::new().unwrap();
    let h = reactor.handle();
    reactor.call_later(0.05, move || h.stop());
    reactor.run().unwrap();
    assert!(
        reactor.handle().iterations() <= 4,
        "{} iterations for one 50 ms timer",
        reactor.handle().iterations()
    );
}

#[test]
fn panicking_io_handler_is_contained() {
    struct Bad;
    impl IoHandler for Bad {
        fn ready(&self, _: Token, _: Readiness) {
            panic!("handler bug");
        }
    }
    let mut reactor = Reactor::new().unwrap();
    let h = reactor.handle();
    let (mut a, mut b) = UnixStream::pair().unwrap();
    let token = h
        .register(&mut a, Interest::READABLE, Rc::new(Bad))
        .unwrap();
    b.write_all(b"x").unwrap();
    let h2 = h.clone();
    reactor.call_later(0.02, move || h2.stop());
    reactor.run().unwrap(); // survives the panic
    h.deregister(&mut a, token).unwrap();
}
