//! Spider middlewares and their manager (Scrapy's `SpiderMiddlewareManager`):
//! `process_spider_input` before the callback (in order), `process_spider_output` on its
//! results (reverse order), `process_spider_exception` when it fails (reverse order),
//! and `process_start` around the spider's `start()`.

use std::rc::Rc;

use super::request::Request;
use super::response::Response;
use super::spider::{Output, Outputs};
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
}

/// Runs spider middlewares.
pub struct SpiderMiddlewareManager {
    middlewares: Vec<(String, Rc<dyn SpiderMiddleware>)>,
}

impl SpiderMiddlewareManager {
    /// A manager over `middlewares` in order.
    pub fn new(middlewares: Vec<(String, Rc<dyn SpiderMiddleware>)>) -> Self {
        Self { middlewares }
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
        for (_, mw) in self.middlewares.iter().rev() {
            let wrapped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                mw.process_spider_output(response, request, outputs)
            }));
            outputs = match wrapped {
                Ok(outputs) => outputs,
                Err(p) => Box::new(std::iter::once(Err(Failure::from_panic(p.as_ref())))),
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
        for (_, mw) in self.middlewares.iter().rev() {
            let wrapped =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| mw.process_start(start)));
            start = match wrapped {
                Ok(start) => start,
                Err(p) => Box::new(std::iter::once(Err(Failure::from_panic(p.as_ref())))),
            };
        }
        start
    }
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
