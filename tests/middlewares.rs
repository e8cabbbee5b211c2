//! The built-in middlewares over loopback against the fixture server: robots.txt,
//! HttpAuth, retries, redirects and meta refresh, cookies, compression, proxies,
//! Referer, the HTTP cache, and the security rules of Scrapy's advisories (each test
//! named after what it defends against fails on the vulnerable behaviour).

mod util;

use serde_json::{Value, json};
use trawl::crawl::{Output, Request};
use trawl::testing::{FixtureOptions, FixtureServer};
use util::live::{LiveSpider, crawl, get};
use util::net::TestProxy;

fn server() -> FixtureServer {
    FixtureServer::start(FixtureOptions {
        pages: 20,
        record: true,
        ..FixtureOptions::default()
    })
    .expect("fixture server")
}

fn server_with_robots(status: u16, body: &str) -> FixtureServer {
    FixtureServer::start(FixtureOptions {
        pages: 20,
        record: true,
        robots: Some((status, body.to_owned())),
        ..FixtureOptions::default()
    })
    .expect("fixture server")
}

fn localhost(server: &FixtureServer, path: &str) -> String {
    format!("http://localhost:{}{path}", server.addr().port())
}

fn hits(server: &FixtureServer, target: &str) -> u32 {
    server.stats().targets().get(target).copied().unwrap_or(0)
}

fn echo_headers(body: &str) -> Vec<(String, String)> {
    body.lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_owned()))
        .collect()
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

// ---------------------------------------------------------------- robots.txt

#[test]
fn robots_txt_is_fetched_once_per_origin_and_obeyed() {
    let srv = server();
    let spider = LiveSpider::new(vec![
        get(&srv.url("/s/000/00001.html")),
        get(&srv.url("/private/secret.html")),
        get(&srv.url("/s/000/00002.html")),
        get(&localhost(&srv, "/private/other.html")),
        get(&localhost(&srv, "/s/000/00003.html")),
    ]);
    let (c, seen) = crawl(spider, &[]);
    assert_eq!(
        hits(&srv, "/robots.txt"),
        2,
        "one per origin (127.0.0.1, localhost)"
    );
    assert_eq!(hits(&srv, "/private/secret.html"), 0);
    assert_eq!(hits(&srv, "/private/other.html"), 0);
    assert_eq!(c.stats.get_int("robotstxt/forbidden"), 2);
    assert_eq!(c.stats.get_int("robotstxt/request_count"), 2);
    assert_eq!(c.stats.get_int("robotstxt/response_status_count/200"), 2);
    assert_eq!(seen.responses.borrow().len(), 3);
    let failures = seen.failures.borrow();
    assert_eq!(failures.len(), 2);
    assert!(failures.iter().all(|(_, kind, _)| kind == "IgnoreRequest"));
}

#[test]
fn robots_txt_answers_follow_rfc_9309() {
    // 4xx: no rules, everything allowed.
    let srv = server_with_robots(404, "not here");
    let (c, seen) = crawl(LiveSpider::new(vec![get(&srv.url("/private/x.html"))]), &[]);
    assert_eq!(c.stats.get_int("robotstxt/forbidden"), 0);
    // The page itself does not exist: the spider hears of an HttpError, not robots.
    assert!(
        seen.failures
            .borrow()
            .iter()
            .all(|(_, k, _)| k == "HttpError")
    );
    assert_eq!(hits(&srv, "/private/x.html"), 1);

    // 5xx: unreachable, everything disallowed (after the retries the 503 earns) — and
    // not silently: one INFO line names the origin and why, the drops are counted.
    let srv = server_with_robots(503, "busy");
    let ((c, _), logs) = util::capture_logs(|| {
        crawl(
            LiveSpider::new(vec![
                get(&srv.url("/s/000/00001.html")),
                get(&srv.url("/s/000/00002.html")),
            ]),
            &[],
        )
    });
    assert_eq!(hits(&srv, "/robots.txt"), 3, "first try + RETRY_TIMES (2)");
    assert_eq!(hits(&srv, "/s/000/00001.html"), 0);
    assert_eq!(c.stats.get_int("robotstxt/unreachable"), 1);
    assert_eq!(c.stats.get_int("robotstxt/unreachable/HTTP 503"), 1);
    assert_eq!(c.stats.get_int("robotstxt/forbidden"), 2);
    assert_eq!(c.stats.get_int("robotstxt/forbidden/unreachable"), 2);
    let info: Vec<&String> = logs
        .iter()
        .filter(|(l, m)| {
            *l == log::Level::Info && m.contains("robots.txt") && m.contains("unreachable")
        })
        .map(|(_, m)| m)
        .collect();
    assert_eq!(info.len(), 2, "the first drop and the summary: {info:?}");
    assert!(info[0].contains("HTTP 503"), "{info:?}");
    assert!(info[1].contains("2 request(s) dropped"), "{info:?}");

    // A network error: unreachable too.
    let srv = server_with_robots(0, "");
    let (c, _) = crawl(
        LiveSpider::new(vec![get(&srv.url("/s/000/00001.html"))]),
        &[("RETRY_ENABLED", json!(false))],
    );
    assert_eq!(hits(&srv, "/s/000/00001.html"), 0);
    assert_eq!(c.stats.get_int("robotstxt/unreachable"), 1);
    assert!(
        c.stats
            .get_stats()
            .keys()
            .any(|k| k.starts_with("robotstxt/exception_count/")),
        "{:?}",
        c.stats.get_stats()
    );
}

#[test]
fn robots_txt_user_agent_groups_and_opt_outs() {
    let srv = server_with_robots(
        200,
        "User-agent: *\nDisallow: /s/\n\nUser-agent: mybot\nDisallow: /status/\n",
    );
    let (c, _) = crawl(
        LiveSpider::new(vec![
            get(&srv.url("/s/000/00001.html")),
            get(&srv.url("/status/200")),
            get(&srv.url("/status/201")).with_meta("dont_obey_robotstxt", true),
        ]),
        &[("ROBOTSTXT_USER_AGENT", json!("MyBot/1.0"))],
    );
    assert_eq!(
        hits(&srv, "/s/000/00001.html"),
        1,
        "mybot's group allows /s/"
    );
    assert_eq!(hits(&srv, "/status/200"), 0);
    assert_eq!(hits(&srv, "/status/201"), 1, "dont_obey_robotstxt");
    assert_eq!(c.stats.get_int("robotstxt/forbidden"), 1);
}

#[test]
fn robots_txt_off_fetches_nothing() {
    let srv = server();
    let (c, _) = crawl(
        LiveSpider::new(vec![get(&srv.url("/private/x.html"))]),
        &[("ROBOTSTXT_OBEY", json!(false))],
    );
    assert_eq!(hits(&srv, "/robots.txt"), 0);
    assert_eq!(hits(&srv, "/private/x.html"), 1);
    assert_eq!(c.stats.get_int("robotstxt/request_count"), 0);
}

// ---------------------------------------------------------------- HttpAuth (CVE-2021-41125)

#[test]
fn http_auth_credentials_go_only_to_their_domain() {
    let srv = server();
    let spider = LiveSpider::new(vec![
        get(&srv.url("/echo?n=1")),
        get(&localhost(&srv, "/echo?n=2")),
        get(&srv.url(&format!(
            "/redirect/302?to={}",
            localhost(&srv, "/echo?n=3")
        ))),
    ]);
    let (_, seen) = crawl(
        spider,
        &[
            ("HTTP_USER", json!("user")),
            ("HTTP_PASS", json!("secret")),
            ("HTTP_AUTH_DOMAIN", json!("127.0.0.1")),
        ],
    );
    let responses = seen.responses.borrow();
    assert_eq!(responses.len(), 3);
    for r in responses.iter() {
        let body = String::from_utf8_lossy(r.body()).into_owned();
        let auth = header(&echo_headers(&body), "authorization").map(str::to_owned);
        match r.url().host_str() {
            Some("127.0.0.1") => assert_eq!(auth.as_deref(), Some("Basic dXNlcjpzZWNyZXQ=")),
            _ => assert_eq!(auth, None, "credentials leaked to {}", r.url()),
        }
    }
}

#[test]
fn http_auth_domain_defaults_to_the_first_request_and_skips_other_robots() {
    let srv = server();
    // Only localhost is crawled first; 127.0.0.1's robots.txt must not get them.
    let spider = LiveSpider::new(vec![get(&localhost(&srv, "/echo?first"))]).follow(|r| {
        if r.url().query() == Some("first") {
            vec![Output::Request(get(&format!(
                "http://127.0.0.1:{}/echo?second",
                r.url().port().unwrap_or(80)
            )))]
        } else {
            Vec::new()
        }
    });
    let (_, seen) = crawl(
        spider,
        &[("HTTP_USER", json!("u")), ("HTTP_PASS", json!("p"))],
    );
    let first = seen.body_of("/echo").expect("first echo");
    assert!(
        first.contains("authorization: Basic dTpw") || first.contains("Authorization: Basic dTpw")
    );
    let responses = seen.responses.borrow();
    let second = responses
        .iter()
        .find(|r| r.url().query() == Some("second"))
        .expect("second echo");
    let body = String::from_utf8_lossy(second.body()).to_lowercase();
    assert!(!body.contains("authorization"), "{body}");
}

// ---------------------------------------------------------------- retries

#[test]
fn retries_flaky_pages_then_gives_up_on_persistent_errors() {
    let srv = server();
    let spider = LiveSpider::new(vec![
        get(&srv.url("/flaky/2?key=a")),
        get(&srv.url("/status/500")),
        get(&srv.url("/status/503")).with_meta("dont_retry", true),
        get(&srv.url("/flaky/1?key=b")).with_meta("max_retry_times", 0),
    ]);
    let (c, seen) = crawl(spider, &[("HTTPERROR_ALLOW_ALL", json!(true))]);
    assert_eq!(hits(&srv, "/flaky/2?key=a"), 3);
    assert_eq!(hits(&srv, "/status/500"), 3);
    assert_eq!(hits(&srv, "/status/503"), 1);
    assert_eq!(hits(&srv, "/flaky/1?key=b"), 1);
    let s = |k: &str| c.stats.get_int(k);
    assert_eq!(s("retry/count"), 4);
    assert_eq!(s("retry/reason_count/503 Service Unavailable"), 2);
    assert_eq!(s("retry/reason_count/500 Internal Server Error"), 2);
    assert_eq!(s("retry/max_reached"), 2);
    let statuses: Vec<u16> = seen.responses.borrow().iter().map(|r| r.status()).collect();
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 1);
    let retried = seen
        .responses
        .borrow()
        .iter()
        .find(|r| r.url().path() == "/flaky/2")
        .map(|r| r.meta().get_i64("retry_times"));
    assert_eq!(retried, Some(Some(2)));
}

#[test]
fn network_errors_are_retried() {
    let srv = server();
    // No robots.txt: its idle connection would earn /reset the client's transparent
    // retry on a fresh connection (a reused connection that dies before any byte).
    let (c, seen) = crawl(
        LiveSpider::new(vec![get(&srv.url("/reset"))]),
        &[("ROBOTSTXT_OBEY", json!(false))],
    );
    assert_eq!(hits(&srv, "/reset"), 3);
    assert_eq!(c.stats.get_int("retry/count"), 2);
    assert_eq!(c.stats.get_int("retry/max_reached"), 1);
    assert_eq!(seen.failures.borrow().len(), 1);
}

// ---------------------------------------------------------------- redirects

#[test]
fn redirect_codes_methods_and_bodies() {
    let srv = server();
    let post = |code: u16| {
        get(&srv.url(&format!("/redirect/{code}?to=/echo?from={code}")))
            .with_method("POST")
            .with_body(b"payload=1".to_vec())
            .with_header("Content-Type", "application/x-www-form-urlencoded")
    };
    let spider = LiveSpider::new(vec![post(301), post(302), post(303), post(307), post(308)]);
    let (c, seen) = crawl(spider, &[]);
    let responses = seen.responses.borrow();
    assert_eq!(responses.len(), 5);
    for r in responses.iter() {
        let body = String::from_utf8_lossy(r.body()).into_owned();
        let from: u16 = r
            .url()
            .query()
            .and_then(|q| q.strip_prefix("from="))
            .and_then(|c| c.parse().ok())
            .expect("from");
        let first = body.lines().next().unwrap_or("");
        let headers = echo_headers(&body);
        match from {
            301..=303 => {
                assert!(first.starts_with("GET "), "{from}: {first}");
                assert!(!body.contains("payload=1"), "{from}: body dropped");
                assert_eq!(header(&headers, "content-type"), None, "{from}");
            }
            _ => {
                assert!(first.starts_with("POST "), "{from}: {first}");
                assert!(body.ends_with("payload=1"), "{from}: {body}");
            }
        }
        assert_eq!(
            r.meta().get("redirect_reasons"),
            Some(&json!([from])),
            "{from}"
        );
        assert_eq!(r.meta().get_i64("redirect_times"), Some(1));
    }
    assert_eq!(c.stats.get_int("redirect/count"), 5);
}

#[test]
fn redirect_chains_loops_and_the_maximum() {
    let srv = server();
    let spider = LiveSpider::new(vec![
        get(&srv.url("/redirect-chain/3")),
        get(&srv.url("/redirect-loop")).with_dont_filter(true),
        get(&srv.url("/redirect-chain/5")).with_meta("dont_redirect", true),
    ]);
    let (c, seen) = crawl(
        spider,
        &[
            ("REDIRECT_MAX_TIMES", json!(4)),
            ("HTTPERROR_ALLOW_ALL", json!(true)),
        ],
    );
    let responses = seen.responses.borrow();
    let chained = responses
        .iter()
        .find(|r| r.url().path() == "/redirect-chain/0")
        .expect("chain followed to the end");
    assert_eq!(
        chained.meta().get("redirect_urls"),
        Some(&json!([
            srv.url("/redirect-chain/3"),
            srv.url("/redirect-chain/2"),
            srv.url("/redirect-chain/1"),
        ]))
    );
    assert_eq!(hits(&srv, "/redirect-loop"), 5, "1 + REDIRECT_MAX_TIMES");
    let failures = seen.failures.borrow();
    assert!(
        failures
            .iter()
            .any(|(u, kind, msg)| u.ends_with("/redirect-loop")
                && kind == "IgnoreRequest"
                && msg.contains("redirect loop")),
        "{failures:?}"
    );
    assert!(
        responses
            .iter()
            .any(|r| r.url().path() == "/redirect-chain/5" && r.status() == 302),
        "dont_redirect hands the 302 to the spider"
    );
    assert_eq!(c.stats.get_int("redirect/max_reached"), 1);
}

#[test]
fn redirect_loops_without_dont_filter_stop_at_the_dupefilter() {
    let srv = server();
    let (c, _) = crawl(LiveSpider::new(vec![get(&srv.url("/redirect-loop"))]), &[]);
    assert_eq!(hits(&srv, "/redirect-loop"), 1);
    assert_eq!(c.stats.get_int("dupefilter/filtered"), 1);
}

#[test]
fn redirects_to_non_http_schemes_are_refused() {
    // GHSA-23j4-mw76-5v7h
    let srv = server();
    let spider = LiveSpider::new(vec![
        get(&srv.url("/redirect/302?to=file:///etc/passwd")),
        get(&srv.url("/redirect/301?to=data:text/html,hello")),
        get(&srv.url("/redirect/302?to=ftp://127.0.0.1/x")),
        get(&srv.url("/meta-refresh?to=file:///etc/passwd&delay=0")),
    ]);
    let (c, seen) = crawl(spider, &[]);
    assert_eq!(c.stats.get_int("redirect/unsupported_scheme"), 4);
    // As in Scrapy, the redirect is not followed and the response itself goes on: the
    // three 3xx answers meet HttpErrorMiddleware, the refresh page reaches the spider.
    let failures = seen.failures.borrow();
    assert_eq!(failures.len(), 3, "{failures:?}");
    assert!(failures.iter().all(|(_, k, _)| k == "HttpError"));
    let responses = seen.responses.borrow();
    assert_eq!(responses.len(), 1);
    assert_eq!(responses[0].url().path(), "/meta-refresh");
    assert!(
        responses.iter().all(|r| r.url().scheme() == "http"),
        "nothing was read from file: or data:"
    );
}

#[test]
fn a_meta_refresh_after_a_post_is_a_get_without_the_body() {
    let srv = server();
    let spider = LiveSpider::new(vec![
        get(&srv.url("/meta-refresh?to=/echo?refreshed&delay=0"))
            .with_method("POST")
            .with_body(b"password=secret".to_vec())
            .with_header("Content-Type", "application/x-www-form-urlencoded"),
    ]);
    let (_, seen) = crawl(spider, &[]);
    let body = seen.body_of("/echo").expect("the refresh was followed");
    assert!(body.starts_with("GET /echo?refreshed"), "{body}");
    assert!(!body.contains("password"), "{body}");
    assert_eq!(header(&echo_headers(&body), "content-type"), None);
}

#[test]
fn meta_refresh_is_followed_below_the_max_delay() {
    let srv = server();
    let spider = LiveSpider::new(vec![
        get(&srv.url("/meta-refresh?to=/echo?quick&delay=1")),
        get(&srv.url("/meta-refresh?to=/echo?slow&delay=500")),
    ]);
    let (_, seen) = crawl(spider, &[]);
    let paths = seen.paths();
    assert!(paths.contains(&"/echo?quick".to_owned()), "{paths:?}");
    assert!(
        paths
            .iter()
            .any(|p| p.starts_with("/meta-refresh") && p.contains("slow")),
        "a 500 s refresh is not followed: {paths:?}"
    );
}

#[test]
fn authorization_and_cookie_headers_are_dropped_across_hosts() {
    // CVE-2022-0577, CVE-2024-3574
    let srv = server();
    let with_creds = |url: String| {
        get(&url)
            .with_header("Authorization", "Bearer token")
            .with_header("Cookie", "session=abc")
            .with_meta("dont_merge_cookies", true)
    };
    let spider = LiveSpider::new(vec![
        with_creds(srv.url(&format!(
            "/redirect/302?to={}",
            localhost(&srv, "/echo?cross")
        ))),
        with_creds(srv.url("/redirect/302?to=/echo?same")),
    ]);
    let (_, seen) = crawl(spider, &[]);
    let responses = seen.responses.borrow();
    for r in responses.iter() {
        let body = String::from_utf8_lossy(r.body()).into_owned();
        let h = echo_headers(&body);
        match r.url().query() {
            Some("cross") => {
                assert_eq!(header(&h, "authorization"), None, "{body}");
                assert_eq!(header(&h, "cookie"), None, "{body}");
            }
            Some("same") => {
                assert_eq!(header(&h, "authorization"), Some("Bearer token"));
                assert_eq!(header(&h, "cookie"), Some("session=abc"));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(responses.len(), 2);
}

#[test]
fn authorization_is_dropped_when_the_port_or_scheme_changes() {
    // CVE-2024-1968: scheme; CVE-2024-3574: port.
    let a = server();
    let b = server();
    let tls = FixtureServer::start(FixtureOptions {
        pages: 5,
        tls: true,
        ..FixtureOptions::default()
    })
    .expect("tls fixture");
    let with_auth = |url: String| {
        get(&url)
            .with_header("Authorization", "Bearer token")
            .with_header("Cookie", "session=abc")
            .with_meta("dont_merge_cookies", true)
    };
    let spider = LiveSpider::new(vec![
        with_auth(a.url(&format!("/redirect/302?to={}", b.url("/echo?port")))),
        with_auth(tls.url(&format!("/redirect/302?to={}", a.url("/echo?downgrade")))),
    ]);
    let (_, seen) = crawl(spider, &[("DOWNLOAD_VERIFY_CERTIFICATES", json!(false))]);
    let responses = seen.responses.borrow();
    assert_eq!(responses.len(), 2);
    for r in responses.iter() {
        let body = String::from_utf8_lossy(r.body()).into_owned();
        let h = echo_headers(&body);
        assert_eq!(
            header(&h, "authorization"),
            None,
            "{:?}: {body}",
            r.url().query()
        );
        match r.url().query() {
            Some("port") => assert_eq!(header(&h, "cookie"), Some("session=abc"), "same host"),
            Some("downgrade") => assert_eq!(header(&h, "cookie"), None, "https → http"),
            other => panic!("unexpected {other:?}"),
        }
    }
}

// ---------------------------------------------------------------- cookies

#[test]
fn cookies_are_stored_sent_back_and_kept_per_session() {
    let srv = server();
    let base = srv.base();
    let spider = LiveSpider::new(vec![
        get(&srv.url("/set-cookie?sid=one")),
        get(&srv.url("/set-cookie?sid=two&step=a")).with_meta("cookiejar", 2),
    ])
    .follow(
        move |r| match (r.url().path(), r.meta().get("cookiejar").cloned()) {
            ("/set-cookie", jar) => {
                let mut next = get(&format!(
                    "{base}/echo?jar={}",
                    jar.clone().unwrap_or(Value::Null)
                ));
                if let Some(j) = jar {
                    next = next.with_meta("cookiejar", j);
                }
                vec![Output::Request(next)]
            }
            _ => Vec::new(),
        },
    );
    let (_, seen) = crawl(spider, &[]);
    let responses = seen.responses.borrow();
    let cookie_of = |q: &str| {
        responses
            .iter()
            .find(|r| r.url().query() == Some(q))
            .map(|r| {
                let body = String::from_utf8_lossy(r.body()).into_owned();
                header(&echo_headers(&body), "cookie").map(str::to_owned)
            })
            .expect("echo seen")
    };
    assert_eq!(cookie_of("jar=null").as_deref(), Some("sid=one"));
    assert_eq!(cookie_of("jar=2").as_deref(), Some("sid=two; step=a"));
}

#[test]
fn request_cookies_do_not_follow_a_redirect_to_another_host() {
    // CVE-2022-0577
    let srv = server();
    let spider = LiveSpider::new(vec![
        get(&srv.url(&format!(
            "/redirect/302?to={}",
            localhost(&srv, "/echo?cross")
        )))
        .with_cookie("token", "secret"),
    ]);
    let (_, seen) = crawl(spider, &[]);
    let body = seen.body_of("/echo").expect("echo");
    assert_eq!(header(&echo_headers(&body), "cookie"), None, "{body}");
}

#[test]
fn public_suffix_cookies_are_ignored() {
    // GHSA-mfjm-vh54-3f96: through a routing proxy, so real-looking host names work.
    let srv = server();
    let proxy = TestProxy::start_routing(srv.addr());
    let via = |r: Request| r.with_meta("proxy", proxy.url(""));
    let set =
        "/set-cookie-raw?c=evil%3D1%3B%20Domain%3Dco.uk&c=good%3D1%3B%20Domain%3Dexample.co.uk";
    let spider =
        LiveSpider::new(vec![via(get(&format!("http://a.example.co.uk{set}")))]).follow(move |r| {
            if r.url().path() == "/set-cookie-raw" {
                vec![
                    Output::Request(
                        get("http://b.example.co.uk/echo?sibling")
                            .with_meta("proxy", r.meta().get_str("proxy").unwrap_or("")),
                    ),
                    Output::Request(
                        get("http://other.co.uk/echo?stranger")
                            .with_meta("proxy", r.meta().get_str("proxy").unwrap_or("")),
                    ),
                ]
            } else {
                Vec::new()
            }
        });
    let (_, seen) = crawl(spider, &[("ROBOTSTXT_OBEY", json!(false))]);
    let responses = seen.responses.borrow();
    let cookie_of = |q: &str| {
        let r = responses
            .iter()
            .find(|r| r.url().query() == Some(q))
            .expect("echo seen");
        let body = String::from_utf8_lossy(r.body()).into_owned();
        header(&echo_headers(&body), "cookie").map(str::to_owned)
    };
    assert_eq!(cookie_of("sibling").as_deref(), Some("good=1"));
    assert_eq!(cookie_of("stranger"), None);
}

// ---------------------------------------------------------------- compression

#[test]
fn compressed_responses_are_decoded_and_counted() {
    let srv = server();
    let spider = LiveSpider::new(vec![
        get(&srv.url("/gzip")),
        get(&srv.url("/deflate")),
        get(&srv.url("/br")),
        get(&srv.url("/zstd")),
        get(&srv.url("/echo")),
    ]);
    let (c, seen) = crawl(spider, &[]);
    let page = srv.site().render_page(2);
    for p in ["/gzip", "/deflate", "/br", "/zstd"] {
        assert_eq!(seen.body_of(p).as_deref(), Some(page.as_str()), "{p}");
    }
    assert_eq!(c.stats.get_int("httpcompression/response_count"), 4);
    assert_eq!(
        c.stats.get_int("httpcompression/response_bytes"),
        4 * page.len() as i64
    );
    let echo = seen.body_of("/echo").expect("echo");
    assert_eq!(
        header(&echo_headers(&echo), "accept-encoding"),
        Some("gzip, deflate, br, zstd")
    );
}

#[test]
fn decompression_bombs_stop_at_download_maxsize() {
    // CVE-2024-3572, CVE-2025-6176
    let srv = server();
    let spider = LiveSpider::new(vec![
        get(&srv.url("/bomb/gzip?size=50000000")),
        get(&srv.url("/bomb/deflate?size=50000000")),
        get(&srv.url("/bomb/br?size=50000000")),
        get(&srv.url("/bomb/zstd?size=50000000")),
    ]);
    let (_, seen) = crawl(spider, &[("DOWNLOAD_MAXSIZE", json!(1_000_000))]);
    assert!(seen.responses.borrow().is_empty());
    let failures = seen.failures.borrow();
    assert_eq!(failures.len(), 4, "{failures:?}");
    assert!(
        failures
            .iter()
            .all(|(_, kind, _)| kind == "ResponseTooLarge"),
        "{failures:?}"
    );
}

// ---------------------------------------------------------------- proxies

#[test]
fn proxy_meta_credentials_go_to_the_proxy_only() {
    let srv = server();
    let proxy = TestProxy::start();
    let spider = LiveSpider::new(vec![
        get(&srv.url("/echo?via-proxy")).with_meta("proxy", proxy.url("user:pa%40ss@")),
    ]);
    let (_, seen) = crawl(spider, &[("ROBOTSTXT_OBEY", json!(false))]);
    let log = proxy.log();
    assert_eq!(log.proxy_auth, [Some("Basic dXNlcjpwYUBzcw==".to_owned())]);
    let body = seen.body_of("/echo").expect("echo through the proxy");
    // A forwarding proxy passes headers on; the origin sees what the proxy forwards,
    // but the request's own meta no longer carries the credentials.
    let r = seen.responses.borrow();
    assert_eq!(
        r[0].meta().get_str("proxy"),
        Some(format!("http://{}", proxy.addr).as_str())
    );
    assert!(body.starts_with("GET "));
}

// ---------------------------------------------------------------- Referer

#[test]
fn referer_follows_the_policy() {
    let srv = server();
    let base = srv.base();
    let spider = LiveSpider::new(vec![
        get(&srv.url("/links?to=/echo?default")),
        get(&srv.url("/links?to=/echo?none&policy=no-referrer")),
        get(&srv.url("/links?to=/echo?origin&policy=origin")),
        get(&srv.url("/links?to=/echo?bogus&policy=made-up-policy")),
    ])
    .follow(move |r| {
        if r.url().path() != "/links" {
            return Vec::new();
        }
        trawl::crawl::LinkExtractor::new()
            .extract_links(r)
            .into_iter()
            .filter_map(|l| Request::get(&l.url).ok().map(Output::Request))
            .collect()
    });
    let (_, seen) = crawl(spider, &[]);
    let responses = seen.responses.borrow();
    let referer = |q: &str| {
        let r = responses
            .iter()
            .find(|r| r.url().path() == "/echo" && r.url().query() == Some(q))
            .unwrap_or_else(|| panic!("echo {q}"));
        let body = String::from_utf8_lossy(r.body()).into_owned();
        header(&echo_headers(&body), "referer").map(str::to_owned)
    };
    assert_eq!(
        referer("default").as_deref(),
        Some(format!("{base}/links?to=/echo?default").as_str())
    );
    assert_eq!(referer("none"), None);
    assert_eq!(
        referer("origin").as_deref(),
        Some(format!("{base}/").as_str())
    );
    assert_eq!(
        referer("bogus").as_deref(),
        Some(format!("{base}/links?to=/echo?bogus&policy=made-up-policy").as_str()),
        "an unknown policy from a server is ignored (GHSA-cwxj-rr6w-m6w7)"
    );
}

// ---------------------------------------------------------------- HTTP cache

#[test]
fn http_cache_serves_the_second_crawl() {
    let srv = server();
    let dir = std::env::temp_dir().join(format!("trawl-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let settings = [
        ("HTTPCACHE_ENABLED", json!(true)),
        ("HTTPCACHE_DIR", json!(dir.to_string_lossy())),
        ("ROBOTSTXT_OBEY", json!(false)),
    ];
    let urls = || {
        vec![
            get(&srv.url("/s/000/00001.html")),
            get(&srv.url("/s/000/00002.html")),
        ]
    };
    let (c1, _) = crawl(LiveSpider::new(urls()), &settings);
    assert_eq!(c1.stats.get_int("httpcache/miss"), 2);
    assert_eq!(c1.stats.get_int("httpcache/store"), 2);
    let before = srv.stats().requests();
    let (c2, seen) = crawl(LiveSpider::new(urls()), &settings);
    assert_eq!(srv.stats().requests(), before, "nothing went to the server");
    assert_eq!(c2.stats.get_int("httpcache/hit"), 2);
    let responses = seen.responses.borrow();
    assert!(
        responses
            .iter()
            .all(|r| r.flags().iter().any(|f| f == "cached"))
    );
    assert_eq!(
        seen.body_of("/s/000/00001.html").as_deref(),
        Some(srv.site().render_page(1).as_str())
    );
    // HTTPCACHE_IGNORE_MISSING: only what is cached.
    let mut settings = settings.to_vec();
    settings.push(("HTTPCACHE_IGNORE_MISSING", json!(true)));
    let (c3, _) = crawl(
        LiveSpider::new(vec![get(&srv.url("/s/000/00003.html"))]),
        &settings,
    );
    assert_eq!(c3.stats.get_int("httpcache/ignore"), 1);
    assert_eq!(hits(&srv, "/s/000/00003.html"), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------- everything at once

#[test]
fn a_crawl_with_robots_redirects_retries_cookies_and_gzip_has_exact_stats() {
    let srv = server();
    let base = srv.base();
    let spider = LiveSpider::new(vec![
        get(&srv.url("/redirect/301?to=/s/000/00001.html")),
        get(&srv.url("/flaky/1?key=all")),
        get(&srv.url("/set-cookie?visit=1")),
        get(&srv.url("/gzip")),
        get(&srv.url("/private/no.html")),
    ])
    .follow(move |r| {
        if r.url().path() == "/set-cookie" {
            vec![Output::Request(get(&format!("{base}/echo")))]
        } else {
            Vec::new()
        }
    });
    let (c, seen) = crawl(spider, &[]);
    let s = |k: &str| c.stats.get_int(k);
    assert_eq!(s("robotstxt/request_count"), 1);
    assert_eq!(s("robotstxt/forbidden"), 1);
    assert_eq!(s("redirect/count"), 1);
    assert_eq!(s("retry/count"), 1);
    assert_eq!(s("httpcompression/response_count"), 1);
    // robots + 301 + target + flaky×2 + set-cookie + echo + gzip
    assert_eq!(s("downloader/request_count"), 8);
    assert_eq!(s("downloader/response_status_count/200"), 6);
    assert_eq!(s("downloader/response_status_count/301"), 1);
    assert_eq!(s("downloader/response_status_count/503"), 1);
    // As in Scrapy, a response a middleware turned into a request (the 301, the 503)
    // never reaches the engine as a response.
    assert_eq!(s("response_received_count"), 6);
    assert_eq!(s("downloader/exception_type_count/IgnoreRequest"), 1);
    assert_eq!(s("scheduler/enqueued"), s("scheduler/dequeued"));
    assert_eq!(c.stats.get_value("finish_reason"), Some(json!("finished")));
    assert_eq!(seen.responses.borrow().len(), 5);
    let echo = seen.body_of("/echo").expect("echo");
    assert_eq!(header(&echo_headers(&echo), "cookie"), Some("visit=1"));
    assert_eq!(srv.stats().requests(), 8);
}
