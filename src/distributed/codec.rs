//! What requests and items look like in Redis.
//!
//! * **Native entries** (trawl's own layout): the versioned request record
//!   ([`crate::crawl::record`]), behind a 16-hex-digit sequence number (added by the
//!   enqueue script) in a sorted set or a single list. Nothing in it can name code.
//! * **scrapy-redis entries** (`SCHEDULER_SERIALIZER = "trawl_redis_serializer"`): the
//!   JSON that `python/trawl_redis_serializer.py` writes for Scrapy's
//!   `Request.to_dict()` — compact, ASCII-only, bytes as `{"__bytes_b64__": ...}`,
//!   headers as `{"__dict_items__": [[name, [values]], ...]}` — so a Python worker and
//!   a trawl worker read each other's requests.
//! * **Items**: JSON as scrapy-redis's `RedisPipeline` writes it
//!   (`ScrapyJSONEncoder().encode(item)`: Python's `json.dumps` defaults — `", "` and
//!   `": "`, non-ASCII escaped, floats as Python's `repr`).
//!
//! Decoding never panics: anything else is an error naming what is wrong, and the
//! caller moves the entry to the `:bad` list.

use serde_json::{Map, Value};

use crate::crawl::record;
use crate::crawl::request::{Method, Request};
use crate::util::{base64_decode, base64_encode};

/// The length of the sequence prefix of a native entry.
pub const SEQ_PREFIX: usize = 16;

const BYTES_TAG: &str = "__bytes_b64__";
const DICT_ITEMS_TAG: &str = "__dict_items__";

/// Decodes a native queue entry: a request record, behind a 16-hex-digit sequence
/// prefix in a sorted set or a single list, behind its score and a space in a list per
/// priority (`-3 <record>`; an entry put back there from a sorted set keeps its
/// sequence prefix behind the score), or bare (a list's entry written before scores
/// led them).
/// A record starts with its version byte, never a hex digit, a digit, `-` or a
/// space, so the forms cannot be confused.
///
/// # Errors
///
/// A broken prefix, or a record error (another version, truncated, garbage).
pub fn decode_native(member: &[u8]) -> Result<Request, String> {
    // A score, then (an entry put back from a sorted set) a sequence prefix.
    let member = &member[score_prefix(member).unwrap_or(0)..];
    let record = match member.first() {
        Some(b) if b.is_ascii_hexdigit() => {
            if member.len() < SEQ_PREFIX || !member[..SEQ_PREFIX].iter().all(u8::is_ascii_hexdigit)
            {
                return Err("not a trawl queue entry (a broken sequence prefix)".into());
            }
            &member[SEQ_PREFIX..]
        }
        _ => member,
    };
    record::decode(record).map_err(|e| e.to_string())
}

/// The length of an entry's score prefix (`-3 `, `0 `: an integer and a space, at
/// most 21 bytes), if it has one.
fn score_prefix(member: &[u8]) -> Option<usize> {
    let head = &member[..member.len().min(21)];
    let sp = head.iter().position(|&b| b == b' ')?;
    let digits = head[..sp].strip_prefix(b"-").unwrap_or(&head[..sp]);
    (!digits.is_empty() && digits.iter().all(u8::is_ascii_digit)).then_some(sp + 1)
}

/// A list-per-priority entry: `score`, a space, the record.
pub fn scored_entry(score: &[u8], record: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(score.len() + 1 + record.len());
    v.extend_from_slice(score);
    v.push(b' ');
    v.extend_from_slice(record);
    v
}

/// Python's `json.dumps(value, ensure_ascii=True)` text, compact (`,` and `:`) or with
/// the default separators (`, ` and `: `).
pub fn python_json(value: &Value, compact: bool) -> String {
    crate::crawl::pyjson::dumps(
        value,
        crate::crawl::pyjson::PyJson {
            compact,
            ..Default::default()
        },
    )
}

pub use crate::crawl::pyjson::python_float_repr;

fn bytes_value(b: &[u8]) -> Value {
    let mut m = Map::new();
    m.insert(BYTES_TAG.into(), Value::String(base64_encode(b)));
    Value::Object(m)
}

/// The scrapy-redis queue entry for `request`: the JSON of Scrapy 2.19's
/// `Request.to_dict()` as `trawl_redis_serializer.dumps` writes it.
pub fn encode_compat(request: &Request) -> String {
    let mut d = Map::new();
    d.insert("url".into(), Value::String(request.url_str().to_owned()));
    let name = |n: Option<&str>| n.map_or(Value::Null, |s| Value::String(s.to_owned()));
    d.insert("callback".into(), name(request.callback()));
    d.insert("errback".into(), name(request.errback()));
    // Headers: name -> every value, names in first-seen order.
    let mut grouped: Vec<(&[u8], Vec<&[u8]>)> = Vec::new();
    for (n, v) in request.headers().iter() {
        match grouped.iter_mut().find(|(g, _)| g.eq_ignore_ascii_case(n)) {
            Some((_, vs)) => vs.push(v),
            None => grouped.push((n, vec![v])),
        }
    }
    let headers = if grouped.is_empty() {
        Value::Object(Map::new())
    } else {
        let items = grouped
            .into_iter()
            .map(|(n, vs)| {
                Value::Array(vec![
                    bytes_value(n),
                    Value::Array(vs.into_iter().map(bytes_value).collect()),
                ])
            })
            .collect();
        let mut m = Map::new();
        m.insert(DICT_ITEMS_TAG.into(), Value::Array(items));
        Value::Object(m)
    };
    d.insert("headers".into(), headers);
    d.insert("body".into(), bytes_value(request.body()));
    let cookies: Map<String, Value> = request
        .cookies()
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    d.insert("cookies".into(), Value::Object(cookies));
    let meta: Map<String, Value> = request
        .meta()
        .iter()
        .map(|(k, v)| (k.to_owned(), v.clone()))
        .collect();
    d.insert("meta".into(), Value::Object(meta));
    d.insert(
        "encoding".into(),
        Value::String(request.encoding().to_owned()),
    );
    d.insert(
        "flags".into(),
        Value::Array(request.flags().iter().cloned().map(Value::String).collect()),
    );
    d.insert(
        "cb_kwargs".into(),
        Value::Object(request.cb_kwargs().cloned().unwrap_or_default()),
    );
    d.insert("dont_filter".into(), Value::Bool(request.dont_filter()));
    d.insert(
        "method".into(),
        Value::String(request.method().as_str().to_owned()),
    );
    d.insert("priority".into(), Value::from(request.priority()));
    python_json(&Value::Object(d), true)
}

fn untag_bytes(v: &Value, what: &str) -> Result<Vec<u8>, String> {
    match v {
        Value::Object(m) if m.len() == 1 => match m.get(BYTES_TAG) {
            Some(Value::String(s)) => {
                base64_decode(s).ok_or_else(|| format!("{what}: invalid base64"))
            }
            _ => Err(format!("{what}: not a bytes value")),
        },
        Value::String(s) => Ok(s.as_bytes().to_vec()),
        _ => Err(format!("{what}: not a bytes value")),
    }
}

/// A header's values: a list, or one value.
fn header_values(vs: &Value) -> Result<Vec<Vec<u8>>, String> {
    match vs {
        Value::Array(vs) => vs.iter().map(|v| untag_bytes(v, "header value")).collect(),
        single => Ok(vec![untag_bytes(single, "header value")?]),
    }
}

fn headers_from(v: &Value, request: &mut Request) -> Result<(), String> {
    let pairs: Vec<(Vec<u8>, Vec<Vec<u8>>)> = match v {
        Value::Null => return Ok(()),
        Value::Object(m) if m.is_empty() => return Ok(()),
        Value::Object(m) => match m.get(DICT_ITEMS_TAG) {
            Some(Value::Array(items)) if m.len() == 1 => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    let Value::Array(kv) = item else {
                        return Err("headers: an item is not a pair".into());
                    };
                    let [k, vs] = kv.as_slice() else {
                        return Err("headers: an item is not a pair".into());
                    };
                    out.push((untag_bytes(k, "header name")?, header_values(vs)?));
                }
                out
            }
            _ => {
                // Plain string keys (a hand-written entry).
                let mut out = Vec::new();
                for (k, vs) in m {
                    out.push((k.as_bytes().to_vec(), header_values(vs)?));
                }
                out
            }
        },
        _ => return Err("headers: not an object".into()),
    };
    let headers = request.headers_mut();
    for (name, values) in pairs {
        for v in values {
            headers.append(&name, &v);
        }
    }
    Ok(())
}

/// Reads a scrapy-redis queue entry written by `trawl_redis_serializer` (or
/// [`encode_compat`]). Only `url` is required.
///
/// # Errors
///
/// Not JSON, not an object, no `url`, or a field of the wrong shape.
pub fn decode_compat(member: &[u8]) -> Result<Request, String> {
    let v: Value = serde_json::from_slice(member).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(d) = v else {
        return Err("not a JSON object".into());
    };
    let url = d
        .get("url")
        .and_then(Value::as_str)
        .ok_or("no \"url\" string")?;
    let mut r = Request::get(url).map_err(|e| format!("bad url {url:?}: {e}"))?;
    if let Some(m) = d.get("method").and_then(Value::as_str) {
        r.set_method(Method::new(m));
    }
    match d.get("callback") {
        Some(Value::String(c)) => r = r.with_callback(c),
        None | Some(Value::Null) => {}
        Some(_) => return Err("callback: not a name".into()),
    }
    match d.get("errback") {
        Some(Value::String(c)) => r = r.with_errback(c),
        None | Some(Value::Null) => {}
        Some(_) => return Err("errback: not a name".into()),
    }
    if let Some(h) = d.get("headers") {
        headers_from(h, &mut r)?;
    }
    if let Some(b) = d.get("body") {
        let body = untag_bytes(b, "body")?;
        if !body.is_empty() {
            r.set_body(body);
        }
    }
    match d.get("cookies") {
        Some(Value::Object(c)) => {
            let cookies = c
                .iter()
                .map(|(k, v)| {
                    let v = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                    (k.clone(), v)
                })
                .collect();
            r.set_cookies(cookies);
        }
        Some(Value::Array(list)) => {
            let mut cookies = Vec::new();
            for c in list {
                let (Some(n), Some(v)) = (
                    c.get("name").and_then(Value::as_str),
                    c.get("value").and_then(Value::as_str),
                ) else {
                    return Err("cookies: an entry without name and value".into());
                };
                cookies.push((n.to_owned(), v.to_owned()));
            }
            r.set_cookies(cookies);
        }
        None | Some(Value::Null) => {}
        Some(_) => return Err("cookies: not an object or a list".into()),
    }
    match d.get("meta") {
        Some(Value::Object(m)) => {
            for (k, v) in m {
                r.meta_mut().insert(k, v.clone());
            }
        }
        None | Some(Value::Null) => {}
        Some(_) => return Err("meta: not an object".into()),
    }
    if let Some(e) = d.get("encoding").and_then(Value::as_str)
        && !e.eq_ignore_ascii_case("utf-8")
    {
        r = r.with_encoding(e);
    }
    if let Some(Value::Array(flags)) = d.get("flags") {
        for f in flags {
            if let Some(f) = f.as_str() {
                r.add_flag(f);
            }
        }
    }
    match d.get("cb_kwargs") {
        Some(Value::Object(k)) if !k.is_empty() => r.set_cb_kwargs(k.clone()),
        None | Some(Value::Null | Value::Object(_)) => {}
        Some(_) => return Err("cb_kwargs: not an object".into()),
    }
    if let Some(Value::Bool(b)) = d.get("dont_filter") {
        r.set_dont_filter(*b);
    }
    match d.get("priority") {
        Some(Value::Number(n)) => {
            let p = n
                .as_i64()
                .and_then(|p| i32::try_from(p).ok())
                .ok_or("priority: not a 32-bit integer")?;
            r.set_priority(p);
        }
        None | Some(Value::Null) => {}
        Some(_) => return Err("priority: not an integer".into()),
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_float_repr_matches_python() {
        // repr() in CPython 3.11.
        for (f, want) in [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (123456.789, "123456.789"),
            (1.5e-7, "1.5e-07"),
            (0.0, "0.0"),
            (1e300, "1e+300"),
            (2.5e20, "2.5e+20"),
        ] {
            assert_eq!(python_float_repr(f), want, "{f}");
        }
    }

    #[test]
    fn native_entries_are_a_record_with_or_without_a_whole_prefix() {
        let r = Request::get("http://h/").expect("url");
        let mut m = b"00000000000000ff".to_vec();
        m.extend(record::encode(&r));
        assert_eq!(
            decode_native(&m).expect("decodes").url().as_str(),
            "http://h/"
        );
        assert_eq!(
            decode_native(&m[16..]).expect("decodes").url().as_str(),
            "http://h/"
        );
        assert!(decode_native(&m[1..]).is_err());
        assert!(decode_native(b"").is_err());
        assert!(decode_native(b"\x80\x04\x95pickle").is_err());
        assert!(decode_native(b"0000000000000001\x09newer").is_err());
        // Behind its score in a list per priority.
        for score in ["0", "-3", "12", "-9223372036854775808"] {
            let e = scored_entry(score.as_bytes(), &m[16..]);
            assert_eq!(
                decode_native(&e).expect("decodes").url().as_str(),
                "http://h/",
                "{score}"
            );
        }
        let e = scored_entry(b"0", &m);
        assert_eq!(
            decode_native(&e).expect("decodes").url().as_str(),
            "http://h/",
            "a score and a sequence prefix"
        );
        for broken in ["-", "3x", ""] {
            let e = scored_entry(broken.as_bytes(), &m[16..]);
            assert!(decode_native(&e).is_err(), "{broken:?}");
        }
    }
}
