//! Hostile peers that need their own sockets (the rest of the reliability suite is in
//! `tests/hostile_crawl.rs`): a server that accepts and never reads — a 32 MB POST
//! fills the socket buffers and the upload stalls — and one that answers a TLS
//! ClientHello with garbage. Crawled together with the healthy fixture site: every
//! healthy page is fetched as in a crawl without them, the stalled upload ends with the
//! download timeout naming its URL, the garbage with a TLS error, and the reactor's
//! thread does bounded work (CPU time, which a busy host does not inflate): it neither
//! spins while the upload is stuck nor works super-linearly on the 32 MB body.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use trawl::crawl::{
    CallbackResult, LinkExtractor, Output, Outputs, Priority, Request, Response, Settings, Spider,
    run_spider,
};
use trawl::defer::Failure;
use trawl::testing::{FixtureOptions, FixtureServer};

/// A raw peer on 127.0.0.1:0 running `serve` on each accepted connection (on its own
/// thread, until the test drops it).
struct Peer {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Peer {
    fn start(serve: fn(TcpStream, &AtomicBool)) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut held = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let _ = conn.set_nonblocking(false);
                        let flag = flag.clone();
                        held.push(std::thread::spawn(move || serve(conn, &flag)));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
            for h in held {
                let _ = h.join();
            }
        });
        Self {
            port,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Accepts and never reads: holds the connection until the test ends.
fn never_reads(conn: TcpStream, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(conn);
}

/// Reads the ClientHello and answers with bytes that are not a TLS record.
fn garbage_tls(mut conn: TcpStream, _stop: &AtomicBool) {
    let mut buf = [0u8; 4096];
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = conn.read(&mut buf);
    let _ = conn.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\nthis is not TLS at all \xff\x00\x13");
    let _ = conn.flush();
    std::thread::sleep(Duration::from_millis(200));
}

/// The fixture crawl (every page, every link) plus `extra` requests; records every
/// fixture URL fetched and every failure.
struct Mixed {
    start: String,
    extra: Vec<Request>,
    links: LinkExtractor,
    fetched: Rc<RefCell<BTreeSet<String>>>,
    failures: Rc<RefCell<Vec<(String, String)>>>,
}

impl Spider for Mixed {
    fn name(&self) -> &str {
        "mixed"
    }

    fn start(&mut self) -> Outputs {
        let mut out = vec![Ok(Output::Request(
            Request::get(&self.start).expect("start URL"),
        ))];
        out.extend(self.extra.drain(..).map(|r| Ok(Output::Request(r))));
        Box::new(out.into_iter())
    }

    fn parse(&mut self, response: &Response) -> CallbackResult {
        // Canonical form: the site links one page under two query orders, and which
        // of the two the dupefilter lets through depends on timing.
        let url = response.url().as_str();
        let canonical =
            trawl::crawl::canonicalize_url(url, true, false).unwrap_or_else(|_| url.to_owned());
        self.fetched.borrow_mut().insert(canonical);
        Ok(self
            .links
            .extract_links(response)
            .into_iter()
            .filter_map(|l| Request::get(&l.url).ok().map(Output::Request))
            .collect())
    }

    fn errback(&mut self, _name: &str, failure: &Failure, request: &Request) -> CallbackResult {
        self.failures
            .borrow_mut()
            .push((request.url_str().to_owned(), failure.to_string()));
        Ok(Vec::new())
    }
}

struct Outcome {
    fetched: BTreeSet<String>,
    failures: Vec<(String, String)>,
    max_stall_ms: Option<f64>,
    healthy_failures: i64,
    /// CPU time of the thread that ran the crawl (the reactor's thread), seconds.
    cpu_s: f64,
}

/// This thread's CPU time, seconds (`CLOCK_THREAD_CPUTIME_ID`: what the thread did,
/// not how long it waited for a busy host).
fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

fn crawl(start: &str, extra: Vec<Request>) -> Outcome {
    let fetched = Rc::new(RefCell::new(BTreeSet::new()));
    let failures = Rc::new(RefCell::new(Vec::new()));
    let spider = Mixed {
        start: start.to_owned(),
        extra,
        links: LinkExtractor::new().with_text(false),
        fetched: fetched.clone(),
        failures: failures.clone(),
    };
    let mut settings = Settings::new();
    for (name, value) in [
        ("DOWNLOAD_TIMEOUT", serde_json::json!(3)),
        ("RETRY_ENABLED", serde_json::json!(false)),
        ("ROBOTSTXT_OBEY", serde_json::json!(false)),
        ("LOG_LEVEL", serde_json::json!("WARNING")),
        ("CONCURRENT_REQUESTS_PER_DOMAIN", serde_json::json!(16)),
    ] {
        settings.set(name, value, Priority::Cmdline);
    }
    let cpu_before = thread_cpu_s();
    let crawler = run_spider(Box::new(spider), settings).expect("crawl runs");
    let cpu_s = thread_cpu_s() - cpu_before;
    let max_stall_ms = crawler
        .stats
        .get_value("reactor/max_stall_ms")
        .and_then(|v| v.as_f64());
    let healthy_failures = crawler.stats.get_int("downloader/exception_count");
    let fetched = fetched.borrow().clone();
    let failures = failures.borrow().clone();
    Outcome {
        fetched,
        failures,
        max_stall_ms,
        healthy_failures,
        cpu_s,
    }
}

#[test]
fn a_peer_that_never_reads_and_garbage_tls_do_not_hurt_the_healthy_crawl() {
    let srv = FixtureServer::start(FixtureOptions {
        pages: 60,
        ..FixtureOptions::default()
    })
    .expect("fixture server");
    let start = srv.url("/index.html");
    let reference = crawl(&start, Vec::new());
    assert!(reference.fetched.len() >= 60, "{:?}", reference.fetched);
    assert!(reference.failures.is_empty(), "{:?}", reference.failures);

    let sink = Peer::start(never_reads);
    let garbage = Peer::start(garbage_tls);
    let upload = format!("http://127.0.0.1:{}/upload", sink.port);
    let tls = format!("https://127.0.0.1:{}/secret", garbage.port);
    let extra = vec![
        Request::get(&upload)
            .expect("url")
            .with_method("POST")
            .with_body(vec![b'x'; 32 << 20])
            .with_errback("failed"),
        Request::get(&tls).expect("url").with_errback("failed"),
    ];
    let mixed = crawl(&start, extra);

    assert_eq!(mixed.fetched, reference.fetched, "healthy pages differ");
    let failure = |url: &str| {
        mixed
            .failures
            .iter()
            .find(|(u, _)| u == url)
            .map(|(_, f)| f.clone())
            .unwrap_or_else(|| panic!("no failure for {url}: {:?}", mixed.failures))
    };
    let f = failure(&upload);
    assert!(
        f.contains("took longer than 3") && f.contains(&upload),
        "the stalled upload: {f}"
    );
    let f = failure(&tls);
    assert!(f.contains("TLS"), "the garbage TLS peer: {f}");
    assert_eq!(mixed.failures.len(), 2, "{:?}", mixed.failures);
    assert_eq!(
        mixed.healthy_failures, 2,
        "only the two hostile requests fail"
    );
    // The reactor's work: the two hostile requests add under 2 s of CPU to the healthy
    // crawl's (0.5 s measured in a debug build: the 32 MB body fingerprinted and sent
    // until the socket buffers fill, a TLS handshake). A reactor that spun on the stuck
    // socket would burn the whole 3 s download timeout; work on the body growing with
    // each partial write would take far longer. CPU time, not wall time: a loaded host
    // makes the crawl slower, not busier. The longest stall is reported (wall time).
    let stall = mixed
        .max_stall_ms
        .expect("reactor/max_stall_ms is in the stats");
    let extra = mixed.cpu_s - reference.cpu_s;
    eprintln!(
        "reactor thread CPU: {:.3} s alone, {:.3} s with the hostile peers; max stall {stall} ms",
        reference.cpu_s, mixed.cpu_s
    );
    assert!(
        extra < 2.0,
        "the hostile peers cost the reactor {extra:.2} s of CPU"
    );
    drop((sink, garbage));
}
