//! `LinkExtractor` URLs against Scrapy 2.19's, recorded by
//! `tests/data/urls/gen_linkextract.py`: each odd href of the URL corpus on six pages
//! (UTF-8, latin-1, cp1251, iso-8859-15, shift_jis, `<base href>`), one link per page
//! and all of them on one page; the request a spider builds from each link; the
//! canonicalising extractor; and Scrapy's filters (`allow_domains`, `deny_extensions`,
//! `allow`/`deny`, `restrict_text`, `process_value`, `unique`) on one page.

use serde_json::Value;
use trawl::crawl::{LinkExtractor, Request, Response};
use trawl::proto::Headers;

/// A recorded file of `tests/data/urls/`.
fn load(file: &str) -> Value {
    let path = format!("{}/tests/data/urls/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}

fn response(url: &str, content_type: &str, body: Vec<u8>) -> Response {
    let mut headers = Headers::new();
    headers.append("Content-Type", content_type);
    Response::new(Request::get(url).expect("page url"), 200, headers, body)
}

fn urls(links: &[trawl::crawl::Link]) -> Vec<String> {
    links.iter().map(|l| l.url.clone()).collect()
}

/// Hosts the network layer cannot connect to (DESIGN.md §15): Scrapy builds a
/// request, trawl's `Request::get` refuses it.
fn stricter(url: &str) -> bool {
    url.contains("exa mple") || url.contains("%25eth0")
}

#[test]
fn link_urls_match_scrapy_on_the_recorded_hrefs() {
    let data = load("linkextract.json");
    let bases = data["bases"].as_array().expect("bases");
    let cases = data["cases"].as_array().expect("cases");
    assert!(cases.len() > 1000, "the corpus is there");
    let mut wrong = Vec::new();
    let mut refused = 0;
    for case in cases {
        let base = bases
            .iter()
            .find(|b| b["name"] == case["base"])
            .expect("base");
        let r = response(
            base["url"].as_str().unwrap(),
            base["content_type"].as_str().unwrap(),
            unhex(case["body_hex"].as_str().unwrap()),
        );
        let label = format!("{} {:?}", case["base"], case["hrefs"]);
        let ours = urls(&LinkExtractor::new().extract_links(&r));
        let theirs: Vec<String> = serde_json::from_value(case["links"].clone()).expect("links");
        if ours != theirs {
            wrong.push(format!(
                "{label}: links\n  ours   {ours:?}\n  scrapy {theirs:?}"
            ));
            continue;
        }
        for (url, want) in ours
            .iter()
            .zip(case["request"].as_array().expect("request"))
        {
            let got = Request::get(url).map(|r| r.url_str().to_owned());
            match (&got, want) {
                (Ok(a), Value::String(b)) if a == b => {}
                (Err(_), Value::Object(_)) => {}
                (Err(_), Value::String(_)) if stricter(url) => refused += 1,
                _ => wrong.push(format!("{label}: request({url:?}) {got:?}, scrapy {want}")),
            }
        }
        let canon = urls(&LinkExtractor::new().canonicalize(true).extract_links(&r));
        let theirs: Vec<String> = serde_json::from_value(case["canon"].clone()).expect("canon");
        if canon != theirs {
            wrong.push(format!(
                "{label}: canon\n  ours   {canon:?}\n  scrapy {theirs:?}"
            ));
        }
    }
    // Two stricter hrefs on each of the six pages, alone and on the all-links page.
    assert_eq!(refused, 24, "requests refused on purpose");
    assert!(
        wrong.is_empty(),
        "{} differences:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

fn extractor(name: &str) -> LinkExtractor {
    let le = LinkExtractor::new();
    match name {
        "default" => le,
        "not_unique" => le.unique(false),
        "canonicalize" => le.canonicalize(true),
        "allow_domains" => le.allow_domains(["example.com"]),
        "allow_domains_port" => le.allow_domains(["example.com:8080"]),
        "allow_domains_upper" => le.allow_domains(["EXAMPLE.COM", "other.org"]),
        "deny_domains" => le.deny_domains(["example.com"]),
        "deny_extensions_none" => le.deny_extensions(Vec::<String>::new()),
        "deny_extensions_txt" => le.deny_extensions(["txt", "html"]),
        "allow" => le.allow(&["/d", "w$"]).expect("allow"),
        "deny" => le.deny(&[r"example\.com"]).expect("deny"),
        "allow_deny" => le
            .allow(&["example"])
            .expect("allow")
            .deny(&["/w"])
            .expect("deny"),
        "restrict_text" => le.restrict_text(&["again|bold"]).expect("text"),
        "restrict_text_not_unique" => le.restrict_text(&["again"]).expect("text").unique(false),
        "tags_attrs" => le.tags(["a", "area", "p"]).attrs(["href", "alt"]),
        "process_value_replace" => le.process_value(|v| Some(v.replace('x', "q"))),
        "process_value_js" => le.process_value(|v| {
            let rest = v.split_once("javascript:go('")?.1;
            Some(rest.split_once('\'')?.0.to_owned())
        }),
        other => panic!("no extractor for the recorded case {other}"),
    }
}

#[test]
fn link_extractor_filters_match_scrapy() {
    let data = load("linkextract.json");
    let r = response(
        data["options_url"].as_str().unwrap(),
        "text/html; charset=utf-8",
        data["options_body"].as_str().unwrap().as_bytes().to_vec(),
    );
    let cases = data["options"].as_array().expect("options");
    assert!(cases.len() >= 17);
    let mut wrong = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let ours: Vec<(String, String, bool, String)> = extractor(name)
            .extract_links(&r)
            .into_iter()
            .map(|l| (l.url, l.text, l.nofollow, l.fragment))
            .collect();
        let theirs: Vec<(String, String, bool, String)> = case["links"]
            .as_array()
            .expect("links")
            .iter()
            .map(|l| {
                (
                    l["url"].as_str().unwrap().to_owned(),
                    l["text"].as_str().unwrap().to_owned(),
                    l["nofollow"].as_bool().unwrap(),
                    l["fragment"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        if ours != theirs {
            wrong.push(format!("{name}:\n  ours   {ours:?}\n  scrapy {theirs:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `deny_extensions` against Scrapy's answers recorded by
/// `tests/data/urls/gen_extensions.py`: one link per page, a grid of paths (case,
/// params, query, fragment, dots in directories, double extensions) and lists (the
/// default, upper-case and dotted entries, entries holding a `/`, the empty one).
#[test]
fn deny_extensions_match_scrapy() {
    let data = load("extensions.json");
    let cases = data["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 306);
    let (mut denied, mut wrong) = (0, Vec::new());
    for case in cases {
        let url = case["url"].as_str().expect("url");
        let extractor = match case["extensions"].as_array() {
            None => LinkExtractor::new(),
            Some(exts) => LinkExtractor::new()
                .deny_extensions(exts.iter().map(|e| e.as_str().expect("extension"))),
        };
        let body = format!(r#"<html><body><a href="{url}">t</a></body></html>"#);
        let page = response("http://example.com/page", "text/html", body.into_bytes());
        let dropped = extractor.extract_links(&page).is_empty();
        let expected = case["denied"].as_bool().expect("denied");
        denied += usize::from(expected);
        if dropped != expected {
            wrong.push(format!("{} {url}: dropped {dropped}", case["list"]));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    // Both answers are recorded, for the default list and for others.
    assert!(denied > 30 && denied < cases.len() / 2, "{denied}");
}
