// cargo run --example deferred_chain
//
// Scrapy's error-isolated per-request chain (engine.py `_start_scheduled_request`),
// driven by a ManualClock: three "downloads" finish at different times, one of them makes
// the output handler fail, and the chain still removes the request from `inprogress` and
// schedules the next pass, which CallLaterOnce coalesces into one run per tick. A 5 s
// heartbeat LoopingCall keeps poking the scheduling loop, as the engine's `_Slot` does.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::rc::Rc;

use trawl::defer::{Deferred, Failure};
use trawl::reactor::ManualClock;
use trawl::task::{CallLaterOnce, LoopingCall, defer_later};

fn main() {
    let clock = ManualClock::new();
    let inprogress: Rc<RefCell<BTreeSet<&'static str>>> = Rc::default();
    let passes = Rc::new(Cell::new(0));

    let p = passes.clone();
    let c = clock.clone();
    let nextcall = CallLaterOnce::new(&clock, move || {
        p.set(p.get() + 1);
        println!("[{:>4.1}s] scheduling pass #{}", c.seconds(), p.get());
    });
    let nc = nextcall.clone();
    let heartbeat = LoopingCall::new(&clock, move || {
        nc.schedule(0.0);
        Ok(())
    });
    let stopped = heartbeat.start(5.0, true).expect("heartbeat");

    for (url, latency) in [("/a", 0.4), ("/b", 1.2), ("/boom", 2.0)] {
        inprogress.borrow_mut().insert(url);
        println!("[{:>4.1}s] download started: {url}", clock.seconds());
        let download: Deferred<String> =
            defer_later(&clock, latency, move || Ok(format!("<html for {url}>")));
        start_chain(&clock, url, download, inprogress.clone(), nextcall.clone());
    }

    clock.pump(&[0.5, 0.5, 0.5, 0.5, 4.0, 5.0]);
    heartbeat.stop().expect("stop heartbeat");
    println!(
        "[{:>4.1}s] done: inprogress={:?}, heartbeat stopped={}, {} scheduling passes",
        clock.seconds(),
        inprogress.borrow(),
        stopped.has_result(),
        passes.get()
    );
}

/// `d.add_both(handle).add_errback(log).add_both(remove).add_errback(log)
///  .add_both(schedule).add_errback(log)`
fn start_chain(
    clock: &ManualClock,
    url: &'static str,
    download: Deferred<String>,
    inprogress: Rc<RefCell<BTreeSet<&'static str>>>,
    nextcall: CallLaterOnce,
) {
    let (c1, c2, c3) = (clock.clone(), clock.clone(), clock.clone());
    let handled: Deferred<()> = download.then(move |r| {
        let body = r?;
        println!(
            "[{:>4.1}s]   handle_downloader_output({url}): {} bytes",
            c1.seconds(),
            body.len()
        );
        if url == "/boom" {
            return Err(Failure::msg("the spider callback raised"));
        }
        Ok(())
    });
    handled
        .add_errback(move |f| {
            println!(
                "[{:>4.1}s]   log: Error while handling downloader output: {f}",
                c2.seconds()
            );
            Ok(())
        })
        .add_both(move |_| {
            inprogress.borrow_mut().remove(url);
            println!("[{:>4.1}s]   remove_request({url})", c3.seconds());
            Ok(())
        })
        .add_errback(|f| {
            println!("  log: Error while removing request from slot: {f}");
            Ok(())
        })
        .add_both(move |_| {
            nextcall.schedule(0.0);
            Ok(())
        })
        .add_errback(|f| {
            println!("  log: Error while scheduling new request: {f}");
            Ok(())
        });
}
