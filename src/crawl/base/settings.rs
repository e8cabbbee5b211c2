//! Settings with Scrapy's names, defaults and priorities.
//!
//! Values are JSON values (`bool`, numbers, strings, lists, maps). Each setting
//! remembers the priority it was set with, and a lower-priority write never overrides a
//! higher one: `default` < `project` < `spider` (a spider's `custom_settings`) <
//! `cmdline` (`-s NAME=VALUE`). Typed getters accept what Scrapy accepts (`"1"`,
//! `"True"`, `"false"`, numbers as strings, comma-separated lists, JSON in strings) and
//! return a [`SettingsError`] naming the setting for anything else.
//!
//! Component order maps (`DOWNLOADER_MIDDLEWARES`, `SPIDER_MIDDLEWARES`,
//! `ITEM_PIPELINES`, `EXTENSIONS`) merge the `*_BASE` map with the user map; a `null`
//! (Python's `None`) entry removes a base component. See [`Settings::component_list`].

use std::collections::HashMap;
use std::fmt;

use serde_json::{Map, Value, json};

/// Where a setting's value came from. Higher wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    /// Built-in defaults.
    Default = 0,
    /// Command-style defaults (a subcommand's own defaults).
    Command = 10,
    /// The project's settings.
    Project = 20,
    /// A spider's `custom_settings`.
    Spider = 30,
    /// `-s NAME=VALUE` on the command line.
    Cmdline = 40,
}

impl Priority {
    /// Parses `"default" | "command" | "project" | "spider" | "cmdline"`.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "default" => Self::Default,
            "command" => Self::Command,
            "project" => Self::Project,
            "spider" => Self::Spider,
            "cmdline" => Self::Cmdline,
            _ => return None,
        })
    }
}

/// A setting with a value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsError {
    /// The setting's name.
    pub name: String,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid value for setting {}: {}",
            self.name, self.reason
        )
    }
}

impl std::error::Error for SettingsError {}

/// The settings of one crawl.
#[derive(Clone, Default)]
pub struct Settings {
    values: HashMap<String, (Value, Priority)>,
    frozen: bool,
}

/// The defaults, alphabetical. Settings that differ from Scrapy's are marked and listed
/// with their reasons in DESIGN.md.
fn defaults() -> Vec<(&'static str, Value)> {
    vec![
        ("AUTOTHROTTLE_DEBUG", json!(false)),
        ("AUTOTHROTTLE_ENABLED", json!(false)),
        ("AUTOTHROTTLE_MAX_DELAY", json!(60.0)),
        ("AUTOTHROTTLE_START_DELAY", json!(5.0)),
        ("AUTOTHROTTLE_TARGET_CONCURRENCY", json!(1.0)),
        ("AWS_ACCESS_KEY_ID", Value::Null),
        ("AWS_ENDPOINT_URL", Value::Null),
        ("AWS_REGION_NAME", Value::Null),
        ("AWS_SECRET_ACCESS_KEY", Value::Null),
        ("AWS_SESSION_TOKEN", Value::Null),
        ("BOT_NAME", json!("trawlbot")),
        ("CLOSESPIDER_ERRORCOUNT", json!(0)),
        ("CLOSESPIDER_ITEMCOUNT", json!(0)),
        ("CLOSESPIDER_PAGECOUNT", json!(0)),
        ("CLOSESPIDER_PAGECOUNT_NO_ITEM", json!(0)),
        ("CLOSESPIDER_TIMEOUT", json!(0)),
        ("CLOSESPIDER_TIMEOUT_NO_ITEM", json!(0)),
        ("COMPRESSION_ENABLED", json!(true)),
        ("CONCURRENT_ITEMS", json!(100)),
        ("CONCURRENT_REQUESTS", json!(16)),
        ("CONCURRENT_REQUESTS_PER_DOMAIN", json!(8)),
        ("CONCURRENT_REQUESTS_PER_IP", json!(0)),
        ("COOKIES_DEBUG", json!(false)),
        ("COOKIES_ENABLED", json!(true)),
        (
            "DEFAULT_REQUEST_HEADERS",
            // trawl: no `Accept-Language: en` (a bot fingerprint that draws 403s).
            json!({"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}),
        ),
        ("DEPTH_LIMIT", json!(0)),
        ("DEPTH_PRIORITY", json!(0)),
        ("DEPTH_STATS_VERBOSE", json!(false)),
        ("DNSCACHE_ENABLED", json!(true)),
        ("DNSCACHE_SIZE", json!(10000)),
        ("DNSCACHE_NEGATIVE_TTL", json!(60)),
        // trawl: host → address overrides (curl's --resolve), looked up like DNS answers.
        ("DNS_RESOLVE", json!(null)),
        ("DNS_TIMEOUT", json!(60)),
        ("DOWNLOAD_BIND_ADDRESS", json!(null)),
        ("DOWNLOAD_DELAY", json!(0)),
        ("DOWNLOAD_DELAY_JITTER", json!(0.5)),
        ("DOWNLOAD_FAIL_ON_DATALOSS", json!(true)),
        ("DOWNLOAD_HANDLERS", json!({})),
        (
            "DOWNLOAD_HANDLERS_BASE",
            json!({"data": "trawl.DataURIDownloadHandler", "file": "trawl.FileDownloadHandler",
                   "http": "trawl.HTTPDownloadHandler", "https": "trawl.HTTPDownloadHandler"}),
        ),
        // trawl: idle keep-alive connections kept in all (0: no limit, as Twisted).
        ("DOWNLOAD_MAX_IDLE_CONNECTIONS", json!(1024)),
        ("DOWNLOAD_MAXSIZE", json!(1024 * 1024 * 1024)),
        ("DOWNLOAD_SLOTS", json!({})),
        // trawl: 60 s, not 180 s (slow hosts must not hold every slot for 3 minutes).
        ("DOWNLOAD_TIMEOUT", json!(60)),
        // trawl: a PEM file of CA certificates trusted besides the Mozilla roots.
        ("DOWNLOAD_TLS_CA_FILE", json!(null)),
        ("DOWNLOAD_TLS_MAX_VERSION", json!(null)),
        ("DOWNLOAD_TLS_MIN_VERSION", json!(null)),
        ("DOWNLOAD_VERIFY_CERTIFICATES", json!(true)),
        ("DOWNLOAD_WARNSIZE", json!(32 * 1024 * 1024)),
        ("DOWNLOADER_CLIENT_TLS_METHOD", json!("TLS")),
        ("DOWNLOADER_CLIENT_TLS_CIPHERS", json!("DEFAULT")),
        ("DOWNLOADER_MIDDLEWARES", json!({})),
        (
            "DOWNLOADER_MIDDLEWARES_BASE",
            json!({
                "trawl.OffsiteMiddleware": 50,
                "trawl.RobotsTxtMiddleware": 100,
                "trawl.HttpAuthMiddleware": 300,
                "trawl.DownloadTimeoutMiddleware": 350,
                "trawl.DefaultHeadersMiddleware": 400,
                "trawl.UserAgentMiddleware": 500,
                "trawl.RetryMiddleware": 550,
                "trawl.MetaRefreshMiddleware": 580,
                "trawl.HttpCompressionMiddleware": 590,
                "trawl.RedirectMiddleware": 600,
                "trawl.CookiesMiddleware": 700,
                "trawl.HttpProxyMiddleware": 750,
                "trawl.DownloaderStats": 850,
                "trawl.HttpCacheMiddleware": 900
            }),
        ),
        ("DOWNLOADER_STATS", json!(true)),
        ("BLOOMFILTER_CAPACITY", json!(10_000_000)),
        ("BLOOMFILTER_ERROR_RATE", json!(0.0001)),
        ("DUPEFILTER_CLASS", json!("trawl.RFPDupeFilter")),
        ("DUPEFILTER_DEBUG", json!(false)),
        ("ENGINE_MONITOR_INTERVAL", json!(0)),
        ("EXTENSIONS", json!({})),
        (
            "EXTENSIONS_BASE",
            json!({
                "trawl.CoreStats": 0,
                "trawl.LogStats": 0,
                "trawl.CloseSpider": 0,
                "trawl.FeedExporter": 0,
                "trawl.EngineMonitor": 0,
                "trawl.AutoThrottle": 0,
                "trawl.LogCount": 0,
                "trawl.MemoryUsage": 0,
                "trawl.Metrics": 0
            }),
        ),
        ("FEED_EXPORT_BATCH_ITEM_COUNT", json!(0)),
        ("FEED_EXPORT_ENCODING", json!("utf-8")),
        ("FEED_EXPORT_FIELDS", Value::Null),
        ("FEED_EXPORT_INDENT", json!(0)),
        ("FEED_EXPORTERS", json!({})),
        (
            "FEED_EXPORTERS_BASE",
            json!({
                "json": "trawl.JsonItemExporter",
                "jsonlines": "trawl.JsonLinesItemExporter",
                "jsonl": "trawl.JsonLinesItemExporter",
                "jl": "trawl.JsonLinesItemExporter",
                "csv": "trawl.CsvItemExporter",
                "xml": "trawl.XmlItemExporter"
            }),
        ),
        ("FEED_FSYNC", json!("never")),
        ("FEED_STORAGES", json!({})),
        (
            "FEED_STORAGES_BASE",
            json!({
                "": "trawl.FileFeedStorage",
                "file": "trawl.FileFeedStorage",
                "ftp": "trawl.FTPFeedStorage",
                "s3": "trawl.S3FeedStorage",
                "stdout": "trawl.StdoutFeedStorage"
            }),
        ),
        ("FEED_STORAGE_FTP_ACTIVE", json!(false)),
        ("FEED_STORAGE_RETRY_BACKOFF", json!(1.0)),
        ("FEED_STORAGE_RETRY_TIMES", json!(3)),
        ("FEED_STORAGE_S3_ACL", json!("")),
        ("FEED_TEMPDIR", Value::Null),
        ("FEED_STORE_EMPTY", json!(true)),
        ("FEED_URI_PARAMS", Value::Null),
        ("FEEDS", json!({})),
        ("FILES_EXPIRES", json!(90)),
        ("FILES_RESULT_FIELD", json!("files")),
        ("FILES_STORE", Value::Null),
        ("FILES_STORE_S3_ACL", json!("private")),
        ("FILES_URLS_FIELD", json!("file_urls")),
        ("FTP_PASSWORD", json!("guest")),
        ("FTP_USER", json!("anonymous")),
        ("HTTPCACHE_ALWAYS_STORE", json!(false)),
        ("HTTPCACHE_DIR", json!("httpcache")),
        ("HTTPCACHE_ENABLED", json!(false)),
        ("HTTPCACHE_EXPIRATION_SECS", json!(0)),
        ("HTTPCACHE_GZIP", json!(false)),
        ("HTTPCACHE_IGNORE_HTTP_CODES", json!([])),
        ("HTTPCACHE_IGNORE_MISSING", json!(false)),
        ("HTTPCACHE_IGNORE_RESPONSE_CACHE_CONTROLS", json!([])),
        ("HTTPCACHE_IGNORE_SCHEMES", json!(["file"])),
        ("HTTPCACHE_POLICY", json!("trawl.DummyPolicy")),
        ("HTTPCACHE_STORAGE", json!("trawl.FilesystemCacheStorage")),
        ("HTTPERROR_ALLOW_ALL", json!(false)),
        ("HTTPERROR_ALLOWED_CODES", json!([])),
        ("HTTPPROXY_AUTH_ENCODING", json!("latin-1")),
        ("HTTPPROXY_ENABLED", json!(true)),
        ("HTTPAUTH_DOMAIN", Value::Null),
        ("HTTPAUTH_PASS", Value::Null),
        ("HTTPAUTH_USER", Value::Null),
        ("HTTP_AUTH_DOMAIN", Value::Null),
        ("HTTP_PASS", Value::Null),
        ("HTTP_USER", Value::Null),
        ("IMAGES_EXPIRES", json!(90)),
        ("IMAGES_MIN_HEIGHT", json!(0)),
        ("IMAGES_MIN_WIDTH", json!(0)),
        ("IMAGES_RESULT_FIELD", json!("images")),
        ("IMAGES_STORE", Value::Null),
        ("IMAGES_STORE_S3_ACL", json!("private")),
        ("IMAGES_THUMBS", json!({})),
        ("IMAGES_URLS_FIELD", json!("image_urls")),
        ("ITEM_PIPELINES", json!({})),
        ("ITEM_PIPELINES_BASE", json!({})),
        ("JOBDIR", Value::Null),
        // trawl: group commit every second (see DESIGN.md, JOBDIR).
        ("JOBDIR_FSYNC", json!(1.0)),
        ("JOBDIR_SALVAGE", json!(false)),
        ("LOG_DATEFORMAT", json!("%Y-%m-%d %H:%M:%S")),
        ("LOG_ENABLED", json!(true)),
        ("LOG_ENCODING", json!("utf-8")),
        ("LOG_FILE", json!(null)),
        ("LOG_FILE_APPEND", json!(true)),
        (
            "LOG_FORMAT",
            json!("%(asctime)s [%(name)s] %(levelname)s: %(message)s"),
        ),
        ("LOG_FORMATTER", json!("trawl.LogFormatter")),
        ("LOG_LEVEL", json!("DEBUG")),
        ("LOG_SHORT_NAMES", json!(false)),
        ("LOG_STDOUT", json!(false)),
        ("DEFAULT_DROPITEM_LOG_LEVEL", json!("WARNING")),
        ("LOGSTATS_INTERVAL", json!(60.0)),
        ("MEMUSAGE_CHECK_INTERVAL_SECONDS", json!(60.0)),
        ("MEDIA_ALLOW_REDIRECTS", json!(false)),
        ("MEMUSAGE_ENABLED", json!(true)),
        ("MEMUSAGE_LIMIT_MB", json!(0)),
        ("MEMUSAGE_WARNING_MB", json!(0)),
        ("METRICS_ADDR", Value::Null),
        ("METRICS_HISTORY", json!(720)),
        ("METRICS_INTERVAL", json!(5.0)),
        ("METRICS_TOKEN", Value::Null),
        ("METAREFRESH_ENABLED", json!(true)),
        ("METAREFRESH_IGNORE_TAGS", json!(["noscript"])),
        ("METAREFRESH_MAXDELAY", json!(100)),
        ("REACTOR_THREADPOOL_MAXSIZE", json!(10)),
        ("REDIRECT_ENABLED", json!(true)),
        ("REDIRECT_MAX_TIMES", json!(20)),
        ("REDIRECT_PRIORITY_ADJUST", json!(2)),
        ("REFERER_ENABLED", json!(true)),
        ("REFERRER_POLICY", json!("scrapy-default")),
        ("RETRY_AFTER_MAX", json!(120)),
        ("RETRY_ENABLED", json!(true)),
        (
            "RETRY_EXCEPTIONS",
            json!([
                "TimeoutError",
                "DownloadTimeout",
                "DnsLookupError",
                "ConnectError",
                "ConnectionDone",
                "ConnectionLost",
                "HttpError",
                "TlsError",
                "TunnelError",
                "Socks5Error",
                "Error"
            ]),
        ),
        (
            "RETRY_HTTP_CODES",
            json!([500, 502, 503, 504, 522, 524, 408, 429]),
        ),
        ("RETRY_PRIORITY_ADJUST", json!(-1)),
        ("RETRY_TIMES", json!(2)),
        ("ROBOTSTXT_OBEY", json!(true)),
        ("ROBOTSTXT_CRAWL_DELAY", json!(false)),
        ("ROBOTSTXT_RETRY_INTERVAL", json!(60)),
        ("ROBOTSTXT_USER_AGENT", Value::Null),
        ("SCHEDULER", json!("trawl.Scheduler")),
        ("SCHEDULER_DEBUG", json!(false)),
        ("SCHEDULER_DISK_QUEUE", json!("trawl.LifoDiskQueue")),
        ("SCHEDULER_START_DISK_QUEUE", json!("trawl.FifoDiskQueue")),
        ("SCHEDULER_MEMORY_QUEUE", json!("trawl.LifoMemoryQueue")),
        (
            "SCHEDULER_PRIORITY_QUEUE",
            json!("trawl.DownloaderAwarePriorityQueue"),
        ),
        (
            "SCHEDULER_START_MEMORY_QUEUE",
            json!("trawl.FifoMemoryQueue"),
        ),
        (
            "REQUEST_FINGERPRINTER_CLASS",
            json!("trawl.RequestFingerprinter"),
        ),
        ("SCRAPER_SLOT_MAX_ACTIVE_SIZE", json!(5_000_000)),
        ("SPIDER_MIDDLEWARES", json!({})),
        (
            "SPIDER_MIDDLEWARES_BASE",
            json!({
                "trawl.HttpErrorMiddleware": 50,
                "trawl.RefererMiddleware": 700,
                "trawl.UrlLengthMiddleware": 800,
                "trawl.DepthMiddleware": 900
            }),
        ),
        ("STATS_CLASS", json!("trawl.MemoryStatsCollector")),
        ("STATS_DUMP", json!(true)),
        // trawl: hosts whose TLS sessions are kept for resumption (0: none; one ticket
        // each, least recently used forgotten).
        ("TLS_SESSION_CACHE_SIZE", json!(1024)),
        ("URLLENGTH_LIMIT", json!(2083)),
        (
            "USER_AGENT",
            json!(concat!(
                "trawl/",
                env!("CARGO_PKG_VERSION"),
                " (+https://github.com/trawl)"
            )),
        ),
    ]
}

/// Settings trawl reads whose defaults live with their readers rather than in the
/// defaults table (scrapy-redis keeps its names out of Scrapy's table too).
const READ_ELSEWHERE: &[&str] = &[
    "MAX_IDLE_TIME_BEFORE_CLOSE",
    "RANDOMIZE_DOWNLOAD_DELAY",
    "REDIS_CLUSTER_NODES",
    "REDIS_DB",
    "REDIS_DUPEFILTER_CACHE",
    "REDIS_HOST",
    "REDIS_ITEMS_KEY",
    "REDIS_ITEMS_SHARDS",
    "REDIS_LEASE_TIMEOUT",
    "REDIS_MAX_BUFFERED",
    "REDIS_PARAMS",
    "REDIS_PORT",
    "REDIS_PREFETCH",
    "REDIS_START_URLS_AS_SET",
    "REDIS_START_URLS_AS_ZSET",
    "REDIS_START_URLS_BATCH_SIZE",
    "REDIS_START_URLS_KEY",
    "REDIS_URL",
    "SCHEDULER_DUPEFILTER_KEY",
    "SCHEDULER_FLUSH_ON_START",
    "SCHEDULER_IDLE_BEFORE_CLOSE",
    "SCHEDULER_PERSIST",
    "SCHEDULER_QUEUE_CLASS",
    "SCHEDULER_QUEUE_KEY",
    "SCHEDULER_SERIALIZER",
    "SCHEDULER_SHARDS",
    "STATS_KEY",
];

/// Whether trawl knows a setting by this name (in the defaults table or read by a
/// built-in component). Components of the user's own may read others.
pub fn is_known(name: &str) -> bool {
    READ_ELSEWHERE.contains(&name)
        || defaults().iter().any(|(n, _)| *n == name)
        || declared()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(name)
}

/// Setting names components of your own declared (they are known from then on).
fn declared() -> &'static std::sync::Mutex<std::collections::HashSet<String>> {
    static DECLARED: std::sync::OnceLock<std::sync::Mutex<std::collections::HashSet<String>>> =
        std::sync::OnceLock::new();
    DECLARED.get_or_init(Default::default)
}

/// Makes `names` known settings (a component of your own that reads them:
/// `Registry::declare_settings` calls this), so setting them draws no warning.
pub fn declare_known<I, S>(names: I)
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut set = declared()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    set.extend(names.into_iter().map(Into::into));
}

/// Warns once per process about a setting nothing reads — built in or declared by a
/// component — naming where it was set (`source`) and the closest known name. Returns
/// whether it warned.
pub fn warn_if_unknown(name: &str, source: &str) -> bool {
    if is_known(name) {
        return false;
    }
    static WARNED: std::sync::OnceLock<std::sync::Mutex<std::collections::HashSet<String>>> =
        std::sync::OnceLock::new();
    let first = WARNED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(name.to_owned());
    if !first {
        return false;
    }
    match suggest(name) {
        Some(close) => log::warn!(
            "Unknown setting {name} ({source}); did you mean {close}? It is set, but nothing \
             built in or declared reads it"
        ),
        None => log::warn!(
            "Unknown setting {name} ({source}): it is set, but nothing built in or declared \
             reads it"
        ),
    }
    true
}

/// The environment's settings: each `TRAWL_SETTING_<NAME>=<value>` sets `NAME` (a
/// deployment's way to set what its image runs with), parsed as `-s` values are.
pub fn from_environment() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::env::vars()
        .filter_map(|(k, v)| {
            k.strip_prefix("TRAWL_SETTING_")
                .filter(|n| !n.is_empty())
                .map(|n| (n.to_owned(), v))
        })
        .collect();
    out.sort();
    out
}

/// The known setting closest to `name` (a likely typo), if one is close enough.
pub fn suggest(name: &str) -> Option<String> {
    let upper = name.to_ascii_uppercase();
    let mut known: Vec<String> = defaults().into_iter().map(|(n, _)| n.to_owned()).collect();
    known.extend(READ_ELSEWHERE.iter().map(|n| (*n).to_owned()));
    known
        .into_iter()
        .map(|k| (edit_distance(&upper, &k), k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 6))
        .min()
        .map(|(_, k)| k)
}

/// Levenshtein distance over bytes (setting names are ASCII and short).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

impl Settings {
    /// Scrapy's defaults (and trawl's, where they differ) at `default` priority.
    pub fn new() -> Self {
        let mut s = Self::default();
        for (name, value) in defaults() {
            s.values.insert(name.to_owned(), (value, Priority::Default));
        }
        s
    }

    /// Sets `name` at `priority` unless a higher-priority value is already there.
    ///
    /// # Panics
    ///
    /// Never; writes to frozen settings are ignored with an error log.
    pub fn set(&mut self, name: &str, value: impl Into<Value>, priority: Priority) {
        if self.frozen {
            log::error!("Trying to modify a frozen Settings object ({name})");
            return;
        }
        let value = value.into();
        match self.values.get(name) {
            Some((_, p)) if *p > priority => {}
            _ => {
                self.values.insert(name.to_owned(), (value, priority));
            }
        }
    }

    /// Sets `NAME=VALUE` text as given on the command line: JSON if it parses as JSON,
    /// a string otherwise.
    pub fn set_from_text(&mut self, name: &str, text: &str, priority: Priority) {
        let value =
            serde_json::from_str::<Value>(text).unwrap_or_else(|_| Value::String(text.to_owned()));
        self.set(name, value, priority);
    }

    /// Makes the settings read-only (the crawl has started).
    pub fn freeze(&mut self) {
        self.frozen = true;
    }

    /// The raw value.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.values
            .get(name)
            .map(|(v, _)| v)
            .filter(|v| !v.is_null())
    }

    /// The priority a setting was set with.
    pub fn priority(&self, name: &str) -> Option<Priority> {
        self.values.get(name).map(|(_, p)| *p)
    }

    fn err(name: &str, reason: impl Into<String>) -> SettingsError {
        SettingsError {
            name: name.to_owned(),
            reason: reason.into(),
        }
    }

    /// A boolean (`true`, `1`, `"True"`, `"false"`, `"0"`...); `false` when unset.
    ///
    /// # Errors
    ///
    /// The value is not a boolean in any accepted spelling.
    pub fn get_bool(&self, name: &str) -> Result<bool, SettingsError> {
        match self.get(name) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(Value::Number(n)) if n.as_i64() == Some(0) || n.as_i64() == Some(1) => {
                Ok(n.as_i64() == Some(1))
            }
            Some(Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" => Ok(true),
                "0" | "false" | "no" | "off" | "" => Ok(false),
                _ => Err(Self::err(name, format!("expected a boolean, got {s:?}"))),
            },
            Some(v) => Err(Self::err(name, format!("expected a boolean, got {v}"))),
        }
    }

    /// An integer; 0 when unset.
    ///
    /// # Errors
    ///
    /// The value is not an integer.
    pub fn get_int(&self, name: &str) -> Result<i64, SettingsError> {
        match self.get(name) {
            None => Ok(0),
            Some(Value::Number(n)) => n
                .as_i64()
                .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
                .ok_or_else(|| Self::err(name, format!("expected an integer, got {n}"))),
            Some(Value::Bool(b)) => Ok(i64::from(*b)),
            Some(Value::String(s)) => s
                .trim()
                .parse()
                .map_err(|_| Self::err(name, format!("expected an integer, got {s:?}"))),
            Some(v) => Err(Self::err(name, format!("expected an integer, got {v}"))),
        }
    }

    /// A non-negative integer as `usize`.
    ///
    /// # Errors
    ///
    /// Not an integer, or negative.
    pub fn get_usize(&self, name: &str) -> Result<usize, SettingsError> {
        let v = self.get_int(name)?;
        usize::try_from(v)
            .map_err(|_| Self::err(name, format!("expected a non-negative integer, got {v}")))
    }

    /// A float; 0.0 when unset.
    ///
    /// # Errors
    ///
    /// The value is not a number.
    pub fn get_float(&self, name: &str) -> Result<f64, SettingsError> {
        match self.get(name) {
            None => Ok(0.0),
            Some(Value::Number(n)) => n.as_f64().ok_or_else(|| Self::err(name, "not a number")),
            Some(Value::String(s)) => s
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .ok_or_else(|| Self::err(name, format!("expected a number, got {s:?}"))),
            Some(v) => Err(Self::err(name, format!("expected a number, got {v}"))),
        }
    }

    /// A duration in seconds (a number, or text like `"90"`, `"1.5s"`, `"2m"`, `"1h"`).
    ///
    /// # Errors
    ///
    /// Not a duration, or negative.
    pub fn get_duration(&self, name: &str) -> Result<f64, SettingsError> {
        let secs = match self.get(name) {
            Some(Value::String(s)) => {
                let s = s.trim();
                let (num, mult) = if let Some(n) = s.strip_suffix("ms") {
                    (n, 0.001)
                } else if let Some(n) = s.strip_suffix('s') {
                    (n, 1.0)
                } else if let Some(n) = s.strip_suffix('m') {
                    (n, 60.0)
                } else if let Some(n) = s.strip_suffix('h') {
                    (n, 3600.0)
                } else {
                    (s, 1.0)
                };
                num.trim()
                    .parse::<f64>()
                    .map(|v| v * mult)
                    .map_err(|_| Self::err(name, format!("expected a duration, got {s:?}")))?
            }
            _ => self.get_float(name)?,
        };
        if secs < 0.0 || !secs.is_finite() {
            return Err(Self::err(
                name,
                format!("expected a non-negative duration, got {secs}"),
            ));
        }
        Ok(secs)
    }

    /// A string; `None` when unset.
    ///
    /// # Errors
    ///
    /// The value is a list or a map.
    pub fn get_str(&self, name: &str) -> Result<Option<String>, SettingsError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v @ (Value::Number(_) | Value::Bool(_))) => Ok(Some(v.to_string())),
            Some(v) => Err(Self::err(name, format!("expected a string, got {v}"))),
        }
    }

    /// A list (a JSON list, or a comma-separated string); empty when unset.
    ///
    /// # Errors
    ///
    /// The value is a map.
    pub fn get_list(&self, name: &str) -> Result<Vec<Value>, SettingsError> {
        match self.get(name) {
            None => Ok(Vec::new()),
            Some(Value::Array(a)) => Ok(a.clone()),
            Some(Value::String(s)) => {
                if let Ok(Value::Array(a)) = serde_json::from_str::<Value>(s) {
                    return Ok(a);
                }
                Ok(s.split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(|p| {
                        serde_json::from_str(p).unwrap_or_else(|_| Value::String(p.to_owned()))
                    })
                    .collect())
            }
            Some(v @ Value::Number(_)) => Ok(vec![v.clone()]),
            Some(v) => Err(Self::err(name, format!("expected a list, got {v}"))),
        }
    }

    /// A list of integers (status codes, say).
    ///
    /// # Errors
    ///
    /// An element is not an integer.
    pub fn get_int_list(&self, name: &str) -> Result<Vec<i64>, SettingsError> {
        self.get_list(name)?
            .iter()
            .map(|v| match v {
                Value::Number(n) => n
                    .as_i64()
                    .ok_or_else(|| Self::err(name, format!("not an integer: {n}"))),
                Value::String(s) => s
                    .trim()
                    .parse()
                    .map_err(|_| Self::err(name, format!("not an integer: {s:?}"))),
                other => Err(Self::err(name, format!("not an integer: {other}"))),
            })
            .collect()
    }

    /// A map (a JSON object, or JSON text of one); empty when unset.
    ///
    /// # Errors
    ///
    /// The value is not a map.
    pub fn get_dict(&self, name: &str) -> Result<Map<String, Value>, SettingsError> {
        match self.get(name) {
            None => Ok(Map::new()),
            Some(Value::Object(m)) => Ok(m.clone()),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(Map::new()),
            Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                Ok(Value::Object(m)) => Ok(m),
                _ => Err(Self::err(
                    name,
                    format!("expected a JSON object, got {s:?}"),
                )),
            },
            Some(v) => Err(Self::err(name, format!("expected a map, got {v}"))),
        }
    }

    /// The enabled components of an order map: `{name}_BASE` merged with `{name}`,
    /// entries set to `null` removed, sorted by order (then name).
    ///
    /// # Errors
    ///
    /// A map is malformed or an order is not an integer.
    pub fn component_list(&self, name: &str) -> Result<Vec<(String, i64)>, SettingsError> {
        let mut merged = self.get_dict(&format!("{name}_BASE"))?;
        for (k, v) in self.get_dict(name)? {
            // Accept Scrapy's dotted paths for built-ins: scrapy.x.y.RetryMiddleware.
            let key = normalize_component(&k);
            merged.retain(|existing, _| normalize_component(existing) != key);
            merged.insert(key, v);
        }
        let mut out = Vec::new();
        for (k, v) in merged {
            match v {
                Value::Null => {}
                Value::Number(n) => match n.as_i64() {
                    Some(order) => out.push((normalize_component(&k), order)),
                    None => {
                        return Err(Self::err(
                            name,
                            format!("order of {k} is not an integer: {n}"),
                        ));
                    }
                },
                Value::Bool(false) => {}
                other => {
                    return Err(Self::err(
                        name,
                        format!("order of {k} must be an integer or null, got {other}"),
                    ));
                }
            }
        }
        out.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        Ok(out)
    }

    /// Every setting name with its value, sorted (for `trawl settings` and debugging).
    pub fn iter_sorted(&self) -> Vec<(&str, &Value, Priority)> {
        let mut v: Vec<_> = self
            .values
            .iter()
            .map(|(k, (v, p))| (k.as_str(), v, *p))
            .collect();
        v.sort_by(|a, b| a.0.cmp(b.0));
        v
    }

    /// Settings that are not at their default priority (for the start-up log).
    pub fn overridden(&self) -> Vec<(String, Value)> {
        let mut v: Vec<_> = self
            .values
            .iter()
            .filter(|(_, (_, p))| *p > Priority::Default)
            .map(|(k, (v, _))| (k.clone(), v.clone()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }
}

/// The normalised name `REQUEST_FINGERPRINTER_CLASS` gives (Scrapy's
/// `scrapy.utils.request.RequestFingerprinter` is `trawl.RequestFingerprinter`): what a
/// JOBDIR or a Redis crawl records.
///
/// # Errors
///
/// The setting is not a string.
pub fn fingerprinter_name(settings: &Settings) -> Result<String, SettingsError> {
    let name = settings
        .get_str("REQUEST_FINGERPRINTER_CLASS")?
        .unwrap_or_else(|| "trawl.RequestFingerprinter".to_owned());
    Ok(normalize_component(&name))
}

/// Maps Scrapy-style dotted paths of built-ins to trawl's names:
/// `scrapy.downloadermiddlewares.retry.RetryMiddleware` → `trawl.RetryMiddleware`.
pub fn normalize_component(name: &str) -> String {
    if let Some(rest) = name
        .strip_prefix("scrapy.")
        .or_else(|| name.strip_prefix("trawl."))
    {
        let class = rest.rsplit('.').next().unwrap_or(rest);
        return format!("trawl.{class}");
    }
    name.to_owned()
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("overridden", &self.overridden())
            .field("frozen", &self.frozen)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_settings_are_known_and_unknown_ones_warn_once() {
        assert!(warn_if_unknown("TEST_ONLY_PIPELNE_LIMIT", "a test"));
        assert!(
            !warn_if_unknown("TEST_ONLY_PIPELNE_LIMIT", "elsewhere"),
            "once"
        );
        assert!(!is_known("TEST_ONLY_PIPELINE_LIMIT"));
        declare_known(["TEST_ONLY_PIPELINE_LIMIT"]);
        assert!(is_known("TEST_ONLY_PIPELINE_LIMIT"));
        assert!(!warn_if_unknown("TEST_ONLY_PIPELINE_LIMIT", "a test"));
        assert!(!warn_if_unknown("CONCURRENT_REQUESTS", "a test"));
    }

    #[test]
    fn priorities() {
        let mut s = Settings::new();
        s.set("CONCURRENT_REQUESTS", 32, Priority::Spider);
        s.set("CONCURRENT_REQUESTS", 64, Priority::Project);
        assert_eq!(s.get_int("CONCURRENT_REQUESTS").unwrap(), 32);
        s.set_from_text("CONCURRENT_REQUESTS", "4", Priority::Cmdline);
        assert_eq!(s.get_int("CONCURRENT_REQUESTS").unwrap(), 4);
    }

    #[test]
    fn typed_getters_and_errors() {
        let mut s = Settings::new();
        for (text, want) in [
            ("True", true),
            ("0", false),
            ("yes", true),
            ("false", false),
        ] {
            s.set_from_text("X", text, Priority::Cmdline);
            assert_eq!(s.get_bool("X").unwrap(), want, "{text}");
        }
        s.set_from_text("X", "maybe", Priority::Cmdline);
        let e = s.get_bool("X").unwrap_err();
        assert_eq!(e.name, "X");
        s.set_from_text("Y", "500,503", Priority::Cmdline);
        assert_eq!(s.get_int_list("Y").unwrap(), [500, 503]);
        s.set_from_text("Z", "2m", Priority::Cmdline);
        assert_eq!(s.get_duration("Z").unwrap(), 120.0);
        s.set_from_text("D", "{\"a\": 1}", Priority::Cmdline);
        assert_eq!(s.get_dict("D").unwrap()["a"], 1);
        assert!(s.get_int("D").is_err());
    }

    #[test]
    fn component_lists_merge_and_disable() {
        let mut s = Settings::new();
        s.set(
            "DOWNLOADER_MIDDLEWARES",
            json!({"scrapy.downloadermiddlewares.useragent.DefaultHeadersMiddleware": null, "my.Custom": 543}),
            Priority::Project,
        );
        let list = s.component_list("DOWNLOADER_MIDDLEWARES").unwrap();
        let names: Vec<&str> = list.iter().map(|(n, _)| n.as_str()).collect();
        assert!(!names.contains(&"trawl.DefaultHeadersMiddleware"));
        let custom = names.iter().position(|n| *n == "my.Custom").unwrap();
        let ua = names
            .iter()
            .position(|n| *n == "trawl.UserAgentMiddleware")
            .unwrap();
        let stats = names
            .iter()
            .position(|n| *n == "trawl.DownloaderStats")
            .unwrap();
        assert!(ua < custom && custom < stats);
    }
}
