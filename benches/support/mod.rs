//! A tiny measurement harness shared by the benches (no external bench framework: the
//! numbers we need are ns/op medians, and CI only checks that benches build and run).
#![allow(dead_code)]

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Whether `cargo test --benches` (smoke mode) is running us rather than `cargo bench`.
pub fn smoke() -> bool {
    !std::env::args().any(|a| a == "--bench")
}

/// Runs `f` `iters` times per sample, `samples` times; prints and returns the median
/// ns per iteration.
pub fn bench<R>(name: &str, iters: u64, mut f: impl FnMut() -> R) -> f64 {
    let (iters, samples) = if smoke() {
        (iters.min(1_000), 1)
    } else {
        (iters, 7)
    };
    let mut per_iter: Vec<f64> = (0..samples)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(f());
            }
            start.elapsed().as_nanos() as f64 / iters as f64
        })
        .collect();
    per_iter.sort_by(f64::total_cmp);
    let median = per_iter[per_iter.len() / 2];
    println!(
        "{name:<60} {median:>10.1} ns/iter  (min {:.1}, {} x {iters})",
        per_iter[0], samples
    );
    median
}

/// Times one run of `f` over `n` operations; prints and returns ns per operation.
pub fn bench_once(name: &str, n: u64, f: impl FnOnce()) -> f64 {
    let start = Instant::now();
    f();
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    println!("{name:<60} {ns:>10.1} ns/op     ({n} ops)");
    ns
}

/// CPU time this process has used so far (from /proc/self/schedstat, Linux).
pub fn cpu_time() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// A deterministic xorshift generator for bench inputs.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}
