//! An idle reactor must block in poll: no timers means no wake-ups and no CPU; one
//! LoopingCall at 5 s means one wake-up per 5 s (issue 2).
//!
//! cargo bench --bench reactor_idle   (takes about 13 s)

mod support;

use std::time::{Duration, Instant};

use trawl::reactor::Reactor;
use trawl::task::LoopingCall;

fn main() {
    let (idle_for, loop_for) = if support::smoke() {
        (Duration::from_millis(200), 0.3)
    } else {
        (Duration::from_secs(2), 10.5)
    };

    // 1. No timers: another thread stops the reactor after `idle_for`.
    let mut reactor = Reactor::new().expect("reactor");
    let caller = reactor.handle().thread_caller();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(idle_for);
        caller.call_from_thread(|h| h.stop());
    });
    let cpu0 = support::cpu_time();
    let start = Instant::now();
    reactor.run().expect("run");
    let wall = start.elapsed();
    let cpu = support::cpu_time().zip(cpu0).map(|(a, b)| a - b);
    stopper.join().ok();
    println!(
        "idle, no timers: {:.2} s wall, {} iterations, CPU {:?}",
        wall.as_secs_f64(),
        reactor.handle().iterations(),
        cpu
    );

    // 2. One LoopingCall at 5 s (scaled down in smoke mode).
    let interval = if support::smoke() { 0.1 } else { 5.0 };
    let mut reactor = Reactor::new().expect("reactor");
    let handle = reactor.handle();
    let ticks = std::rc::Rc::new(std::cell::Cell::new(0u32));
    let t = ticks.clone();
    let lc = LoopingCall::new(handle.clock(), move || {
        t.set(t.get() + 1);
        Ok(())
    });
    lc.start(interval, true).expect("start");
    let h = handle.clone();
    handle.call_later(loop_for, move || h.stop());
    let cpu0 = support::cpu_time();
    let before = handle.iterations();
    reactor.run().expect("run");
    let cpu = support::cpu_time().zip(cpu0).map(|(a, b)| a - b);
    println!(
        "one LoopingCall every {interval} s for {loop_for} s: {} calls, {} iterations, CPU {:?}",
        ticks.get(),
        handle.iterations() - before,
        cpu
    );
}
