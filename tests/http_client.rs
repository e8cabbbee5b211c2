//! The HTTP client against the fixture server over loopback: keep-alive, chunked,
//! content decoding, limits and bombs, timeouts, TLS, proxies, DNS, retries, cancel.

mod util;

use std::time::Duration;

use trawl::client::http::{HttpRequest, InvalidRequest, ResponseTooLarge, TunnelError};
use trawl::defer::{CancelledError, TimeoutError};
use trawl::net::ConnectionLost;
use trawl::net::dns::DnsLookupError;
use trawl::net::tcp::{ConnectError, TlsError};
use trawl::proto::http1::HttpError;
use trawl::testing::{FixtureOptions, FixtureServer};
use util::capture_logs;
use util::net::{Net, TestProxy};

fn server() -> FixtureServer {
    FixtureServer::with_pages(300).unwrap()
}

fn req(url: &str) -> HttpRequest {
    HttpRequest::get(url.parse().unwrap())
}

#[test]
fn get_a_generated_page() {
    let srv = server();
    let mut net = Net::new();
    let r = net.get(&srv.url("/s/000/00007.html")).unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.body, srv.site().render_page(7).as_bytes());
    assert_eq!(
        r.headers.get_str("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(r.protocol, "HTTP/1.1");
    assert_eq!(r.ip, Some(srv.addr()));
    assert!(r.latency > 0.0 && r.latency < 5.0);
}

#[test]
fn keep_alive_reuses_one_connection() {
    let srv = server();
    let mut net = Net::new();
    for i in 0..10 {
        let r = net.get(&srv.url(&format!("/s/000/{i:05}.html"))).unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.reused_connection, i > 0);
    }
    let c = net.client.counters();
    assert_eq!((c.requests, c.connections, c.reused), (10, 1, 9));
    assert_eq!(srv.stats().connections(), 1);
    assert_eq!(net.client.idle_connections(), 1);
}

#[test]
fn concurrent_requests_each_get_their_response() {
    let srv = server();
    let mut net = Net::new();
    let ds: Vec<_> = (0..40)
        .map(|i| {
            net.client
                .request(req(&srv.url(&format!("/s/000/{i:05}.html"))))
        })
        .collect();
    let all = trawl::defer::gather_results(ds, true);
    let responses = net.run(all).unwrap();
    for (i, r) in responses.iter().enumerate() {
        assert_eq!(r.body, srv.site().render_page(i).as_bytes(), "response {i}");
    }
    assert!(net.client.counters().connections <= 40);
    assert!(net.client.idle_connections() <= 8, "idle cap per host");
}

#[test]
fn chunked_bodies() {
    let srv = server();
    let mut net = Net::new();
    for n in [1, 3, 50] {
        let r = net.get(&srv.url(&format!("/chunked?n={n}"))).unwrap();
        assert_eq!(r.body, srv.site().render_page(3).as_bytes(), "n={n}");
    }
}

#[test]
fn content_encodings_are_decoded() {
    let srv = server();
    let mut net = Net::new();
    let page = srv.site().render_page(2);
    for (path, enc) in [
        ("/gzip", "gzip"),
        ("/deflate", "deflate"),
        ("/deflate-raw", "deflate"),
        ("/br", "br"),
    ] {
        let r = net.get(&srv.url(path)).unwrap();
        assert_eq!(r.body, page.as_bytes(), "{path}");
        assert_eq!(r.decoded_from.as_deref(), Some(enc));
        assert!(!r.headers.contains("content-encoding"), "{path}");
        assert!(
            r.wire_bytes < page.len() as u64,
            "{path} was compressed on the wire"
        );
    }
    let mut raw = req(&srv.url("/gzip"));
    raw.decode_content = false;
    let r = net.fetch(raw).unwrap();
    assert_eq!(r.headers.get_str("content-encoding"), Some("gzip"));
    assert_ne!(r.body, page.as_bytes());
}

#[test]
fn timeout_fails_and_closes_the_connection() {
    let srv = server();
    let mut net = Net::new();
    let mut r = req(&srv.url("/delay/3000"));
    r.timeout = 0.2;
    let f = net.fetch(r).unwrap_err();
    assert_eq!(f.find::<TimeoutError>().unwrap().seconds, 0.2);
    let timeout = f
        .downcast_ref::<trawl::client::http::DownloadTimeout>()
        .expect("named");
    assert!(f.to_string().starts_with("Getting http://"), "{f}");
    assert!(
        f.to_string().contains("took longer than 0.2 seconds"),
        "{f}"
    );
    assert_eq!(timeout.seconds, 0.2);
    assert_eq!(net.client.idle_connections(), 0);
    // the client still works afterwards
    assert_eq!(net.get(&srv.url("/index.html")).unwrap().status, 200);
}

#[test]
fn announced_size_over_max_is_cancelled_before_the_body() {
    let srv = server();
    let mut net = Net::new();
    let mut r = req(&srv.url("/big?size=5000000"));
    r.maxsize = 1_000_000;
    let f = net.fetch(r).unwrap_err();
    let e = f.trap::<ResponseTooLarge>().unwrap();
    assert_eq!((e.size, e.limit), (5_000_000, 1_000_000));
}

#[test]
fn streamed_size_over_max_is_cut() {
    let srv = server();
    let mut net = Net::new();
    let mut r = req(&srv.url("/big-chunked?size=5000000"));
    r.maxsize = 1_000_000;
    let f = net.fetch(r).unwrap_err();
    assert!(f.check::<ResponseTooLarge>(), "{f}");
}

#[test]
fn decompression_bombs_stop_at_maxsize() {
    let srv = server();
    let mut net = Net::new();
    for enc in ["gzip", "deflate", "deflate-raw", "br"] {
        let mut r = req(&srv.url(&format!("/bomb/{enc}?size=20000000")));
        r.maxsize = 1_000_000;
        let f = net.fetch(r).unwrap_err();
        assert!(f.check::<ResponseTooLarge>(), "{enc}: {f}");
    }
}

#[test]
fn warnsize_logs_once() {
    let srv = server();
    let mut net = Net::new();
    let mut r = req(&srv.url("/big-chunked?size=300000"));
    r.warnsize = 100_000;
    let (result, logs) = capture_logs(|| net.fetch(r));
    assert_eq!(result.unwrap().body.len(), 300_000);
    let warnings: Vec<_> = logs
        .iter()
        .filter(|(l, m)| *l == log::Level::Warn && m.contains("warn size"))
        .collect();
    assert_eq!(warnings.len(), 1, "{logs:?}");
}

#[test]
fn cut_body_fails_or_is_flagged_dataloss() {
    let srv = server();
    let mut net = Net::new();
    let f = net.get(&srv.url("/cut")).unwrap_err();
    assert_eq!(
        f.trap::<HttpError>().unwrap(),
        &HttpError::Incomplete {
            received: 100,
            expected: Some(1000)
        }
    );
    let mut r = req(&srv.url("/cut"));
    r.fail_on_dataloss = false;
    let resp = net.fetch(r).unwrap();
    assert_eq!(resp.body.len(), 100);
    assert_eq!(resp.flags, ["dataloss"]);
}

#[test]
fn connection_reset_is_a_connection_lost_failure() {
    let srv = server();
    let mut net = Net::new();
    let f = net.get(&srv.url("/reset")).unwrap_err();
    assert!(f.check::<ConnectionLost>() || f.check::<HttpError>(), "{f}");
}

#[test]
fn http10_body_until_close_and_connection_close() {
    let srv = server();
    let mut net = Net::new();
    let r = net.get(&srv.url("/http10")).unwrap();
    assert_eq!(r.protocol, "HTTP/1.0");
    assert!(r.body.starts_with(b"an HTTP/1.0 body"));
    let r = net.get(&srv.url("/close")).unwrap();
    assert_eq!(r.body, b"closing after this");
    assert_eq!(net.client.idle_connections(), 0);
}

#[test]
fn head_and_post() {
    let srv = server();
    let mut net = Net::new();
    let mut head = req(&srv.url("/s/000/00001.html"));
    head.method = "HEAD".into();
    let r = net.fetch(head).unwrap();
    assert!(r.body.is_empty());
    assert!(r.headers.get_str("content-length").is_some());

    let mut post = req(&srv.url("/echo"));
    post.method = "POST".into();
    post.body = b"a=1&b=2".to_vec();
    post.headers.append("X-Test", "one");
    post.headers.append("X-Test", "two");
    let r = net.fetch(post).unwrap();
    let text = String::from_utf8(r.body).unwrap();
    assert!(text.starts_with("POST /echo\n"), "{text}");
    assert!(text.contains("X-Test: one\nX-Test: two\n"), "{text}");
    assert!(text.contains("Content-Length: 7\n"), "{text}");
    assert!(text.ends_with("\na=1&b=2"), "{text}");
}

#[test]
fn tls_with_the_test_ca() {
    let srv = FixtureServer::start(FixtureOptions {
        pages: 50,
        tls: true,
        ..FixtureOptions::default()
    })
    .unwrap();
    let mut net = Net::new();
    let r = net.get(&srv.url("/s/000/00003.html")).unwrap();
    assert_eq!(r.body, srv.site().render_page(3).as_bytes());
    let r = net
        .get(&format!("https://localhost:{}/br", srv.port()))
        .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(net.client.counters().connections, 2, "one per host name");
    let r = net.get(&srv.url("/s/000/00004.html")).unwrap();
    assert!(r.reused_connection);
}

#[test]
fn untrusted_certificate_is_rejected_unless_verification_is_off() {
    let srv = FixtureServer::start(FixtureOptions {
        pages: 10,
        untrusted_cert: true,
        ..FixtureOptions::default()
    })
    .unwrap();
    let mut net = Net::new();
    let f = net.get(&srv.url("/index.html")).unwrap_err();
    assert!(f.check::<TlsError>() || f.check::<ConnectionLost>(), "{f}");
    assert!(
        f.to_string().to_lowercase().contains("certificate") || f.to_string().contains("TLS"),
        "{f}"
    );
    let mut r = req(&srv.url("/index.html"));
    r.verify_tls = false;
    assert_eq!(net.fetch(r).unwrap().status, 200);
}

#[test]
fn plain_http_through_a_proxy_with_credentials() {
    let srv = server();
    let proxy = TestProxy::start();
    let mut net = Net::new();
    let mut r = req(&srv.url("/s/000/00005.html#frag"));
    r.proxy = Some(proxy.url("user:p%40ss@").parse().unwrap());
    let resp = net.fetch(r).unwrap();
    assert_eq!(resp.body, srv.site().render_page(5).as_bytes());
    let log = proxy.log();
    assert_eq!(
        log.request_lines[0],
        format!("GET {}/s/000/00005.html HTTP/1.1", srv.base())
    );
    // base64("user:p@ss")
    assert_eq!(log.proxy_auth[0].as_deref(), Some("Basic dXNlcjpwQHNz"));
}

#[test]
fn https_through_a_connect_tunnel() {
    let srv = FixtureServer::start(FixtureOptions {
        pages: 20,
        tls: true,
        ..FixtureOptions::default()
    })
    .unwrap();
    let proxy = TestProxy::start();
    let mut net = Net::new();
    let mut r = req(&srv.url("/s/000/00006.html"));
    r.proxy = Some(proxy.url("me:secret@").parse().unwrap());
    r.headers
        .append("Proxy-Authorization", "Basic must-not-leak");
    let resp = net.fetch(r).unwrap();
    assert_eq!(resp.body, srv.site().render_page(6).as_bytes());
    let log = proxy.log();
    assert_eq!(
        log.request_lines,
        [format!("CONNECT {} HTTP/1.1", srv.addr())]
    );
    assert_eq!(log.proxy_auth[0].as_deref(), Some("Basic bWU6c2VjcmV0"));

    // The origin never sees proxy credentials.
    let mut echo = req(&srv.url("/echo"));
    echo.proxy = Some(proxy.url("").parse().unwrap());
    let text = String::from_utf8(net.fetch(echo).unwrap().body).unwrap();
    assert!(
        !text.to_lowercase().contains("proxy-authorization"),
        "{text}"
    );
}

#[test]
fn proxy_refusing_connect_is_a_tunnel_error() {
    let proxy = TestProxy::start();
    let mut net = Net::new();
    // The proxy cannot reach port 1: it answers 502 to the CONNECT.
    let mut r = req("https://127.0.0.1:1/");
    r.proxy = Some(proxy.url("").parse().unwrap());
    let f = net.fetch(r).unwrap_err();
    assert_eq!(f.trap::<TunnelError>().unwrap().status, 502);
}

#[test]
fn localhost_resolves_through_the_dns_threads() {
    let srv = server();
    let mut net = Net::new();
    // /close: the server closes after answering, so each request needs a new connection.
    let r = net
        .get(&format!("http://localhost:{}/close", srv.port()))
        .unwrap();
    assert_eq!(r.status, 200);
    net.get(&format!("http://LOCALHOST:{}/close", srv.port()))
        .unwrap();
    let (lookups, hits) = net.client.resolver().counters();
    assert_eq!(lookups, 1, "second lookup served from the cache");
    assert!(hits >= 1);
    let f = net.get("http://does-not-exist.invalid/").unwrap_err();
    assert!(f.check::<DnsLookupError>(), "{f}");
}

#[test]
fn connection_refused_and_bad_scheme() {
    let mut net = Net::new();
    let f = net.get("http://127.0.0.1:1/").unwrap_err();
    assert!(f.check::<ConnectError>(), "{f}");
    let f = net.get("ftp://127.0.0.1/").unwrap_err();
    assert!(f.check::<InvalidRequest>(), "{f}");
}

#[test]
fn dead_pooled_connection_is_retried_once() {
    let srv = server();
    let mut net = Net::new();
    net.get(&srv.url("/index.html")).unwrap();
    assert_eq!(net.client.idle_connections(), 1);
    // Kill the server side of the pooled connection without letting our reactor
    // notice: stop the server, then send on the dead connection.
    let port = srv.port();
    srv.stop();
    // The port was ours a moment ago; another process may grab it meanwhile. Try for a
    // while, then fail: a test that cannot run must not pass.
    let mut attempt = 0;
    let srv2 = loop {
        match FixtureServer::start(FixtureOptions {
            pages: 300,
            addr: ([127, 0, 0, 1], port).into(),
            ..FixtureOptions::default()
        }) {
            Ok(s) => break s,
            Err(e) if attempt < 100 => {
                attempt += 1;
                let _ = e;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("cannot rebind 127.0.0.1:{port} for the restarted server: {e}"),
        }
    };
    std::thread::sleep(Duration::from_millis(20));
    let r = net.get(&srv2.url("/index.html")).unwrap();
    assert_eq!(r.status, 200);
    let c = net.client.counters();
    assert_eq!(c.retries, 1, "{c:?}");
    assert!(!r.reused_connection);
}

#[test]
fn cancel_aborts_the_download() {
    let srv = server();
    let mut net = Net::new();
    let d = net.client.request(req(&srv.url("/delay/5000")));
    let d2 = d.clone();
    net.reactor.call_later(0.05, move || d2.cancel());
    let f = net.run(d).unwrap_err();
    assert!(f.check::<CancelledError>());
    assert_eq!(net.client.idle_connections(), 0);
    // The canceller reached the transfer: its connection is aborted and gone from
    // the reactor (a Deferred cancelled without it errbacks all the same).
    assert_eq!(
        net.reactor.handle().source_count(),
        0,
        "the connection is still open"
    );
    assert_eq!(net.get(&srv.url("/index.html")).unwrap().status, 200);
}

#[test]
fn idle_connections_are_kept_up_to_the_cap_per_key() {
    // Four transfers at once on four connections to one host: when they end, the
    // pool keeps `max_idle_per_key` of them and closes the rest; a cap of 0 keeps
    // none (and a later request still gets a connection).
    let srv = server();
    for cap in [0, 1, 3, 8] {
        let mut net = Net::new();
        let mut config = trawl::client::http::HttpClientConfig::new().unwrap();
        config.max_idle_per_key = cap;
        net.client = trawl::client::http::HttpClient::new(&net.reactor.handle(), config);
        let ds = (0..4)
            .map(|i| {
                net.client
                    .request(req(&srv.url(&format!("/delay/{}", 20 + i))))
            })
            .collect();
        let all = trawl::defer::gather_results(ds, true);
        assert_eq!(net.run(all).unwrap().len(), 4);
        assert_eq!(net.client.counters().connections, 4, "cap {cap}");
        assert_eq!(net.client.idle_connections(), cap.min(4), "cap {cap}");
        assert_eq!(net.get(&srv.url("/index.html")).unwrap().status, 200);
        assert_eq!(
            net.client.idle_connections(),
            cap.min(4).max(usize::from(cap > 0))
        );
    }
}

#[test]
fn slow_drip_is_received_whole() {
    let srv = server();
    let mut net = Net::new();
    let r = net.get(&srv.url("/drip?bytes=5&ms=20")).unwrap();
    assert_eq!(r.body, b"ddddd");
}

#[test]
fn latency_reflects_server_delay() {
    let srv = server();
    let mut net = Net::new();
    let r = net.get(&srv.url("/delay/150")).unwrap();
    assert!(r.latency >= 0.14, "latency {}", r.latency);
}

#[test]
fn idle_connections_in_all_stay_within_max_idle_total_oldest_closed_first() {
    // One request after another to six hosts of the broad fixture with room for three
    // idle connections in all: the three idle the longest are closed, the three most
    // recent are kept (a request to host 5 reuses its connection, one to host 0
    // connects again).
    use trawl::testing::{BroadOptions, BroadSite};
    let srv = FixtureServer::start_broad(BroadOptions {
        hosts: 6,
        pages_per_host: 2,
        ..BroadOptions::default()
    })
    .unwrap();
    let site: BroadSite = srv.broad_site().unwrap().clone();
    let mut net = Net::new();
    let mut config = trawl::client::http::HttpClientConfig::new().unwrap();
    config.max_idle_total = 3;
    net.client = trawl::client::http::HttpClient::new(&net.reactor.handle(), config);
    for i in 0..6 {
        assert_eq!(net.get(&site.page_url(i, 1)).unwrap().status, 200);
    }
    let c = net.client.counters();
    assert_eq!((c.connections, c.idle_evicted), (6, 3));
    assert_eq!(net.client.idle_connections(), 3);
    assert_eq!(net.get(&site.page_url(5, 0)).unwrap().status, 200);
    assert_eq!(
        net.client.counters().connections,
        6,
        "host 5's connection reused"
    );
    assert_eq!(net.get(&site.page_url(0, 0)).unwrap().status, 200);
    let c = net.client.counters();
    assert_eq!(
        (c.connections, c.idle_evicted),
        (7, 4),
        "host 0 connected again"
    );
    assert_eq!(net.client.idle_connections(), 3);
}
