//! `hakaru study FILE.toml [-o DIR] [--dry-run] [--resume DIR]`: the study file checked into a plan, its cases
//! printed (`--dry-run`) or run interleaved into DIR (a line per case as it ends), and the summary over
//! repetitions at the end. Exit code 1 when a case failed, 128 + the signal when stopped.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use crate::cli::args::StudyArgs;
use crate::error::CliError;
use crate::export::write_atomically;
use crate::study::manifest::{CaseStatus, MANIFEST, Manifest};
use crate::study::runner::{Outcome, RunOptions, run_study};
use crate::study::summary::{self, complete_document};
use crate::study::{Case, StudyPlan};

/// A line on stdout; a reader that went away (`| head`) must not stop the study: the files are still written.
macro_rules! say {
    () => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock());
    }};
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        // Secrets hidden in every line (a start or before command, an error quoting one).
        let _ = writeln!(std::io::stdout().lock(), "{}", crate::base::secrets::scrub_text(&format!($($arg)*)));
    }};
}

pub fn study(args: &StudyArgs, interrupt: &AtomicBool) -> Result<ExitCode, CliError> {
    let live = crate::cli::args::LiveArgs {
        prometheus_rw: args.prometheus_rw.clone(),
        prometheus_interval: args.prometheus_interval.clone(),
        ..Default::default()
    };
    // Checked once here, so a bad URL is one line before any case rather than a failure of every case.
    crate::plan::live::LiveSettings::from_args(&live)?;
    let plan = StudyPlan::from_file_pushing(&args.file, live)?;
    let thresholds = crate::judge::gates::parse_all("--threshold", &args.thresholds)?;
    let resume = args.resume.is_some();
    let dir = match (&args.resume, &args.output) {
        (Some(d), _) | (None, Some(d)) => d.clone(),
        (None, None) => PathBuf::from(format!("study-{}", plan.name)),
    };
    let flag = if resume { "--resume" } else { "-o" };
    if resume {
        match Manifest::read(&dir) {
            Ok(m) if m.study != plan.name => {
                return Err(CliError::new(format!(
                    "--resume {}: it holds study '{}', not '{}' of {}: give the directory of this study",
                    dir.display(),
                    m.study,
                    plan.name,
                    args.file.display()
                )));
            }
            Ok(_) => {}
            Err(e) => {
                return Err(CliError::new(format!(
                    "--resume {}: {e}: give the directory an earlier 'hakaru study' wrote",
                    dir.display()
                )));
            }
        }
    }
    if args.dry_run {
        dry_run(&plan, resume.then_some(dir.as_path()));
        return Ok(ExitCode::SUCCESS);
    }
    if !resume && dir.join(MANIFEST).exists() {
        return Err(CliError::new(format!(
            "-o {}: it holds a study already: finish it with --resume {0}, or give another directory",
            dir.display()
        )));
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| CliError::new(format!("{flag} {}: cannot create the directory ({e})", dir.display())))?;
    let dir = std::fs::canonicalize(&dir)
        .map_err(|e| CliError::new(format!("{flag} {}: cannot use the directory ({e})", dir.display())))?;
    let exe = std::env::current_exe()
        .map_err(|e| CliError::runtime(format!("study: cannot find the hakaru binary to run the cases: {e}")))?;
    let total = plan.cases.len();
    say!("hakaru study {}: {}", plan.name, matrix_line(&plan));
    say!("  load: {}", plan.load_summary());
    say!("  into {}", dir.display());
    let opts = RunOptions { dir: dir.clone(), exe, resume };
    let mut print_case = |i: usize, e: &crate::study::manifest::CaseEntry, rows: Option<&[summary::StepRow]>| {
        let what = match (e.status, rows) {
            (CaseStatus::Ok, Some(rows)) => rows
                .iter()
                .map(|r| {
                    let step = if rows.len() > 1 { format!("{} ", r.step) } else { String::new() };
                    format!("{step}{:.1} ok/s p99 {:.2}ms", r.ok_per_s, r.p99_us as f64 / 1000.0)
                })
                .collect::<Vec<_>>()
                .join(", "),
            _ => e.error.clone().unwrap_or_default(),
        };
        let status = match e.status {
            CaseStatus::Ok => "ok",
            CaseStatus::Failed => "FAILED",
            CaseStatus::Skipped => "skipped",
        };
        say!("[{:>w$}/{total}] {:<40} {status:<7} {what}", i + 1, e.id, w = total.to_string().len());
    };
    let outcome = run_study(&plan, &opts, interrupt, &mut print_case)?;
    finish(&plan, &outcome, &dir);
    let broken = judge_cases(&outcome, &dir, &thresholds);
    write_report(&plan, &dir);
    let failed = outcome.manifest.cases.iter().filter(|c| c.status == CaseStatus::Failed).count();
    Ok(if outcome.interrupted {
        ExitCode::from(crate::base::stop::exit_code())
    } else if failed > 0 {
        ExitCode::from(1)
    } else if broken {
        ExitCode::from(crate::judge::gates::EXIT_THRESHOLDS)
    } else {
        ExitCode::SUCCESS
    })
}

/// `2 targets x 1 workload x 2 phases x 3 repetitions = 12 cases`.
fn matrix_line(plan: &StudyPlan) -> String {
    let n = |k: usize, w: &str| format!("{k} {w}{}", if k == 1 { "" } else { "s" });
    format!(
        "{} x {} x {} x {} = {}",
        n(plan.targets.len(), "target"),
        n(plan.workloads.len(), "workload"),
        n(plan.phases.len(), "phase"),
        n(plan.load.repeat as usize, "repetition"),
        n(plan.cases.len(), "case")
    )
}

/// The cases in the order they would run, the command of each distinct one, and the time it would take.
fn dry_run(plan: &StudyPlan, resume: Option<&Path>) {
    say!("hakaru study {} ({}): {}", plan.name, plan.file.display(), matrix_line(plan));
    say!("  load: {}", plan.load_summary());
    let earlier = resume.and_then(|d| Manifest::read(d).ok());
    let done = |c: &Case| {
        resume.is_some_and(|d| {
            let entry_failed = earlier
                .as_ref()
                .and_then(|m| m.cases.iter().find(|e| e.id == c.id))
                .is_some_and(|e| e.status == CaseStatus::Failed);
            !entry_failed
                && complete_document(&d.join("cases").join(format!("{}.json", c.id)), plan.load.steps()).is_some()
        })
    };
    let w = plan.cases.iter().map(|c| c.id.len()).max().unwrap_or(4).max(4);
    say!("\n  {:>3}  {:<w$}  {:<12} {:<12} {:<10} rep", "#", "case", "target", "workload", "phase");
    let mut todo = Vec::new();
    for (i, c) in plan.cases.iter().enumerate() {
        let kept = done(c);
        if !kept {
            todo.push(c);
        }
        say!(
            "  {:>3}  {:<w$}  {:<12} {:<12} {:<10} {}{}",
            i + 1,
            c.id,
            plan.targets[c.target].name,
            plan.workloads[c.workload].name,
            plan.phases[c.phase].name,
            c.repetition,
            if kept { "  (done: kept)" } else { "" }
        );
    }
    say!("\n  commands (repetition 1; the output file is added as --json DIR/cases/ID.json):");
    for c in plan.cases.iter().filter(|c| c.repetition == 1) {
        let args = crate::study::with_started_pid(&c.args, "{started-pid}");
        // Quoted as a shell reads them, so a line can be pasted (`-H 'Content-Type: application/json'`).
        // (The started target's pid is a placeholder to fill in, not a word to paste: left as it is.)
        let quoted = |w: &String| if w == "{started-pid}" { w.clone() } else { crate::base::units::shell_word(w) };
        let shown: Vec<String> = crate::base::secrets::redact_line(&args).iter().map(quoted).collect();
        say!("    {}: hakaru {}", c.id, shown.join(" "));
    }
    for t in plan.targets.iter().filter(|t| t.start.is_some()) {
        say!("  target {} is started with: {}", t.name, t.start.as_deref().unwrap_or(""));
    }
    let (time, unknown) = plan.estimate(&todo);
    let time = humantime::format_duration(std::time::Duration::from_secs(time.as_secs_f64().ceil() as u64));
    let unknown = if unknown > 0 {
        format!(", plus {unknown} cases that stop after a number of requests (their time depends on the server)")
    } else {
        String::new()
    };
    say!(
        "\n  {} to run, about {time} of load and pauses{unknown}; starting targets, waiting for them and 'before' commands add to it",
        todo.len()
    );
}

/// `--threshold`: each finished case's result judged (and its document rewritten with the verdicts), printed per
/// case; true when one broke.
fn judge_cases(outcome: &Outcome, dir: &Path, thresholds: &[crate::judge::gates::Threshold]) -> bool {
    if thresholds.is_empty() {
        return false;
    }
    let mut broken = false;
    say!("\nthresholds, per case");
    for c in outcome.manifest.cases.iter().filter(|c| c.status == CaseStatus::Ok) {
        let Some(file) = &c.file else { continue };
        let path = dir.join(file);
        let Some(mut doc) = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str::<crate::result::ResultDocument>(&t).ok())
        else {
            continue;
        };
        doc.thresholds = crate::judge::gates::judge(&doc, thresholds);
        broken |= crate::judge::gates::any_broken(&doc.thresholds);
        let text = crate::export::text::thresholds_text(&doc.thresholds);
        say!("{}:{}", c.id, text.trim_end().trim_start_matches('\n').replace("\nthresholds", " thresholds"));
        if let Err(e) = write_atomically(&path, &crate::export::Exporter::render(&crate::export::json::Json, &doc)) {
            say!("  ! {}: the verdicts could not be written into it ({e})", path.display());
        }
    }
    broken
}

/// The study's HTML report (`hakaru report` of its directory), written beside its results.
fn write_report(plan: &StudyPlan, dir: &Path) {
    let path = dir.join("report.html");
    let inputs = match crate::report::load_input(&dir.display().to_string()) {
        Ok(i) if !i.is_empty() => i,
        Ok(_) => return,
        Err(e) => {
            say!("  ! no report: {e}");
            return;
        }
    };
    let page = crate::report::html::render(&crate::report::Report::build(&format!("study {}", plan.name), &inputs));
    match write_atomically(&path, &page) {
        Ok(()) => say!("report: {}", path.display()),
        Err(e) => say!("  ! the report could not be written to {} ({e})", path.display()),
    }
}

/// The study's verdicts as `hakaru compare DIR` gives them (the same code: one family over every target, metric
/// and phase), when it has targets to compare.
fn verdicts(dir: &Path) {
    let Ok(groups) = crate::compare::input::study(dir) else { return };
    if groups.iter().all(|g| g.sides.len() < 2) {
        return;
    }
    match crate::compare::compare_groups(&groups, None) {
        Ok(groups) => {
            let comparison = crate::compare::Comparison { schema: String::new(), groups, fail_if: Vec::new() };
            say!("\nverdicts (each target against the first, as hakaru compare {} gives them)", dir.display());
            say!("{}", crate::compare::render::text(&comparison).trim_end());
        }
        Err(e) => say!("  ! no verdicts: {e}"),
    }
}

/// The closing summary: the table over repetitions, what failed, where the files are. The study's verdicts
/// (`compare`), its report and its threshold gates are added here, from the same manifest and groups.
fn finish(plan: &StudyPlan, outcome: &Outcome, dir: &Path) {
    let groups = summary::groups(&outcome.manifest, &outcome.rows);
    let count = |s: CaseStatus| outcome.manifest.cases.iter().filter(|c| c.status == s).count();
    say!();
    if groups.is_empty() {
        say!("no case finished: nothing to summarize");
    } else {
        say!(
            "summary over repetitions (mean and standard deviation of the runs; p99 pooled: of their merged histograms)"
        );
        say!("{}", summary::table(&groups).trim_end());
        verdicts(dir);
    }
    let (ok, failed, skipped) = (count(CaseStatus::Ok), count(CaseStatus::Failed), count(CaseStatus::Skipped));
    let resumed =
        if outcome.resumed > 0 { format!(" ({} kept from the earlier run)", outcome.resumed) } else { String::new() };
    say!("\n{ok} of {} cases ok{resumed}, {failed} failed, {skipped} not run", plan.cases.len());
    for c in outcome.manifest.cases.iter().filter(|c| c.status == CaseStatus::Failed) {
        say!("  ! {}: {}", c.id, c.error.as_deref().unwrap_or(""));
    }
    if !outcome.apart.is_empty() {
        say!(
            "  ! not interleaved: {} case(s) ran now while the other targets' cases of their repetition were kept \
             from the earlier run ({}); a drift between the two runs falls on one side only: run the study \
             without --resume to keep the targets interleaved",
            outcome.apart.len(),
            outcome.apart.join(", ")
        );
    }
    if outcome.interrupted {
        say!(
            "  ! stopped early ({}): finish it with hakaru study {} --resume {}",
            crate::base::stop::reason(),
            plan.file.display(),
            dir.display()
        );
    }
    say!("files: {}/{{{MANIFEST}, {}, {}, cases/, logs/}}", dir.display(), summary::CSV, summary::SUMMARY);
}
