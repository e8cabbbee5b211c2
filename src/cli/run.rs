//! What every command shares: its errors, the Scrapy-style log, the common flags
//! (`-s`, `-o`, `--jobdir`, ...), and running a crawl with Ctrl+C handling and the live
//! progress line.

use std::fmt;
use std::io::{IsTerminal, Write};
use std::rc::Rc;

use super::args::{Args, UsageError};
use crate::crawl::{Crawler, CrawlerRunner, Priority, Registry, Settings, Spider};
use crate::defer::Failure;
use crate::reactor::Reactor;

/// Errors are one line (a regex error, say, spans several).
pub(super) fn one_line(msg: &str) -> String {
    msg.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Why a command failed.
#[derive(Debug)]
pub enum CliError {
    /// Bad arguments (exit code 2).
    Usage(String),
    /// The command ran and failed (exit code 1).
    Failed(String),
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Usage(m) | Self::Failed(m) => f.write_str(m),
        }
    }
}

impl From<UsageError> for CliError {
    fn from(e: UsageError) -> Self {
        Self::Usage(e.0)
    }
}

impl From<Failure> for CliError {
    fn from(f: Failure) -> Self {
        Self::Failed(f.to_string())
    }
}

/// Start-up notes from the binary (the open-files limit), logged once logging is set up.
static STARTUP_NOTES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Records a line for the log of the command about to run (the binary's start-up).
pub fn startup_note(note: String) {
    STARTUP_NOTES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(note);
}

/// Installs the Scrapy-style logger at `level`, to `logfile` or stderr.
///
/// # Errors
///
/// An unknown level or a log file that cannot be created.
pub fn init_logging(level: &str, logfile: Option<&str>) -> Result<(), CliError> {
    // No record is logged at CRITICAL: only the command's own last line remains.
    let Some(filter) = crate::crawl::logging::level_filter(level) else {
        return Err(CliError::Usage(format!(
            "unknown log level {level:?} (DEBUG, INFO, WARNING, ERROR, CRITICAL)"
        )));
    };
    // --logfile truncates (one log per run); a crawl's LOG_FILE follows LOG_FILE_APPEND.
    let output = match logfile {
        Some(path) => crate::crawl::logoutput::LogOutput::file(path, false)
            .map_err(|e| CliError::Usage(format!("--logfile {path}: {e}")))?,
        None => crate::crawl::logoutput::LogOutput::stderr(),
    };
    // A second install (tests calling `main` twice) keeps the first logger.
    crate::crawl::logging::install(filter, output);
    let notes = std::mem::take(
        &mut *STARTUP_NOTES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    for note in notes {
        log::info!("{note}");
    }
    Ok(())
}

/// Applies `-s`, `-o`/`-O` and the log level to `settings` at command-line priority.
///
/// # Errors
///
/// A malformed `-s` or feed option.
pub fn apply_common(args: &Args, settings: &mut Settings) -> Result<(), CliError> {
    // The environment's settings (TRAWL_SETTING_<NAME>) at project priority, under
    // the command line's.
    for (name, value) in crate::crawl::settings::from_environment() {
        crate::crawl::settings::warn_if_unknown(
            &name,
            &format!("TRAWL_SETTING_{name} in the environment"),
        );
        settings.set(&name, value, Priority::Project);
    }
    for s in args.all("s") {
        let Some((name, value)) = s.split_once('=') else {
            return Err(CliError::Usage(format!("-s expects NAME=VALUE, got {s:?}")));
        };
        if name.is_empty() {
            return Err(CliError::Usage(format!("-s expects NAME=VALUE, got {s:?}")));
        }
        let name = name.trim();
        crate::crawl::settings::warn_if_unknown(name, &format!("-s {s}"));
        settings.set(name, value, Priority::Cmdline);
    }
    if let Some(addr) = args.value("metrics") {
        settings.set("METRICS_ADDR", addr, Priority::Cmdline);
    }
    if let Some(token) = args.value("metrics-token") {
        settings.set("METRICS_TOKEN", token, Priority::Cmdline);
    }
    let output: Vec<String> = args.all("o").iter().map(|s| s.to_string()).collect();
    let overwrite: Vec<String> = args.all("O").iter().map(|s| s.to_string()).collect();
    if !output.is_empty() || !overwrite.is_empty() {
        let known = crate::crawl::extensions::feedexport::known_formats(settings)
            .map_err(CliError::Usage)?;
        let mut feeds =
            feed_process_params_from_cli(&output, &overwrite, &known).map_err(CliError::Usage)?;
        // FEEDS from the settings wins over a -o entry with the same URI.
        let from_settings = settings
            .get_dict("FEEDS")
            .map_err(|e| CliError::Usage(e.to_string()))?;
        for (uri, options) in from_settings {
            feeds.insert(uri, options);
        }
        settings.set("FEEDS", serde_json::Value::Object(feeds), Priority::Cmdline);
    }
    Ok(())
}

/// Scrapy's `feed_process_params_from_cli`: the `FEEDS` entries of `-o` (append) or
/// `-O` (overwrite) values, `URI:FORMAT` or a URI whose extension names the format;
/// `-:FORMAT` is the standard output (`stdout:`).
///
/// # Errors
///
/// Both `-o` and `-O`, or a value with no known format (Scrapy's messages).
pub fn feed_process_params_from_cli(
    output: &[String],
    overwrite_output: &[String],
    known_formats: &[String],
) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    let check = |format: &str| -> Result<(), String> {
        if known_formats.iter().any(|f| f == format) {
            return Ok(());
        }
        let quoted: Vec<String> = known_formats.iter().map(|f| format!("'{f}'")).collect();
        Err(format!(
            "Unrecognized output format '{format}'. Set a supported one (({})) after a colon at \
             the end of the output URI (i.e. -o/-O <URI>:<FORMAT>) or as a file extension.",
            quoted.join(", ")
        ))
    };
    let (values, overwrite) = match (output.is_empty(), overwrite_output.is_empty()) {
        (false, false) => {
            return Err("Please use only one of -o/--output and -O/--overwrite-output".into());
        }
        (true, false) => (overwrite_output, true),
        _ => (output, false),
    };
    let mut feeds = serde_json::Map::new();
    for element in values {
        let (uri, format) = match element.rsplit_once(':') {
            Some((uri, format)) if check(format).is_ok() => {
                let uri = if uri == "-" { "stdout:" } else { uri };
                (uri.to_owned(), format.to_owned())
            }
            _ => (
                element.clone(),
                crate::crawl::extensions::feedexport::path_suffix(element).to_owned(),
            ),
        };
        check(&format)?;
        let mut opts = serde_json::Map::new();
        opts.insert("format".into(), format.into());
        if overwrite {
            opts.insert("overwrite".into(), true.into());
        }
        feeds.insert(uri, opts.into());
    }
    Ok(feeds)
}

/// Whether a live progress line should be drawn.
pub(super) fn progress_wanted(args: &Args) -> bool {
    args.flag("progress") && std::io::stderr().is_terminal()
}

/// Runs a crawl on a fresh reactor with Ctrl+C handling (and the progress line if
/// asked); returns the crawler once the spider has closed.
///
/// # Errors
///
/// The crawl could not be set up or the reactor failed.
pub fn run_crawl(
    spider: Box<dyn Spider>,
    settings: Settings,
    registry: Registry,
    progress: bool,
) -> Result<Rc<Crawler>, CliError> {
    let mut crawlers = run_crawls(vec![(spider, settings, registry)], progress)?;
    match crawlers.pop() {
        Some(Ok(c)) => Ok(c),
        Some(Err(e)) => Err(e),
        None => Err(CliError::Failed("no crawl ran".into())),
    }
}

/// Runs crawls at once on one fresh reactor (a `CrawlerRunner`), with Ctrl+C handling
/// for all of them (and the progress line of the first if asked); returns each crawl's
/// crawler, or why it could not start, in order, once every one has ended.
///
/// # Errors
///
/// The reactor failed, or a crawl could not be set up.
pub fn run_crawls(
    crawls: Vec<(Box<dyn Spider>, Settings, Registry)>,
    progress: bool,
) -> Result<Vec<Result<Rc<Crawler>, CliError>>, CliError> {
    let mut reactor = Reactor::new().map_err(|e| CliError::Failed(e.to_string()))?;
    let handle = reactor.handle();
    let runner = CrawlerRunner::new(&handle, Settings::new());
    let mut started = Vec::new();
    for (spider, settings, registry) in crawls {
        let crawler = Crawler::new(
            spider,
            settings,
            handle.clock().clone(),
            Some(handle.clone()),
            registry,
        )?;
        started.push((crawler.clone(), runner.crawl_crawler(&crawler)));
    }
    let _signals = runner.install_shutdown_signals();
    let progress_loop = match started.first() {
        Some((crawler, _)) if progress => Some(start_progress(crawler)),
        _ => None,
    };
    let result = reactor.run_until(&runner.join());
    if let Some(lc) = progress_loop
        && lc.running()
    {
        let _ = lc.stop();
        crate::crawl::logoutput::PROGRESS_LINE.store(false, std::sync::atomic::Ordering::Relaxed);
        eprint!("\r\x1b[2K");
    }
    result.map_err(|e| CliError::Failed(e.to_string()))?;
    Ok(started
        .into_iter()
        .map(|(crawler, done)| match done.take_result() {
            Some(Err(f)) => Err(f.into()),
            _ => Ok(crawler),
        })
        .collect())
}

/// A crawl command's exit code from its finish reason: 0 for a crawl that finished,
/// was stopped by the user or by a `CLOSESPIDER_*` limit; 1 otherwise.
pub(super) fn exit_code(crawler: &Crawler) -> i32 {
    let reason = crawler
        .stats
        .get_value("finish_reason")
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    if reason == "finished" || reason == "shutdown" || reason.starts_with("closespider") {
        0
    } else {
        1
    }
}

fn start_progress(crawler: &Rc<Crawler>) -> crate::task::LoopingCall {
    crate::crawl::logoutput::PROGRESS_LINE.store(true, std::sync::atomic::Ordering::Relaxed);
    let weak = Rc::downgrade(crawler);
    let started = crawler.clock().seconds();
    let lc = crate::task::LoopingCall::new(crawler.clock(), move || {
        if let Some(c) = weak.upgrade() {
            let pages = c.stats.get_int("response_received_count");
            let items = c.stats.get_int("item_scraped_count");
            let secs = (c.clock().seconds() - started).max(1e-9);
            let queued = c
                .engine()
                .and_then(|e| e.slot())
                .map_or(0, |s| s.scheduler_len());
            let mut err = std::io::stderr().lock();
            let _ = write!(
                err,
                "\r\x1b[2K{pages} pages, {items} items, {:.0} pages/s, {queued} queued",
                pages as f64 / secs
            );
            let _ = err.flush();
        }
        Ok(())
    });
    if let Err(e) = lc.start(0.5, false) {
        log::warn!("progress line unavailable: {e}");
    }
    lc
}

pub(super) fn logging(args: &Args, default: &str) -> Result<(), CliError> {
    init_logging(
        args.value("loglevel").unwrap_or(default),
        args.value("logfile"),
    )
}

/// The command's log level as a setting: `-L` at command-line priority, the command's
/// default at command priority (so a spider's `custom_settings` or `-s LOG_LEVEL=`
/// overrides the default, as in Scrapy).
pub(super) fn log_level_setting(args: &Args, default: &str, settings: &mut Settings) {
    match args.value("loglevel") {
        Some(level) => settings.set("LOG_LEVEL", level, Priority::Cmdline),
        None => settings.set("LOG_LEVEL", default, Priority::Command),
    }
}
