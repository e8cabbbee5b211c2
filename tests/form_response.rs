//! `FormRequest::from_response` against Scrapy 2.19: every case of
//! `tests/data/requests/from_response.json` (recorded by `gen_from_response.py` from
//! the real Scrapy: its own test forms and ours) — the method, the URL, the body and
//! the Content-Type, or an error where Scrapy raises.
//!
//! Cases whose arguments Rust's types cannot express (a `formdata` that is not a
//! mapping or pairs, an explicit `method=None`) are listed in `INEXPRESSIBLE`;
//! deliberate differences in `KNOWN`, each with its reason (and a row in DESIGN.md's
//! differences table) and the exact request trawl builds for it, as that row
//! describes. A listed case that starts to agree fails the test, so the lists stay
//! true.

use serde_json::Value;
use trawl::crawl::KindError;
use trawl::crawl::{FormOptions, FormRequest, Request, Response};
use trawl::proto::Headers;

/// Arguments with no Rust spelling.
const INEXPRESSIBLE: &[(&str, &str)] = &[
    ("scrapy_invalid_formdata_int", "formdata=123: not a mapping"),
    (
        "scrapy_invalid_formdata_one_element",
        "formdata=['a']: not pairs",
    ),
    ("fd_pairs_three_elements_error", "a 3-tuple in formdata"),
    (
        "scrapy_override_method_explicit_none",
        "method=None passed explicitly",
    ),
    (
        "method_kwarg_none_with_fields",
        "method=None passed explicitly",
    ),
    (
        "method_kwarg_none_no_fields",
        "method=None passed explicitly",
    ),
    (
        "click_nr_as_string",
        "clickdata nr='1' (Scrapy asserts an int; Rust's clickdata values are strings)",
    ),
    (
        "fd_int_value_error",
        "an int formdata value (Rust's formdata values are strings)",
    ),
];

/// The request trawl builds for a deliberate difference: method, URL, body, Content-Type.
type Pinned = (&'static str, &'static str, &'static str, &'static str);

const FORM: &str = "application/x-www-form-urlencoded";

/// Deliberate differences: (case, reason, trawl's request). Each reason is a row of
/// DESIGN.md §15; the pinned request is what that row says trawl does.
const KNOWN: &[(&str, &str, Pinned)] = &[
    (
        "click_name_in_formdata_list",
        "formdata as a list of pairs: Scrapy's `name not in formdata` compares a string with \
         tuples and never matches, so the clicked button is sent as well as the formdata value; \
         trawl's formdata always acts as the mapping",
        // §15 "from_response with formdata as a list of pairs naming the clicked button":
        // the button's `s1=Go` is replaced by the formdata's `s1=over` (Scrapy sends both).
        (
            "POST",
            "http://www.example.com/c",
            "h=1&t=tv&sel=o&s1=over",
            FORM,
        ),
    ),
    (
        "click_clickdata_name_in_formdata_list",
        "the same, with clickdata",
        // The same row: `b1=bv` replaced by `b1=over`.
        (
            "POST",
            "http://www.example.com/c",
            "h=1&t=tv&sel=o&b1=over",
            FORM,
        ),
    ),
    (
        "struct_inputs_after_html_end",
        "content after </html> stays in the body in trawl's tree (DESIGN.md), so the form keeps \
         the field libxml2 moves out of it",
        // §15 "HTML: content after </body> / </html>": the field `b=2` after `</html>`
        // stays in the form (Scrapy sends `a=1` only).
        ("POST", "http://www.example.com/late", "a=1&b=2", FORM),
    ),
    (
        "enc_latin1_c1_byte_is_cp1252_euro",
        "Scrapy decodes a latin-1 page as windows-1252 but encodes form data with Python's \
         strict latin-1 codec, failing on the page's own euro sign; trawl encodes with the \
         encoding it decoded with",
        // §15 "from_response on a latin-1 / shift_jis page": the page's `€ 5` encoded as
        // windows-1252 (0x80) where Scrapy raises UnicodeEncodeError.
        (
            "POST",
            "http://www.example.com/this/list.html",
            "a=%80+5",
            FORM,
        ),
    ),
    (
        "enc_shift_jis_wave_dash_cp932_decoding",
        "the same for shift_jis (decoded as cp932)",
        // The same row: `1～2` with U+FF5E as cp932's 0x81 0x60.
        (
            "POST",
            "http://www.example.com/this/list.html",
            "a=1%81%602",
            FORM,
        ),
    ),
    (
        "enc_shift_jis_formdata_cp932_only_char",
        "the same for shift_jis (decoded as cp932)",
        // The same row: every field in cp932, `①` (only in cp932) as 0x87 0x40.
        (
            "POST",
            "http://www.example.com/%E6%A4%9C%E7%B4%A2",
            "%96%BC%91O=%8ER%93c%91%BE%98Y&kana=%B6%C0%B6%C5\
             &%96%7B%95%B6=%93%FA%96%7B%8C%EA%83e%83L%83X%83g\
             &%91%97%90M=%91%97%90M%82%B7%82%E9&%92%C7%89%C1=%87%40",
            FORM,
        ),
    ),
];

/// `formdata` pairs (`None` removes a field).
type Formdata = Vec<(String, Option<String>)>;
/// `clickdata` pairs.
type Clickdata = Option<Vec<(String, String)>>;

fn opts_strs(kwargs: &Value) -> (Formdata, Clickdata) {
    let mut formdata = Vec::new();
    let mut push = |k: &str, v: &Value| match v {
        Value::Null => formdata.push((k.to_owned(), None)),
        Value::String(s) => formdata.push((k.to_owned(), Some(s.clone()))),
        Value::Array(items) if items.is_empty() => formdata.push((k.to_owned(), None)),
        Value::Array(items) => {
            for i in items {
                formdata.push((k.to_owned(), i.as_str().map(str::to_owned)));
            }
        }
        other => formdata.push((k.to_owned(), Some(other.to_string()))),
    };
    match &kwargs["formdata"] {
        Value::Object(map) => {
            for (k, v) in map {
                push(k, v);
            }
        }
        Value::Array(pairs) => {
            for p in pairs {
                push(p[0].as_str().expect("pair key"), &p[1]);
            }
        }
        _ => {}
    }
    let clickdata = kwargs["clickdata"].as_object().map(|m| {
        m.iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (k.clone(), v)
            })
            .collect()
    });
    (formdata, clickdata)
}

fn response(case: &Value) -> Response {
    let label = case["encoding"].as_str().unwrap_or("utf-8");
    let hex = case["body_hex"].as_str().expect("body_hex");
    let body: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect();
    let mut headers = Headers::new();
    headers.append("Content-Type", format!("text/html; charset={label}"));
    let req = Request::get(case["url"].as_str().expect("url")).expect("page url");
    Response::new(req, 200, headers, body)
}

fn run(case: &Value) -> Result<Request, KindError> {
    let kwargs = &case["kwargs"];
    let (formdata, clickdata) = opts_strs(kwargs);
    let s = |k: &str| kwargs[k].as_str();
    let opts = FormOptions {
        formname: s("formname"),
        formid: s("formid"),
        formnumber: kwargs["formnumber"].as_i64().unwrap_or(0) as isize,
        formxpath: s("formxpath"),
        formcss: s("formcss"),
        formdata: formdata
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_deref()))
            .collect(),
        clickdata: clickdata
            .as_ref()
            .map(|c| c.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()),
        dont_click: kwargs["dont_click"].as_bool().unwrap_or(false),
        method: s("method"),
        url: s("url"),
    };
    FormRequest::from_response(&response(case), &opts)
}

/// What differs between trawl's answer and Scrapy's, if anything.
fn compare(case: &Value) -> Option<String> {
    let got = run(case);
    if let Some(err) = case["error"].as_str() {
        return match got {
            Err(_) => None,
            Ok(r) => Some(format!(
                "Scrapy raises {err}; trawl builds {} {}",
                r.method(),
                r.url_str()
            )),
        };
    }
    let want = &case["result"];
    let r = match got {
        Ok(r) => r,
        Err(e) => return Some(format!("trawl fails ({e}); Scrapy builds {want}")),
    };
    let body: Vec<u8> = want["body"]
        .as_str()
        .expect("body")
        .chars()
        .map(|c| c as u32 as u8)
        .collect();
    let mut diffs = Vec::new();
    if r.method().as_str() != want["method"].as_str().expect("method") {
        diffs.push(format!(
            "method {} != {}",
            r.method().as_str(),
            want["method"]
        ));
    }
    if r.url_str() != want["url"].as_str().expect("url") {
        diffs.push(format!("url {:?} != {}", r.url_str(), want["url"]));
    }
    if r.body() != body.as_slice() {
        diffs.push(format!(
            "body {:?} != {:?}",
            String::from_utf8_lossy(r.body()),
            want["body"]
        ));
    }
    let ct = r
        .headers()
        .get("content-type")
        .map(|v| String::from_utf8_lossy(v).into_owned());
    if ct.as_deref() != want["content_type"].as_str() {
        diffs.push(format!("content-type {ct:?} != {}", want["content_type"]));
    }
    (!diffs.is_empty()).then(|| diffs.join("; "))
}

#[test]
fn from_response_matches_scrapy() {
    let data: Value = serde_json::from_str(include_str!("data/requests/from_response.json"))
        .expect("from_response.json");
    let cases = data["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 319, "the corpus's cases");
    let mut failures = Vec::new();
    let mut skipped = Vec::new();
    let mut agreeing_known = Vec::new();
    let mut known_checked = 0;
    for case in cases {
        let name = case["name"].as_str().expect("name");
        if INEXPRESSIBLE.iter().any(|(n, _)| *n == name) {
            skipped.push(name);
            continue;
        }
        let diff = compare(case);
        let known = KNOWN.iter().find(|(n, _, _)| *n == name);
        match (diff, known) {
            (Some(d), None) => failures.push(format!("{name}: {d}")),
            (None, Some(_)) => agreeing_known.push(name),
            (Some(_), Some((_, _, pinned))) => {
                let got = run(case).map(|r| {
                    (
                        r.method().as_str().to_owned(),
                        r.url_str().to_owned(),
                        String::from_utf8_lossy(r.body()).into_owned(),
                        r.headers()
                            .get("content-type")
                            .map(|v| String::from_utf8_lossy(v).into_owned()),
                    )
                });
                let (method, url, body, content_type) = *pinned;
                let want = (
                    method.to_owned(),
                    url.to_owned(),
                    body.to_owned(),
                    Some(content_type.to_owned()),
                );
                if got.as_ref().ok() != Some(&want) {
                    failures.push(format!(
                        "{name}: trawl {got:?}, its documented request {want:?}"
                    ));
                }
                known_checked += 1;
            }
            (None, None) => {}
        }
    }
    assert_eq!(
        skipped.len(),
        INEXPRESSIBLE.len(),
        "every inexpressible case exists in the corpus"
    );
    assert!(
        agreeing_known.is_empty(),
        "listed as different but now agree: {agreeing_known:?}"
    );
    assert_eq!(
        known_checked,
        KNOWN.len(),
        "every known case exists in the corpus"
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from Scrapy:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
