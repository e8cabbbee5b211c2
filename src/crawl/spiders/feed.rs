//! [`XmlFeedSpider`] (Scrapy's `XMLFeedSpider`: `iternodes` streamed, `xml`, `html`)
//! and [`CsvFeedSpider`] (Scrapy's `scrapy.spiders.CSVFeedSpider`), each a wrapper around a
//! spider that implements [`CsvFeed`]: the responses of its default callback (`parse`)
//! are read as CSV (Python's `csv` reader, as Scrapy's `csviter`: the headers from the
//! first row unless given, rows of another length skipped with Scrapy's warning), and
//! each row goes to [`CsvFeed::parse_row`], its outputs through
//! [`CsvFeed::process_results`].
//!
//! As Scrapy's generator, rows are read one at a time as the engine pulls outputs
//! (the scraper's backpressure holds the feed, not memory), and a failing row or a CSV
//! error ends the iteration after the outputs before it. The inner spider sits in a
//! `RefCell` so the lazy rows can reach it; each row borrows it for its `parse_row`
//! call only.

use std::cell::{Ref, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use serde_json::{Map, Value};

use super::outputs::{CallbackResult, Output, Outputs};
use super::spider::Spider;
use crate::crawl::base::settings::Settings;
use crate::crawl::http::request::Request;
use crate::crawl::http::response::Response;
use crate::crawl::http::selector::Selection;
use crate::crawl::util::pycsv::CsvReader;
use crate::defer::Failure;

/// What a CSV feed spider writes (a `CSVFeedSpider` subclass's methods).
pub trait CsvFeed: Spider {
    /// `parse_row(response, row)`: a row as a map from header to value.
    fn parse_row(&mut self, response: &Response, row: &Map<String, Value>) -> CallbackResult;

    /// `adapt_response(response)`: the response the rows are read from (default: the
    /// response itself).
    fn adapt_response(&mut self, response: &Response) -> Response {
        response.clone()
    }

    /// `process_results(response, results)`: each row's outputs before they go on
    /// (default: unchanged).
    fn process_results(&mut self, response: &Response, results: Vec<Output>) -> Vec<Output> {
        let _ = response;
        results
    }
}

/// The reading options: `delimiter`, `quotechar`, `headers`.
#[derive(Debug, Clone, Default)]
struct Options {
    delimiter: Option<char>,
    quotechar: Option<char>,
    headers: Option<Vec<String>>,
}

/// A spider that reads CSV feeds, around an inner [`CsvFeed`] spider that supplies the
/// name, the start URLs, `parse_row` and any other callback.
#[derive(Debug)]
pub struct CsvFeedSpider<S> {
    inner: Rc<RefCell<S>>,
    /// The inner spider's name, read once.
    name: String,
    options: Options,
}

impl<S: CsvFeed + 'static> CsvFeedSpider<S> {
    /// Wraps `inner` with Python's `csv` defaults (`,` and `"`, headers from the first
    /// row).
    pub fn new(inner: S) -> Self {
        Self {
            name: inner.name().to_owned(),
            inner: Rc::new(RefCell::new(inner)),
            options: Options::default(),
        }
    }

    /// `delimiter`.
    pub fn delimiter(mut self, c: char) -> Self {
        self.options.delimiter = Some(c);
        self
    }

    /// `quotechar`.
    pub fn quotechar(mut self, c: char) -> Self {
        self.options.quotechar = Some(c);
        self
    }

    /// `headers`: the keys of every row (the first row is then a row).
    pub fn headers<H: Into<String>>(mut self, headers: impl IntoIterator<Item = H>) -> Self {
        self.options.headers = Some(headers.into_iter().map(Into::into).collect());
        self
    }

    /// The inner spider (borrowed: not while its rows are being read).
    pub fn inner(&self) -> Ref<'_, S> {
        self.inner.borrow()
    }

    /// `parse_rows(response)`: every row's outputs, read as they are pulled.
    fn parse_rows(&self, response: &Response) -> Outputs {
        let response = self.inner.borrow_mut().adapt_response(response);
        Box::new(Rows {
            spider: Rc::clone(&self.inner),
            response,
            options: self.options.clone(),
            offset: 0,
            line_num: 0,
            headers: None,
            pending: VecDeque::new(),
            done: false,
        })
    }
}

/// The lazy rows of one response.
struct Rows<S> {
    spider: Rc<RefCell<S>>,
    response: Response,
    options: Options,
    /// Where the next row starts in `text`, and the lines read before it.
    offset: usize,
    line_num: usize,
    headers: Option<Vec<String>>,
    /// Outputs of the current row not yet pulled.
    pending: VecDeque<Output>,
    done: bool,
}

impl<S: CsvFeed> Rows<S> {
    /// The next row's fields, reading on from `offset`.
    fn next_fields(&mut self) -> Option<Result<Vec<String>, Failure>> {
        // The response's own text (decoded once, shared): no copy of the feed.
        let response = self.response.clone();
        let rest = response.text().get(self.offset..)?;
        let mut reader = CsvReader::new(
            rest,
            self.options.delimiter.unwrap_or(','),
            self.options.quotechar.unwrap_or('"'),
        );
        let fields = reader.next()?;
        self.offset += reader.consumed();
        self.line_num += reader.line_num();
        Some(fields.map_err(Failure::new))
    }

    /// The next row's outputs into `pending`; `Err` ends the rows.
    fn next_row(&mut self) -> Result<bool, Failure> {
        if self.headers.is_none() {
            let headers = match self.options.headers.clone().filter(|h| !h.is_empty()) {
                Some(h) => h,
                None => match self.next_fields() {
                    None => return Ok(false),
                    Some(first) => first?,
                },
            };
            self.headers = Some(headers);
        }
        loop {
            let Some(fields) = self.next_fields() else {
                return Ok(false);
            };
            let fields = fields?;
            let headers = self.headers.as_deref().unwrap_or(&[]);
            if fields.len() != headers.len() {
                log::warn!(
                    "ignoring row {} (length: {}, should be: {})",
                    self.line_num,
                    fields.len(),
                    headers.len()
                );
                continue;
            }
            let mut row = Map::new();
            for (h, v) in headers.iter().zip(fields) {
                row.insert(h.clone(), Value::String(v));
            }
            let mut spider = self.spider.borrow_mut();
            let results = spider.parse_row(&self.response, &row)?;
            let results = spider.process_results(&self.response, results);
            drop(spider);
            self.pending.extend(results);
            return Ok(true);
        }
    }
}

impl<S: CsvFeed> Iterator for Rows<S> {
    type Item = Result<Output, Failure>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(output) = self.pending.pop_front() {
                return Some(Ok(output));
            }
            if self.done {
                return None;
            }
            match self.next_row() {
                Ok(true) => {}
                Ok(false) => {
                    self.done = true;
                    return None;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

/// The `Spider` impl both feed wrappers share: their own `parse` reads the feed with
/// `$parse`; everything else is the inner spider's.
macro_rules! feed_spider_impl {
    ($wrapper:ident, $bound:ident, $parse:ident) => {
        impl<S: $bound + 'static> Spider for $wrapper<S> {
            fn name(&self) -> &str {
                &self.name
            }

            fn allowed_domains(&self) -> Vec<String> {
                self.inner.borrow().allowed_domains()
            }

            fn start_urls(&self) -> Vec<String> {
                self.inner.borrow().start_urls()
            }

            fn handle_httpstatus_list(&self) -> Option<Vec<u16>> {
                self.inner.borrow().handle_httpstatus_list()
            }

            fn custom_settings(&self) -> Vec<(String, Value)> {
                self.inner.borrow().custom_settings()
            }

            fn start(&mut self) -> Outputs {
                self.inner.borrow_mut().start()
            }

            fn parse(&mut self, response: &Response) -> CallbackResult {
                self.$parse(response).collect()
            }

            fn callback(&mut self, name: &str, response: &Response) -> CallbackResult {
                if name == "parse" {
                    return self.parse(response);
                }
                self.inner.borrow_mut().callback(name, response)
            }

            fn callback_outputs(
                &mut self,
                name: &str,
                response: &Response,
            ) -> Result<Outputs, Failure> {
                if name == "parse" {
                    return Ok(self.$parse(response));
                }
                self.inner.borrow_mut().callback_outputs(name, response)
            }

            fn errback(
                &mut self,
                name: &str,
                failure: &Failure,
                request: &Request,
            ) -> CallbackResult {
                self.inner.borrow_mut().errback(name, failure, request)
            }

            fn settings_ready(&mut self, settings: &Settings) {
                self.inner.borrow_mut().settings_ready(settings);
            }

            fn set_context(&mut self, ctx: &Rc<crate::crawl::context::CrawlContext>) {
                self.inner.borrow_mut().set_context(ctx);
            }

            fn attributes(&self) -> Map<String, Value> {
                self.inner.borrow().attributes()
            }

            fn contracts(&self) -> Vec<super::contracts::Contract> {
                self.inner.borrow().contracts()
            }

            fn opened(&mut self) {
                self.inner.borrow_mut().opened();
            }

            fn closed(&mut self, reason: &str) {
                self.inner.borrow_mut().closed(reason);
            }
        }
    };
}

feed_spider_impl!(CsvFeedSpider, CsvFeed, parse_rows);

/// What an XML feed spider writes (an `XMLFeedSpider` subclass's methods).
pub trait XmlFeed: Spider {
    /// `parse_node(response, selector)`: one node of the feed, as a selection whose
    /// XPath queries are relative to it.
    fn parse_node(&mut self, response: &Response, node: &Selection<'_>) -> CallbackResult;

    /// `adapt_response(response)` (default: the response itself).
    fn adapt_response(&mut self, response: &Response) -> Response {
        response.clone()
    }

    /// `process_results(response, results)` (default: unchanged).
    fn process_results(&mut self, response: &Response, results: Vec<Output>) -> Vec<Output> {
        let _ = response;
        results
    }
}

/// `XMLFeedSpider.iterator`: how the nodes are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum XmlIterator {
    /// `"iternodes"` (the default): the feed read as a stream, each `itertag` node
    /// parsed on its own when it ends (Scrapy's `xmliter_lxml`): memory holds one
    /// node, not the document. A prefixed `itertag` (`dc:creator`) is resolved
    /// against the feed's first declaration of that prefix; an unprefixed one matches
    /// elements without a namespace only.
    #[default]
    IterNodes,
    /// `"xml"`: the whole response as XML, `//itertag` with the spider's namespaces.
    Xml,
    /// `"html"`: the whole response as HTML, `//itertag`.
    Html,
}

/// A spider that reads XML feeds (RSS, Atom, product feeds), around an inner
/// [`XmlFeed`] spider: Scrapy's `XMLFeedSpider` with `iterator`, `itertag` and
/// `namespaces`.
#[derive(Debug)]
pub struct XmlFeedSpider<S> {
    inner: Rc<RefCell<S>>,
    name: String,
    iterator: XmlIterator,
    itertag: String,
    namespaces: Vec<(String, String)>,
}

impl<S: XmlFeed + 'static> XmlFeedSpider<S> {
    /// Wraps `inner`: `iternodes` over `item` elements, no namespaces.
    pub fn new(inner: S) -> Self {
        Self {
            name: inner.name().to_owned(),
            inner: Rc::new(RefCell::new(inner)),
            iterator: XmlIterator::IterNodes,
            itertag: "item".into(),
            namespaces: Vec::new(),
        }
    }

    /// `iterator`.
    pub fn iterator(mut self, iterator: XmlIterator) -> Self {
        self.iterator = iterator;
        self
    }

    /// `itertag`.
    pub fn itertag(mut self, tag: &str) -> Self {
        self.itertag = tag.to_owned();
        self
    }

    /// `namespaces`: `(prefix, uri)` pairs registered on every node.
    pub fn namespaces(mut self, namespaces: &[(&str, &str)]) -> Self {
        self.namespaces = namespaces
            .iter()
            .map(|(p, u)| ((*p).to_owned(), (*u).to_owned()))
            .collect();
        self
    }

    /// The inner spider (borrowed: not while its nodes are being read).
    pub fn inner(&self) -> Ref<'_, S> {
        self.inner.borrow()
    }

    /// `parse_nodes(response, nodes)` for the iterator chosen.
    fn parse_nodes(&self, response: &Response) -> Outputs {
        let response = self.inner.borrow_mut().adapt_response(response);
        match self.iterator {
            XmlIterator::IterNodes => Box::new(XmlNodes {
                spider: Rc::clone(&self.inner),
                response,
                itertag: self.itertag.clone(),
                namespaces: self.namespaces.clone(),
                offset: 0,
                open: Vec::new(),
                scope: Vec::new(),
                target: None,
                pending: VecDeque::new(),
                done: false,
            }),
            XmlIterator::Xml | XmlIterator::Html => {
                let document;
                let doc = if self.iterator == XmlIterator::Html {
                    document = crate::html::Document::parse(response.selector_text());
                    &document
                } else if response.is_xml() {
                    response.document()
                } else {
                    return Box::new(std::iter::once(Err(Failure::msg(format!(
                        "Unsupported response type for 'xml' iterator: {}",
                        response.url()
                    )))));
                };
                let ns: Vec<(&str, &str)> = self
                    .namespaces
                    .iter()
                    .map(|(p, u)| (p.as_str(), u.as_str()))
                    .collect();
                let root = Selection::of_document(doc).with_namespaces(ns.iter().copied());
                let nodes = match root.try_xpath(&format!("//{}", self.itertag), &[]) {
                    Ok(nodes) => nodes,
                    Err(e) => return Box::new(std::iter::once(Err(Failure::new(e)))),
                };
                // The document is whole in memory already (as lxml's): the outputs
                // are made now, a failing node ending them.
                let mut out = Vec::new();
                let mut spider = self.inner.borrow_mut();
                for node in nodes {
                    match spider.parse_node(&response, &node) {
                        Ok(results) => {
                            out.extend(
                                spider
                                    .process_results(&response, results)
                                    .into_iter()
                                    .map(Ok),
                            );
                        }
                        Err(e) => {
                            out.push(Err(e));
                            break;
                        }
                    }
                }
                Box::new(out.into_iter())
            }
        }
    }
}

/// Where an `itertag` node began: its byte in the text read, its depth, the
/// namespace declarations in scope outside it.
type NodeStart = (usize, usize, Vec<(String, String)>);

/// The lazy `iternodes` of one response.
struct XmlNodes<S> {
    spider: Rc<RefCell<S>>,
    response: Response,
    itertag: String,
    namespaces: Vec<(String, String)>,
    /// Where reading resumes in `text`.
    offset: usize,
    /// Open elements (qualified name, declarations pushed) and the declarations in
    /// scope (prefix, uri).
    open: Vec<(String, usize)>,
    scope: Vec<(String, String)>,
    /// A prefixed `itertag` resolved: (prefix, uri, local name).
    target: Option<(String, String, String)>,
    pending: VecDeque<Output>,
    done: bool,
}

impl<S: XmlFeed> XmlNodes<S> {
    /// Whether an element named `qname` (in namespace `uri`) is an `itertag` node.
    fn matches(&self, qname: &str, uri: &str) -> bool {
        match (&self.target, self.itertag.split_once(':')) {
            (Some((_, t_uri, local)), _) => {
                uri == t_uri && crate::html::local_name_of(qname) == local
            }
            (None, Some(_)) => false,
            (None, None) => uri.is_empty() && qname == self.itertag,
        }
    }

    fn resolve(&self, prefix: &str) -> String {
        self.scope
            .iter()
            .rev()
            .find(|(p, _)| p == prefix)
            .map(|(_, u)| u.clone())
            .unwrap_or_default()
    }

    /// Reads on to the next node; its outputs into `pending`. `Ok(false)`: no more.
    fn next_node(&mut self) -> Result<bool, Failure> {
        // The response's own text (decoded once, shared): no copy of the feed.
        let response = self.response.clone();
        let Some(rest) = response.text().get(self.offset..) else {
            return Ok(false);
        };
        let mut reader = quick_xml::Reader::from_str(rest);
        let config = reader.config_mut();
        config.allow_dangling_amp = true;
        config.allow_unmatched_ends = true;
        config.check_end_names = false;
        // The node being read: its start in `rest`, its depth, the scope it started in.
        let mut node: Option<NodeStart> = None;
        loop {
            let before = reader.buffer_position() as usize;
            let event = match reader.read_event() {
                Ok(e) => e,
                Err(e) => {
                    log::warn!("XML feed: stopped at byte {}: {e}", self.offset + before);
                    return Ok(false);
                }
            };
            let (start, empty) = match &event {
                quick_xml::events::Event::Start(e) => (Some(e.clone()), false),
                quick_xml::events::Event::Empty(e) => (Some(e.clone()), true),
                _ => (None, false),
            };
            if let Some(e) = start {
                let qname = e.name().as_ref().to_owned();
                let mut declared = 0;
                for a in e.attributes().with_checks(false).flatten() {
                    let key = a.key.as_ref();
                    let prefix = if key == "xmlns" {
                        Some("")
                    } else {
                        key.strip_prefix("xmlns:")
                    };
                    if let Some(p) = prefix {
                        let uri = a.value.to_string();
                        if self.target.is_none()
                            && let Some((want, local)) = self.itertag.split_once(':')
                            && want == p
                        {
                            self.target = Some((p.to_owned(), uri.clone(), local.to_owned()));
                        }
                        self.scope.push((p.to_owned(), uri));
                        declared += 1;
                    }
                }
                let prefix = qname.split_once(':').map_or("", |(p, _)| p);
                let uri = self.resolve(prefix);
                if node.is_none() && self.matches(&qname, &uri) {
                    let outer = self.scope[..self.scope.len() - declared].to_vec();
                    node = Some((before, self.open.len() + 1, outer));
                }
                self.open.push((qname, declared));
                if !empty {
                    continue;
                }
            } else if !matches!(event, quick_xml::events::Event::End(_)) {
                if matches!(event, quick_xml::events::Event::Eof) {
                    return Ok(false);
                }
                continue;
            }
            // An end (or an empty element): close it.
            let depth = self.open.len();
            if let Some((_, declared)) = self.open.pop() {
                self.scope.truncate(self.scope.len() - declared);
            }
            if let Some((start, node_depth, outer)) = &node
                && depth == *node_depth
            {
                let end = reader.buffer_position() as usize;
                self.offset += end;
                let fragment = &rest[*start..end];
                let doc = crate::html::Document::parse_xml_in_scope(fragment, false, outer)
                    .map_err(Failure::msg)?;
                let mut ns: Vec<(&str, &str)> = Vec::new();
                if let Some((p, u, _)) = &self.target {
                    ns.push((p.as_str(), u.as_str()));
                }
                ns.extend(
                    self.namespaces
                        .iter()
                        .map(|(p, u)| (p.as_str(), u.as_str())),
                );
                let sel = Selection::of_document(&doc).with_namespaces(ns);
                let mut spider = self.spider.borrow_mut();
                let results = spider.parse_node(&self.response, &sel)?;
                let results = spider.process_results(&self.response, results);
                drop(spider);
                self.pending.extend(results);
                return Ok(true);
            }
        }
    }
}

impl<S: XmlFeed> Iterator for XmlNodes<S> {
    type Item = Result<Output, Failure>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(output) = self.pending.pop_front() {
                return Some(Ok(output));
            }
            if self.done {
                return None;
            }
            match self.next_node() {
                Ok(true) => {}
                Ok(false) => {
                    self.done = true;
                    return None;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

feed_spider_impl!(XmlFeedSpider, XmlFeed, parse_nodes);
