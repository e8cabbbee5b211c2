//! The crawl's side of logging: `LOG_LEVEL` / `LOG_ENABLED` applied to a logger trawl
//! manages, the per-level record counts behind the `LogCount` extension
//! (`log_count/<LEVEL>`), and a [`CountingLogger`] that feeds them.
//!
//! trawl does not install a logger itself: an embedding application keeps its own. The
//! `trawl` command installs one and calls [`set_managed`]; from then on each crawler
//! applies its settings' `LOG_LEVEL` / `LOG_ENABLED` (so `-s LOG_LEVEL=WARNING` or a
//! spider's `custom_settings` quiet the crawl, as in Scrapy). Any logger wrapped in a
//! [`CountingLogger`] makes `log_count/*` stats work.
//!
//! # One crawl's records
//!
//! Each crawler opens a [`LogScope`] under a reactor [`ScopeId`] and runs in it; the
//! reactor carries the scope into every timer, I/O event and thread result the crawl
//! starts. A record logged in a scope is counted for that crawl only (`log_count/*`),
//! filtered by that crawl's `LOG_LEVEL` (when the logger is managed), and carries the
//! crawl's spider name ([`current_spider`]). Records outside any crawl are filtered by
//! the process level: the command's `-L`, or the last crawl's `LOG_LEVEL`.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::reactor::ScopeId;

pub use super::logoutput::level_name;

use super::settings::{Settings, SettingsError};

static MANAGED: AtomicBool = AtomicBool::new(false);

/// The level of records outside any crawl (a `LevelFilter` as a number; Trace until
/// set, so an unmanaged logger filters alone).
static BASE_LEVEL: AtomicUsize = AtomicUsize::new(5);

fn filter_from(n: usize) -> log::LevelFilter {
    match n {
        0 => log::LevelFilter::Off,
        1 => log::LevelFilter::Error,
        2 => log::LevelFilter::Warn,
        3 => log::LevelFilter::Info,
        4 => log::LevelFilter::Debug,
        _ => log::LevelFilter::Trace,
    }
}

/// How many open crawls (on any thread) have each level: the global maximum is the
/// most verbose of them and the process level.
static SCOPE_LEVELS: [AtomicUsize; 6] = [
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
];

/// Sets the level of records outside any crawl (the command's `-L`), and the global
/// maximum accordingly.
pub fn set_base_level(filter: log::LevelFilter) {
    BASE_LEVEL.store(filter as usize, Ordering::Relaxed);
    refresh_max_level();
}

/// One crawl's logging: its spider's name, its level and its record counts.
#[derive(Debug)]
pub struct LogScope {
    id: ScopeId,
    spider: String,
    level: Cell<log::LevelFilter>,
    counts: [Cell<u64>; 5],
    /// Where the crawl's records go (its `LOG_FILE`, `LOG_FORMAT`...), when the
    /// logger is managed.
    output: RefCell<Option<Rc<super::logoutput::LogOutput>>>,
}

impl LogScope {
    /// The reactor scope the crawl runs in.
    pub fn id(&self) -> ScopeId {
        self.id
    }

    /// The spider's name.
    pub fn spider(&self) -> &str {
        &self.spider
    }

    /// The crawl's level (`LOG_LEVEL`, when the logger is managed).
    pub fn level(&self) -> log::LevelFilter {
        self.level.get()
    }

    /// Where the crawl's records go, if its settings said (managed logger only).
    pub fn output(&self) -> Option<Rc<super::logoutput::LogOutput>> {
        self.output.borrow().clone()
    }

    /// Records counted for this crawl, per level, most severe first.
    pub fn counts(&self) -> [(log::Level, u64); 5] {
        LEVELS.map(|l| (l, self.counts[l as usize - 1].get()))
    }
}

/// The registration of a [`LogScope`]; dropping it ends the scope's logging (records
/// still logged in its [`ScopeId`] count as outside any crawl).
#[derive(Debug)]
pub struct LogScopeHandle {
    scope: Rc<LogScope>,
}

impl LogScopeHandle {
    /// The scope.
    pub fn scope(&self) -> &Rc<LogScope> {
        &self.scope
    }

    /// The reactor scope to run the crawl's code in.
    pub fn id(&self) -> ScopeId {
        self.scope.id
    }
}

impl Drop for LogScopeHandle {
    fn drop(&mut self) {
        let _ = SCOPES.try_with(|s| s.borrow_mut().remove(&self.scope.id.0));
        SCOPE_LEVELS[self.scope.level() as usize].fetch_sub(1, Ordering::Relaxed);
        refresh_max_level();
    }
}

impl LogScope {
    fn set_level(&self, filter: log::LevelFilter) {
        let old = self.level.replace(filter);
        SCOPE_LEVELS[old as usize].fetch_sub(1, Ordering::Relaxed);
        SCOPE_LEVELS[filter as usize].fetch_add(1, Ordering::Relaxed);
    }
}

thread_local! {
    /// The open crawls' scopes on this thread.
    static SCOPES: RefCell<HashMap<u32, Rc<LogScope>>> = RefCell::new(HashMap::new());
}

/// Opens a scope for a crawl of `spider` (a fresh [`ScopeId`]); its level starts at the
/// process level.
pub fn open_scope(spider: &str) -> LogScopeHandle {
    let scope = Rc::new(LogScope {
        id: ScopeId::new(),
        spider: spider.to_owned(),
        level: Cell::new(filter_from(BASE_LEVEL.load(Ordering::Relaxed))),
        counts: Default::default(),
        output: RefCell::new(None),
    });
    SCOPE_LEVELS[scope.level() as usize].fetch_add(1, Ordering::Relaxed);
    SCOPES.with(|s| s.borrow_mut().insert(scope.id.0, scope.clone()));
    LogScopeHandle { scope }
}

/// The crawl whose code is running, if any.
pub fn current_scope() -> Option<Rc<LogScope>> {
    let id = ScopeId::current();
    if id == ScopeId::NONE {
        return None;
    }
    SCOPES
        .try_with(|s| s.try_borrow().ok().and_then(|m| m.get(&id.0).cloned()))
        .ok()
        .flatten()
}

/// The spider of the crawl whose code is running (what a record logged now belongs
/// to), if any.
pub fn current_spider() -> Option<String> {
    current_scope().map(|s| s.spider.clone())
}

/// The level a record logged now is filtered by: the running crawl's, or the process
/// level outside any crawl.
pub fn current_level() -> log::LevelFilter {
    current_scope().map_or_else(
        || filter_from(BASE_LEVEL.load(Ordering::Relaxed)),
        |s| s.level(),
    )
}

/// Sets the global maximum to the most verbose of the process level and every open
/// crawl's level, when the logger is managed.
fn refresh_max_level() {
    if !is_managed() {
        return;
    }
    let base = BASE_LEVEL.load(Ordering::Relaxed);
    let scopes = (0..SCOPE_LEVELS.len())
        .rev()
        .find(|&i| SCOPE_LEVELS[i].load(Ordering::Relaxed) > 0)
        .unwrap_or(0);
    log::set_max_level(filter_from(base.max(scopes)));
}

/// Tells trawl that the process logger is trawl's to configure (the `trawl` command).
pub fn set_managed(managed: bool) {
    MANAGED.store(managed, Ordering::Relaxed);
}

/// Whether the process logger is trawl's to configure.
pub fn is_managed() -> bool {
    MANAGED.load(Ordering::Relaxed)
}

/// Python's level names (and `TRACE`): `CRITICAL` logs nothing, as no record is
/// critical.
pub fn level_filter(name: &str) -> Option<log::LevelFilter> {
    Some(match name.trim().to_ascii_uppercase().as_str() {
        "CRITICAL" | "FATAL" => log::LevelFilter::Off,
        "ERROR" => log::LevelFilter::Error,
        "WARNING" | "WARN" => log::LevelFilter::Warn,
        "INFO" => log::LevelFilter::Info,
        "DEBUG" => log::LevelFilter::Debug,
        "TRACE" => log::LevelFilter::Trace,
        _ => return None,
    })
}

/// A record level from a Python level name or number (`"INFO"`, `"WARNING"`, `20`,
/// `40`); `CRITICAL` (50) is logged as ERROR, the most severe level a record has here.
pub fn level_from_name(name: &str) -> Option<log::Level> {
    let name = name.trim();
    if let Ok(n) = name.parse::<u32>() {
        return Some(match n {
            0..=10 => log::Level::Debug,
            11..=20 => log::Level::Info,
            21..=30 => log::Level::Warn,
            _ => log::Level::Error,
        });
    }
    match name.to_ascii_uppercase().as_str() {
        "CRITICAL" | "FATAL" | "ERROR" => Some(log::Level::Error),
        "WARNING" | "WARN" => Some(log::Level::Warn),
        "INFO" => Some(log::Level::Info),
        "DEBUG" => Some(log::Level::Debug),
        "TRACE" => Some(log::Level::Trace),
        _ => None,
    }
}

/// The level `LOG_ENABLED` and `LOG_LEVEL` ask for.
///
/// # Errors
///
/// A `LOG_LEVEL` that is not a level name.
pub fn settings_filter(settings: &Settings) -> Result<log::LevelFilter, SettingsError> {
    if !settings.get_bool("LOG_ENABLED")? {
        return Ok(log::LevelFilter::Off);
    }
    let name = settings
        .get_str("LOG_LEVEL")?
        .unwrap_or_else(|| "DEBUG".to_owned());
    level_filter(&name).ok_or_else(|| SettingsError {
        name: "LOG_LEVEL".into(),
        reason: format!("unknown level {name:?} (DEBUG, INFO, WARNING, ERROR, CRITICAL)"),
    })
}

/// Applies `LOG_ENABLED` / `LOG_LEVEL` when the logger is managed (see [`set_managed`]).
///
/// # Errors
///
/// An unknown `LOG_LEVEL` (whether or not the logger is managed).
pub fn apply_settings(settings: &Settings) -> Result<(), SettingsError> {
    let filter = settings_filter(settings)?;
    if is_managed() {
        let output =
            super::logoutput::LogOutput::from_settings(settings, &super::logoutput::base_output())?;
        match current_scope() {
            Some(scope) => {
                scope.set_level(filter);
                *scope.output.borrow_mut() = Some(Rc::new(output));
            }
            None => {
                BASE_LEVEL.store(filter as usize, Ordering::Relaxed);
                super::logoutput::set_base_output(output);
            }
        }
        refresh_max_level();
        if settings.get_bool("LOG_STDOUT")? {
            super::logoutput::redirect_stdout().map_err(|e| SettingsError {
                name: "LOG_STDOUT".into(),
                reason: format!("cannot redirect the standard output: {e}"),
            })?;
        }
    }
    Ok(())
}

/// The levels, most severe first.
const LEVELS: [log::Level; 5] = [
    log::Level::Error,
    log::Level::Warn,
    log::Level::Info,
    log::Level::Debug,
    log::Level::Trace,
];

thread_local! {
    /// Records logged on this thread, per level (Error, Warn, Info, Debug, Trace).
    static COUNTS: [Cell<u64>; 5] = const {
        [Cell::new(0), Cell::new(0), Cell::new(0), Cell::new(0), Cell::new(0)]
    };
}

/// Counts one record that was logged (what [`CountingLogger`] calls): on this thread,
/// and for the running crawl.
pub fn count_record(level: log::Level) {
    count_in(level, current_scope().as_deref());
}

fn count_in(level: log::Level, scope: Option<&LogScope>) {
    let i = level as usize - 1;
    let _ = COUNTS.try_with(|c| c[i].set(c[i].get() + 1));
    if let Some(s) = scope {
        s.counts[i].set(s.counts[i].get() + 1);
    }
}

/// Records counted so far, per level, most severe first: the running crawl's, or
/// every record on this thread outside any crawl.
pub fn record_counts() -> [(log::Level, u64); 5] {
    if let Some(scope) = current_scope() {
        return scope.counts();
    }
    COUNTS.with(|c| LEVELS.map(|l| (l, c[l as usize - 1].get())))
}

/// A logger that counts the records it logs (those that pass the global level and the
/// inner logger's filter), for the `LogCount` extension; it forwards everything.
#[derive(Debug)]
pub struct CountingLogger<L> {
    inner: L,
}

impl<L: log::Log> CountingLogger<L> {
    /// Wraps `inner`.
    pub fn new(inner: L) -> Self {
        Self { inner }
    }
}

impl<L: log::Log> log::Log for CountingLogger<L> {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= current_level() && self.inner.enabled(metadata)
    }

    fn log(&self, record: &log::Record<'_>) {
        let scope = current_scope();
        let level = scope.as_ref().map_or_else(
            || filter_from(BASE_LEVEL.load(Ordering::Relaxed)),
            |s| s.level(),
        );
        if record.level() <= log::max_level()
            && record.level() <= level
            && self.inner.enabled(record.metadata())
        {
            count_in(record.level(), scope.as_deref());
            self.inner.log(record);
        }
    }

    fn flush(&self) {
        self.inner.flush();
    }
}

/// The logger trawl manages: each record written with its crawl's [`super::logoutput::LogOutput`].
#[derive(Debug, Default)]
pub struct TrawlLogger;

impl log::Log for TrawlLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        // Dependencies stay quiet unless they warn.
        !metadata.target().starts_with("rustls") || metadata.level() <= log::Level::Warn
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        match current_scope() {
            Some(scope) => {
                let output = scope.output();
                match output {
                    Some(o) => o.write(record, Some(scope.spider())),
                    None => super::logoutput::base_output().write(record, Some(scope.spider())),
                }
            }
            None => super::logoutput::base_output().write(record, None),
        }
    }

    fn flush(&self) {
        super::logoutput::base_output().flush();
    }
}

/// Installs trawl's logger (counting, per-crawl levels and outputs) as the process
/// logger and marks it managed, with `level` and `output` for records outside any
/// crawl. Returns `false` when a logger was already installed (it is kept).
pub fn install(level: log::LevelFilter, output: super::logoutput::LogOutput) -> bool {
    let installed = log::set_boxed_logger(Box::new(CountingLogger::new(TrawlLogger))).is_ok();
    if installed {
        set_managed(true);
    }
    super::logoutput::set_base_output(output);
    set_base_level(level);
    if !is_managed() {
        log::set_max_level(level);
    }
    installed
}
