//! `Selection::re` / `re_first` against parsel 1.12, recorded by
//! `tests/data/select/gen_re.py` (`re.json`): parsel's group rules and w3lib's
//! `replace_entities` (HTML 4 names, numeric references, windows-1252 for 0x80–0x9F,
//! U+FFFD for NUL and surrogates, illegal references dropped when they end with `;`).

use serde_json::Value;
use trawl::crawl::{Request, Response};
use trawl::proto::Headers;

#[test]
fn re_matches_parsel() {
    let data: Value = serde_json::from_str(include_str!("data/select/re.json")).expect("re.json");
    let mut headers = Headers::new();
    headers.append("Content-Type", "text/html; charset=utf-8");
    let page = data["page"].as_str().expect("page");
    let r = Response::new(
        Request::get("http://example.com/").expect("url"),
        200,
        headers,
        page.as_bytes().to_vec(),
    );
    let cases = data["cases"].as_array().expect("cases");
    assert!(cases.len() >= 20);
    let mut wrong = Vec::new();
    for case in cases {
        let css = case["css"].as_str().expect("css");
        let pattern = case["regex"].as_str().expect("regex");
        let replace = case["replace_entities"].as_bool().expect("flag");
        let regex = regex::Regex::new(pattern).expect("a pattern both engines read");
        let sel = r.css(css);
        let all = sel.re_with(&regex, replace);
        let theirs: Vec<String> = serde_json::from_value(case["result"]["re"].clone()).expect("re");
        if all != theirs {
            wrong.push(format!(
                "{css} {pattern:?}: ours {all:?}\n  parsel {theirs:?}"
            ));
        }
        if replace {
            let first = sel.re_first(pattern).expect("compiles");
            let theirs_first = case["result"]["re_first"].as_str().map(str::to_owned);
            if first != theirs_first {
                wrong.push(format!(
                    "{css} {pattern:?} first: ours {first:?}, parsel {theirs_first:?}"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(
        r.css("p").re("(?<=x)y").is_err(),
        "look-behind is not Rust regex syntax"
    );
}
