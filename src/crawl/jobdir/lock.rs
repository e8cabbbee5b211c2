//! The JOBDIR's `lock` file: an exclusive `flock` held for as long as a [`Job`] is open,
//! so that a second crawl cannot share (and corrupt) the directory.
//!
//! `flock` belongs to an open file description, and `fork` copies descriptors: a
//! multi-threaded embedder that starts a child process while a job is open lends the
//! child a copy of the lock until the child's `exec` closes it (the descriptor is
//! close-on-exec). A job closed and reopened in that window would find its own, already
//! released, lock still held. This module tells the two cases apart: a process-wide
//! registry knows which directories this process really holds, and a lock that the file
//! says is ours but the registry does not list is waited for, briefly, instead of being
//! reported as another crawl.
//!
//! [`Job`]: super::Job

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::defer::Failure;

/// The directories whose lock this process holds through an open [`DirLock`].
/// A JOBDIR I/O error naming the path.
pub(super) fn io_err(path: &Path) -> impl Fn(std::io::Error) -> Failure + '_ {
    move |e| Failure::msg(format!("JOBDIR {}: {e}", path.display()))
}

static HELD: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// How long a lock that only a forked child's inherited descriptor can hold is waited
/// for: the window between that child's `fork` and its `exec`.
const INHERITED_WAIT: Duration = Duration::from_secs(2);

/// The held lock of one JOBDIR; released when dropped.
#[derive(Debug)]
pub(super) struct DirLock {
    _file: File,
    key: PathBuf,
}

impl Drop for DirLock {
    fn drop(&mut self) {
        HELD.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|k| *k != self.key);
    }
}

/// Takes the exclusive lock of `dir` (which exists), writing this process's pid into it.
///
/// # Errors
///
/// The directory is in use by another process, or by another open job of this one; or
/// the lock file cannot be opened.
pub(super) fn lock_dir(dir: &Path) -> Result<DirLock, Failure> {
    let path = dir.join("lock");
    let key = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .read(true)
        .write(true)
        .truncate(false)
        .open(&path)
        .map_err(io_err(&path))?;
    let ours = format!("pid {}", std::process::id());
    let started = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) => {
                let owner = std::fs::read_to_string(&path).unwrap_or_default();
                let owner = owner.trim();
                let inherited = owner == ours && !is_held(&key);
                if !inherited || started.elapsed() >= INHERITED_WAIT {
                    return Err(Failure::msg(format!(
                        "JOBDIR {} is in use by another process ({owner}); two crawls must \
                         not share a JOBDIR",
                        dir.display(),
                    )));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io_err(&path)(e)),
        }
    }
    file.set_len(0).map_err(io_err(&path))?;
    let _ = write!(file, "{ours}");
    HELD.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(key.clone());
    Ok(DirLock { _file: file, key })
}

fn is_held(key: &Path) -> bool {
    HELD.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .any(|k| k == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("trawl-lock-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).ok();
        dir
    }

    #[test]
    fn a_second_open_job_of_this_process_is_refused_at_once() {
        let dir = tmp("twice");
        let first = lock_dir(&dir).map_err(|e| e.to_string());
        assert!(first.is_ok(), "{first:?}");
        let started = Instant::now();
        let second = lock_dir(&dir);
        assert!(second.is_err());
        assert!(started.elapsed() < INHERITED_WAIT);
        drop(first);
        assert!(lock_dir(&dir).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_lock_only_a_forked_child_still_holds_is_waited_for() {
        let dir = tmp("inherited");
        let lock = lock_dir(&dir).map_err(|e| e.to_string());
        let Ok(lock) = lock else {
            panic!("{lock:?}");
        };
        // A second descriptor on the same open file description stands in for the
        // child's inherited copy: it keeps the flock after the job lets go.
        let copy = lock._file.try_clone().map_err(|e| e.to_string());
        let Ok(copy) = copy else {
            panic!("{copy:?}");
        };
        drop(lock);
        assert!(!is_held(
            &std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone())
        ));
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            drop(copy);
        });
        let again = lock_dir(&dir).map_err(|e| e.to_string());
        assert!(again.is_ok(), "{again:?}");
        let _ = releaser.join();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
