//! A load generator for the distributed layer: simulated workers on one reactor
//! thread, each with its own connection, `RedisScheduler` and `RedisPipeline` — the
//! exact scripts, batching and command mix of a real worker — crawling a synthetic
//! site without fetching anything. A page's "response" is made up on the spot: its
//! links and items ([`LoadSite`]). Each worker keeps `prefetch` requests in flight,
//! acknowledging one when its items are in Redis. `examples/redis_load` runs it from
//! the command line (`scripts/redis_cost.py --load` measures the server around it);
//! tests run it small.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use serde_json::json;

use crate::crawl::context::CrawlContext;
use crate::crawl::pipeline::{ItemOutcome, ItemPipeline};
use crate::crawl::scheduler::{Enqueued, NextRequest, Scheduler, SchedulerContext, Waker};
use crate::crawl::stats::{MemoryStatsCollector, StatsCollector};
use crate::crawl::{Item, Priority, Request, Settings};
use crate::defer::Failure;
use crate::distributed::{RedisPipeline, RedisScheduler};
use crate::reactor::{Reactor, ReactorHandle};
use crate::util::FxHashSet;

/// What a load run did.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    /// Pages processed (a page processed twice counts twice).
    pub pages: u64,
    /// Distinct pages processed.
    pub distinct: u64,
    /// Seconds from the seed to the last page.
    pub seconds: f64,
    /// Every worker's stats, summed (numeric values only).
    pub stats: std::collections::BTreeMap<String, i64>,
}

/// The synthetic site: `pages` pages, each with `links` links (page i links to 2i+1
/// and 2i+2, so every page is reachable from page 0, and to `links - 2` others chosen
/// by a hash) and `items` items.
#[derive(Debug, Clone, Copy)]
pub struct LoadSite {
    /// Pages (20,000 in the example's default).
    pub pages: u64,
    /// Links per page (17: the fixture crawl's 16.7).
    pub links: u64,
    /// Items per page (4; the fixture has 4.5).
    pub items: u64,
    /// Seconds a page takes to "download" (0: processed at once). Each page waits
    /// between half and one and a half times this (a fixed spread by page number),
    /// so a worker's pages complete one by one as a throttled crawl's do. A page's
    /// place among the worker's `prefetch` downloads frees when its wait ends; its
    /// items and acknowledgement follow.
    pub fetch_delay: f64,
}

impl LoadSite {
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
    site: LoadSite,
    done: Cell<u64>,
    /// Pages processed, each once.
    distinct: RefCell<FxHashSet<u64>>,
    reactor: ReactorHandle,
    started: Cell<f64>,
    finished: Cell<f64>,
}

fn pump(w: &Rc<Worker>, run: &Rc<Run>) {
    if w.pumping.replace(true) {
        return;
    }
    // `in_flight` counts the pages "downloading" (with a fetch delay).
    while w.in_flight.get() < w.prefetch {
        let next = w.scheduler.borrow_mut().next_request();
        let NextRequest::Ready(req) = next else { break };
        let delay = run.site.fetch_delay;
        if delay > 0.0 {
            w.in_flight.set(w.in_flight.get() + 1);
            let spread = LoadSite::page(req.url_str()).map_or(0.5, |p| {
                (p.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 11) as f64 / (1u64 << 53) as f64
            });
            let (w, run) = (w.clone(), run.clone());
            let _ = run
                .reactor
                .clone()
                .call_later(delay * (0.5 + spread), move || {
                    // The download is over: its slot frees now, as the engine's
                    // downloader frees it before the scraper runs; the items and the
                    // acknowledgement follow.
                    w.in_flight.set(w.in_flight.get() - 1);
                    process(&w, &run, req);
                    pump(&w, &run);
                });
        } else {
            // Nothing to download: the page holds no slot.
            process(w, run, req);
        }
    }
    w.pumping.set(false);
}

/// Processes a downloaded page: its links enqueued, its items handed to the pipeline,
/// and once they are stored the request finished (acknowledged). The page no longer
/// holds one of the worker's `prefetch` slots, as a response in Scrapy's scraper no
/// longer holds a download slot.
fn process(w: &Rc<Worker>, run: &Rc<Run>, req: Request) {
    let Some(page) = LoadSite::page(req.url_str()) else {
        log::error!("unexpected URL {}", req.url_str());
        return;
    };
    run.distinct.borrow_mut().insert(page);
    for link in run.site.links(page) {
        match Request::get_owned(LoadSite::url(link)) {
            Ok(r) => match w.scheduler.borrow_mut().enqueue_request(r) {
                Enqueued::Later(d) => drop(d),
                Enqueued::Accepted | Enqueued::Dropped => {}
            },
            Err(e) => log::error!("bad URL: {e}"),
        }
    }
    let pending = Rc::new(Cell::new(run.site.items));
    let finish = {
        let (w, run) = (w.clone(), run.clone());
        move || {
            w.scheduler.borrow_mut().request_finished(&req);
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
        item.0.insert("url".into(), json!(LoadSite::url(page)));
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
                        log::error!("item not stored: {f}");
                    }
                    on_stored();
                    Ok::<(), Failure>(())
                });
            }
            Ok(ItemOutcome::Item(_)) => on_stored(),
            Err(f) => {
                log::error!("pipeline: {f}");
                on_stored();
            }
        }
    }
}

/// Runs `workers` simulated workers against the Redis at `url` on `site` until every
/// page is processed (or the crawl stops), then closes them.
///
/// # Errors
///
/// The reactor or a worker could not be built.
pub fn run(url: &str, workers: u64, site: LoadSite, prefetch: usize) -> Result<LoadReport, String> {
    run_with(url, workers, site, prefetch, &[])
}

/// [`run`] with more settings for every worker (e.g. `REDIS_ITEMS_SHARDS`).
///
/// # Errors
///
/// The reactor or a worker could not be built.
pub fn run_with(
    url: &str,
    workers: u64,
    site: LoadSite,
    prefetch: usize,
    extra: &[(&str, serde_json::Value)],
) -> Result<LoadReport, String> {
    let workers = workers.max(1);
    let prefetch = prefetch.max(1);
    let mut reactor = Reactor::new().map_err(|e| format!("cannot start the reactor: {e}"))?;
    let handle = reactor.handle();
    let run = Rc::new(Run {
        site,
        done: Cell::new(0),
        distinct: RefCell::default(),
        reactor: handle.clone(),
        started: Cell::new(0.0),
        finished: Cell::new(0.0),
    });
    let mut all = Vec::new();
    let mut collectors = Vec::new();
    for n in 0..workers {
        let mut settings = Settings::new();
        settings.set("REDIS_URL", url, Priority::Cmdline);
        settings.set("REDIS_PREFETCH", prefetch, Priority::Cmdline);
        settings.set("SCHEDULER_FLUSH_ON_START", n == 0, Priority::Cmdline);
        for (k, v) in extra {
            settings.set(k, v.clone(), Priority::Cmdline);
        }
        let stats = Rc::new(MemoryStatsCollector::new());
        collectors.push(stats.clone());
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
        let (scheduler, pipeline) = built.map_err(|f| format!("cannot build worker {n}: {f}"))?;
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
                log::error!("cannot open: {f}");
                h.stop();
                return Ok::<(), Failure>(());
            }
            if let Ok(seed) = Request::get_owned(LoadSite::url(0))
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
    reactor.run().map_err(|e| format!("reactor: {e}"))?;
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
        reactor.run().map_err(|e| format!("reactor: {e}"))?;
    }
    let mut stats = std::collections::BTreeMap::new();
    for c in &collectors {
        for (k, v) in c.get_stats() {
            if let Some(n) = v.as_i64() {
                *stats.entry(k).or_insert(0) += n;
            }
        }
    }
    let distinct = run.distinct.borrow().len() as u64;
    Ok(LoadReport {
        pages: run.done.get(),
        distinct,
        seconds: run.finished.get() - run.started.get(),
        stats,
    })
}
