//! What a spider's callbacks and `start()` yield: [`Output`]s, pulled one at a time.

use crate::crawl::base::item::Item;
use crate::crawl::http::request::Request;
use crate::defer::Failure;

/// What a callback or `start()` yields.
#[derive(Debug, Clone)]
pub enum Output {
    /// A request to schedule.
    Request(Request),
    /// An item for the pipelines.
    Item(Item),
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
