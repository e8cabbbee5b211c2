//! Every proxy kind against a real proxy: pproxy (`python -m pproxy`, from the test
//! venv) listening as an `http://`, an `https://` (TLS to the proxy, with the test
//! certificate) and a `socks5://` proxy, each requiring a user name and password. Both
//! target schemes through each (an https target through the https proxy is TLS inside
//! TLS); `socks5://` resolving the name here and `socks5h://` at the proxy (pproxy's log
//! shows which it was given); wrong and missing credentials; a crawl by the `trawl`
//! binary through `ALL_PROXY` and past it with `NO_PROXY`. A scripted SOCKS5 server
//! that answers a byte at a time covers the refusals pproxy cannot be made to send.

mod util;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use trawl::client::http::{HttpClient, HttpClientConfig, HttpRequest, TunnelError};
use trawl::net::tls;
use trawl::proto::socks5::Socks5Error;
use trawl::testing::fixture::{TEST_CA_PEM, TEST_SERVER_CERT_PEM, TEST_SERVER_KEY_PEM};
use trawl::testing::{FixtureOptions, FixtureServer, TempDir};
use util::net::Net;

const USER: &str = "crawler";
const PASSWORD: &str = "s3cret";

/// pproxy on three free ports; stopped when dropped.
struct Pproxy {
    child: Child,
    http: u16,
    https: u16,
    socks: u16,
    lines: Arc<Mutex<Vec<String>>>,
    _dir: TempDir,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

impl Pproxy {
    fn start() -> Self {
        let dir = TempDir::new("pproxy").expect("temp dir");
        let cert = dir.join("server.pem");
        let key = dir.join("server.key");
        std::fs::write(&cert, TEST_SERVER_CERT_PEM).expect("cert");
        std::fs::write(&key, TEST_SERVER_KEY_PEM).expect("key");
        let (http, https, socks) = (free_port(), free_port(), free_port());
        let auth = format!("#{USER}:{PASSWORD}");
        let mut child = Command::new(util::python("pproxy"))
            // --auth 0: ask every connection for the password (pproxy otherwise trusts
            // an address that authenticated once for 30 days).
            .args(["-m", "pproxy", "--auth", "0", "-v"])
            .args(["-l", &format!("http://127.0.0.1:{http}{auth}")])
            .args(["-l", &format!("http+ssl://127.0.0.1:{https}{auth}")])
            .args(["-l", &format!("socks5://127.0.0.1:{socks}{auth}")])
            .arg("--ssl")
            .arg(format!("{},{}", cert.display(), key.display()))
            .env("PYTHONUNBUFFERED", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python -m pproxy starts");
        let stdout = child.stdout.take().expect("stdout");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let l = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                l.lock().expect("lines").push(line);
            }
        });
        let me = Self {
            child,
            http,
            https,
            socks,
            lines,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while me
            .lines()
            .iter()
            .filter(|l| l.starts_with("Serving on"))
            .count()
            < 3
        {
            assert!(
                Instant::now() < deadline,
                "pproxy did not start: {:?}",
                me.lines()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        me
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().expect("lines").clone()
    }

    /// The proxy URL of `scheme` (`http`, `https`, `socks5`, `socks5h`) with `userinfo`.
    fn url(&self, scheme: &str, userinfo: &str) -> String {
        let port = match scheme {
            "http" => self.http,
            "https" => self.https,
            _ => self.socks,
        };
        format!("{scheme}://{userinfo}127.0.0.1:{port}")
    }

    /// The targets pproxy connected to (`host:port` after `->` in its log), waiting
    /// briefly for the log line: it is printed as the connection opens.
    fn targets(&self, at_least: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let found: Vec<String> = self
                .lines()
                .iter()
                .filter_map(|l| l.split_once(" -> ").map(|(_, t)| t.trim().to_owned()))
                .collect();
            if found.len() >= at_least || Instant::now() > deadline {
                return found;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Pproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fixture(tls: bool) -> FixtureServer {
    FixtureServer::start(FixtureOptions {
        pages: 20,
        tls,
        ..FixtureOptions::default()
    })
    .expect("fixture server")
}

fn through(url: &str, proxy: &str) -> HttpRequest {
    let mut r = HttpRequest::get(url.parse().expect("URL"));
    r.proxy = Some(proxy.parse().expect("proxy URL"));
    r
}

/// A client trusting the test CA (for the https proxy and the https fixture) whose
/// resolver answers `site.fixture.test` with 127.0.0.1.
fn net() -> Net {
    let mut net = Net::new();
    let mut config = HttpClientConfig::new().expect("config");
    config.tls_verify = tls::client_config_with_pem_roots(TEST_CA_PEM).expect("roots");
    let overrides: HashMap<String, Vec<IpAddr>> = [(
        "site.fixture.test".to_owned(),
        vec![IpAddr::from([127, 0, 0, 1])],
    )]
    .into();
    config.resolver.overrides = Arc::new(overrides);
    net.client = HttpClient::new(&net.reactor.handle(), config);
    net
}

#[test]
fn every_proxy_kind_carries_http_and_https_targets() {
    let proxy = Pproxy::start();
    let creds = format!("{USER}:{PASSWORD}@");
    let mut net = net();
    let mut connections = 0;
    for tls in [false, true] {
        let srv = fixture(tls);
        for scheme in ["http", "https", "socks5", "socks5h"] {
            let p = proxy.url(scheme, &creds);
            // Two pages: the second reuses the connection (through the same proxy).
            for page in [3, 4] {
                let resp = net
                    .fetch(through(&srv.url(&format!("/s/000/{page:05}.html")), &p))
                    .unwrap_or_else(|f| panic!("{} through {p}: {f}", srv.base()));
                assert_eq!(resp.status, 200, "{} through {p}", srv.base());
                assert_eq!(
                    resp.body,
                    srv.site().render_page(page).as_bytes(),
                    "{} through {p}",
                    srv.base()
                );
            }
            connections += 1;
            let targets = proxy.targets(connections);
            assert_eq!(
                targets.last().map(String::as_str),
                Some(srv.addr().to_string().as_str()),
                "{scheme} proxy to {}: {targets:?}",
                srv.base()
            );
        }
    }
    let counters = net.client.counters();
    assert_eq!(
        counters.connections, 8,
        "one connection per proxy and target: {counters:?}"
    );
    assert_eq!(counters.reused, 8, "{counters:?}");
    // Each connection went through the proxy: the fixtures saw none directly.
    assert_eq!(proxy.targets(8).len(), 8, "{:?}", proxy.lines());
}

#[test]
fn socks5_sends_the_address_and_socks5h_the_name() {
    let proxy = Pproxy::start();
    let srv = fixture(false);
    let creds = format!("{USER}:{PASSWORD}@");
    let mut net = net();
    // socks5: the client resolves the name (here through its overrides), the proxy
    // is given 127.0.0.1.
    let url = format!("http://site.fixture.test:{}/s/000/00001.html", srv.port());
    let resp = net
        .fetch(through(&url, &proxy.url("socks5", &creds)))
        .expect("through socks5");
    assert_eq!(resp.status, 200);
    assert_eq!(proxy.targets(1), [format!("127.0.0.1:{}", srv.port())]);
    // socks5h: the proxy is given the name and resolves it.
    let url = format!("http://localhost:{}/s/000/00001.html", srv.port());
    let resp = net
        .fetch(through(&url, &proxy.url("socks5h", &creds)))
        .expect("through socks5h");
    assert_eq!(resp.status, 200);
    assert_eq!(proxy.targets(2)[1..], [format!("localhost:{}", srv.port())]);
}

#[test]
fn wrong_or_missing_credentials_are_refused_by_each_kind() {
    let proxy = Pproxy::start();
    let plain = fixture(false);
    let secure = fixture(true);
    let mut net = net();
    for userinfo in ["", "crawler:wrong@"] {
        // An http target through an http(s) proxy: the proxy's 407 is the response.
        for scheme in ["http", "https"] {
            let resp = net
                .fetch(through(
                    &plain.url("/s/000/00001.html"),
                    &proxy.url(scheme, userinfo),
                ))
                .expect("a response");
            assert_eq!(resp.status, 407, "{scheme} proxy, {userinfo:?}");
            // An https target: the CONNECT is refused.
            let f = net
                .fetch(through(
                    &secure.url("/s/000/00001.html"),
                    &proxy.url(scheme, userinfo),
                ))
                .expect_err("a refused tunnel");
            assert_eq!(
                f.trap::<TunnelError>().ok().map(|e| e.status),
                Some(407),
                "{scheme} proxy, {userinfo:?}: {f}"
            );
        }
        for target in [&plain, &secure] {
            let f = net
                .fetch(through(
                    &target.url("/s/000/00001.html"),
                    &proxy.url("socks5h", userinfo),
                ))
                .expect_err("refused by the SOCKS5 proxy");
            let e = f
                .trap::<Socks5Error>()
                .unwrap_or_else(|_| panic!("not a Socks5Error: {f}"));
            assert!(e.is_auth(), "{userinfo:?}: {e}");
        }
    }
    assert!(
        proxy.targets(0).is_empty(),
        "no refused connection reached a target: {:?}",
        proxy.lines()
    );
}

/// A crawl by the binary with the proxy from the environment; the feed's pages.
fn crawl_with_env(srv: &FixtureServer, env: &[(&str, String)]) -> usize {
    let dir = TempDir::new("proxy-crawl").expect("temp dir");
    let feed = dir.join("out.jl");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_trawl"));
    cmd.args([
        "crawl",
        &srv.url("/index.html"),
        "--same-domain",
        "-L",
        "INFO",
    ])
    .arg("-o")
    .arg(&feed);
    for name in [
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
    ] {
        cmd.env_remove(name);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("trawl crawl runs");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    let text = std::fs::read_to_string(&feed).expect("the feed");
    // Distinct pages (the start URL comes twice: it bypasses the dupefilter).
    let pages: std::collections::BTreeSet<String> = text
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            assert_eq!(v["status"], 200, "{l}");
            v["url"].as_str().expect("url").to_owned()
        })
        .collect();
    assert_eq!(pages.len(), srv.site().expected_crawl().0.len(), "{log}");
    pages.len()
}

#[test]
fn a_crawl_goes_through_all_proxy_and_past_it_for_no_proxy_hosts() {
    let proxy = Pproxy::start();
    let srv = fixture(false);
    let all = proxy.url("socks5h", &format!("{USER}:{PASSWORD}@"));
    crawl_with_env(&srv, &[("ALL_PROXY", all.clone())]);
    let through = proxy.targets(1);
    assert!(
        !through.is_empty() && through.iter().all(|t| *t == srv.addr().to_string()),
        "{through:?}"
    );
    // The same crawl with the fixture's address in NO_PROXY: nothing through the proxy.
    crawl_with_env(
        &srv,
        &[
            ("ALL_PROXY", all),
            ("NO_PROXY", "localhost,127.0.0.1".to_owned()),
        ],
    );
    assert_eq!(proxy.targets(0).len(), through.len(), "{:?}", proxy.lines());
}

/// A SOCKS5 server that reads the greeting, the credentials and the request, answers
/// each step one byte at a time with what the script says, and, on success, answers
/// one HTTP request itself. Returns its port and what it received.
fn scripted_socks(reply_code: u8) -> (u16, std::thread::JoinHandle<Vec<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("addr").port();
    let handle = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accept");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let read_n = |s: &mut std::net::TcpStream, n: usize| {
            let mut b = vec![0u8; n];
            s.read_exact(&mut b).expect("read");
            b
        };
        let dribble = |s: &mut std::net::TcpStream, bytes: &[u8]| {
            for b in bytes {
                s.write_all(&[*b]).expect("write");
                s.flush().expect("flush");
                std::thread::sleep(Duration::from_millis(2));
            }
        };
        let mut got = Vec::new();
        let mut head = read_n(&mut s, 2);
        let n = usize::from(head[1]);
        head.extend(read_n(&mut s, n));
        got.push(head);
        dribble(&mut s, &[5, 2]);
        let mut auth = read_n(&mut s, 2);
        let ulen = usize::from(auth[1]);
        auth.extend(read_n(&mut s, ulen + 1));
        let plen = usize::from(auth[auth.len() - 1]);
        auth.extend(read_n(&mut s, plen));
        got.push(auth);
        dribble(&mut s, &[1, 0]);
        let mut req = read_n(&mut s, 5);
        let len = usize::from(req[4]);
        req.extend(read_n(&mut s, len + 2));
        got.push(req);
        // A bound address given as a name, to exercise that reply form too.
        dribble(
            &mut s,
            &[5, reply_code, 0, 3, 4, b'b', b'n', b'd', b'x', 0x04, 0x38],
        );
        if reply_code == 0 {
            let mut request = Vec::new();
            while !request.ends_with(b"\r\n\r\n") {
                request.extend(read_n(&mut s, 1));
            }
            got.push(request);
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .expect("answer");
        }
        got
    });
    (port, handle)
}

#[test]
fn a_socks5_handshake_answered_a_byte_at_a_time_and_its_refusals() {
    let mut net = net();
    let (port, server) = scripted_socks(0);
    let resp = net
        .fetch(through(
            "http://origin.test:8080/page?q=1",
            &format!("socks5h://ann:p%40ss@127.0.0.1:{port}"),
        ))
        .expect("through the scripted proxy");
    assert_eq!(resp.body, b"ok");
    let got = server.join().expect("the server");
    assert_eq!(got[0], [5, 2, 0, 2], "methods: none and user/password");
    assert_eq!(got[1], b"\x01\x03ann\x04p@ss", "RFC 1929, percent-decoded");
    assert_eq!(
        got[2], b"\x05\x01\x00\x03\x0borigin.test\x1f\x90",
        "CONNECT to the name"
    );
    let request = String::from_utf8_lossy(&got[3]).into_owned();
    assert!(
        request.starts_with("GET /page?q=1 HTTP/1.1\r\n"),
        "origin form through SOCKS: {request}"
    );
    assert!(
        !request.to_ascii_lowercase().contains("proxy-authorization"),
        "{request}"
    );

    for (code, text) in [
        (2, "connection not allowed by ruleset"),
        (5, "connection refused"),
    ] {
        let (port, server) = scripted_socks(code);
        let f = net
            .fetch(through(
                "http://origin.test/",
                &format!("socks5h://ann:pw@127.0.0.1:{port}"),
            ))
            .expect_err("refused");
        let _ = server.join();
        assert_eq!(
            f.trap::<Socks5Error>().ok(),
            Some(&Socks5Error::Refused(code))
        );
        assert!(f.to_string().contains(text), "{f}");
    }
}
