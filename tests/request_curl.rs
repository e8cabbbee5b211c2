//! `Request::from_curl` and `curl_to_request_kwargs` against Scrapy 2.19's
//! `Request.from_curl`, recorded by `tests/data/requests/gen_curl.py` (`curl.json`):
//! command lines written by hand and copied from browsers, each with
//! `ignore_unknown_options` true and false.

use serde_json::Value;
use trawl::crawl::{Request, curl_to_request_kwargs};

fn load() -> Value {
    serde_json::from_str(include_str!("data/requests/curl.json")).expect("curl.json")
}

/// Scrapy's errors whose text comes from shlex, argparse or `curl_to_request_kwargs`
/// itself: trawl gives the same message.
fn message_is_scrapys(message: &str) -> bool {
    message.starts_with("There was an error parsing the curl command")
        || message.starts_with("Unrecognized options")
        || message.starts_with("A curl command must start")
        || message == "No closing quotation"
        || message == "No escaped character"
}

/// A request's header fields grouped as Scrapy's `Headers` holds them.
fn grouped_headers(r: &Request) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for (name, value) in r.headers().iter() {
        let name = String::from_utf8_lossy(name).into_owned();
        let value = String::from_utf8_lossy(value).into_owned();
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some((_, values)) => values.push(value),
            None => out.push((name, vec![value])),
        }
    }
    out
}

#[test]
fn from_curl_matches_scrapy() {
    let data = load();
    let cases = data["cases"].as_array().expect("cases");
    assert!(cases.len() >= 300, "{} cases", cases.len());
    let mut failures = Vec::new();
    let (mut built, mut refused, mut unparseable) = (0, 0, 0);
    for case in cases {
        let cmd = case["curl"].as_str().expect("curl");
        let ignore = case["ignore_unknown_options"].as_bool().expect("flag");
        let label = format!("{cmd:?} (ignore_unknown_options={ignore})");
        let ours = Request::from_curl_with(cmd, ignore);
        if let Some(error) = case["error"].as_str() {
            let message = case["message"].as_str().unwrap_or("");
            match &ours {
                Ok(r) => failures.push(format!(
                    "{label}: Scrapy raises {error}: {message}; trawl built {} {}",
                    r.method(),
                    r.url_str()
                )),
                Err(e) if message_is_scrapys(message) && e.to_string() != message => {
                    failures.push(format!("{label}: message {e:?}, Scrapy's {message:?}"));
                }
                Err(_) => refused += 1,
            }
            continue;
        }
        let url = case["url"].as_str().expect("url");
        let kwargs = match curl_to_request_kwargs(cmd, ignore) {
            Ok(k) => k,
            Err(e) => {
                failures.push(format!("{label}: Scrapy builds {url}; trawl: {e}"));
                continue;
            }
        };
        let warning = case["warning"].as_str().map(str::to_owned);
        if kwargs.warning() != warning {
            failures.push(format!(
                "{label}: warning {:?}, Scrapy's {warning:?}",
                kwargs.warning()
            ));
        }
        // Scrapy builds a request for any text with "://" in it; trawl's requests hold
        // a parsed URL, so a URL the url crate refuses (`http://`, `http://agent x`) is
        // an error here, and only such a URL (DESIGN.md §15).
        if url::Url::parse(url).is_err() {
            match ours {
                Err(_) => unparseable += 1,
                Ok(r) => failures.push(format!("{label}: built {} from {url:?}", r.url_str())),
            }
            continue;
        }
        let r = match ours {
            Ok(r) => r,
            Err(e) => {
                failures.push(format!("{label}: Scrapy builds {url}; trawl: {e}"));
                continue;
            }
        };
        built += 1;
        let mut diffs = Vec::new();
        if r.method().as_str() != case["method"].as_str().expect("method") {
            diffs.push(format!("method {} vs {}", r.method(), case["method"]));
        }
        if r.url_str() != url {
            diffs.push(format!("url {} vs {url}", r.url_str()));
        }
        let expected_headers: Vec<(String, Vec<String>)> =
            serde_json::from_value(case["headers"].clone()).expect("headers");
        let headers = grouped_headers(&r);
        if headers != expected_headers {
            diffs.push(format!("headers {headers:?} vs {expected_headers:?}"));
        }
        let body = String::from_utf8_lossy(r.body());
        if body != case["body"].as_str().expect("body") {
            diffs.push(format!("body {body:?} vs {}", case["body"]));
        }
        let expected_cookies: Vec<(String, String)> =
            serde_json::from_value(case["cookies"].clone()).expect("cookies");
        if r.cookies() != expected_cookies.as_slice() {
            diffs.push(format!("cookies {:?} vs {expected_cookies:?}", r.cookies()));
        }
        if !diffs.is_empty() {
            failures.push(format!("{label}: {}", diffs.join("; ")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from Scrapy:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    // The corpus exercises every outcome.
    eprintln!("built {built}, refused {refused}, unparseable {unparseable}");
    assert!(
        built > 200 && refused > 40 && unparseable > 0,
        "{built} {refused} {unparseable}"
    );
}

#[test]
fn unknown_options_are_warned_about_or_refused() {
    let kwargs = curl_to_request_kwargs("curl -L -k http://example.com/", true).expect("parsed");
    assert_eq!(
        kwargs.warning().as_deref(),
        Some("Unrecognized options: -L, -k")
    );
    let err = curl_to_request_kwargs("curl -L http://example.com/", false).expect_err("refused");
    assert_eq!(err.to_string(), "Unrecognized options: -L");
}
