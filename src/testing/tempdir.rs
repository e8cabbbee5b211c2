//! [`TempDir`]: a directory for one test's files, removed when the test ends.
//!
//! Tests that write journals, feeds or caches make one per test; a passing test leaves
//! nothing behind in the system's temporary directory, a failing one (the thread is
//! panicking when the guard drops) keeps its files for inspection and says where.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A fresh, empty directory under [`std::env::temp_dir`], named
/// `trawl-<label>-<pid>-<n>`; removed with its contents on drop, unless the dropping
/// thread is panicking.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// Creates the directory.
    ///
    /// # Errors
    ///
    /// The directory cannot be created.
    pub fn new(label: &str) -> std::io::Result<Self> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("trawl-{label}-{}-{n}", std::process::id()));
        // A directory of that name left by an earlier process with the same pid.
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)?;
        Ok(Self { path })
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept for inspection: {}", self.path.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_temp_dir_is_fresh_and_gone_after_its_guard() {
        let a = TempDir::new("tempdir-test").map_err(|e| e.to_string());
        let a = a.unwrap_or_else(|e| panic!("{e}"));
        let b = TempDir::new("tempdir-test").map_err(|e| e.to_string());
        let b = b.unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(a.path(), b.path());
        assert!(std::fs::write(a.join("f"), b"x").is_ok());
        let kept = a.path().to_path_buf();
        drop(a);
        assert!(!kept.exists(), "removed with its contents");
        assert!(b.path().is_dir());
    }
}
