//! Signals with Scrapy's names, and `send_catch_log`: every handler runs, a failing (or
//! panicking) handler is logged and its failure returned in the results, and the
//! control-flow failures (`DontCloseSpider`, `CloseSpider`, `IgnoreRequest`) are returned
//! without being logged.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

use super::errors::{CloseSpider, DontCloseSpider, IgnoreRequest, StopDownload};
use super::item::Item;
use crate::crawl::http::request::Request;
use crate::crawl::http::response::Response;
use crate::crawl::util::robots::RobotsTxt;
use crate::defer::Failure;
use crate::proto::Headers;

/// Scrapy's signals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Signal {
    /// The engine started.
    EngineStarted,
    /// The engine stopped.
    EngineStopped,
    /// The spider was opened.
    SpiderOpened,
    /// The spider is idle (nothing scheduled, downloading or scraping).
    SpiderIdle,
    /// The spider closed (`reason` in the arguments).
    SpiderClosed,
    /// A callback failed.
    SpiderError,
    /// A request was handed to the scheduler.
    RequestScheduled,
    /// The scheduler rejected a request (duplicate).
    RequestDropped,
    /// A request reached the downloader's slot queue.
    RequestReachedDownloader,
    /// A request left the downloader (done, failed or redirected).
    RequestLeftDownloader,
    /// The engine received a response from the downloader.
    ResponseReceived,
    /// A download handler produced a response.
    ResponseDownloaded,
    /// An item passed every pipeline.
    ItemScraped,
    /// A pipeline dropped an item.
    ItemDropped,
    /// A pipeline failed on an item.
    ItemError,
    /// The scheduler had nothing to give.
    SchedulerEmpty,
    /// A response's status line and headers arrived (a handler may return
    /// [`StopDownload`]).
    HeadersReceived,
    /// A piece of a response's body arrived (a handler may return [`StopDownload`]).
    BytesReceived,
    /// A robots.txt was fetched and parsed.
    RobotsParsed,
    /// A feed was closed (its file is complete).
    FeedSlotClosed,
    /// Every feed was closed.
    FeedExporterClosed,
}

/// What a signal carries.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub enum SignalArgs<'a> {
    /// Nothing but the spider (engine_started/stopped, spider_opened/idle, scheduler_empty).
    None,
    /// `spider_closed`.
    SpiderClosed {
        /// The finish reason.
        reason: &'a str,
    },
    /// `spider_error`.
    SpiderError {
        /// What failed.
        failure: &'a Failure,
        /// The response being processed.
        response: Option<&'a Response>,
        /// The request (`None` for an error in `start()`).
        request: Option<&'a Request>,
    },
    /// Request signals.
    Request {
        /// The request.
        request: &'a Request,
    },
    /// Response signals.
    Response {
        /// The response.
        response: &'a Response,
        /// Its request.
        request: &'a Request,
    },
    /// `headers_received`.
    Headers {
        /// The response headers.
        headers: &'a Headers,
        /// The status code.
        status: u16,
        /// The announced body length (`Content-Length`), if any.
        body_length: Option<u64>,
        /// The request.
        request: &'a Request,
    },
    /// `bytes_received`.
    Bytes {
        /// The piece of the body, as on the wire.
        data: &'a [u8],
        /// The request.
        request: &'a Request,
    },
    /// `robots_parsed`.
    Robots {
        /// The origin the robots.txt applies to (`scheme://host:port`).
        netloc: &'a str,
        /// The parsed rules.
        robots: &'a RobotsTxt,
    },
    /// `feed_slot_closed`.
    FeedSlot {
        /// The feed's URI (its path).
        uri: &'a str,
        /// Items written to it.
        items: u64,
    },
    /// Item signals (`item_scraped`; `failure` for dropped / error).
    Item {
        /// The item.
        item: &'a Item,
        /// The response it came from (none for items from `start()`).
        response: Option<&'a Response>,
        /// Why it was dropped or failed.
        failure: Option<&'a Failure>,
    },
}

impl fmt::Debug for SignalArgs<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::None => f.write_str("None"),
            Self::SpiderClosed { reason } => write!(f, "SpiderClosed({reason})"),
            Self::SpiderError { failure, .. } => write!(f, "SpiderError({failure})"),
            Self::Request { request } => write!(f, "Request({request})"),
            Self::Response { response, .. } => write!(f, "Response({response:?})"),
            Self::Item { item, .. } => write!(f, "Item({item:?})"),
            Self::Headers {
                status, request, ..
            } => write!(f, "Headers({status} {request})"),
            Self::Bytes { data, request } => write!(f, "Bytes({} for {request})", data.len()),
            Self::Robots { netloc, .. } => write!(f, "Robots({netloc})"),
            Self::FeedSlot { uri, items } => write!(f, "FeedSlot({uri}, {items})"),
        }
    }
}

/// A signal handler.
pub type Handler = Rc<dyn Fn(&SignalArgs<'_>) -> Result<(), Failure>>;

/// Identifies a connected handler, for `disconnect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandlerId(u64);

/// What [`Signals::send_catch_log`] returns: each handler's result, in order (Scrapy's
/// list of `(receiver, response)`). Most signals have one or two handlers: those
/// results stay inline, without an allocation per send.
pub type SignalResults = smallvec::SmallVec<[Result<(), Failure>; 2]>;

/// The signal manager.
#[derive(Default)]
pub struct Signals {
    /// Copied on write: a send iterates a snapshot (a reference count, no copy of the
    /// list), so handlers may connect and disconnect while it runs, and no borrow is
    /// held while a handler is called.
    handlers: RefCell<Rc<Vec<(Signal, HandlerId, Handler)>>>,
    next: Cell<u64>,
    /// One bit per signal with at least one handler: a signal nobody listens to (most
    /// `request_scheduled` sends, one per extracted link) costs a bit test.
    listening: Cell<u32>,
}

// Every signal has a bit in a `u32` (keep `FeedExporterClosed` the last variant).
const _: () = assert!((Signal::FeedExporterClosed as u32) < 32);

/// The bit of `signal` in `Signals::listening`.
fn bit(signal: Signal) -> u32 {
    1 << (signal as u32)
}

impl Signals {
    /// No handlers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Connects a handler; handlers run in connection order.
    pub fn connect<F>(&self, signal: Signal, handler: F) -> HandlerId
    where
        F: Fn(&SignalArgs<'_>) -> Result<(), Failure> + 'static,
    {
        let id = HandlerId(self.next.get());
        self.next.set(id.0 + 1);
        Rc::make_mut(&mut self.handlers.borrow_mut()).push((signal, id, Rc::new(handler)));
        self.listening.set(self.listening.get() | bit(signal));
        id
    }

    /// Disconnects a handler.
    pub fn disconnect(&self, id: HandlerId) {
        let mut handlers = self.handlers.borrow_mut();
        Rc::make_mut(&mut handlers).retain(|(_, i, _)| *i != id);
        self.listening
            .set(handlers.iter().fold(0, |bits, (s, _, _)| bits | bit(*s)));
    }

    /// Whether any handler listens to `signal` (lets hot paths skip building args).
    pub fn has_receivers(&self, signal: Signal) -> bool {
        self.listening.get() & bit(signal) != 0
    }

    /// Sends a signal to every handler; returns each handler's result. Failures other
    /// than the control-flow ones are logged.
    pub fn send_catch_log(&self, signal: Signal, args: SignalArgs<'_>) -> SignalResults {
        if !self.has_receivers(signal) {
            return SignalResults::new();
        }
        let handlers = self.handlers.borrow().clone();
        handlers
            .iter()
            .filter(|(s, _, _)| *s == signal)
            .map(|(_, _, h)| {
                let result = catch_unwind(AssertUnwindSafe(|| h(&args)))
                    .unwrap_or_else(|p| Err(Failure::from_panic(p.as_ref())));
                if let Err(f) = &result
                    && !(f.check::<DontCloseSpider>()
                        || f.check::<CloseSpider>()
                        || f.check::<IgnoreRequest>()
                        || f.check::<StopDownload>())
                {
                    log::error!(
                        "Error caught on signal handler for {signal:?}:\n{}",
                        f.describe()
                    );
                }
                result
            })
            .collect()
    }
}

impl fmt::Debug for Signals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signals")
            .field("handlers", &self.handlers.borrow().len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn receivers_follow_connects_and_disconnects() {
        let s = Signals::new();
        assert!(!s.has_receivers(Signal::ItemScraped));
        let a = s.connect(Signal::ItemScraped, |_| Ok(()));
        let b = s.connect(Signal::ItemScraped, |_| Ok(()));
        let c = s.connect(Signal::FeedExporterClosed, |_| Ok(()));
        assert!(s.has_receivers(Signal::ItemScraped));
        assert!(s.has_receivers(Signal::FeedExporterClosed));
        assert!(!s.has_receivers(Signal::EngineStarted));
        s.disconnect(a);
        assert!(s.has_receivers(Signal::ItemScraped), "b still listens");
        s.disconnect(b);
        assert!(!s.has_receivers(Signal::ItemScraped));
        assert!(s.has_receivers(Signal::FeedExporterClosed));
        s.disconnect(c);
        assert!(!s.has_receivers(Signal::FeedExporterClosed));
        assert!(
            s.send_catch_log(Signal::ItemScraped, SignalArgs::None)
                .is_empty()
        );
    }

    #[test]
    fn a_send_runs_the_handlers_connected_when_it_started() {
        let s = Rc::new(Signals::new());
        let log: Rc<RefCell<Vec<&str>>> = Rc::default();
        let first = Rc::new(Cell::new(None));
        let (s2, log2, first2) = (s.clone(), log.clone(), first.clone());
        let id = s.connect(Signal::SpiderIdle, move |_| {
            log2.borrow_mut().push("first");
            // Disconnects itself and connects another: neither changes this send.
            if let Some(me) = first2.take() {
                s2.disconnect(me);
            }
            let log3 = log2.clone();
            s2.connect(Signal::SpiderIdle, move |_| {
                log3.borrow_mut().push("late");
                Ok(())
            });
            Ok(())
        });
        first.set(Some(id));
        let log4 = log.clone();
        s.connect(Signal::SpiderIdle, move |_| {
            log4.borrow_mut().push("second");
            Ok(())
        });
        let results = s.send_catch_log(Signal::SpiderIdle, SignalArgs::None);
        assert_eq!(results.len(), 2);
        assert_eq!(*log.borrow(), ["first", "second"]);
        log.borrow_mut().clear();
        s.send_catch_log(Signal::SpiderIdle, SignalArgs::None);
        assert_eq!(*log.borrow(), ["second", "late"]);
    }
}
