//! [`EngineSlot`]: the engine's per-spider runtime state (Scrapy's `_Slot`), with its
//! two-phase close.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;

use crate::crawl::core::scheduler::Scheduler;
use crate::crawl::http::request::Request;
use crate::defer::Deferred;
use crate::task::{CallLaterOnce, LoopingCall};

/// The engine's per-spider runtime state (Scrapy's `_Slot`).
pub struct EngineSlot {
    pub(super) closing: RefCell<Option<Deferred<()>>>,
    pub(super) inprogress: RefCell<crate::util::FxHashSet<u64>>,
    pub(super) close_if_idle: bool,
    pub(super) nextcall: CallLaterOnce,
    /// Taken out while the engine calls it, so a re-entrant call finds it busy
    /// instead of a held borrow.
    pub(super) scheduler: RefCell<Option<Box<dyn Scheduler>>>,
    /// Requests `crawl`ed while the scheduler was busy (a re-entrant call from the
    /// scheduler or its dupefilter): handed over when the outer call returns.
    pub(super) backlog: RefCell<VecDeque<Request>>,
    /// Enqueue answers still to come (`Enqueued::Later`): the spider is not idle.
    pub(super) enqueue_pending: Cell<usize>,
    /// Whether the scheduler wants `request_finished` (a JOBDIR, a shared queue).
    pub(super) tracks_requests: Cell<bool>,
    pub(super) heartbeat: LoopingCall,
}

impl EngineSlot {
    pub(super) fn add_request(&self, id: u64) {
        self.inprogress.borrow_mut().insert(id);
    }

    pub(super) fn remove_request(&self, id: u64) {
        self.inprogress.borrow_mut().remove(&id);
        self.maybe_fire_closing();
    }

    /// Phase one: mark closing; phase two: check at once (it may already be empty).
    pub(super) fn close(&self) -> Deferred<()> {
        let d = Deferred::new();
        *self.closing.borrow_mut() = Some(d.clone());
        self.maybe_fire_closing();
        d
    }

    pub(super) fn maybe_fire_closing(&self) {
        let closing = self.closing.borrow().clone();
        let Some(closing) = closing else { return };
        if !self.inprogress.borrow().is_empty() || closing.is_called() {
            return;
        }
        self.nextcall.cancel();
        if self.heartbeat.running() {
            let _ = self.heartbeat.stop();
        }
        let _ = closing.callback(());
    }

    /// Requests taken from the scheduler and not finished.
    pub fn inprogress(&self) -> usize {
        self.inprogress.borrow().len()
    }

    /// Whether the slot is closing.
    pub fn is_closing(&self) -> bool {
        self.closing.borrow().is_some()
    }

    /// Whether the scheduler reports pending requests (a busy scheduler, or requests
    /// waiting in the backlog, count as pending).
    pub fn scheduler_has_pending(&self) -> bool {
        if !self.backlog.borrow().is_empty() || self.enqueue_pending.get() > 0 {
            return true;
        }
        match self.scheduler.try_borrow() {
            Ok(s) => s.as_ref().is_none_or(|s| s.has_pending_requests()),
            Err(_) => true,
        }
    }

    /// Requests waiting in the scheduler.
    pub fn scheduler_len(&self) -> usize {
        self.backlog.borrow().len()
            + self
                .scheduler
                .try_borrow()
                .ok()
                .and_then(|s| s.as_ref().map(|s| s.len()))
                .unwrap_or(0)
    }

    /// Runs `f` on the scheduler with no borrow held; `None` when it is busy (this is
    /// a re-entrant call) or gone.
    pub(super) fn with_scheduler<R>(&self, f: impl FnOnce(&mut dyn Scheduler) -> R) -> Option<R> {
        let taken = self.scheduler.try_borrow_mut().ok()?.take()?;
        /// Puts the scheduler back even if `f` panics.
        struct Restore<'a>(
            &'a RefCell<Option<Box<dyn Scheduler>>>,
            Option<Box<dyn Scheduler>>,
        );
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                if let (Ok(mut slot), Some(s)) = (self.0.try_borrow_mut(), self.1.take()) {
                    *slot = Some(s);
                }
            }
        }
        let mut guard = Restore(&self.scheduler, Some(taken));
        let scheduler = guard.1.as_deref_mut()?;
        let r = f(scheduler);
        drop(guard);
        Some(r)
    }

    /// The scheduling loop's coalescing switch.
    pub fn nextcall(&self) -> &CallLaterOnce {
        &self.nextcall
    }
}

impl fmt::Debug for EngineSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineSlot")
            .field("inprogress", &self.inprogress())
            .field("closing", &self.is_closing())
            .field("close_if_idle", &self.close_if_idle)
            .finish()
    }
}
