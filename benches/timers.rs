//! Timer queue costs with 1,000,000 pending timers. Targets (issue 2): schedule + cancel
//! at most 150 ns amortized; running 1,000,000 due timers at most 150 ns each.
//!
//! cargo bench --bench timers

mod support;

use support::Rng;
use trawl::reactor::ManualClock;

fn main() {
    let n: u64 = if support::smoke() { 10_000 } else { 1_000_000 };
    let clock = ManualClock::new();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);

    let pending: Vec<_> = (0..n)
        .map(|_| clock.call_later((rng.next() % 1_000_000) as f64 / 1000.0, || {}))
        .collect();
    assert_eq!(clock.pending_count() as u64, n);

    support::bench(
        &format!("schedule + cancel with {n} pending"),
        1_000_000,
        || {
            let call = clock.call_later((rng.next() % 1_000_000) as f64 / 1000.0, || {});
            call.cancel()
        },
    );
    support::bench(
        &format!("schedule + reset + cancel with {n} pending"),
        1_000_000,
        || {
            let call = clock.call_later((rng.next() % 1_000_000) as f64 / 1000.0, || {});
            call.reset(1.0).ok();
            call.cancel()
        },
    );
    drop(pending);

    let fresh = ManualClock::new();
    let mut rng = Rng(42);
    let calls: Vec<_> = (0..n)
        .map(|_| fresh.call_later((rng.next() % 1_000_000) as f64 / 1000.0, || {}))
        .collect();
    let mut ran = 0;
    support::bench_once(&format!("run {n} due timers (random times)"), n, || {
        ran = fresh.advance(1_000_000.0);
    });
    assert_eq!(ran as u64, n);
    drop(calls);

    let fresh = ManualClock::new();
    let counter = std::rc::Rc::new(std::cell::Cell::new(0u64));
    for i in 0..n {
        let c = counter.clone();
        fresh.call_later(i as f64 / 1000.0, move || c.set(c.get() + 1));
    }
    support::bench_once(
        &format!("run {n} due timers (ascending, capturing)"),
        n,
        || {
            fresh.advance(1_000_000.0);
        },
    );
    assert_eq!(counter.get(), n);
}
