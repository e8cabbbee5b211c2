//! [`CsvFeedSpider`] (Scrapy's `scrapy.spiders.CSVFeedSpider`), as a wrapper around a
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
            text: Rc::from(response.text()),
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
    text: Rc<str>,
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
        let rest = self.text.get(self.offset..)?;
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

impl<S: CsvFeed + 'static> Spider for CsvFeedSpider<S> {
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
        self.parse_rows(response).collect()
    }

    fn callback(&mut self, name: &str, response: &Response) -> CallbackResult {
        if name == "parse" {
            return self.parse(response);
        }
        self.inner.borrow_mut().callback(name, response)
    }

    fn callback_outputs(&mut self, name: &str, response: &Response) -> Result<Outputs, Failure> {
        if name == "parse" {
            return Ok(self.parse_rows(response));
        }
        self.inner.borrow_mut().callback_outputs(name, response)
    }

    fn errback(&mut self, name: &str, failure: &Failure, request: &Request) -> CallbackResult {
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
