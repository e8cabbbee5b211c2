//! TLS session resumption: a host revisited after its connection closed resumes the
//! session (no certificate exchange) from the client's session cache
//! (`TLS_SESSION_CACHE_SIZE`), and the downloader counts the handshakes
//! (`downloader/tls/handshakes`, `downloader/tls/resumed`). Each request here closes
//! its connection (`Connection: close`) and the next starts from its callback, so every
//! request needs a handshake of its own.

mod util;

use serde_json::json;
use trawl::crawl::Output;
use trawl::testing::{FixtureOptions, FixtureServer};
use util::live::{LiveSpider, crawl, get};

fn tls_site() -> FixtureServer {
    FixtureServer::start(FixtureOptions {
        pages: 5,
        tls: true,
        ..FixtureOptions::default()
    })
    .expect("tls fixture")
}

/// Five sequential requests, each on a connection of its own; the stats.
fn five_handshakes(srv: &FixtureServer, cache: i64) -> (i64, i64, usize) {
    let base = srv.url("/echo");
    let next = move |n: u32| get(&format!("{base}?n={n}")).with_header("Connection", "close");
    let first = next(0);
    let mut n = 0;
    let spider = LiveSpider::new(vec![first]).follow(move |_| {
        n += 1;
        if n < 5 {
            vec![Output::Request(next(n))]
        } else {
            Vec::new()
        }
    });
    let (c, seen) = crawl(
        spider,
        &[
            ("DOWNLOAD_VERIFY_CERTIFICATES", json!(false)),
            ("ROBOTSTXT_OBEY", json!(false)),
            ("TLS_SESSION_CACHE_SIZE", json!(cache)),
        ],
    );
    let stat = |k: &str| c.stats.get_int(k);
    let pages = seen.responses.borrow().len();
    (
        stat("downloader/tls/handshakes"),
        stat("downloader/tls/resumed"),
        pages,
    )
}

#[test]
fn a_host_revisited_resumes_its_tls_session() {
    let srv = tls_site();
    let (handshakes, resumed, pages) = five_handshakes(&srv, 1024);
    assert_eq!(pages, 5);
    assert_eq!(handshakes, 5);
    // The first is full; every later one resumes the session the server issued.
    assert_eq!(resumed, 4);
}

#[test]
fn without_a_session_cache_every_handshake_is_full() {
    let srv = tls_site();
    let (handshakes, resumed, pages) = five_handshakes(&srv, 0);
    assert_eq!(pages, 5);
    assert_eq!(handshakes, 5);
    assert_eq!(resumed, 0);
}
