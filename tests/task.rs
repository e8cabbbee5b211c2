//! LoopingCall, CallLaterOnce and defer_later under the ManualClock (Twisted's
//! `test_task`, Scrapy's `CallLaterOnce` behaviour).

mod util;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use trawl::defer::{CancelledError, Deferred, Failure};
use trawl::task::{CallLaterOnce, LoopingCall, LoopingCallError, defer_later};
use trawl::testing::{ManualClock, assert_no_result, failure_result_of, success_result_of};
use util::Events;

fn counter() -> (Rc<Cell<u32>>, impl FnMut() -> Result<(), Failure> + 'static) {
    let n = Rc::new(Cell::new(0));
    let c = n.clone();
    (n, move || {
        c.set(c.get() + 1);
        Ok(())
    })
}

// ---- LoopingCall --------------------------------------------------------------------

#[test]
fn looping_call_basic_function() {
    // Twisted's testBasicFunction: pump [0.05, 0.1, 0.1] at interval 0.1.
    let clock = ManualClock::new();
    let times = Rc::new(RefCell::new(Vec::new()));
    let (t, c) = (times.clone(), clock.clone());
    let lc = LoopingCall::new(&clock, move || {
        t.borrow_mut().push(c.seconds());
        Ok(())
    });
    let d = lc.start(0.1, true).unwrap();
    clock.pump(&[0.05, 0.1, 0.1]);
    let got: Vec<String> = times.borrow().iter().map(|t| format!("{t:.2}")).collect();
    assert_eq!(got, ["0.00", "0.15", "0.25"]);
    lc.stop().unwrap();
    assert_eq!(success_result_of(d), ());
    assert!(
        clock.get_delayed_calls().is_empty(),
        "nothing left scheduled"
    );
}

#[test]
fn looping_call_not_now_waits_one_interval() {
    let clock = ManualClock::new();
    let (n, f) = counter();
    let lc = LoopingCall::new(&clock, f);
    lc.start(2.0, false).unwrap();
    assert_eq!(n.get(), 0);
    clock.advance(1.9);
    assert_eq!(n.get(), 0);
    clock.advance(0.1);
    assert_eq!(n.get(), 1);
}

#[test]
fn looping_call_skips_missed_intervals() {
    let clock = ManualClock::new();
    let times = Rc::new(RefCell::new(Vec::new()));
    let (t, c) = (times.clone(), clock.clone());
    let lc = LoopingCall::new(&clock, move || {
        t.borrow_mut().push(c.seconds());
        Ok(())
    });
    lc.start(1.0, true).unwrap();
    clock.advance(3.5); // the call due at 1.0 runs at 3.5; 2.0 and 3.0 are skipped
    clock.advance(0.5);
    assert_eq!(*times.borrow(), [0.0, 3.5, 4.0]);
}

#[test]
fn looping_call_skips_when_the_call_itself_is_slow() {
    // The function advances the clock past several intervals while it "runs".
    let clock = ManualClock::new();
    let times = Rc::new(RefCell::new(Vec::new()));
    let (t, c) = (times.clone(), clock.clone());
    let lc = LoopingCall::new(&clock, move || {
        t.borrow_mut().push(c.seconds());
        if c.seconds() == 0.0 {
            c.advance(2.5);
        }
        Ok(())
    });
    lc.start(1.0, true).unwrap();
    clock.advance(0.5); // next call at 3.0, not 1.0 or 2.0
    assert_eq!(*times.borrow(), [0.0, 3.0]);
}

#[test]
fn looping_call_with_count_reports_elapsed_intervals() {
    let clock = ManualClock::new();
    let counts = Rc::new(RefCell::new(Vec::new()));
    let c = counts.clone();
    let lc = LoopingCall::with_count(&clock, move |n| {
        c.borrow_mut().push(n);
        Ok(())
    });
    lc.start(1.0, true).unwrap();
    clock.advance(1.0);
    clock.advance(3.0);
    clock.advance(1.0);
    assert_eq!(*counts.borrow(), [1, 1, 3, 1]);
}

#[test]
fn looping_call_with_count_not_now() {
    let clock = ManualClock::new();
    let counts = Rc::new(RefCell::new(Vec::new()));
    let c = counts.clone();
    let lc = LoopingCall::with_count(&clock, move |n| {
        c.borrow_mut().push(n);
        Ok(())
    });
    lc.start(1.0, false).unwrap();
    clock.advance(2.5);
    assert_eq!(*counts.borrow(), [2]);
}

#[test]
fn looping_call_error_stops_and_errbacks() {
    let clock = ManualClock::new();
    let n = Rc::new(Cell::new(0));
    let c = n.clone();
    let lc = LoopingCall::new(&clock, move || {
        c.set(c.get() + 1);
        if c.get() == 3 {
            Err(Failure::msg("third call fails"))
        } else {
            Ok(())
        }
    });
    let d = lc.start(1.0, true).unwrap();
    clock.pump(&[1.0, 1.0, 1.0, 1.0]);
    assert_eq!(n.get(), 3);
    assert!(!lc.running());
    assert!(
        failure_result_of(d)
            .to_string()
            .contains("third call fails")
    );
    assert!(clock.get_delayed_calls().is_empty());
}

#[test]
fn looping_call_panic_stops_and_errbacks() {
    let clock = ManualClock::new();
    let lc = LoopingCall::new(&clock, || -> Result<(), Failure> {
        panic!("loop body panicked")
    });
    let d = lc.start(1.0, true).unwrap();
    assert!(
        failure_result_of(d)
            .to_string()
            .contains("loop body panicked")
    );
    assert!(!lc.running());
}

#[test]
fn looping_call_waits_for_returned_deferred() {
    let clock = ManualClock::new();
    let pending: Rc<RefCell<Vec<Deferred<()>>>> = Rc::default();
    let p = pending.clone();
    let lc = LoopingCall::new(&clock, move || {
        let d = Deferred::new();
        p.borrow_mut().push(d.clone());
        d
    });
    lc.start(1.0, true).unwrap();
    clock.advance(5.0);
    assert_eq!(
        pending.borrow().len(),
        1,
        "no new call while the first is in flight"
    );
    let first = pending.borrow()[0].clone();
    first.callback(()).unwrap(); // finishes at 5.0: next at 6.0
    clock.advance(1.0);
    assert_eq!(pending.borrow().len(), 2);
}

#[test]
fn looping_call_stop_while_call_in_flight_fires_on_completion() {
    let clock = ManualClock::new();
    let inner: Deferred<()> = Deferred::new();
    let i = inner.clone();
    let lc = LoopingCall::new(&clock, move || i.clone());
    let d = lc.start(1.0, true).unwrap();
    lc.stop().unwrap();
    assert_no_result(&d);
    inner.callback(()).unwrap();
    assert_eq!(success_result_of(d), ());
}

#[test]
fn looping_call_stop_from_inside_the_function() {
    let clock = ManualClock::new();
    let slot: Rc<RefCell<Option<LoopingCall>>> = Rc::default();
    let s = slot.clone();
    let n = Rc::new(Cell::new(0));
    let c = n.clone();
    let lc = LoopingCall::new(&clock, move || {
        c.set(c.get() + 1);
        if c.get() == 2 {
            s.borrow().as_ref().unwrap().stop().unwrap();
        }
        Ok(())
    });
    *slot.borrow_mut() = Some(lc.clone());
    let d = lc.start(1.0, true).unwrap();
    clock.pump(&[1.0, 1.0, 1.0]);
    assert_eq!(n.get(), 2);
    assert_eq!(success_result_of(d), ());
    slot.borrow_mut().take();
}

#[test]
fn looping_call_start_stop_errors() {
    let clock = ManualClock::new();
    let (_, f) = counter();
    let lc = LoopingCall::new(&clock, f);
    assert_eq!(lc.stop(), Err(LoopingCallError::NotRunning));
    assert_eq!(
        lc.start(-1.0, true).err(),
        Some(LoopingCallError::InvalidInterval)
    );
    lc.start(1.0, false).unwrap();
    assert_eq!(
        lc.start(1.0, false).err(),
        Some(LoopingCallError::AlreadyRunning)
    );
    lc.stop().unwrap();
    assert_eq!(lc.stop(), Err(LoopingCallError::NotRunning));
    lc.start(1.0, false).unwrap(); // restartable
    assert!(lc.running());
}

#[test]
fn looping_call_zero_interval_runs_every_tick() {
    let clock = ManualClock::new();
    let (n, f) = counter();
    let lc = LoopingCall::new(&clock, f);
    lc.start(0.0, false).unwrap();
    // Each run reschedules at "now"; a timer scheduled after the first run stops it.
    let l = lc.clone();
    clock.call_later(0.0, move || l.stop().unwrap());
    clock.advance(0.0);
    assert_eq!(n.get(), 1);
    assert!(!lc.running());
}

#[test]
fn heartbeat_at_five_seconds_under_manual_clock() {
    // The engine's heartbeat: LoopingCall(nextcall.schedule) every 5 s.
    let clock = ManualClock::new();
    let runs = Rc::new(Cell::new(0));
    let r = runs.clone();
    let nextcall = CallLaterOnce::new(&clock, move || r.set(r.get() + 1));
    let nc = nextcall.clone();
    let heartbeat = LoopingCall::new(&clock, move || {
        nc.schedule(0.0);
        Ok(())
    });
    heartbeat.start(5.0, true).unwrap();
    clock.advance(0.0);
    assert_eq!(runs.get(), 1);
    clock.pump(&[5.0, 5.0, 5.0]);
    assert_eq!(runs.get(), 4);
    heartbeat.stop().unwrap();
    clock.advance(100.0);
    assert_eq!(runs.get(), 4);
}

// ---- CallLaterOnce ------------------------------------------------------------------

#[test]
fn call_later_once_coalesces_schedules_in_one_tick() {
    let clock = ManualClock::new();
    let runs = Rc::new(Cell::new(0));
    let r = runs.clone();
    let once = CallLaterOnce::new(&clock, move || r.set(r.get() + 1));
    for _ in 0..1000 {
        once.schedule(0.0);
    }
    assert_eq!(clock.get_delayed_calls().len(), 1);
    clock.advance(0.0);
    assert_eq!(runs.get(), 1);
    assert_eq!(once.runs(), 1);
    clock.advance(1.0);
    assert_eq!(runs.get(), 1, "nothing pending after the run");
}

#[test]
fn call_later_once_can_reschedule_itself() {
    let clock = ManualClock::new();
    let runs = Rc::new(Cell::new(0));
    let slot: Rc<RefCell<Option<CallLaterOnce>>> = Rc::default();
    let (r, s) = (runs.clone(), slot.clone());
    let once = CallLaterOnce::new(&clock, move || {
        r.set(r.get() + 1);
        if r.get() < 3 {
            s.borrow().as_ref().unwrap().schedule(1.0);
        }
    });
    *slot.borrow_mut() = Some(once.clone());
    once.schedule(0.0);
    clock.pump(&[0.0, 1.0, 1.0, 1.0]);
    assert_eq!(runs.get(), 3);
    slot.borrow_mut().take();
}

#[test]
fn call_later_once_cancel() {
    let clock = ManualClock::new();
    let runs = Rc::new(Cell::new(0));
    let r = runs.clone();
    let once = CallLaterOnce::new(&clock, move || r.set(r.get() + 1));
    once.schedule(1.0);
    assert!(once.is_scheduled());
    once.cancel();
    assert!(!once.is_scheduled());
    clock.advance(2.0);
    assert_eq!(runs.get(), 0);
    once.schedule(0.0);
    clock.advance(0.0);
    assert_eq!(runs.get(), 1);
}

#[test]
fn call_later_once_wait_fires_after_next_run() {
    let clock = ManualClock::new();
    let ev = Events::new();
    let e = ev.clone();
    let once = CallLaterOnce::new(&clock, move || e.push("run"));
    let w = once.wait();
    let e = ev.clone();
    w.add_callback(move |()| {
        e.push("waiter");
        Ok(())
    });
    assert_no_result(&w);
    once.schedule(0.0);
    clock.advance(0.0);
    assert_eq!(ev.get(), ["run", "waiter"]);
    assert_eq!(success_result_of(w), ());
}

#[test]
fn call_later_once_panicking_function_is_contained() {
    let clock = ManualClock::new();
    let n = Rc::new(Cell::new(0));
    let c = n.clone();
    let once = CallLaterOnce::new(&clock, move || {
        c.set(c.get() + 1);
        panic!("scheduling pass blew up");
    });
    once.schedule(0.0);
    clock.advance(0.0);
    once.schedule(0.0);
    clock.advance(0.0);
    assert_eq!(n.get(), 2, "still usable after a panic");
}

// ---- defer_later --------------------------------------------------------------------

#[test]
fn defer_later_fires_after_delay() {
    let clock = ManualClock::new();
    let d = defer_later(&clock, 2.0, || Ok("late"));
    clock.advance(1.0);
    assert_no_result(&d);
    clock.advance(1.0);
    assert_eq!(success_result_of(d), "late");
}

#[test]
fn defer_later_cancel_cancels_the_call() {
    let clock = ManualClock::new();
    let ran = Rc::new(Cell::new(false));
    let r = ran.clone();
    let d: Deferred<()> = defer_later(&clock, 2.0, move || {
        r.set(true);
        Ok(())
    });
    d.cancel();
    assert!(failure_result_of(d).check::<CancelledError>());
    assert!(clock.get_delayed_calls().is_empty());
    clock.advance(5.0);
    assert!(!ran.get());
}

#[test]
fn defer_later_failure_and_deferred_results() {
    let clock = ManualClock::new();
    let d: Deferred<i32> = defer_later(&clock, 1.0, || Err(Failure::msg("nope")));
    clock.advance(1.0);
    assert!(failure_result_of(d).to_string().contains("nope"));

    let inner = Deferred::new();
    let i = inner.clone();
    let d = defer_later(&clock, 1.0, move || i);
    clock.advance(1.0);
    assert_no_result(&d);
    inner.callback(3).unwrap();
    assert_eq!(success_result_of(d), 3);
}
