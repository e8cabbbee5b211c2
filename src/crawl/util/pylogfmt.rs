//! Python's `logging.Formatter` with `%`-style formats, as Scrapy's `LOG_FORMAT` and
//! `LOG_DATEFORMAT` use it: `%(name)s`-style fields with flags, width, precision and
//! the `s`, `r`, `d`, `i`, `f` conversions; `%(asctime)s` from `time.strftime(datefmt)`
//! (or Python's default `YYYY-MM-DD HH:MM:SS,mmm` when `datefmt` is empty), in UTC;
//! CPython 3.11's `msecs`. Plus trawl's `%(spider)s`: the crawl a record belongs to.
//! Sans-IO: a record's fields in, a line out (tests/data/logging holds Python's
//! answers).

use std::fmt::Write as _;

use crate::proto::date::civil_from_days;

/// Scrapy's `LOG_FORMAT` default.
pub const DEFAULT_FORMAT: &str = "%(asctime)s [%(name)s] %(levelname)s: %(message)s";
/// Scrapy's `LOG_DATEFORMAT` default.
pub const DEFAULT_DATEFORMAT: &str = "%Y-%m-%d %H:%M:%S";

/// One record's fields, as Python's `LogRecord` names them.
#[derive(Debug, Clone, Default)]
pub struct LogFields<'a> {
    /// The logger's name (`scrapy.core.engine`; a Rust target with `.` for `::`).
    pub name: &'a str,
    /// `DEBUG`, `INFO`, `WARNING`, `ERROR`, `CRITICAL`.
    pub levelname: &'a str,
    /// 10, 20, 30, 40, 50.
    pub levelno: u32,
    /// The message.
    pub message: &'a str,
    /// Unix time of the record.
    pub created: f64,
    /// Seconds since logging started, times 1,000.
    pub relative_created: f64,
    /// The source file.
    pub pathname: &'a str,
    /// Its line.
    pub lineno: u32,
    /// The function (`None` in Python when not known).
    pub func_name: Option<&'a str>,
    /// The process id.
    pub process: u32,
    /// `MainProcess`.
    pub process_name: &'a str,
    /// The thread's id.
    pub thread: u64,
    /// The thread's name.
    pub thread_name: &'a str,
    /// The crawl's spider (trawl's `%(spider)s`; empty outside a crawl).
    pub spider: Option<&'a str>,
}

/// CPython 3.11's `msecs`: the truncated milliseconds of `created`.
pub fn msecs(created: f64) -> f64 {
    ((created - created.trunc()) * 1000.0).trunc()
}

/// A format string checked once: literal text and fields.
#[derive(Debug, Clone)]
pub struct LogFormat {
    parts: Vec<Part>,
    datefmt: Option<String>,
}

#[derive(Debug, Clone)]
enum Part {
    Text(String),
    Field(Spec),
}

#[derive(Debug, Clone)]
struct Spec {
    key: String,
    left: bool,
    zero: bool,
    plus: bool,
    space: bool,
    width: usize,
    precision: Option<usize>,
    conv: char,
}

/// Why a format cannot be used (Python raises `ValueError` / `KeyError` when a record
/// is formatted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFormatError(pub String);

impl std::fmt::Display for LogFormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LogFormatError {}

const KEYS: &[&str] = &[
    "asctime",
    "name",
    "levelname",
    "levelno",
    "message",
    "created",
    "msecs",
    "relativeCreated",
    "pathname",
    "filename",
    "module",
    "lineno",
    "funcName",
    "process",
    "processName",
    "thread",
    "threadName",
    "spider",
];

impl LogFormat {
    /// Parses `fmt` (`LOG_FORMAT`) with `datefmt` (`LOG_DATEFORMAT`; empty or `None`:
    /// Python's default).
    ///
    /// # Errors
    ///
    /// An unknown field, an unsupported conversion, or a `%` not followed by a field.
    pub fn new(fmt: &str, datefmt: Option<&str>) -> Result<Self, LogFormatError> {
        let mut parts = Vec::new();
        let mut text = String::new();
        let mut rest = fmt;
        while let Some(i) = rest.find('%') {
            text.push_str(&rest[..i]);
            rest = &rest[i + 1..];
            if let Some(r) = rest.strip_prefix('%') {
                text.push('%');
                rest = r;
                continue;
            }
            let Some(r) = rest.strip_prefix('(') else {
                return Err(LogFormatError(format!(
                    "LOG_FORMAT {fmt:?}: a % must name a field, as %(message)s (or be written %%)"
                )));
            };
            let Some(close) = r.find(')') else {
                return Err(LogFormatError(format!("LOG_FORMAT {fmt:?}: unclosed %(")));
            };
            let key = &r[..close];
            if !KEYS.contains(&key) {
                return Err(LogFormatError(format!(
                    "LOG_FORMAT {fmt:?}: unknown field %({key})s (known: {})",
                    KEYS.join(", ")
                )));
            }
            let (spec, after) = parse_spec(key, &r[close + 1..]).ok_or_else(|| {
                LogFormatError(format!("LOG_FORMAT {fmt:?}: bad %({key}) conversion"))
            })?;
            if !text.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut text)));
            }
            parts.push(Part::Field(spec));
            rest = after;
        }
        text.push_str(rest);
        if !text.is_empty() {
            parts.push(Part::Text(text));
        }
        Ok(Self {
            parts,
            datefmt: datefmt.filter(|d| !d.is_empty()).map(str::to_owned),
        })
    }

    /// Whether the format uses `%(asctime)s` (the time is formatted only then).
    pub fn uses_time(&self) -> bool {
        self.parts
            .iter()
            .any(|p| matches!(p, Part::Field(s) if s.key == "asctime"))
    }

    /// Formats one record into `out` (no newline).
    pub fn format_into(&self, f: &LogFields<'_>, out: &mut String) {
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Field(spec) => self.field(spec, f, out),
            }
        }
    }

    /// Formats one record.
    pub fn format(&self, f: &LogFields<'_>) -> String {
        let mut out = String::new();
        self.format_into(f, &mut out);
        out
    }

    fn field(&self, spec: &Spec, f: &LogFields<'_>, out: &mut String) {
        let filename = f.pathname.rsplit(['/', '\\']).next().unwrap_or(f.pathname);
        let module = filename.split('.').next().unwrap_or(filename);
        let value = match spec.key.as_str() {
            "asctime" => Value::Str(asctime(f.created, self.datefmt.as_deref())),
            "name" => Value::Str(f.name.to_owned()),
            "levelname" => Value::Str(f.levelname.to_owned()),
            "levelno" => Value::Int(i64::from(f.levelno)),
            "message" => Value::Str(f.message.to_owned()),
            "created" => Value::Float(f.created),
            "msecs" => Value::Float(msecs(f.created)),
            "relativeCreated" => Value::Float(f.relative_created),
            "pathname" => Value::Str(f.pathname.to_owned()),
            "filename" => Value::Str(filename.to_owned()),
            "module" => Value::Str(module.to_owned()),
            "lineno" => Value::Int(i64::from(f.lineno)),
            "funcName" => f
                .func_name
                .map_or(Value::None, |s| Value::Str(s.to_owned())),
            "process" => Value::Int(i64::from(f.process)),
            "processName" => Value::Str(f.process_name.to_owned()),
            "thread" => Value::Int(i64::try_from(f.thread).unwrap_or(i64::MAX)),
            "threadName" => Value::Str(f.thread_name.to_owned()),
            "spider" => Value::Str(f.spider.unwrap_or("").to_owned()),
            _ => Value::None,
        };
        render(spec, &value, out);
    }
}

enum Value {
    Str(String),
    Int(i64),
    Float(f64),
    None,
}

fn parse_spec<'a>(key: &str, s: &'a str) -> Option<(Spec, &'a str)> {
    let mut spec = Spec {
        key: key.to_owned(),
        left: false,
        zero: false,
        plus: false,
        space: false,
        width: 0,
        precision: None,
        conv: 's',
    };
    let mut chars = s.char_indices().peekable();
    while let Some(&(_, c)) = chars.peek() {
        match c {
            '-' => spec.left = true,
            '0' => spec.zero = true,
            '+' => spec.plus = true,
            ' ' => spec.space = true,
            '#' => {}
            _ => break,
        }
        chars.next();
    }
    let digits = |chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>| {
        let mut n: Option<usize> = None;
        while let Some(&(_, c)) = chars.peek() {
            let Some(d) = c.to_digit(10) else { break };
            n = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(d as usize));
            chars.next();
        }
        n
    };
    spec.width = digits(&mut chars).unwrap_or(0);
    if chars.peek().is_some_and(|&(_, c)| c == '.') {
        chars.next();
        spec.precision = Some(digits(&mut chars).unwrap_or(0));
    }
    let (i, conv) = chars.next()?;
    if !matches!(conv, 's' | 'r' | 'd' | 'i' | 'f' | 'F') {
        return None;
    }
    spec.conv = conv;
    Some((spec, &s[i + conv.len_utf8()..]))
}

fn render(spec: &Spec, value: &Value, out: &mut String) {
    let mut body = match (spec.conv, value) {
        ('s', Value::Str(s)) => s.clone(),
        ('s', Value::Int(n)) => n.to_string(),
        ('s', Value::Float(x)) => super::pyjson::python_float_repr(*x),
        ('s' | 'r', Value::None) => "None".to_owned(),
        ('r', Value::Str(s)) => super::pyjson::python_repr(&serde_json::Value::String(s.clone())),
        ('r', Value::Int(n)) => n.to_string(),
        ('r', Value::Float(x)) => super::pyjson::python_float_repr(*x),
        ('d' | 'i', Value::Int(n)) => number(spec, n.unsigned_abs().to_string(), *n < 0),
        ('d' | 'i', Value::Float(x)) => number(
            spec,
            (x.trunc().abs() as u64).to_string(),
            *x < 0.0 && x.trunc() != 0.0,
        ),
        ('f' | 'F', Value::Int(n)) => {
            let p = spec.precision.unwrap_or(6);
            number(spec, format!("{:.p$}", (*n as f64).abs()), *n < 0)
        }
        ('f' | 'F', Value::Float(x)) => {
            let p = spec.precision.unwrap_or(6);
            number(
                spec,
                format!("{:.p$}", x.abs()),
                x.is_sign_negative() && *x != 0.0,
            )
        }
        // Python raises TypeError here: the field as text keeps the line readable.
        (_, Value::Str(s)) => s.clone(),
        (_, Value::None) => "None".to_owned(),
        (_, Value::Int(n)) => n.to_string(),
        (_, Value::Float(x)) => super::pyjson::python_float_repr(*x),
    };
    if matches!(spec.conv, 's' | 'r')
        && let Some(p) = spec.precision
        && let Some((cut, _)) = body.char_indices().nth(p)
    {
        body.truncate(cut);
    }
    let len = body.chars().count();
    if len >= spec.width {
        out.push_str(&body);
        return;
    }
    let pad = spec.width - len;
    let numeric = !matches!(spec.conv, 's' | 'r');
    if spec.left {
        out.push_str(&body);
        out.extend(std::iter::repeat_n(' ', pad));
    } else if spec.zero && numeric {
        // Zeros go after the sign.
        let (sign, digits) = match body.chars().next() {
            Some(c @ ('-' | '+' | ' ')) => (Some(c), &body[1..]),
            _ => (None, body.as_str()),
        };
        if let Some(c) = sign {
            out.push(c);
        }
        out.extend(std::iter::repeat_n('0', pad));
        out.push_str(digits);
    } else {
        out.extend(std::iter::repeat_n(' ', pad));
        out.push_str(&body);
    }
}

/// A number's text with its sign (`-`, or `+` / space when the flags ask).
fn number(spec: &Spec, digits: String, negative: bool) -> String {
    let sign = if negative {
        "-"
    } else if spec.plus {
        "+"
    } else if spec.space {
        " "
    } else {
        ""
    };
    format!("{sign}{digits}")
}

/// `%(asctime)s`: `time.strftime(datefmt)` of `created` in UTC, or without a `datefmt`
/// Python's `YYYY-MM-DD HH:MM:SS,mmm`.
pub fn asctime(created: f64, datefmt: Option<&str>) -> String {
    match datefmt {
        Some(fmt) => strftime_utc(fmt, created),
        None => format!(
            "{},{:03}",
            strftime_utc(DEFAULT_DATEFORMAT, created),
            msecs(created) as u32
        ),
    }
}

const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// C's `strftime` in the C locale, for a Unix time in UTC: `%Y %m %d %H %M %S %y %b %B
/// %a %A %j %p %I %w %Z %z %%`; any other directive is copied as written (glibc's way).
pub fn strftime_utc(fmt: &str, unix: f64) -> String {
    let secs = unix.floor() as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let (m, d) = (u32::try_from(m).unwrap_or(1), u32::try_from(d).unwrap_or(1));
    let (hour, minute, second) = (rem / 3600, rem % 3600 / 60, rem % 60);
    // 1970-01-01 was a Thursday (index 3 from Monday).
    let weekday = (days + 3).rem_euclid(7) as usize;
    let yday = days - days_from_civil(y, 1, 1) + 1;
    let month = MONTHS[(m as usize).clamp(1, 12) - 1];
    let mut out = String::with_capacity(fmt.len() + 16);
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(d2) = chars.next() else {
            out.push('%');
            break;
        };
        let _ = match d2 {
            'Y' => write!(out, "{y}"),
            'm' => write!(out, "{m:02}"),
            'd' => write!(out, "{d:02}"),
            'H' => write!(out, "{hour:02}"),
            'M' => write!(out, "{minute:02}"),
            'S' => write!(out, "{second:02}"),
            'y' => write!(out, "{:02}", y.rem_euclid(100)),
            'b' => write!(out, "{}", &month[..3]),
            'B' => write!(out, "{month}"),
            'a' => write!(out, "{}", &DAYS[weekday][..3]),
            'A' => write!(out, "{}", DAYS[weekday]),
            'j' => write!(out, "{yday:03}"),
            'p' => write!(out, "{}", if hour < 12 { "AM" } else { "PM" }),
            'I' => write!(out, "{:02}", if hour % 12 == 0 { 12 } else { hour % 12 }),
            'w' => write!(out, "{}", (weekday + 1) % 7),
            'Z' => write!(out, "UTC"),
            'z' => write!(out, "+0000"),
            '%' => write!(out, "%"),
            other => write!(out, "%{other}"),
        };
    }
    out
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Scrapy's `LOG_SHORT_NAMES` (`TopLevelFormatter(["scrapy"])`), for trawl's top-level
/// logger: a name under `top.` is shown as `top`.
pub fn short_name<'a>(name: &'a str, top: &str) -> &'a str {
    match name.strip_prefix(top) {
        Some(rest) if rest.starts_with('.') => &name[..top.len()],
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_formats_are_refused_with_the_reason() {
        assert!(LogFormat::new("%(nope)s", None).is_err());
        assert!(LogFormat::new("50% done", None).is_err());
        assert!(LogFormat::new("%(message)q", None).is_err());
        assert!(LogFormat::new("%(message", None).is_err());
        assert!(LogFormat::new("100%% %(message)s", None).is_ok());
    }

    #[test]
    fn days_from_civil_inverts_civil_from_days() {
        for days in [-1, 0, 59, 365, 11_016, 19_000, 20_427] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m as u32, d as u32), days);
        }
    }
}
