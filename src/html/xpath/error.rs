//! [`XPathError`]: a malformed expression, or an evaluation that failed.

use std::fmt;

/// A malformed expression (with the character position where parsing stopped) or an
/// evaluation error (undefined variable, wrong argument type, invalid regex).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XPathError {
    position: Option<usize>,
    message: String,
}

impl XPathError {
    pub(crate) fn new(position: usize, message: impl Into<String>) -> Self {
        Self {
            position: Some(position),
            message: message.into(),
        }
    }

    pub(crate) fn runtime(message: impl Into<String>) -> Self {
        Self {
            position: None,
            message: message.into(),
        }
    }

    /// The character offset in the expression of a syntax error.
    pub fn position(&self) -> Option<usize> {
        self.position
    }

    /// What went wrong.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for XPathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some(p) => write!(f, "XPath error: {} at position {p}", self.message),
            None => write!(f, "XPath error: {}", self.message),
        }
    }
}

impl std::error::Error for XPathError {}
