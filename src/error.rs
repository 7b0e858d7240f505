//! The one error type users see: a line saying what is wrong and how to fix it, and the exit code it maps to.

use std::fmt;

/// Exit code for bad input, as the developers' guide asks.
pub const EXIT_USAGE: u8 = 2;

/// An environment variable naming a file that a command ending in failure writes a line to (its exit code and
/// why): a Kubernetes agent sets it, so the collector knows the agent's document will never come.
pub const FAILURE_FILE_VAR: &str = "HAKARU_FAILURE_FILE";

/// What a command ends with when it cannot succeed, in one line: bad input (`new`, exit 2) or a failure at run time
/// (`runtime`, exit 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    message: String,
    runtime: bool,
}

impl CliError {
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), runtime: false }
    }

    /// Not the user's input: something failed while running (exit code 1).
    pub fn runtime(message: impl Into<String>) -> Self {
        Self { message: message.into(), runtime: true }
    }

    pub fn exit_code(&self) -> u8 {
        if self.runtime { 1 } else { EXIT_USAGE }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}
