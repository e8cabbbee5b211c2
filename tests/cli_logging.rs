//! Scrapy's logging settings through the `trawl` binary: `LOG_FILE` with
//! `LOG_FILE_APPEND`, `LOG_FORMAT` (trawl's `%(spider)s` too), `LOG_DATEFORMAT`,
//! `LOG_SHORT_NAMES`, `LOG_STDOUT`, `LOG_ENCODING`, `LOG_FORMATTER` by name, and a bad
//! format refused before the crawl starts.

use std::path::Path;
use std::process::{Command, Output};

use trawl::testing::{FixtureOptions, FixtureServer, TempDir};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trawl"))
        .args(args)
        .output()
        .expect("trawl runs")
}

fn server() -> FixtureServer {
    FixtureServer::start(FixtureOptions {
        pages: 20,
        ..FixtureOptions::default()
    })
    .expect("fixture server")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn log_file_format_dateformat_and_short_names() {
    let srv = server();
    let dir = TempDir::new("log").expect("dir");
    let log = dir.join("crawl.log");
    let log_s = log.to_str().expect("utf-8");
    let args = |append: bool| -> Vec<String> {
        [
            "crawl",
            &srv.url("/index.html"),
            "--same-domain",
            "-s",
            &format!("LOG_FILE={log_s}"),
            "-s",
            &format!("LOG_FILE_APPEND={}", if append { "True" } else { "False" }),
            "-s",
            "LOG_FORMAT=%(levelname)-8s|%(name)s|%(spider)s|%(asctime)s|%(message)s",
            "-s",
            "LOG_DATEFORMAT=%Y/%m/%d",
            "-s",
            "LOG_SHORT_NAMES=True",
            "-s",
            "LOG_LEVEL=INFO",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
    };
    let argv = args(false);
    let o = run(&argv.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = read(&log);
    let opened = text
        .lines()
        .find(|l| l.contains("Spider opened"))
        .unwrap_or_else(|| panic!("no Spider opened line in {text}"));
    // `INFO    |trawl|<spider>|YYYY/MM/DD|Spider opened`
    let fields: Vec<&str> = opened.split('|').collect();
    assert_eq!(fields[0], "INFO    ", "{opened}");
    assert_eq!(fields[1], "trawl", "short names: {opened}");
    assert!(!fields[2].is_empty(), "the crawl's spider: {opened}");
    assert_eq!(fields[3].len(), 10, "the date format: {opened}");
    assert_eq!(&fields[3][4..5], "/");
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("Spider opened"),
        "the crawl's records go to its LOG_FILE"
    );
    let once = text.matches("Spider opened").count();
    // Appending keeps the first run's lines; truncating starts again.
    let o = run(&args(true).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success());
    assert_eq!(read(&log).matches("Spider opened").count(), 2 * once);
    let o = run(&args(false).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success());
    assert_eq!(read(&log).matches("Spider opened").count(), once);
}

#[test]
fn a_bad_log_format_or_encoding_is_refused_before_the_crawl() {
    let srv = server();
    for (setting, needle) in [
        ("LOG_FORMAT=%(nosuchfield)s", "LOG_FORMAT"),
        ("LOG_ENCODING=latin-1", "LOG_ENCODING"),
        ("LOG_FORMATTER=no.such.Formatter", "no.such.Formatter"),
    ] {
        let o = run(&["crawl", &srv.url("/index.html"), "-s", setting]);
        assert!(!o.status.success(), "{setting}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(needle), "{setting}: {err}");
        assert!(
            !err.contains("Spider opened"),
            "{setting}: refused before the crawl"
        );
    }
}

#[test]
fn log_stdout_sends_printed_lines_to_the_log() {
    // `trawl fetch` prints the body to stdout: with LOG_STDOUT it becomes log lines
    // under the name `stdout`.
    let srv = server();
    let o = run(&[
        "fetch",
        &srv.url("/robots.txt"),
        "-s",
        "LOG_STDOUT=True",
        "-s",
        "LOG_LEVEL=INFO",
        "-L",
        "INFO",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.lines().any(|l| l.contains("[stdout] INFO: User-agent")),
        "{err}"
    );
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("User-agent"),
        "nothing printed reaches the real stdout"
    );
}
