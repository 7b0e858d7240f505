//! `hakaru serve`: the built-in target in the foreground until a signal.

use std::process::ExitCode;

use crate::cli::args::ServeArgs;
use crate::error::CliError;

pub fn serve(args: &ServeArgs) -> Result<ExitCode, CliError> {
    let opts = crate::plan::serve_options(args)?;
    crate::serve::run_until_signal(opts).map_err(|e| CliError::runtime(format!("serve: {e:#}")))?;
    Ok(ExitCode::SUCCESS)
}
