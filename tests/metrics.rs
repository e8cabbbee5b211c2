//! `--metrics`: a running crawl's read-only endpoints, checked over HTTP while the crawl
//! waits on a page the test holds back — Prometheus text at `/metrics` (every sample line well-formed,
//! the stats under their Prometheus names, engine and slot gauges, the latency
//! histogram), the status page at `/` (self-contained), `/metrics.json` with the same
//! numbers, the token, and the read-only methods. (A real browser draws the page in
//! `scripts/metrics_browser_check.sh`, kept out of CI.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// One HTTP/1.1 request; `(status, headers, body)`.
fn get(addr: &str, method: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).expect("connect to the metrics endpoint");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).expect("write");
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("read until close");
    let (head, body) = raw.split_once("\r\n\r\n").expect("a head");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status");
    (status, head.to_owned(), body.to_owned())
}

fn sample_value(text: &str, name_and_labels: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(name_and_labels) && l[name_and_labels.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// The site the crawl fetches: `/robots.txt` at once, `/held` only once the test calls
/// `release` — until then the crawl's state cannot move, whatever the time it takes
/// to inspect it. `requested` receives `()` when `/held` is asked for.
struct HeldSite {
    port: u16,
    requested: mpsc::Receiver<()>,
    gate: Arc<(Mutex<bool>, Condvar)>,
}

impl HeldSite {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let (tx, requested) = mpsc::channel();
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let g = gate.clone();
        // Detached: it blocks in accept until the test process ends.
        std::thread::spawn(move || {
            for conn in listener.incoming().map_while(Result::ok) {
                let (tx, g) = (tx.clone(), g.clone());
                std::thread::spawn(move || serve_held(conn, &tx, &g));
            }
        });
        Self {
            port,
            requested,
            gate,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn release(&self) {
        let (open, wake) = &*self.gate;
        *open.lock().expect("gate") = true;
        wake.notify_all();
    }
}

/// One keep-alive connection: GET requests without bodies, answered in order.
fn serve_held(mut conn: TcpStream, requested: &mpsc::Sender<()>, gate: &(Mutex<bool>, Condvar)) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            match conn.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        buf.drain(..end + 4);
        let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
        let (status, body, close) = match path.as_str() {
            "/robots.txt" => ("200 OK", "User-agent: *\nAllow: /\n", false),
            "/held" => {
                let _ = requested.send(());
                let (open, wake) = gate;
                let mut open = open.lock().expect("gate");
                while !*open {
                    open = wake.wait(open).expect("gate");
                }
                ("200 OK", "<html><body>held</body></html>", true)
            }
            _ => ("404 Not Found", "", false),
        };
        let answer = format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\n{}\r\n{body}",
            body.len(),
            if close { "Connection: close\r\n" } else { "" }
        );
        if conn.write_all(answer.as_bytes()).is_err() || close {
            return;
        }
    }
}

#[test]
fn metrics_serve_prometheus_a_status_page_and_json_while_the_crawl_runs() {
    let site = HeldSite::start();
    let mut child = Command::new(env!("CARGO_BIN_EXE_trawl"))
        .args([
            "crawl",
            &site.url("/held"),
            "--metrics",
            "127.0.0.1:0",
            "--metrics-token",
            "s3cret",
            "-s",
            "METRICS_INTERVAL=0.2",
            "-L",
            "INFO",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("trawl crawl runs");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let mut addr = None;
    for line in lines.by_ref() {
        let line = line.expect("a log line");
        if let Some(rest) = line.split("Metrics on http://").nth(1) {
            addr = rest.split('/').next().map(str::to_owned);
            break;
        }
    }
    let addr = addr.expect("the crawl logs where its metrics are");
    // The held page is asked for once robots.txt was answered; from then on nothing
    // moves until it is released. (The minute is a guard against a hung crawl.)
    site.requested
        .recv_timeout(Duration::from_secs(60))
        .expect("the crawl requests the held page");
    let auth = [("Authorization", "Bearer s3cret")];

    let (status, _, _) = get(&addr, "GET", "/metrics", &[]);
    assert_eq!(status, 401, "no token, no data");
    let (status, _, _) = get(
        &addr,
        "GET",
        "/metrics",
        &[("Authorization", "Bearer nope")],
    );
    assert_eq!(status, 401);

    let (status, head, prom) = get(&addr, "GET", "/metrics", &auth);
    assert_eq!(status, 200, "{head}");
    assert!(
        head.contains("Content-Type: text/plain; version=0.0.4"),
        "{head}"
    );
    for line in prom.lines().filter(|l| !l.is_empty()) {
        if let Some(comment) = line.strip_prefix("# ") {
            assert!(
                comment.starts_with("HELP ") || comment.starts_with("TYPE "),
                "{line}"
            );
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("name value");
        assert!(
            value.parse::<f64>().is_ok() || value == "+Inf",
            "bad value in {line:?}"
        );
        let name_end = series.find('{').unwrap_or(series.len());
        let name = &series[..name_end];
        assert!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
                && !name.starts_with(|c: char| c.is_ascii_digit()),
            "bad metric name in {line:?}"
        );
        if name_end < series.len() {
            assert!(series.ends_with('}'), "{line:?}");
        }
    }
    let spider = "{spider=\"crawl\"}";
    assert_eq!(
        sample_value(&prom, &format!("trawl_engine_inprogress{spider}")),
        Some(1.0),
        "the held page is in flight:\n{prom}"
    );
    assert!(
        prom.contains("# TYPE trawl_downloader_request_count_total counter"),
        "{prom}"
    );
    assert!(
        prom.contains(
            "trawl_downloader_response_status_count_total{spider=\"crawl\",status=\"200\"} 1"
        ),
        "robots.txt answered:\n{prom}"
    );
    assert!(
        prom.contains("# TYPE trawl_download_latency_seconds histogram"),
        "{prom}"
    );
    assert!(
        prom.contains("trawl_slot_active{spider=\"crawl\",slot=\"127.0.0.1\"} 1"),
        "{prom}"
    );
    assert!(
        prom.contains("# TYPE trawl_memusage_max_bytes gauge"),
        "{prom}"
    );

    let (status, head, page) = get(&addr, "GET", "/?token=s3cret", &[]);
    assert_eq!(status, 200, "{head}");
    assert!(head.contains("text/html"), "{head}");
    assert!(page.contains("<canvas id=\"chart\""), "the chart");
    assert!(
        !page.contains("src=\"http") && !page.contains("href=\"http"),
        "no external assets"
    );

    let (status, _, json) = get(&addr, "GET", "/metrics.json", &auth);
    assert_eq!(status, 200);
    let m: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(m["spider"], "crawl");
    assert_eq!(m["gauges"]["inprogress"], 1);
    assert!(
        m["history"].as_array().is_some_and(|h| !h.is_empty()),
        "{m}"
    );
    // The same numbers in both forms (nothing moves while the page is held).
    for (stat, metric) in [
        (
            "downloader/request_count",
            "trawl_downloader_request_count_total",
        ),
        (
            "response_received_count",
            "trawl_response_received_count_total",
        ),
        ("scheduler/enqueued", "trawl_scheduler_enqueued_total"),
    ] {
        assert_eq!(
            m["stats"][stat].as_f64(),
            sample_value(&prom, &format!("{metric}{spider}")),
            "{stat}"
        );
    }

    let (status, _, _) = get(&addr, "POST", "/metrics", &auth);
    assert_eq!(status, 405, "read-only");
    let (status, _, _) = get(&addr, "GET", "/shutdown", &auth);
    assert_eq!(status, 404, "no control endpoints");

    site.release();
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let exit = child.wait().expect("the crawl ends");
    assert!(exit.success(), "{}", rest.join("\n"));
}
