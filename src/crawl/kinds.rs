//! Scrapy's request kinds beyond a plain GET: [`JsonRequest`] (a JSON body and Scrapy's
//! JSON headers) and [`FormRequest`] (url-encoded form data, in the body of a POST or
//! the query of any other method). Bodies and URLs are byte-identical to Scrapy 2.19's
//! (checked against `tests/data/requests/kinds.json`, recorded by `gen_kinds.py`).
//! Building a request from an HTML `<form>` (`from_response`) is in `form.rs`.

use std::fmt;

use serde_json::{Map, Value};

use super::pyjson::{PyJson, dumps};
use super::request::{Method, Request};

/// Why a request of one of these kinds could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KindError {
    /// The URL does not parse (Scrapy: `ValueError`).
    Url(String),
    /// A form value the request's encoding cannot encode (Python's
    /// `UnicodeEncodeError`).
    Encode(String),
    /// An encoding label no codec answers to (Python's `LookupError`).
    UnknownEncoding(String),
    /// `FormRequest::from_response` could not build the request (Scrapy's message).
    Form(String),
}

impl fmt::Display for KindError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Url(u) => write!(f, "invalid request URL: {u}"),
            Self::Encode(m) => write!(f, "UnicodeEncodeError: {m}"),
            Self::UnknownEncoding(e) => write!(f, "unknown encoding: {e}"),
            Self::Form(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for KindError {}

fn get(url: &str) -> Result<Request, KindError> {
    let request = Request::get(url).map_err(|e| KindError::Url(format!("{url:?}: {e}")))?;
    let text = request.url_str();
    if !(text.contains("://") || text.starts_with("about:") || text.starts_with("data:")) {
        return Err(KindError::Url(format!(
            "Missing scheme in request url: {text}"
        )));
    }
    Ok(request)
}

/// Scrapy's `Request(url, encoding=...)`: `safe_url_string` with the request's
/// encoding (the query and fragment in it, the path in UTF-8).
fn get_encoded(url: &str, codec: &'static encoding_rs::Encoding) -> Result<Request, KindError> {
    if codec == encoding_rs::UTF_8 {
        return get(url);
    }
    let text = super::canonical::safe_url_string_encoded(url, codec)
        .map_err(|e| KindError::Encode(e.to_string()))?;
    let mut request = get(&text)?;
    request.set_scrapy_url(text);
    Ok(request)
}

/// Scrapy's `JsonRequest`: with `data`, the body is `json.dumps(data, sort_keys=True)`
/// and the method defaults to POST; `Content-Type: application/json` and Scrapy's
/// `Accept` are set unless already present.
///
/// # Examples
///
/// ```
/// use trawl::crawl::JsonRequest;
///
/// let r = JsonRequest::build("http://example.com/api", Some(&serde_json::json!({"b": 1, "a": 2})), None)
///     .unwrap();
/// assert_eq!(r.method().as_str(), "POST");
/// assert_eq!(r.body(), br#"{"a": 2, "b": 1}"#);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct JsonRequest;

/// Scrapy's `Accept` header of a `JsonRequest`.
pub const JSON_ACCEPT: &str = "application/json, text/javascript, */*; q=0.01";

impl JsonRequest {
    /// A request for `url` carrying `data` as JSON, with `method` (default: POST with
    /// data, GET without).
    ///
    /// # Errors
    ///
    /// The URL does not parse.
    pub fn build(
        url: &str,
        data: Option<&Value>,
        method: Option<&str>,
    ) -> Result<Request, KindError> {
        let mut request = get(url)?;
        if let Some(data) = data {
            request.set_body(dumps(&sorted(data), PyJson::default()).into_bytes());
        }
        match method {
            Some(m) => request.set_method(Method::new(&m.to_ascii_uppercase())),
            None if data.is_some() => request.set_method(Method::new("POST")),
            None => {}
        }
        let headers = request.headers_mut();
        headers.set_default("Content-Type", "application/json");
        headers.set_default("Accept", JSON_ACCEPT);
        Ok(request)
    }
}

/// `sort_keys=True`: objects with their keys in code-point order, all the way down.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::with_capacity(map.len());
            for k in keys {
                out.insert(k.clone(), sorted(&map[k.as_str()]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// Scrapy's `FormRequest(url, formdata=..., method=..., encoding=...)`: the pairs are
/// url-encoded in the request's encoding (Python's `urlencode`: `quote_plus` of the
/// encoded bytes, `&`-joined; repeat a key for several values). With data and no
/// method, the method is POST; a POST carries them as its body with
/// `Content-Type: application/x-www-form-urlencoded` (unless set), any other method
/// replaces the URL's query with them (the fragment stays). Without data it is a
/// plain request.
///
/// # Examples
///
/// ```
/// use trawl::crawl::FormRequest;
///
/// let r = FormRequest::build("http://example.com/s", &[("q", "a b")], Some("GET"), None).unwrap();
/// assert_eq!(r.url_str(), "http://example.com/s?q=a+b");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct FormRequest;

impl FormRequest {
    /// A form submission to `url`; `encoding` is a Python codec name (default UTF-8).
    ///
    /// # Errors
    ///
    /// The URL does not parse; a value the encoding cannot encode; an unknown encoding.
    pub fn build(
        url: &str,
        formdata: &[(&str, &str)],
        method: Option<&str>,
        encoding: Option<&str>,
    ) -> Result<Request, KindError> {
        let codec = match encoding {
            Some(label) => super::response::resolve_encoding(label.as_bytes())
                .ok_or_else(|| KindError::UnknownEncoding(label.to_owned()))?,
            None => encoding_rs::UTF_8,
        };
        let mut request = get_encoded(url, codec)?;
        if let Some(label) = encoding {
            request = request.with_encoding(label);
        }
        let method = match method {
            Some(m) => m.to_ascii_uppercase(),
            None if !formdata.is_empty() => "POST".to_owned(),
            None => "GET".to_owned(),
        };
        request.set_method(Method::new(&method));
        if formdata.is_empty() {
            return Ok(request);
        }
        let query = super::canonical::urlencode(formdata, codec)
            .map_err(|reason| KindError::Encode(reason.to_owned()))?;
        if method == "POST" {
            request
                .headers_mut()
                .set_default("Content-Type", "application/x-www-form-urlencoded");
            request.set_body(query.into_bytes());
            return Ok(request);
        }
        // urlunsplit(urlsplit(url)._replace(query=...)), then Scrapy's safe URL.
        let current = request.url_str();
        let (before_fragment, fragment) = current.split_once('#').unwrap_or((current, ""));
        let base = before_fragment
            .split_once('?')
            .map_or(before_fragment, |(b, _)| b);
        let mut replaced = format!("{base}?{query}");
        if !fragment.is_empty() {
            replaced.push('#');
            replaced.push_str(fragment);
        }
        let mut rebuilt = get_encoded(&replaced, codec)?;
        rebuilt.set_method(request.method().clone());
        if let Some(label) = encoding {
            rebuilt = rebuilt.with_encoding(label);
        }
        Ok(rebuilt)
    }
}
