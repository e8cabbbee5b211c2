//! `bindaddress` (request meta) and `DOWNLOAD_BIND_ADDRESS`: the connection leaves from
//! the address asked for, as the fixture server's `/peer` (the client address its
//! socket sees) shows. Linux answers on all of 127.0.0.0/8, so 127.0.0.2 and up are
//! local addresses without configuration. Connections are pooled per source address:
//! two requests to one host from two addresses use two connections.

mod util;

use serde_json::json;
use trawl::testing::FixtureServer;
use util::live::{LiveSpider, crawl, get};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

#[test]
fn requests_leave_from_their_bindaddress() {
    let srv = FixtureServer::with_pages(3).expect("fixture server");
    let port = free_port();
    let spider = LiveSpider::new(vec![
        get(&srv.url("/peer?meta")).with_meta("bindaddress", "127.0.0.2"),
        get(&srv.url("/peer?tuple")).with_meta("bindaddress", json!(["127.0.0.3", port])),
        get(&srv.url("/peer?setting")),
        get(&srv.url("/peer?empty")).with_meta("bindaddress", ""),
        get(&srv.url("/peer?hostname")).with_meta("bindaddress", "localhost"),
    ]);
    let (_, seen) = crawl(
        spider,
        &[
            ("ROBOTSTXT_OBEY", json!(false)),
            ("DOWNLOAD_BIND_ADDRESS", json!("127.0.0.4")),
        ],
    );
    let peer = |q: &str| {
        seen.responses
            .borrow()
            .iter()
            .find(|r| r.url().query() == Some(q))
            .map(|r| String::from_utf8_lossy(r.body()).into_owned())
    };
    let ip = |q: &str| peer(q).map(|p| p.rsplit_once(':').map(|(ip, _)| ip.to_owned()));
    assert_eq!(ip("meta"), Some(Some("127.0.0.2".into())));
    assert_eq!(peer("tuple"), Some(format!("127.0.0.3:{port}")));
    // No meta, or an empty one: the setting's address.
    assert_eq!(ip("setting"), Some(Some("127.0.0.4".into())));
    assert_eq!(ip("empty"), Some(Some("127.0.0.4".into())));
    // A host name is refused with a clear error (resolving it would block).
    let failures = seen.failures.borrow();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0].0.ends_with("/peer?hostname") && failures[0].2.contains("not an IP address"),
        "{failures:?}"
    );
}

#[test]
fn a_bad_download_bind_address_fails_the_downloads_with_a_clear_error() {
    // As Scrapy loads download handlers: lazily, and a handler that cannot be made
    // fails the requests of its scheme with the reason.
    let srv = FixtureServer::with_pages(3).expect("fixture server");
    let spider = LiveSpider::new(vec![get(&srv.url("/peer"))]);
    let (c, seen) = crawl(
        spider,
        &[
            ("ROBOTSTXT_OBEY", json!(false)),
            ("DOWNLOAD_BIND_ADDRESS", json!([1, 2, 3])),
        ],
    );
    assert!(seen.responses.borrow().is_empty());
    let failures = seen.failures.borrow();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0].2.contains("DOWNLOAD_BIND_ADDRESS"),
        "{failures:?}"
    );
    assert_eq!(c.stats.get_value("finish_reason"), Some("finished".into()));
}
