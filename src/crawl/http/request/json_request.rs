//! Scrapy's `JsonRequest`: a JSON body and Scrapy's JSON headers. Bodies are
//! byte-identical to Scrapy 2.19's (checked against `tests/data/requests/kinds.json`,
//! recorded by `gen_kinds.py`).

use serde_json::{Map, Value};

use super::error::{KindError, get};
use super::{Method, Request};
use crate::crawl::util::pyjson::{PyJson, dumps};

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
