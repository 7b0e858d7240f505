//! The commands, one file each: each turns its raw flags into a plan, calls the library, and hands the result to
//! the exporters. [`dispatch`] runs one; [`clap_error`] reports flags clap refused.

pub mod agents;
pub mod capacity;
pub mod chart;
pub mod compare;
pub mod demo;
pub mod habits;
pub mod history;
pub mod k8s;
pub mod kv;
pub mod merge;
pub mod patterns;
pub mod report;
pub mod run;
pub mod serve;
pub mod study;
pub mod sweep;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::cli::args::Command;
use crate::error::EXIT_USAGE;
use crate::plan::steps::StepsPlan;

/// `--redact-header` and `--redact-param`: the names join the ones the environment already gives, in the
/// environment, so every process this one starts (agents, a study's cases) hides them too. Called first thing, before
/// any thread starts and before anything is redacted.
pub fn also_secret(headers: &[String], params: &[String]) {
    for (var, names) in [(crate::secrets::REDACT_HEADERS_VAR, headers), (crate::secrets::REDACT_PARAMS_VAR, params)] {
        if names.is_empty() {
            continue;
        }
        let mut all: Vec<String> = std::env::var(var).ok().into_iter().filter(|v| !v.is_empty()).collect();
        all.extend(names.iter().cloned());
        // SAFETY: called from main before any other thread exists, so nothing reads the environment meanwhile.
        unsafe { std::env::set_var(var, all.join(",")) };
    }
}

/// Runs the command, and maps every failure to one line and an exit code.
pub fn dispatch(command: Command) -> ExitCode {
    let interrupt = Arc::new(AtomicBool::new(false));
    // The first SIGINT, SIGTERM or SIGHUP stops the load and keeps what was measured; a second ends at once.
    // `serve` waits for its own signals.
    if !matches!(command, Command::Serve(_)) {
        crate::stop::install(&interrupt);
    }
    for line in habits::notes(&command) {
        eprintln!("hakaru: {line}");
    }
    if let Some(asked) = agents::asked(&command) {
        return match agents::run_agents(&asked, &interrupt) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("hakaru: error: {}", crate::secrets::scrub_text(&e.to_string()));
                ExitCode::from(e.exit_code())
            }
        };
    }
    let outcome = match command {
        Command::Run(args) => run::run(&args, &interrupt),
        Command::Sweep(args) => sweep::sweep(&args, &interrupt),
        Command::Capacity(args) => capacity::capacity(&args, &interrupt),
        Command::Patterns(cmd) => patterns::patterns(&cmd),
        Command::Serve(args) => serve::serve(&args),
        Command::Demo(args) => demo::demo(&args, &interrupt),
        Command::Kv(args) => kv::kv(&args, &interrupt),
        Command::Merge(args) => merge::merge(&args),
        Command::History(args) => history::list(&args),
        Command::Show(args) => history::show(&args),
        Command::Export(args) => history::export(&args),
        Command::Import(args) => history::import(&args),
        Command::Compare(args) => compare::compare(&args),
        Command::Report(args) => report::report(&args),
        Command::Chart(args) => chart::chart(&args),
        Command::Study(args) => study::study(&args, &interrupt),
        Command::K8s(cmd) => k8s::k8s(&cmd),
    };
    let (code, failure) = match outcome {
        Ok(code) => (code, (code != ExitCode::SUCCESS).then(|| "exited with a failure code".to_string())),
        Err(e) => {
            // Whatever a message quotes (a URL with its password, a header), its secrets stay hidden, here and in
            // the failure file.
            let said = crate::secrets::scrub_text(&e.to_string());
            eprintln!("hakaru: error: {said}");
            (ExitCode::from(e.exit_code()), Some(format!("exit code {}: {said}", e.exit_code())))
        }
    };
    if let Some(why) = failure {
        mark_failure(&why);
    }
    code
}

/// Writes why the command failed to the file `HAKARU_FAILURE_FILE` names, when it is set (a Kubernetes agent):
/// whole or not at all (a rename), and a failure to write it is only said, never a second failure.
fn mark_failure(why: &str) {
    let Some(path) = std::env::var_os(crate::error::FAILURE_FILE_VAR) else { return };
    let path = std::path::PathBuf::from(path);
    if let Err(e) = crate::export::write_atomically(&path, &format!("{why}\n")) {
        eprintln!("hakaru: cannot write the failure file {} ({e})", path.display());
    }
}

/// Prints clap's own help and version as they are, and its errors as one line with the fix.
pub fn clap_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand => {
            let _ = e.print();
            ExitCode::from(EXIT_USAGE)
        }
        _ => {
            eprintln!("hakaru: error: {} (see 'hakaru help' for the flags)", clap_error_line(&e));
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// A flag clap refused, in one line (without the hint where to look).
pub(crate) fn clap_error_line(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    if e.kind() == clap::error::ErrorKind::MissingRequiredArgument {
        // clap lists the missing flags on the lines below its first: keep them on the one line.
        let missing: Vec<&str> = rendered.lines().skip(1).map(str::trim).take_while(|l| !l.is_empty()).collect();
        return format!("a required flag is missing: {}", missing.join(" "));
    }
    rendered.lines().next().unwrap_or("bad arguments").trim_start_matches("error: ").to_string()
}

/// The probe names for the table header of a sweep or capacity search.
fn probe_names(plan: &StepsPlan) -> Vec<&str> {
    plan.watchers.probes.iter().map(|p| p.name.as_str()).collect()
}
