//! [`DeferredList`] and [`gather_results`]: waiting on several Deferreds at once.
//!
//! Each member's result is *moved* into the list (a member's own chain ends there, and
//! callbacks added to it later run with `ConsumedError`), unless
//! [`share_results`](DeferredList::share_results) is set (`T: Clone`): then the list gets
//! a clone and the member's chain goes on with its value, as in Twisted — the way to put
//! one Deferred twice in a list, or in two lists. A member's failure is cloned into the
//! list and, unless `consume_errors` is set, also left in the member's chain, where it is
//! logged as unhandled if nothing handles it — Twisted's behaviour.

use std::cell::RefCell;
use std::rc::Rc;

use super::deferred::{Deferred, Next};
use super::failure::{Failure, FirstError};

/// What a [`DeferredList`] fires with.
#[derive(Debug)]
pub enum ListResult<T> {
    /// Every member finished; results in the order the members were given.
    All(Vec<Result<T, Failure>>),
    /// `fire_on_one_callback`: the first member to succeed.
    First {
        /// Its index in the list.
        index: usize,
        /// Its value.
        value: T,
    },
}

impl<T> ListResult<T> {
    /// The per-member results of [`ListResult::All`] (`None` for `First`).
    pub fn into_all(self) -> Option<Vec<Result<T, Failure>>> {
        match self {
            Self::All(v) => Some(v),
            Self::First { .. } => None,
        }
    }
}

/// Waits for a list of Deferreds: Twisted's `DeferredList`.
///
/// # Examples
///
/// ```
/// use trawl::defer::{Deferred, DeferredList, Failure, ListResult};
/// use trawl::testing::success_result_of;
///
/// let (a, b) = (Deferred::new(), Deferred::new());
/// let list = DeferredList::new(vec![a.clone(), b.clone()]).consume_errors(true).deferred();
/// b.errback(Failure::msg("boom")).unwrap();
/// a.callback(1).unwrap();
/// let ListResult::All(results) = success_result_of(list) else { unreachable!() };
/// assert_eq!(*results[0].as_ref().unwrap(), 1);
/// assert!(results[1].is_err());
/// ```
#[derive(Debug)]
#[must_use = "a DeferredList does nothing until .deferred() is called"]
pub struct DeferredList<T: 'static> {
    members: Vec<Deferred<T>>,
    fire_on_one_callback: bool,
    fire_on_one_errback: bool,
    consume_errors: bool,
    share: Option<fn(&T) -> T>,
}

struct Progress<T> {
    results: Vec<Option<Result<T, Failure>>>,
    finished: usize,
}

impl<T: 'static> DeferredList<T> {
    /// A list over `members`, firing when all of them have fired.
    pub fn new(members: Vec<Deferred<T>>) -> Self {
        Self {
            members,
            fire_on_one_callback: false,
            fire_on_one_errback: false,
            consume_errors: false,
            share: None,
        }
    }

    /// Gives the list a clone of each member's value and leaves the value in the member's
    /// chain (Twisted's behaviour): callbacks added to a member later still see it, and a
    /// Deferred may appear twice in a list or in several lists.
    pub fn share_results(mut self) -> Self
    where
        T: Clone,
    {
        self.share = Some(T::clone);
        self
    }

    /// Fire as soon as one member succeeds, with [`ListResult::First`].
    pub fn fire_on_one_callback(mut self, yes: bool) -> Self {
        self.fire_on_one_callback = yes;
        self
    }

    /// Fail as soon as one member fails, with a [`FirstError`].
    pub fn fire_on_one_errback(mut self, yes: bool) -> Self {
        self.fire_on_one_errback = yes;
        self
    }

    /// Swallow members' failures in their own chains (they are still reported here).
    pub fn consume_errors(mut self, yes: bool) -> Self {
        self.consume_errors = yes;
        self
    }

    /// Starts listening and returns the list's Deferred. Cancelling it cancels every
    /// member that has not fired.
    pub fn deferred(self) -> Deferred<ListResult<T>> {
        let members = self.members;
        let count = members.len();
        if self.share.is_none() {
            warn_about_repeated_members(&members);
        }
        let to_cancel = members.clone();
        let list = Deferred::with_canceller(move |_: &Deferred<ListResult<T>>| {
            for member in &to_cancel {
                member.cancel();
            }
        });
        if count == 0 && !self.fire_on_one_callback {
            let _ = list.callback(ListResult::All(Vec::new()));
            return list;
        }
        let progress = Rc::new(RefCell::new(Progress {
            results: (0..count).map(|_| None).collect(),
            finished: 0,
        }));
        let (on_callback, on_errback, consume, share) = (
            self.fire_on_one_callback,
            self.fire_on_one_errback,
            self.consume_errors,
            self.share,
        );
        for (index, member) in members.into_iter().enumerate() {
            let progress = progress.clone();
            let list = list.clone();
            member.push_link(Box::new(move |r: Result<T, Failure>| {
                let (r, left_in_chain) = match (r, share) {
                    (Ok(v), Some(clone)) => (Ok(clone(&v)), Next::Value(Ok(v))),
                    (Err(f), _) if !consume => (Err(f.clone()), Next::Value(Err(f))),
                    (r, _) => (r, Next::Moved),
                };
                if list.is_called() {
                    // Fired early (fire_on_one_*): later results have nowhere to go.
                    return left_in_chain;
                }
                match r {
                    Ok(value) if on_callback => {
                        let _ = list.callback(ListResult::First { index, value });
                    }
                    Err(failure) if on_errback => {
                        let _ = list.errback(FirstError { index, failure });
                    }
                    r => {
                        let done = {
                            let mut p = progress.borrow_mut();
                            p.results[index] = Some(r);
                            p.finished += 1;
                            p.finished == count
                        };
                        if done {
                            let results = std::mem::take(&mut progress.borrow_mut().results);
                            let results = results
                                .into_iter()
                                .map(|r| r.unwrap_or_else(|| Err(Failure::msg("missing result"))))
                                .collect();
                            let _ = list.callback(ListResult::All(results));
                        }
                    }
                }
                left_in_chain
            }));
        }
        list
    }
}

/// Logs a warning when one Deferred appears twice among moved-from members: its value
/// can reach the list once, and the second entry will see `ConsumedError`.
fn warn_about_repeated_members<T: 'static>(members: &[Deferred<T>]) {
    if members.len() > 64 {
        return; // quadratic check; big lists are built by code, not by hand
    }
    for (i, a) in members.iter().enumerate() {
        if let Some(j) = members[..i].iter().position(|b| b.ptr_eq(a)) {
            log::warn!(
                "DeferredList: member {i} is the same Deferred as member {j}; its value is \
                 moved into the list once and member {i} will see ConsumedError \
                 (use share_results() to give the list clones)"
            );
        }
    }
}

/// Waits for every Deferred and fires with their values in order, or fails with the
/// first failure as a [`FirstError`] (Twisted's `gatherResults`).
pub fn gather_results<T: 'static>(
    members: Vec<Deferred<T>>,
    consume_errors: bool,
) -> Deferred<Vec<T>> {
    gather(
        DeferredList::new(members)
            .fire_on_one_errback(true)
            .consume_errors(consume_errors),
    )
}

/// [`gather_results`] with [`DeferredList::share_results`]: members keep their values
/// (Twisted's `gatherResults` exactly; a Deferred may be given twice).
pub fn gather_results_shared<T: Clone + 'static>(
    members: Vec<Deferred<T>>,
    consume_errors: bool,
) -> Deferred<Vec<T>> {
    gather(
        DeferredList::new(members)
            .share_results()
            .fire_on_one_errback(true)
            .consume_errors(consume_errors),
    )
}

fn gather<T: 'static>(list: DeferredList<T>) -> Deferred<Vec<T>> {
    list.deferred().then(|r| match r {
        Ok(ListResult::All(results)) => results.into_iter().collect(),
        Ok(ListResult::First { .. }) => {
            Err(Failure::msg("gather_results: unexpected first result"))
        }
        Err(f) => Err(f),
    })
}
