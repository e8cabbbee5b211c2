//! [`LinkExtractor`]: Scrapy's `LxmlLinkExtractor` without a DOM.
//!
//! A crawl spends most of its CPU on HTML, and following links needs no tree: when no
//! DOM was built for the page, [`crate::html::scan_links`] finds `<a href>` /
//! `<area href>` (configurable `tags` and `attrs`) with the DOM's own tokenizer and
//! tree-repair rules, so the links and their texts are the ones the DOM would give;
//! when a DOM exists, the links come from it. Each [`Link::url`] is the string Scrapy
//! 2.19 builds (stripped, CPython `urljoin` on the `<base href>`-aware base URL,
//! `process_value`, `safe_url_string` with the page's encoding, `urljoin` on the page
//! URL); duplicates go before the filters (`http`/`https`/`file`/`ftp` only,
//! `allow`/`deny`, domains on `urlparse`'s netloc, `deny_extensions` — Scrapy's
//! `IGNORED_EXTENSIONS` by default — on its path, `restrict_text`), then optional
//! canonicalisation and a last dedupe (`unique`).

use std::rc::Rc;

use regex::Regex;

mod link;
mod unique;

pub use link::Link;
use unique::UrlSet;

use crate::crawl::http::response::Response;
pub use crate::html::RawLink;
use crate::html::TextBudget;

/// Scrapy's `IGNORED_EXTENSIONS`.
pub const IGNORED_EXTENSIONS: &[&str] = &[
    "7z", "7zip", "bz2", "rar", "tar", "tar.gz", "xz", "zip", "mng", "pct", "bmp", "gif", "jpg",
    "jpeg", "png", "pst", "psp", "tif", "tiff", "ai", "drw", "dxf", "eps", "ps", "svg", "cdr",
    "ico", "webp", "mp3", "wma", "ogg", "wav", "ra", "aac", "mid", "au", "aiff", "3gp", "asf",
    "asx", "avi", "mov", "mp4", "mpg", "qt", "rm", "swf", "wmv", "m4a", "m4v", "flv", "webm",
    "xls", "xlsm", "xlsx", "xltm", "xltx", "potm", "potx", "ppt", "pptm", "pptx", "pps", "doc",
    "docb", "docm", "docx", "dotm", "dotx", "odt", "ods", "odg", "odp", "css", "pdf", "exe", "bin",
    "rss", "dmg", "iso", "apk", "jar", "sh", "rb", "js", "hta", "bat", "cpl", "msi", "msp", "py",
];

/// Extracts links from HTML responses. Configure with the builder methods; the
/// defaults are Scrapy's.
#[derive(Clone)]
pub struct LinkExtractor {
    tags: Vec<String>,
    attrs: Vec<String>,
    unique: bool,
    canonicalize: bool,
    /// Extensions to skip, without their dot, as given.
    deny_extensions: crate::util::FxHashSet<String>,
    /// The longest of `deny_extensions`, in bytes (longer candidates are not looked up).
    longest_extension: usize,
    allow_domains: Vec<String>,
    deny_domains: Vec<String>,
    allow: Vec<Regex>,
    deny: Vec<Regex>,
    restrict_text: Vec<Regex>,
    restrict_css: Vec<String>,
    restrict_xpaths: Vec<Rc<crate::html::XPath>>,
    process_value: Option<ProcessValue>,
    with_text: bool,
    /// The working sets of the last call, lent to the next (taken out for the call,
    /// so a `process_value` that extracts links again finds it empty, not borrowed).
    scratch: std::cell::RefCell<Scratch>,
}

/// [`LinkExtractor::extract_links`]'s working sets, kept between calls with their
/// capacity: a crawl extracts links page after page.
#[derive(Clone, Default)]
struct Scratch {
    seen: UrlSet,
    region_seen: UrlSet,
    candidates: Vec<Link>,
}

impl LinkExtractor {
    /// Hands the working sets back for the next call, emptied — unless a page with
    /// very many links grew them (they are dropped then, not kept at that size).
    fn keep_scratch(&self, mut scratch: Scratch) {
        const KEEP_LINKS: usize = 1024;
        if scratch.candidates.capacity() > KEEP_LINKS
            || scratch.seen.capacity() > KEEP_LINKS
            || scratch.region_seen.capacity() > KEEP_LINKS
        {
            return;
        }
        scratch.seen.clear();
        scratch.region_seen.clear();
        scratch.candidates.clear();
        self.scratch.replace(scratch);
    }
}

impl std::fmt::Debug for LinkExtractor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkExtractor")
            .field("tags", &self.tags)
            .field("attrs", &self.attrs)
            .field(
                "allow",
                &self.allow.iter().map(Regex::as_str).collect::<Vec<_>>(),
            )
            .field(
                "deny",
                &self.deny.iter().map(Regex::as_str).collect::<Vec<_>>(),
            )
            .field("allow_domains", &self.allow_domains)
            .field("deny_domains", &self.deny_domains)
            .field("restrict_css", &self.restrict_css)
            .field(
                "restrict_xpaths",
                &self
                    .restrict_xpaths
                    .iter()
                    .map(|x| x.source())
                    .collect::<Vec<_>>(),
            )
            .field("unique", &self.unique)
            .field("canonicalize", &self.canonicalize)
            .finish()
    }
}

/// Scrapy's `process_value` callable.
type ProcessValue = Rc<dyn Fn(&str) -> Option<String>>;

fn compile(patterns: &[&str]) -> Result<Vec<Regex>, regex::Error> {
    patterns.iter().map(|p| Regex::new(p)).collect()
}

impl Default for LinkExtractor {
    fn default() -> Self {
        Self {
            tags: vec!["a".into(), "area".into()],
            attrs: vec!["href".into()],
            unique: true,
            canonicalize: false,
            deny_extensions: IGNORED_EXTENSIONS.iter().map(|e| (*e).to_owned()).collect(),
            longest_extension: IGNORED_EXTENSIONS
                .iter()
                .map(|e| e.len())
                .max()
                .unwrap_or(0),
            allow_domains: Vec::new(),
            deny_domains: Vec::new(),
            allow: Vec::new(),
            deny: Vec::new(),
            restrict_text: Vec::new(),
            restrict_css: Vec::new(),
            restrict_xpaths: Vec::new(),
            process_value: None,
            with_text: true,
            scratch: std::cell::RefCell::default(),
        }
    }
}

impl LinkExtractor {
    /// Scrapy's defaults: `a` and `area` tags, `href`, unique, not canonicalised,
    /// `IGNORED_EXTENSIONS` denied.
    pub fn new() -> Self {
        Self::default()
    }

    /// Tags to look at.
    pub fn tags<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> Self {
        self.tags = tags
            .into_iter()
            .map(|t| t.into().to_ascii_lowercase())
            .collect();
        self
    }

    /// Attributes holding URLs.
    pub fn attrs<S: Into<String>>(mut self, attrs: impl IntoIterator<Item = S>) -> Self {
        self.attrs = attrs
            .into_iter()
            .map(|a| a.into().to_ascii_lowercase())
            .collect();
        self
    }

    /// Drop duplicate URLs (default on).
    pub fn unique(mut self, yes: bool) -> Self {
        self.unique = yes;
        self
    }

    /// Canonicalise URLs with w3lib's `canonicalize_url` (default off).
    pub fn canonicalize(mut self, yes: bool) -> Self {
        self.canonicalize = yes;
        self
    }

    /// Extensions to skip (without their dot; replaces the default list). As in Scrapy,
    /// a link is dropped when its lower-cased path ends with `.` and one of them, as
    /// given: `"PDF"` matches nothing, `".pdf"` matches `a..pdf`.
    pub fn deny_extensions<S: AsRef<str>>(mut self, exts: impl IntoIterator<Item = S>) -> Self {
        self.deny_extensions = exts.into_iter().map(|e| e.as_ref().to_owned()).collect();
        self.longest_extension = self
            .deny_extensions
            .iter()
            .map(String::len)
            .max()
            .unwrap_or(0);
        self
    }

    /// Collect each link's text (default on; off saves work when only URLs matter).
    pub fn with_text(mut self, yes: bool) -> Self {
        self.with_text = yes;
        self
    }

    /// Only these domains and their subdomains.
    pub fn allow_domains<S: Into<String>>(mut self, domains: impl IntoIterator<Item = S>) -> Self {
        self.allow_domains = domains
            .into_iter()
            .map(|d| d.into().to_ascii_lowercase())
            .collect();
        self
    }

    /// Never these domains or their subdomains.
    pub fn deny_domains<S: Into<String>>(mut self, domains: impl IntoIterator<Item = S>) -> Self {
        self.deny_domains = domains
            .into_iter()
            .map(|d| d.into().to_ascii_lowercase())
            .collect();
        self
    }

    /// Only URLs matching one of these regular expressions (searched anywhere in the
    /// absolute URL, as Python's `re.search`).
    ///
    /// # Errors
    ///
    /// A pattern that does not compile.
    pub fn allow(mut self, patterns: &[&str]) -> Result<Self, regex::Error> {
        self.allow = compile(patterns)?;
        Ok(self)
    }

    /// Never URLs matching one of these regular expressions (deny wins over allow).
    ///
    /// # Errors
    ///
    /// A pattern that does not compile.
    pub fn deny(mut self, patterns: &[&str]) -> Result<Self, regex::Error> {
        self.deny = compile(patterns)?;
        Ok(self)
    }

    /// Only links whose text matches one of these regular expressions.
    ///
    /// # Errors
    ///
    /// A pattern that does not compile.
    pub fn restrict_text(mut self, patterns: &[&str]) -> Result<Self, regex::Error> {
        self.restrict_text = compile(patterns)?;
        if !self.restrict_text.is_empty() {
            self.with_text = true;
        }
        Ok(self)
    }

    /// Only links inside elements matching these CSS selectors.
    pub fn restrict_css<S: Into<String>>(mut self, selectors: impl IntoIterator<Item = S>) -> Self {
        self.restrict_css = selectors.into_iter().map(Into::into).collect();
        self
    }

    /// Only links inside the elements these XPath expressions select (Scrapy's
    /// `restrict_xpaths`, the most common argument of `CrawlSpider` rules), evaluated
    /// with the root element as the context node as parsel does. With
    /// [`restrict_css`](Self::restrict_css) too, the XPath regions come first, then the
    /// CSS ones (Scrapy translates the CSS to XPath and appends it); each region's
    /// links are extracted on their own and duplicates across regions dropped.
    ///
    /// # Errors
    ///
    /// An expression that does not compile (Scrapy raises when links are extracted).
    pub fn restrict_xpaths<S: AsRef<str>>(
        mut self,
        expressions: impl IntoIterator<Item = S>,
    ) -> Result<Self, crate::html::XPathError> {
        self.restrict_xpaths = expressions
            .into_iter()
            .map(|x| crate::html::XPath::compile(x.as_ref()).map(Rc::new))
            .collect::<Result<_, _>>()?;
        Ok(self)
    }

    /// Transforms (or, returning `None`, drops) each attribute value once it is
    /// joined with the base URL, before it is made safe (Scrapy's `process_value`).
    pub fn process_value(mut self, f: impl Fn(&str) -> Option<String> + 'static) -> Self {
        self.process_value = Some(Rc::new(f));
        self
    }

    /// The elements `restrict_xpaths` then `restrict_css` select, in that order (an
    /// element selected twice is a region twice, as in Scrapy). An XPath result that
    /// is not an element (a text, an attribute, a number) is logged and passed over,
    /// where Scrapy raises `AttributeError` (DESIGN.md §15).
    fn regions<'d>(&self, doc: &'d crate::html::Document) -> Vec<crate::html::ElementRef<'d>> {
        let mut regions = Vec::new();
        if let Some(root) = doc.root_element() {
            for x in &self.restrict_xpaths {
                match x.evaluate(root, &[]) {
                    Ok(crate::html::XPathValue::Nodes(nodes)) => {
                        let mut others = 0;
                        for node in nodes {
                            match node {
                                crate::html::XPathItem::Element(e) => regions.push(e),
                                _ => others += 1,
                            }
                        }
                        if others > 0 {
                            log::error!(
                                "LinkExtractor: restrict_xpaths {:?} selected {others} nodes that are not elements; passed over",
                                x.source()
                            );
                        }
                    }
                    Ok(_) => log::error!(
                        "LinkExtractor: restrict_xpaths {:?} is not a node-set; passed over",
                        x.source()
                    ),
                    Err(e) => log::error!("LinkExtractor: restrict_xpaths {:?}: {e}", x.source()),
                }
            }
        }
        for css in &self.restrict_css {
            let Ok(sel) = crate::html::Selector::parse(css) else {
                log::error!("LinkExtractor: invalid restrict_css selector {css:?}");
                continue;
            };
            regions.extend(doc.select(&sel));
        }
        regions
    }

    fn url_allowed(&self, url: &str) -> bool {
        if !self.allow.is_empty() && !self.allow.iter().any(|r| r.is_match(url)) {
            return false;
        }
        !self.deny.iter().any(|r| r.is_match(url))
    }

    /// The links of `response`, filtered and (with `unique`) deduplicated, as Scrapy
    /// 2.19's `LinkExtractor.extract_links` gives them: each attribute value stripped,
    /// joined to the base URL with CPython's `urljoin`, passed to `process_value`,
    /// made safe with the page's encoding and joined to the page URL; duplicates (by
    /// that URL) dropped before the filters, then the filters (scheme, `allow`/`deny`,
    /// domains and extensions on `urlparse`'s netloc and path, `restrict_text`),
    /// canonicalisation, and duplicates dropped again.
    pub fn extract_links(&self, response: &Response) -> Vec<Link> {
        let base = response.scrapy_base_url();
        let page = response.scrapy_url();
        let encoding = response.encoding();
        // The URLs kept (exact: `UrlSet`), in sets lent by the previous call.
        let Scratch {
            mut seen,
            mut region_seen,
            mut candidates,
        } = self.scratch.take();
        let mut out = Vec::with_capacity(24);
        let base_join = crate::crawl::util::canonical::Joiner::new(base);
        let page_join = crate::crawl::util::canonical::Joiner::new(&page);
        let resolve = |href: &str, text: String, nofollow: bool| -> Option<Link> {
            let href = crate::util::strip_html5_whitespace(href);
            let joined = base_join.join(href).ok()?;
            let value = match &self.process_value {
                Some(f) => std::borrow::Cow::Owned(f(&joined)?),
                None => joined,
            };
            let (safe, joins_to_itself) =
                match crate::crawl::util::canonical::safe_url_string_owned(value, encoding) {
                    Ok(s) => s,
                    Err(e) => {
                        log::debug!("Skipping extraction of link with bad URL {:?}: {e}", e.url);
                        return None;
                    }
                };
            // "to fix relative links after process_value" (a safe absolute URL
            // without `;` is its own join: skipped)
            let url = if joins_to_itself {
                safe
            } else {
                match page_join.join(&safe).ok()? {
                    std::borrow::Cow::Borrowed(_) => safe,
                    std::borrow::Cow::Owned(joined) => joined,
                }
            };
            Some(Link {
                url,
                text,
                fragment: String::new(),
                nofollow,
            })
        };
        let unique = self.unique;
        let collect = |candidates: &mut Vec<Link>,
                       region_seen: &mut UrlSet,
                       href: &str,
                       text: String,
                       nofollow: bool| {
            if let Some(link) = resolve(href, text, nofollow)
                && (!unique || region_seen.insert(&link.url, candidates))
            {
                candidates.push(link);
            }
        };
        let mut budget = TextBudget::for_page(response.text().len());
        if !self.restrict_css.is_empty() || !self.restrict_xpaths.is_empty() {
            let doc = response.document();
            for region in self.regions(doc) {
                region_links(
                    region,
                    &self.tags,
                    &self.attrs,
                    self.with_text,
                    &mut budget,
                    &mut |href, text, nofollow| {
                        collect(&mut candidates, &mut region_seen, href, text, nofollow);
                    },
                );
                // Scrapy extracts and processes each region on its own (the first
                // dedupe is per region, the last one over all of them).
                self.process_links(&mut candidates, &mut out, &mut seen);
                region_seen.clear();
            }
        } else {
            // A DOM built for CSS selection already has the links: do not tokenize twice.
            match response.document_if_parsed() {
                Some(doc) => dom_link_refs(
                    doc,
                    &self.tags,
                    &self.attrs,
                    self.with_text,
                    &mut budget,
                    |href, text, nofollow| {
                        collect(&mut candidates, &mut region_seen, href, text, nofollow);
                    },
                ),
                None => {
                    crate::html::scan_links(
                        response.selector_text(),
                        &self.tags,
                        &self.attrs,
                        self.with_text,
                        &mut |raw: RawLink| {
                            collect(
                                &mut candidates,
                                &mut region_seen,
                                &raw.href,
                                raw.text,
                                raw.nofollow,
                            );
                        },
                    );
                }
            }
            self.process_links(&mut candidates, &mut out, &mut seen);
        }
        self.keep_scratch(Scratch {
            seen,
            region_seen,
            candidates,
        });
        out
    }

    /// Scrapy's `_process_links` on one region's `candidates` (drained into `out`):
    /// the filters, canonicalisation, and (with `unique`) duplicates across regions.
    fn process_links(&self, candidates: &mut Vec<Link>, out: &mut Vec<Link>, seen: &mut UrlSet) {
        for mut link in candidates.drain(..) {
            if !self.link_allowed(&link) {
                continue;
            }
            if self.canonicalize
                && let Ok(c) =
                    crate::crawl::util::canonical::canonicalize_url(&link.url, true, false)
            {
                link.url = c;
            }
            if self.unique && !seen.insert(&link.url, out) {
                continue;
            }
            out.push(link);
        }
    }

    /// Scrapy's `_link_allowed`.
    fn link_allowed(&self, link: &Link) -> bool {
        // `_is_valid_url`: the text before the first "://" is one of these (none of
        // them holds "://", so a prefix test is the same question).
        if !["http://", "https://", "file://", "ftp://"]
            .iter()
            .any(|p| link.url.starts_with(p))
        {
            return false;
        }
        if !self.url_allowed(&link.url) {
            return false;
        }
        let needs_parts = !self.allow_domains.is_empty()
            || !self.deny_domains.is_empty()
            || !self.deny_extensions.is_empty();
        if needs_parts
            && !crate::crawl::util::canonical::with_netloc_and_path(&link.url, |netloc, path| {
                self.domain_allowed(netloc) && !self.has_denied_extension(path)
            })
            .unwrap_or(false)
        {
            return false;
        }
        self.restrict_text.is_empty() || self.restrict_text.iter().any(|r| r.is_match(&link.text))
    }

    /// Scrapy's `url_has_any_extension`: the lower-cased path ends with `.ext`.
    fn has_denied_extension(&self, path: &str) -> bool {
        if self.deny_extensions.is_empty() {
            return false;
        }
        // `path.lower().endswith("." + ext)` for some `ext`: every dot at most
        // `longest_extension` bytes from the end starts a candidate ("tar.gz" and
        // "gz"; "zip/x" too, as in Scrapy), so the path is read backwards that far.
        let b = path.as_bytes();
        let stop = b.len().saturating_sub(self.longest_extension + 1);
        let mut i = b.len();
        while i > stop {
            i -= 1;
            if b[i] != b'.' {
                continue;
            }
            let e = &path[i + 1..];
            let denied = if e.bytes().any(|b| b.is_ascii_uppercase() || !b.is_ascii()) {
                self.deny_extensions.contains(&e.to_lowercase())
            } else {
                self.deny_extensions.contains(e)
            };
            if denied {
                return true;
            }
        }
        false
    }

    /// Scrapy's `url_is_from_any_domain` on `urlparse(url).netloc` (the port and any
    /// userinfo included, as Scrapy compares them): allowed and not denied.
    fn domain_allowed(&self, netloc: &str) -> bool {
        if self.allow_domains.is_empty() && self.deny_domains.is_empty() {
            return true;
        }
        let host = netloc.as_bytes();
        let matches = |d: &String| {
            let d = d.as_bytes();
            !host.is_empty()
                && (host.eq_ignore_ascii_case(d)
                    || (host.len() > d.len()
                        && host[host.len() - d.len() - 1] == b'.'
                        && host[host.len() - d.len()..].eq_ignore_ascii_case(d)))
        };
        if !self.allow_domains.is_empty() && !self.allow_domains.iter().any(matches) {
            return false;
        }
        !self.deny_domains.iter().any(matches)
    }
}

/// The links of one element: one per link attribute (the first of each name), with
/// the element's text (spending `budget`) and its `rel=nofollow`.
fn element_links(
    e: crate::html::ElementRef<'_>,
    attrs: &[String],
    with_text: bool,
    budget: &mut TextBudget,
    found: &mut impl FnMut(&str, String, bool),
) {
    let mut hrefs = e
        .attrs()
        .filter(|(k, _)| attrs.iter().any(|a| a == k))
        .peekable();
    if hrefs.peek().is_none() {
        return;
    }
    let nofollow = e.attr("rel").is_some_and(crate::html::rel_has_nofollow);
    let mut text = if with_text {
        // Cut to the budget in place (a copy of the allowed part cost a second
        // string per link).
        let mut all = e.text_content();
        let allowed = budget.take(&all).len();
        all.truncate(allowed);
        all
    } else {
        String::new()
    };
    // Each link of the element gets the text; the last one takes it (an element has
    // one link attribute but for `attrs` naming several).
    while let Some((_, v)) = hrefs.next() {
        let text = if hrefs.peek().is_some() {
            text.clone()
        } else {
            std::mem::take(&mut text)
        };
        found(v, text, nofollow);
    }
}

/// The links inside `region` (the region itself included), in document order.
fn region_links(
    region: crate::html::ElementRef<'_>,
    tags: &[String],
    attrs: &[String],
    with_text: bool,
    budget: &mut TextBudget,
    found: &mut impl FnMut(&str, String, bool),
) {
    if tags.iter().any(|t| t.eq_ignore_ascii_case(region.name())) {
        element_links(region, attrs, with_text, budget, found);
    }
    let css = tags.join(", ");
    if let Ok(sel) = crate::html::Selector::parse(&css) {
        for e in region.select(&sel) {
            element_links(e, attrs, with_text, budget, found);
        }
    }
}

/// The links of an already parsed document, in document order.
pub fn dom_links(
    doc: &crate::html::Document,
    tags: &[String],
    attrs: &[String],
    with_text: bool,
    budget: &mut TextBudget,
    mut found: impl FnMut(RawLink),
) {
    dom_link_refs(
        doc,
        tags,
        attrs,
        with_text,
        budget,
        |href, text, nofollow| {
            found(RawLink {
                href: href.to_owned(),
                text,
                nofollow,
            });
        },
    );
}

/// [`dom_links`] with each link's `href` borrowed from the document: `(href, text,
/// nofollow)`.
fn dom_link_refs(
    doc: &crate::html::Document,
    tags: &[String],
    attrs: &[String],
    with_text: bool,
    budget: &mut TextBudget,
    mut found: impl FnMut(&str, String, bool),
) {
    let tag_keys: Vec<u64> = tags
        .iter()
        .map(|t| crate::html::name_key(&t.to_ascii_lowercase()))
        .collect();
    for e in doc.elements() {
        if !tag_keys.contains(&e.name_key())
            || !tags.iter().any(|t| t.eq_ignore_ascii_case(e.name()))
        {
            continue;
        }
        element_links(e, attrs, with_text, budget, &mut found);
    }
}

#[cfg(test)]
mod tests {
    use super::unique::COLLIDE;
    use super::*;
    use crate::crawl::http::request::Request;
    use crate::proto::Headers;

    fn raw(html: &str) -> Vec<RawLink> {
        let mut v = Vec::new();
        crate::html::scan_links(
            html,
            &["a".into(), "area".into()],
            &["href".into()],
            true,
            |l| v.push(l),
        );
        v
    }

    fn page(html: &str) -> Response {
        let req = Request::get("http://example.com/dir/page.html").expect("url");
        let mut h = Headers::new();
        h.append("Content-Type", "text/html");
        Response::new(req, 200, h, html.as_bytes().to_vec())
    }

    fn urls(le: &LinkExtractor, r: &Response) -> Vec<String> {
        le.extract_links(r)
            .into_iter()
            .map(|l| l.url.to_string())
            .collect()
    }

    #[test]
    fn unique_compares_urls_not_their_hashes() {
        // Every URL hashed alike: each hit must be confirmed by the strings, as
        // Scrapy's `unique_list` compares them.
        let html = "<a href=a>1</a><a href=b>2</a><a href=a>3</a><a href=c>4</a>\
                    <a href=b>5</a><div><a href=d>6</a><a href=c>7</a></div>";
        let r = page(html);
        let expected = dir_urls(["a", "b", "c", "d"]);
        let across_regions = dir_urls(["d", "c", "a", "b"]);
        let plain = LinkExtractor::new();
        let regions = LinkExtractor::new().restrict_css(["div", "body"]);
        let before = (urls(&plain, &r), urls(&regions, &r));
        assert_eq!(before, (expected.clone(), across_regions.clone()));
        for mode in [1, 2] {
            let colliding = colliding(mode, || (urls(&plain, &r), urls(&regions, &r)));
            assert_eq!(
                colliding,
                (expected.clone(), across_regions.clone()),
                "{mode}"
            );
        }
    }

    /// `http://example.com/dir/NAME` for each name (the links of [`page`]).
    fn dir_urls<S: std::fmt::Display>(names: impl IntoIterator<Item = S>) -> Vec<String> {
        names
            .into_iter()
            .map(|p| format!("http://example.com/dir/{p}"))
            .collect()
    }

    /// `f()` with the test-only hash collisions of `mode` (see `unique::COLLIDE`).
    fn colliding<T>(mode: u8, f: impl FnOnce() -> T) -> T {
        COLLIDE.set(mode);
        let out = f();
        COLLIDE.set(0);
        out
    }

    #[test]
    fn unique_stays_exact_and_linear_when_every_hash_collides() {
        // 300 distinct links, then 100 of them again: with every unseeded hash alike
        // the confirmations pass their budget and the seeded index takes over; with
        // the seeded hash colliding too, each hit compares with every kept link.
        let html: String = (0..300)
            .chain(0..100)
            .map(|i| format!("<a href=p{i}>{i}</a>"))
            .collect();
        let r = page(&html);
        let expected = dir_urls((0..300).map(|i| format!("p{i}")));
        let le = LinkExtractor::new();
        assert_eq!(urls(&le, &r), expected);
        for mode in [1, 2] {
            let got = colliding(mode, || urls(&le, &r));
            assert_eq!(got, expected, "{mode}");
        }
    }

    #[test]
    fn an_extractor_reused_page_after_page_answers_as_a_fresh_one() {
        let pages = [
            "<a href=a>1</a><a href=b>2</a><a href=a>3</a>",
            "<a href=b>x</a><a href=c>y</a>",
            "",
            "<div><a href='/z'>z</a></div><a href=a>a</a>",
        ];
        for restrict in [false, true] {
            let make = || {
                let le = LinkExtractor::new();
                if restrict {
                    le.restrict_css(["div", "body"])
                } else {
                    le
                }
            };
            let reused = make();
            for html in pages {
                let r = page(html);
                assert_eq!(urls(&reused, &r), urls(&make(), &r), "{html}");
            }
        }
    }

    #[test]
    fn allow_deny_text_css_and_process_value() {
        let r = page(
            r#"<div id="nav"><a href="/page/2/">Next</a><a href="/about">About us</a></div>
               <div id="main"><a href="/item/1">One</a><a href="/item/2?sort=x">Two</a>
               <a href="javascript:go('/item/3')">Three</a></div>"#,
        );
        let le = LinkExtractor::new().allow(&[r"/item/\d"]).expect("re");
        assert_eq!(
            urls(&le, &r),
            [
                "http://example.com/item/1",
                "http://example.com/item/2?sort=x"
            ]
        );
        let le = le.deny(&["sort="]).expect("re");
        assert_eq!(urls(&le, &r), ["http://example.com/item/1"]);
        let le = LinkExtractor::new().restrict_css(["#nav"]);
        assert_eq!(
            urls(&le, &r),
            ["http://example.com/page/2/", "http://example.com/about"]
        );
        let le = LinkExtractor::new().restrict_text(&["^Ab"]).expect("re");
        assert_eq!(urls(&le, &r), ["http://example.com/about"]);
        let le = LinkExtractor::new().process_value(|v| {
            v.strip_prefix("javascript:go('")
                .and_then(|v| v.strip_suffix("')"))
                .map(str::to_owned)
        });
        assert_eq!(urls(&le, &r), ["http://example.com/item/3"]);
        assert!(
            LinkExtractor::new().allow(&["("]).is_err(),
            "a bad regex is an error"
        );
    }

    #[test]
    fn finds_links_in_odd_markup() {
        let html = r#"<html><!-- <a href="commented"> --><script>var s = "<a href='script'>";</script>
            <A HREF=unquoted>Up</A><a class=x href='single' rel="nofollow noopener">S<b>in</b>gle</a>
            <area href="/map"><a href="q?b=2&amp;a=1&copy=3">Q &amp; A</a><a name=x>no href</a>
            <a href="x"><a href="y">unclosed</a>"#;
        let links = raw(html);
        let hrefs: Vec<&str> = links.iter().map(|l| l.href.as_str()).collect();
        assert_eq!(
            hrefs,
            ["unquoted", "single", "/map", "q?b=2&a=1&copy=3", "x", "y"]
        );
        assert_eq!(links[0].text, "Up");
        assert_eq!(links[1].text, "Single");
        assert!(links[1].nofollow && !links[0].nofollow);
        assert_eq!(links[3].text, "Q & A");
    }

    #[test]
    fn extractor_resolves_filters_and_dedupes() {
        let html = r#"<base href="http://example.com/dir/"><a href="a.html">a</a><a href=" a.html ">again</a>
            <a href="pic.JPG">img</a><a href="mailto:x@y">mail</a><a href="//other.org/p">other</a>
            <a href="a.html#frag">frag</a><a href="javascript:void(0)">js</a>"#;
        let req = Request::get("http://example.com/").unwrap();
        let resp = Response::new(req, 200, Headers::new(), html);
        let links = LinkExtractor::new().extract_links(&resp);
        let urls: Vec<&str> = links.iter().map(|l| l.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "http://example.com/dir/a.html",
                "http://other.org/p",
                "http://example.com/dir/a.html#frag"
            ]
        );
        // Scrapy's extractor leaves `Link.fragment` empty (the URL keeps it).
        assert_eq!(links[2].fragment, "");
        let le = LinkExtractor::new()
            .deny_domains(["other.org"])
            .canonicalize(true);
        let urls: Vec<String> = le
            .extract_links(&resp)
            .iter()
            .map(|l| l.url.to_string())
            .collect();
        assert_eq!(urls, ["http://example.com/dir/a.html"]);
    }

    /// Attribute names in any case (`HREF`, `Href`, `REL`): the scanner reads the
    /// tokenizer's lower-cased names as the DOM does, and both find every link (the
    /// four Scrapy 2.19's `LinkExtractor()` gives for this page).
    #[test]
    fn dom_and_scanner_agree_on_upper_case_attribute_names() {
        let body = "<html><body><A HREF='/one'>1</A> <a Href=\"/two\" REL=NoFollow>2</a> \
                    <map><AREA hRef=/three></map> <a hrEF=/four rel=x>4</a></body></html>";
        let req = Request::get("http://example.com/dir/").unwrap();
        let fresh = Response::new(req.clone(), 200, Headers::new(), body);
        let scanned = LinkExtractor::new().extract_links(&fresh);
        let parsed = Response::new(req, 200, Headers::new(), body);
        let _ = parsed.css("a");
        assert!(parsed.document_if_parsed().is_some());
        let from_dom = LinkExtractor::new().extract_links(&parsed);
        assert_eq!(scanned, from_dom);
        let found: Vec<(&str, bool)> = scanned
            .iter()
            .map(|l| (l.url.as_str(), l.nofollow))
            .collect();
        assert_eq!(
            found,
            [
                ("http://example.com/one", false),
                ("http://example.com/two", true),
                ("http://example.com/three", false),
                ("http://example.com/four", false),
            ]
        );
    }

    #[test]
    fn dom_and_scanner_agree_on_fixture_pages() {
        let site = crate::testing::Site::new(300, "http://127.0.0.1:8089");
        for i in [0, 7, 100, 299] {
            let req = Request::get(&format!(
                "http://127.0.0.1:8089{}",
                crate::testing::Site::page_path(i)
            ))
            .unwrap();
            let fresh = Response::new(req.clone(), 200, Headers::new(), site.render_page(i));
            let scanned = LinkExtractor::new().extract_links(&fresh);
            let parsed = Response::new(req, 200, Headers::new(), site.render_page(i));
            let _ = parsed.css("div.quote");
            assert!(parsed.document_if_parsed().is_some());
            let from_dom = LinkExtractor::new().extract_links(&parsed);
            assert_eq!(scanned, from_dom, "page {i}");
            assert!(scanned.len() >= 10);
        }
    }
}
