//! Downloader middlewares and their manager (Scrapy's `DownloaderMiddlewareManager`).
//!
//! `process_request` runs in order; a middleware may continue, answer with a response
//! (skipping the download), return a new request (for the engine to schedule), fail
//! (`IgnoreRequest`...) or return a Deferred of any of these. The download then runs and
//! `process_response` runs in reverse order on every response (also one answered by a
//! `process_request`); a failure — from `process_request` or the download — goes through
//! `process_exception` in reverse order, where a middleware may recover with a response
//! or a request.

use std::rc::Rc;

use crate::crawl::http::request::Request;
use crate::crawl::http::response::Response;
use crate::defer::{Deferred, Failure};

/// What `process_request` decided.
#[derive(Debug)]
pub enum RequestOutcome {
    /// Go on with the next middleware / the download.
    Continue,
    /// Use this response instead of downloading.
    Response(Response),
    /// Schedule this request instead (the engine re-crawls it).
    Request(Request),
    /// Decide later.
    Wait(Deferred<RequestOutcome>),
}

/// What `process_response` decided.
#[derive(Debug)]
pub enum ResponseOutcome {
    /// Pass this response on.
    Response(Response),
    /// Schedule this request instead (a redirect, a retry).
    Request(Request),
    /// Decide later.
    Wait(Deferred<ResponseOutcome>),
}

/// What `process_exception` decided.
#[derive(Debug)]
pub enum ExceptionOutcome {
    /// Not handled: the next middleware sees the failure.
    Continue,
    /// Recover with a response.
    Response(Response),
    /// Recover with a new request (a retry).
    Request(Request),
    /// Decide later.
    Wait(Deferred<ExceptionOutcome>),
}

/// A downloader middleware. Every method has a pass-through default.
pub trait DownloaderMiddleware {
    /// Called on each request on its way to the downloader.
    ///
    /// # Errors
    ///
    /// A failure (`IgnoreRequest`, say) goes to `process_exception`.
    fn process_request(&self, request: &mut Request) -> Result<RequestOutcome, Failure> {
        let _ = request;
        Ok(RequestOutcome::Continue)
    }

    /// Called on each response on its way back.
    ///
    /// # Errors
    ///
    /// A failure goes to the spider's errback.
    fn process_response(
        &self,
        request: &Request,
        response: Response,
    ) -> Result<ResponseOutcome, Failure> {
        let _ = request;
        Ok(ResponseOutcome::Response(response))
    }

    /// Called when the download or a `process_request` failed.
    ///
    /// # Errors
    ///
    /// A new failure replaces the old one.
    fn process_exception(
        &self,
        request: &Request,
        failure: &Failure,
    ) -> Result<ExceptionOutcome, Failure> {
        let _ = (request, failure);
        Ok(ExceptionOutcome::Continue)
    }
}

/// What the middleware chain produced for the engine.
#[derive(Debug)]
pub enum DownloadOutput {
    /// A response for the scraper.
    Response(Response),
    /// A request to schedule (it goes through the scheduler and dupefilter again).
    Request(Request),
}

/// The chain's failure, with the request the middlewares wrote to: Scrapy's errbacks
/// get that one request object (with `download_slot`, `download_timeout`...), and
/// the engine needs no copy of its own to hand them.
#[derive(Debug)]
pub struct DownloadFailure {
    /// What went wrong (after every `process_exception` saw it).
    pub failure: Failure,
    /// The request as the middlewares left it.
    pub request: Request,
}

/// What the chain hands the engine: its output, or its failure with the request.
pub type Fetched = Result<DownloadOutput, DownloadFailure>;

/// What the downloader hands back: the response (with its request), or the failure
/// with the request the downloader and the handler had.
pub type Downloaded = Result<Response, DownloadFailure>;

/// The function that really downloads (the downloader's slot queue). The middleware
/// manager hands its request over — no copy stays behind for the handler's write
/// (`download_latency`) to pay for — and gets it back with a failure, carrying what
/// Scrapy's downloader writes to its one request object (`download_slot`), so that
/// `process_exception` sees it too.
pub type DownloadFn = Rc<dyn Fn(Request) -> Deferred<Downloaded>>;

/// Runs requests through the middlewares around a download function.
pub struct DownloaderMiddlewareManager {
    middlewares: Vec<(String, Rc<dyn DownloaderMiddleware>)>,
}

impl DownloaderMiddlewareManager {
    /// A manager over `middlewares` in order.
    pub fn new(middlewares: Vec<(String, Rc<dyn DownloaderMiddleware>)>) -> Rc<Self> {
        Rc::new(Self { middlewares })
    }

    /// The middleware names in order.
    pub fn names(&self) -> Vec<&str> {
        self.middlewares.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// Processes `request` through the chain and `download`. A failure comes back as
    /// a result, with the request; the Deferred's own errback fires only if one of its
    /// later links fails.
    pub fn download(self: &Rc<Self>, request: Request, download: DownloadFn) -> Deferred<Fetched> {
        let out = Deferred::new();
        self.clone().request_step(request, 0, download, out.clone());
        out
    }

    fn request_step(
        self: Rc<Self>,
        mut request: Request,
        index: usize,
        download: DownloadFn,
        out: Deferred<Fetched>,
    ) {
        let mut i = index;
        while let Some(mw) = self.middlewares.get(i).map(|(_, m)| m.clone()) {
            let outcome = guarded(|| mw.process_request(&mut request));
            match outcome {
                Ok(RequestOutcome::Continue) => i += 1,
                Ok(RequestOutcome::Response(r)) => {
                    let n = self.middlewares.len();
                    self.response_step(request, r, n, out);
                    return;
                }
                Ok(RequestOutcome::Request(r)) => {
                    let _ = out.callback(Ok(DownloadOutput::Request(r)));
                    return;
                }
                Ok(RequestOutcome::Wait(d)) => {
                    let me = self.clone();
                    let _chain: Deferred<()> = d.then(move |r| {
                        match r {
                            Ok(RequestOutcome::Continue) => {
                                me.request_step(request, i + 1, download, out)
                            }
                            Ok(RequestOutcome::Response(resp)) => {
                                let n = me.middlewares.len();
                                me.response_step(request, resp, n, out);
                            }
                            Ok(RequestOutcome::Request(r)) => {
                                let _ = out.callback(Ok(DownloadOutput::Request(r)));
                            }
                            Ok(RequestOutcome::Wait(_)) => {
                                let n = me.middlewares.len();
                                me.exception_step(
                                    request,
                                    Failure::msg("nested Wait from process_request"),
                                    n,
                                    out,
                                );
                            }
                            Err(f) => {
                                let n = me.middlewares.len();
                                me.exception_step(request, f, n, out);
                            }
                        }
                        Ok(())
                    });
                    return;
                }
                Err(f) => {
                    let n = self.middlewares.len();
                    self.exception_step(request, f, n, out);
                    return;
                }
            }
        }
        let me = self.clone();
        let d = download(request);
        let _chain: Deferred<()> = d.then(move |r| {
            let n = me.middlewares.len();
            match r {
                // Scrapy's middlewares get the one request object the downloader
                // (`download_slot`) and the handler (`download_latency`) wrote to:
                // here that is the response's copy.
                Ok(Ok(response)) => {
                    let request = response.request().clone();
                    me.response_step(request, response, n, out)
                }
                Ok(Err(DownloadFailure { failure, request })) => {
                    me.exception_step(request, failure, n, out)
                }
                // A link of the downloader's own chain failed: no request to hand
                // back (the engine logs it).
                Err(f) => {
                    let _ = out.errback(f);
                }
            }
            Ok(())
        });
    }

    /// Runs `process_response` of middlewares `end-1` down to 0.
    fn response_step(
        self: Rc<Self>,
        request: Request,
        mut response: Response,
        end: usize,
        out: Deferred<Fetched>,
    ) {
        let mut i = end;
        while i > 0 {
            i -= 1;
            let mw = self.middlewares[i].1.clone();
            let outcome = guarded(|| mw.process_response(&request, response));
            match outcome {
                Ok(ResponseOutcome::Response(r)) => response = r,
                Ok(ResponseOutcome::Request(r)) => {
                    let _ = out.callback(Ok(DownloadOutput::Request(r)));
                    return;
                }
                Ok(ResponseOutcome::Wait(d)) => {
                    let me = self.clone();
                    let _chain: Deferred<()> = d.then(move |r| {
                        match r {
                            Ok(ResponseOutcome::Response(resp)) => {
                                me.response_step(request, resp, i, out)
                            }
                            Ok(ResponseOutcome::Request(r)) => {
                                let _ = out.callback(Ok(DownloadOutput::Request(r)));
                            }
                            Ok(ResponseOutcome::Wait(_)) => {
                                let f = Failure::msg("nested Wait from process_response");
                                fail(&out, f, request);
                            }
                            Err(f) => fail(&out, f, request),
                        }
                        Ok(())
                    });
                    return;
                }
                Err(f) => {
                    fail(&out, f, request);
                    return;
                }
            }
        }
        let _ = out.callback(Ok(DownloadOutput::Response(response)));
    }

    /// Runs `process_exception` of middlewares `end-1` down to 0.
    fn exception_step(
        self: Rc<Self>,
        request: Request,
        mut failure: Failure,
        end: usize,
        out: Deferred<Fetched>,
    ) {
        let mut i = end;
        while i > 0 {
            i -= 1;
            let mw = self.middlewares[i].1.clone();
            let outcome = guarded(|| mw.process_exception(&request, &failure));
            match outcome {
                Ok(ExceptionOutcome::Continue) => {}
                Ok(ExceptionOutcome::Response(r)) => {
                    let n = self.middlewares.len();
                    self.response_step(request, r, n, out);
                    return;
                }
                Ok(ExceptionOutcome::Request(r)) => {
                    let _ = out.callback(Ok(DownloadOutput::Request(r)));
                    return;
                }
                Ok(ExceptionOutcome::Wait(d)) => {
                    let me = self.clone();
                    let _chain: Deferred<()> = d.then(move |r| {
                        match r {
                            Ok(ExceptionOutcome::Continue) => {
                                me.exception_step(request, failure, i, out)
                            }
                            Ok(ExceptionOutcome::Response(resp)) => {
                                let n = me.middlewares.len();
                                me.response_step(request, resp, n, out);
                            }
                            Ok(ExceptionOutcome::Request(r)) => {
                                let _ = out.callback(Ok(DownloadOutput::Request(r)));
                            }
                            Ok(ExceptionOutcome::Wait(_)) => fail(&out, failure, request),
                            Err(f) => me.exception_step(request, f, i, out),
                        }
                        Ok(())
                    });
                    return;
                }
                Err(f) => failure = f,
            }
        }
        fail(&out, failure, request);
    }
}

/// Ends the chain with `failure`, handing `request` back with it.
fn fail(out: &Deferred<Fetched>, failure: Failure, request: Request) {
    let _ = out.callback(Err(DownloadFailure { failure, request }));
}

/// Runs a middleware method, turning a panic into a failure.
fn guarded<T>(f: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|p| Err(Failure::from_panic(p.as_ref())))
}

impl std::fmt::Debug for DownloaderMiddlewareManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}
