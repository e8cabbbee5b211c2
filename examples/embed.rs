// cargo run --release --example embed -- [URL...]
//
// The reactor without the crawl engine, embedded in a small single-threaded tool: a
// health checker that GETs each URL every second with the HTTP client (a LoopingCall),
// prints status and latency, and stops after three rounds. Without URLs it checks
// three routes of a fixture server it starts itself.

use std::cell::Cell;
use std::rc::Rc;

use trawl::client::http::{HttpClient, HttpClientConfig, HttpRequest};
use trawl::reactor::Reactor;
use trawl::task::LoopingCall;
use trawl::testing::{FixtureOptions, FixtureServer};

const ROUNDS: u32 = 3;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let server;
    let urls: Vec<url::Url> = if args.is_empty() {
        server = FixtureServer::start(FixtureOptions::default()).expect("fixture server");
        ["/index.html", "/status/503", "/delay/150"]
            .iter()
            .map(|p| server.url(p).parse().expect("fixture URL"))
            .collect()
    } else {
        match args.iter().map(|a| a.parse()).collect::<Result<_, _>>() {
            Ok(u) => u,
            Err(e) => {
                eprintln!("embed: {e}");
                std::process::exit(2);
            }
        }
    };

    let mut reactor = Reactor::new().expect("reactor");
    let handle = reactor.handle();
    let client = Rc::new(HttpClient::new(
        &handle,
        HttpClientConfig::new().expect("TLS config"),
    ));
    let round = Rc::new(Cell::new(0u32));
    let h = handle.clone();
    let check = LoopingCall::new(handle.clock(), move || {
        round.set(round.get() + 1);
        if round.get() > ROUNDS {
            h.stop();
            return Ok(());
        }
        let n = round.get();
        for url in &urls {
            let mut req = HttpRequest::get(url.clone());
            req.timeout = 5.0;
            let shown = url.to_string();
            client.request(req).add_both(move |r| {
                match &r {
                    Ok(resp) => println!(
                        "round {n}: {shown} -> {} in {:.1} ms ({} bytes)",
                        resp.status,
                        resp.latency * 1000.0,
                        resp.body.len()
                    ),
                    Err(f) => println!("round {n}: {shown} -> DOWN ({f})"),
                }
                r
            });
        }
        Ok(())
    });
    check.start(1.0, true).expect("the check loop starts");
    reactor.run().expect("reactor runs");
}
