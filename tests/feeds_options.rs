//! The `FEEDS` options against what Scrapy 2.19 did in real crawls
//! (`tests/data/feeds/record_options.py` → `options_cases.json`): the XML exporter,
//! `store_empty`, URI placeholders, batches, `item_export_kwargs`, storages by scheme,
//! `overwrite`, and the `-o` / `-O` parsing. Each case runs a real crawl with the
//! case's settings and spider and compares every file the crawl leaves in the case's
//! directory, byte for byte, and the `feedexport/*` stats. Where trawl refuses a feed
//! at start-up that Scrapy runs with errors (DESIGN.md §15), the table
//! [`REFUSED_AT_START`] says so and the test checks the refusal.

mod util;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use regex::Regex;
use serde_json::{Map, Value, json};
use trawl::crawl::downloader::handlers::DownloadHandler;
use trawl::crawl::{
    CallbackResult, Crawler, Item, Output, Priority, Registry, Request, Response, Settings, Spider,
};
use trawl::reactor::ManualClock;

const DATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/feeds/options_cases.json"
);

fn data() -> Value {
    let text = std::fs::read_to_string(DATA).unwrap_or_else(|e| panic!("{DATA}: {e}"));
    serde_json::from_str(&text).expect("options_cases.json")
}

/// Cases Scrapy runs (logging errors, writing nothing or an empty file) where trawl
/// refuses the feed before the crawl starts: the case, and what the refusal says.
const REFUSED_AT_START: &[(&str, &str)] = &[
    // A placeholder no parameter fills: Scrapy's KeyError in open_spider.
    ("missing_placeholder", "%(nosuch)s"),
    ("uri_params_replaces_params", "%(name)s"),
    // item_export_kwargs Scrapy fails on at every item (TypeError).
    ("json_indent_kwarg", "may not hold \"indent\""),
    ("jsonlines_indent_kwarg", "may not hold \"indent\""),
    ("json_encoding_kwarg", "may not hold \"encoding\""),
    ("jsonlines_encoding_kwarg", "may not hold \"encoding\""),
    (
        "kwargs_unknown_option",
        "unexpected options for the xml exporter: foo",
    ),
    // Postprocessing Scrapy fails on at every item (ValueError, ModuleNotFoundError).
    (
        "lzma_format_alone_check_crc32",
        "Integrity checks are only supported by FORMAT_XZ",
    ),
    (
        "unknown_plugin",
        "no plugin is registered as \"nosuch.module.Plugin\"",
    ),
];

/// Chains of postprocessing plugins: Scrapy 2.19 finishes only the first plugin's
/// stream, so its file is empty or truncated (the case's notes). trawl finishes every
/// layer: its file decompresses, layer by layer, to the feed the single-plugin case
/// named here decompresses to.
const CHAINS: &[(&str, &str)] = &[
    ("chain_gzip_then_bz2", "gzip_mtime_0"),
    ("chain_lzma_then_gzip", "gzip_mtime_0"),
];

/// Cases this test cannot run, and why (each is covered elsewhere).
const NOT_RUN_HERE: &[(&str, &str)] = &[
    // Items of Python classes: trawl's items are maps without a class, so item_classes
    // names predicates (`item_classes_name_predicates_any_of_which_accepts`).
    ("item_classes_product", "items of Python classes"),
    ("item_classes_product_review", "items of Python classes"),
    ("item_classes_dict", "items of Python classes"),
    ("item_filter_and_classes", "items of Python classes"),
    ("three_feeds", "items of Python classes"),
    (
        "s3_without_boto3",
        "Scrapy refuses s3 without boto3; trawl's s3 storage is tested against a real server",
    ),
];

/// The `uri_params` functions of `record_options.py`, as the case names them.
fn register_uri_params(registry: &mut Registry) {
    let p = registry.feed_plugins_mut();
    p.register_uri_params("record_options.uri_params_add_site", |params| {
        let upper = params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_uppercase();
        params.insert("site".into(), "example-com".into());
        params.insert("upper".into(), upper.into());
    });
    p.register_uri_params("record_options.uri_params_mutate", |params| {
        params.insert("site".into(), "mutated".into());
    });
    p.register_uri_params("record_options.uri_params_replace", |params| {
        params.clear();
        params.insert("site".into(), "only-site".into());
    });
    p.register_uri_params("record_options.uri_params_part", |params| {
        let id = params.get("batch_id").and_then(Value::as_u64).unwrap_or(0);
        params.insert("part".into(), format!("part-{id:03}").into());
    });
}

/// The item filters of `record_options.py`, as the cases name them.
fn register_item_filters(registry: &mut Registry) {
    let p = registry.feed_plugins_mut();
    p.register_item_filter("record_options.HasPriceFilter", |item, _| {
        item.get("price").is_some()
    });
    p.register_item_filter("record_options.RequiredFieldFilter", |item, options| {
        options
            .get("required_field")
            .and_then(Value::as_str)
            .is_some_and(|f| item.get(f).is_some())
    });
    p.register_item_filter("record_options.RejectAllFilter", |_, _| false);
}

/// The case's spider: its name and attributes; its items from `start()`, or (when the
/// case reads the clock more than once) one per response of a chain of requests 0.1 s
/// apart, so that batches start at different instants.
struct CaseSpider {
    name: String,
    attrs: Map<String, Value>,
    items: Vec<Item>,
    chained: bool,
}

impl Spider for CaseSpider {
    fn name(&self) -> &str {
        &self.name
    }

    fn attributes(&self) -> Map<String, Value> {
        self.attrs.clone()
    }

    fn start(&mut self) -> trawl::crawl::Outputs {
        if self.chained {
            let first = Request::get("http://example.com/0").expect("a URL");
            return Box::new(std::iter::once(Ok(Output::Request(first))));
        }
        Box::new(self.items.clone().into_iter().map(|i| Ok(Output::Item(i))))
    }

    fn parse(&mut self, response: &Response) -> CallbackResult {
        let n: usize = response
            .url()
            .as_str()
            .rsplit('/')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let mut out = Vec::new();
        if let Some(item) = self.items.get(n) {
            out.push(Output::Item(item.clone()));
            let next = Request::get(&format!("http://example.com/{}", n + 1)).expect("a URL");
            out.push(Output::Request(next));
        }
        Ok(out)
    }
}

/// Answers every request at once after 0.1 s with an empty page.
struct Instant;

impl DownloadHandler for Instant {
    fn download_request(&self, request: &Request) -> trawl::defer::Deferred<Response> {
        let r = Response::new(
            request.clone(),
            200,
            trawl::proto::Headers::new(),
            Vec::<u8>::new(),
        );
        trawl::defer::succeed(r)
    }
}

/// Replaces `{dir}` in every string of `v`.
fn with_dir(v: &Value, dir: &str) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace("{dir}", dir)),
        Value::Array(a) => Value::Array(a.iter().map(|x| with_dir(x, dir)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.replace("{dir}", dir), with_dir(x, dir)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Seconds since the Unix epoch of an ISO time `2026-12-04T21:10:41.123456+00:00`.
fn iso_to_unix(s: &str) -> (i64, u32) {
    let re =
        Regex::new(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{6}))?\+00:00$").unwrap();
    let c = re
        .captures(s)
        .unwrap_or_else(|| panic!("a clock instant: {s}"));
    let n = |i: usize| c.get(i).map_or(0, |m| m.as_str().parse::<i64>().unwrap());
    let (y, m, d) = (n(1), n(2), n(3));
    let days = trawl::proto::date::days_from_civil(y, m, d);
    (days * 86_400 + n(4) * 3600 + n(5) * 60 + n(6), n(7) as u32)
}

/// Every file under `dir`, by path relative to it.
fn files_under(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn expected_files(case: &Value) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    if let Some(m) = case["files"].as_object() {
        for (k, v) in m {
            out.insert(k.clone(), v.as_str().unwrap().as_bytes().to_vec());
        }
    }
    if let Some(m) = case.get("files_b64").and_then(Value::as_object) {
        for (k, v) in m {
            out.insert(
                k.clone(),
                trawl::util::base64_decode(v.as_str().unwrap()).unwrap(),
            );
        }
    }
    out
}

/// Scrapy's file name as a pattern: the times it made from the recorded clock
/// instants (or marked `<time>` / `<batch_time>`) match any time of that form.
fn name_pattern(name: &str, case: &Value, formats: &Value) -> Regex {
    let mut pattern = regex::escape(name);
    let time_re = formats["time_regex"].as_str().unwrap();
    let batch_re = formats["batch_time_regex"].as_str().unwrap();
    pattern = pattern.replace(&regex::escape("<batch_time>"), batch_re);
    pattern = pattern.replace(&regex::escape("<time>"), time_re);
    for instant in case["clock"].as_array().into_iter().flatten() {
        let (_, micros) = iso_to_unix(instant.as_str().unwrap());
        let iso = |with_micros: bool| {
            let base = &instant.as_str().unwrap()[..19];
            let frac = if with_micros && micros != 0 {
                format!(".{micros:06}")
            } else {
                String::new()
            };
            format!("{base}{frac}+00:00").replace(':', "-")
        };
        pattern = pattern.replace(&regex::escape(&iso(true)), batch_re);
        pattern = pattern.replace(&regex::escape(&iso(false)), time_re);
    }
    Regex::new(&format!("^{pattern}$")).unwrap()
}

/// Undoes one plugin's layer.
fn decompress_layer(plugin: &str, options: &Value, bytes: &[u8]) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut out = Vec::new();
    let name = plugin.rsplit('.').next().unwrap_or(plugin);
    let read = match name {
        "GzipPlugin" => flate2::read::GzDecoder::new(bytes).read_to_end(&mut out),
        "Bz2Plugin" => bzip2::read::BzDecoder::new(bytes).read_to_end(&mut out),
        "LZMAPlugin" => {
            use liblzma::stream::{Filters, LzmaOptions, Stream};
            let stream = match options["lzma_format"].as_i64() {
                None | Some(1) => Stream::new_stream_decoder(u64::MAX, 0),
                Some(2) => Stream::new_lzma_decoder(u64::MAX),
                Some(3) => {
                    // The recorded raw cases use one LZMA2 filter at preset 6.
                    assert_eq!(options["lzma_filters"], json!([{"id": 33, "preset": 6}]));
                    let mut f = Filters::new();
                    f.lzma2(&LzmaOptions::new_preset(6).map_err(|e| e.to_string())?);
                    Stream::new_raw_decoder(&f)
                }
                Some(other) => return Err(format!("lzma_format {other}")),
            }
            .map_err(|e| e.to_string())?;
            liblzma::read::XzDecoder::new_stream(bytes, stream).read_to_end(&mut out)
        }
        other => return Err(format!("no decompressor for {other}")),
    };
    read.map_err(|e| format!("{name}: {e}"))?;
    Ok(out)
}

/// A gzip member's header fields as the recorder reports them.
fn gzip_header(bytes: &[u8]) -> Value {
    let flags = bytes[3];
    let fname = if flags & 8 != 0 {
        let end = bytes[10..].iter().position(|b| *b == 0).unwrap() + 10;
        Value::String(bytes[10..end].iter().map(|b| char::from(*b)).collect())
    } else {
        Value::Null
    };
    json!({
        "flags": flags,
        "fname": fname,
        "mtime": u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
        "xfl": bytes[8],
        "os": bytes[9],
    })
}

/// A postprocessing case: each recorded file's decompressed bytes (and gzip header)
/// against trawl's file of the same name, undone layer by layer.
fn check_compressed(
    case: &Value,
    got: &BTreeMap<String, Vec<u8>>,
    all: &[Value],
) -> Result<(), String> {
    let name = case["name"].as_str().unwrap();
    let feeds = case["settings"]["FEEDS"].as_object().unwrap();
    let (_, options) = feeds.iter().next().unwrap();
    let plugins: Vec<&str> = options["postprocessing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    let mut want: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    match CHAINS.iter().find(|(n, _)| *n == name) {
        Some((_, reference)) => {
            let r = all.iter().find(|c| c["name"] == *reference).unwrap();
            let (_, text) = r["decompressed"]
                .as_object()
                .unwrap()
                .iter()
                .next()
                .unwrap();
            let file = expected_files(case).into_keys().next().unwrap_or_else(|| {
                feeds
                    .keys()
                    .next()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_owned()
            });
            want.insert(file, text.as_str().unwrap().as_bytes().to_vec());
        }
        None => {
            for (file, text) in case["decompressed"].as_object().unwrap() {
                want.insert(file.clone(), text.as_str().unwrap().as_bytes().to_vec());
            }
        }
    }
    if got.keys().collect::<Vec<_>>() != want.keys().collect::<Vec<_>>() {
        return Err(format!(
            "files: trawl {:?}, Scrapy {:?}",
            got.keys(),
            want.keys()
        ));
    }
    for (file, plain) in &want {
        let mut bytes = got[file].clone();
        if plugins.last().is_some_and(|p| p.ends_with("GzipPlugin"))
            && let Some(h) = case
                .get("gzip_header")
                .filter(|_| !CHAINS.iter().any(|(n, _)| *n == name))
        {
            let mut ours = gzip_header(&bytes);
            if h["mtime"] == "time-dependent" {
                ours["mtime"] = h["mtime"].clone();
            }
            if &ours != h {
                return Err(format!("gzip header: trawl {ours}, Scrapy {h}"));
            }
        }
        for plugin in plugins.iter().rev() {
            bytes = decompress_layer(plugin, options, &bytes)?;
        }
        if &bytes != plain {
            return Err(format!(
                "{file} decompressed: trawl {:?}, Scrapy {:?}",
                String::from_utf8_lossy(&bytes),
                String::from_utf8_lossy(plain)
            ));
        }
    }
    Ok(())
}

struct Outcome {
    files: BTreeMap<String, Vec<u8>>,
    stats: BTreeMap<String, i64>,
}

/// Runs one case; `Err` is trawl's refusal to start.
fn run_case(case: &Value, dir: &Path) -> Result<Outcome, String> {
    let dir_s = dir.to_str().unwrap();
    for (name, text) in case
        .get("pre_files")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text.as_str().unwrap()).unwrap();
    }
    // An instance of a Python class is its fields here (trawl's items are maps).
    let items: Vec<Item> = case["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| match v.get("__item_class__") {
            Some(_) => Item(v["fields"].as_object().unwrap().clone()),
            None => Item(v.as_object().unwrap().clone()),
        })
        .collect();
    let clock_calls = case.get("clock_calls").and_then(Value::as_u64).unwrap_or(0);
    let spider = CaseSpider {
        name: case["spider"]["name"].as_str().unwrap().to_owned(),
        attrs: case["spider"]
            .get("attrs")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        items,
        chained: clock_calls > 1,
    };
    let clock = ManualClock::new();
    if let Some(first) = case.get("clock").and_then(|c| c[0].as_str()) {
        let (secs, micros) = iso_to_unix(first);
        clock.advance(secs as f64);
        clock.advance(f64::from(micros) / 1e6);
    }
    let mut registry = Registry::with_builtins();
    registry.register_handler("test.Instant", |_| {
        Ok(Rc::new(Instant) as Rc<dyn DownloadHandler>)
    });
    register_uri_params(&mut registry);
    register_item_filters(&mut registry);
    let args: Vec<(String, String)> = case["spider"]
        .get("kwargs")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
        .collect();
    registry.set_spider_arguments(args);
    let mut st = Settings::new();
    for (k, v) in [
        ("DOWNLOAD_HANDLERS", json!({"http": "test.Instant"})),
        ("LOGSTATS_INTERVAL", json!(0)),
        ("ROBOTSTXT_OBEY", json!(false)),
        ("CONCURRENT_REQUESTS", json!(1)),
        ("DOWNLOAD_DELAY", json!(0.1)),
        ("RANDOMIZE_DOWNLOAD_DELAY", json!(false)),
        // Scrapy's default (trawl's is utf-8).
        ("FEED_EXPORT_ENCODING", Value::Null),
    ] {
        st.set(k, v, Priority::Project);
    }
    for (k, v) in case["settings"].as_object().unwrap() {
        st.set(k, with_dir(v, dir_s), Priority::Project);
    }
    let crawler = Crawler::new(Box::new(spider), st, clock.clock(), None, registry)
        .map_err(|f| f.to_string())?;
    let done = crawler.crawl();
    let mut t = 0.0;
    while !done.has_result() && t < 100.0 {
        clock.advance(0.05);
        t += 0.05;
    }
    assert!(done.has_result(), "the crawl finished");
    let stats = crawler
        .stats
        .get_stats()
        .into_iter()
        .filter(|(k, _)| k.starts_with("feedexport/"))
        .filter_map(|(k, v)| v.as_i64().map(|v| (k, v)))
        .collect();
    drop(crawler);
    Ok(Outcome {
        files: files_under(dir),
        stats,
    })
}

fn check_case(case: &Value, formats: &Value, dir: &Path, all: &[Value]) -> Result<(), String> {
    let name = case["name"].as_str().unwrap();
    let refused = REFUSED_AT_START.iter().find(|(n, _)| *n == name);
    let outcome = run_case(case, dir);
    let enabled = case["feed_exporter_enabled"].as_bool().unwrap_or(true);
    match (outcome, refused, enabled) {
        (Err(e), Some((_, says)), _) => {
            if e.contains(says) {
                Ok(())
            } else {
                Err(format!("refused, but: {e}"))
            }
        }
        (Ok(_), Some(_), _) => Err("trawl ran a feed it should refuse".into()),
        (Err(e), None, false) => {
            // Scrapy disabled the exporter: trawl refuses with Scrapy's message.
            let logged = case["logs"][0].as_str().unwrap_or_default();
            let message = logged.split_once(": ").map_or(logged, |(_, m)| m);
            let message = message.replace("{dir}", dir.to_str().unwrap());
            if e.contains(&message) {
                Ok(())
            } else {
                Err(format!("refused with {e:?}, Scrapy said {message:?}"))
            }
        }
        (Err(e), None, true) => Err(format!("refused: {e}")),
        (Ok(_), None, false) => Err("ran; Scrapy disabled the feeds".into()),
        (Ok(outcome), None, true)
            if case["settings"]["FEEDS"]
                .to_string()
                .contains("postprocessing") =>
        {
            check_compressed(case, &outcome.files, all)
        }
        (Ok(outcome), None, true) => {
            let want = expected_files(case);
            let mut problems = Vec::new();
            // Scrapy's files matched to trawl's by content, then by name (exact, or a
            // pattern where the name holds a clock reading).
            let mut got = outcome.files.clone();
            for (wname, wbytes) in &want {
                let pattern = name_pattern(wname, case, formats);
                let found = got
                    .iter()
                    .find(|(n, b)| *b == wbytes && (*n == wname || pattern.is_match(n)))
                    .map(|(n, _)| n.clone());
                match found {
                    Some(n) => {
                        got.remove(&n);
                    }
                    None => problems.push(format!(
                        "missing {wname}: {:?}\n    trawl wrote: {:?}",
                        String::from_utf8_lossy(wbytes),
                        outcome
                            .files
                            .iter()
                            .map(|(n, b)| (n.clone(), String::from_utf8_lossy(b).into_owned()))
                            .collect::<Vec<_>>()
                    )),
                }
            }
            for n in got.keys() {
                problems.push(format!("trawl wrote {n}, Scrapy did not"));
            }
            let want_stats: BTreeMap<String, i64> = case["stats"]
                .as_object()
                .unwrap()
                .iter()
                .filter(|(k, _)| {
                    k.starts_with("feedexport/success_count/")
                        || k.starts_with("feedexport/failed_count/")
                })
                .map(|(k, v)| (k.clone(), v.as_i64().unwrap()))
                .collect();
            let got_stats: BTreeMap<String, i64> = outcome
                .stats
                .into_iter()
                .filter(|(k, _)| {
                    k.starts_with("feedexport/success_count/")
                        || k.starts_with("feedexport/failed_count/")
                })
                .collect();
            if want_stats != got_stats {
                problems.push(format!("stats: trawl {got_stats:?}, Scrapy {want_stats:?}"));
            }
            if problems.is_empty() {
                Ok(())
            } else {
                Err(problems.join("\n  "))
            }
        }
    }
}

fn run_group(group: &str) {
    let data = data();
    let formats = &data["time_formats"];
    let cases = data["groups"][group]
        .as_array()
        .unwrap_or_else(|| panic!("group {group}"));
    assert_eq!(
        Some(cases.len() as u64),
        data["case_counts"][group].as_u64(),
        "{group}: every recorded case is read"
    );
    let root =
        std::env::temp_dir().join(format!("trawl-feed-options-{group}-{}", std::process::id()));
    let mut failures = Vec::new();
    let mut ran = 0;
    for (i, case) in cases.iter().enumerate() {
        let name = case["name"].as_str().unwrap();
        if case.get("cli").is_some() || case.get("stdout").is_some() {
            continue; // the command-line and stdout cases: tests/feeds_cli.rs
        }
        if NOT_RUN_HERE.iter().any(|(n, _)| *n == name) {
            continue;
        }
        let relative = case["settings"]["FEEDS"]
            .as_object()
            .is_some_and(|f| f.keys().any(|k| !k.starts_with('{') && !k.contains("://")));
        if relative {
            continue; // relative_feed_paths_are_relative_to_the_working_directory
        }
        let dir: PathBuf = root.join(format!("{i:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        if let Err(e) = check_case(case, formats, &dir, cases) {
            failures.push(format!("{group}/{name}:\n  {e}"));
        }
        ran += 1;
    }
    let _ = std::fs::remove_dir_all(&root);
    assert!(ran > 0, "{group}: no case ran");
    assert!(
        failures.is_empty(),
        "{} of {ran} {group} cases differ from Scrapy:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn xml_feeds_match_scrapys_xml_exporter() {
    run_group("xml");
}

#[test]
fn store_empty_matches_scrapy() {
    run_group("store_empty");
}

#[test]
fn uri_placeholders_match_scrapy() {
    run_group("uri_placeholders");
}

#[test]
fn batches_match_scrapy() {
    run_group("batches");
}

#[test]
fn item_export_kwargs_match_scrapy() {
    run_group("item_export_kwargs");
}

#[test]
fn postprocessing_matches_scrapy() {
    run_group("postprocessing");
}

#[test]
fn item_filters_match_scrapy() {
    run_group("item_filter");
}

/// `item_classes`: the names of registered predicates; an item passes when any of
/// them accepts it, an empty list accepts everything (Scrapy's `isinstance` of any
/// class, and its empty tuple).
#[test]
fn item_classes_name_predicates_any_of_which_accepts() {
    let dir = std::env::temp_dir().join(format!("trawl-feed-classes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let items: Vec<Item> = [
        json!({"kind": "product", "name": "p1"}),
        json!({"kind": "offer", "name": "o1"}),
        json!({"kind": "review", "name": "r1"}),
    ]
    .into_iter()
    .map(|v| Item(v.as_object().unwrap().clone()))
    .collect();
    let file = |n: &str| dir.join(n).to_str().unwrap().to_owned();
    let feeds = json!({
        file("some.jl"): {"format": "jsonlines", "item_classes": ["my.Product", "my.Review"]},
        file("all.jl"): {"format": "jsonlines", "item_classes": []},
    });
    let mut registry = Registry::with_builtins();
    for (name, kind) in [("my.Product", "product"), ("my.Review", "review")] {
        registry
            .feed_plugins_mut()
            .register_item_filter(name, move |item, _| item.get("kind") == Some(&json!(kind)));
    }
    let mut st = Settings::new();
    st.set("FEEDS", feeds, Priority::Project);
    st.set("LOGSTATS_INTERVAL", 0, Priority::Project);
    let spider = CaseSpider {
        name: "classes".into(),
        attrs: Map::new(),
        items,
        chained: false,
    };
    let clock = ManualClock::new();
    let crawler = Crawler::new(Box::new(spider), st, clock.clock(), None, registry).unwrap();
    let done = crawler.crawl();
    while !done.has_result() {
        clock.advance(0.05);
    }
    let names = |f: &str| -> Vec<String> {
        std::fs::read_to_string(dir.join(f))
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["name"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    };
    assert_eq!(names("some.jl"), ["p1", "r1"]);
    assert_eq!(names("all.jl"), ["p1", "o1", "r1"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn overwrite_matches_scrapy() {
    run_group("overwrite");
}

#[test]
fn formats_and_schemes_match_scrapy() {
    run_group("unknown_schemes");
}

/// `rel/%(name)s.jl`: relative to the working directory, as in Scrapy. The only test
/// of this file that uses a relative path (the others write under absolute
/// directories, so changing the directory does not touch them).
#[test]
fn relative_feed_paths_are_relative_to_the_working_directory() {
    let data = data();
    let case = data["groups"]["uri_placeholders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "relative_path")
        .expect("the relative_path case")
        .clone();
    let dir = std::env::temp_dir().join(format!("trawl-feed-relative-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let before = std::env::current_dir().unwrap();
    std::env::set_current_dir(&dir).unwrap();
    let result = check_case(&case, &data["time_formats"], &dir, &[]);
    std::env::set_current_dir(before).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    result.unwrap();
}

/// `-o` / `-O` values → `FEEDS`, as Scrapy's `feed_process_params_from_cli` makes them
/// (its list of formats in the messages is replaced by trawl's).
#[test]
fn output_options_parse_as_scrapy_parses_them() {
    let data = data();
    let known = trawl::crawl::extensions::feedexport::known_formats(&Settings::new()).unwrap();
    let scrapy_list = Regex::new(r"\(\('[^)]*\)\)").unwrap();
    let ours = format!(
        "(({}))",
        known
            .iter()
            .map(|f| format!("'{f}'"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut checked = 0;
    for case in data["cli_params"].as_array().unwrap() {
        if case.get("settings_FEEDS").is_some() {
            continue; // the merge with FEEDS from settings: apply_common, below
        }
        let flag = case["flag"].as_str().unwrap();
        let (o, big_o): (Vec<String>, Vec<String>) = match flag {
            "-o" | "-O" => {
                let values: Vec<String> = case["values"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_owned())
                    .collect();
                if flag == "-o" {
                    (values, Vec::new())
                } else {
                    (Vec::new(), values)
                }
            }
            _ => {
                let v = |i: usize| -> Vec<String> {
                    case["values"][i]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_str().unwrap().to_owned())
                        .collect()
                };
                (v(0), v(1))
            }
        };
        let got = trawl::cli::feed_process_params_from_cli(&o, &big_o, &known);
        match (got, case.get("feeds"), case.get("usage_error")) {
            (Ok(feeds), Some(want), None) => assert_eq!(&Value::Object(feeds), want, "{case}"),
            (Err(e), None, Some(want)) => {
                let want = scrapy_list.replace(want.as_str().unwrap(), regex::NoExpand(&ours));
                assert_eq!(e, want, "{case}");
            }
            (got, _, _) => panic!("{case}: trawl gave {got:?}"),
        }
        checked += 1;
    }
    assert!(checked >= 40, "{checked} cases");
}
