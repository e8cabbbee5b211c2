//! `canonicalize_url` per call (what every fingerprint and dupefilter lookup pays): a
//! fixture page URL (already canonical: the fast path) and a URL whose query is
//! sorted; wall time (median of samples) and CPU time, which a busy machine does not
//! inflate. Moved here from an ignored timing test in `crawl::util::canonical`.
//!
//! cargo bench --bench canonicalize

mod support;

use std::hint::black_box;

use trawl::crawl::canonicalize_url;

/// This thread's CPU time in ns (`CLOCK_THREAD_CPUTIME_ID`).
fn thread_cpu_ns() -> u128 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128
}

fn main() {
    let n: u64 = if support::smoke() { 1_000 } else { 1_000_000 };
    for url in [
        "http://127.0.0.1:8089/s/001/00150.html",
        "http://example.com/path?b=2&a=1",
    ] {
        assert!(canonicalize_url(url, true, false).is_ok(), "{url}");
        let name = format!("canonicalize_url {url}");
        support::bench(&name, n, || canonicalize_url(black_box(url), true, false));
        let before = thread_cpu_ns();
        for _ in 0..n {
            black_box(canonicalize_url(black_box(url), true, false)).ok();
        }
        let ns = (thread_cpu_ns() - before) as f64 / n as f64;
        println!("{name:<60} {ns:>10.1} ns/iter CPU ({n} calls)");
    }
}
