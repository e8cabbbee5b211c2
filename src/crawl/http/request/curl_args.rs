//! The command-line half of `Request::from_curl`: Python's `shlex.split` (POSIX mode)
//! and the `argparse` parser Scrapy's `scrapy.utils.curl` declares, reproduced rule by
//! rule so a command line splits and parses exactly as Scrapy's does — option
//! abbreviations (`--req` is `--request`, `--d` is ambiguous), short options joined to
//! their values (`-XPOST`, `-sv`), `--opt=value`, `--`, and unknown options left over
//! with the strings after them.
//!
//! Both are linear in the command line.

use std::fmt;

/// Why a command line could not be split or parsed (Scrapy raises `ValueError`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurlError(pub String);

impl fmt::Display for CurlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CurlError {}

/// Python's `shlex.split(s)`: POSIX quoting (`'…'` literal, `"…"` with `\` escaping
/// only `\` and `"`, `\` escaping any character outside quotes), no comments.
///
/// # Errors
///
/// An unterminated quote ("No closing quotation") or a trailing backslash ("No
/// escaped character"), as shlex raises them.
pub fn shlex_split(s: &str) -> Result<Vec<String>, CurlError> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Space,
        Word,
        Single,
        Double,
        Escape,
    }
    let is_space = |c: char| matches!(c, ' ' | '\t' | '\r' | '\n');
    let mut out = Vec::new();
    let mut token = String::new();
    let mut quoted = false;
    let mut state = State::Space;
    // The state an escape returns to.
    let mut escaped = State::Word;
    for c in s.chars() {
        match state {
            State::Space | State::Word => {
                if is_space(c) {
                    if state == State::Word || quoted {
                        out.push(std::mem::take(&mut token));
                    }
                    quoted = false;
                    state = State::Space;
                } else if c == '\\' {
                    escaped = State::Word;
                    state = State::Escape;
                } else if c == '\'' {
                    state = State::Single;
                } else if c == '"' {
                    state = State::Double;
                } else {
                    token.push(c);
                    state = State::Word;
                }
            }
            State::Single | State::Double => {
                quoted = true;
                if (c == '\'' && state == State::Single) || (c == '"' && state == State::Double) {
                    state = State::Word;
                } else if c == '\\' && state == State::Double {
                    escaped = State::Double;
                    state = State::Escape;
                } else {
                    token.push(c);
                }
            }
            State::Escape => {
                // In double quotes only `"` and `\` are escaped; the backslash
                // stays before anything else.
                if escaped == State::Double && c != '"' && c != '\\' {
                    token.push('\\');
                }
                token.push(c);
                state = escaped;
            }
        }
    }
    match state {
        State::Single | State::Double => Err(CurlError("No closing quotation".into())),
        State::Escape => Err(CurlError("No escaped character".into())),
        State::Word => {
            out.push(token);
            Ok(out)
        }
        State::Space => {
            if quoted {
                out.push(token);
            }
            Ok(out)
        }
    }
}

/// The actions of Scrapy's curl parser.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Act {
    Help,
    Header,
    Request,
    Cookie,
    Data,
    User,
    Compressed,
    Silent,
    Verbose,
    Progress,
}

impl Act {
    /// How many strings the action takes (argparse's `nargs`: `None` is one).
    fn nargs(self) -> usize {
        match self {
            Self::Header | Self::Request | Self::Cookie | Self::Data | Self::User => 1,
            _ => 0,
        }
    }

    /// argparse's name of the action in messages.
    fn name(self) -> &'static str {
        match self {
            Self::Help => "-h/--help",
            Self::Header => "-H/--header",
            Self::Request => "-X/--request",
            Self::Cookie => "-b/--cookie",
            Self::Data => "-d/--data/--data-raw",
            Self::User => "-u/--user",
            Self::Compressed => "--compressed",
            Self::Silent => "-s/--silent",
            Self::Verbose => "-v/--verbose",
            Self::Progress => "-#/--progress-bar",
        }
    }
}

/// The option strings in the order the parser registers them (argparse's `-h` first):
/// the order of "could match" lists.
const OPTIONS: &[(&str, Act)] = &[
    ("-h", Act::Help),
    ("--help", Act::Help),
    ("-H", Act::Header),
    ("--header", Act::Header),
    ("-X", Act::Request),
    ("--request", Act::Request),
    ("-b", Act::Cookie),
    ("--cookie", Act::Cookie),
    ("-d", Act::Data),
    ("--data", Act::Data),
    ("--data-raw", Act::Data),
    ("-u", Act::User),
    ("--user", Act::User),
    ("--compressed", Act::Compressed),
    ("-s", Act::Silent),
    ("--silent", Act::Silent),
    ("-v", Act::Verbose),
    ("--verbose", Act::Verbose),
    ("-#", Act::Progress),
    ("--progress-bar", Act::Progress),
];

fn lookup(option: &str) -> Option<Act> {
    OPTIONS.iter().find(|(o, _)| *o == option).map(|(_, a)| *a)
}

/// What the parser collected: Scrapy's `parsed_args` and the strings it did not know.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CurlArgs {
    /// The positional URL.
    pub url: Option<String>,
    /// `-H` values, in order.
    pub headers: Vec<String>,
    /// The last `-X`.
    pub method: Option<String>,
    /// `-b` values, in order.
    pub cookies: Vec<String>,
    /// `-d` / `--data` / `--data-raw` values joined with `&` (a leading `$` removed
    /// from each, for the `$'…'` quoting browsers copy).
    pub data: Option<String>,
    /// The last `-u`.
    pub auth: Option<String>,
    /// Unknown options and extra positional strings, in order.
    pub extras: Vec<String>,
}

/// One option string resolved: its action (`None`: unknown), the option string and
/// an explicit argument (`--opt=value`, `-Xvalue`).
#[derive(Debug, Clone)]
struct OptTuple {
    act: Option<Act>,
    option: String,
    explicit: Option<String>,
}

fn err(message: impl fmt::Display) -> CurlError {
    CurlError(format!(
        "There was an error parsing the curl command: {message}"
    ))
}

/// Python's `repr` of a string as argparse prints it (quotes only).
fn py_repr(s: &str) -> String {
    if s.contains('\'') && !s.contains('"') {
        format!("\"{s}\"")
    } else {
        format!("'{}'", s.replace('\'', "\\'"))
    }
}

/// argparse's `_parse_optional`: `None` for a positional string.
fn parse_optional(arg: &str) -> Result<Option<OptTuple>, CurlError> {
    if !arg.starts_with('-') {
        return Ok(None);
    }
    if let Some(act) = lookup(arg) {
        return Ok(Some(OptTuple {
            act: Some(act),
            option: arg.to_owned(),
            explicit: None,
        }));
    }
    if arg.chars().count() == 1 {
        return Ok(None);
    }
    if let Some((option, explicit)) = arg.split_once('=')
        && let Some(act) = lookup(option)
    {
        return Ok(Some(OptTuple {
            act: Some(act),
            option: option.to_owned(),
            explicit: Some(explicit.to_owned()),
        }));
    }
    let tuples = option_tuples(arg);
    if tuples.len() > 1 {
        let names: Vec<&str> = tuples.iter().map(|t| t.option.as_str()).collect();
        return Err(err(format!(
            "ambiguous option: {arg} could match {}",
            names.join(", ")
        )));
    }
    if let Some(t) = tuples.into_iter().next() {
        return Ok(Some(t));
    }
    if looks_negative(arg) || arg.contains(' ') {
        return Ok(None);
    }
    Ok(Some(OptTuple {
        act: None,
        option: arg.to_owned(),
        explicit: None,
    }))
}

/// argparse's `_negative_number_matcher`: `^-\d+$|^-\d*\.\d+$` (Python's `$` also
/// matches before a final newline; `\d` is any decimal digit, as the regex crate's).
fn looks_negative(arg: &str) -> bool {
    static NEGATIVE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\A-(?:\d+|\d*\.\d+)\n?\z")
            .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
    });
    NEGATIVE.is_match(arg)
}

/// argparse's `_get_option_tuples`: the options `arg` abbreviates.
fn option_tuples(arg: &str) -> Vec<OptTuple> {
    let mut out = Vec::new();
    if arg.starts_with("--") {
        let (prefix, explicit) = match arg.split_once('=') {
            Some((p, e)) => (p, Some(e.to_owned())),
            None => (arg, None),
        };
        for (option, act) in OPTIONS {
            if option.starts_with(prefix) {
                out.push(OptTuple {
                    act: Some(*act),
                    option: (*option).to_owned(),
                    explicit: explicit.clone(),
                });
            }
        }
    } else {
        // `-` and one more character, then the rest as the explicit argument.
        let split = arg.char_indices().nth(2).map_or(arg.len(), |(i, _)| i);
        let (short, tail) = arg.split_at(split);
        for (option, act) in OPTIONS {
            if *option == short {
                out.push(OptTuple {
                    act: Some(*act),
                    option: (*option).to_owned(),
                    explicit: Some(tail.to_owned()),
                });
            } else if option.starts_with(arg) {
                out.push(OptTuple {
                    act: Some(*act),
                    option: (*option).to_owned(),
                    explicit: None,
                });
            }
        }
    }
    out
}

/// argparse's pattern match for `nargs`: the strings an action takes from the pattern
/// (`'A'` argument, `'O'` option, `'-'` the `--`), counting the `--` it swallows.
fn match_argument(nargs: usize, pattern: &[u8]) -> Option<usize> {
    let dashes = pattern.iter().take_while(|&&p| p == b'-').count();
    if nargs == 0 {
        return Some(dashes);
    }
    if pattern.get(dashes) != Some(&b'A') {
        return None;
    }
    // `-*A-*`: only one `-` exists in a pattern, so nothing follows the `A`.
    Some(dashes + 1)
}

/// Parses the arguments after `curl` as Scrapy's `curl_parser.parse_known_args` does.
///
/// # Errors
///
/// argparse's errors, with Scrapy's prefix: an ambiguous abbreviation, an option
/// without its value, an explicit value given to a flag, no URL; `-h` / `--help`
/// (argparse prints the help and exits).
pub fn parse_curl_args(args: &[String]) -> Result<CurlArgs, CurlError> {
    let mut pattern = Vec::with_capacity(args.len());
    let mut options: Vec<Option<OptTuple>> = Vec::with_capacity(args.len());
    let mut after_dashes = false;
    for arg in args {
        if after_dashes {
            pattern.push(b'A');
            options.push(None);
        } else if arg == "--" {
            after_dashes = true;
            pattern.push(b'-');
            options.push(None);
        } else {
            let t = parse_optional(arg)?;
            pattern.push(if t.is_some() { b'O' } else { b'A' });
            options.push(t);
        }
    }
    let mut parsed = CurlArgs::default();
    let mut url_seen = false;
    let max_option = options.iter().rposition(Option::is_some);
    let mut start = 0usize;

    // Takes the positional URL from `start` if the pattern there allows it.
    let consume_positionals = |start: usize, parsed: &mut CurlArgs, url_seen: &mut bool| -> usize {
        if *url_seen {
            return start;
        }
        match match_argument(1, &pattern[start..]) {
            Some(n) => {
                let values = strip_dashes(&args[start..start + n]);
                parsed.url = values.into_iter().next();
                *url_seen = true;
                start + n
            }
            None => start,
        }
    };

    if let Some(max_option) = max_option {
        while start <= max_option {
            let next = (start..args.len())
                .find(|&i| options[i].is_some())
                .unwrap_or(max_option);
            if start != next {
                let end = consume_positionals(start, &mut parsed, &mut url_seen);
                if end > start {
                    start = end;
                    continue;
                }
            }
            if options[start].is_none() {
                parsed.extras.extend(args[start..next].iter().cloned());
                start = next;
            }
            start = consume_optional(args, &pattern, &options, start, &mut parsed)?;
        }
    }
    let stop = consume_positionals(start, &mut parsed, &mut url_seen);
    parsed.extras.extend(args[stop..].iter().cloned());
    if !url_seen {
        return Err(err("the following arguments are required: url"));
    }
    Ok(parsed)
}

/// argparse's `_get_values` for one-string actions: the first `--` removed.
fn strip_dashes(values: &[String]) -> Vec<String> {
    let mut v = values.to_vec();
    if let Some(i) = v.iter().position(|s| s == "--") {
        v.remove(i);
    }
    v
}

/// argparse's `consume_optional` at `index`; returns the index after its strings.
fn consume_optional(
    args: &[String],
    pattern: &[u8],
    options: &[Option<OptTuple>],
    index: usize,
    parsed: &mut CurlArgs,
) -> Result<usize, CurlError> {
    let Some(t) = options[index].clone() else {
        return Ok(index + 1);
    };
    let OptTuple {
        act,
        mut option,
        mut explicit,
    } = t;
    let Some(mut act) = act else {
        parsed.extras.push(args[index].clone());
        return Ok(index + 1);
    };
    let mut taken: Vec<(Act, Vec<String>)> = Vec::new();
    let stop;
    loop {
        if let Some(arg) = explicit.take() {
            let count = match_argument(act.nargs(), b"A").unwrap_or(0);
            let second = option.chars().nth(1);
            if count == 0 && second != Some('-') && !arg.is_empty() {
                taken.push((act, Vec::new()));
                let mut chars = arg.chars();
                let first = chars.next().unwrap_or('-');
                option = format!("-{first}");
                let rest: String = chars.collect();
                match lookup(&option) {
                    Some(next) => {
                        act = next;
                        explicit = (!rest.is_empty()).then_some(rest);
                    }
                    None => {
                        return Err(err(format!(
                            "argument {}: ignored explicit argument {}",
                            act.name(),
                            py_repr(&arg)
                        )));
                    }
                }
            } else if count == 1 {
                stop = index + 1;
                taken.push((act, vec![arg]));
                break;
            } else {
                return Err(err(format!(
                    "argument {}: ignored explicit argument {}",
                    act.name(),
                    py_repr(&arg)
                )));
            }
        } else {
            let from = index + 1;
            let count = match_argument(act.nargs(), &pattern[from..])
                .ok_or_else(|| err(format!("argument {}: expected one argument", act.name())))?;
            stop = from + count;
            taken.push((act, strip_dashes(&args[from..stop])));
            break;
        }
    }
    for (act, values) in taken {
        take_action(act, values, parsed)?;
    }
    Ok(stop)
}

fn take_action(act: Act, values: Vec<String>, parsed: &mut CurlArgs) -> Result<(), CurlError> {
    let value = values.into_iter().next();
    match act {
        Act::Help => Err(CurlError(
            "-h/--help: argparse prints the curl parser's help and exits (Scrapy raises SystemExit)"
                .into(),
        )),
        Act::Header => {
            parsed.headers.extend(value);
            Ok(())
        }
        Act::Cookie => {
            parsed.cookies.extend(value);
            Ok(())
        }
        Act::Request => {
            parsed.method = value;
            Ok(())
        }
        Act::User => {
            parsed.auth = value;
            Ok(())
        }
        Act::Data => {
            let value = value.unwrap_or_default();
            let value = value.strip_prefix('$').unwrap_or(&value);
            parsed.data = Some(match parsed.data.take() {
                Some(previous) => format!("{previous}&{value}"),
                None => value.to_owned(),
            });
            Ok(())
        }
        Act::Compressed | Act::Silent | Act::Verbose | Act::Progress => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shlex_splits_as_posix_shells_quote() {
        let s = |x: &str| shlex_split(x).unwrap();
        assert_eq!(s("a 'b c' \"d\\\"e\" f\\ g"), ["a", "b c", "d\"e", "f g"]);
        assert_eq!(s("'' x"), ["", "x"]);
        assert_eq!(s("\"a\\$b\""), ["a\\$b"]);
        assert_eq!(s("a \\\n b"), ["a", "\n", "b"]);
        assert!(shlex_split("'a").is_err());
        assert!(shlex_split("a\\").is_err());
    }
}
