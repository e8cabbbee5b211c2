//! Feed URIs: Scrapy's `apply_uri_params` (the `%(name)s` placeholders of a URI
//! template filled with printf-style conversions, any other `%` kept as it is), the
//! parameters Scrapy gives them (the spider's attributes and arguments, `name`,
//! `time`, `batch_time`, `batch_id`), the batch placeholder check, the URI's scheme
//! as Python's `urlparse` reads it, and w3lib's `file_uri_to_path`.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use crate::crawl::util::datetime::isoformat_utc;
use crate::crawl::util::pyjson::{python_number_str, python_repr};

/// Scrapy's `_FEED_URI_PLACEHOLDER_RE`: what counts as a placeholder.
static PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"%\(([^)]+)\)([-+ #0]*)(\d+|\*)?(?:\.(\d+|\*))?([diouxXeEfFgGcrsa])")
        .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
});

/// Scrapy's check that a batched feed's URI tells its batches apart.
static BATCH_PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"%\(batch_time\)s|%\(batch_id\)")
        .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
});

/// Whether `template` names `%(batch_time)s` or `%(batch_id)…` (Scrapy's regex: a
/// name made unique by a `uri_params` function does not count).
pub fn has_batch_placeholder(template: &str) -> bool {
    BATCH_PLACEHOLDER.is_match(template)
}

/// The parameters of a feed URI (Scrapy's `_get_uri_params`): the spider's attributes
/// (arguments included), then `time` (UTC, seconds, `:` as `-`), `batch_time` (with
/// the microseconds when not 0) and `batch_id`.
pub fn uri_params(
    attributes: &Map<String, Value>,
    now_micros: i64,
    batch_id: u64,
) -> Map<String, Value> {
    let mut params = attributes.clone();
    let seconds = now_micros.div_euclid(1_000_000) * 1_000_000;
    params.insert(
        "time".into(),
        isoformat_utc(seconds).replace(':', "-").into(),
    );
    params.insert(
        "batch_time".into(),
        isoformat_utc(now_micros).replace(':', "-").into(),
    );
    params.insert("batch_id".into(), batch_id.into());
    params
}

/// Scrapy's `apply_uri_params`: each placeholder replaced by its parameter as Python's
/// `%` operator formats it; every other `%` is kept.
///
/// # Errors
///
/// A placeholder names no parameter (Python's `KeyError`), or its conversion does not
/// fit the value.
pub fn apply_uri_params(template: &str, params: &Map<String, Value>) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut last = 0;
    for caps in PLACEHOLDER.captures_iter(template) {
        let (Some(whole), Some(key), Some(conv)) = (caps.get(0), caps.get(1), caps.get(5)) else {
            continue;
        };
        out.push_str(&template[last..whole.start()]);
        last = whole.end();
        let Some(value) = params.get(key.as_str()) else {
            return Err(format!(
                "the feed URI {template:?} names %({})s, which is not a spider attribute, a spider \
                 argument or a feed parameter (name, time, batch_time, batch_id)",
                key.as_str()
            ));
        };
        let spec = Spec {
            flags: caps.get(2).map_or("", |m| m.as_str()),
            width: caps.get(3).map(|m| m.as_str()),
            precision: caps.get(4).map(|m| m.as_str()),
            conversion: conv.as_str().chars().next().unwrap_or('s'),
        };
        out.push_str(&spec.format(value).map_err(|e| {
            format!(
                "the feed URI {template:?}: {} for %({}): {e}",
                whole.as_str(),
                key.as_str()
            )
        })?);
    }
    out.push_str(&template[last..]);
    Ok(out)
}

/// One conversion specifier.
struct Spec<'a> {
    flags: &'a str,
    width: Option<&'a str>,
    precision: Option<&'a str>,
    conversion: char,
}

impl Spec<'_> {
    fn format(&self, value: &Value) -> Result<String, String> {
        let star = |s: Option<&str>| s == Some("*");
        if star(self.width) || star(self.precision) {
            return Err("'*' needs positional arguments, which a URI template has none of".into());
        }
        let width: usize = self.width.and_then(|w| w.parse().ok()).unwrap_or(0);
        let precision: Option<usize> = self.precision.and_then(|p| p.parse().ok());
        let left = self.flags.contains('-');
        let (body, numeric) = match self.conversion {
            's' | 'r' | 'a' => {
                let text = match (self.conversion, value) {
                    ('s', Value::String(s)) => s.clone(),
                    ('s', Value::Number(n)) => python_number_str(n),
                    ('s', Value::Bool(b)) => if *b { "True" } else { "False" }.into(),
                    ('s', Value::Null) => "None".into(),
                    (_, v) => python_repr(v),
                };
                let text = match precision {
                    Some(p) => text.chars().take(p).collect(),
                    None => text,
                };
                (text, false)
            }
            'd' | 'i' | 'u' | 'x' | 'X' | 'o' => {
                let n = integer(value)?;
                let digits = match self.conversion {
                    'x' => format!("{:x}", n.unsigned_abs()),
                    'X' => format!("{:X}", n.unsigned_abs()),
                    'o' => format!("{:o}", n.unsigned_abs()),
                    _ => n.unsigned_abs().to_string(),
                };
                let digits = match precision {
                    Some(p) if digits.len() < p => {
                        format!("{}{digits}", "0".repeat(p - digits.len()))
                    }
                    _ => digits,
                };
                let prefix = match (self.flags.contains('#'), self.conversion) {
                    (true, 'x') => "0x",
                    (true, 'X') => "0X",
                    (true, 'o') => "0o",
                    _ => "",
                };
                (format!("{}{prefix}{digits}", sign(n < 0, self.flags)), true)
            }
            'f' | 'F' => {
                let f = match value {
                    Value::Number(n) => n.as_f64().unwrap_or(0.0),
                    Value::Bool(b) => f64::from(u8::from(*b)),
                    _ => {
                        return Err(format!(
                            "a real number is required, not {}",
                            type_name(value)
                        ));
                    }
                };
                let text = format!("{:.*}", precision.unwrap_or(6), f.abs());
                (
                    format!("{}{text}", sign(f.is_sign_negative(), self.flags)),
                    true,
                )
            }
            other => {
                return Err(format!(
                    "the %{other} conversion is not supported in feed URIs"
                ));
            }
        };
        let len = body.chars().count();
        if len >= width {
            return Ok(body);
        }
        let pad = width - len;
        Ok(if left {
            format!("{body}{}", " ".repeat(pad))
        } else if numeric && self.flags.contains('0') {
            // Zeros go after the sign.
            let split = body.find(|c: char| c.is_ascii_alphanumeric()).unwrap_or(0);
            format!("{}{}{}", &body[..split], "0".repeat(pad), &body[split..])
        } else {
            format!("{}{body}", " ".repeat(pad))
        })
    }
}

fn sign(negative: bool, flags: &str) -> &'static str {
    if negative {
        "-"
    } else if flags.contains('+') {
        "+"
    } else if flags.contains(' ') {
        " "
    } else {
        ""
    }
}

/// Python's `%d` of a value: integers, floats truncated, booleans as 0 / 1.
fn integer(value: &Value) -> Result<i128, String> {
    match value {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(i128::from(i))
            } else if let Some(u) = n.as_u64() {
                Ok(i128::from(u))
            } else {
                Ok(n.as_f64().unwrap_or(0.0).trunc() as i128)
            }
        }
        Value::Bool(b) => Ok(i128::from(*b)),
        other => Err(format!(
            "a real number is required, not {}",
            type_name(other)
        )),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// The scheme of `uri` as Python's `urlparse` reads it (lower case; empty when there
/// is none). A one-letter scheme is a Windows drive (`C:\feeds`), which Scrapy treats
/// as a path.
pub fn uri_scheme(uri: &str) -> String {
    let Some(colon) = uri.find(':') else {
        return String::new();
    };
    let head = &uri[..colon];
    let valid = head.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && head
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !valid || head.len() == 1 {
        return String::new();
    }
    head.to_ascii_lowercase()
}

/// w3lib's `file_uri_to_path`: the path of a `file:` URI (an authority is dropped,
/// `%XX` escapes decoded).
pub fn file_uri_to_path(uri: &str) -> String {
    let rest = uri.get(5..).unwrap_or("");
    let rest = match rest.strip_prefix("//") {
        Some(after) => after.find('/').map_or("", |i| &after[i..]),
        None => rest,
    };
    let path = rest.split(['?', '#']).next().unwrap_or("");
    percent_encoding::percent_decode_str(path)
        .decode_utf8_lossy()
        .into_owned()
}

/// A URI's parts as Python's `urlsplit` reads them (what Scrapy's S3 and FTP storages
/// take their bucket, host, credentials and path from). The user and password are as
/// written (percent escapes kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriParts<'a> {
    /// `username`.
    pub username: Option<&'a str>,
    /// `password`.
    pub password: Option<&'a str>,
    /// `hostname` (lower case).
    pub hostname: Option<String>,
    /// `port`.
    pub port: Option<u16>,
    /// `path` (without the query and fragment).
    pub path: &'a str,
}

/// Splits `uri` as `urlsplit` does.
///
/// # Errors
///
/// The port is not a number from 0 to 65535 (Python raises `ValueError`).
pub fn split_uri(uri: &str) -> Result<UriParts<'_>, String> {
    let scheme = uri_scheme(uri);
    let rest = if scheme.is_empty() {
        uri
    } else {
        &uri[scheme.len() + 1..]
    };
    let (netloc, after) = match rest.strip_prefix("//") {
        Some(r) => {
            let end = r.find(['/', '?', '#']).unwrap_or(r.len());
            (&r[..end], &r[end..])
        }
        None => ("", rest),
    };
    let path = &after[..after.find(['?', '#']).unwrap_or(after.len())];
    let (userinfo, hostinfo) = match netloc.rfind('@') {
        Some(i) => (Some(&netloc[..i]), &netloc[i + 1..]),
        None => (None, netloc),
    };
    let (username, password) = match userinfo {
        Some(u) => match u.find(':') {
            Some(i) => (Some(&u[..i]), Some(&u[i + 1..])),
            None => (Some(u), None),
        },
        None => (None, None),
    };
    let (host, port) = if let Some(inner) = hostinfo.strip_prefix('[') {
        let close = inner.find(']').unwrap_or(inner.len());
        let port = inner.get(close + 1..).and_then(|p| p.strip_prefix(':'));
        (&inner[..close], port)
    } else {
        match hostinfo.find(':') {
            Some(i) => (&hostinfo[..i], Some(&hostinfo[i + 1..])),
            None => (hostinfo, None),
        }
    };
    let port = match port {
        None | Some("") => None,
        Some(p) => Some(
            p.parse::<u16>()
                .map_err(|_| format!("Port could not be cast to integer value as {p:?}"))?,
        ),
    };
    Ok(UriParts {
        username,
        password,
        hostname: (!host.is_empty()).then(|| host.to_ascii_lowercase()),
        port,
        path,
    })
}

/// `uri` with the user and password of its authority replaced by `***`, for logs
/// and error messages.
pub fn redact(uri: &str) -> String {
    crate::crawl::util::redact::redact_uri(uri)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params() -> Map<String, Value> {
        json!({"name": "shop", "batch_id": 7, "neg": -3, "f": 2.5})
            .as_object()
            .cloned()
            .unwrap_or_default()
    }

    #[test]
    fn printf_conversions() {
        let p = params();
        let f = |t: &str| apply_uri_params(t, &p);
        assert_eq!(f("%(name)s-%(batch_id)05d.jl").unwrap(), "shop-00007.jl");
        assert_eq!(f("a%20b 100%.jl").unwrap(), "a%20b 100%.jl");
        assert_eq!(
            f("%(neg)05d|%(batch_id)-3d|%(batch_id)+d").unwrap(),
            "-0003|7  |+7"
        );
        assert_eq!(
            f("%(name)r %(name).2s %(f).1f %(batch_id)x").unwrap(),
            "'shop' sh 2.5 7"
        );
        assert!(f("%(nosuch)s").unwrap_err().contains("%(nosuch)s"));
        assert!(f("%(name)d").is_err());
    }

    #[test]
    fn schemes_and_file_uris() {
        assert_eq!(uri_scheme("s3://bucket/key"), "s3");
        assert_eq!(uri_scheme("stdout:"), "stdout");
        assert_eq!(uri_scheme("/tmp/a:b.jl"), "");
        assert_eq!(uri_scheme("C:\\feeds\\a.jl"), "");
        assert_eq!(file_uri_to_path("file:///tmp/a%20b.jl"), "/tmp/a b.jl");
        assert_eq!(file_uri_to_path("file://host/tmp/x"), "/tmp/x");
    }

    #[test]
    fn splits_and_redacts() {
        let p = split_uri("s3://AK:se%2Fc@Bucket/dir/a.jl?x#y").unwrap();
        assert_eq!(p.username, Some("AK"));
        assert_eq!(p.password, Some("se%2Fc"));
        assert_eq!(p.hostname.as_deref(), Some("bucket"));
        assert_eq!(p.path, "/dir/a.jl");
        let p = split_uri("ftp://u@[::1]:2121/f").unwrap();
        assert_eq!((p.hostname.as_deref(), p.port), (Some("::1"), Some(2121)));
        assert!(split_uri("ftp://h:x/f").is_err());
        assert_eq!(redact("ftp://u:p@h/a@b"), "ftp://***@h/a@b");
        assert_eq!(redact("s3://bucket/k"), "s3://bucket/k");
    }
}
