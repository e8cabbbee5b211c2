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

/// Runs `concurrency` request loops for `seconds`; returns requests per second.
fn client_rps(base: &str, paths: &'static [&'static str], concurrency: usize, seconds: f64) -> f64 {
    let mut reactor = Reactor::new().expect("reactor");
    let config = HttpClientConfig::new().expect("config");
    let client = HttpClient::new(&reactor.handle(), config);
    let done = Rc::new(Cell::new(0u64));
    let errors = Rc::new(Cell::new(0u64));
    let deadline = reactor.seconds() + seconds;
    let finished: Deferred<()> = Deferred::new();
    let running = Rc::new(Cell::new(concurrency));

    fn issue(
        client: HttpClient,
        base: Rc<String>,
        paths: &'static [&'static str],
        n: usize,
        done: Rc<Cell<u64>>,
        errors: Rc<Cell<u64>>,
        deadline: f64,
        clock: trawl::reactor::Clock,
        running: Rc<Cell<usize>>,
        finished: Deferred<()>,
    ) {
        if clock.seconds() >= deadline {
            running.set(running.get() - 1);
            if running.get() == 0 {
                let _ = finished.callback(());
            }
            return;
        }
        let url = format!("{}{}", base, paths[n % paths.len()]);
        let req = HttpRequest::get(url.parse().expect("url"));
        let d = client.request(req);
        let c = client.clone();
        d.add_both(move |r| {
            match &r {
                Ok(resp) if resp.status == 200 => done.set(done.get() + 1),
                _ => errors.set(errors.get() + 1),
            }
            issue(c, base, paths, n + 7, done, errors, deadline, clock, running, finished);
            r
        });
    }

    let base = Rc::new(base.to_owned());
    let start = Instant::now();
    for i in 0..concurrency {
        issue(
            client.clone(),
            base.clone(),
            paths,
            i,
            done.clone(),
            errors.clone(),
            deadline,
            reactor.clock().clone(),
            running.clone(),
            finished.clone(),
        );
    }
    reactor.run_until(&finished).expect("run");
    let elapsed = start.elapsed().as_secs_f64();
    let c = client.counters();
    println!(
        "  trawl client: {} ok, {} errors in {elapsed:.2} s, {} connections, {} reused",
        done.get(),
        errors.get(),
        c.connections,
        c.reused
    );
    done.get() as f64 / elapsed
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
    compare("fixture server (trawl, own thread)", &server.base(), PATHS_FIXTURE, seconds);
    if let Ok(nginx) = std::env::var("TRAWL_BENCH_NGINX") {
        compare("nginx", nginx.trim_end_matches('/'), PATHS_NGINX, seconds);
    }
}
