//! `Request::from_curl`: a request from a curl command line ("Copy as cURL" in a
//! browser's developer tools), as Scrapy's `Request.from_curl` and
//! `scrapy.utils.curl.curl_to_request_kwargs` build it — the same options read
//! (`-X`, `-H`, `-b`, `-d` / `--data` / `--data-raw`, `-u`; `--compressed`, `-s`, `-v`,
//! `-#` accepted and ignored), the same quirks (a `Cookie:` header's pairs become the
//! request's cookies through Python's `SimpleCookie` rules, `-d` makes the method POST
//! unless `-X` names one, a URL without a scheme gets `http://`), and unknown options
//! warned about or refused.
//!
//! The splitting and the option parsing are in [`super::curl_args`].

use super::Request;
use super::curl_args::{CurlError, parse_curl_args, shlex_split};

/// What Scrapy's `curl_to_request_kwargs` returns: the parts of the request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CurlRequest {
    /// The method, upper-cased (`GET`, or `POST` when data is given without `-X`).
    pub method: String,
    /// The URL as given, `http://` put in front when it has no scheme.
    pub url: String,
    /// Header fields in order, as given (the `Cookie` ones excepted); `-u` adds an
    /// `Authorization` field at the end.
    pub headers: Vec<(String, String)>,
    /// Cookies from `Cookie:` headers then `-b` values, a later value replacing an
    /// earlier one of the same name in its place (a Python dict).
    pub cookies: Vec<(String, String)>,
    /// The `-d` data, when non-empty.
    pub body: Option<String>,
    /// The options and strings the parser did not know (Scrapy's "Unrecognized
    /// options" warning, or error).
    pub unrecognized: Vec<String>,
}

impl CurlRequest {
    /// Scrapy's warning text for [`unrecognized`](Self::unrecognized), if any.
    pub fn warning(&self) -> Option<String> {
        (!self.unrecognized.is_empty())
            .then(|| format!("Unrecognized options: {}", self.unrecognized.join(", ")))
    }
}

/// Scrapy's `curl_to_request_kwargs(curl_command, ignore_unknown_options)`.
///
/// # Errors
///
/// A command that does not split or does not start with `curl`, the parser's errors,
/// unknown options when `ignore_unknown_options` is false, a header without `:`, a
/// `-u` without `:` or with a character outside Latin-1, a `Cookie` that Python's
/// `SimpleCookie` refuses with an error (an unknown `$` attribute).
pub fn curl_to_request_kwargs(
    curl_command: &str,
    ignore_unknown_options: bool,
) -> Result<CurlRequest, CurlError> {
    let args = shlex_split(curl_command)?;
    match args.first() {
        Some(first) if first == "curl" => {}
        Some(_) => return Err(CurlError("A curl command must start with \"curl\"".into())),
        None => return Err(CurlError("an empty curl command".into())),
    }
    let parsed = parse_curl_args(&args[1..])?;
    if !parsed.extras.is_empty() && !ignore_unknown_options {
        return Err(CurlError(format!(
            "Unrecognized options: {}",
            parsed.extras.join(", ")
        )));
    }
    let mut url = parsed.url.unwrap_or_default();
    if !has_scheme(&url) {
        url.insert_str(0, "http://");
    }
    let method = match parsed.method.as_deref() {
        Some(m) if !m.is_empty() => m.to_uppercase(),
        _ if parsed.data.as_deref().is_some_and(|d| !d.is_empty()) => "POST".into(),
        _ => "GET".into(),
    };
    let mut headers = Vec::new();
    let mut cookies = PyDict::default();
    for header in &parsed.headers {
        let (name, value) = header
            .split_once(':')
            .ok_or_else(|| CurlError(format!("a header without ':': {header:?}")))?;
        let (name, value) = (py_strip(name), py_strip(value));
        if py_title(name) == "Cookie" {
            for (k, v) in simple_cookie(value)? {
                cookies.set(k, v);
            }
        } else {
            headers.push((name.to_owned(), value.to_owned()));
        }
    }
    for param in &parsed.cookies {
        // curl reads a value without `=` as a file name; Scrapy skips it.
        if !param.contains('=') {
            continue;
        }
        for (k, v) in simple_cookie(param)? {
            cookies.set(k, v);
        }
    }
    if let Some(auth) = &parsed.auth {
        let (user, password) = auth
            .split_once(':')
            .ok_or_else(|| CurlError(format!("-u without ':' (user:password): {auth:?}")))?;
        headers.push(("Authorization".into(), basic_auth_header(user, password)?));
    }
    Ok(CurlRequest {
        method,
        url,
        headers,
        cookies: cookies.entries,
        body: parsed.data.filter(|d| !d.is_empty()),
        unrecognized: parsed.extras,
    })
}

/// w3lib's `basic_auth_header`: `Basic ` and the base64 of `user:password` in Latin-1.
fn basic_auth_header(user: &str, password: &str) -> Result<String, CurlError> {
    let text = format!("{user}:{password}");
    let mut bytes = Vec::with_capacity(text.len());
    for c in text.chars() {
        let b = u8::try_from(u32::from(c)).map_err(|_| {
            CurlError(format!(
                "'latin-1' codec can't encode character {c:?} of the -u credentials"
            ))
        })?;
        bytes.push(b);
    }
    Ok(format!("Basic {}", crate::util::base64_encode(&bytes)))
}

/// A Python dict of strings: insertion order, a later value replacing an earlier one
/// in its place (an index keeps it linear).
#[derive(Default)]
struct PyDict<V> {
    entries: Vec<(String, V)>,
    index: crate::util::FxHashMap<String, usize>,
}

impl<V> PyDict<V> {
    /// The entry for `key`, made with `make` when absent.
    fn entry(&mut self, key: String, make: impl FnOnce() -> V) -> &mut V {
        let i = match self.index.get(&key) {
            Some(&i) => i,
            None => {
                self.index.insert(key.clone(), self.entries.len());
                self.entries.push((key, make()));
                self.entries.len() - 1
            }
        };
        &mut self.entries[i].1
    }
}

impl PyDict<String> {
    fn set(&mut self, key: String, value: String) {
        *self.entry(key, String::new) = value;
    }
}

/// Whether Python's `urlparse(url).scheme` is non-empty: after leading C0 controls
/// and spaces (and every tab, CR and LF) are dropped, a letter starts a run of
/// letters, digits, `+`, `-`, `.` ended by `:`.
fn has_scheme(url: &str) -> bool {
    let cleaned: String = url
        .trim_start_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\r' | '\n'))
        .collect();
    let Some(colon) = cleaned.find(':') else {
        return false;
    };
    let scheme = &cleaned[..colon];
    scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// Python's `str.strip()`.
fn py_strip(s: &str) -> &str {
    crate::util::python_strip(s)
}

/// Python's `str.title()`: a cased character after a cased one is lower-cased, any
/// other upper-cased (`x-foo_bar1a` → `X-Foo_Bar1A`); Scrapy's `Headers` key form.
pub(crate) fn py_title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_cased = false;
    for c in s.chars() {
        if prev_cased {
            out.extend(c.to_lowercase());
        } else {
            out.extend(c.to_uppercase());
        }
        prev_cased = c.is_lowercase() || c.is_uppercase();
    }
    out
}

/// Python's `http.cookies` cookie pattern (`_CookiePattern`, compiled with
/// `re.ASCII`): a key, an optional `=value` (a quoted string, an `expires` date, or
/// legal characters), then spaces and a separator. The ASCII classes are spelled out
/// (`\w` is `[0-9A-Za-z_]`, `\s` the six ASCII spaces).
static COOKIE_PATTERN: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    const KEY: &str = r"0-9A-Za-z_!#%\&'\~`><@,:/\$\*\+\-\.\^\|\)\(\?\}\{=";
    const S: &str = r"[ \t\n\r\x0B\x0C]";
    let pattern = format!(
        r#"\A{S}*(?P<key>[{KEY}]+?)({S}*={S}*(?P<val>"(?:[^\\"]|\\[^\n])*"|[0-9A-Za-z_]{{3}},{S}[0-9A-Za-z_ \t\n\r\x0B\x0C\-]{{9,11}}{S}[0-9:]{{8}}{S}GMT|[{KEY}\[\]]*))?{S}*({S}+|;|\z)"#
    );
    regex::Regex::new(&pattern).unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
});

/// `http.cookies._is_legal_key`: a cookie name Python accepts.
fn legal_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~:".contains(c))
}

/// The attributes `Morsel` reserves, and the two that take no value.
const RESERVED: &[&str] = &[
    "expires", "path", "comment", "domain", "max-age", "secure", "httponly", "version", "samesite",
];
const FLAGS: &[&str] = &["secure", "httponly"];

/// `SimpleCookie(text).items()` as name/value pairs: Python's `BaseCookie.__parse_string`.
/// A string it finds invalid sets nothing (an attribute before any cookie, a key
/// without a value); parsing stops quietly where the pattern stops matching.
fn simple_cookie(text: &str) -> Result<Vec<(String, String)>, CurlError> {
    enum Item {
        Attribute(String),
        Pair(String, String),
    }
    let mut items = Vec::new();
    let mut seen = false;
    let mut i = 0;
    while i < text.len() {
        let Some(caps) = COOKIE_PATTERN.captures(&text[i..]) else {
            break;
        };
        let end = caps.get(0).map_or(0, |m| m.end());
        if end == 0 {
            // An empty match cannot advance (Python's loop ends at the string's end).
            break;
        }
        i += end;
        let key = caps.name("key").map_or("", |m| m.as_str());
        let value = caps.name("val").map(|m| m.as_str());
        let lower = key.to_ascii_lowercase();
        if let Some(attr) = key.strip_prefix('$') {
            if seen {
                items.push(Item::Attribute(attr.to_ascii_lowercase()));
            }
        } else if RESERVED.contains(&lower.as_str()) {
            if !seen || (value.is_none() && !FLAGS.contains(&lower.as_str())) {
                return Ok(Vec::new());
            }
            items.push(Item::Attribute(lower));
        } else if let Some(v) = value {
            items.push(Item::Pair(key.to_owned(), unquote(v)));
            seen = true;
        } else {
            return Ok(Vec::new());
        }
    }
    let mut out = PyDict::default();
    for item in items {
        match item {
            Item::Pair(k, _) if !legal_key(&k) => {
                return Err(CurlError(format!("CookieError: Illegal key {k:?}")));
            }
            Item::Pair(k, v) => out.set(k, v),
            Item::Attribute(a) if !RESERVED.contains(&a.as_str()) => {
                return Err(CurlError(format!("CookieError: Invalid attribute {a:?}")));
            }
            Item::Attribute(_) => {}
        }
    }
    Ok(out.entries)
}

/// `http.cookies._unquote`: a double-quoted value loses its quotes, `\ooo` (octal,
/// first digit 0-3) becomes that character and `\c` becomes `c`.
fn unquote(v: &str) -> String {
    let inner = match v.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        Some(inner) if v.len() >= 2 => inner,
        _ => return v.to_owned(),
    };
    let chars: Vec<char> = inner.chars().collect();
    let mut out = String::with_capacity(inner.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '\\' {
            let octal = chars.get(i + 1..i + 4).filter(|d| {
                ('0'..='3').contains(&d[0]) && d[1..].iter().all(|c| ('0'..='7').contains(c))
            });
            if let Some(d) = octal {
                let n = d.iter().fold(0u32, |n, c| n * 8 + (*c as u32 - '0' as u32));
                out.extend(char::from_u32(n));
                i += 4;
                continue;
            }
            // `[\\].`: any character but a newline.
            if let Some(&c) = chars.get(i + 1)
                && c != '\n'
            {
                out.push(c);
                i += 2;
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

impl Request {
    /// Scrapy's `Request.from_curl(curl_command)`: a request from a curl command line,
    /// unknown options logged as a warning (see [`from_curl_with`](Self::from_curl_with)).
    ///
    /// # Examples
    ///
    /// ```
    /// use trawl::crawl::Request;
    ///
    /// let r = Request::from_curl(
    ///     "curl 'https://example.com/api' -H 'accept: application/json' \
    ///      -H 'cookie: session=abc' --data-raw '{\"q\":1}' --compressed",
    /// )
    /// .unwrap();
    /// assert_eq!(r.method().as_str(), "POST");
    /// assert_eq!(r.headers().get_str("Accept"), Some("application/json"));
    /// assert_eq!(r.cookies(), [("session".to_string(), "abc".to_string())]);
    /// assert_eq!(r.body(), br#"{"q":1}"#);
    /// ```
    ///
    /// # Errors
    ///
    /// As [`curl_to_request_kwargs`], and a URL the request cannot hold.
    pub fn from_curl(curl_command: &str) -> Result<Self, CurlError> {
        Self::from_curl_with(curl_command, true)
    }

    /// `Request.from_curl(curl_command, ignore_unknown_options=...)`: with `false`,
    /// an unknown option is an error instead of a warning.
    ///
    /// # Errors
    ///
    /// As [`from_curl`](Self::from_curl).
    pub fn from_curl_with(
        curl_command: &str,
        ignore_unknown_options: bool,
    ) -> Result<Self, CurlError> {
        let parts = curl_to_request_kwargs(curl_command, ignore_unknown_options)?;
        if let Some(w) = parts.warning() {
            log::warn!("{w}");
        }
        let mut request = super::error::get(&parts.url).map_err(|e| CurlError(e.to_string()))?;
        request.set_method(super::Method::new(&parts.method));
        // Scrapy's `Headers(list)`: names title-cased, the values of one name together
        // at its first place.
        let mut grouped: PyDict<Vec<String>> = PyDict::default();
        for (name, value) in parts.headers {
            grouped.entry(py_title(&name), Vec::new).push(value);
        }
        for (name, values) in grouped.entries {
            for value in values {
                request.headers_mut().append(&name, &value);
            }
        }
        if !parts.cookies.is_empty() {
            request.set_cookies(parts.cookies);
        }
        if let Some(body) = parts.body {
            request.set_body(body.into_bytes());
        }
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn title_cases_as_python() {
        assert_eq!(py_title("x-foo_bar1a"), "X-Foo_Bar1A");
        assert_eq!(py_title("ACCEPT-language"), "Accept-Language");
    }

    #[test]
    fn unquotes_as_http_cookies() {
        assert_eq!(unquote(r#""a\101\"b""#), "aA\"b");
        assert_eq!(unquote("plain"), "plain");
        assert_eq!(unquote("\""), "\"");
    }
}
