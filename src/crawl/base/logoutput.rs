//! Where and how the logger trawl manages writes a record (the `trawl` command's, or
//! one an application installs with `logging::install`): Scrapy's `LOG_FORMAT`,
//! `LOG_DATEFORMAT`, `LOG_SHORT_NAMES`, `LOG_FILE`, `LOG_FILE_APPEND`, `LOG_ENCODING`
//! and `LOG_STDOUT`. (The logger itself, `TrawlLogger`, is in `logging.rs`.) Each crawl's records go out with its own settings (its scope's
//! [`LogOutput`]); records outside any crawl with the process's (the command's `-L` and
//! `--logfile`). Two crawls naming the same `LOG_FILE` share one open file.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};
use std::time::Instant;

use super::settings::{Settings, SettingsError};
use crate::crawl::util::pylogfmt::{LogFields, LogFormat};

/// The Python name of a level, as in `log_count/<LEVEL>` and `%(levelname)s`.
pub fn level_name(level: log::Level) -> &'static str {
    match level {
        log::Level::Error => "ERROR",
        log::Level::Warn => "WARNING",
        log::Level::Info => "INFO",
        log::Level::Debug => "DEBUG",
        log::Level::Trace => "TRACE",
    }
}

/// Set while a live progress line is on the terminal: each record clears it first.
pub static PROGRESS_LINE: AtomicBool = AtomicBool::new(false);

/// Where lines go.
#[derive(Clone)]
enum Sink {
    Stderr,
    File(Arc<Mutex<File>>),
}

/// How and where one crawl's (or the process's) records are written.
#[derive(Clone)]
pub struct LogOutput {
    format: LogFormat,
    short_names: bool,
    sink: Sink,
}

impl std::fmt::Debug for LogOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogOutput")
            .field("short_names", &self.short_names)
            .field("file", &matches!(self.sink, Sink::File(_)))
            .finish()
    }
}

/// Open log files by path, shared by the crawls that name them.
fn open_files() -> &'static Mutex<HashMap<PathBuf, Weak<Mutex<File>>>> {
    static FILES: OnceLock<Mutex<HashMap<PathBuf, Weak<Mutex<File>>>>> = OnceLock::new();
    FILES.get_or_init(|| Mutex::new(HashMap::new()))
}

fn open_file(path: &str, append: bool) -> std::io::Result<Arc<Mutex<File>>> {
    let key = PathBuf::from(path);
    let mut files = open_files()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(open) = files.get(&key).and_then(Weak::upgrade) {
        return Ok(open);
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(&key)?;
    let shared = Arc::new(Mutex::new(file));
    files.insert(key, Arc::downgrade(&shared));
    Ok(shared)
}

impl LogOutput {
    /// Scrapy's default format to stderr.
    pub fn stderr() -> Self {
        Self {
            format: default_format(),
            short_names: false,
            sink: Sink::Stderr,
        }
    }

    /// Scrapy's default format to `path` (appended to, or truncated first).
    ///
    /// # Errors
    ///
    /// The file cannot be opened.
    pub fn file(path: &str, append: bool) -> std::io::Result<Self> {
        Ok(Self {
            format: default_format(),
            short_names: false,
            sink: Sink::File(open_file(path, append)?),
        })
    }

    /// The output a crawl's `settings` ask for; without a `LOG_FILE`, it writes where
    /// `inherit` (the process's output) does.
    ///
    /// # Errors
    ///
    /// A format Python would refuse, an encoding other than UTF-8, a log file that
    /// cannot be opened.
    pub fn from_settings(settings: &Settings, inherit: &LogOutput) -> Result<Self, SettingsError> {
        let bad = |name: &str, reason: String| SettingsError {
            name: name.into(),
            reason,
        };
        let fmt = settings
            .get_str("LOG_FORMAT")?
            .unwrap_or_else(|| crate::crawl::util::pylogfmt::DEFAULT_FORMAT.to_owned());
        let datefmt = settings.get_str("LOG_DATEFORMAT")?;
        let format =
            LogFormat::new(&fmt, datefmt.as_deref()).map_err(|e| bad("LOG_FORMAT", e.0))?;
        let encoding = settings
            .get_str("LOG_ENCODING")?
            .unwrap_or_else(|| "utf-8".to_owned());
        if !matches!(
            encoding.to_ascii_lowercase().replace('_', "-").as_str(),
            "utf-8" | "utf8"
        ) {
            return Err(bad(
                "LOG_ENCODING",
                format!("{encoding:?}: trawl writes its log in UTF-8 only"),
            ));
        }
        let sink = match settings.get_str("LOG_FILE")? {
            Some(path) if !path.is_empty() => {
                let append = settings.get_bool("LOG_FILE_APPEND")?;
                Sink::File(
                    open_file(&path, append)
                        .map_err(|e| bad("LOG_FILE", format!("{path}: {e}")))?,
                )
            }
            _ => inherit.sink.clone(),
        };
        Ok(Self {
            format,
            short_names: settings.get_bool("LOG_SHORT_NAMES")?,
            sink,
        })
    }

    /// Writes one record.
    /// Writes one record (of the crawl of `spider`, if any).
    pub fn write(&self, record: &log::Record<'_>, spider: Option<&str>) {
        let target = record.target().replace("::", ".");
        let name = if self.short_names {
            crate::crawl::util::pylogfmt::short_name(&target, "trawl")
        } else {
            target.as_str()
        };
        let message = record.args().to_string();
        let thread = std::thread::current();
        let fields = LogFields {
            name,
            levelname: level_name(record.level()),
            levelno: match record.level() {
                log::Level::Error => 40,
                log::Level::Warn => 30,
                log::Level::Info => 20,
                log::Level::Debug => 10,
                log::Level::Trace => 5,
            },
            message: &message,
            created: wall_now(),
            relative_created: started().elapsed().as_secs_f64() * 1000.0,
            pathname: record.file().unwrap_or(""),
            lineno: record.line().unwrap_or(0),
            func_name: None,
            process: std::process::id(),
            process_name: "MainProcess",
            thread: thread_number(),
            thread_name: thread.name().unwrap_or("MainThread"),
            spider,
        };
        let mut line = String::with_capacity(64 + message.len());
        if PROGRESS_LINE.load(Ordering::Relaxed) && matches!(self.sink, Sink::Stderr) {
            // Clear the progress line; its next tick redraws it below the log.
            line.push_str("\r\x1b[2K");
        }
        self.format.format_into(&fields, &mut line);
        line.push('\n');
        match &self.sink {
            Sink::Stderr => {
                let _ = std::io::stderr().lock().write_all(line.as_bytes());
            }
            Sink::File(f) => {
                let mut f = f.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                let _ = f.write_all(line.as_bytes());
            }
        }
    }

    /// Flushes the file (stderr is unbuffered).
    pub fn flush(&self) {
        match &self.sink {
            Sink::Stderr => {
                let _ = std::io::stderr().flush();
            }
            Sink::File(f) => {
                let _ = f
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .flush();
            }
        }
    }
}

fn default_format() -> LogFormat {
    // The defaults are valid formats.
    LogFormat::new(
        crate::crawl::util::pylogfmt::DEFAULT_FORMAT,
        Some(crate::crawl::util::pylogfmt::DEFAULT_DATEFORMAT),
    )
    .unwrap_or_else(|_| unreachable!("Scrapy's default LOG_FORMAT parses"))
}

fn wall_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn started() -> Instant {
    static STARTED: OnceLock<Instant> = OnceLock::new();
    *STARTED.get_or_init(Instant::now)
}

/// A number per thread (Python's `%(thread)d`), in the order threads first log.
fn thread_number() -> u64 {
    use std::sync::atomic::AtomicU64;
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static ID: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    ID.with(|id| *id)
}

/// The process's output: records outside any crawl, and a crawl's without a
/// `LOG_FILE` of its own inherit its sink.
fn base() -> &'static RwLock<Arc<LogOutput>> {
    static BASE: OnceLock<RwLock<Arc<LogOutput>>> = OnceLock::new();
    BASE.get_or_init(|| RwLock::new(Arc::new(LogOutput::stderr())))
}

/// The process's output now.
pub fn base_output() -> Arc<LogOutput> {
    base()
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

/// Sets the process's output (the command's `--logfile`).
pub fn set_base_output(output: LogOutput) {
    *base()
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(output);
}

/// `LOG_STDOUT`: from now on, what the process prints to its standard output is logged
/// at INFO under the name `stdout`, a line per record (Scrapy's `StreamLogger`). Once
/// per process; later calls do nothing.
///
/// # Errors
///
/// The pipe or the thread could not be made.
pub fn redirect_stdout() -> std::io::Result<()> {
    static DONE: AtomicBool = AtomicBool::new(false);
    if DONE.swap(true, Ordering::SeqCst) {
        return Ok(());
    }
    let (reader, writer) = std::io::pipe()?;
    let devnull = File::options().write(true).open("/dev/null")?;
    let _ = std::io::stdout().flush();
    nix::unistd::dup2_stdout(&writer).map_err(std::io::Error::from)?;
    drop(writer);
    let thread = std::thread::Builder::new()
        .name("trawl-stdout".into())
        .spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(reader).lines() {
                match line {
                    Ok(l) => log::info!(target: "stdout", "{l}"),
                    Err(_) => break,
                }
            }
        })?;
    *STDOUT_THREAD
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((thread, devnull));
    Ok(())
}

/// The `LOG_STDOUT` reader and what ends its input.
static STDOUT_THREAD: Mutex<Option<(std::thread::JoinHandle<()>, File)>> = Mutex::new(None);

/// Ends a `LOG_STDOUT` redirection before the process exits: what was printed is
/// logged first (the standard output then points at `/dev/null`).
pub fn end_stdout_redirect() {
    let taken = STDOUT_THREAD
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    let Some((thread, devnull)) = taken else {
        return;
    };
    let _ = std::io::stdout().flush();
    // The pipe's last writer goes: the reader sees its end after the last line.
    if nix::unistd::dup2_stdout(&devnull).is_ok() {
        let _ = thread.join();
    }
}
