//! The asynchronous scheduler and dupefilter contract, under a ManualClock: answers
//! that arrive later through Deferreds, `open`/`close` that take time, `Pending` with a
//! wake-up, and a dupefilter that calls back into the engine (nothing is lost).

mod util;

use std::cell::RefCell;
use std::collections::{HashSet, VecDeque};
use std::rc::{Rc, Weak};

use serde_json::json;
use trawl::crawl::dupefilter::{DupeFilter, Seen};
use trawl::crawl::scheduler::{Enqueued, NextRequest, Scheduler, SchedulerContext, Waker};
use trawl::crawl::signals::Signal;
use trawl::crawl::{CrawlContext, Output, Request};
use trawl::defer::Deferred;
use trawl::reactor::Clock;
use trawl::task::defer_later;
use util::crawl::{FnSpider, harness};

/// A spider whose pages link to `/p{n+1}` and back to `/p0` (a duplicate) until `last`.
fn chain_spider(last: usize) -> FnSpider {
    FnSpider::new(
        || {
            Box::new(std::iter::once(Output::Request(
                Request::get("http://a.test/p0").expect("url"),
            )))
        },
        move |_, resp| {
            let n: usize = resp.url().path()[2..].parse().unwrap_or(0);
            let mut out = vec![Output::Request(resp.follow("/p0").expect("url"))];
            if n < last {
                out.push(Output::Request(
                    resp.follow(format!("/p{}", n + 1)).expect("url"),
                ));
            }
            Ok(out)
        },
    )
}

/// A FIFO scheduler whose answers all come later: enqueue after 1 s, open after 3 s,
/// close after 2 s. Its own set of URLs drops duplicates.
struct SlowScheduler {
    clock: Clock,
    queue: Rc<RefCell<VecDeque<Request>>>,
    seen: Rc<RefCell<HashSet<String>>>,
    events: Rc<RefCell<Vec<(f64, String)>>>,
}

impl Scheduler for SlowScheduler {
    fn open(&mut self) -> Deferred<()> {
        let (events, clock) = (self.events.clone(), self.clock.clone());
        defer_later(&self.clock, 3.0, move || {
            events.borrow_mut().push((clock.seconds(), "opened".into()));
            Ok(())
        })
    }

    fn close(&mut self, _reason: &str) -> Deferred<()> {
        let (events, clock) = (self.events.clone(), self.clock.clone());
        defer_later(&self.clock, 2.0, move || {
            events
                .borrow_mut()
                .push((clock.seconds(), "scheduler closed".into()));
            Ok(())
        })
    }

    fn has_pending_requests(&self) -> bool {
        !self.queue.borrow().is_empty()
    }

    fn enqueue_request(&mut self, request: Request) -> Enqueued {
        let (queue, seen) = (self.queue.clone(), self.seen.clone());
        Enqueued::Later(defer_later(&self.clock, 1.0, move || {
            if !seen.borrow_mut().insert(request.url().to_string()) {
                return Ok(false);
            }
            queue.borrow_mut().push_back(request);
            Ok(true)
        }))
    }

    fn next_request(&mut self) -> NextRequest {
        match self.queue.borrow_mut().pop_front() {
            Some(r) => NextRequest::Ready(r),
            None => NextRequest::Empty,
        }
    }

    fn len(&self) -> usize {
        self.queue.borrow().len()
    }
}

#[test]
fn a_scheduler_answering_later_open_enqueue_and_close() {
    let events: Rc<RefCell<Vec<(f64, String)>>> = Rc::default();
    let ev = events.clone();
    let h = harness(
        chain_spider(4),
        &[("SCHEDULER", json!("test.Slow"))],
        move |r| {
            r.register_scheduler("test.Slow", move |c, _ctx: SchedulerContext| {
                Ok(Box::new(SlowScheduler {
                    clock: c.clock().clone(),
                    queue: Rc::default(),
                    seen: Rc::default(),
                    events: ev.clone(),
                }) as Box<dyn Scheduler>)
            });
        },
    );
    let dropped = Rc::new(RefCell::new(0));
    let d = dropped.clone();
    h.crawler.signals.connect(Signal::RequestDropped, move |_| {
        *d.borrow_mut() += 1;
        Ok(())
    });
    let ev = events.clone();
    let clock = h.clock.clock();
    h.crawler.signals.connect(Signal::SpiderClosed, move |_| {
        ev.borrow_mut()
            .push((clock.seconds(), "spider_closed".into()));
        Ok(())
    });
    assert!(h.run(60.0), "the crawl finishes");
    // Nothing is downloaded before the scheduler opened at t=3 (+1 s for the first
    // enqueue answer).
    let started = h.script.started.borrow().clone();
    assert!(started.iter().all(|(t, _)| *t >= 4.0), "{started:?}");
    let mut urls = h.script.started_urls();
    urls.sort();
    assert_eq!(
        urls,
        (0..=4)
            .map(|i| format!("http://a.test/p{i}"))
            .collect::<Vec<_>>()
    );
    // Five pages each link back to /p0.
    assert_eq!(*dropped.borrow(), 5);
    // spider_closed waits for the scheduler's close.
    let events = events.borrow();
    let names: Vec<&str> = events.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(names, ["opened", "scheduler closed", "spider_closed"]);
    assert!(events[1].0 >= 2.0 + started.last().map_or(0.0, |s| s.0));
}

/// A dupefilter that answers 0.5 s later.
struct LateDupes {
    clock: Clock,
    seen: Rc<RefCell<HashSet<String>>>,
}

impl DupeFilter for LateDupes {
    fn request_seen(&mut self, request: &Request) -> Seen {
        let seen = self.seen.clone();
        let url = request.url().to_string();
        Seen::Later(defer_later(&self.clock, 0.5, move || {
            Ok(!seen.borrow_mut().insert(url))
        }))
    }
}

#[test]
fn the_default_scheduler_with_a_dupefilter_answering_later() {
    let h = harness(
        chain_spider(6),
        &[("DUPEFILTER_CLASS", json!("test.LateDupes"))],
        |r| {
            r.register_dupefilter("test.LateDupes", |c| {
                Ok(Box::new(LateDupes {
                    clock: c.clock().clone(),
                    seen: Rc::default(),
                }) as Box<dyn DupeFilter>)
            });
        },
    );
    assert!(h.run(60.0));
    let mut urls = h.script.started_urls();
    urls.sort();
    assert_eq!(
        urls,
        (0..=6)
            .map(|i| format!("http://a.test/p{i}"))
            .collect::<Vec<_>>()
    );
    assert_eq!(h.stat("dupefilter/filtered"), 7);
    assert_eq!(h.stat("scheduler/enqueued"), 7);
    assert_eq!(h.stat("scheduler/dequeued"), 7);
}

/// A dupefilter that, the first time it sees `/p0`, crawls `/extra` through the
/// engine — a re-entrant call while the engine is inside the scheduler.
struct ReentrantDupes {
    ctx: Weak<CrawlContext>,
    seen: HashSet<String>,
}

impl DupeFilter for ReentrantDupes {
    fn request_seen(&mut self, request: &Request) -> Seen {
        let url = request.url().to_string();
        if url.ends_with("/p0")
            && !self.seen.contains(&url)
            && let Some(engine) = self.ctx.upgrade().and_then(|c| c.engine())
        {
            engine.crawl(Request::get("http://a.test/extra").expect("url"));
        }
        if self.seen.insert(url) {
            Seen::New
        } else {
            Seen::Duplicate
        }
    }
}

#[test]
fn a_dupefilter_calling_back_into_the_engine_loses_nothing() {
    let (h, logs) = util::capture_logs(|| {
        let h = harness(
            chain_spider(2),
            &[("DUPEFILTER_CLASS", json!("test.Reentrant"))],
            |r| {
                r.register_dupefilter("test.Reentrant", |c| {
                    Ok(Box::new(ReentrantDupes {
                        ctx: Rc::downgrade(c),
                        seen: HashSet::new(),
                    }) as Box<dyn DupeFilter>)
                });
            },
        );
        assert!(h.run(30.0));
        h
    });
    let mut urls = h.script.started_urls();
    urls.sort();
    assert_eq!(
        urls,
        [
            "http://a.test/extra",
            "http://a.test/p0",
            "http://a.test/p1",
            "http://a.test/p2"
        ]
    );
    let bad: Vec<_> = logs
        .iter()
        .filter(|(_, m)| m.contains("lost") || m.contains("busy"))
        .collect();
    assert!(bad.is_empty(), "{bad:?}");
}

/// Answers `Pending` until a timer (a background fetch) makes its one request ready
/// and wakes the engine.
struct PendingScheduler {
    clock: Clock,
    wake: Waker,
    ready: Rc<RefCell<Option<Request>>>,
    armed: bool,
    done: bool,
}

impl Scheduler for PendingScheduler {
    fn has_pending_requests(&self) -> bool {
        !self.done
    }

    fn enqueue_request(&mut self, _request: Request) -> Enqueued {
        Enqueued::Dropped
    }

    fn next_request(&mut self) -> NextRequest {
        if let Some(r) = self.ready.borrow_mut().take() {
            self.done = true;
            return NextRequest::Ready(r);
        }
        if self.done {
            return NextRequest::Empty;
        }
        if !self.armed {
            self.armed = true;
            let (ready, wake) = (self.ready.clone(), self.wake.clone());
            let _ = self.clock.call_later(0.3, move || {
                *ready.borrow_mut() = Some(Request::get("http://b.test/fetched").expect("url"));
                wake.wake();
            });
        }
        NextRequest::Pending
    }

    fn len(&self) -> usize {
        usize::from(!self.done)
    }
}

#[test]
fn pending_then_wake_needs_no_heartbeat() {
    let spider = FnSpider::new(|| Box::new(std::iter::empty()), |_, _| Ok(Vec::new()));
    let h = harness(spider, &[("SCHEDULER", json!("test.Pending"))], |r| {
        r.register_scheduler("test.Pending", |c, ctx: SchedulerContext| {
            Ok(Box::new(PendingScheduler {
                clock: c.clock().clone(),
                wake: ctx.wake,
                ready: Rc::default(),
                armed: false,
                done: false,
            }) as Box<dyn Scheduler>)
        });
    });
    let empties = Rc::new(RefCell::new(0));
    let e = empties.clone();
    h.crawler.signals.connect(Signal::SchedulerEmpty, move |_| {
        *e.borrow_mut() += 1;
        Ok(())
    });
    h.clock.advance(0.1);
    h.clock.advance(0.1);
    assert_eq!(*empties.borrow(), 0, "Pending is not Empty");
    for _ in 0..8 {
        h.clock.advance(0.1);
    }
    let started = h.script.started.borrow().clone();
    assert_eq!(started.len(), 1, "{started:?}");
    assert!(
        (started[0].0 - 0.3).abs() < 0.11,
        "started at {} (the heartbeat would be 5 s)",
        started[0].0
    );
    assert!(h.run(20.0));
}
