//! The HTTP client with its connector replaced: every connection is an in-memory
//! `StringTransport`, as Twisted's `proto_helpers` tests protocols. No socket, no DNS,
//! no running reactor: the test writes the server's bytes itself.

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;

use trawl::client::http::{HttpClient, HttpClientConfig, HttpRequest, HttpResponse};
use trawl::defer::{Deferred, Failure};
use trawl::net::{ConnectionDone, Endpoint, Transport};
use trawl::proto::http1::HttpError;
use trawl::reactor::Reactor;
use trawl::testing::{StringTransport, assert_no_result, failure_result_of, success_result_of};
use url::Url;

/// The transports the client opened, with the endpoint it asked for.
type Opened = Rc<RefCell<Vec<(Endpoint, Rc<StringTransport>)>>>;

struct Net {
    _reactor: Reactor,
    client: HttpClient,
    transports: Opened,
}

fn net() -> Net {
    let reactor = Reactor::new().expect("reactor");
    let transports: Opened = Rc::default();
    let t = transports.clone();
    let client = HttpClient::with_connect(
        &reactor.handle(),
        HttpClientConfig::new().expect("config"),
        Rc::new(move |e: &Endpoint| {
            let st = StringTransport::new_rc();
            t.borrow_mut().push((e.clone(), st.clone()));
            trawl::defer::succeed(st as Rc<dyn Transport>)
        }),
    );
    Net {
        _reactor: reactor,
        client,
        transports,
    }
}

fn get(url: &str) -> HttpRequest {
    HttpRequest::get(Url::parse(url).expect("url"))
}

fn transport(n: &Net, i: usize) -> Rc<StringTransport> {
    n.transports.borrow()[i].1.clone()
}

#[test]
fn one_request_split_at_every_byte_then_reused() {
    let response = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\n\r\nhello";
    for split in 1..response.len() {
        let n = net();
        let d: Deferred<HttpResponse> = n.client.request(get("http://example.test/a?b=1"));
        let t = transport(&n, 0);
        let sent = String::from_utf8(t.value()).expect("ascii");
        assert!(sent.starts_with("GET /a?b=1 HTTP/1.1\r\n"), "{sent}");
        assert!(sent.contains("\r\nHost: example.test\r\n"), "{sent}");
        t.deliver(&response[..split]);
        assert_no_result(&d);
        t.deliver(&response[split..]);
        let r = success_result_of(d);
        assert_eq!((r.status, r.body.as_slice()), (200, &b"hello"[..]));
        assert_eq!(r.headers.get_str("x-a"), Some("1"));
        // The connection went back to the pool: the next request reuses it.
        t.clear();
        let d2 = n.client.request(get("http://example.test/second"));
        assert_eq!(n.transports.borrow().len(), 1, "no new connection");
        assert!(String::from_utf8_lossy(&t.value()).starts_with("GET /second "));
        t.deliver(b"HTTP/1.1 204 No Content\r\n\r\n");
        let r2 = success_result_of(d2);
        assert!(r2.reused_connection);
        assert_eq!(n.client.counters().reused, 1);
    }
}

#[test]
fn chunked_gzip_body_is_decoded() {
    let n = net();
    let d = n.client.request(get("http://example.test/z"));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(b"compressed text").expect("gzip");
    let body = gz.finish().expect("gzip");
    let mut wire =
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for chunk in body.chunks(7) {
        wire.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        wire.extend_from_slice(chunk);
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(b"0\r\n\r\n");
    let t = transport(&n, 0);
    for b in wire.chunks(3) {
        t.deliver(b);
    }
    let r = success_result_of(d);
    assert_eq!(r.body, b"compressed text");
    assert_eq!(r.decoded_from.as_deref(), Some("gzip"));
    assert!(r.headers.get("content-encoding").is_none());
}

#[test]
fn the_peer_closing_mid_body_is_an_error_unless_dataloss_is_allowed() {
    let n = net();
    let d = n.client.request(get("http://example.test/cut"));
    let t = transport(&n, 0);
    t.deliver(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
    t.close_from_peer(Failure::new(ConnectionDone));
    let f = failure_result_of(d);
    assert!(f.check::<HttpError>(), "{f}");

    let mut req = get("http://example.test/cut");
    req.fail_on_dataloss = false;
    let d = n.client.request(req);
    let t = transport(&n, 1);
    t.deliver(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
    t.close_from_peer(Failure::new(ConnectionDone));
    let r = success_result_of(d);
    assert_eq!(r.body, b"abc");
    assert_eq!(r.flags, ["dataloss"]);
}

#[test]
fn cancelling_aborts_the_connection() {
    let n = net();
    let d = n.client.request(get("http://example.test/slow"));
    let t = transport(&n, 0);
    d.cancel();
    assert!(t.aborted());
    assert!(failure_result_of(d).check::<trawl::defer::CancelledError>());
}

#[test]
fn the_endpoint_carries_tls_and_the_proxy_credentials() {
    let n = net();
    let mut req = get("https://secure.test:8443/x");
    req.proxy = Some(Url::parse("http://user:p%40ss@proxy.test:3128").expect("url"));
    let _d = n.client.request(req);
    let (endpoint, _) = n.transports.borrow()[0].clone();
    assert_eq!(
        (endpoint.host.as_str(), endpoint.port),
        ("secure.test", 8443)
    );
    assert!(endpoint.tls.is_some_and(|t| t.verify));
    let proxy = endpoint.proxy.expect("proxy");
    assert_eq!((proxy.host.as_str(), proxy.port), ("proxy.test", 3128));
    assert_eq!(
        proxy.authorization.as_deref(),
        Some(format!("Basic {}", trawl::util::base64_encode(b"user:p@ss")).as_str())
    );
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(data).expect("gzip");
    gz.finish().expect("gzip")
}

#[test]
fn a_header_stacking_thousands_of_codings_fails_without_allocating_decoders() {
    // 12,000 × gzip in a 60 KB header once allocated a decoder each: 900 MB.
    let n = net();
    let d = n.client.request(get("http://example.test/stacked"));
    let header = vec!["gzip"; 12_000].join(",");
    let wire = format!(
        "HTTP/1.1 200 OK\r\nContent-Encoding: {header}\r\nContent-Length: 7\r\n\r\nabcdefg"
    );
    transport(&n, 0).deliver(wire.as_bytes());
    let f = failure_result_of(d);
    let e = f
        .downcast_ref::<trawl::proto::decode::DecodeError>()
        .unwrap_or_else(|| panic!("{f}"));
    assert!(
        matches!(
            e,
            trawl::proto::decode::DecodeError::TooManyCodings { count: 12_000 }
        ),
        "{e}"
    );
    // Two stacked codings (within the limit) still decode, with trailing junk kept out.
    let n = net();
    let d = n.client.request(get("http://example.test/two"));
    let mut body = gzip(&gzip(b"twice"));
    body.extend_from_slice(b"junk");
    let mut wire = format!(
        "HTTP/1.1 200 OK\r\nContent-Encoding: gzip, gzip\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    wire.extend_from_slice(&body);
    transport(&n, 0).deliver(&wire);
    let r = success_result_of(d);
    assert_eq!(r.body, b"twice");
}
