//! The `hakaru` binary: parses the command line and dispatches to a command; everything else is in the library,
//! so tests can call it in-process.

use clap::Parser;
use hakaru::cli::args::Cli;

fn main() -> std::process::ExitCode {
    match Cli::try_parse() {
        Ok(cli) => hakaru::commands::dispatch(cli.command),
        Err(e) => hakaru::commands::clap_error(e),
    }
}
