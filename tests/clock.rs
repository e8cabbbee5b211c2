//! Timers: `call_later` and `IDelayedCall` semantics under the ManualClock (Twisted's
//! `task.Clock` tests).

mod util;

use std::cell::Cell;
use std::rc::Rc;

use trawl::reactor::{DelayedCallError, ManualClock};
use util::Events;

#[test]
fn call_runs_when_time_comes() {
    let clock = ManualClock::new();
    let fired = Rc::new(Cell::new(false));
    let f = fired.clone();
    let call = clock.call_later(3.0, move || f.set(true));
    assert_eq!(call.get_time(), 3.0);
    clock.advance(2.999);
    assert!(!fired.get());
    clock.advance(0.001);
    assert!(fired.get());
    assert!(call.called() && !call.active());
}

#[test]
fn equal_times_run_in_scheduling_order() {
    let clock = ManualClock::new();
    let ev = Events::new();
    for i in 0..50 {
        let e = ev.clone();
        clock.call_later(1.0, move || e.push(i.to_string()));
    }
    clock.advance(1.0);
    let expected: Vec<String> = (0..50).map(|i| i.to_string()).collect();
    assert_eq!(ev.get(), expected);
}

#[test]
fn calls_run_in_time_order() {
    let clock = ManualClock::new();
    let ev = Events::new();
    for (delay, name) in [(3.0, "c"), (1.0, "a"), (2.0, "b"), (0.5, "first")] {
        let e = ev.clone();
        clock.call_later(delay, move || e.push(name));
    }
    clock.advance(10.0);
    assert_eq!(ev.get(), ["first", "a", "b", "c"]);
}

#[test]
fn call_scheduled_during_advance_for_passed_time_runs_in_same_advance() {
    let clock = ManualClock::new();
    let ev = Events::new();
    let (c, e) = (clock.clone(), ev.clone());
    clock.call_later(1.0, move || {
        e.push("outer");
        let e2 = e.clone();
        // due at (now=5.0) + 0 -> already due within this advance
        c.call_later(0.0, move || e2.push("inner-now"));
        let e3 = e.clone();
        c.call_later(10.0, move || e3.push("inner-later"));
    });
    clock.advance(5.0);
    assert_eq!(ev.get(), ["outer", "inner-now"]);
    assert_eq!(clock.get_delayed_calls().len(), 1);
    assert_eq!(clock.get_delayed_calls()[0].get_time(), 15.0);
}

#[test]
fn seconds_reads_target_time_during_advance() {
    let clock = ManualClock::new();
    let seen = Rc::new(Cell::new(0.0));
    let (c, s) = (clock.clone(), seen.clone());
    clock.call_later(1.0, move || s.set(c.seconds()));
    clock.advance(4.0);
    assert_eq!(seen.get(), 4.0);
    assert_eq!(clock.seconds(), 4.0);
}

#[test]
fn decimal_advances_are_exact() {
    let clock = ManualClock::new();
    let fired = Rc::new(Cell::new(false));
    let f = fired.clone();
    clock.call_later(0.3, move || f.set(true));
    clock.pump(&[0.1, 0.1, 0.1]);
    assert!(fired.get(), "0.1 * 3 must reach 0.3 exactly");
}

#[test]
fn cancel_prevents_call_and_errors_second_time() {
    let clock = ManualClock::new();
    let fired = Rc::new(Cell::new(false));
    let f = fired.clone();
    let call = clock.call_later(1.0, move || f.set(true));
    assert_eq!(call.cancel(), Ok(()));
    assert_eq!(call.cancel(), Err(DelayedCallError::AlreadyCancelled));
    assert!(call.cancelled() && !call.active());
    clock.advance(2.0);
    assert!(!fired.get());
    assert_eq!(call.reset(1.0), Err(DelayedCallError::AlreadyCancelled));
    assert_eq!(call.delay(1.0), Err(DelayedCallError::AlreadyCancelled));
}

#[test]
fn cancel_after_call_is_already_called() {
    let clock = ManualClock::new();
    let call = clock.call_later(0.0, || {});
    clock.advance(0.0);
    assert_eq!(call.cancel(), Err(DelayedCallError::AlreadyCalled));
    assert_eq!(call.reset(1.0), Err(DelayedCallError::AlreadyCalled));
}

#[test]
fn cancel_from_inside_own_call_is_already_called() {
    let clock = ManualClock::new();
    let slot = Rc::new(std::cell::RefCell::new(None));
    let got = Rc::new(std::cell::RefCell::new(None));
    let (s, g) = (slot.clone(), got.clone());
    let call = clock.call_later(1.0, move || {
        let me: &Option<trawl::reactor::DelayedCall> = &s.borrow();
        *g.borrow_mut() = me.as_ref().map(|c| c.cancel());
    });
    *slot.borrow_mut() = Some(call);
    clock.advance(1.0);
    assert_eq!(*got.borrow(), Some(Err(DelayedCallError::AlreadyCalled)));
}

#[test]
fn reset_moves_the_call() {
    let clock = ManualClock::new();
    let fired = Rc::new(Cell::new(0));
    let f = fired.clone();
    let call = clock.call_later(1.0, move || f.set(f.get() + 1));
    clock.advance(0.5);
    call.reset(2.0).unwrap();
    assert_eq!(call.get_time(), 2.5);
    clock.advance(1.0);
    assert_eq!(fired.get(), 0);
    clock.advance(1.0);
    assert_eq!(fired.get(), 1, "runs once, not once per heap entry");
}

#[test]
fn delay_pushes_the_call_back_and_forward() {
    let clock = ManualClock::new();
    let fired = Rc::new(Cell::new(false));
    let f = fired.clone();
    let call = clock.call_later(1.0, move || f.set(true));
    call.delay(2.0).unwrap();
    assert_eq!(call.get_time(), 3.0);
    call.delay(-1.5).unwrap();
    assert_eq!(call.get_time(), 1.5);
    clock.advance(1.4);
    assert!(!fired.get());
    clock.advance(0.1);
    assert!(fired.get());
}

#[test]
fn get_delayed_calls_lists_pending_sorted() {
    let clock = ManualClock::new();
    let a = clock.call_later(2.0, || {});
    let _b = clock.call_later(1.0, || {});
    let _c = clock.call_later(3.0, || {});
    a.cancel().unwrap();
    let times: Vec<f64> = clock
        .get_delayed_calls()
        .iter()
        .map(|c| c.get_time())
        .collect();
    assert_eq!(times, [1.0, 3.0]);
    assert_eq!(clock.pending_count(), 2);
}

#[test]
fn negative_delay_means_now() {
    let clock = ManualClock::new();
    clock.advance(5.0);
    let fired = Rc::new(Cell::new(false));
    let f = fired.clone();
    let call = clock.call_later(-3.0, move || f.set(true));
    assert_eq!(call.get_time(), 5.0);
    clock.advance(0.0);
    assert!(fired.get());
}

#[test]
fn panicking_call_escapes_advance_and_leaves_later_calls_pending() {
    // task.Clock.advance lets the exception out; the rest waits for the next advance.
    let clock = ManualClock::new();
    let ran = Rc::new(Cell::new(false));
    let r = ran.clone();
    clock.call_later(1.0, || panic!("timer went wrong"));
    clock.call_later(1.0, move || r.set(true));
    let escaped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| clock.advance(1.0)));
    let message = escaped.expect_err("the panic must reach the test");
    assert_eq!(message.downcast_ref::<&str>(), Some(&"timer went wrong"));
    assert!(!ran.get());
    assert_eq!(clock.pending_count(), 1);
    assert_eq!(clock.advance(0.0), 1);
    assert!(ran.get());
}

#[test]
fn many_timers_schedule_cancel_and_run() {
    let clock = ManualClock::new();
    let count = Rc::new(Cell::new(0u32));
    let mut calls = Vec::new();
    for i in 0..100_000u32 {
        let c = count.clone();
        calls.push(clock.call_later(f64::from(i % 1000), move || c.set(c.get() + 1)));
    }
    for call in calls.iter().step_by(3) {
        call.cancel().unwrap();
    }
    assert_eq!(clock.pending_count(), 100_000 - 33_334);
    clock.advance(1000.0);
    assert_eq!(count.get(), 100_000 - 33_334);
    assert_eq!(clock.pending_count(), 0);
}

#[test]
fn dropping_a_cancelled_closure_may_schedule() {
    struct OnDrop(trawl::reactor::Clock, Rc<Cell<bool>>);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            let flag = self.1.clone();
            self.0.call_later(0.0, move || flag.set(true));
        }
    }
    let clock = ManualClock::new();
    let flag = Rc::new(Cell::new(false));
    let guard = OnDrop(clock.clock(), flag.clone());
    let call = clock.call_later(1.0, move || drop(guard));
    call.cancel().unwrap(); // drops the closure, whose Drop schedules: no borrow panic
    clock.advance(0.0);
    assert!(flag.get());
}

#[test]
fn earlier_call_scheduled_after_peeking_at_a_later_one_runs_on_time() {
    // Regression: looking at the earliest pending call (poll timeout, a partial
    // advance) must not move the queue's floor past "now".
    let clock = ManualClock::new();
    let ev = Events::new();
    let e = ev.clone();
    clock.call_later(10.0, move || e.push("late"));
    assert_eq!(
        clock.time_until_next(),
        Some(std::time::Duration::from_secs(10))
    );
    clock.advance(5.0);
    let e = ev.clone();
    clock.call_later(1.0, move || e.push("early"));
    clock.advance(1.0);
    assert_eq!(ev.get(), ["early"]);
    clock.advance(4.0);
    assert_eq!(ev.get(), ["early", "late"]);
}

#[test]
fn interleaved_schedules_and_advances_match_a_sorted_model() {
    // Many random schedules, cancels and partial advances against a brute-force model.
    let clock = ManualClock::new();
    let fired = Rc::new(std::cell::RefCell::new(Vec::new()));
    let mut model: Vec<(u64, u64)> = Vec::new(); // (due ms, id)
    let mut calls = Vec::new();
    let mut seed = 0x1234_5678_u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut now_ms = 0u64;
    let mut expected = Vec::new();
    for id in 0..3000u64 {
        match rnd() % 4 {
            0 | 1 => {
                let delay = rnd() % 500;
                let f = fired.clone();
                calls.push((
                    id,
                    clock.call_later(delay as f64 / 1000.0, move || f.borrow_mut().push(id)),
                ));
                model.push((now_ms + delay, id));
            }
            2 if !calls.is_empty() => {
                let k = (rnd() % calls.len() as u64) as usize;
                let (cid, call) = calls.swap_remove(k);
                if call.cancel().is_ok() {
                    model.retain(|&(_, i)| i != cid);
                }
            }
            _ => {
                let step = rnd() % 200;
                now_ms += step;
                clock.advance(step as f64 / 1000.0);
                let mut due: Vec<(u64, u64)> = model
                    .iter()
                    .copied()
                    .filter(|&(t, _)| t <= now_ms)
                    .collect();
                due.sort();
                model.retain(|&(t, _)| t > now_ms);
                expected.extend(due.into_iter().map(|(_, i)| i));
                assert_eq!(*fired.borrow(), expected, "after advancing to {now_ms} ms");
            }
        }
    }
}
