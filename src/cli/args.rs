//! Command-line parsing: `trawl <command> [options] [arguments]`, Scrapy's flags.

use std::collections::HashMap;
use std::fmt;

/// A usage error: one line for stderr; the command exits with code 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// An option: its canonical name, its spellings, whether it takes a value, and the
/// commands that accept it (empty: all).
struct Opt {
    name: &'static str,
    spellings: &'static [&'static str],
    value: bool,
    commands: &'static [&'static str],
}

const COMMON: &[&str] = &["crawl", "fetch", "bench", "parse", "check", "shell"];

const OPTS: &[Opt] = &[
    Opt {
        name: "help",
        spellings: &["-h", "--help"],
        value: false,
        commands: &[],
    },
    Opt {
        name: "s",
        spellings: &["-s", "--set"],
        value: true,
        commands: COMMON,
    },
    Opt {
        name: "o",
        spellings: &["-o", "--output"],
        value: true,
        commands: &["crawl", "bench"],
    },
    Opt {
        name: "O",
        spellings: &["-O", "--overwrite-output"],
        value: true,
        commands: &["crawl", "bench"],
    },
    Opt {
        name: "loglevel",
        spellings: &["-L", "--loglevel"],
        value: true,
        commands: &[],
    },
    Opt {
        name: "logfile",
        spellings: &["--logfile"],
        value: true,
        commands: &[],
    },
    Opt {
        name: "progress",
        spellings: &["--progress"],
        value: false,
        commands: &["crawl", "bench"],
    },
    Opt {
        name: "metrics",
        spellings: &["--metrics"],
        value: true,
        commands: &["crawl", "bench"],
    },
    Opt {
        name: "metrics-token",
        spellings: &["--metrics-token"],
        value: true,
        commands: &["crawl", "bench"],
    },
    Opt {
        name: "allow",
        spellings: &["--allow"],
        value: true,
        commands: &["crawl"],
    },
    Opt {
        name: "deny",
        spellings: &["--deny"],
        value: true,
        commands: &["crawl"],
    },
    Opt {
        name: "depth",
        spellings: &["--depth"],
        value: true,
        commands: &["crawl"],
    },
    Opt {
        name: "same-domain",
        spellings: &["--same-domain"],
        value: false,
        commands: &["crawl"],
    },
    Opt {
        name: "jobdir",
        spellings: &["--jobdir"],
        value: true,
        commands: &["crawl"],
    },
    Opt {
        name: "jobdir-salvage",
        spellings: &["--jobdir-salvage"],
        value: false,
        commands: &["crawl"],
    },
    Opt {
        name: "redis",
        spellings: &["--redis"],
        value: true,
        commands: &["crawl"],
    },
    Opt {
        name: "redis-start-key",
        spellings: &["--redis-start-key"],
        value: true,
        commands: &["crawl"],
    },
    Opt {
        name: "a",
        spellings: &["-a"],
        value: true,
        commands: &["crawl", "parse", "check"],
    },
    Opt {
        name: "spider",
        spellings: &["--spider"],
        value: true,
        commands: &["parse"],
    },
    Opt {
        name: "callback",
        spellings: &["-c", "--callback"],
        value: true,
        commands: &["parse"],
    },
    Opt {
        name: "trawl-path",
        spellings: &["--trawl-path"],
        value: true,
        commands: &["new"],
    },
    Opt {
        name: "name",
        spellings: &["--name"],
        value: true,
        commands: &["crawl"],
    },
    Opt {
        name: "headers",
        spellings: &["--headers"],
        value: false,
        commands: &["fetch"],
    },
    Opt {
        name: "no-redirect",
        spellings: &["--no-redirect"],
        value: false,
        commands: &["fetch"],
    },
    Opt {
        name: "H",
        spellings: &["-H", "--header"],
        value: true,
        commands: &["fetch"],
    },
    Opt {
        name: "X",
        spellings: &["-X", "--request"],
        value: true,
        commands: &["fetch"],
    },
    Opt {
        name: "d",
        spellings: &["-d", "--data"],
        value: true,
        commands: &["fetch"],
    },
    Opt {
        name: "pages",
        spellings: &["--pages"],
        value: true,
        commands: &["serve", "bench"],
    },
    Opt {
        name: "port",
        spellings: &["--port"],
        value: true,
        commands: &["serve"],
    },
    Opt {
        name: "tls",
        spellings: &["--tls"],
        value: false,
        commands: &["serve"],
    },
    Opt {
        name: "hosts",
        spellings: &["--hosts"],
        value: true,
        commands: &["serve"],
    },
    Opt {
        name: "pages-per-host",
        spellings: &["--pages-per-host"],
        value: true,
        commands: &["serve"],
    },
    Opt {
        name: "names",
        spellings: &["--names"],
        value: false,
        commands: &["serve"],
    },
    Opt {
        name: "broad",
        spellings: &["--broad"],
        value: false,
        commands: &["crawl"],
    },
    Opt {
        name: "urls-file",
        spellings: &["--urls-file"],
        value: true,
        commands: &["serve", "crawl"],
    },
    Opt {
        name: "hosts-file",
        spellings: &["--hosts-file"],
        value: true,
        commands: &["serve"],
    },
    Opt {
        name: "time",
        spellings: &["--time"],
        value: true,
        commands: &["bench"],
    },
    Opt {
        name: "count",
        spellings: &["--count"],
        value: true,
        commands: &["bench"],
    },
];

/// The commands.
pub const COMMANDS: &[&str] = &[
    "bench", "crawl", "fetch", "serve", "version", "help", "list", "parse", "check", "shell", "new",
];

/// A parsed command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Args {
    /// The command (`help` when none was given).
    pub command: String,
    /// Positional arguments.
    pub positional: Vec<String>,
    options: HashMap<String, Vec<String>>,
}

impl Args {
    /// Parses `argv` (without the program name).
    ///
    /// # Errors
    ///
    /// An unknown command or option, an option without its value, an option the
    /// command does not take.
    pub fn parse(argv: Vec<String>) -> Result<Self, UsageError> {
        let mut it = argv.into_iter().peekable();
        let mut args = Self::default();
        let first = it.next().unwrap_or_else(|| "help".to_owned());
        args.command = match first.as_str() {
            "-h" | "--help" => "help".to_owned(),
            "--version" | "-V" => "version".to_owned(),
            c if COMMANDS.contains(&c) => c.to_owned(),
            c if c.starts_with('-') => {
                return Err(UsageError(format!("expected a command before {c}")));
            }
            c => return Err(UsageError(format!("unknown command {c:?}"))),
        };
        let mut only_positional = false;
        while let Some(tok) = it.next() {
            if only_positional || !tok.starts_with('-') || tok == "-" {
                args.positional.push(tok);
                continue;
            }
            if tok == "--" {
                only_positional = true;
                continue;
            }
            // --name=value, -sNAME=VALUE
            let (spelling, inline) = if let Some(rest) = tok.strip_prefix("--") {
                match rest.split_once('=') {
                    Some((n, v)) => (format!("--{n}"), Some(v.to_owned())),
                    None => (tok.clone(), None),
                }
            } else if tok.len() > 2 {
                (tok[..2].to_owned(), Some(tok[2..].to_owned()))
            } else {
                (tok.clone(), None)
            };
            let opt = OPTS
                .iter()
                .find(|o| o.spellings.contains(&spelling.as_str()))
                .ok_or_else(|| UsageError(format!("unknown option {spelling}")))?;
            if !opt.commands.is_empty() && !opt.commands.contains(&args.command.as_str()) {
                return Err(UsageError(format!(
                    "trawl {} does not take {spelling}",
                    args.command
                )));
            }
            let value = if opt.value {
                match inline {
                    Some(v) => v,
                    None => it
                        .next()
                        .ok_or_else(|| UsageError(format!("{spelling} needs a value")))?,
                }
            } else {
                if inline.is_some() {
                    return Err(UsageError(format!("{spelling} takes no value")));
                }
                String::new()
            };
            args.options
                .entry(opt.name.to_owned())
                .or_default()
                .push(value);
        }
        Ok(args)
    }

    /// Every value given for option `name` (canonical name: `s`, `o`, `H`, `allow`...).
    pub fn all(&self, name: &str) -> &[String] {
        self.options.get(name).map_or(&[], Vec::as_slice)
    }

    /// The last value given for option `name`.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.all(name).last().map(String::as_str)
    }

    /// Whether flag `name` was given.
    pub fn flag(&self, name: &str) -> bool {
        self.options.contains_key(name)
    }

    /// Option `name` as a number.
    ///
    /// # Errors
    ///
    /// A value that is not a number of that type.
    pub fn number<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>, UsageError> {
        match self.value(name) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| UsageError(format!("--{name} expects a number, got {v:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Args, UsageError> {
        Args::parse(s.split_whitespace().map(str::to_owned).collect())
    }

    #[test]
    fn parses_scrapy_style_flags() {
        let a = p(
            "crawl http://a.test/ -s A=1 -sB=2 --set=C=3 -o x.jl -L DEBUG --depth 2 --same-domain",
        )
        .expect("valid");
        assert_eq!(a.command, "crawl");
        assert_eq!(a.positional, ["http://a.test/"]);
        assert_eq!(a.all("s"), ["A=1", "B=2", "C=3"]);
        assert_eq!(a.value("o"), Some("x.jl"));
        assert_eq!(a.value("loglevel"), Some("DEBUG"));
        assert_eq!(a.number::<u32>("depth"), Ok(Some(2)));
        assert!(a.flag("same-domain"));
        let a =
            p("fetch http://a.test/ -H X-A:1 -H X-B:2 -X POST -d body --headers").expect("valid");
        assert_eq!(a.all("H"), ["X-A:1", "X-B:2"]);
        assert_eq!(a.value("X"), Some("POST"));
        assert!(a.flag("headers"));
        assert_eq!(p("").expect("help").command, "help");
        assert_eq!(p("--version").expect("v").command, "version");
    }

    #[test]
    fn errors_are_one_clear_line() {
        for (line, want) in [
            ("crawl --bogus", "unknown option --bogus"),
            ("nope", "unknown command \"nope\""),
            ("crawl -s", "-s needs a value"),
            ("serve --headers", "trawl serve does not take --headers"),
            (
                "bench --same-domain",
                "trawl bench does not take --same-domain",
            ),
            ("crawl --progress=yes", "--progress takes no value"),
        ] {
            let e = p(line).expect_err(line);
            assert_eq!(e.0, want, "{line}");
            assert!(!e.0.contains('\n'));
        }
        assert!(
            p("serve --port x")
                .expect("parses")
                .number::<u16>("port")
                .is_err()
        );
    }
}
