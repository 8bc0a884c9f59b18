//! Errors the lab reports to its user: one line, a cause, and the exit code it maps to.

use std::fmt;

/// Exit code for bad input and for an environment the lab cannot use (no driver, no GPU,
/// device index out of range, PTX the driver rejects).
pub const EXIT_USAGE: i32 = 2;
/// Exit code when a kernel's result did not match its CPU reference.
pub const EXIT_WRONG_RESULT: i32 = 1;

/// A refusal the user can act on: the message names the problem and the allowed range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}

/// Returns `Err(Refusal)` built from a format string.
#[macro_export]
macro_rules! refuse {
    ($($arg:tt)*) => {
        return Err($crate::error::Refusal(format!($($arg)*)).into())
    };
}
