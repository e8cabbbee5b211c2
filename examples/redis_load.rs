// cargo run --release --example redis_load -- REDIS_URL WORKERS [PAGES] [LINKS] [ITEMS] [PREFETCH]
//
// A load generator for the distributed layer: WORKERS simulated workers on one reactor
// thread, each with its own connection, `RedisScheduler` and `RedisPipeline` — the
// exact scripts, batching and command mix of a real worker — crawling a synthetic site
// of PAGES pages (20,000) without fetching anything. A page's "response" is made up on
// the spot: LINKS links (17: the fixture crawl's 16.7 per page; page i links to 2i+1
// and 2i+2, so every page is reachable from page 0, and to LINKS-2 others chosen by a
// hash) and ITEMS items (4; the fixture has 4.5). Each worker keeps PREFETCH (16)
// requests in flight, acknowledging one when its items are in Redis.
//
// Prints one JSON line: pages, seconds, pages/s. `scripts/redis_cost.py --load N,...`
// runs it against its own redis-server and adds the server's CPU per page.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use serde_json::json;
use trawl::crawl::context::CrawlContext;
use trawl::crawl::pipeline::{ItemOutcome, ItemPipeline};
use trawl::crawl::scheduler::{Enqueued, NextRequest, Scheduler, SchedulerContext, Waker};
use trawl::crawl::stats::MemoryStatsCollector;
use trawl::crawl::{Item, Priority, Request, Settings};
use trawl::defer::Failure;
use trawl::distributed::{RedisPipeline, RedisScheduler};
use trawl::reactor::{Reactor, ReactorHandle};

struct Site {
    pages: u64,
    links: u64,
    items: u64,
}

impl Site {
    fn url(i: u64) -> String {
        format!("http://load.test/p/{i}")
    }

    fn page(url: &str) -> Option<u64> {
        url.rsplit('/').next()?.parse().ok()
    }

    fn links(&self, i: u64) -> Vec<u64> {
        let mut out: Vec<u64> = [2 * i + 1, 2 * i + 2]
            .into_iter()
            .filter(|&c| c < self.pages)
            .collect();
        let mut h = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        while (out.len() as u64) < self.links {
            h ^= h << 13;
            h ^= h >> 7;
            h ^= h << 17;
            out.push(h % self.pages);
        }
        out
    }
}

/// One simulated worker.
struct Worker {
    scheduler: RefCell<RedisScheduler>,
    pipeline: RedisPipeline,
    in_flight: Cell<usize>,
    prefetch: usize,
    pumping: Cell<bool>,
}

struct Run {
    site: Site,
    done: Cell<u64>,
    reactor: ReactorHandle,
    started: Cell<f64>,
    finished: Cell<f64>,
}

fn pump(w: &Rc<Worker>, run: &Rc<Run>) {
    if w.pumping.replace(true) {
        return;
    }
    while w.in_flight.get() < w.prefetch {
        let next = w.scheduler.borrow_mut().next_request();
        let NextRequest::Ready(req) = next else { break };
        w.in_flight.set(w.in_flight.get() + 1);
        process(w, run, req);
    }
    w.pumping.set(false);
}

fn process(w: &Rc<Worker>, run: &Rc<Run>, req: Request) {
    let Some(page) = Site::page(req.url_str()) else {
        eprintln!("unexpected URL {}", req.url_str());
        return;
    };
    for link in run.site.links(page) {
        match Request::get_owned(Site::url(link)) {
            Ok(r) => match w.scheduler.borrow_mut().enqueue_request(r) {
                Enqueued::Later(d) => drop(d),
                Enqueued::Accepted | Enqueued::Dropped => {}
            },
            Err(e) => eprintln!("bad URL: {e}"),
        }
    }
    let pending = Rc::new(Cell::new(run.site.items));
    let finish = {
        let (w, run) = (w.clone(), run.clone());
        move || {
            w.scheduler.borrow_mut().request_finished(&req);
            w.in_flight.set(w.in_flight.get() - 1);
            let done = run.done.get() + 1;
            run.done.set(done);
            if done == run.site.pages {
                run.finished.set(run.reactor.seconds());
                run.reactor.stop();
            }
            pump(&w, &run);
        }
    };
    let finish = Rc::new(RefCell::new(Some(finish)));
    if run.site.items == 0
        && let Some(f) = finish.borrow_mut().take()
    {
        f();
        return;
    }
    for n in 0..run.site.items {
        let mut item = Item::new();
        item.0.insert("url".into(), json!(Site::url(page)));
        item.0.insert(
            "text".into(),
            json!(format!(
                "“A quotation of the kind the fixture site has, number {n}.”"
            )),
        );
        item.0.insert("author".into(), json!("Somebody Quoted"));
        let pending = pending.clone();
        let finish = finish.clone();
        let on_stored = move || {
            pending.set(pending.get() - 1);
            if pending.get() == 0
                && let Some(f) = finish.borrow_mut().take()
            {
                f();
            }
        };
        match w.pipeline.process_item(item, None) {
            Ok(ItemOutcome::Wait(d)) => {
                let _ = d.then(move |r| {
                    if let Err(f) = r {
                        eprintln!("item not stored: {f}");
                    }
                    on_stored();
                    Ok::<(), Failure>(())
                });
            }
            Ok(ItemOutcome::Item(_)) => on_stored(),
            Err(f) => {
                eprintln!("pipeline: {f}");
                on_stored();
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: u64| -> u64 {
        args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default)
    };
    let Some(url) = args.first().cloned() else {
        eprintln!("usage: redis_load REDIS_URL WORKERS [PAGES] [LINKS] [ITEMS] [PREFETCH]");
        std::process::exit(2);
    };
    let workers = arg(1, 1).max(1);
    let site = Site {
        pages: arg(2, 20_000).max(1),
        links: arg(3, 17),
        items: arg(4, 4),
    };
    let prefetch = arg(5, 16).max(1) as usize;
    let mut reactor = match Reactor::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot start the reactor: {e}");
            std::process::exit(1);
        }
    };
    let handle = reactor.handle();
    let run = Rc::new(Run {
        site,
        done: Cell::new(0),
        reactor: handle.clone(),
        started: Cell::new(0.0),
        finished: Cell::new(0.0),
    });
    let mut all = Vec::new();
    for n in 0..workers {
        let mut settings = Settings::new();
        settings.set("REDIS_URL", url.clone(), Priority::Cmdline);
        settings.set("REDIS_PREFETCH", prefetch, Priority::Cmdline);
        settings.set("SCHEDULER_FLUSH_ON_START", n == 0, Priority::Cmdline);
        let stats = Rc::new(MemoryStatsCollector::new());
        let ctx = Rc::new(CrawlContext::new(
            settings,
            stats,
            handle.clock().clone(),
            Some(handle.clone()),
            "load".into(),
            Vec::new(),
            None,
        ));
        let slot: Rc<RefCell<Option<Rc<Worker>>>> = Rc::default();
        let wake = {
            let (slot, run, h) = (slot.clone(), run.clone(), handle.clone());
            Waker::new(move || {
                let (slot, run) = (slot.clone(), run.clone());
                let _ = h.call_later(0.0, move || {
                    let w = slot.borrow().clone();
                    if let Some(w) = w {
                        pump(&w, &run);
                    }
                });
            })
        };
        let sctx = SchedulerContext {
            activity: Rc::default(),
            wake,
            dupefilter: Rc::new(|| Err(Failure::msg("the load generator uses Redis's"))),
        };
        let built = RedisScheduler::from_context(&ctx, sctx)
            .and_then(|s| Ok((s, RedisPipeline::from_context(&ctx)?)));
        let (scheduler, pipeline) = match built {
            Ok(b) => b,
            Err(f) => {
                eprintln!("cannot build worker {n}: {f}");
                std::process::exit(1);
            }
        };
        let w = Rc::new(Worker {
            scheduler: RefCell::new(scheduler),
            pipeline,
            in_flight: Cell::new(0),
            prefetch,
            pumping: Cell::new(false),
        });
        *slot.borrow_mut() = Some(w.clone());
        all.push((w, ctx));
    }
    // Open the first worker (it flushes what a previous run left), seed page 0, then
    // open the others.
    let first = all[0].0.clone();
    let opened = first.scheduler.borrow_mut().open();
    {
        let (all, run, h) = (
            all.iter().map(|(w, _)| w.clone()).collect::<Vec<_>>(),
            run.clone(),
            handle.clone(),
        );
        let _ = opened.then(move |r| {
            if let Err(f) = r {
                eprintln!("cannot open: {f}");
                h.stop();
                return Ok::<(), Failure>(());
            }
            if let Ok(seed) = Request::get_owned(Site::url(0))
                && let Enqueued::Later(d) = all[0].scheduler.borrow_mut().enqueue_request(seed)
            {
                drop(d);
            }
            run.started.set(h.seconds());
            for w in all.iter().skip(1) {
                let w2 = w.clone();
                let run = run.clone();
                let _ = w.scheduler.borrow_mut().open().then(move |_| {
                    pump(&w2, &run);
                    Ok::<(), Failure>(())
                });
            }
            pump(&all[0], &run);
            Ok::<(), Failure>(())
        });
    }
    if let Err(e) = reactor.run() {
        eprintln!("reactor: {e}");
        std::process::exit(1);
    }
    let secs = run.finished.get() - run.started.get();
    let pages = run.done.get();
    // Close every worker (puts back nothing: every lease was acknowledged), so the
    // keys are deleted by the last one out; stop when every close is done.
    let closing = Rc::new(Cell::new(all.len()));
    for (w, _) in &all {
        let (closing, h) = (closing.clone(), handle.clone());
        let _ = w.scheduler.borrow_mut().close("finished").then(move |_| {
            closing.set(closing.get() - 1);
            if closing.get() == 0 {
                h.stop();
            }
            Ok::<(), Failure>(())
        });
    }
    if closing.get() > 0 {
        let _ = reactor.run();
    }
    println!(
        "{}",
        json!({
            "workers": workers,
            "pages": pages,
            "seconds": secs,
            "pages_per_second": pages as f64 / secs.max(1e-9),
            "links": run.site.links,
            "items": run.site.items,
            "prefetch": prefetch,
        })
    );
    if pages != run.site.pages {
        std::process::exit(1);
    }
}
