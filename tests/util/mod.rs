//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod crawl;
pub mod journal;
pub mod live;
pub mod media;
pub mod net;
pub mod process;
pub mod redis;

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

/// The Python interpreter of the test venv that can `import` what `import` names
/// (`scripts/test.sh` makes `target/venv-redis` from `python/requirements.txt`;
/// `TRAWL_PYTHON` overrides it). Panics with the fix when there is none.
pub fn python(import: &str) -> std::path::PathBuf {
    let candidates = [
        std::env::var("TRAWL_PYTHON")
            .ok()
            .map(std::path::PathBuf::from),
        Some(
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("target/venv-redis/bin/python"),
        ),
    ];
    for p in candidates.into_iter().flatten() {
        let ok = std::process::Command::new(&p)
            .args(["-c", &format!("import {import}")])
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return p;
        }
    }
    panic!(
        "no Python that can import {import}: run scripts/test.sh (it creates \
         target/venv-redis) or set TRAWL_PYTHON"
    );
}

/// Every file under `dir`, recursively (none if it does not exist).
pub fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                found.push(p);
            }
        }
    }
    found
}
