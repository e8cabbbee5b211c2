//! [`Response`]: a downloaded page with Scrapy's conveniences — decoded text, `urljoin`,
//! `follow`, and selection ([`Selection`]: CSS with parsel's `::text` / `::attr(name)`,
//! XPath 1.0 with parsel's extensions).
//!
//! A response is a cheap handle (`Rc`): middlewares, the scraper and callbacks share one
//! body (`Bytes`, never copied). Text decoding and the HTML DOM are built lazily, at most
//! once, and only if asked for: a spider that only extracts links with the link
//! extractor never pays for a DOM.
//!
//! Text encoding follows w3lib's `html_to_unicode`: a byte-order mark first, then the
//! `Content-Type` charset, then a `<meta charset>` / `http-equiv` declaration in the first
//! 4 KiB, then (nothing declared) windows-1252 for a pure-ASCII body (Scrapy's `ascii`,
//! which w3lib resolves to cp1252), UTF-8 if valid, else windows-1252. Labels map
//! through the WHATWG table (`latin-1` is windows-1252, as in browsers and w3lib).

use std::cell::OnceCell;
use std::fmt;
use std::net::IpAddr;
use std::rc::{Rc, Weak};

use bytes::Bytes;
use url::Url;

pub use super::encoding::resolve_encoding;
use crate::crawl::http::request::Request;
use crate::crawl::http::selector::Selection;
use crate::proto::Headers;

struct Inner {
    url: Url,
    status: u16,
    headers: Headers,
    body: Body,
    request: Request,
    flags: Vec<String>,
    ip: Option<IpAddr>,
    protocol: Option<&'static str>,
    /// `Some(text)` when the body had to be transcoded; `None` when it is valid UTF-8.
    text: OnceCell<Option<String>>,
    encoding: OnceCell<&'static encoding_rs::Encoding>,
    dom: OnceCell<crate::html::Document>,
    /// The XML document after `remove_namespaces()`, and whether it was asked for.
    stripped_dom: OnceCell<crate::html::Document>,
    strip_namespaces: std::cell::Cell<bool>,
    /// Namespaces registered for XPath (`register_namespace`).
    namespaces: std::cell::RefCell<Vec<(String, String)>>,
    base: OnceCell<Url>,
    /// The base URL as Scrapy's `get_base_url` writes it (for `follow`).
    scrapy_base: OnceCell<String>,
}

/// How much of a page's text Scrapy reads for a meta refresh and a `<base href>`
/// (`response.text[0:4096]` in both).
pub(crate) const HEAD_CHARS: usize = 4096;

/// A response's body: its bytes, held as a `String` when they are valid UTF-8. The
/// check runs once, when the response is built, and moves the buffer without copying
/// it; [`Response::text`] then hands out the string as it is, however often a page is
/// read (its DOM, links, meta refresh, base URL), without checking it again.
enum Body {
    Bytes(Bytes),
    Utf8(String),
}

impl Body {
    /// `bytes` as a body: a buffer only this response holds is checked for UTF-8 and
    /// kept as a `String` if it is (no copy either way); a shared one stays shared.
    fn new(bytes: Bytes) -> Self {
        if !bytes.is_unique() {
            return Self::Bytes(bytes);
        }
        match String::from_utf8(Vec::from(bytes)) {
            Ok(s) => Self::Utf8(s),
            Err(e) => Self::Bytes(Bytes::from(e.into_bytes())),
        }
    }

    fn as_bytes(&self) -> &[u8] {
        match self {
            Self::Bytes(b) => b,
            Self::Utf8(s) => s.as_bytes(),
        }
    }

    /// The body as text, when it is known to be valid UTF-8.
    fn utf8(&self) -> Option<&str> {
        match self {
            Self::Bytes(_) => None,
            Self::Utf8(s) => Some(s),
        }
    }

    /// The buffer back to the thread's pool ([`crate::util::recycle_buffer`]) when
    /// this body is its only holder.
    fn recycle(&mut self) {
        match self {
            Self::Utf8(s) => crate::util::recycle_buffer(std::mem::take(s).into_bytes()),
            Self::Bytes(b) if b.is_unique() => {
                crate::util::recycle_buffer(Vec::from(std::mem::take(b)));
            }
            Self::Bytes(_) => {}
        }
    }

    /// The bytes as a [`Bytes`] (a copy of a `String` body).
    fn to_bytes(&self) -> Bytes {
        match self {
            Self::Bytes(b) => b.clone(),
            Self::Utf8(s) => Bytes::copy_from_slice(s.as_bytes()),
        }
    }
}

impl Drop for Body {
    fn drop(&mut self) {
        self.recycle();
    }
}

/// A downloaded response: Scrapy's `Response` / `TextResponse` / `HtmlResponse`.
#[derive(Clone)]
pub struct Response {
    inner: Rc<Inner>,
}

/// The parts of a response, for building one.
#[derive(Debug, Clone)]
pub struct ResponseBuilder {
    /// Final URL.
    pub url: Url,
    /// Status code.
    pub status: u16,
    /// Headers.
    pub headers: Headers,
    /// Body.
    pub body: Bytes,
    /// The request that produced it.
    pub request: Request,
    /// Flags (`cached`, `redirected`, `dataloss`...).
    pub flags: Vec<String>,
    /// Server IP.
    pub ip: Option<IpAddr>,
    /// `"HTTP/1.1"`...
    pub protocol: Option<&'static str>,
}

impl ResponseBuilder {
    /// Builds the response.
    pub fn build(self) -> Response {
        Response {
            inner: Rc::new(Inner {
                url: self.url,
                status: self.status,
                headers: self.headers,
                body: Body::new(self.body),
                request: self.request,
                flags: self.flags,
                ip: self.ip,
                protocol: self.protocol,
                text: OnceCell::new(),
                encoding: OnceCell::new(),
                dom: OnceCell::new(),
                stripped_dom: OnceCell::new(),
                strip_namespaces: std::cell::Cell::new(false),
                namespaces: std::cell::RefCell::new(Vec::new()),
                base: OnceCell::new(),
                scrapy_base: OnceCell::new(),
            }),
        }
    }
}

/// Which response a per-response cache was filled from, without keeping the response
/// alive: while this is held its allocation is not reused, so another response never
/// matches it.
#[derive(Debug, Clone)]
pub(crate) struct ResponseId(Weak<Inner>);

impl ResponseId {
    /// Whether `response` is the one this was taken from.
    pub(crate) fn is(&self, response: &Response) -> bool {
        std::ptr::eq(self.0.as_ptr(), Rc::as_ptr(&response.inner))
    }
}

impl Response {
    /// This response's [`ResponseId`].
    pub(crate) fn id(&self) -> ResponseId {
        ResponseId(Rc::downgrade(&self.inner))
    }

    /// A response for `request` (its URL), with `status` and `body`.
    pub fn new(request: Request, status: u16, headers: Headers, body: impl Into<Bytes>) -> Self {
        ResponseBuilder {
            url: request.url().clone(),
            status,
            headers,
            body: body.into(),
            request,
            flags: Vec::new(),
            ip: None,
            protocol: None,
        }
        .build()
    }

    /// The parts, to build a modified copy (Scrapy's `response.replace()`); a body held
    /// as bytes is shared, one held as text (valid UTF-8) is copied.
    pub fn to_builder(&self) -> ResponseBuilder {
        let i = &self.inner;
        ResponseBuilder {
            url: i.url.clone(),
            status: i.status,
            headers: i.headers.clone(),
            body: i.body.to_bytes(),
            request: i.request.clone(),
            flags: i.flags.clone(),
            ip: i.ip,
            protocol: i.protocol,
        }
    }

    /// Whether this is an HTML page (Scrapy's `HtmlResponse`): a `Content-Type`
    /// naming HTML, or no type and a body that starts like markup.
    pub fn is_html(&self) -> bool {
        match self.inner.headers.get_str("Content-Type") {
            // `"html" in content_type.lower()`, without the lower-cased copy.
            Some(ct) => ct
                .as_bytes()
                .windows(4)
                .any(|w| w.eq_ignore_ascii_case(b"html")),
            None => self
                .inner
                .body
                .as_bytes()
                .trim_ascii_start()
                .starts_with(b"<"),
        }
    }

    /// The URL.
    pub fn url(&self) -> &Url {
        &self.inner.url
    }

    /// The status code.
    pub fn status(&self) -> u16 {
        self.inner.status
    }

    /// The headers.
    pub fn headers(&self) -> &Headers {
        &self.inner.headers
    }

    /// The raw body.
    pub fn body(&self) -> &[u8] {
        self.inner.body.as_bytes()
    }

    /// The request that produced this response.
    pub fn request(&self) -> &Request {
        &self.inner.request
    }

    /// `request.meta` (Scrapy's `response.meta`).
    pub fn meta(&self) -> &crate::crawl::http::request::Meta {
        self.inner.request.meta()
    }

    /// Flags.
    pub fn flags(&self) -> &[String] {
        &self.inner.flags
    }

    /// The server's IP address.
    pub fn ip_address(&self) -> Option<IpAddr> {
        self.inner.ip
    }

    /// The protocol (`"HTTP/1.1"`).
    pub fn protocol(&self) -> Option<&'static str> {
        self.inner.protocol
    }

    /// The encoding used to decode the body.
    pub fn encoding(&self) -> &'static encoding_rs::Encoding {
        self.inner.encoding.get_or_init(|| {
            super::encoding::detect_encoding(
                self.inner.headers.get("content-type"),
                self.inner.body.as_bytes(),
                self.inner.body.utf8().is_some(),
            )
        })
    }

    /// The first [`HEAD_CHARS`] characters of the text, where Scrapy looks for a meta
    /// refresh and a `<base href>`.
    pub(crate) fn head(&self) -> &str {
        crate::util::prefix_chars(self.text(), HEAD_CHARS)
    }

    /// The body decoded to text (no copy when it is valid UTF-8).
    pub fn text(&self) -> &str {
        let transcoded = self.inner.text.get_or_init(|| {
            let enc = self.encoding();
            let body = strip_bom(self.inner.body.as_bytes());
            if enc == encoding_rs::UTF_8
                && (self.inner.body.utf8().is_some() || std::str::from_utf8(body).is_ok())
            {
                return None;
            }
            // ASCII reads the same in every ASCII-compatible encoding: no copy.
            if enc.is_ascii_compatible() && body.is_ascii() {
                return None;
            }
            let (text, _, _) = enc.decode(body);
            let mut text = text.into_owned();
            if enc == encoding_rs::WINDOWS_1252
                && body
                    .iter()
                    .any(|b| matches!(b, 0x81 | 0x8d | 0x8f | 0x90 | 0x9d))
            {
                // Python's cp1252 (Scrapy's) has no characters there: U+FFFD, where
                // WHATWG's windows-1252 keeps the C1 control.
                text = text.replace(
                    ['\u{81}', '\u{8d}', '\u{8f}', '\u{90}', '\u{9d}'],
                    "\u{fffd}",
                );
            }
            Some(text)
        });
        match (transcoded, self.inner.body.utf8()) {
            (Some(t), _) => t,
            // Valid UTF-8; a BOM is one character (U+FEFF), so what follows it is too.
            (None, Some(s)) => s.strip_prefix('\u{feff}').unwrap_or(s),
            // Checked valid above (a body shared with another response).
            (None, None) => {
                std::str::from_utf8(strip_bom(self.inner.body.as_bytes())).unwrap_or("")
            }
        }
    }

    /// The URL relative links resolve against (Scrapy's `get_base_url(response)`,
    /// parsed for the network): `<base href>` if the page has one.
    pub fn base_url(&self) -> &Url {
        self.inner.base.get_or_init(|| {
            Url::parse(self.scrapy_base_url()).unwrap_or_else(|_| self.inner.url.clone())
        })
    }

    /// Scrapy's `response.urljoin(href)`: CPython's `urljoin` against the base URL
    /// (`<base href>` aware), as Scrapy's string.
    ///
    /// # Errors
    ///
    /// Where CPython's `urljoin` raises (an invalid IPv6 literal).
    pub fn urljoin_str(&self, href: &str) -> Result<String, url::ParseError> {
        crate::crawl::util::canonical::urljoin(self.scrapy_base_url(), href)
            .map_err(|_| url::ParseError::InvalidIpv6Address)
    }

    /// [`urljoin_str`](Self::urljoin_str) parsed for the network (the `url` crate's
    /// view of Scrapy's string). To build a request, prefer
    /// `Request::get(&response.urljoin_str(href)?)`, which keeps Scrapy's URL text.
    ///
    /// # Errors
    ///
    /// The joined text is not a valid absolute URL.
    pub fn urljoin(&self, href: &str) -> Result<Url, url::ParseError> {
        Url::parse(&self.urljoin_str(href)?)
    }

    /// A request for `href` resolved against this response (Scrapy's
    /// `response.follow`), with the default callback: CPython's `urljoin` against the
    /// base URL (`<base href>` aware), then `safe_url_string` with the page's encoding
    /// for the query and fragment — the URL Scrapy's request would hold (its
    /// [`url_str`](Request::url_str)).
    ///
    /// # Errors
    ///
    /// Where Scrapy raises: no scheme after joining (`javascript:`, `mailto:`, `tel:`),
    /// a bad port, a character the page's encoding cannot encode in the query; or a URL
    /// the network layer cannot parse.
    pub fn follow(&self, href: impl AsRef<str>) -> Result<Request, url::ParseError> {
        let href = href.as_ref();
        let joined = crate::crawl::util::canonical::urljoin(self.scrapy_base_url(), href)
            .map_err(|_| url::ParseError::InvalidPort)?;
        let text = crate::crawl::util::canonical::safe_url_string_encoded(&joined, self.encoding())
            .map_err(|_| url::ParseError::InvalidPort)?;
        if !(text.contains("://") || text.starts_with("about:") || text.starts_with("data:")) {
            // Scrapy: "Missing scheme in request url".
            return Err(url::ParseError::RelativeUrlWithoutBase);
        }
        let mut request = Request::new(Url::parse(&text)?);
        request.set_scrapy_url(text);
        Ok(request)
    }

    /// Scrapy's `response.url`: the request's [`url_str`](Request::url_str), or (after
    /// a redirect handled below the engine) the response URL made safe.
    pub(crate) fn scrapy_url(&self) -> std::borrow::Cow<'_, str> {
        if self.request().url() == &self.inner.url {
            std::borrow::Cow::Borrowed(self.request().url_str())
        } else {
            std::borrow::Cow::Owned(
                crate::crawl::util::canonical::safe_url_string(self.inner.url.as_str())
                    .unwrap_or_else(|_| self.inner.url.as_str().to_owned()),
            )
        }
    }

    /// w3lib's `get_base_url` in Scrapy's form: the page's URL (its request's
    /// `url_str`), or a `<base href>` joined to it.
    pub(crate) fn scrapy_base_url(&self) -> &str {
        self.inner.scrapy_base.get_or_init(|| {
            let page = self.scrapy_url().into_owned();
            // `response.text[0:4096]`: the first 4,096 characters.
            let Some(href) = crate::crawl::util::basehref::base_href(self.head()) else {
                return page;
            };
            let href = crate::util::strip_html5_whitespace(href);
            if href.is_empty() {
                return page;
            }
            crate::crawl::util::canonical::safe_url_string_encoded(href, self.encoding())
                .ok()
                .and_then(|h| crate::crawl::util::canonical::urljoin(&page, &h).ok())
                .unwrap_or(page)
        })
    }

    /// Requests for every href that resolves (Scrapy's `response.follow_all(urls)`);
    /// invalid ones are skipped (Scrapy's generator raises at the first, DESIGN.md
    /// §15). Takes strings or [`Link`](crate::crawl::linkextract::Link)s (their URL).
    pub fn follow_all<T: AsRef<str>>(&self, hrefs: impl IntoIterator<Item = T>) -> Vec<Request> {
        hrefs
            .into_iter()
            .filter_map(|h| self.follow(h.as_ref()).ok())
            .collect()
    }

    /// Scrapy's `response.follow(selector)`: a request for the `href` of a selected
    /// `<a>` or `<link>` element, or for a selected text or attribute (`@href`,
    /// `::attr(href)`), resolved as [`follow`](Self::follow) resolves it.
    ///
    /// # Examples
    ///
    /// ```
    /// use trawl::crawl::{Request, Response};
    /// use trawl::proto::Headers;
    ///
    /// let req = Request::get("http://example.com/a/").unwrap();
    /// let html = r#"<ul><li><a href="b.html">b</a></li><li><a href="/c">c</a></li></ul>"#;
    /// let r = Response::new(req, 200, Headers::new(), html);
    /// let first = r.css("li a").into_iter().next().unwrap();
    /// assert_eq!(r.follow_selection(&first).unwrap().url_str(), "http://example.com/a/b.html");
    /// let urls: Vec<_> = r.follow_all_css("li a").iter().map(|q| q.url_str().to_owned()).collect();
    /// assert_eq!(urls, ["http://example.com/a/b.html", "http://example.com/c"]);
    /// ```
    ///
    /// # Errors
    ///
    /// A selection Scrapy refuses ([`Selection::follow_href`]: several results,
    /// another element, an `<a>` without `href`, a number), or an `href` that
    /// [`follow`](Self::follow) refuses.
    pub fn follow_selection(&self, selection: &Selection<'_>) -> Result<Request, FollowError> {
        let href = selection.follow_href().map_err(FollowError::Selector)?;
        self.follow(&href).map_err(FollowError::Url)
    }

    /// `response.follow_all(selector_list)`: a request for each result that gives
    /// one ([`follow_selection`](Self::follow_selection)); results Scrapy passes over
    /// (elements other than `<a>`/`<link>`, no `href`) and URLs that do not resolve
    /// are skipped.
    pub fn follow_all_selection(&self, selection: &Selection<'_>) -> Vec<Request> {
        selection
            .clone()
            .into_iter()
            .filter_map(|one| self.follow_selection(&one).ok())
            .collect()
    }

    /// `response.follow_all(css=query)`.
    pub fn follow_all_css(&self, query: &str) -> Vec<Request> {
        self.follow_all_selection(&self.css(query))
    }

    /// `response.follow_all(xpath=query)`.
    pub fn follow_all_xpath(&self, query: &str) -> Vec<Request> {
        self.follow_all_selection(&self.xpath(query))
    }

    /// Scrapy's `response.json()`: the text (BOM removed) parsed as JSON.
    ///
    /// # Errors
    ///
    /// Not JSON — and, unlike Python's `json.loads`, `NaN`, `Infinity` and numbers
    /// beyond `f64` (a `serde_json::Value` holds finite numbers only; DESIGN.md §15).
    pub fn json(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::from_str(self.text())
    }

    /// The parsed document, if something already asked for it.
    pub fn document_if_parsed(&self) -> Option<&crate::html::Document> {
        self.inner.dom.get()
    }

    /// The parsed document (built on first use) of [`selector_text`](Self::selector_text):
    /// XML for an [`is_xml`](Self::is_xml) response (Scrapy's `XmlResponse`; without
    /// namespaces after [`remove_namespaces`](Self::remove_namespaces)), else HTML.
    pub fn document(&self) -> &crate::html::Document {
        if self.inner.strip_namespaces.get() {
            return self
                .inner
                .stripped_dom
                .get_or_init(|| self.parse_document(true));
        }
        self.inner.dom.get_or_init(|| self.parse_document(false))
    }

    fn parse_document(&self, strip_namespaces: bool) -> crate::html::Document {
        if self.is_xml() {
            match crate::html::Document::parse_xml(self.selector_text(), strip_namespaces) {
                Ok(doc) => return doc,
                Err(e) => log::error!("{}: {e}", self.inner.url),
            }
            return crate::html::Document::parse("<html></html>");
        }
        crate::html::Document::parse(self.selector_text())
    }

    /// Whether Scrapy makes this an `XmlResponse` (its `responsetypes`): a
    /// `Content-Type` of `text/xml`, `application/xml`, `application/rss+xml`,
    /// `application/atom+xml` or `application/rdf+xml`; without one, a URL ending in
    /// `.xml`, or a body that declares `<?xml` (and has no `<html>`) in its first
    /// 5,000 bytes.
    pub fn is_xml(&self) -> bool {
        match self.inner.headers.get_str("Content-Type") {
            Some(ct) => {
                let mime = ct.split(';').next().unwrap_or("").trim();
                [
                    "text/xml",
                    "application/xml",
                    "application/rss+xml",
                    "application/atom+xml",
                    "application/rdf+xml",
                ]
                .iter()
                .any(|m| mime.eq_ignore_ascii_case(m))
            }
            None => {
                if self.inner.url.path().to_ascii_lowercase().ends_with(".xml") {
                    return true;
                }
                let head =
                    &self.inner.body.as_bytes()[..self.inner.body.as_bytes().len().min(5000)];
                let has = |needle: &[u8]| {
                    head.windows(needle.len())
                        .any(|w| w.eq_ignore_ascii_case(needle))
                };
                !has(b"<html>") && has(b"<?xml")
            }
        }
    }

    /// parsel's `register_namespace(prefix, uri)`: the prefix in every XPath query of
    /// this response from now on.
    pub fn register_namespace(&self, prefix: &str, uri: &str) {
        self.inner
            .namespaces
            .borrow_mut()
            .push((prefix.to_owned(), uri.to_owned()));
    }

    /// parsel's `remove_namespaces()`: from now on this response's XML is selected
    /// without namespaces (local names, namespaced attributes under their local
    /// names), so `//item` finds the items of a feed with a default namespace.
    pub fn remove_namespaces(&self) {
        self.inner.strip_namespaces.set(true);
    }

    /// The document as a selection, with the registered namespaces.
    fn selection(&self) -> Selection<'_> {
        let base = Selection::of_document(self.document());
        let registered = self.inner.namespaces.borrow();
        if registered.is_empty() {
            base
        } else {
            base.with_namespaces(registered.iter().map(|(p, u)| (p.as_str(), u.as_str())))
        }
    }

    /// parsel's `response.xpath(query, namespaces={...})`.
    pub fn xpath_ns(&self, query: &str, namespaces: &[(&str, &str)]) -> Selection<'_> {
        self.selection().xpath_ns(query, namespaces)
    }

    /// [`xpath_ns`](Self::xpath_ns) returning the error (an undefined prefix...).
    ///
    /// # Errors
    ///
    /// As [`Selection::try_xpath_ns`].
    pub fn try_xpath_ns(
        &self,
        query: &str,
        namespaces: &[(&str, &str)],
    ) -> Result<Selection<'_>, crate::html::XPathError> {
        self.selection().try_xpath_ns(query, namespaces, &[])
    }

    /// The text parsel's `Selector(response)` parses, and so what Scrapy's selectors
    /// and link extractor see: the text with whitespace stripped from both ends
    /// (Python's `str.strip()`), or `<html></html>` when nothing is left.
    pub fn selector_text(&self) -> &str {
        match crate::util::python_strip(self.text()) {
            "" => "<html></html>",
            text => text,
        }
    }

    /// Selects with a CSS selector, with parsel's `::text` and `::attr(name)`
    /// extensions. An invalid selector logs an error and selects nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use trawl::crawl::{Request, Response};
    /// use trawl::proto::Headers;
    ///
    /// let req = Request::get("http://example.com/a/").unwrap();
    /// let html = r#"<div class="q"><span>Hi</span><a href="b.html">b</a></div>"#;
    /// let r = Response::new(req, 200, Headers::new(), html);
    /// assert_eq!(r.css("div.q span::text").get().as_deref(), Some("Hi"));
    /// assert_eq!(r.css("a::attr(href)").getall(), ["b.html"]);
    /// for q in r.css("div.q") {
    ///     assert_eq!(q.css("a::text").get().as_deref(), Some("b"));
    /// }
    /// ```
    pub fn css(&self, query: &str) -> Selection<'_> {
        self.selection().css(query)
    }

    /// [`css`](Self::css), returning a malformed selector as an error (parsel raises
    /// `SelectorSyntaxError` / `ExpressionError`), so a typo is told from an empty page.
    ///
    /// # Errors
    ///
    /// The selector does not parse, or names a pseudo-element or pseudo-class cssselect
    /// does not know.
    pub fn try_css(&self, query: &str) -> Result<Selection<'_>, crate::html::SelectorError> {
        self.selection().try_css(query)
    }

    /// Selects with an XPath 1.0 expression, the root element as the context node (as
    /// parsel's `response.xpath`), with parsel's `has-class` and the EXSLT `re:` and
    /// `set:` functions. An invalid expression logs an error and selects nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use trawl::crawl::{Request, Response};
    /// use trawl::proto::Headers;
    ///
    /// let req = Request::get("http://example.com/").unwrap();
    /// let html = r#"<ul><li class="a">1</li><li class="a b">2</li></ul>"#;
    /// let r = Response::new(req, 200, Headers::new(), html);
    /// assert_eq!(r.xpath("//li[has-class('b')]/text()").getall(), ["2"]);
    /// assert_eq!(r.xpath("count(//li)").get().as_deref(), Some("2.0"));
    /// assert_eq!(r.css("ul").xpath("./li[1]/@class").get().as_deref(), Some("a"));
    /// ```
    pub fn xpath(&self, query: &str) -> Selection<'_> {
        self.selection().xpath(query)
    }

    /// [`xpath`](Self::xpath) with `$variables` bound.
    pub fn xpath_with(&self, query: &str, vars: &[(&str, crate::html::XPathVar)]) -> Selection<'_> {
        self.selection().xpath_with(query, vars)
    }

    /// parsel's `response.jmespath(query)` (Scrapy 2.x): on a JSON response (any
    /// `Content-Type` but HTML whose body parses as JSON) the query runs on the body;
    /// on an HTML page on the root element's own text, as parsel does (usually
    /// nothing: select a `<script>` first, `response.css("script::text").jmespath(q)`).
    /// A malformed query logs an error and selects nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use trawl::crawl::{Request, Response};
    /// use trawl::proto::Headers;
    ///
    /// let mut headers = Headers::new();
    /// headers.append("Content-Type", "application/json");
    /// let body = r#"{"quotes": [{"author": "Ann", "n": 3}, {"author": "Bob", "n": 5}]}"#;
    /// let r = Response::new(Request::get("http://example.com/api").unwrap(), 200, headers, body);
    /// assert_eq!(r.jmespath("quotes[*].author").getall(), ["Ann", "Bob"]);
    /// assert_eq!(r.jmespath("max(quotes[*].n)").get().as_deref(), Some("5"));
    /// ```
    pub fn jmespath(&self, query: &str) -> Selection<'_> {
        self.try_jmespath(query).unwrap_or_else(|e| {
            log::error!("JMESPath error in {query:?}: {e}");
            Selection::empty()
        })
    }

    /// [`jmespath`](Self::jmespath), returning a malformed query's error.
    ///
    /// # Errors
    ///
    /// The query does not compile.
    pub fn try_jmespath(&self, query: &str) -> Result<Selection<'_>, String> {
        let html = self
            .headers()
            .get("content-type")
            .is_some_and(|ct| crate::util::contains_ascii_ci(ct, b"html"));
        if !html && let Ok(data) = self.json() {
            return Selection::of_json(data).jmespath(query);
        }
        Selection::of_document(self.document()).jmespath(query)
    }

    /// [`xpath_with`](Self::xpath_with), returning the error of a malformed expression.
    ///
    /// # Errors
    ///
    /// As [`Selection::try_xpath`].
    pub fn try_xpath(
        &self,
        query: &str,
        vars: &[(&str, crate::html::XPathVar)],
    ) -> Result<Selection<'_>, crate::html::XPathError> {
        self.selection().try_xpath(query, vars)
    }
}

impl fmt::Debug for Response {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{} {}>", self.inner.status, self.inner.url)
    }
}

/// Why [`Response::follow_selection`] made no request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FollowError {
    /// The selection gives no URL (Scrapy's `_InvalidSelector` / `ValueError` message).
    Selector(String),
    /// The URL does not resolve (as [`Response::follow`]).
    Url(url::ParseError),
}

impl std::fmt::Display for FollowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Selector(m) => f.write_str(m),
            Self::Url(e) => write!(f, "cannot follow: {e}"),
        }
    }
}

impl std::error::Error for FollowError {}

fn strip_bom(body: &[u8]) -> &[u8] {
    body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body)
}

/// The wait a `429` or `503` asks for with `Retry-After` (delay-seconds, or an HTTP date
/// against `now_wall`), capped at `max` seconds; `None` without a usable header or when
/// `max` is 0. Scrapy ignores the header (scrapy#3849).
pub fn retry_after_seconds(response: &Response, now_wall: f64, max: f64) -> Option<f64> {
    if max <= 0.0 || !matches!(response.status(), 429 | 503) {
        return None;
    }
    let value = response.headers().get_str("retry-after")?.trim();
    let secs = if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        value.parse::<f64>().ok()?
    } else {
        let at = crate::proto::date::parse_http_date(value)?;
        (at as f64 - now_wall).max(0.0)
    };
    Some(secs.min(max))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp(headers: &[(&str, &str)], body: &[u8]) -> Response {
        let req = Request::get("http://example.com/dir/page.html").unwrap();
        Response::new(req, 200, headers.iter().copied().collect(), body.to_vec())
    }

    #[test]
    fn html_is_named_by_the_content_type_in_any_case_else_by_a_leading_tag() {
        // Python's `"html" in content_type.lower()` (an ASCII lowering here, as the
        // header is ASCII), and a body starting with `<` without the header.
        for (ct, html) in [
            ("text/html; charset=utf-8", true),
            ("TEXT/HTML", true),
            ("application/xhtml+xml", true),
            ("x-HtMl", true),
            ("htm", false),
            ("text/plain", false),
            ("", false),
            ("h\u{e9}tml", false),
        ] {
            assert_eq!(
                resp(&[("Content-Type", ct)], b"<p>").is_html(),
                html,
                "{ct}"
            );
        }
        assert!(resp(&[], b"  <p>").is_html());
        assert!(!resp(&[], b"p<").is_html());
    }

    #[test]
    fn encoding_detection_order() {
        // Nothing declared: ASCII is Scrapy's `ascii`, resolved to cp1252; UTF-8 text
        // is UTF-8 (tests/encoding_reference.rs has the recorded cases).
        assert_eq!(resp(&[], b"plain").encoding(), encoding_rs::WINDOWS_1252);
        assert_eq!(
            resp(&[], "caf\u{e9}".as_bytes()).encoding(),
            encoding_rs::UTF_8
        );
        let r = resp(
            &[("Content-Type", "text/html; charset=ISO-8859-1")],
            b"caf\xe9",
        );
        assert_eq!(r.encoding(), encoding_rs::WINDOWS_1252);
        assert_eq!(r.text(), "café");
        let r = resp(&[], b"<html><head><meta charset=\"koi8-r\"></head>\xc1");
        assert_eq!(r.encoding(), encoding_rs::KOI8_R);
        let r = resp(
            &[],
            b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=windows-1251\">",
        );
        assert_eq!(r.encoding(), encoding_rs::WINDOWS_1251);
        let r = resp(
            &[("Content-Type", "text/html; charset=latin-1")],
            b"\xEF\xBB\xBFbom wins",
        );
        assert_eq!(r.encoding(), encoding_rs::UTF_8);
        assert_eq!(r.text(), "bom wins");
        // Nothing declared and not UTF-8: windows-1252 (Scrapy guesses with
        // charset-normalizer; see DESIGN.md).
        let r = resp(&[], b"bad \xff utf8");
        assert_eq!(r.encoding(), encoding_rs::WINDOWS_1252);
        assert_eq!(r.text(), "bad \u{ff} utf8");
        for (label, enc) in [
            ("latin-1", encoding_rs::WINDOWS_1252),
            ("ISO8859_15", encoding_rs::ISO_8859_15),
            ("cp932", encoding_rs::SHIFT_JIS),
            ("utf8", encoding_rs::UTF_8),
            ("Latin-9", encoding_rs::ISO_8859_15),
        ] {
            assert_eq!(resolve_encoding(label.as_bytes()), Some(enc), "{label}");
        }
        assert_eq!(resolve_encoding(b"no-such-charset"), None);
    }

    #[test]
    fn urljoin_and_base_href() {
        let r = resp(&[], b"<a href=x>");
        assert_eq!(
            r.urljoin("../up.html").unwrap().as_str(),
            "http://example.com/up.html"
        );
        let r = resp(
            &[],
            b"<html><head><base href=\"http://other.example/base/\"></head><body></body>",
        );
        assert_eq!(
            r.follow("x.html").unwrap().url().as_str(),
            "http://other.example/base/x.html"
        );
    }

    #[test]
    fn css_with_pseudo_elements() {
        let html = br#"<html><body><div class="quote"><span class="text">One</span><small class="author">A</small></div>
            <div class="quote"><span class="text">Two &amp; more</span><small class="author">B</small></div>
            <ul><li><a href="/x">x</a></li><li><a href="y?b=2&amp;a=1">y</a></li></ul></body></html>"#;
        let r = resp(&[], html);
        assert_eq!(r.css("span.text::text").getall(), ["One", "Two & more"]);
        assert_eq!(r.css("a::attr(href)").getall(), ["/x", "y?b=2&a=1"]);
        let authors: Vec<String> = r
            .css("div.quote")
            .into_iter()
            .filter_map(|q| q.css("small.author::text").get())
            .collect();
        assert_eq!(authors, ["A", "B"]);
        assert_eq!(
            r.css("html").len(),
            1,
            "the root element itself can be selected"
        );
        assert!(r.css("div[").is_empty(), "invalid selectors select nothing");
        assert_eq!(r.css("ul").css("li a::text").getall(), ["x", "y"]);
        assert_eq!(r.css("a").attrib("href"), Some("/x"));
    }
}
