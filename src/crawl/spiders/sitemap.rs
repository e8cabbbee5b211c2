//! [`SitemapSpider`] (Scrapy's `scrapy.spiders.SitemapSpider`), as a wrapper around
//! any [`Spider`]; the documents are read by the safe parser of
//! [`crawl::sitemap`](crate::crawl::sitemap).
//!
//! `sitemap_urls` are fetched with the `_parse_sitemap` callback; a `robots.txt` URL
//! contributes its `Sitemap:` lines. In a sitemap index, `<loc>`s matching
//! `sitemap_follow` (default: all) are fetched as sitemaps; in a urlset, each `<loc>`
//! (and, with `sitemap_alternate_links`, each `xhtml:link` alternate) goes to the
//! callback of the first `sitemap_rules` regex that matches it (default: `parse` for
//! everything). Responses that are neither XML nor gzip nor a `.xml`/`.xml.gz` URL are
//! ignored with a warning.

use regex::Regex;
use serde_json::Value;

use super::outputs::{CallbackResult, Output};
use super::spider::Spider;
use crate::crawl::http::request::Request;
use crate::crawl::http::request::keys;
use crate::crawl::http::response::Response;
use crate::crawl::util::sitemap::{
    SitemapType, gunzip_limited, parse_sitemap, sitemap_urls_from_robots,
};
use crate::defer::Failure;

/// The callback name of sitemap requests.
pub const SITEMAP_CALLBACK: &str = "_parse_sitemap";

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
                .get_i64(keys::DOWNLOAD_MAXSIZE)
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

    fn start(&mut self) -> super::outputs::Outputs {
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
    ) -> Result<super::outputs::Outputs, Failure> {
        if name == SITEMAP_CALLBACK {
            return self.parse_sitemap(response).map(super::outputs::outputs);
        }
        self.inner.callback_outputs(name, response)
    }

    fn parse(&mut self, response: &Response) -> CallbackResult {
        self.inner.parse(response)
    }

    fn errback(&mut self, name: &str, failure: &Failure, request: &Request) -> CallbackResult {
        self.inner.errback(name, failure, request)
    }

    fn settings_ready(&mut self, settings: &crate::crawl::base::settings::Settings) {
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
