//! Which logical task the running code belongs to: one value of Python's `contextvars`
//! as asyncio carries it. A [`ScopeId`] is current on the thread while code runs in
//! it; a timer, an I/O source and a [`ThreadCaller`](super::ThreadCaller) or
//! [`ThreadResult`](super::ThreadResult) capture the scope current when they are
//! scheduled, registered or created, and the reactor makes it current again while it
//! runs them. So everything a crawl starts — its timers, its connections, the DNS
//! answers it waits for, the Deferred chains they fire — runs in that crawl's scope,
//! with no parameter passed through: several crawls on one reactor tell their work
//! (and their log records) apart by it. The reactor gives the number no meaning.

use std::cell::Cell;

thread_local! {
    static CURRENT: Cell<u32> = const { Cell::new(0) };
    static NEXT: Cell<u32> = const { Cell::new(1) };
}

/// A logical scope; `ScopeId::NONE` (0) is the code outside any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct ScopeId(pub u32);

impl ScopeId {
    /// Outside any scope.
    pub const NONE: ScopeId = ScopeId(0);

    /// A scope never handed out before on this thread.
    pub fn new() -> Self {
        NEXT.with(|n| {
            let id = n.get();
            n.set(id.wrapping_add(1).max(1));
            ScopeId(id)
        })
    }

    /// The scope current on this thread.
    #[inline]
    pub fn current() -> Self {
        ScopeId(CURRENT.with(Cell::get))
    }

    /// Makes this scope current until the guard drops (which restores the previous
    /// one, also when unwinding).
    #[inline]
    pub fn enter(self) -> ScopeGuard {
        ScopeGuard(CURRENT.with(|c| c.replace(self.0)))
    }

    /// Runs `f` in this scope.
    pub fn run<R>(self, f: impl FnOnce() -> R) -> R {
        let _guard = self.enter();
        f()
    }
}

/// Restores the scope that was current before [`ScopeId::enter`].
#[derive(Debug)]
#[must_use = "the scope is left when the guard drops"]
pub struct ScopeGuard(u32);

impl Drop for ScopeGuard {
    #[inline]
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entering_nests_and_restores() {
        let (a, b) = (ScopeId::new(), ScopeId::new());
        assert_ne!(a, b);
        assert_eq!(ScopeId::current(), ScopeId::NONE);
        a.run(|| {
            assert_eq!(ScopeId::current(), a);
            b.run(|| assert_eq!(ScopeId::current(), b));
            assert_eq!(ScopeId::current(), a);
        });
        assert_eq!(ScopeId::current(), ScopeId::NONE);
        let unwound = std::panic::catch_unwind(|| a.run(|| panic!("boom")));
        assert!(unwound.is_err());
        assert_eq!(ScopeId::current(), ScopeId::NONE, "restored when unwinding");
    }
}
