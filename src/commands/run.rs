//! `hakaru run`: one load step, watched, into the result document and out through the exporters. Exit code 1
//! when not one request succeeded.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use super::history::Recorder;
use crate::cli::args::RunArgs;
use crate::engine;
use crate::error::UsageError;
use crate::export::{Exporter, csv::Csv, json::Json, text::Text};
use crate::monitor::Watchers;
use crate::plan::{self, RunPlan};
use crate::step::{LiveDocument, measure_step};

/// Checks the arguments, runs the step, prints the summary and writes the files; a stop signal keeps what was
/// measured (exit code 128 + the signal: 130 for Ctrl-C, 143 for SIGTERM).
pub fn run(args: &RunArgs, interrupt: &AtomicBool) -> Result<ExitCode, UsageError> {
    let plan = RunPlan::from_args(args)?;
    let watchers = plan::watchers(&args.watch, &plan.endpoints)?;
    let history = Recorder::from_args(&args.load.history)?;
    run_plan(&plan, &watchers, &history, interrupt)
}

pub fn run_plan(
    plan: &RunPlan,
    watchers: &Watchers,
    history: &Recorder,
    interrupt: &AtomicBool,
) -> Result<ExitCode, UsageError> {
    engine::preflight(plan)?;
    let mut outputs: Vec<(PathBuf, Box<dyn Exporter>)> = Vec::new();
    if let Some(p) = &plan.json {
        outputs.push((p.clone(), Box::new(Json)));
    }
    if let Some(p) = &plan.csv {
        outputs.push((p.clone(), Box::new(Csv)));
    }
    let mut live = LiveDocument::new(plan.settings.clone(), plan.keepalive, outputs);
    live.doc.settings.labels = history.labels.clone();
    super::check_open_files(&mut live, plan.connections, plan.threads);
    super::notes(&mut live, &plan.notes);
    live.expected_hit_rate = watchers.expected_hit_rate;
    let (step, interrupted) = measure_step(plan, "run", None, watchers, interrupt);
    live.doc.steps.push(step);
    live.doc.interrupted = interrupted;
    live.refresh_warnings();
    live.say(Text.render(&live.doc).trim_end());
    // The history is written even when a file could not be: one more place the measurement survives.
    let written = live.write_final();
    history.record(&live.doc);
    written?;
    let nothing_succeeded = live.doc.steps.iter().all(|s| s.requests > 0 && s.ok == 0);
    Ok(if interrupted {
        ExitCode::from(crate::stop::exit_code())
    } else if nothing_succeeded {
        // Every request failed: there is no measurement of the service, and scripts must not take it for one.
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
