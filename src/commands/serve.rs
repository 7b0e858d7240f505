//! `hakaru serve`: the built-in target in the foreground until a signal.

use std::process::ExitCode;

use crate::cli::args::ServeArgs;
use crate::error::UsageError;

pub fn serve(args: &ServeArgs) -> Result<ExitCode, UsageError> {
    let opts = crate::plan::serve_options(args)?;
    crate::serve::run_until_signal(opts).map_err(|e| UsageError::runtime(format!("serve: {e:#}")))?;
    Ok(ExitCode::SUCCESS)
}
