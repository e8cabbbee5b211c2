//! A broad crawl end to end: `trawl crawl --broad` over the broad fixture (many hosts on
//! their own loopback addresses, each with a robots.txt), over HTTPS with host names
//! resolved by `DNS_RESOLVE` and the test CA trusted by `DOWNLOAD_TLS_CA_FILE`. Every
//! page is fetched once, no disallowed page is, each host's robots.txt once; with few
//! idle connections allowed, revisited hosts connect again and resume their TLS
//! sessions; `trawl serve --hosts` writes the start URLs and hosts file it announces. A
//! missing host is looked up once per `DNSCACHE_NEGATIVE_TTL`.

mod util;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use trawl::testing::{BroadOptions, FixtureServer, TempDir};

/// A stat's value from the crawl's closing stats dump.
fn stat(log: &str, name: &str) -> Option<u64> {
    let key = format!("'{name}': ");
    let at = log.find(&key)? + key.len();
    log[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .ok()
}

#[test]
fn a_broad_tls_crawl_fetches_every_page_once_and_resumes_revisited_hosts() {
    let hosts = 40;
    let pages = 4;
    let srv = FixtureServer::start_broad(BroadOptions {
        hosts,
        pages_per_host: pages,
        tls: true,
        names: true,
        port: 0,
    })
    .expect("broad fixture");
    let site = srv.broad_site().expect("a broad site").clone();
    let dir = TempDir::new("broad-crawl").expect("temp dir");
    let write = |name: &str, text: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        path.display().to_string()
    };
    let urls = write("urls.txt", site.start_urls().as_bytes());
    let hosts_file = write("hosts.txt", site.hosts_file().as_bytes());
    let ca = write("ca.pem", trawl::testing::fixture::TEST_CA_PEM);
    let feed = dir.path().join("out.jl");
    let out = Command::new(env!("CARGO_BIN_EXE_trawl"))
        .args(["crawl", "--urls-file", &urls, "--broad"])
        .args(["-s", &format!("DNS_RESOLVE={hosts_file}")])
        .args(["-s", &format!("DOWNLOAD_TLS_CA_FILE={ca}")])
        // Room for few idle connections: most revisits connect again.
        .args(["-s", "DOWNLOAD_MAX_IDLE_CONNECTIONS=4"])
        .args(["-s", "CONCURRENT_REQUESTS=16"])
        .arg("-O")
        .arg(&feed)
        .output()
        .expect("trawl crawl runs");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");

    let mut seen: HashMap<String, u32> = HashMap::new();
    let text = std::fs::read_to_string(&feed).expect("the feed");
    for line in text.lines() {
        let record: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        assert_eq!(record["status"], 200, "{line}");
        let url = record["url"].as_str().expect("url").to_owned();
        assert!(!url.contains("/private/"), "robots.txt disallows {url}");
        *seen.entry(url).or_default() += 1;
    }
    let mut expected: Vec<String> = (0..hosts)
        .flat_map(|i| (0..pages).map(move |j| (i, j)))
        .map(|(i, j)| site.page_url(i, j))
        .collect();
    expected.sort();
    let mut got: Vec<String> = seen.keys().cloned().collect();
    got.sort();
    assert_eq!(got, expected, "every page of every host");
    assert!(seen.values().all(|n| *n == 1), "each page once: {seen:?}");

    let n = |name: &str| stat(&log, name).unwrap_or_else(|| panic!("no {name} in\n{log}"));
    assert_eq!(n("robotstxt/response_count"), hosts as u64);
    assert_eq!(n("robotstxt/forbidden"), (hosts * pages) as u64);
    // One lookup per host, through the overrides; every other connection hit the cache.
    assert_eq!(n("dns/lookups"), hosts as u64);
    let handshakes = n("downloader/tls/handshakes");
    let resumed = n("downloader/tls/resumed");
    let evicted = n("downloader/connections_idle_evicted");
    assert!(evicted > 0, "the idle cap closed connections");
    assert!(
        handshakes > hosts as u64,
        "hosts were revisited on new connections"
    );
    // A host's first handshake is a full one; revisits resume (≥ 90%).
    let revisits = handshakes - hosts as u64;
    assert!(
        resumed * 10 >= revisits * 9,
        "{resumed} of {revisits} revisit handshakes resumed"
    );
}

#[test]
fn trawl_serve_hosts_announces_its_sites_and_writes_their_lists() {
    let dir = TempDir::new("broad-serve").expect("temp dir");
    let urls = dir.path().join("urls.txt");
    let hosts_file = dir.path().join("hosts.txt");
    let mut child = Command::new(env!("CARGO_BIN_EXE_trawl"))
        .args(["serve", "--hosts", "3", "--pages-per-host", "2", "--names"])
        .arg("--urls-file")
        .arg(&urls)
        .arg("--hosts-file")
        .arg(&hosts_file)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("trawl serve starts");
    let mut first = String::new();
    let stdout = child.stdout.take().expect("stdout");
    BufReader::new(stdout)
        .read_line(&mut first)
        .expect("the announcement");
    let _ = child.kill();
    let _ = child.wait();
    assert!(first.contains("3 hosts x 2 pages"), "{first}");
    let urls = std::fs::read_to_string(&urls).expect("urls file");
    let lines: Vec<&str> = urls.lines().collect();
    assert_eq!(lines.len(), 3, "{urls}");
    assert!(
        lines[2].starts_with("http://h00002.fixture.test:"),
        "{urls}"
    );
    assert!(first.contains(lines[0]), "{first} names {}", lines[0]);
    let hosts = std::fs::read_to_string(&hosts_file).expect("hosts file");
    assert_eq!(
        hosts.lines().collect::<Vec<_>>(),
        [
            "127.1.0.1 h00000.fixture.test",
            "127.1.0.2 h00001.fixture.test",
            "127.1.0.3 h00002.fixture.test"
        ]
    );

    // Without --hosts, the broad options are refused.
    let refused = Command::new(env!("CARGO_BIN_EXE_trawl"))
        .args(["serve", "--names"])
        .output()
        .expect("trawl serve runs");
    assert_eq!(refused.status.code(), Some(2));
}

/// A host that does not exist is looked up once: the crawl's other requests to it fail
/// from the remembered failure (`DNSCACHE_NEGATIVE_TTL`), each still a `DNSLookupError`
/// to its errback; with the TTL at 0 every request asks again.
#[test]
fn a_missing_host_is_looked_up_once_per_negative_ttl() {
    use serde_json::json;
    use util::live::{LiveSpider, crawl, get};
    let run = |ttl: u64| {
        let urls: Vec<_> = (0..5)
            .map(|i| get(&format!("http://gone.invalid/{i}")))
            .collect();
        let (crawler, seen) = crawl(
            LiveSpider::new(urls),
            &[
                ("RETRY_ENABLED", json!(false)),
                ("ROBOTSTXT_OBEY", json!(false)),
                // One at a time: concurrent lookups of one host share one job anyway.
                ("CONCURRENT_REQUESTS_PER_DOMAIN", json!(1)),
                ("DNSCACHE_NEGATIVE_TTL", json!(ttl)),
            ],
        );
        let failures = seen.failures.borrow();
        assert_eq!(failures.len(), 5, "{failures:?}");
        assert!(
            failures.iter().all(|f| f.2.contains("DNS lookup failed")),
            "{failures:?}"
        );
        let stat = |k: &str| crawler.stats.get_int(k);
        (stat("dns/lookups"), stat("dns/negative_cache_hits"))
    };
    assert_eq!(run(60), (1, 4));
    assert_eq!(run(0), (5, 0));
}
