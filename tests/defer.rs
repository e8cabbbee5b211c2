//! Deferred semantics, modelled on Twisted's `twisted.test.test_defer`.

mod util;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use trawl::defer::{
    AlreadyCalledError, CancelledError, ChainedToSelfError, Deferred, DeferredList, Failure,
    FirstError, ListResult, PanicError, Step, TimeoutError, fail, gather_results, maybe_deferred,
    succeed,
};
use trawl::testing::{ManualClock, assert_no_result, failure_result_of, success_result_of};
use util::{Events, capture_logs};

#[derive(Debug)]
struct Boom(&'static str);
impl std::fmt::Display for Boom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "boom: {}", self.0)
    }
}
impl std::error::Error for Boom {}

// ---- firing -------------------------------------------------------------------------

#[test]
fn callback_runs_chain_in_order() {
    let ev = Events::new();
    let d = Deferred::new();
    for i in 0..3 {
        let ev = ev.clone();
        d.add_callback(move |x: i32| {
            ev.push(format!("cb{i}:{x}"));
            Ok(x + 1)
        });
    }
    assert!(ev.get().is_empty());
    d.callback(10).unwrap();
    assert_eq!(ev.get(), ["cb0:10", "cb1:11", "cb2:12"]);
    assert_eq!(success_result_of(d), 13);
}

#[test]
fn second_callback_is_already_called_error() {
    let d = Deferred::new();
    d.callback(1).unwrap();
    assert_eq!(d.callback(2), Err(AlreadyCalledError));
    assert_eq!(d.errback(Boom("x")), Err(AlreadyCalledError));
    assert_eq!(success_result_of(d), 1);
}

#[test]
fn errback_then_callback_is_already_called() {
    let d: Deferred<i32> = Deferred::new();
    d.errback(Boom("first")).unwrap();
    assert_eq!(d.callback(2), Err(AlreadyCalledError));
    assert!(failure_result_of(d).check::<Boom>());
}

#[test]
fn callbacks_added_after_firing_run_immediately() {
    let d = succeed(5);
    let seen = Rc::new(Cell::new(0));
    let s = seen.clone();
    d.add_callback(move |x| {
        s.set(x);
        Ok(x)
    });
    assert_eq!(seen.get(), 5);
}

#[test]
fn failing_callback_switches_to_errback_path() {
    let ev = Events::new();
    let d = Deferred::new();
    let (e1, e2, e3) = (ev.clone(), ev.clone(), ev.clone());
    d.add_callback(move |_: i32| -> Result<i32, Failure> {
        e1.push("cb1");
        Err(Boom("cb1").into())
    })
    .add_callback(move |x| {
        e2.push("cb2 (skipped)");
        Ok(x)
    })
    .add_errback(move |f| {
        e3.push(format!("eb: {f}"));
        Err(f)
    });
    d.callback(1).unwrap();
    assert_eq!(ev.get(), ["cb1", "eb: boom: cb1"]);
    assert!(failure_result_of(d).check::<Boom>());
}

#[test]
fn errback_returning_value_switches_back() {
    let ev = Events::new();
    let d: Deferred<i32> = Deferred::new();
    let (e1, e2) = (ev.clone(), ev.clone());
    d.add_errback(move |f| {
        e1.push(format!("eb:{}", f.check::<Boom>()));
        Ok(42)
    })
    .add_errback(Err) // success passes errbacks by
    .add_callback(move |x| {
        e2.push(format!("cb:{x}"));
        Ok(x)
    });
    d.errback(Boom("e")).unwrap();
    assert_eq!(ev.get(), ["eb:true", "cb:42"]);
    assert_eq!(success_result_of(d), 42);
}

#[test]
fn add_callbacks_runs_only_the_matching_half() {
    let d = Deferred::new();
    d.add_callbacks(|x: i32| Ok(x * 10), |_f| Ok(-1));
    d.callback(3).unwrap();
    assert_eq!(success_result_of(d), 30);

    let d = Deferred::new();
    d.add_callbacks(|x: i32| Ok(x * 10), |_f| Ok(-1));
    d.errback(Boom("x")).unwrap();
    assert_eq!(success_result_of(d), -1);
}

#[test]
fn add_both_sees_both_paths() {
    let d = Deferred::new();
    d.add_both(|r: Result<i32, Failure>| Ok(if r.is_ok() { 1 } else { 0 }));
    d.errback(Boom("x")).unwrap();
    assert_eq!(success_result_of(d), 0);
}

#[test]
fn panic_in_callback_becomes_failure() {
    let d = Deferred::new();
    d.add_callback(|x: i32| -> Result<i32, Failure> {
        if x > 0 {
            panic!("user code exploded");
        }
        Ok(x)
    })
    .add_errback(|f| {
        let p = f.trap::<PanicError>()?;
        assert!(p.message.contains("user code exploded"));
        Ok(-7)
    });
    d.callback(1).unwrap();
    assert_eq!(success_result_of(d), -7);
}

#[test]
fn failure_trap_reraises_other_types() {
    let d: Deferred<i32> = Deferred::new();
    let trapped = Rc::new(Cell::new(false));
    let t = trapped.clone();
    d.add_errback(|f| {
        f.trap::<CancelledError>()?; // not a CancelledError: re-raised as is
        Ok(0)
    })
    .add_errback(move |f| {
        t.set(f.check::<Boom>());
        Err(f)
    });
    d.errback(Boom("x")).unwrap();
    assert!(trapped.get());
    let f = failure_result_of(d);
    assert!(f.trail().len() >= 2, "trail: {:?}", f.trail());
    assert!(f.describe().contains("raised at"));
}

#[test]
fn failure_records_location_and_trail() {
    let d: Deferred<()> = Deferred::new();
    d.add_callback(|()| Ok(())).add_callback(|()| Ok(()));
    let f = Failure::new(Boom("here"));
    let line = line!() - 1;
    d.errback(f).unwrap();
    let f = failure_result_of(d);
    assert_eq!(f.location().line(), line);
    assert_eq!(f.trail().len(), 2, "{:?}", f.trail());
    assert!(f.trail()[0].contains("failure_records_location_and_trail"));
    assert!(f.type_name().ends_with("Boom"));
}

// ---- chaining -----------------------------------------------------------------------

#[test]
fn callback_returning_unfired_deferred_pauses_chain() {
    let inner = Deferred::new();
    let outer = Deferred::new();
    let i = inner.clone();
    let ev = Events::new();
    let e = ev.clone();
    outer.add_callback(move |_: i32| i).add_callback(move |x| {
        e.push(format!("after inner: {x}"));
        Ok(x + 1)
    });
    outer.callback(1).unwrap();
    assert!(outer.is_called());
    assert!(outer.is_paused());
    assert_no_result(&outer);
    inner.callback(100).unwrap();
    assert_eq!(ev.get(), ["after inner: 100"]);
    assert_eq!(success_result_of(outer), 101);
}

#[test]
fn callback_returning_fired_deferred_continues_at_once() {
    let outer = Deferred::new();
    outer.add_callback(|x: i32| succeed(x * 3));
    outer.callback(2).unwrap();
    assert_eq!(success_result_of(outer), 6);
}

#[test]
fn callback_returning_failed_deferred_goes_to_errback() {
    let outer = Deferred::new();
    outer
        .add_callback(|_: i32| fail::<i32>(Boom("inner")))
        .add_errback(|f| Ok(if f.check::<Boom>() { 9 } else { 0 }));
    outer.callback(1).unwrap();
    assert_eq!(success_result_of(outer), 9);
}

#[test]
fn inner_failure_after_wait_goes_to_outer_errback() {
    let inner: Deferred<i32> = Deferred::new();
    let outer = Deferred::new();
    let i = inner.clone();
    outer.add_callback(move |_: i32| i);
    outer.callback(0).unwrap();
    inner.errback(Boom("late")).unwrap();
    assert!(failure_result_of(outer).check::<Boom>());
}

#[test]
fn nested_chaining_three_levels() {
    let a = Deferred::new();
    let b = Deferred::new();
    let c = Deferred::new();
    let (b2, c2) = (b.clone(), c.clone());
    b.add_callback(move |_: i32| c2);
    a.add_callback(move |_: i32| b2);
    a.callback(1).unwrap();
    b.callback(2).unwrap();
    assert_no_result(&a);
    c.callback(3).unwrap();
    assert_eq!(success_result_of(a), 3);
}

#[test]
fn deep_nesting_does_not_overflow_the_stack() {
    // 20,000 Deferreds, each waiting on the next; the innermost fires last.
    let depth = 20_000;
    let ds: Vec<Deferred<u32>> = (0..depth).map(|_| Deferred::new()).collect();
    for i in 0..depth - 1 {
        let next = ds[i + 1].clone();
        ds[i].add_callback(move |_| next);
    }
    for d in &ds[..depth - 1] {
        d.callback(0).unwrap();
    }
    ds[depth - 1].callback(77).unwrap();
    assert_eq!(success_result_of(ds[0].clone()), 77);
    assert!(
        ds[1..].iter().all(|d| !d.has_result()),
        "inner results are consumed"
    );
}

#[test]
fn long_chain_of_callbacks_runs_iteratively() {
    let d = Deferred::new();
    for _ in 0..100_000 {
        d.add_callback(|x: u64| Ok(x + 1));
    }
    d.callback(0).unwrap();
    assert_eq!(success_result_of(d), 100_000);
}

#[test]
fn returning_self_is_an_error_not_a_hang() {
    let d = Deferred::new();
    let me = d.clone();
    d.add_callback(move |_: i32| me);
    d.callback(1).unwrap();
    assert!(failure_result_of(d).check::<ChainedToSelfError>());
}

#[test]
fn then_changes_the_type() {
    let d = Deferred::new();
    let out: Deferred<String> = d.clone().map(|x: i32| format!("n={x}"));
    out.add_callback(|s| Ok(s + "!"));
    d.callback(4).unwrap();
    assert_eq!(success_result_of(out), "n=4!");
    assert!(!d.has_result(), "the source chain is consumed");
}

#[test]
fn then_can_return_a_deferred_of_the_new_type() {
    let d = Deferred::new();
    let inner: Deferred<&'static str> = Deferred::new();
    let i = inner.clone();
    let out = d.clone().then(move |r: Result<i32, Failure>| {
        assert_eq!(r.unwrap(), 1);
        i
    });
    d.callback(1).unwrap();
    assert_no_result(&out);
    inner.callback("done").unwrap();
    assert_eq!(success_result_of(out), "done");
}

#[test]
fn then_propagates_failures_and_panics() {
    let d: Deferred<i32> = Deferred::new();
    let out = d.clone().map(|x| x + 1);
    d.errback(Boom("x")).unwrap();
    assert!(failure_result_of(out).check::<Boom>());

    let d: Deferred<i32> = Deferred::new();
    let out: Deferred<i32> = d.clone().map(|_| panic!("in map"));
    d.callback(1).unwrap();
    assert!(failure_result_of(out).check::<PanicError>());
}

#[test]
fn chain_deferred_forwards_result() {
    let a = Deferred::new();
    let b = Deferred::new();
    a.chain_deferred(&b);
    a.callback(3).unwrap();
    assert_eq!(success_result_of(b), 3);
}

// ---- pause / unpause ----------------------------------------------------------------

#[test]
fn pause_queues_callbacks_until_unpause() {
    let ev = Events::new();
    let d = Deferred::new();
    d.pause();
    let e = ev.clone();
    d.add_callback(move |x: i32| {
        e.push(format!("a{x}"));
        Ok(x)
    });
    d.callback(1).unwrap();
    let e = ev.clone();
    d.add_callback(move |x| {
        e.push(format!("b{x}"));
        Ok(x)
    });
    assert!(ev.get().is_empty());
    d.unpause();
    assert_eq!(ev.get(), ["a1", "b1"]);
}

#[test]
fn pauses_nest() {
    let d = succeed(1);
    d.pause();
    d.pause();
    let ran = Rc::new(Cell::new(false));
    let r = ran.clone();
    d.add_callback(move |x| {
        r.set(true);
        Ok(x)
    });
    d.unpause();
    assert!(!ran.get());
    d.unpause();
    assert!(ran.get());
}

#[test]
fn callback_pausing_its_own_deferred_lets_the_pass_finish() {
    // Twisted checks `paused` between passes: the rest of this pass runs, callbacks
    // added afterwards wait for unpause (tests/twisted_reference.rs has the recording).
    let d = Deferred::new();
    let me = d.clone();
    let ran = Rc::new(Cell::new(0));
    let r = ran.clone();
    d.add_callback(move |x: i32| {
        me.pause();
        Ok(x)
    })
    .add_callback(move |x| {
        r.set(r.get() + 1);
        Ok(x)
    });
    d.callback(1).unwrap();
    assert_eq!(ran.get(), 1);
    assert!(d.is_paused());
    let r = ran.clone();
    d.add_callback(move |x| {
        r.set(r.get() + 1);
        Ok(x)
    });
    assert_eq!(ran.get(), 1);
    d.unpause();
    assert_eq!(ran.get(), 2);
}

// ---- cancel -------------------------------------------------------------------------

#[test]
fn cancel_without_canceller_errbacks_cancelled() {
    let d: Deferred<i32> = Deferred::new();
    d.cancel();
    assert!(failure_result_of(d.clone()).check::<CancelledError>());
    // the producer's late callback is ignored once, as in Twisted
    assert_eq!(d.callback(1), Ok(()));
    assert_eq!(d.callback(1), Err(AlreadyCalledError));
}

#[test]
fn cancel_calls_canceller_which_may_fire() {
    let d = Deferred::with_canceller(|d: &Deferred<i32>| {
        d.callback(-1).unwrap();
    });
    d.cancel();
    assert_eq!(success_result_of(d), -1);
}

#[test]
fn canceller_that_does_not_fire_gets_cancelled_error() {
    let called = Rc::new(Cell::new(0));
    let c = called.clone();
    let d: Deferred<i32> = Deferred::with_canceller(move |_| c.set(c.get() + 1));
    d.cancel();
    d.cancel(); // already fired: nothing
    assert_eq!(called.get(), 1);
    assert!(failure_result_of(d).check::<CancelledError>());
}

#[test]
fn cancel_after_firing_does_nothing() {
    let d = succeed(3);
    d.cancel();
    assert_eq!(success_result_of(d), 3);
}

#[test]
fn cancel_propagates_into_chained_deferred() {
    let inner_cancelled = Rc::new(Cell::new(false));
    let flag = inner_cancelled.clone();
    let inner: Deferred<i32> = Deferred::with_canceller(move |_| flag.set(true));
    let outer = Deferred::new();
    let i = inner.clone();
    outer.add_callback(move |_: i32| i);
    outer.callback(0).unwrap();
    outer.cancel();
    assert!(inner_cancelled.get());
    assert!(failure_result_of(outer).check::<CancelledError>());
}

#[test]
fn cancel_propagates_through_two_levels() {
    let innermost: Deferred<i32> = Deferred::new();
    let middle = Deferred::new();
    let outer = Deferred::new();
    let (im, m) = (innermost.clone(), middle.clone());
    middle.add_callback(move |_: i32| im);
    outer.add_callback(move |_: i32| m);
    middle.callback(0).unwrap();
    outer.callback(0).unwrap();
    outer.cancel();
    assert!(failure_result_of(outer).check::<CancelledError>());
}

#[test]
fn cancelling_then_output_cancels_source() {
    let src: Deferred<i32> = Deferred::new();
    let out = src.clone().map(|x| x.to_string());
    out.cancel();
    assert!(failure_result_of(out).check::<CancelledError>());
}

#[test]
fn panicking_canceller_still_cancels() {
    let d: Deferred<i32> = Deferred::with_canceller(|_| panic!("bad canceller"));
    let ((), logs) = capture_logs(|| d.cancel());
    assert!(failure_result_of(d).check::<CancelledError>());
    assert!(logs.iter().any(|(_, m)| m.contains("bad canceller")));
}

// ---- re-entrancy --------------------------------------------------------------------

#[test]
fn callback_adding_callback_to_running_deferred() {
    let ev = Events::new();
    let d = Deferred::new();
    let me = d.clone();
    let e = ev.clone();
    d.add_callback(move |x: i32| {
        let e2 = e.clone();
        me.add_callback(move |y| {
            e2.push(format!("added:{y}"));
            Ok(y * 2)
        });
        e.push("first");
        Ok(x + 1)
    });
    let e = ev.clone();
    d.add_callback(move |x| {
        e.push(format!("second:{x}"));
        Ok(x)
    });
    d.callback(1).unwrap();
    // added callbacks go to the end of the chain, run in the same pass
    assert_eq!(ev.get(), ["first", "second:2", "added:2"]);
    assert_eq!(success_result_of(d), 4);
}

#[test]
fn callback_firing_its_own_deferred_gets_already_called() {
    let d = Deferred::new();
    let me = d.clone();
    let got = Rc::new(RefCell::new(None));
    let g = got.clone();
    d.add_callback(move |x: i32| {
        *g.borrow_mut() = Some(me.callback(99));
        Ok(x)
    });
    d.callback(1).unwrap();
    assert_eq!(*got.borrow(), Some(Err(AlreadyCalledError)));
    assert_eq!(success_result_of(d), 1);
}

#[test]
fn callback_firing_another_deferred_that_calls_back() {
    // a's callback fires b, whose callback adds a callback to a.
    let a = Deferred::new();
    let b = Deferred::new();
    let ev = Events::new();
    let (a2, b2, e1, e2) = (a.clone(), b.clone(), ev.clone(), ev.clone());
    b.add_callback(move |x: i32| {
        let e = e1.clone();
        a2.add_callback(move |y: i32| {
            e.push(format!("from b:{y}"));
            Ok(y)
        });
        Ok(x)
    });
    a.add_callback(move |x: i32| {
        b2.callback(x).unwrap();
        e2.push("a done");
        Ok(x)
    });
    a.callback(5).unwrap();
    assert_eq!(ev.get(), ["a done", "from b:5"]);
}

#[test]
fn callback_cancelling_its_own_deferred_is_harmless() {
    let d = Deferred::new();
    let me = d.clone();
    d.add_callback(move |x: i32| {
        me.cancel();
        Ok(x)
    });
    d.callback(1).unwrap();
    assert_eq!(success_result_of(d), 1);
}

#[test]
fn callback_scheduling_timers_and_advancing_clock() {
    let clock = ManualClock::new();
    let d = Deferred::new();
    let ev = Events::new();
    let (c, e) = (clock.clone(), ev.clone());
    d.add_callback(move |x: i32| {
        let e2 = e.clone();
        c.call_later(0.0, move || e2.push("timer"));
        c.advance(0.0); // re-entrant advance from inside a callback
        e.push("callback");
        Ok(x)
    });
    d.callback(1).unwrap();
    assert_eq!(ev.get(), ["timer", "callback"]);
}

#[test]
fn unpause_from_inside_a_callback_of_another_deferred() {
    let a = succeed(1);
    a.pause();
    let ran = Rc::new(Cell::new(false));
    let r = ran.clone();
    a.add_callback(move |x| {
        r.set(true);
        Ok(x)
    });
    let b = Deferred::new();
    let a2 = a.clone();
    b.add_callback(move |()| {
        a2.unpause();
        Ok(())
    });
    b.callback(()).unwrap();
    assert!(ran.get());
}

// ---- unhandled errors ---------------------------------------------------------------

#[test]
fn dropped_deferred_with_failure_logs_unhandled_error() {
    let ((), logs) = capture_logs(|| {
        let d: Deferred<i32> = Deferred::new();
        d.errback(Boom("nobody handles me")).unwrap();
        drop(d);
    });
    assert!(
        logs.iter().any(|(l, m)| *l == log::Level::Error
            && m.contains("Unhandled error in Deferred")
            && m.contains("nobody handles me")),
        "{logs:?}"
    );
}

#[test]
fn handled_failure_is_not_logged() {
    let ((), logs) = capture_logs(|| {
        let d: Deferred<i32> = Deferred::new();
        d.add_errback(|_| Ok(0));
        d.errback(Boom("handled")).unwrap();
    });
    assert!(
        !logs.iter().any(|(_, m)| m.contains("Unhandled")),
        "{logs:?}"
    );
}

#[test]
fn failure_taken_by_outer_chain_is_not_logged_twice() {
    let ((), logs) = capture_logs(|| {
        let inner: Deferred<i32> = Deferred::new();
        let outer = Deferred::new();
        let i = inner.clone();
        outer.add_callback(move |_: i32| i).add_errback(|_| Ok(1));
        outer.callback(0).unwrap();
        inner.errback(Boom("x")).unwrap();
    });
    assert!(
        !logs.iter().any(|(_, m)| m.contains("Unhandled")),
        "{logs:?}"
    );
}

// ---- helpers ------------------------------------------------------------------------

#[test]
fn succeed_and_fail() {
    assert_eq!(success_result_of(succeed("x")), "x");
    assert!(failure_result_of(fail::<()>(Boom("f"))).check::<Boom>());
}

#[test]
fn maybe_deferred_wraps_values_errors_panics_and_deferreds() {
    assert_eq!(success_result_of(maybe_deferred(|| Ok(1))), 1);
    assert!(
        failure_result_of(maybe_deferred::<i32, _, _>(|| Err(Boom("e").into()))).check::<Boom>()
    );
    assert!(
        failure_result_of(maybe_deferred::<i32, _, _>(|| -> Result<i32, Failure> {
            panic!("p")
        }))
        .check::<PanicError>()
    );
    let d: Deferred<i32> = Deferred::new();
    let d2 = d.clone();
    let m = maybe_deferred(move || d2);
    assert!(m.ptr_eq(&d));
    let step = maybe_deferred(|| Step::Done(Ok(5)));
    assert_eq!(success_result_of(step), 5);
}

// ---- DeferredList and gather_results ------------------------------------------------

#[test]
fn deferred_list_collects_mixed_outcomes_in_order() {
    let ds: Vec<Deferred<i32>> = (0..3).map(|_| Deferred::new()).collect();
    let list = DeferredList::new(ds.clone())
        .consume_errors(true)
        .deferred();
    ds[2].callback(2).unwrap();
    ds[0].callback(0).unwrap();
    assert_no_result(&list);
    ds[1].errback(Boom("one")).unwrap();
    let results = success_result_of(list).into_all().unwrap();
    assert_eq!(*results[0].as_ref().unwrap(), 0);
    assert!(results[1].as_ref().unwrap_err().check::<Boom>());
    assert_eq!(*results[2].as_ref().unwrap(), 2);
}

#[test]
fn deferred_list_empty_fires_immediately() {
    let list = DeferredList::<i32>::new(vec![]).deferred();
    assert!(success_result_of(list).into_all().unwrap().is_empty());
}

#[test]
fn deferred_list_fire_on_one_callback() {
    let ds: Vec<Deferred<i32>> = (0..3).map(|_| Deferred::new()).collect();
    let list = DeferredList::new(ds.clone())
        .fire_on_one_callback(true)
        .consume_errors(true)
        .deferred();
    ds[0].errback(Boom("no")).unwrap();
    assert_no_result(&list);
    ds[2].callback(7).unwrap();
    match success_result_of(list) {
        ListResult::First { index, value } => assert_eq!((index, value), (2, 7)),
        other => panic!("{other:?}"),
    }
    ds[1].callback(1).unwrap(); // late result: ignored, no panic
}

#[test]
fn deferred_list_fire_on_one_errback() {
    let ds: Vec<Deferred<i32>> = (0..2).map(|_| Deferred::new()).collect();
    let list = DeferredList::new(ds.clone())
        .fire_on_one_errback(true)
        .consume_errors(true)
        .deferred();
    ds[1].errback(Boom("second")).unwrap();
    let f = failure_result_of(list);
    let first = f.trap::<FirstError>().unwrap();
    assert_eq!(first.index, 1);
    assert!(first.failure.check::<Boom>());
}

#[test]
fn deferred_list_without_consume_errors_leaves_failure_in_member() {
    let ((), logs) = capture_logs(|| {
        let d: Deferred<i32> = Deferred::new();
        let list = DeferredList::new(vec![d.clone()]).deferred();
        d.errback(Boom("kept")).unwrap();
        let results = success_result_of(list).into_all().unwrap();
        assert!(results[0].is_err());
        assert!(d.has_result(), "the failure stays in the member's chain");
        drop(d);
    });
    assert!(
        logs.iter()
            .any(|(_, m)| m.contains("Unhandled error") && m.contains("kept"))
    );

    let ((), logs) = capture_logs(|| {
        let d: Deferred<i32> = Deferred::new();
        let list = DeferredList::new(vec![d.clone()])
            .consume_errors(true)
            .deferred();
        d.errback(Boom("consumed")).unwrap();
        drop(success_result_of(list));
        drop(d);
    });
    assert!(
        !logs.iter().any(|(_, m)| m.contains("Unhandled")),
        "{logs:?}"
    );
}

#[test]
fn cancelling_deferred_list_cancels_members() {
    let ds: Vec<Deferred<i32>> = (0..2).map(|_| Deferred::new()).collect();
    let list = DeferredList::new(ds.clone())
        .consume_errors(true)
        .deferred();
    list.cancel();
    assert!(ds.iter().all(|d| d.is_called()));
    let results = success_result_of(list).into_all().unwrap();
    assert!(
        results
            .iter()
            .all(|r| r.as_ref().unwrap_err().check::<CancelledError>())
    );
}

#[test]
fn gather_results_success_and_failure() {
    let ds: Vec<Deferred<i32>> = (0..3).map(|_| Deferred::new()).collect();
    let all = gather_results(ds.clone(), false);
    for (i, d) in ds.iter().enumerate() {
        d.callback(i as i32 * 10).unwrap();
    }
    assert_eq!(success_result_of(all), vec![0, 10, 20]);

    let ds: Vec<Deferred<i32>> = (0..3).map(|_| Deferred::new()).collect();
    let all = gather_results(ds.clone(), true);
    ds[0].callback(0).unwrap();
    ds[1].errback(Boom("mid")).unwrap();
    let f = failure_result_of(all);
    let first = f.trap::<FirstError>().unwrap();
    assert_eq!(first.index, 1);
    ds[2].callback(2).unwrap();
}

// ---- add_timeout --------------------------------------------------------------------

#[test]
fn add_timeout_fires_timeout_error() {
    let clock = ManualClock::new();
    let d: Deferred<i32> = Deferred::new();
    d.add_timeout(5.0, &clock);
    clock.advance(4.9);
    assert_no_result(&d);
    clock.advance(0.1);
    let f = failure_result_of(d);
    assert_eq!(f.trap::<TimeoutError>().unwrap().seconds, 5.0);
}

#[test]
fn add_timeout_cancels_timer_when_fired_in_time() {
    let clock = ManualClock::new();
    let d = Deferred::new();
    d.add_timeout(5.0, &clock);
    assert_eq!(clock.get_delayed_calls().len(), 1);
    d.callback(1).unwrap();
    assert!(clock.get_delayed_calls().is_empty());
    clock.advance(10.0);
    assert_eq!(success_result_of(d), 1);
}

#[test]
fn add_timeout_uses_canceller_and_keeps_its_result() {
    let clock = ManualClock::new();
    let d = Deferred::with_canceller(|d: &Deferred<&str>| d.callback("cancelled quietly").unwrap());
    d.add_timeout(1.0, &clock);
    clock.advance(1.0);
    assert_eq!(success_result_of(d), "cancelled quietly");
}

// ---- Scrapy's engine chain ----------------------------------------------------------

/// `d.add_both(handle).add_errback(log).add_both(remove).add_errback(log)
///  .add_both(schedule).add_errback(log)` where `handle` fails: remove and schedule
/// still run, and nothing is left unhandled.
#[test]
fn engine_chain_isolates_errors() {
    let ev = Events::new();
    let ((), logs) = capture_logs(|| {
        let download: Deferred<&str> = Deferred::new();
        let (e1, e2, e3, e4) = (ev.clone(), ev.clone(), ev.clone(), ev.clone());
        let chain: Deferred<()> = download.clone().then(move |r| -> Result<(), Failure> {
            e1.push(format!("handle_output({})", r.is_ok()));
            Err(Boom("scraper exploded").into())
        });
        let log_eb = |step: &'static str, ev: Events| {
            move |f: Failure| {
                ev.push(format!("log: error while {step}: {f}"));
                Ok(())
            }
        };
        chain
            .add_errback(log_eb("handling downloader output", e2.clone()))
            .add_both(move |_| {
                e2.push("remove_request");
                Err(Boom("remove failed too").into())
            })
            .add_errback(log_eb("removing request", e3.clone()))
            .add_both(move |_| {
                e3.push("nextcall.schedule");
                Ok(())
            })
            .add_errback(log_eb("scheduling", e4));
        download.callback("<response>").unwrap();
        assert_eq!(success_result_of(chain), ());
    });
    assert_eq!(
        ev.get(),
        [
            "handle_output(true)",
            "log: error while handling downloader output: boom: scraper exploded",
            "remove_request",
            "log: error while removing request: boom: remove failed too",
            "nextcall.schedule",
        ]
    );
    assert!(!logs.iter().any(|(_, m)| m.contains("Unhandled")));
}
