//! spider-rs on the broad fixture: one `Website` per start URL (a host's root: spider-rs
//! crawls one site per `Website` and has no broad mode), `PARALLEL` hosts at a time,
//! robots.txt respected, certificates not verified (as Scrapy), host names resolved from
//! the fixture's hosts file through the HTTP client's `resolve` overrides.
//!
//!   spider_broad URLS_FILE HOSTS_FILE [PARALLEL (100)] [PAGES_OUT.jsonl]
//!
//! Writes one JSON line per page received (`{"url": ..., "status": ...}`) and prints a
//! JSON summary on stdout.
use spider::tokio;
use spider::website::Website;
use std::collections::HashMap;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Instant;

fn hosts_file(path: &str) -> HashMap<String, IpAddr> {
    let mut map = HashMap::new();
    for line in std::fs::read_to_string(path).expect("hosts file").lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut fields = line.split_whitespace();
        let Some(ip) = fields.next().and_then(|f| f.parse::<IpAddr>().ok()) else {
            continue;
        };
        for name in fields {
            map.insert(name.to_ascii_lowercase(), ip);
        }
    }
    map
}

/// Crawls one site; returns (pages, 200s).
async fn crawl_site(
    url: String,
    hosts: Arc<HashMap<String, IpAddr>>,
    out: Arc<Mutex<Option<std::io::BufWriter<std::fs::File>>>>,
) -> (u64, u64) {
    let mut website = Website::new(&url);
    website.with_respect_robots_txt(true);
    website.with_danger_accept_invalid_certs(true);
    let parsed = spider::url::Url::parse(&url).expect("a start URL");
    if let (Some(host), Some(port)) = (parsed.host_str(), parsed.port_or_known_default()) {
        if let Some(ip) = hosts.get(host) {
            let builder = website
                .configure_http_client_builder()
                .resolve(host, SocketAddr::new(*ip, port));
            if let Ok(client) = builder.build() {
                website.set_http_client(client.into());
            }
        }
    }
    let mut rx = website.subscribe(4096);
    let consumer = tokio::spawn(async move {
        let (mut pages, mut ok) = (0u64, 0u64);
        let mut lines = String::new();
        loop {
            match rx.recv().await {
                Ok(page) => {
                    pages += 1;
                    let status = page.status_code.as_u16();
                    if status == 200 {
                        ok += 1;
                    }
                    lines.push_str(&format!(
                        "{{\"url\":\"{}\",\"status\":{}}}\n",
                        page.get_url().replace('"', "%22"),
                        status
                    ));
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            }
        }
        if let Some(w) = out.lock().expect("out").as_mut() {
            w.write_all(lines.as_bytes()).expect("write");
        }
        (pages, ok)
    });
    website.crawl().await;
    website.unsubscribe();
    consumer.await.unwrap_or((0, 0))
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let urls: Vec<String> = std::fs::read_to_string(args.get(1).expect("URLS_FILE"))
        .expect("urls file")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    let hosts = Arc::new(hosts_file(args.get(2).expect("HOSTS_FILE")));
    let parallel: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(100);
    let out = Arc::new(Mutex::new(args.get(4).map(|p| {
        std::io::BufWriter::new(std::fs::File::create(p).expect("output file"))
    })));
    let t0 = Instant::now();
    let permits = Arc::new(tokio::sync::Semaphore::new(parallel.max(1)));
    let mut set = tokio::task::JoinSet::new();
    for url in urls {
        let permit = permits.clone().acquire_owned().await.expect("semaphore");
        let (hosts, out) = (hosts.clone(), out.clone());
        set.spawn(async move {
            let r = crawl_site(url, hosts, out).await;
            drop(permit);
            r
        });
    }
    let (mut pages, mut ok) = (0u64, 0u64);
    while let Some(r) = set.join_next().await {
        let (p, o) = r.unwrap_or((0, 0));
        pages += p;
        ok += o;
    }
    if let Some(w) = out.lock().expect("out").as_mut() {
        w.flush().expect("flush");
    }
    println!(
        "{{\"tool\":\"spider-rs\",\"pages\":{pages},\"pages_200\":{ok},\"secs\":{:.3},\"parallel\":{parallel}}}",
        t0.elapsed().as_secs_f64()
    );
}
