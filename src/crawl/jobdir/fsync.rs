//! [`FsyncPolicy`]: when the job's feeds and journal are fsynced (`JOBDIR_FSYNC`).

use serde_json::Value;

use crate::defer::Failure;

/// When to fsync (`JOBDIR_FSYNC`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FsyncPolicy {
    /// Every commit.
    Always,
    /// Every this many seconds (group commit).
    Interval(f64),
    /// Never (process crashes only).
    Never,
}

impl FsyncPolicy {
    /// Parses `always`, `never` or a number of seconds.
    ///
    /// # Errors
    ///
    /// Anything else.
    pub fn parse(v: &Value) -> Result<Self, Failure> {
        let bad = || {
            Failure::msg(format!(
                "JOBDIR_FSYNC must be \"always\", \"never\" or seconds, not {v}"
            ))
        };
        match v {
            Value::String(s) if s.eq_ignore_ascii_case("always") => Ok(Self::Always),
            Value::String(s) if s.eq_ignore_ascii_case("never") => Ok(Self::Never),
            Value::String(s) => s
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x > 0.0)
                .map(Self::Interval)
                .ok_or_else(bad),
            Value::Number(n) => n
                .as_f64()
                .filter(|x| x.is_finite() && *x > 0.0)
                .map(Self::Interval)
                .ok_or_else(bad),
            Value::Null => Ok(Self::Interval(1.0)),
            _ => Err(bad()),
        }
    }
}
