//! L7: the `trawl` command — `bench`, `crawl`, `fetch`, `shell`, `new`, `serve` — as
//! Scrapy users know `scrapy bench`, `crawl`, `fetch`, `shell`, `startproject`; and a
//! user's project ([`Project`]) with `crawl NAME`, `list`, `parse`, `check`.
//!
//! This module owns what only a command needs: argument parsing (hand-written: the
//! grammar is small and a parser crate would double the binary's build time), the
//! Scrapy-style log (`2026-11-29 22:49:00 [trawl.crawl.engine] INFO: ...`, trawl's
//! managed logger with the crawl's `LOG_*` settings), the optional live progress line,
//! and Ctrl+C handling (`crawl::ShutdownSignals`) — the first SIGINT/SIGTERM closes the
//! spiders gracefully (in-flight requests finish, feeds are closed, the stats are
//! dumped), the second exits at once. Every crawl runs through a `CrawlerRunner`, so a
//! project's `crawl a b c` runs several spiders in one process.
//!
//! Exit codes: 0 success, 1 a failed crawl or download, 2 a usage error (one line on
//! stderr), 130 a forced stop.

mod args;
mod commands;
mod fetch;
mod new;
mod project;
mod run;
mod shell;

pub use crate::util::peak_rss;
pub use args::{Args, UsageError};
pub use commands::HELP;
pub use project::{Project, SpiderArgs, SpiderFactory};
pub use run::{
    CliError, apply_common, feed_process_params_from_cli, init_logging, run_crawl, startup_note,
};

use run::one_line;

/// Runs the command line `argv` (without the program name); returns the exit code.
pub fn main(argv: Vec<String>) -> i32 {
    let code = main_inner(argv);
    crate::crawl::logoutput::end_stdout_redirect();
    code
}

fn main_inner(argv: Vec<String>) -> i32 {
    let args = match Args::parse(argv) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("trawl: error: {} (see trawl --help)", one_line(&e.0));
            return 2;
        }
    };
    match commands::run(args) {
        Ok(code) => code,
        Err(CliError::Usage(e)) => {
            eprintln!("trawl: error: {} (see trawl --help)", one_line(&e));
            2
        }
        Err(CliError::Failed(msg)) => {
            eprintln!("trawl: {}", one_line(&msg));
            1
        }
    }
}
