//! Network test helpers: a reactor + HTTP client trusting the test CA, and a tiny
//! threaded HTTP proxy (forwarding and CONNECT) that records what it saw.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

use trawl::client::http::{HttpClient, HttpClientConfig, HttpRequest, HttpResponse};
use trawl::defer::{Deferred, Failure};
use trawl::net::tls;
use trawl::reactor::Reactor;
use trawl::testing::fixture::TEST_CA_PEM;

pub struct Net {
    pub reactor: Reactor,
    pub client: HttpClient,
}

impl Net {
    pub fn new() -> Self {
        let reactor = Reactor::new().unwrap();
        let mut config = HttpClientConfig::new().unwrap();
        config.tls_verify = tls::client_config_with_pem_roots(TEST_CA_PEM).unwrap();
        let client = HttpClient::new(&reactor.handle(), config);
        Self { reactor, client }
    }

    pub fn run<T: 'static>(&mut self, d: Deferred<T>) -> Result<T, Failure> {
        self.reactor.run_until(&d).unwrap();
        d.take_result().expect("fired")
    }

    pub fn fetch(&mut self, req: HttpRequest) -> Result<HttpResponse, Failure> {
        let d = self.client.request(req);
        self.run(d)
    }

    pub fn get(&mut self, url: &str) -> Result<HttpResponse, Failure> {
        self.fetch(HttpRequest::get(url.parse().unwrap()))
    }

    /// Runs the reactor for `secs` of real time.
    pub fn run_for(&mut self, secs: f64) {
        let d = Deferred::new();
        let d2 = d.clone();
        self.reactor
            .call_later(secs, move || d2.callback(()).unwrap());
        self.reactor.run_until(&d).unwrap();
    }
}

/// What the test proxy saw.
#[derive(Default, Debug, Clone)]
pub struct ProxyLog {
    pub request_lines: Vec<String>,
    pub proxy_auth: Vec<Option<String>>,
}

pub struct TestProxy {
    pub addr: SocketAddr,
    pub log: Arc<Mutex<ProxyLog>>,
}

fn read_head(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    Some(head)
}

fn pipe(mut from: TcpStream, mut to: TcpStream) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

impl TestProxy {
    pub fn start() -> Self {
        Self::start_inner(None)
    }

    /// A proxy that sends every request to `to`, whatever host it names (so tests can
    /// use real-looking host names — `shop.co.uk` — without leaving loopback).
    pub fn start_routing(to: SocketAddr) -> Self {
        Self::start_inner(Some(to))
    }

    fn start_inner(route_to: Option<SocketAddr>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Mutex::new(ProxyLog::default()));
        let l = log.clone();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut client) = stream else { continue };
                let log = l.clone();
                thread::spawn(move || {
                    let Some(head) = read_head(&mut client) else {
                        return;
                    };
                    let text = String::from_utf8_lossy(&head).into_owned();
                    let line = text.lines().next().unwrap_or("").to_owned();
                    let auth = text
                        .lines()
                        .find(|l| l.to_ascii_lowercase().starts_with("proxy-authorization:"))
                        .map(|l| l.split_once(':').unwrap().1.trim().to_owned());
                    {
                        let mut log = log.lock().unwrap();
                        log.request_lines.push(line.clone());
                        log.proxy_auth.push(auth);
                    }
                    let mut parts = line.split_whitespace();
                    let method = parts.next().unwrap_or("");
                    let target = parts.next().unwrap_or("");
                    let (upstream_addr, forward_head) = if method == "CONNECT" {
                        (target.to_owned(), None)
                    } else {
                        let rest = target.strip_prefix("http://").unwrap_or(target);
                        let hostport = rest.split('/').next().unwrap_or("").to_owned();
                        (hostport, Some(head.clone()))
                    };
                    let upstream = match route_to {
                        Some(to) => TcpStream::connect(to),
                        None => TcpStream::connect(&upstream_addr),
                    };
                    let Ok(upstream) = upstream else {
                        let _ = client
                            .write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
                        return;
                    };
                    let mut up = upstream;
                    match forward_head {
                        None => {
                            let _ =
                                client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
                        }
                        Some(h) => {
                            let _ = up.write_all(&h);
                        }
                    }
                    let (c2, u2) = (client.try_clone().unwrap(), up.try_clone().unwrap());
                    let t = thread::spawn(move || pipe(c2, u2));
                    pipe(up, client);
                    let _ = t.join();
                });
            }
        });
        Self { addr, log }
    }

    pub fn url(&self, userinfo: &str) -> String {
        format!("http://{userinfo}{}", self.addr)
    }

    pub fn log(&self) -> ProxyLog {
        self.log.lock().unwrap().clone()
    }
}
