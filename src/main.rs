//! The `hakaru` binary: parses the command line and dispatches to a command; everything else is in the library,
//! so tests can call it in-process.

use clap::Parser;
use hakaru::cli::args::Cli;

fn main() -> std::process::ExitCode {
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Arguments holding secrets, handed over by the process that started this one (an agent, a study's case): read
    // here, never seen in `ps`; taken out of the environment so they reach no further child by accident.
    // A Docker secret reaches the agent as a file (HAKARU_SECRET_ARGS_FILE), read the same way.
    match hakaru::base::secrets::take_secret_args() {
        Ok(args) => argv.extend(args.into_iter().map(Into::into)),
        Err(said) => {
            hakaru::eprintln!("hakaru: error: {said}");
            hakaru::commands::mark_failure(&format!("exit code 2: {said}"));
            return std::process::ExitCode::from(2);
        }
    }
    // `hakaru URL` (oha's and hey's form) runs as `hakaru run URL`, saying so.
    if let Some((with_run, note)) = hakaru::commands::habits::implied_run(&argv) {
        hakaru::eprintln!("hakaru: note: {note}");
        argv = with_run;
    }
    // A peer's flag hakaru does not have, or would read otherwise (oha's `-q 1000`): one line naming hakaru's.
    if let Some(said) = hakaru::commands::habits::misread(&argv) {
        hakaru::eprintln!("hakaru: error: {said}");
        hakaru::commands::mark_failure(&format!("exit code 2: {said}"));
        return std::process::ExitCode::from(2);
    }
    match Cli::try_parse_from(argv) {
        Ok(cli) => {
            hakaru::commands::also_secret(&cli.redact_header, &cli.redact_param);
            hakaru::commands::dispatch(cli.command)
        }
        Err(e) => hakaru::commands::clap_error(e),
    }
}
