//! Deferred chain costs. Target (issue 2): build and fire a Deferred with 6 callbacks in
//! at most 250 ns.
//!
//! cargo bench --bench deferred

mod support;

use trawl::defer::{Deferred, Failure, succeed};
use trawl::task::CallLaterOnce;
use trawl::testing::ManualClock;

fn main() {
    support::bench(
        "build + fire, 6 callbacks (success path)",
        1_000_000,
        || {
            let d = Deferred::new();
            d.add_callback(|x: u64| Ok(x + 1))
                .add_callback(|x| Ok(x * 2))
                .add_errback(|_f| Ok(0))
                .add_both(|r| r)
                .add_callback(|x| Ok(x + 3))
                .add_errback(|_f| Ok(0));
            d.callback(1).ok();
            d.take_result()
        },
    );

    support::bench(
        "build + fire, 6 callbacks (engine chain, handle fails)",
        1_000_000,
        || {
            let d = Deferred::new();
            d.add_both(|_r: Result<u64, Failure>| Err(Failure::msg("handle failed")))
                .add_errback(|_f| Ok(0))
                .add_both(|r| r)
                .add_errback(|_f| Ok(0))
                .add_both(|r| r)
                .add_errback(|_f| Ok(0));
            d.callback(1).ok();
            d.take_result()
        },
    );

    support::bench(
        "build + fire, 6 callbacks capturing state",
        1_000_000,
        || {
            let counter = std::rc::Rc::new(std::cell::Cell::new(0u64));
            let d = Deferred::new();
            for _ in 0..6 {
                let c = counter.clone();
                d.add_callback(move |x: u64| {
                    c.set(c.get() + x);
                    Ok(x)
                });
            }
            d.callback(1).ok();
            d.take_result()
        },
    );

    support::bench(
        "chained: callback returns an unfired Deferred",
        1_000_000,
        || {
            let inner = Deferred::new();
            let outer = Deferred::new();
            let i = inner.clone();
            outer
                .add_callback(move |_: u64| i)
                .add_callback(|x| Ok(x + 1));
            outer.callback(0).ok();
            inner.callback(41).ok();
            outer.take_result()
        },
    );

    support::bench("then() type change", 1_000_000, || {
        let d = succeed(1u64);
        let out = d.map(|x| x as u32);
        out.take_result()
    });

    let clock = ManualClock::new();
    let once = CallLaterOnce::new(&clock, || {});
    support::bench("CallLaterOnce: 16 schedule() + one run", 200_000, || {
        for _ in 0..16 {
            once.schedule(0.0);
        }
        clock.advance(0.0)
    });
}
