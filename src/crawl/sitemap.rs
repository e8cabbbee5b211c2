//! Sitemaps: a safe parser for `urlset` and `sitemapindex` documents and
//! [`SitemapSpider`] (Scrapy's `scrapy.spiders.SitemapSpider`), as a wrapper around
//! any [`Spider`].
//!
//! # Safety of the parser
//!
//! Sitemaps come from the network. The parser (`quick-xml`, a streaming pull parser)
//! never reads a DTD and never expands an entity other than the five predefined ones
//! and character references: any other reference (an XXE attempt, a billion-laughs
//! bomb, an HTML `&nbsp;`) stays literal text, in time proportional to the bytes read.
//! Like Scrapy's `lxml` parser with `recover=True`, it is lenient: a lone `&`, a stray
//! end tag, or a document cut short keep the entries parsed so far. Gzipped sitemaps are decompressed with the same size limit as downloads
//! (`DOWNLOAD_MAXSIZE`, or the spider's `max_size`), so a gzip bomb stops there.
//!
//! # The spider
//!
//! `sitemap_urls` are fetched with the `_parse_sitemap` callback; a `robots.txt` URL
//! contributes its `Sitemap:` lines. In a sitemap index, `<loc>`s matching
//! `sitemap_follow` (default: all) are fetched as sitemaps; in a urlset, each `<loc>`
//! (and, with `sitemap_alternate_links`, each `xhtml:link` alternate) goes to the
//! callback of the first `sitemap_rules` regex that matches it (default: `parse` for
//! everything). Responses that are neither XML nor gzip nor a `.xml`/`.xml.gz` URL are
//! ignored with a warning.

use std::io::Read;

use quick_xml::events::Event;
use regex::Regex;
use serde_json::Value;
use url::Url;

use super::request::Request;
use super::response::Response;
use super::robots::RobotsTxt;
use super::spider::{CallbackResult, Output, Spider};
use crate::defer::Failure;

/// The callback name of sitemap requests.
pub const SITEMAP_CALLBACK: &str = "_parse_sitemap";

/// What kind of sitemap a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SitemapType {
    /// `<urlset>`: pages.
    UrlSet,
    /// `<sitemapindex>`: more sitemaps.
    SitemapIndex,
    /// Another root element.
    Other,
}

/// One `<url>` or `<sitemap>` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SitemapEntry {
    /// `<loc>`.
    pub loc: String,
    /// `<lastmod>`, if present.
    pub lastmod: Option<String>,
    /// `xhtml:link` alternates (`href`s).
    pub alternates: Vec<String>,
}

/// A parsed sitemap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sitemap {
    /// The root element's kind.
    pub kind: SitemapType,
    /// Entries that have a `<loc>`, in document order.
    pub entries: Vec<SitemapEntry>,
}

/// A sitemap that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SitemapError(pub String);

impl std::fmt::Display for SitemapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid sitemap: {}", self.0)
    }
}

impl std::error::Error for SitemapError {}

fn local(name: &str) -> &str {
    match name.rfind(':') {
        Some(i) => &name[i + 1..],
        None => name,
    }
}

fn root_kind(name: &str) -> SitemapType {
    match name {
        "urlset" => SitemapType::UrlSet,
        "sitemapindex" => SitemapType::SitemapIndex,
        _ => SitemapType::Other,
    }
}

/// The character of a predefined entity or character reference; `None` for anything
/// else (kept literally, never expanded).
fn resolve_entity(name: &str) -> Option<char> {
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        _ => {
            let num = name
                .strip_prefix("#x")
                .or_else(|| name.strip_prefix("#X"))
                .map(|h| u32::from_str_radix(h, 16))
                .or_else(|| name.strip_prefix('#').map(str::parse::<u32>));
            match num {
                Some(Ok(n)) => char::from_u32(n)?,
                _ => return None,
            }
        }
    })
}

/// Parses a sitemap document.
///
/// # Errors
///
/// Malformed XML, a custom entity, or no root element.
pub fn parse_sitemap(body: &[u8]) -> Result<Sitemap, SitemapError> {
    let mut reader = quick_xml::Reader::from_reader(body);
    let config = reader.config_mut();
    config.allow_dangling_amp = true;
    config.allow_unmatched_ends = true;
    config.check_end_names = false;
    let mut buf = Vec::new();
    let mut depth = 0usize;
    let mut kind = None;
    let mut entries = Vec::new();
    let mut entry: Option<SitemapEntry> = None;
    // The depth-3 field being read (`loc`, `lastmod`) and its text.
    let mut field: Option<(String, String)> = None;
    // Names of the open elements.
    let mut open: Vec<String> = Vec::new();
    loop {
        let event = match reader.read_event_into(&mut buf) {
            Ok(e) => e,
            Err(e) => {
                let at = reader.buffer_position();
                if kind.is_none() {
                    return Err(SitemapError(format!("at byte {at}: {e}")));
                }
                // Keep what was parsed (lxml's `recover=True`).
                log::warn!(
                    "sitemap: stopped at byte {at}: {e}; keeping {} entries",
                    entries.len()
                );
                if let Some(e) = entry.take()
                    && !e.loc.is_empty()
                {
                    entries.push(e);
                }
                break;
            }
        };
        match event {
            Event::Start(e) => {
                depth += 1;
                let name = local(e.name().as_ref()).to_owned();
                open.push(name.clone());
                match depth {
                    1 => kind = Some(root_kind(&name)),
                    2 => entry = Some(SitemapEntry::default()),
                    3 => {
                        if name == "link" {
                            push_alternate(&e, entry.as_mut());
                        }
                        field = Some((name, String::new()));
                    }
                    _ => {}
                }
            }
            Event::Empty(e) => {
                if depth == 0 {
                    kind = Some(root_kind(local(e.name().as_ref())));
                } else if depth == 2 && local(e.name().as_ref()) == "link" {
                    push_alternate(&e, entry.as_mut());
                }
            }
            Event::End(e) => {
                // A stray end tag (no such element open) is ignored; one that closes an
                // outer element closes the inner ones too.
                let qname = e.name();
                let name = local(qname.as_ref());
                let Some(pos) = open.iter().rposition(|n| n == name) else {
                    buf.clear();
                    continue;
                };
                while open.len() > pos + 1 {
                    open.pop();
                    close_level(depth, &mut entry, &mut field, &mut entries);
                    depth = depth.saturating_sub(1);
                }
                open.pop();
                close_level(depth, &mut entry, &mut field, &mut entries);
                depth = depth.saturating_sub(1);
            }
            Event::Text(t) => {
                if let Some((_, text)) = field.as_mut() {
                    text.push_str(t.as_ref());
                }
            }
            Event::CData(t) => {
                if let Some((_, text)) = field.as_mut() {
                    text.push_str(t.as_ref());
                }
            }
            Event::GeneralRef(r) => {
                if let Some((_, text)) = field.as_mut() {
                    let name: &str = r.as_ref();
                    match resolve_entity(name) {
                        Some(c) => text.push(c),
                        None => {
                            text.push('&');
                            text.push_str(name);
                            text.push(';');
                        }
                    }
                }
            }
            Event::Eof => break,
            // The DOCTYPE (and so every entity definition) is skipped unread.
            Event::DocType(_) | Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {}
        }
        buf.clear();
    }
    let kind = kind.ok_or_else(|| SitemapError("no root element".into()))?;
    Ok(Sitemap { kind, entries })
}

/// Closes the element at `depth`: a field (depth 3) or an entry (depth 2).
fn close_level(
    depth: usize,
    entry: &mut Option<SitemapEntry>,
    field: &mut Option<(String, String)>,
    entries: &mut Vec<SitemapEntry>,
) {
    match depth {
        2 => {
            if let Some(e) = entry.take()
                && !e.loc.is_empty()
            {
                entries.push(e);
            }
        }
        3 => {
            if let (Some((name, text)), Some(e)) = (field.take(), entry.as_mut()) {
                match name.as_str() {
                    "loc" => e.loc = text.trim().to_owned(),
                    "lastmod" => e.lastmod = Some(text.trim().to_owned()),
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

fn push_alternate(e: &quick_xml::events::BytesStart<'_>, entry: Option<&mut SitemapEntry>) {
    let Some(entry) = entry else { return };
    for attr in e.attributes().flatten() {
        if local(attr.key.as_ref()) == "href" {
            let v: &str = &attr.value;
            // Attribute values may hold the predefined entities.
            let v = v
                .replace("&amp;", "&")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'");
            entry.alternates.push(v.trim().to_owned());
        }
    }
}

/// The `Sitemap:` URLs of a robots.txt body, resolved against `base`.
pub fn sitemap_urls_from_robots(body: &[u8], base: &Url) -> Vec<Url> {
    RobotsTxt::parse(body)
        .sitemaps()
        .iter()
        .filter_map(|s| base.join(s.trim()).ok())
        .collect()
}

/// Gunzips `body` up to `max_size` bytes of output.
///
/// # Errors
///
/// Not gzip, corrupt, or larger than `max_size` decompressed.
pub fn gunzip_limited(body: &[u8], max_size: u64) -> Result<Vec<u8>, SitemapError> {
    let mut out = Vec::new();
    let limit = if max_size == 0 { u64::MAX } else { max_size };
    let mut dec = flate2::read::MultiGzDecoder::new(body).take(limit.saturating_add(1));
    dec.read_to_end(&mut out)
        .map_err(|e| SitemapError(format!("gzip: {e}")))?;
    if out.len() as u64 > limit {
        return Err(SitemapError(format!(
            "decompressed sitemap exceeds {max_size} bytes"
        )));
    }
    Ok(out)
}

/// A spider that crawls what sitemaps list, around an inner spider that supplies the
/// name, domains and the callbacks the rules name.
#[derive(Debug)]
pub struct SitemapSpider<S> {
    inner: S,
    sitemap_urls: Vec<String>,
    rules: Vec<(Regex, String)>,
    follow: Vec<Regex>,
    alternate_links: bool,
    /// Set by `max_size`, else `DOWNLOAD_MAXSIZE` when the settings are ready.
    max_size: Option<u64>,
}

impl<S: Spider> SitemapSpider<S> {
    /// Wraps `inner`; `sitemap_urls` may be sitemaps, sitemap indexes or robots.txt.
    pub fn new<U: Into<String>>(inner: S, sitemap_urls: impl IntoIterator<Item = U>) -> Self {
        Self {
            inner,
            sitemap_urls: sitemap_urls.into_iter().map(Into::into).collect(),
            rules: Vec::new(),
            follow: Vec::new(),
            alternate_links: false,
            max_size: None,
        }
    }

    /// `sitemap_rules`: (regex, callback name) pairs; the first match wins. Default:
    /// everything to `parse`.
    ///
    /// # Errors
    ///
    /// A regex that does not compile.
    pub fn rules(mut self, rules: &[(&str, &str)]) -> Result<Self, regex::Error> {
        self.rules = rules
            .iter()
            .map(|(r, cb)| Ok((Regex::new(r)?, (*cb).to_owned())))
            .collect::<Result<_, regex::Error>>()?;
        Ok(self)
    }

    /// `sitemap_follow`: which sitemaps of an index to fetch. Default: all.
    ///
    /// # Errors
    ///
    /// A regex that does not compile.
    pub fn follow(mut self, patterns: &[&str]) -> Result<Self, regex::Error> {
        self.follow = patterns
            .iter()
            .map(|p| Regex::new(p))
            .collect::<Result<_, _>>()?;
        Ok(self)
    }

    /// `sitemap_alternate_links`: also follow `xhtml:link` alternates.
    pub fn alternate_links(mut self, yes: bool) -> Self {
        self.alternate_links = yes;
        self
    }

    /// The largest decompressed size of a gzipped sitemap (default `DOWNLOAD_MAXSIZE`).
    pub fn max_size(mut self, bytes: u64) -> Self {
        self.max_size = Some(bytes);
        self
    }

    fn sitemap_request(request: Request) -> Request {
        request.with_callback(SITEMAP_CALLBACK)
    }

    fn body(&self, response: &Response) -> Option<Vec<u8>> {
        let ct = response
            .headers()
            .get_str("Content-Type")
            .unwrap_or("")
            .to_ascii_lowercase();
        let body = response.body();
        if body.starts_with(&[0x1f, 0x8b]) {
            let max = response
                .meta()
                .get_i64("download_maxsize")
                .and_then(|v| u64::try_from(v).ok())
                .or(self.max_size)
                .unwrap_or(1024 * 1024 * 1024);
            return match gunzip_limited(body, max) {
                Ok(b) => Some(b),
                Err(e) => {
                    log::warn!("Ignoring sitemap {response:?}: {e}");
                    None
                }
            };
        }
        let path = response.url().path();
        if ct.contains("xml") || path.ends_with(".xml") || path.ends_with(".xml.gz") {
            return Some(body.to_vec());
        }
        None
    }

    fn parse_sitemap(&mut self, response: &Response) -> CallbackResult {
        if response.url().path().ends_with("/robots.txt") {
            return Ok(sitemap_urls_from_robots(response.body(), response.url())
                .into_iter()
                .map(|u| Output::Request(Self::sitemap_request(Request::new(u))))
                .collect());
        }
        let Some(body) = self.body(response) else {
            log::warn!("Ignoring invalid sitemap: {response:?}");
            return Ok(Vec::new());
        };
        let sitemap = match parse_sitemap(&body) {
            Ok(s) => s,
            Err(e) => {
                log::warn!("Ignoring invalid sitemap {response:?}: {e}");
                return Ok(Vec::new());
            }
        };
        let mut locs = Vec::new();
        for e in &sitemap.entries {
            locs.push(e.loc.as_str());
            if self.alternate_links {
                locs.extend(e.alternates.iter().map(String::as_str));
            }
        }
        let mut out = Vec::new();
        for loc in locs {
            // Scrapy's `Request(loc)` (its URL text is `safe_url_string(loc)`); a relative
            // `loc` is joined to the sitemap's URL where Scrapy refuses it.
            let Ok(url) = response
                .urljoin_str(loc)
                .and_then(|joined| Request::get(&joined))
            else {
                log::warn!("Ignoring invalid URL {loc:?} in sitemap {response:?}");
                continue;
            };
            match sitemap.kind {
                SitemapType::SitemapIndex => {
                    if self.follow.is_empty() || self.follow.iter().any(|r| r.is_match(loc)) {
                        out.push(Output::Request(Self::sitemap_request(url)));
                    }
                }
                SitemapType::UrlSet => {
                    let callback = if self.rules.is_empty() {
                        Some("parse")
                    } else {
                        self.rules
                            .iter()
                            .find(|(r, _)| r.is_match(loc))
                            .map(|(_, cb)| cb.as_str())
                    };
                    if let Some(cb) = callback {
                        out.push(Output::Request(url.with_callback(cb)));
                    }
                }
                SitemapType::Other => {}
            }
        }
        Ok(out)
    }
}

impl<S: Spider> Spider for SitemapSpider<S> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn allowed_domains(&self) -> Vec<String> {
        self.inner.allowed_domains()
    }

    fn handle_httpstatus_list(&self) -> Option<Vec<u16>> {
        self.inner.handle_httpstatus_list()
    }

    fn custom_settings(&self) -> Vec<(String, Value)> {
        self.inner.custom_settings()
    }

    fn start(&mut self) -> crate::crawl::Outputs {
        let urls = self.sitemap_urls.clone();
        Box::new(urls.into_iter().filter_map(|u| match Request::get(&u) {
            Ok(request) => Some(Ok(Output::Request(Self::sitemap_request(request)))),
            Err(e) => {
                log::error!("Invalid sitemap URL {u:?}: {e}");
                None
            }
        }))
    }

    fn callback(&mut self, name: &str, response: &Response) -> CallbackResult {
        if name == SITEMAP_CALLBACK {
            return self.parse_sitemap(response);
        }
        self.inner.callback(name, response)
    }

    fn callback_outputs(
        &mut self,
        name: &str,
        response: &Response,
    ) -> Result<crate::crawl::Outputs, Failure> {
        if name == SITEMAP_CALLBACK {
            return self.parse_sitemap(response).map(crate::crawl::outputs);
        }
        self.inner.callback_outputs(name, response)
    }

    fn parse(&mut self, response: &Response) -> CallbackResult {
        self.inner.parse(response)
    }

    fn errback(&mut self, name: &str, failure: &Failure, request: &Request) -> CallbackResult {
        self.inner.errback(name, failure, request)
    }

    fn settings_ready(&mut self, settings: &super::settings::Settings) {
        if self.max_size.is_none() {
            match settings.get_int("DOWNLOAD_MAXSIZE") {
                Ok(n) => self.max_size = Some(u64::try_from(n).unwrap_or(0)),
                Err(e) => log::error!("{e}"),
            }
        }
        self.inner.settings_ready(settings);
    }

    fn opened(&mut self) {
        self.inner.opened();
    }

    fn closed(&mut self, reason: &str) {
        self.inner.closed(reason);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urlset_with_alternates_and_entities() {
        let xml = br#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">
  <url><loc> http://a.test/p?x=1&amp;y=2 </loc><lastmod>2024-01-01</lastmod>
    <xhtml:link rel="alternate" hreflang="de" href="http://a.test/de/p"/></url>
  <url><loc><![CDATA[http://a.test/cdata]]></loc></url>
  <url><lastmod>no loc: skipped</lastmod></url>
</urlset>"#;
        let s = parse_sitemap(xml).expect("valid");
        assert_eq!(s.kind, SitemapType::UrlSet);
        assert_eq!(s.entries.len(), 2);
        assert_eq!(s.entries[0].loc, "http://a.test/p?x=1&y=2");
        assert_eq!(s.entries[0].lastmod.as_deref(), Some("2024-01-01"));
        assert_eq!(s.entries[0].alternates, ["http://a.test/de/p"]);
        assert_eq!(s.entries[1].loc, "http://a.test/cdata");
    }

    #[test]
    fn sitemap_index() {
        let xml = b"<sitemapindex><sitemap><loc>http://a.test/s1.xml</loc></sitemap>\
                    <sitemap><loc>http://a.test/s2.xml.gz</loc></sitemap></sitemapindex>";
        let s = parse_sitemap(xml).expect("valid");
        assert_eq!(s.kind, SitemapType::SitemapIndex);
        assert_eq!(s.entries.len(), 2);
    }

    #[test]
    fn entities_are_never_expanded() {
        let xxe = br#"<?xml version="1.0"?>
<!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<urlset><url><loc>http://a.test/&xxe;</loc></url></urlset>"#;
        let s = parse_sitemap(xxe).expect("parsed, entity kept literal");
        assert_eq!(s.entries[0].loc, "http://a.test/&xxe;", "never expanded");
        let mut bomb =
            String::from("<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n<!ENTITY lol \"lol\">\n");
        for i in 1..10 {
            let prev = if i == 1 {
                "lol".to_owned()
            } else {
                format!("lol{}", i - 1)
            };
            bomb.push_str(&format!(
                "<!ENTITY lol{i} \"{}\">\n",
                format!("&{prev};").repeat(10)
            ));
        }
        bomb.push_str("]>\n<urlset><url><loc>&lol9;</loc></url></urlset>");
        let started = std::time::Instant::now();
        let s = parse_sitemap(bomb.as_bytes()).expect("parsed");
        assert_eq!(s.entries[0].loc, "&lol9;", "not expanded");
        assert!(
            started.elapsed().as_secs() < 5,
            "the bomb must be harmless and fast"
        );
    }

    #[test]
    fn lenient_like_lxml_recover() {
        let xml = b"<urlset><url><loc>http://a.test/?a=1&b=2</loc></url>\
                    <url><loc>http://a.test/x&nbsp;y</loc></url></bogus>\
                    <url><loc>http://a.test/last</loc></url><url><loc>http://a.test/cut";
        let s = parse_sitemap(xml).expect("recovered");
        let locs: Vec<&str> = s.entries.iter().map(|e| e.loc.as_str()).collect();
        assert_eq!(
            locs,
            [
                "http://a.test/?a=1&b=2",
                "http://a.test/x&nbsp;y",
                "http://a.test/last"
            ]
        );
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for input in [
            &b""[..],
            b"<",
            b"<urlset><url><loc>x",
            b"\xff\xfe<a>",
            b"<a></b>",
        ] {
            let _ = parse_sitemap(input);
        }
        assert!(parse_sitemap(b"").is_err());
    }

    #[test]
    fn gunzip_limit() {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(&vec![b'a'; 1_000_000]).expect("gzip");
        let gz = enc.finish().expect("gzip");
        assert_eq!(
            gunzip_limited(&gz, 2_000_000).expect("fits").len(),
            1_000_000
        );
        assert!(gunzip_limited(&gz, 10_000).is_err());
    }

    #[test]
    fn robots_sitemaps() {
        let base = Url::parse("http://a.test/robots.txt").expect("url");
        let urls = sitemap_urls_from_robots(
            b"User-agent: *\nSitemap: /s.xml\nsitemap: http://b.test/x.xml\n",
            &base,
        );
        let urls: Vec<&str> = urls.iter().map(Url::as_str).collect();
        assert_eq!(urls, ["http://a.test/s.xml", "http://b.test/x.xml"]);
    }
}
