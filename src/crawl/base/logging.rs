//! The crawl's side of logging: `LOG_LEVEL` / `LOG_ENABLED` applied to a logger trawl
//! manages, the per-level record counts behind the `LogCount` extension
//! (`log_count/<LEVEL>`), and a [`CountingLogger`] that feeds them.
//!
//! trawl does not install a logger itself: an embedding application keeps its own. The
//! `trawl` command installs one and calls [`set_managed`]; from then on each crawler
//! applies its settings' `LOG_LEVEL` / `LOG_ENABLED` (so `-s LOG_LEVEL=WARNING` or a
//! spider's `custom_settings` quiet the crawl, as in Scrapy). Any logger wrapped in a
//! [`CountingLogger`] makes `log_count/*` stats work.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

use super::settings::{Settings, SettingsError};

static MANAGED: AtomicBool = AtomicBool::new(false);

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
        log::set_max_level(filter);
    }
    Ok(())
}

thread_local! {
    /// Records logged on this thread, per level (Error, Warn, Info, Debug, Trace).
    static COUNTS: [Cell<u64>; 5] = const {
        [Cell::new(0), Cell::new(0), Cell::new(0), Cell::new(0), Cell::new(0)]
    };
}

/// The Python name of a level, as in `log_count/<LEVEL>`.
pub fn level_name(level: log::Level) -> &'static str {
    match level {
        log::Level::Error => "ERROR",
        log::Level::Warn => "WARNING",
        log::Level::Info => "INFO",
        log::Level::Debug => "DEBUG",
        log::Level::Trace => "TRACE",
    }
}

/// Counts one record that was logged (what [`CountingLogger`] calls).
pub fn count_record(level: log::Level) {
    COUNTS.with(|c| {
        let cell = &c[level as usize - 1];
        cell.set(cell.get() + 1);
    });
}

/// Records counted so far on this thread, per level, most severe first.
pub fn record_counts() -> [(log::Level, u64); 5] {
    COUNTS.with(|c| {
        [
            log::Level::Error,
            log::Level::Warn,
            log::Level::Info,
            log::Level::Debug,
            log::Level::Trace,
        ]
        .map(|l| (l, c[l as usize - 1].get()))
    })
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
        self.inner.enabled(metadata)
    }

    fn log(&self, record: &log::Record<'_>) {
        if record.level() <= log::max_level() && self.inner.enabled(record.metadata()) {
            count_record(record.level());
            self.inner.log(record);
        }
    }

    fn flush(&self) {
        self.inner.flush();
    }
}
