//! What a spider's callbacks and `start()` yield: [`Output`]s, pulled one at a time —
//! requests, items, and [`Later`]: outputs that come when a Deferred fires (Twisted's
//! `maybeDeferred` around a callback, Scrapy's `async def` callbacks and `start()`).

use std::fmt;

use crate::crawl::base::item::Item;
use crate::crawl::http::request::Request;
use crate::defer::{Deferred, Failure};

/// What a callback or `start()` yields.
#[derive(Debug, Clone)]
pub enum Output {
    /// A request to schedule.
    Request(Request),
    /// An item for the pipelines.
    Item(Item),
    /// Outputs that come later: the scraper (or the start loop) stops pulling here,
    /// waits for the Deferred without blocking anything else, processes what it fires
    /// with, then goes on with the outputs after this one. Its failure is an error
    /// raised at this point of the iteration.
    Later(Later),
}

impl Output {
    /// Outputs that come when `d` fires: an inline download, a database lookup, a
    /// timer (`Ok(vec![Output::later(d)])` is Scrapy's callback returning a Deferred).
    pub fn later(d: Deferred<Vec<Output>>) -> Self {
        Self::Later(Later(d.map(outputs)))
    }

    /// Lazy outputs that come when `d` fires.
    pub fn later_lazy(d: Deferred<Outputs>) -> Self {
        Self::Later(Later(d))
    }
}

impl From<Request> for Output {
    fn from(r: Request) -> Self {
        Self::Request(r)
    }
}

impl From<Item> for Output {
    fn from(i: Item) -> Self {
        Self::Item(i)
    }
}

/// Outputs not ready yet (see [`Output::Later`]).
#[derive(Clone)]
pub struct Later(pub Deferred<Outputs>);

impl Later {
    /// The Deferred the outputs come from.
    pub fn deferred(&self) -> &Deferred<Outputs> {
        &self.0
    }
}

impl fmt::Debug for Later {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Later")
            .field("called", &self.0.is_called())
            .finish()
    }
}

/// A callback's result: outputs, or a failure (logged and counted, the crawl goes on).
pub type CallbackResult = Result<Vec<Output>, Failure>;

/// Outputs pulled one at a time, as Scrapy iterates a callback's generator or
/// `start()`: an `Err` is an exception raised mid-iteration (outputs before it are kept;
/// the iteration ends there).
pub type Outputs = Box<dyn Iterator<Item = Result<Output, Failure>>>;

/// Wraps ready outputs (a `Vec`, an array, any iterator) as [`Outputs`].
pub fn outputs<I>(iter: I) -> Outputs
where
    I: IntoIterator<Item = Output>,
    I::IntoIter: 'static,
{
    Box::new(iter.into_iter().map(Ok))
}

/// Outputs that all come when `d` fires (a callback returning a Deferred).
pub fn later(d: Deferred<Vec<Output>>) -> Outputs {
    outputs([Output::later(d)])
}

/// Outputs with more spliced in front as waits resolve: the outputs a [`Later`] fired
/// with come first, then the rest of the iteration it interrupted. A stack, not nested
/// `chain`s, so a `start()` that waits before each of a million requests pulls each
/// in constant time.
#[derive(Default)]
pub struct OutputStack {
    top: Option<Outputs>,
    below: Vec<Outputs>,
}

impl OutputStack {
    /// A stack over one iteration.
    pub fn new(outputs: Outputs) -> Self {
        Self {
            top: Some(outputs),
            below: Vec::new(),
        }
    }

    /// Puts `outputs` in front of what remains.
    pub fn push_front(&mut self, outputs: Outputs) {
        if let Some(top) = self.top.replace(outputs) {
            self.below.push(top);
        }
    }

    /// Abandons every iteration (an error ends them all, as an exception ends the
    /// generators it crosses).
    pub fn clear(&mut self) {
        self.top = None;
        self.below.clear();
    }
}

impl Iterator for OutputStack {
    type Item = Result<Output, Failure>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(next) = self.top.as_mut()?.next() {
                return Some(next);
            }
            self.top = self.below.pop();
        }
    }
}

impl fmt::Debug for OutputStack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputStack")
            .field(
                "depth",
                &(usize::from(self.top.is_some()) + self.below.len()),
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(outs: impl Iterator<Item = Result<Output, Failure>>) -> Vec<String> {
        outs.map(|o| match o {
            Ok(Output::Request(r)) => r.url_str().to_owned(),
            Ok(Output::Item(_)) => "item".into(),
            Ok(Output::Later(_)) => "later".into(),
            Err(f) => format!("error {f}"),
        })
        .collect()
    }

    fn get(u: &str) -> Output {
        Output::Request(Request::get(u).expect("url"))
    }

    #[test]
    fn spliced_outputs_come_before_the_rest() {
        let mut stack = OutputStack::new(outputs(vec![
            get("http://a.test/1"),
            get("http://a.test/4"),
        ]));
        assert_eq!(urls(stack.by_ref().take(1)), ["http://a.test/1"]);
        stack.push_front(outputs(vec![get("http://a.test/2")]));
        stack.push_front(outputs(vec![get("http://a.test/3")]));
        assert_eq!(
            urls(stack),
            ["http://a.test/3", "http://a.test/2", "http://a.test/4"]
        );
    }

    #[test]
    fn a_million_splices_stay_flat() {
        let mut stack = OutputStack::new(outputs(Vec::new()));
        let mut n = 0;
        for i in 0..1_000_000u32 {
            stack.push_front(outputs(vec![Output::Item(Item::new())]));
            if i % 2 == 0 {
                n += stack.by_ref().take(1).count();
            }
        }
        n += stack.count();
        assert_eq!(n, 1_000_000);
    }
}
