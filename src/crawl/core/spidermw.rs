//! Spider middlewares and their manager (Scrapy's `SpiderMiddlewareManager`):
//! `process_spider_input` before the callback (in order), `process_spider_output` on its
//! results (reverse order), `process_spider_exception` when it fails (reverse order),
//! and `process_start` around the spider's `start()`.
//!
//! A middleware may instead process outputs one at a time (Scrapy 2.13's
//! `BaseSpiderMiddleware`: `get_processed_request`, `get_processed_item`); the manager
//! runs consecutive such middlewares in one pass over each output, one iterator layer
//! for all of them where wrapping would add one per middleware.

use std::rc::Rc;

use crate::crawl::base::item::Item;
use crate::crawl::http::request::Request;
use crate::crawl::http::response::Response;
use crate::crawl::spiders::outputs::{Output, Outputs};
use crate::defer::Failure;

/// A spider middleware; every method passes through by default.
pub trait SpiderMiddleware {
    /// Called for each response before the callback.
    ///
    /// # Errors
    ///
    /// A failure skips the callback: it goes to the errback (or
    /// `process_spider_exception`).
    fn process_spider_input(&self, response: &Response) -> Result<(), Failure> {
        let _ = response;
        Ok(())
    }

    /// Wraps a callback's (or errback's) outputs; may filter, change or add to them.
    ///
    /// The outputs are lazy (Scrapy's generator chain): wrap the iterator with adaptors
    /// (`map`, `filter_map`, `flat_map`...) rather than collecting it, so a callback
    /// yielding 100,000 requests is never held whole. An `Err` item is an exception
    /// from the callback's iteration; pass it on. Anything the adaptors need from
    /// `response` must be cloned into them.
    fn process_spider_output(
        &self,
        response: Option<&Response>,
        request: &Request,
        outputs: Outputs,
    ) -> Outputs {
        let _ = (response, request);
        outputs
    }

    /// Called when the callback or an input check failed; `Some(outputs)` handles it.
    fn process_spider_exception(
        &self,
        response: &Response,
        failure: &Failure,
    ) -> Option<Vec<Output>> {
        let _ = (response, failure);
        None
    }

    /// Wraps the spider's `start()` output (lazy, like `process_spider_output`).
    fn process_start(&self, start: Outputs) -> Outputs {
        start
    }

    /// Whether this middleware processes outputs one at a time (Scrapy's
    /// `BaseSpiderMiddleware`): the manager then calls
    /// [`get_processed_request`](Self::get_processed_request) and
    /// [`get_processed_item`](Self::get_processed_item) for each output of a callback,
    /// an errback (no response) and `start()` (no response), and never calls
    /// `process_spider_output` or `process_start`. Asked once, when the manager is built.
    fn per_output(&self) -> bool {
        false
    }

    /// Scrapy's `get_processed_request`: processes one request output (change it, or
    /// replace it by assigning); `false` drops it. `response` is the page the request
    /// came from, `None` for start requests and an errback's outputs. Called only when
    /// [`per_output`](Self::per_output) is true.
    fn get_processed_request(&self, request: &mut Request, response: Option<&Response>) -> bool {
        let _ = (request, response);
        true
    }

    /// Scrapy's `get_processed_item`: as [`get_processed_request`](Self::get_processed_request),
    /// for an item.
    fn get_processed_item(&self, item: &mut Item, response: Option<&Response>) -> bool {
        let _ = (item, response);
        true
    }
}

/// How the manager applies one step of its chain.
enum Layer {
    /// A middleware that wraps the outputs (`process_spider_output`, `process_start`).
    Wrap(Rc<dyn SpiderMiddleware>),
    /// Consecutive [`per_output`](SpiderMiddleware::per_output) middlewares, in the
    /// order outputs meet them.
    PerOutput(Rc<[Rc<dyn SpiderMiddleware>]>),
}

/// The outputs of one callback, errback or `start()` through a run of per-output
/// middlewares: each output meets them in order until one drops it.
struct PerOutputs {
    inner: Outputs,
    middlewares: Rc<[Rc<dyn SpiderMiddleware>]>,
    response: Option<Response>,
}

impl Iterator for PerOutputs {
    type Item = Result<Output, Failure>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let mut output = match self.inner.next()? {
                Ok(output) => output,
                Err(f) => return Some(Err(f)),
            };
            let response = self.response.as_ref();
            let keep = match &mut output {
                Output::Request(r) => self
                    .middlewares
                    .iter()
                    .all(|mw| mw.get_processed_request(r, response)),
                Output::Item(i) => self
                    .middlewares
                    .iter()
                    .all(|mw| mw.get_processed_item(i, response)),
                // What it fires with comes back through the middlewares.
                Output::Later(_) => true,
            };
            if keep {
                return Some(Ok(output));
            }
        }
    }
}

/// Runs spider middlewares.
pub struct SpiderMiddlewareManager {
    middlewares: Vec<(String, Rc<dyn SpiderMiddleware>)>,
    /// The output chain, innermost first (the last middleware first).
    layers: Vec<Layer>,
}

impl SpiderMiddlewareManager {
    /// A manager over `middlewares` in order.
    pub fn new(middlewares: Vec<(String, Rc<dyn SpiderMiddleware>)>) -> Self {
        let mut layers = Vec::new();
        let mut run: Vec<Rc<dyn SpiderMiddleware>> = Vec::new();
        for (_, mw) in middlewares.iter().rev() {
            if mw.per_output() {
                run.push(mw.clone());
            } else {
                if !run.is_empty() {
                    layers.push(Layer::PerOutput(std::mem::take(&mut run).into()));
                }
                layers.push(Layer::Wrap(mw.clone()));
            }
        }
        if !run.is_empty() {
            layers.push(Layer::PerOutput(run.into()));
        }
        Self {
            middlewares,
            layers,
        }
    }

    /// The middleware names in order.
    pub fn names(&self) -> Vec<&str> {
        self.middlewares.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// Runs `process_spider_input` of each middleware.
    ///
    /// # Errors
    ///
    /// The first failure.
    pub fn process_input(&self, response: &Response) -> Result<(), Failure> {
        for (_, mw) in &self.middlewares {
            guarded(|| mw.process_spider_input(response))?;
        }
        Ok(())
    }

    /// Wraps `outputs` with each middleware's `process_spider_output`, in reverse order.
    /// A middleware that panics while wrapping ends the outputs with that failure.
    pub fn process_output(
        &self,
        response: Option<&Response>,
        request: &Request,
        mut outputs: Outputs,
    ) -> Outputs {
        for layer in &self.layers {
            outputs = match layer {
                Layer::Wrap(mw) => wrap(|| mw.process_spider_output(response, request, outputs)),
                Layer::PerOutput(mws) => Box::new(PerOutputs {
                    inner: outputs,
                    middlewares: mws.clone(),
                    response: response.cloned(),
                }),
            };
        }
        outputs
    }

    /// Runs `process_spider_exception` in reverse order until one handles it.
    pub fn process_exception(&self, response: &Response, failure: &Failure) -> Option<Vec<Output>> {
        self.middlewares
            .iter()
            .rev()
            .find_map(|(_, mw)| mw.process_spider_exception(response, failure))
    }

    /// Wraps `start` with each middleware's `process_start` (last middleware outermost).
    pub fn process_start(&self, mut start: Outputs) -> Outputs {
        for layer in &self.layers {
            start = match layer {
                Layer::Wrap(mw) => wrap(|| mw.process_start(start)),
                Layer::PerOutput(mws) => Box::new(PerOutputs {
                    inner: start,
                    middlewares: mws.clone(),
                    response: None,
                }),
            };
        }
        start
    }
}

/// A middleware's wrapping of outputs; a panic while wrapping ends them with that
/// failure.
fn wrap(f: impl FnOnce() -> Outputs) -> Outputs {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|p| Box::new(std::iter::once(Err(Failure::from_panic(p.as_ref())))))
}

fn guarded<T>(f: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|p| Err(Failure::from_panic(p.as_ref())))
}

impl std::fmt::Debug for SpiderMiddlewareManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    /// Writes its name into each output's `path` and the shared log; drops requests
    /// whose URL contains `drop`. Per output or wrapping, as told.
    struct Tag {
        name: &'static str,
        per_output: bool,
        drop: &'static str,
        log: Rc<RefCell<Vec<String>>>,
    }

    impl Tag {
        fn request(&self, r: &mut Request, response: Option<&Response>) -> bool {
            let seen = if response.is_some() { "page" } else { "none" };
            self.log
                .borrow_mut()
                .push(format!("{} {} {seen}", self.name, r.url_str()));
            let path = format!("{}{}", r.meta().get_str("path").unwrap_or(""), self.name);
            r.meta_mut().insert("path", path);
            self.drop.is_empty() || !r.url_str().contains(self.drop)
        }
    }

    impl SpiderMiddleware for Tag {
        fn per_output(&self) -> bool {
            self.per_output
        }

        fn get_processed_request(&self, r: &mut Request, response: Option<&Response>) -> bool {
            assert!(self.per_output, "{} asked per output", self.name);
            self.request(r, response)
        }

        fn get_processed_item(&self, item: &mut Item, _response: Option<&Response>) -> bool {
            let path = format!("{}{}", item.get_str("path").unwrap_or(""), self.name);
            item.set("path", path);
            true
        }

        fn process_spider_output(
            &self,
            response: Option<&Response>,
            _request: &Request,
            outputs: Outputs,
        ) -> Outputs {
            assert!(!self.per_output, "{} wrapped", self.name);
            let me = Tag {
                log: self.log.clone(),
                ..*self
            };
            let response = response.cloned();
            Box::new(outputs.filter_map(move |o| {
                match o {
                    Ok(Output::Request(mut r)) => me
                        .request(&mut r, response.as_ref())
                        .then_some(Ok(Output::Request(r))),
                    Ok(Output::Item(mut i)) => {
                        let path = format!("{}{}", i.get_str("path").unwrap_or(""), me.name);
                        i.set("path", path);
                        Some(Ok(Output::Item(i)))
                    }
                    other => Some(other),
                }
            }))
        }

        fn process_start(&self, start: Outputs) -> Outputs {
            let page = Request::get("http://page.test/").expect("url");
            self.process_spider_output(None, &page, start)
        }
    }

    fn chain(log: &Rc<RefCell<Vec<String>>>) -> SpiderMiddlewareManager {
        // In settings order; outputs meet them last first: D, C, B (wrapping), A.
        let tag = |name, per_output, drop| {
            let mw: Rc<dyn SpiderMiddleware> = Rc::new(Tag {
                name,
                per_output,
                drop,
                log: log.clone(),
            });
            (name.to_owned(), mw)
        };
        SpiderMiddlewareManager::new(vec![
            tag("A", true, ""),
            tag("B", false, "/b"),
            tag("C", true, "/c"),
            tag("D", true, ""),
        ])
    }

    fn describe(o: Result<Output, Failure>) -> String {
        match o {
            Ok(Output::Request(r)) => {
                format!("{} {}", r.url_str(), r.meta().get_str("path").unwrap_or(""))
            }
            Ok(Output::Item(i)) => format!("item {}", i.get_str("path").unwrap_or("")),
            Ok(Output::Later(_)) => "later".into(),
            Err(f) => format!("error {f}"),
        }
    }

    #[test]
    fn per_output_middlewares_run_in_order_one_output_at_a_time() {
        let log = Rc::new(RefCell::new(Vec::new()));
        let manager = chain(&log);
        let page = Request::get("http://page.test/").expect("url");
        let response = Response::new(page.clone(), 200, crate::proto::Headers::new(), Vec::new());
        let outputs: Outputs = Box::new(
            vec![
                Ok(Output::Request(
                    Request::get("http://x.test/1").expect("url"),
                )),
                Ok(Output::Request(
                    Request::get("http://x.test/c").expect("url"),
                )),
                Err(Failure::msg("boom")),
                Ok(Output::Item(Item::new())),
                Ok(Output::Request(
                    Request::get("http://x.test/b").expect("url"),
                )),
                Ok(Output::Request(
                    Request::get("http://x.test/2").expect("url"),
                )),
            ]
            .into_iter(),
        );
        let mut out = manager.process_output(Some(&response), &page, outputs);
        // Lazy: the first output has met every middleware, the second none yet.
        assert_eq!(
            out.next().map(describe).as_deref(),
            Some("http://x.test/1 DCBA")
        );
        assert_eq!(
            *log.borrow(),
            [
                "D http://x.test/1 page",
                "C http://x.test/1 page",
                "B http://x.test/1 page",
                "A http://x.test/1 page"
            ]
        );
        let rest: Vec<String> = out.map(describe).collect();
        assert_eq!(rest, ["error boom", "item DCBA", "http://x.test/2 DCBA"]);
        // A request dropped by C never reaches B or A; one dropped by B never reaches A.
        let log = log.borrow();
        assert!(log.contains(&"C http://x.test/c page".to_owned()));
        assert!(!log.iter().any(|l| l.starts_with("B http://x.test/c")));
        assert!(log.contains(&"B http://x.test/b page".to_owned()));
        assert!(!log.iter().any(|l| l.starts_with("A http://x.test/b")));
    }

    #[test]
    fn start_requests_meet_per_output_middlewares_without_a_response() {
        let log = Rc::new(RefCell::new(Vec::new()));
        let manager = chain(&log);
        let start = crate::crawl::spiders::outputs::outputs(vec![
            Output::Request(Request::get("http://x.test/1").expect("url")),
            Output::Request(Request::get("http://x.test/c").expect("url")),
        ]);
        let got: Vec<String> = manager.process_start(start).map(describe).collect();
        assert_eq!(got, ["http://x.test/1 DCBA"]);
        assert!(log.borrow().iter().all(|l| l.ends_with(" none")), "{log:?}");
        assert_eq!(log.borrow().len(), 4 + 2);
    }
}
