//! The commands, one file each: each turns its raw flags into a plan, calls the library, and hands the result to
//! the exporters. [`dispatch`] runs one; [`clap_error`] reports flags clap refused.

pub mod agents;
pub mod capacity;
pub mod chart;
pub mod collect;
pub mod compare;
pub mod demo;
pub mod habits;
pub mod history;
pub mod k8s;
pub mod kv;
pub mod llm;
pub mod merge;
pub mod patterns;
pub mod report;
pub mod run;
pub mod serve;
pub mod study;
pub mod swarm;
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
    for (var, names) in
        [(crate::base::secrets::REDACT_HEADERS_VAR, headers), (crate::base::secrets::REDACT_PARAMS_VAR, params)]
    {
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
pub fn dispatch(mut command: Command) -> ExitCode {
    // An orchestrator's agent learns its segment and its files' names first: a failure here is bad input like any.
    if let Err(e) = agents::place(&mut command) {
        let said = crate::base::secrets::scrub_text(&e.to_string());
        eprintln!("hakaru: error: {said}");
        mark_failure(&format!("exit code {}: {said}", e.exit_code()));
        return ExitCode::from(e.exit_code());
    }
    let interrupt = Arc::new(AtomicBool::new(false));
    // The first SIGINT, SIGTERM or SIGHUP stops the load and keeps what was measured; a second ends at once.
    // `serve` waits for its own signals.
    if !matches!(command, Command::Serve(_)) {
        crate::base::stop::install(&interrupt);
    }
    for line in habits::notes(&command) {
        eprintln!("hakaru: {line}");
    }
    if let Some(asked) = agents::asked(&command) {
        return match agents::run_agents(&asked, &interrupt) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("hakaru: error: {}", crate::base::secrets::scrub_text(&e.to_string()));
                ExitCode::from(e.exit_code())
            }
        };
    }
    let outcome = match command {
        Command::Run(args) => run::run(&args, &interrupt),
        Command::Llm(args) => llm::llm(&args, &interrupt),
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
        Command::Swarm(cmd) => swarm::swarm(&cmd),
        Command::Collect(args) => collect::collect(&args, &interrupt),
    };
    let (code, failure) = match outcome {
        Ok(code) => (code, (code != ExitCode::SUCCESS).then(|| "exited with a failure code".to_string())),
        Err(e) => {
            // Whatever a message quotes (a URL with its password, a header), its secrets stay hidden, here and in
            // the failure file.
            let said = crate::base::secrets::scrub_text(&e.to_string());
            eprintln!("hakaru: error: {said}");
            (ExitCode::from(e.exit_code()), Some(format!("exit code {}: {said}", e.exit_code())))
        }
    };
    match failure {
        Some(why) => mark_failure(&why),
        None => mark_done(),
    }
    code
}

/// Writes why the command failed to the file `HAKARU_FAILURE_FILE` names, when it is set (an orchestrator's
/// agent; `{index}` in it is the agent's index): whole or not at all (a rename), and a failure to write it is only
/// said, never a second failure.
pub fn mark_failure(why: &str) {
    write_end_file(crate::error::FAILURE_FILE_VAR, "failure", why);
}

/// Writes `exit code 0` to the file `HAKARU_DONE_FILE` names, when it is set: every output is written by then, so
/// the collector may read the agent's document.
fn mark_done() {
    write_end_file(crate::deploy::orchestrator::DONE_FILE_VAR, "done", "exit code 0");
}

fn write_end_file(var: &str, what: &str, line: &str) {
    let Some(path) = crate::deploy::orchestrator::end_file(var) else { return };
    if let Err(e) = crate::export::write_atomically(&path, &format!("{line}\n")) {
        eprintln!("hakaru: cannot write the {what} file {} ({e})", path.display());
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
            mark_failure("exit code 2: no command given");
            ExitCode::from(EXIT_USAGE)
        }
        _ => {
            let tip = clap_error_tip(&e).map(|t| format!("; {t}")).unwrap_or_default();
            let help = own_help(std::env::args().skip(1));
            let said =
                crate::base::secrets::scrub_text(&format!("{}{tip} (see '{help}' for the flags)", clap_error_line(&e)));
            eprintln!("hakaru: error: {said}");
            // A Kubernetes agent refused by the parser must still tell the collector, which waits for it.
            mark_failure(&format!("exit code 2: {said}"));
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// clap's "did you mean": `a similar argument exists: '--connections'` (or subcommand, value), when it has one.
pub(crate) fn clap_error_tip(e: &clap::Error) -> Option<String> {
    let rendered = e.render().to_string();
    rendered
        .lines()
        .find_map(|l| l.trim().strip_prefix("tip: "))
        .filter(|t| t.starts_with("a similar"))
        .map(String::from)
}

/// The help of the command the arguments name (`hakaru run --help`, `hakaru patterns generate --help`), found by
/// walking clap's subcommands along them; `hakaru --help` when they name none.
pub(crate) fn own_help(args: impl Iterator<Item = String>) -> String {
    use clap::CommandFactory;
    let mut cmd = crate::cli::args::Cli::command();
    let mut path = vec!["hakaru".to_string()];
    for arg in args {
        let Some(sub) = cmd.find_subcommand(&arg).cloned() else { continue };
        path.push(arg);
        cmd = sub;
    }
    format!("{} --help", path.join(" "))
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

#[cfg(test)]
mod tests {
    use super::own_help;

    fn help_of(line: &str) -> String {
        own_help(line.split_whitespace().map(String::from))
    }

    #[test]
    fn a_refused_flag_points_to_its_own_commands_help() {
        for (input, want) in [
            ("run --conections 5 http://h/", "hakaru run --help"),
            ("--redact-header X kv -c many redis://h", "hakaru kv --help"),
            ("patterns generate --hit-rat 5", "hakaru patterns generate --help"),
            ("runn -c 5", "hakaru --help"),
        ] {
            assert_eq!(help_of(input), want, "help_of({input:?})");
        }
        // A word after the command that happens to be a command's name is a value, not a command.
        assert_eq!(help_of("run --label sweep http://h/"), "hakaru run --help");
    }
}
