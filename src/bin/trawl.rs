//! The `trawl` command: `trawl bench | crawl | fetch | serve` (see `trawl --help`).
//!
//! The library forbids `unsafe`; the one system call it needs that `std` does not
//! offer — raising the open-files soft limit to the hard limit at start, as many servers
//! do, so that a thousand concurrent connections do not hit EMFILE — lives here.

// mimalloc is the global allocator (the default feature `mimalloc`, built with
// `no_thp`: less CPU per page, the same resident memory; benches/RESULTS.md);
// `--no-default-features` builds on the system allocator.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    if let Some(note) = raise_open_files_limit() {
        trawl::cli::startup_note(note);
    }
    std::process::exit(trawl::cli::main(std::env::args().skip(1).collect()));
}

/// Raises `RLIMIT_NOFILE`'s soft limit to its hard limit; says what it did.
#[cfg(unix)]
fn raise_open_files_limit() -> Option<String> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed by pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) } != 0 {
        return None;
    }
    if limit.rlim_cur >= limit.rlim_max {
        return None;
    }
    let old = limit.rlim_cur;
    limit.rlim_cur = limit.rlim_max;
    // SAFETY: as above.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raw const limit) } != 0 {
        return Some(format!(
            "Could not raise the open files limit above {old}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Some(format!(
        "Raised the open files limit from {old} to {} (the hard limit)",
        limit.rlim_max
    ))
}

#[cfg(not(unix))]
fn raise_open_files_limit() -> Option<String> {
    None
}
