//! Sitemaps: a safe parser for `urlset` and `sitemapindex` documents, the `Sitemap:`
//! lines of a robots.txt, and gzip with a size limit ([`SitemapSpider`](crate::crawl::spiders::SitemapSpider)
//! reads sitemaps with them).
//!
//! # Safety
//!
//! Sitemaps come from the network. The parser (`quick-xml`, a streaming pull parser)
//! never reads a DTD and never expands an entity other than the five predefined ones
//! and character references: any other reference (an XXE attempt, a billion-laughs
//! bomb, an HTML `&nbsp;`) stays literal text, in time proportional to the bytes read.
//! Like Scrapy's `lxml` parser with `recover=True`, it is lenient: a lone `&`, a stray
//! end tag, or a document cut short keep the entries parsed so far. Gzipped sitemaps
//! are decompressed with a size limit (the spider passes `DOWNLOAD_MAXSIZE`, or its
//! `max_size`), so a gzip bomb stops there.

use std::io::Read;

use quick_xml::events::Event;
use url::Url;

use super::robots::RobotsTxt;

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
                    match crate::html::resolve_entity(name) {
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
