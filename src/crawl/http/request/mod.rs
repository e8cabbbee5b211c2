//! [`Request`]: what to download and what to do with the answer — data only, so every
//! request serialises to JSON and back without loss (the disk and Redis queues depend on
//! it; there is no "unserialisable request" category as in Scrapy).
//!
//! Callbacks and errbacks are referred to *by name* and dispatched by the spider.
//!
//! # Memory
//!
//! A scheduler may hold a million of these, so the layout is compact: the URL, the
//! method, the callback name (an `Rc<str>` shared by every request with that callback),
//! priority and flags inline; everything else (`meta`, headers, body, errback,
//! `cb_kwargs`, flags, cookies, encoding) behind one optional box. `meta` keeps its
//! first entry inline, so a followed link (`depth`, a `Referer`) allocates that box and
//! its header bytes, nothing more.
//! A dropped request's box, when it was the last holder, is emptied and kept for the
//! next request that needs one (a few per thread): most links' requests are dropped by
//! the dupefilter right after their box was filled.
//!
//! Beside it: its meta keys ([`keys`]), its record format ([`record`]), and Scrapy's
//! request kinds [`JsonRequest`](json_request::JsonRequest) and
//! [`FormRequest`](form::FormRequest).

use std::cell::OnceCell;
use std::fmt;
use std::rc::Rc;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use url::Url;

use crate::proto::Headers;

pub mod curl;
pub mod curl_args;
pub mod error;
pub mod form;
pub mod json_request;
pub mod keys;
mod meta;
pub mod record;

pub use meta::Meta;
use meta::NO_META;

/// An HTTP method. The common ones take no allocation.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub enum Method {
    /// GET
    #[default]
    Get,
    /// POST
    Post,
    /// HEAD
    Head,
    /// PUT
    Put,
    /// DELETE
    Delete,
    /// Anything else, upper-cased (boxed twice to keep the enum at 16 bytes).
    Other(Box<String>),
}

impl Method {
    /// Parses a method name (upper-cased, as Scrapy does).
    pub fn new(name: &str) -> Self {
        let upper = name.to_ascii_uppercase();
        match upper.as_str() {
            "GET" => Self::Get,
            "POST" => Self::Post,
            "HEAD" => Self::Head,
            "PUT" => Self::Put,
            "DELETE" => Self::Delete,
            _ => Self::Other(Box::new(upper)),
        }
    }

    /// The method name.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Get => "GET",
            Self::Post => "POST",
            Self::Head => "HEAD",
            Self::Put => "PUT",
            Self::Delete => "DELETE",
            Self::Other(s) => s.as_str(),
        }
    }

    /// The method name, borrowed for the standard methods (no copy per download).
    pub fn to_cow(&self) -> std::borrow::Cow<'static, str> {
        match self {
            Self::Other(s) => std::borrow::Cow::Owned(s.as_str().to_owned()),
            Self::Get => std::borrow::Cow::Borrowed("GET"),
            Self::Post => std::borrow::Cow::Borrowed("POST"),
            Self::Head => std::borrow::Cow::Borrowed("HEAD"),
            Self::Put => std::borrow::Cow::Borrowed("PUT"),
            Self::Delete => std::borrow::Cow::Borrowed("DELETE"),
        }
    }
}

impl fmt::Debug for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The rarely used fields, boxed together.
#[derive(Clone, Default, PartialEq, Debug)]
struct Extra {
    meta: Meta,
    headers: Headers,
    body: Vec<u8>,
    errback: Option<Rc<str>>,
    cb_kwargs: Option<Box<Map<String, Value>>>,
    flags: Vec<String>,
    cookies: Vec<(String, String)>,
    encoding: Option<Box<str>>,
    /// The URL as Scrapy writes it (w3lib's `safe_url_string`), when the `url` crate's
    /// serialisation differs (`http://h:80/`, `http://example.com`): what fingerprints,
    /// records and logs use.
    scrapy_url: Option<Box<str>>,
}

/// A request to download: Scrapy's `Request`. Two requests are equal when every field
/// Scrapy keeps is equal (however it is stored).
///
/// # Examples
///
/// ```
/// use trawl::crawl::Request;
///
/// let r = Request::get("http://example.com/a?b=1")
///     .unwrap()
///     .with_callback("parse_item")
///     .with_priority(5)
///     .with_meta("depth", 2);
/// let json = serde_json::to_string(&r).unwrap();
/// let back: Request = serde_json::from_str(&json).unwrap();
/// assert_eq!(back, r);
/// assert_eq!(back.callback(), Some("parse_item"));
/// ```
#[derive(Clone)]
pub struct Request {
    /// The `url` crate's parse, made on first use when the request was built from an
    /// already-safe URL (`lazy`): most extracted links are dropped by the dupefilter,
    /// which reads only the string.
    /// Behind an `Rc`: a request moves through many hands (spider middlewares, the
    /// scheduler) and most never need their URL parsed, so 8 bytes move instead of 88;
    /// and the copies the download path makes (engine, middleware manager, handler,
    /// the response's own) share one parse instead of copying it.
    url: OnceCell<Rc<Url>>,
    /// Scrapy's URL string of a request whose parse is deferred (see [`Request::get`]).
    lazy: Option<Box<str>>,
    method: Method,
    callback: Option<Rc<str>>,
    priority: i32,
    dont_filter: bool,
    /// Shared by the request's copies and copied on the first write (`Rc::make_mut`):
    /// the download path's copies (engine, middleware manager, handler, response) cost
    /// a reference count each, not a copy of meta and headers.
    extra: Option<Rc<Extra>>,
}

/// Most boxes held by the spare list: enough for the requests one page's links have in
/// hand at once (a link's request is usually dropped by the dupefilter before the
/// next one is made).
const SPARE_EXTRAS: usize = 16;

thread_local! {
    /// Optional boxes of dropped requests, emptied, for the next request that needs
    /// one. A followed link gets its box on its first write (`depth`, `Referer`) and
    /// most are dropped by the dupefilter a moment later: taking the box just given
    /// back writes to memory still in cache, where the allocator would hand out a
    /// block it has not touched for a while (mimalloc reuses a freed block only once
    /// its page's free list runs out).
    static SPARE: std::cell::RefCell<Vec<Rc<Extra>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// An empty box: a spare one when there is one.
fn new_extra() -> Rc<Extra> {
    SPARE
        .try_with(|s| s.try_borrow_mut().ok().and_then(|mut s| s.pop()))
        .ok()
        .flatten()
        .unwrap_or_default()
}

impl Drop for Request {
    fn drop(&mut self) {
        let Some(mut extra) = self.extra.take() else {
            return;
        };
        // Only the last holder's box, and only when the spare list has room: it is
        // emptied first (nothing, not even capacity, goes from one request to the
        // next), outside the list's borrow.
        let room = SPARE
            .try_with(|s| s.try_borrow().is_ok_and(|s| s.len() < SPARE_EXTRAS))
            .unwrap_or(false);
        let Some(e) = Rc::get_mut(&mut extra).filter(|_| room) else {
            return;
        };
        *e = Extra::default();
        let _ = SPARE.try_with(|s| {
            if let Ok(mut s) = s.try_borrow_mut() {
                s.push(extra);
            }
        });
    }
}

impl Request {
    /// A GET request for an already parsed URL.
    pub fn new(url: Url) -> Self {
        Self::get_request(OnceCell::from(Rc::new(url)), None)
    }

    /// A plain GET with the URL in one of its two forms.
    fn get_request(url: OnceCell<Rc<Url>>, lazy: Option<Box<str>>) -> Self {
        Self {
            url,
            lazy,
            method: Method::Get,
            callback: None,
            priority: 0,
            dont_filter: false,
            extra: None,
        }
    }

    /// A GET request. The URL is made safe as Scrapy's `Request` makes it (w3lib's
    /// `safe_url_string`: that string is [`url_str`](Self::url_str), which fingerprints
    /// and records use) and parsed by the `url` crate for the network
    /// ([`url`](Self::url)).
    ///
    /// # Errors
    ///
    /// The URL does not parse or is relative.
    pub fn get(url: &str) -> Result<Self, url::ParseError> {
        let text = url.trim();
        if crate::crawl::util::canonical::parses_as_is(text) {
            // Safe already (`safe_url_string` would return it) and certain to parse:
            // the parse waits for `url()`.
            return Ok(Self::deferred(text.to_owned()));
        }
        let Ok(safe) = crate::crawl::util::canonical::safe_url_string(text) else {
            // w3lib refuses it (a bad port, brackets): the url crate decides.
            return Ok(Self::new(Url::parse(text)?));
        };
        if crate::crawl::util::canonical::parses_as_is(&safe) {
            return Ok(Self::deferred(safe));
        }
        let parsed = Url::parse(&safe)?;
        let mut request = Self::new(parsed);
        request.set_scrapy_url(safe);
        Ok(request)
    }

    /// [`get`](Self::get) taking the URL by value: a URL that is safe already (a
    /// [`Link::url`](crate::crawl::linkextract::Link), which the link extractor made safe) is kept as it
    /// is, without a second copy.
    ///
    /// # Errors
    ///
    /// As [`get`](Self::get).
    pub fn get_owned(url: String) -> Result<Self, url::ParseError> {
        if url.trim().len() == url.len() && crate::crawl::util::canonical::parses_as_is(&url) {
            return Ok(Self::deferred(url));
        }
        Self::get(&url)
    }

    /// A GET request for `safe`, a URL `parses_as_is` admits, parsed on first use.
    fn deferred(safe: String) -> Self {
        Self::get_request(OnceCell::new(), Some(safe.into_boxed_str()))
    }

    /// Records `text` as the URL's Scrapy form (kept only when it differs from the
    /// `url` crate's serialisation; a borrowed `text` is copied only then).
    pub(crate) fn set_scrapy_url(&mut self, text: impl AsRef<str> + Into<String>) {
        // Parsed now (from the deferred string), before that string goes.
        let _ = self.url();
        self.lazy = None;
        if Some(text.as_ref()) != self.url.get().map(|u| u.as_str()) {
            self.extra_mut().scrapy_url = Some(text.into().into_boxed_str());
        } else if self.extra.as_ref().is_some_and(|e| e.scrapy_url.is_some()) {
            self.extra_mut().scrapy_url = None;
        }
    }

    /// The URL as Scrapy's `request.url` holds it (w3lib's `safe_url_string`), which
    /// can differ from [`url`](Self::url)'s WHATWG form (`http://example.com` keeps no
    /// `/`, a default port stays): fingerprints, records and logs use this one.
    pub fn url_str(&self) -> &str {
        if let Some(text) = &self.lazy {
            return text;
        }
        self.extra
            .as_ref()
            .and_then(|e| e.scrapy_url.as_deref())
            .or_else(|| self.url.get().map(|u| u.as_str()))
            .unwrap_or("")
    }

    fn extra_mut(&mut self) -> &mut Extra {
        Rc::make_mut(self.extra.get_or_insert_with(new_extra))
    }

    /// The URL.
    pub fn url(&self) -> &Url {
        self.url.get_or_init(|| {
            let text = self.lazy.as_deref().unwrap_or("");
            #[allow(clippy::expect_used)] // A constant that parses: not data.
            Rc::new(
                crate::crawl::util::canonical::parse_as_is(text).unwrap_or_else(|e| {
                    // `parses_as_is` promised otherwise (and is tested against the parser).
                    log::error!("a deferred URL did not parse: {text:?}: {e}");
                    Url::parse("http://invalid.invalid/").expect("a constant URL parses")
                }),
            )
        })
    }

    /// The URL's host, as `url().host_str()` gives it; read from the string, without
    /// parsing it, while the parse is deferred (the scheduler's downloader-aware queue
    /// asks every request it queues for its slot).
    pub fn url_host(&self) -> Option<&str> {
        match (&self.lazy, self.url.get()) {
            (Some(text), None) => crate::crawl::util::canonical::host_as_is(text),
            _ => self.url().host_str(),
        }
    }

    /// Replaces the URL.
    pub fn set_url(&mut self, url: Url) {
        self.url = OnceCell::from(Rc::new(url));
        self.lazy = None;
        if self.extra.as_ref().is_some_and(|e| e.scrapy_url.is_some()) {
            self.extra_mut().scrapy_url = None;
        }
    }

    /// The method.
    pub fn method(&self) -> &Method {
        &self.method
    }

    /// Sets the method.
    pub fn with_method(mut self, method: &str) -> Self {
        self.method = Method::new(method);
        self
    }

    /// Sets the method in place.
    pub fn set_method(&mut self, method: Method) {
        self.method = method;
    }

    /// The callback name (`None` means the spider's `parse`).
    pub fn callback(&self) -> Option<&str> {
        self.callback.as_deref()
    }

    /// Sets the callback by name.
    pub fn with_callback(mut self, name: &str) -> Self {
        self.callback = Some(name.into());
        self
    }

    /// Sets the callback with a shared name (no allocation).
    pub fn with_callback_rc(mut self, name: Rc<str>) -> Self {
        self.callback = Some(name);
        self
    }

    /// The shared callback name.
    pub fn callback_rc(&self) -> Option<&Rc<str>> {
        self.callback.as_ref()
    }

    /// The errback name.
    pub fn errback(&self) -> Option<&str> {
        self.extra.as_ref().and_then(|e| e.errback.as_deref())
    }

    /// Sets the errback by name.
    pub fn with_errback(mut self, name: &str) -> Self {
        self.extra_mut().errback = Some(name.into());
        self
    }

    /// The priority (higher first).
    pub fn priority(&self) -> i32 {
        self.priority
    }

    /// Sets the priority.
    pub fn with_priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// Sets the priority in place.
    pub fn set_priority(&mut self, priority: i32) {
        self.priority = priority;
    }

    /// Whether the dupefilter is bypassed.
    pub fn dont_filter(&self) -> bool {
        self.dont_filter
    }

    /// Bypasses (or not) the dupefilter.
    pub fn with_dont_filter(mut self, yes: bool) -> Self {
        self.dont_filter = yes;
        self
    }

    /// Sets `dont_filter` in place.
    pub fn set_dont_filter(&mut self, yes: bool) {
        self.dont_filter = yes;
    }

    /// `meta`.
    pub fn meta(&self) -> &Meta {
        self.extra.as_deref().map_or(&NO_META, |e| &e.meta)
    }

    /// `meta`, mutable.
    pub fn meta_mut(&mut self) -> &mut Meta {
        &mut self.extra_mut().meta
    }

    /// Sets one `meta` key.
    pub fn with_meta(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.meta_mut().insert(key, value);
        self
    }

    /// The headers.
    pub fn headers(&self) -> &Headers {
        static EMPTY: std::sync::OnceLock<Headers> = std::sync::OnceLock::new();
        match &self.extra {
            Some(e) => &e.headers,
            None => EMPTY.get_or_init(Headers::new),
        }
    }

    /// The headers, mutable.
    pub fn headers_mut(&mut self) -> &mut Headers {
        &mut self.extra_mut().headers
    }

    /// Adds a header.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers_mut().append(name, value);
        self
    }

    /// The body.
    pub fn body(&self) -> &[u8] {
        self.extra.as_ref().map_or(&[], |e| &e.body)
    }

    /// Sets the body.
    pub fn with_body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.extra_mut().body = body.into();
        self
    }

    /// Sets the body in place.
    pub fn set_body(&mut self, body: Vec<u8>) {
        self.extra_mut().body = body;
    }

    /// Keyword arguments for the callback.
    pub fn cb_kwargs(&self) -> Option<&Map<String, Value>> {
        self.extra
            .as_ref()
            .and_then(|e| e.cb_kwargs.as_deref())
            .filter(|m| !m.is_empty())
    }

    /// Sets one callback keyword argument.
    pub fn with_cb_kwarg(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra_mut()
            .cb_kwargs
            .get_or_insert_with(Box::default)
            .insert(key.to_owned(), value.into());
        self
    }

    /// Flags (for logging).
    pub fn flags(&self) -> &[String] {
        self.extra.as_ref().map_or(&[], |e| &e.flags)
    }

    /// Adds a flag.
    pub fn add_flag(&mut self, flag: &str) {
        self.extra_mut().flags.push(flag.to_owned());
    }

    /// Cookies to send (`name`, `value`).
    pub fn cookies(&self) -> &[(String, String)] {
        self.extra.as_ref().map_or(&[], |e| &e.cookies)
    }

    /// Adds a cookie.
    pub fn with_cookie(mut self, name: &str, value: &str) -> Self {
        self.extra_mut()
            .cookies
            .push((name.to_owned(), value.to_owned()));
        self
    }

    /// Asks for this request not to be sent before `secs` seconds from when it is
    /// scheduled (meta `download_delay`; Scrapy #802). The wait happens in the
    /// scheduler: the request holds no download slot meanwhile and blocks no other
    /// request. The absolute time is kept in meta `not_before`, so it survives disk
    /// and Redis queues.
    pub fn with_delay(mut self, secs: f64) -> Self {
        self.meta_mut().insert_static(keys::DOWNLOAD_DELAY, secs);
        self
    }

    /// Replaces the request's cookies (`request.cookies` in Scrapy).
    pub fn set_cookies(&mut self, cookies: Vec<(String, String)>) {
        if cookies.is_empty() && self.extra.is_none() {
            return;
        }
        self.extra_mut().cookies = cookies;
    }

    /// The encoding used for the URL and form bodies (`utf-8` by default).
    pub fn encoding(&self) -> &str {
        self.extra
            .as_ref()
            .and_then(|e| e.encoding.as_deref())
            .unwrap_or("utf-8")
    }

    /// The encoding, when one was set.
    pub fn explicit_encoding(&self) -> Option<&str> {
        self.extra.as_ref().and_then(|e| e.encoding.as_deref())
    }

    /// Replaces the callback keyword arguments.
    pub fn set_cb_kwargs(&mut self, kwargs: Map<String, Value>) {
        if kwargs.is_empty() && self.extra.is_none() {
            return;
        }
        self.extra_mut().cb_kwargs = (!kwargs.is_empty()).then(|| Box::new(kwargs));
    }

    /// Sets the encoding.
    pub fn with_encoding(mut self, encoding: &str) -> Self {
        self.extra_mut().encoding = Some(encoding.into());
        self
    }

    /// Drops spare capacity in meta, headers and the rest, so a request that will
    /// wait in a queue holds only what it needs (the scheduler calls it on enqueue).
    pub fn shrink_to_fit(&mut self) {
        // A shared one is left as it is: shrinking it would copy it.
        if let Some(e) = self.extra.as_mut().and_then(Rc::get_mut) {
            e.meta.shrink_to_fit();
            e.headers.shrink_to_fit();
            e.body.shrink_to_fit();
            e.flags.shrink_to_fit();
            e.cookies.shrink_to_fit();
        }
    }

    /// A copy with a different URL and the same everything else (Scrapy's
    /// `request.replace(url=...)`).
    pub fn replace_url(&self, url: Url) -> Self {
        let mut r = self.clone();
        r.set_url(url);
        r
    }
}

impl PartialEq for Request {
    fn eq(&self, other: &Self) -> bool {
        self.url() == other.url()
            && self.url_str() == other.url_str()
            && self.method == other.method
            && self.callback == other.callback
            && self.priority == other.priority
            && self.dont_filter == other.dont_filter
            && self.meta() == other.meta()
            && self.headers() == other.headers()
            && self.body() == other.body()
            && self.errback() == other.errback()
            && self.cb_kwargs() == other.cb_kwargs()
            && self.flags() == other.flags()
            && self.cookies() == other.cookies()
            && self.explicit_encoding() == other.explicit_encoding()
    }
}

impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{} {}>", self.method, self.url_str())
    }
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{} {}>", self.method, self.url_str())
    }
}

/// The JSON form: defaults are omitted; a body that is not UTF-8 goes as `body_b64`.
#[derive(Serialize, Deserialize)]
struct Wire {
    url: String,
    #[serde(default, skip_serializing_if = "is_get")]
    method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    callback: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    errback: Option<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    priority: i32,
    #[serde(default, skip_serializing_if = "is_false")]
    dont_filter: bool,
    #[serde(default, skip_serializing_if = "Meta::is_empty")]
    meta: Meta,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    headers: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    body_b64: Option<String>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    cb_kwargs: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    flags: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    cookies: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    encoding: Option<String>,
}

fn is_get(m: &str) -> bool {
    m.is_empty() || m == "GET"
}

fn is_zero(p: &i32) -> bool {
    *p == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Serialize for Request {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let extra = self.extra.as_deref();
        let body = extra.map_or(&[][..], |e| &e.body);
        let (body, body_b64) = if body.is_empty() {
            (None, None)
        } else {
            match std::str::from_utf8(body) {
                Ok(text) => (Some(text.to_owned()), None),
                Err(_) => (None, Some(crate::util::base64_encode(body))),
            }
        };
        let headers = extra.map_or_else(Vec::new, |e| {
            e.headers
                .iter()
                .map(|(n, v)| {
                    (
                        String::from_utf8_lossy(n).into_owned(),
                        String::from_utf8_lossy(v).into_owned(),
                    )
                })
                .collect()
        });
        Wire {
            url: self.url_str().to_owned(),
            method: self.method.as_str().to_owned(),
            callback: self.callback.as_deref().map(str::to_owned),
            errback: extra.and_then(|e| e.errback.as_deref()).map(str::to_owned),
            priority: self.priority,
            dont_filter: self.dont_filter,
            meta: self.meta().clone(),
            headers,
            body,
            body_b64,
            cb_kwargs: extra
                .and_then(|e| e.cb_kwargs.as_deref().cloned())
                .unwrap_or_default(),
            flags: extra.map(|e| e.flags.clone()).unwrap_or_default(),
            cookies: extra.map(|e| e.cookies.clone()).unwrap_or_default(),
            encoding: extra.and_then(|e| e.encoding.as_deref().map(str::to_owned)),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Request {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = Wire::deserialize(d)?;
        let url = Url::parse(&w.url)
            .map_err(|e| D::Error::custom(format!("bad url {:?}: {e}", w.url)))?;
        let url_text = w.url.clone();
        let body = match (w.body, w.body_b64) {
            (Some(text), _) => text.into_bytes(),
            (None, Some(b64)) => {
                crate::util::base64_decode(&b64).ok_or_else(|| D::Error::custom("bad body_b64"))?
            }
            (None, None) => Vec::new(),
        };
        let mut r = Request::new(url);
        if !w.method.is_empty() {
            r.method = Method::new(&w.method);
        }
        r.callback = w.callback.map(Into::into);
        r.priority = w.priority;
        r.dont_filter = w.dont_filter;
        let extra = Extra {
            meta: w.meta,
            headers: w.headers.into_iter().collect(),
            body,
            errback: w.errback.map(Into::into),
            cb_kwargs: (!w.cb_kwargs.is_empty()).then(|| Box::new(w.cb_kwargs)),
            flags: w.flags,
            cookies: w.cookies,
            encoding: w.encoding.map(String::into_boxed_str),
            scrapy_url: None,
        };
        if extra != Extra::default() {
            r.extra = Some(Rc::new(extra));
        }
        r.set_scrapy_url(url_text);
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_layout() {
        // Keep the inline part small: a request is moved by value through every
        // spider middleware, the engine and the scheduler, so its size is copied
        // many times per extracted link (the parsed URL is boxed for this).
        assert!(
            std::mem::size_of::<Request>() <= 72,
            "{}",
            std::mem::size_of::<Request>()
        );
    }

    #[test]
    fn meta_keeps_insertion_order_across_its_inline_entry() {
        let mut m = Meta::new();
        assert!(m.is_empty() && m.iter().next().is_none());
        for (i, k) in ["a", "b", "c", "d"].iter().enumerate() {
            assert_eq!(m.insert(k, i), None);
        }
        assert_eq!(m.insert_static("depth", 9), None);
        assert_eq!(m.insert("b", 10), Some(Value::from(1)));
        let keys = |m: &Meta| m.iter().map(|(k, _)| k.to_owned()).collect::<Vec<_>>();
        assert_eq!(keys(&m), ["a", "b", "c", "d", "depth"]);
        // Removing the inline entry brings the next one forward, in order.
        assert_eq!(m.remove("a"), Some(Value::from(0)));
        assert_eq!(keys(&m), ["b", "c", "d", "depth"]);
        assert_eq!(m.remove("d"), Some(Value::from(3)));
        assert_eq!(m.remove("zz"), None);
        assert_eq!(keys(&m), ["b", "c", "depth"]);
        assert_eq!(m.len(), 3);
        assert_eq!(m.get_i64("b"), Some(10));
        for k in ["b", "c", "depth"] {
            assert!(m.remove(k).is_some());
        }
        assert!(m.is_empty());
        assert_eq!(m.len(), 0, "len agrees with is_empty");
        assert_eq!(m, Meta::new());
        // A request without meta has no box; reading its meta does not make one.
        let r = Request::get("http://example.com/").unwrap();
        assert!(r.meta().is_empty());
        assert!(r.extra.is_none());
        let r = r.with_meta("depth", 1);
        assert_eq!(r.meta().get_i64("depth"), Some(1));
    }

    /// A dropped request's box is given to the next request that needs one, empty;
    /// a box another copy still holds is not.
    #[test]
    fn a_dropped_requests_box_is_reused_empty() {
        let full = || {
            Request::get("http://example.com/a")
                .unwrap()
                .with_errback("eb")
                .with_meta("depth", 3)
                .with_meta("other", "x")
                .with_header("Referer", "http://example.com/")
                .with_body(b"body".to_vec())
                .with_cb_kwarg("k", 1)
                .with_cookie("c", "v")
                .with_encoding("latin-1")
        };
        let first = full();
        let boxed = Rc::as_ptr(first.extra.as_ref().unwrap());
        drop(first);
        let second = Request::get("http://example.com/b")
            .unwrap()
            .with_meta("depth", 1);
        assert_eq!(
            Rc::as_ptr(second.extra.as_ref().unwrap()),
            boxed,
            "the box was not reused"
        );
        let alone = Request::get("http://example.com/b")
            .unwrap()
            .with_meta("depth", 1);
        assert!(second == alone, "the reused box kept something: {second:?}");
        assert!(second.headers().is_empty() && second.body().is_empty());
        assert_eq!(second.meta().len(), 1);
        // A shared box stays with its other holder, whole.
        let kept = full();
        let copy = kept.clone();
        let shared = Rc::as_ptr(kept.extra.as_ref().unwrap());
        drop(kept);
        let third = Request::get("http://example.com/c")
            .unwrap()
            .with_meta("depth", 2);
        assert_ne!(Rc::as_ptr(third.extra.as_ref().unwrap()), shared);
        assert_eq!(copy.meta().get_i64("depth"), Some(3));
        assert_eq!(
            copy.headers().get("Referer"),
            Some(&b"http://example.com/"[..])
        );
        assert_eq!(copy.errback(), Some("eb"));
    }

    #[test]
    fn json_roundtrip_everything() {
        let r = Request::get("https://example.com/p?q=1")
            .unwrap()
            .with_method("post")
            .with_callback("cb")
            .with_errback("eb")
            .with_priority(-3)
            .with_dont_filter(true)
            .with_meta("depth", 3)
            .with_meta("nested", serde_json::json!({"a": [1, 2]}))
            .with_header("X-A", "1")
            .with_header("X-A", "2")
            .with_body(vec![0xff, 0x00, 0x10])
            .with_cb_kwarg("page", 7)
            .with_cookie("sid", "abc")
            .with_encoding("latin-1");
        let json = serde_json::to_string(&r).unwrap();
        let back: Request = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
        assert_eq!(back.method().as_str(), "POST");
        assert_eq!(back.body(), [0xff, 0x00, 0x10]);
        assert_eq!(back.headers().get_all("x-a").count(), 2);
    }

    #[test]
    fn plain_get_serialises_small() {
        let r = Request::get("http://example.com/").unwrap();
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"url":"http://example.com/"}"#
        );
    }

    #[test]
    fn bad_json_is_an_error_not_a_panic() {
        assert!(serde_json::from_str::<Request>(r#"{"url":"not a url"}"#).is_err());
        assert!(serde_json::from_str::<Request>(r#"{"url":"http://x/","body_b64":"!!"}"#).is_err());
        assert!(serde_json::from_str::<Request>(r#"{"nourl":1}"#).is_err());
    }
}
