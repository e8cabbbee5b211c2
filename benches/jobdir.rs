//! JOBDIR at scale: a 1,000,000-request frontier in the disk queue with its seen set —
//! push and pop time per request, journal bytes per request, and peak RSS, for a fresh
//! job and for a resume of the same journal.
//!
//! `cargo bench --bench jobdir` (one million requests); `cargo test --benches` runs it
//! with ten thousand.

mod support;

use std::rc::Rc;
use std::time::Instant;

use support::smoke;
use trawl::crawl::Request;
use trawl::crawl::dupefilter::FingerprintSet;
use trawl::crawl::fingerprint::{FingerprintOptions, fingerprint};
use trawl::crawl::jobdir::{FsyncPolicy, Job};
use trawl::crawl::keys::JOB_ID;
use trawl::crawl::scheduler::diskqueue::JobQueue;
use trawl::crawl::scheduler::queues::RequestQueue;
use trawl::crawl::stats::{MemoryStatsCollector, StatsCollector};

/// Peak and current RSS in MB (`VmHWM`, `VmRSS`).
fn rss() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let get = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (get("VmHWM:"), get("VmRSS:"))
}

fn open(dir: &std::path::Path) -> Rc<Job> {
    let stats: Rc<dyn StatsCollector> = Rc::new(MemoryStatsCollector::new());
    Job::open(dir, "bench", FsyncPolicy::Never, false, stats).expect("job")
}

fn main() {
    let n: u64 = if smoke() { 10_000 } else { 1_000_000 };
    let dir = std::env::temp_dir().join(format!("trawl-bench-jobdir-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (base, _) = rss();
    println!("jobdir: {n} plain GETs, baseline RSS {base:.1} MB");

    let job = open(&dir);
    let mut q = JobQueue::new(job.clone(), true, false, None);
    let mut seen = FingerprintSet::new();
    let t = Instant::now();
    for i in 0..n {
        let r = Request::get(&format!(
            "http://127.0.0.1:8089/s/{:03}/{i:07}.html",
            i % 1000
        ))
        .expect("url");
        seen.insert(fingerprint(&r, &FingerprintOptions::default()));
        q.push(r).expect("push");
        if i % 1000 == 999 {
            job.commit();
        }
    }
    job.commit();
    let push = t.elapsed();
    let bytes = std::fs::metadata(dir.join("journal")).map_or(0, |m| m.len());
    let (peak, now) = rss();
    println!(
        "jobdir/push (fingerprint + ENQUEUE): {:.0} ns/request; journal {:.1} B/request; \
         seen set {:.1} B/fingerprint; RSS now {now:.1} MB, peak {peak:.1} MB",
        push.as_nanos() as f64 / n as f64,
        bytes as f64 / n as f64,
        seen.memory_bytes() as f64 / seen.len() as f64
    );
    drop(q);
    drop(job);
    drop(seen);

    // Resume, in the engine's order: replay, the queue restored (the scheduler), then
    // the seen set from the journal (the dupefilter opening).
    let t = Instant::now();
    let job = open(&dir);
    let mut q = JobQueue::new(job.clone(), true, false, None);
    let rec = job.take_recovered().expect("recovered");
    q.restore(&rec.pending, &rec.slots).expect("restore");
    drop(rec);
    let mut seen = FingerprintSet::new();
    job.for_each_fingerprint(|fp| {
        seen.insert(*fp);
    })
    .expect("fingerprints");
    let resume = t.elapsed();
    let (peak, now) = rss();
    println!(
        "jobdir/resume of {n}: {:.2} s; {} pending, {} seen; RSS now {now:.1} MB, peak {peak:.1} MB",
        resume.as_secs_f64(),
        q.len(),
        seen.len()
    );

    let t = Instant::now();
    let mut popped = 0u64;
    while let Some(r) = q.pop().expect("pop") {
        let id = r.meta().get(JOB_ID).and_then(|v| v.as_u64()).expect("id");
        job.request_done(id);
        popped += 1;
    }
    let pop = t.elapsed();
    assert_eq!(popped, n);
    let bytes = std::fs::metadata(dir.join("journal")).map_or(0, |m| m.len());
    let (peak, _) = rss();
    println!(
        "jobdir/pop (read + decode + LEASE + DONE + COMMIT): {:.0} ns/request; journal now \
         {:.1} B/request; peak RSS {peak:.1} MB",
        pop.as_nanos() as f64 / n as f64,
        bytes as f64 / n as f64
    );
    drop(q);
    drop(job);
    let _ = std::fs::remove_dir_all(&dir);
}
