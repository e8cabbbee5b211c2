//! Ctrl+C for a process running crawls: SIGINT or SIGTERM once runs a graceful stop on
//! the reactor thread; twice, a forced stop (the feeds flushed and closed) and the
//! process exits with 130, after at most 3 s; a third exits at once. What the `trawl`
//! command and [`CrawlerProcess`](super::CrawlerProcess) install.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;

use crate::reactor::ReactorHandle;

type Handlers = (Rc<dyn Fn()>, Rc<dyn Fn()>);

thread_local! {
    /// What each installation does, on the reactor thread (the closures are not `Send`:
    /// the signal thread names them by id).
    static HANDLERS: RefCell<HashMap<u64, Handlers>> = RefCell::new(HashMap::new());
    static NEXT_ID: std::cell::Cell<u64> = const { std::cell::Cell::new(1) };
}

fn run_handler(id: u64, forced: bool) {
    let handlers = HANDLERS.with(|h| h.borrow().get(&id).cloned());
    if let Some((graceful, force)) = handlers {
        if forced { force() } else { graceful() }
    }
}

/// Installed signal handling; dropping it uninstalls it (the signal thread ends and
/// SIGINT/SIGTERM get their default action back).
pub struct ShutdownSignals {
    id: u64,
    handle: Option<signal_hook::iterator::Handle>,
}

impl ShutdownSignals {
    /// Handles SIGINT and SIGTERM for `reactor`: `graceful` runs at the first, `forced`
    /// at the second (then the process exits with 130). When the handlers cannot be
    /// installed, a warning is logged and nothing else happens.
    pub fn install(
        reactor: &ReactorHandle,
        graceful: impl Fn() + 'static,
        forced: impl Fn() + 'static,
    ) -> Self {
        let id = NEXT_ID.with(|n| n.replace(n.get() + 1));
        HANDLERS.with(|h| {
            h.borrow_mut().insert(
                id,
                (
                    Rc::new(graceful) as Rc<dyn Fn()>,
                    Rc::new(forced) as Rc<dyn Fn()>,
                ),
            )
        });
        let caller = reactor.thread_caller();
        let signals = match signal_hook::iterator::Signals::new([
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGTERM,
        ]) {
            Ok(s) => s,
            Err(e) => {
                log::warn!("Ctrl+C handling unavailable: {e}");
                return Self { id, handle: None };
            }
        };
        let handle = signals.handle();
        let spawned = std::thread::Builder::new()
            .name("trawl-signals".into())
            .spawn(move || {
                let mut signals = signals;
                let mut count = 0;
                for _ in signals.forever() {
                    count += 1;
                    if count == 1 {
                        caller.call_from_thread(move |_| run_handler(id, false));
                    } else if count == 2 {
                        // The reactor thread flushes the feeds and exits; if it is
                        // stuck, the process exits after a grace period anyway.
                        eprintln!("trawl: forced stop");
                        caller.call_from_thread(move |_| {
                            run_handler(id, true);
                            std::process::exit(130);
                        });
                        std::thread::spawn(|| {
                            std::thread::sleep(std::time::Duration::from_secs(3));
                            std::process::exit(130);
                        });
                    } else {
                        std::process::exit(130);
                    }
                }
            });
        match spawned {
            Ok(_) => Self {
                id,
                handle: Some(handle),
            },
            Err(e) => {
                log::warn!("Ctrl+C handling unavailable: {e}");
                Self { id, handle: None }
            }
        }
    }
}

impl Drop for ShutdownSignals {
    fn drop(&mut self) {
        let _ = HANDLERS.try_with(|h| h.borrow_mut().remove(&self.id));
        if let Some(handle) = self.handle.take() {
            handle.close();
        }
    }
}

impl fmt::Debug for ShutdownSignals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShutdownSignals")
            .field("installed", &self.handle.is_some())
            .finish()
    }
}
