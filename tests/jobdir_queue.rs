//! The JOBDIR disk queue pops in the memory queues' order for the same pushes: a
//! property test over random pushes and pops (priorities, slots, start requests, LIFO
//! and FIFO, plain and downloader-aware), across close and reopen (after a reopen the
//! reference is a memory queue given the remaining requests in their original order).

use std::rc::Rc;

use trawl::crawl::Request;
use trawl::crawl::jobdir::{FsyncPolicy, Job};
use trawl::crawl::keys::IS_START_REQUEST;
use trawl::crawl::keys::JOB_ID;
use trawl::crawl::scheduler::diskqueue::JobQueue;
use trawl::crawl::scheduler::memqueue::memory_queues;
use trawl::crawl::scheduler::pqueues::{DownloaderAwareQueue, PriorityQueue};
use trawl::crawl::scheduler::queues::RequestQueue;
use trawl::crawl::slots::SlotActivity;
use trawl::crawl::stats::{MemoryStatsCollector, StatsCollector};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn open(dir: &std::path::Path) -> Rc<Job> {
    let stats: Rc<dyn StatsCollector> = Rc::new(MemoryStatsCollector::new());
    Job::open(dir, "q", FsyncPolicy::Never, false, stats).expect("job")
}

fn memory(aware: bool, lifo: bool, activity: &Rc<SlotActivity>) -> Box<dyn RequestQueue> {
    if aware {
        Box::new(DownloaderAwareQueue::new(
            memory_queues(lifo, false),
            activity.clone(),
        ))
    } else {
        Box::new(PriorityQueue::new(memory_queues(lifo, false), None))
    }
}

fn disk(job: &Rc<Job>, aware: bool, lifo: bool, activity: &Rc<SlotActivity>) -> JobQueue {
    let mut q = JobQueue::new(job.clone(), lifo, false, aware.then(|| activity.clone()));
    if let Some(rec) = job.take_recovered() {
        q.restore(&rec.pending, &rec.slots).expect("restore");
    }
    q
}

fn check(aware: bool, lifo: bool, seed: u64) {
    let dir = std::env::temp_dir().join(format!(
        "trawl-jobq-{}-{aware}-{lifo}-{seed}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let activity = Rc::new(SlotActivity::default());
    let mut rng = Rng(seed);
    let mut job = open(&dir);
    let mut d = disk(&job, aware, lifo, &activity);
    let mut m = memory(aware, lifo, &activity);
    // What the memory queue still holds, in push order (the reference after a reopen).
    let mut held: Vec<Request> = Vec::new();
    let mut n = 0;
    for step in 0..3000 {
        if step % 700 == 699 {
            // Close and reopen: the disk queue comes back from the journal; the
            // reference is rebuilt from the same remaining requests, in order.
            job.commit();
            drop(d);
            drop(job);
            job = open(&dir);
            d = disk(&job, aware, lifo, &activity);
            m = memory(aware, lifo, &activity);
            for r in &held {
                m.push(r.clone()).expect("push");
            }
            assert_eq!(d.len(), m.len(), "seed {seed}: length after reopen");
            continue;
        }
        if rng.below(100) < 55 {
            n += 1;
            let host = ["a", "b", "c", "d"][rng.below(4) as usize];
            let mut r = Request::get(&format!("http://{host}.test/{n}"))
                .expect("url")
                .with_priority(rng.below(5) as i32 - 2);
            if rng.below(5) == 0 {
                r.meta_mut().insert_static(IS_START_REQUEST, true);
            }
            d.push(r.clone()).expect("disk push");
            m.push(r.clone()).expect("memory push");
            held.push(r);
        } else {
            let a = d.pop().expect("disk pop");
            let b = m.pop().expect("memory pop");
            assert_eq!(
                a.as_ref().map(|r| r.url().to_string()),
                b.as_ref().map(|r| r.url().to_string()),
                "seed {seed}, step {step}"
            );
            if let Some(r) = a {
                held.retain(|h| h.url() != r.url());
                // The engine reports it done.
                let id = r.meta().get(JOB_ID).and_then(|v| v.as_u64()).expect("id");
                job.request_done(id);
                // Busy slots change the downloader-aware order.
                if rng.below(3) == 0 {
                    activity.add(r.url().host_str().unwrap_or(""), 1);
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn disk_queue_pops_like_the_memory_queues() {
    for seed in 1..=4 {
        for aware in [false, true] {
            for lifo in [true, false] {
                check(aware, lifo, seed * 7919);
            }
        }
    }
}
