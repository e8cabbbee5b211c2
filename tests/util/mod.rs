//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod crawl;
pub mod live;
pub mod net;

use std::cell::RefCell;
use std::sync::Once;

thread_local! {
    static CAPTURED: RefCell<Option<Vec<(log::Level, String)>>> = const { RefCell::new(None) };
}

struct CaptureLogger;

impl log::Log for CaptureLogger {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        CAPTURED.with(|c| {
            if let Some(v) = c.borrow_mut().as_mut() {
                v.push((record.level(), record.args().to_string()));
            }
        });
    }

    fn flush(&self) {}
}

static INIT: Once = Once::new();

/// Runs `f` and returns the log records it emitted on this thread.
pub fn capture_logs<R>(f: impl FnOnce() -> R) -> (R, Vec<(log::Level, String)>) {
    INIT.call_once(|| {
        let _ = log::set_logger(&CaptureLogger);
        log::set_max_level(log::LevelFilter::Trace);
    });
    CAPTURED.with(|c| *c.borrow_mut() = Some(Vec::new()));
    let r = f();
    let logs = CAPTURED.with(|c| c.borrow_mut().take()).unwrap_or_default();
    (r, logs)
}

/// A shared, appendable log of events for ordering assertions.
#[derive(Clone, Default)]
pub struct Events(std::rc::Rc<RefCell<Vec<String>>>);

impl Events {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&self, s: impl Into<String>) {
        self.0.borrow_mut().push(s.into());
    }

    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.borrow_mut())
    }

    pub fn get(&self) -> Vec<String> {
        self.0.borrow().clone()
    }
}
