//! The HTTP client alone, one thread, keep-alive, 64 requests in flight, against the
//! fixture server (in-process, on its own thread) and — when `TRAWL_BENCH_NGINX` names a
//! URL prefix such as `http://127.0.0.1:8090` — against nginx serving the peer fixture
//! site. Each target is also measured with `wrk -t1 -c64` in the same run when `wrk` is
//! installed; the ratio is the figure of merit (issue 3: >= 50% of wrk).
//!
//! cargo bench --bench http_client
//! TRAWL_BENCH_NGINX=http://127.0.0.1:8090 cargo bench --bench http_client

mod support;

use std::cell::Cell;
use std::io::Write as _;
use std::process::Command;
use std::rc::Rc;
use std::time::Instant;

use trawl::client::http::{HttpClient, HttpClientConfig, HttpRequest};
use trawl::defer::Deferred;
use trawl::reactor::Reactor;
use trawl::testing::{FixtureOptions, FixtureServer};

const PATHS_NGINX: &[&str] = &[
    "/index.html",
    "/s/000/00000.html",
    "/s/001/00150.html",
    "/s/037/03712.html",
    "/s/099/09999.html",
    "/s/123/12345.html",
    "/s/150/15000.html",
    "/s/199/19999.html",
];

const PATHS_FIXTURE: &[&str] = &[
    "/index.html",
    "/s/000/00000.html",
    "/s/001/00150.html",
    "/s/003/00312.html",
    "/s/009/00999.html",
    "/s/012/01234.html",
    "/s/015/01500.html",
    "/s/019/01999.html",
];

/// The shared state of the request loops.
struct Load {
    client: HttpClient,
    base: String,
    paths: &'static [&'static str],
    done: Cell<u64>,
    errors: Cell<u64>,
    deadline: f64,
    clock: trawl::reactor::Clock,
    running: Cell<usize>,
    finished: Deferred<()>,
}

impl Load {
    /// Issues request `n`; its completion issues the next one until the deadline.
    fn issue(self: &Rc<Self>, n: usize) {
        if self.clock.seconds() >= self.deadline {
            self.running.set(self.running.get() - 1);
            if self.running.get() == 0 {
                let _ = self.finished.callback(());
            }
            return;
        }
        let url = format!("{}{}", self.base, self.paths[n % self.paths.len()]);
        let d = self
            .client
            .request(HttpRequest::get(url.parse().expect("url")));
        let me = self.clone();
        d.add_both(move |r| {
            match &r {
                Ok(resp) if resp.status == 200 => me.done.set(me.done.get() + 1),
                _ => me.errors.set(me.errors.get() + 1),
            }
            me.issue(n + 7);
            r
        });
    }
}

/// Runs `concurrency` request loops for `seconds`; returns requests per second.
fn client_rps(base: &str, paths: &'static [&'static str], concurrency: usize, seconds: f64) -> f64 {
    let mut reactor = Reactor::new().expect("reactor");
    let config = HttpClientConfig::new().expect("config");
    let client = HttpClient::new(&reactor.handle(), config);
    let load = Rc::new(Load {
        client: client.clone(),
        base: base.to_owned(),
        paths,
        done: Cell::new(0),
        errors: Cell::new(0),
        deadline: reactor.seconds() + seconds,
        clock: reactor.clock().clone(),
        running: Cell::new(concurrency),
        finished: Deferred::new(),
    });
    let start = Instant::now();
    for i in 0..concurrency {
        load.issue(i);
    }
    reactor.run_until(&load.finished).expect("run");
    let elapsed = start.elapsed().as_secs_f64();
    let c = client.counters();
    println!(
        "  trawl client: {} ok, {} errors in {elapsed:.2} s, {} connections, {} reused",
        load.done.get(),
        load.errors.get(),
        c.connections,
        c.reused
    );
    load.done.get() as f64 / elapsed
}

fn wrk_rps(base: &str, paths: &[&str], seconds: u32) -> Option<f64> {
    let script = std::env::temp_dir().join("trawl_wrk_paths.lua");
    let mut f = std::fs::File::create(&script).ok()?;
    let list: Vec<String> = paths.iter().map(|p| format!("\"{p}\"")).collect();
    writeln!(
        f,
        "local paths = {{{}}}\nlocal i = 0\nrequest = function()\n  i = i + 1\n  return wrk.format(\"GET\", paths[(i % #paths) + 1])\nend",
        list.join(", ")
    )
    .ok()?;
    let out = Command::new("wrk")
        .args(["-t1", "-c64", &format!("-d{seconds}s"), "-s"])
        .arg(&script)
        .arg(format!("{base}/"))
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.starts_with("Requests/sec:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn compare(name: &str, base: &str, paths: &'static [&'static str], seconds: f64) {
    println!("{name} ({base})");
    let ours = client_rps(base, paths, 64, seconds);
    println!("  trawl client, 1 thread, 64 in flight: {ours:>10.0} req/s");
    match wrk_rps(base, paths, seconds.ceil() as u32) {
        Some(wrk) => println!(
            "  wrk -t1 -c64:                          {wrk:>10.0} req/s   -> trawl / wrk = {:.2}",
            ours / wrk
        ),
        None => println!("  wrk not available: install it (apt-get install wrk) for the ratio"),
    }
}

fn main() {
    let seconds = if support::smoke() { 0.3 } else { 5.0 };
    let server = FixtureServer::start(FixtureOptions {
        pages: 2000,
        ..FixtureOptions::default()
    })
    .expect("fixture server");
    compare(
        "fixture server (trawl, own thread)",
        &server.base(),
        PATHS_FIXTURE,
        seconds,
    );
    if let Ok(nginx) = std::env::var("TRAWL_BENCH_NGINX") {
        compare("nginx", nginx.trim_end_matches('/'), PATHS_NGINX, seconds);
    }
}
