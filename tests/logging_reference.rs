//! Python's `logging.Formatter`, Scrapy's `LOG_SHORT_NAMES` and Scrapy's `LogFormatter`
//! messages against the answers recorded from CPython 3.11 and Scrapy 2.19
//! (tests/data/logging/gen_logging.py).

use serde_json::Value;
use trawl::crawl::pylogfmt::{LogFields, LogFormat, short_name};

fn data() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/logging/logging.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("recorded data")).expect("JSON")
}

#[test]
fn formats_match_python_logging() {
    let data = data();
    let vectors = data["formats"].as_array().expect("formats");
    assert!(vectors.len() > 100);
    let mut failures = Vec::new();
    for v in vectors {
        let fmt = v["fmt"].as_str().expect("fmt");
        let datefmt = v["datefmt"].as_str();
        let format = LogFormat::new(fmt, datefmt).expect("a format Python accepts");
        let fields = LogFields {
            name: v["name"].as_str().expect("name"),
            levelname: v["levelname"].as_str().expect("levelname"),
            levelno: v["levelno"].as_u64().expect("levelno") as u32,
            message: v["message"].as_str().expect("message"),
            created: v["created"].as_f64().expect("created"),
            // The recorder's fixed record attributes (see its README).
            relative_created: 1234.5678,
            pathname: "x.py",
            lineno: 1,
            func_name: None,
            process: 4242,
            process_name: "MainProcess",
            thread: 140_000_000_000_001,
            thread_name: "MainThread",
            spider: None,
        };
        let got = format.format(&fields);
        let want = v["output"].as_str().expect("output");
        if got != want {
            failures.push(format!("{fmt:?} / {datefmt:?}: {got:?} != {want:?}"));
        }
        assert_eq!(
            trawl::crawl::pylogfmt::msecs(fields.created),
            v["msecs"].as_f64().expect("msecs"),
            "msecs of {}",
            fields.created
        );
    }
    assert!(
        failures.is_empty(),
        "{} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn short_names_match_scrapys_top_level_formatter() {
    let data = data();
    for v in data["short_names"].as_array().expect("short_names") {
        let name = v["name"].as_str().expect("name");
        assert_eq!(
            short_name(name, "scrapy"),
            v["short"].as_str().expect("short"),
            "{name}"
        );
    }
}

/// Enables every level for the formatters' `log_enabled!` checks (nothing is printed).
struct Everything;

impl log::Log for Everything {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, _: &log::Record<'_>) {}
    fn flush(&self) {}
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn request(inputs: &Value) -> trawl::crawl::Request {
    let mut r = trawl::crawl::Request::get(inputs["url"].as_str().expect("url"))
        .expect("url")
        .with_method(inputs["method"].as_str().unwrap_or("GET"));
    if let Some(h) = inputs["referer_hex"].as_str() {
        r.headers_mut().append("Referer", hex(h));
    }
    for f in inputs["request_flags"].as_array().into_iter().flatten() {
        r.add_flag(f.as_str().expect("flag"));
    }
    r
}

fn response(inputs: &Value, request: trawl::crawl::Request) -> trawl::crawl::Response {
    trawl::crawl::response::ResponseBuilder {
        url: url::Url::parse(inputs["response_url"].as_str().expect("response_url")).expect("url"),
        status: inputs["response_status"].as_u64().expect("status") as u16,
        headers: trawl::proto::Headers::new(),
        body: bytes::Bytes::new(),
        request,
        flags: inputs["response_flags"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| f.as_str().expect("flag").to_owned())
            .collect(),
        ip: None,
        protocol: None,
    }
    .build()
}

fn item(inputs: &Value) -> trawl::crawl::Item {
    let mut item = trawl::crawl::Item::new();
    for pair in inputs["item"].as_array().expect("item") {
        item.set(pair[0].as_str().expect("key"), pair[1].clone());
    }
    item
}

#[test]
fn log_formatter_lines_match_scrapys() {
    use trawl::crawl::errors::DropItem;
    use trawl::crawl::logformatter::{LogFormatter, ScrapyLogFormatter};
    let _ = log::set_boxed_logger(Box::new(Everything));
    log::set_max_level(log::LevelFilter::Trace);
    let data = data();
    let f = ScrapyLogFormatter;
    let (mut checked, mut skipped) = (0, Vec::new());
    for v in data["logformatter"].as_array().expect("logformatter") {
        let inputs = &v["inputs"];
        let method = v["method"].as_str().expect("method");
        // trawl's items are dicts (an ordered JSON map): Scrapy's `Item` (pformat,
        // sorted keys) and dataclass reprs have no trawl counterpart; a Failure as the
        // "response" of an errback's item neither (trawl logs `<spider>.start`).
        let item_type = inputs["item_type"].as_str().unwrap_or("dict");
        if item_type != "dict" || inputs["response"].as_str() == Some("Failure") {
            skipped.push(format!("{method} ({item_type})"));
            continue;
        }
        let line = match method {
            "crawled" => {
                let req = request(inputs);
                f.crawled(&req, &response(inputs, req.clone()))
            }
            "scraped" => {
                let resp = inputs.get("response_url").map(|_| {
                    response(
                        inputs,
                        trawl::crawl::Request::get("http://x.test/").expect("url"),
                    )
                });
                f.scraped(
                    &item(inputs),
                    resp.as_ref(),
                    "myproject.spiders.quotes.QuotesSpider",
                )
            }
            "dropped" => {
                let mut drop = DropItem::new(inputs["exception"].as_str().expect("exception"));
                if let Some(level) = inputs["exception_log_level"].as_str() {
                    drop = drop.with_log_level(level);
                }
                let default = match &inputs["DEFAULT_DROPITEM_LOG_LEVEL"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let default = trawl::crawl::logging::level_from_name(&default).expect("a level");
                f.dropped(&item(inputs), &drop, None, default)
            }
            "item_error" => f.item_error(
                &item(inputs),
                &trawl::defer::Failure::msg(inputs["exception"].as_str().expect("exception")),
                None,
            ),
            "spider_error" => {
                let req = request(inputs);
                f.spider_error(&trawl::defer::Failure::msg("boom"), &req, None)
            }
            "download_error" => f.download_error(
                &trawl::defer::Failure::msg("no such host"),
                &request(inputs),
                inputs["errmsg"].as_str(),
            ),
            other => panic!("unknown method {other}"),
        }
        .unwrap_or_else(|| panic!("{method} logs a line"));
        let want_level =
            trawl::crawl::logging::level_from_name(v["level"].as_str().expect("level"))
                .expect("level");
        assert_eq!(line.level, want_level, "{method} {inputs}");
        assert_eq!(
            line.message,
            v["formatted"].as_str().expect("formatted"),
            "{method} {inputs}"
        );
        checked += 1;
    }
    println!("{checked} LogFormatter lines identical; skipped: {skipped:?}");
    assert!(checked >= 28, "{checked} checked");
    assert!(skipped.len() <= 6, "{skipped:?}");
}
