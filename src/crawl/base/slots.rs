//! Download slots as the components below the downloader see them: the key of the
//! slot a request goes to ([`slot_key`]) and the per-slot count of active downloads
//! ([`SlotActivity`]) that the downloader keeps and the downloader-aware priority
//! queues read.
//!
//! A queue that orders slots by activity subscribes to the changes
//! ([`SlotActivity::subscribe`]) instead of asking every slot's count at every pop: a
//! crawl of 10,000 hosts would otherwise pay 10,000 lookups per request.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;
use std::rc::{Rc, Weak};

use crate::crawl::http::request::{Request, keys};
use crate::util::SeededMap;

/// How the downloader names a request's slot (`CONCURRENT_REQUESTS_PER_IP` maps hosts
/// to addresses); the downloader-aware queue asks the same function.
pub type SlotKeyFn = Rc<dyn Fn(&Request) -> String>;

/// The names of the slots whose active count changed since the subscriber last
/// drained it (a name may appear more than once).
pub type ChangeFeed = Rc<RefCell<Vec<Rc<str>>>>;

/// A subscriber's feed, as the activity holds it (dropped by the subscriber: gone).
type WeakFeed = Weak<RefCell<Vec<Rc<str>>>>;

/// Per-slot active download counts, shared with the downloader-aware priority queue.
#[derive(Default)]
pub struct SlotActivity {
    counts: RefCell<SeededMap<Rc<str>, std::cell::Cell<usize>>>,
    key_fn: RefCell<Option<SlotKeyFn>>,
    feeds: RefCell<Vec<WeakFeed>>,
}

impl fmt::Debug for SlotActivity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlotActivity")
            .field("counts", &self.counts.borrow())
            .finish()
    }
}

impl SlotActivity {
    /// The downloader's slot key for `request` (Scrapy's `Downloader.get_slot_key`).
    pub fn slot_key<'r>(&self, request: &'r Request) -> Cow<'r, str> {
        let key_fn = self.key_fn.borrow().clone();
        match key_fn {
            Some(f) => Cow::Owned(f(request)),
            None => slot_key(request),
        }
    }

    /// Sets the slot naming (the downloader does it when `CONCURRENT_REQUESTS_PER_IP`
    /// is on).
    pub fn set_key_fn(&self, f: SlotKeyFn) {
        *self.key_fn.borrow_mut() = Some(f);
    }

    /// Active downloads in `slot`.
    pub fn active(&self, slot: &str) -> usize {
        self.counts
            .borrow()
            .get(slot)
            .map_or(0, std::cell::Cell::get)
    }

    /// Changes `slot`'s count of active downloads by `delta` (the downloader does it;
    /// public for tests and custom downloaders).
    pub fn add(&self, slot: &str, delta: isize) {
        let mut c = self.counts.borrow_mut();
        // Looked up by `&str` first: the key is copied only for a slot becoming active.
        let name = match c.get_key_value(slot) {
            Some((name, count)) => {
                let name = name.clone();
                let n = count.get().saturating_add_signed(delta);
                count.set(n);
                if n == 0 {
                    c.remove(slot);
                }
                name
            }
            None if delta > 0 => {
                let name: Rc<str> = Rc::from(slot);
                c.insert(name.clone(), std::cell::Cell::new(delta.unsigned_abs()));
                name
            }
            None => return,
        };
        drop(c);
        let mut feeds = self.feeds.borrow_mut();
        feeds.retain(|feed| match feed.upgrade() {
            Some(feed) => {
                feed.borrow_mut().push(name.clone());
                true
            }
            None => false,
        });
    }

    /// A feed of the slots whose count changes from now on; the subscriber drains it
    /// (it grows until then). Dropping the feed unsubscribes.
    pub fn subscribe(&self) -> ChangeFeed {
        let feed: ChangeFeed = Rc::default();
        self.feeds.borrow_mut().push(Rc::downgrade(&feed));
        feed
    }
}

/// The key of the slot a request goes to: `download_slot` meta, else the host
/// (lower-cased; borrowed from the request when it already is, as hosts of `http(s)`
/// URLs always are).
pub fn slot_key(request: &Request) -> Cow<'_, str> {
    if let Some(slot) = request.meta().get_str(keys::DOWNLOAD_SLOT) {
        return Cow::Borrowed(slot);
    }
    let host = request.url_host().unwrap_or("");
    if host.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(host.to_ascii_lowercase())
    } else {
        Cow::Borrowed(host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_key_is_the_lower_cased_host_or_the_meta_slot_borrowed_when_it_can_be() {
        let r = Request::get("http://Example.COM:8080/a").map_err(|e| e.to_string());
        let r = r.unwrap_or_else(|e| panic!("{e}"));
        // The `url` crate lower-cases special schemes' hosts: borrowed.
        assert!(matches!(slot_key(&r), Cow::Borrowed("example.com")));
        let r = r.with_meta(keys::DOWNLOAD_SLOT, "Slot-A");
        assert!(matches!(slot_key(&r), Cow::Borrowed("Slot-A")));
        let r = Request::get("foo://Host.Example/x").map_err(|e| e.to_string());
        let r = r.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(slot_key(&r), "host.example");
    }
}
