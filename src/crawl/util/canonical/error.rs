//! [`CanonicalizeError`] and the reasons of the URL functions' errors, as the Python
//! exception texts w3lib and CPython raise.

use std::fmt;

/// The error `w3lib.url.canonicalize_url` raises for a URL (always a
/// `ValueError` or a subclass in Python).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonicalizeError {
    /// The URL that was given.
    pub url: String,
    /// Why it was rejected, prefixed with the Python exception type.
    pub reason: String,
}

impl fmt::Display for CanonicalizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot canonicalize {:?}: {}", self.url, self.reason)
    }
}

impl std::error::Error for CanonicalizeError {}

/// Python's `ValueError("Invalid IPv6 URL")` and friends: the reason text.
pub type Reason = &'static str;

pub const INVALID_IPV6: Reason = "ValueError: Invalid IPv6 URL";
