//! `hakaru run`: one load step (or `--runs N` of them back to back), watched, into the result document and out
//! through the exporters, with the `--threshold` gates judged on it. Exit code 1 when not one request succeeded,
//! 99 when a threshold is broken.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::history::Recorder;
use crate::cli::args::{LoadArgs, RunArgs};
use crate::engine;
use crate::error::UsageError;
use crate::export::{Exporter, csv::Csv, json::Json, text::Text};
use crate::gates::{self, Threshold};
use crate::monitor::Watchers;
use crate::plan::{self, RunPlan};
use crate::result::RunsSummary;
use crate::step::{LiveDocument, measure_step, pause};

/// Most runs `--runs` accepts: each is a full step with its own entry in the document.
const MOST_RUNS: usize = 1000;

/// Checks the arguments, runs the step, prints the summary and writes the files; a stop signal keeps what was
/// measured (exit code 128 + the signal: 130 for Ctrl-C, 143 for SIGTERM).
pub fn run(args: &RunArgs, interrupt: &AtomicBool) -> Result<ExitCode, UsageError> {
    let repeat = Repeat::from_args(&args.load)?;
    let plan = RunPlan::from_args(args)?;
    let watchers = plan::watchers(&args.watch, &plan.endpoints)?;
    let history = Recorder::from_args(&args.load.history)?;
    run_plan(&plan, &watchers, &repeat, &history, interrupt)
}

/// How often the plan runs and what its result must meet (`--runs`, `--run-interval`, `--threshold`).
pub struct Repeat {
    pub runs: usize,
    pub interval: Duration,
    pub thresholds: Vec<Threshold>,
}

impl Repeat {
    pub fn from_args(a: &LoadArgs) -> Result<Repeat, UsageError> {
        if a.runs == 0 || a.runs > MOST_RUNS {
            return Err(UsageError::new(format!(
                "--runs {}: give a number of runs from 1 to {MOST_RUNS}, e.g. --runs 5",
                a.runs
            )));
        }
        let interval = crate::units::parse_flag_duration(&a.run_interval)
            .map_err(|e| UsageError::new(format!("--run-interval '{}': {e}", a.run_interval)))?;
        Ok(Repeat { runs: a.runs, interval, thresholds: gates::parse_all("--threshold", &a.thresholds)? })
    }
}

pub fn run_plan(
    plan: &RunPlan,
    watchers: &Watchers,
    repeat: &Repeat,
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
    let several = repeat.runs > 1;
    for i in 1..=repeat.runs {
        if i > 1 {
            pause(repeat.interval, interrupt);
            if interrupt.load(Ordering::Relaxed) {
                live.doc.interrupted = true;
                break;
            }
        }
        let label = if several { format!("run {i}") } else { "run".to_string() };
        let (step, interrupted) = measure_step(plan, &label, None, watchers, interrupt);
        live.doc.steps.push(step);
        live.doc.interrupted |= interrupted;
        live.refresh_warnings();
        if several {
            // The runs so far, rewritten to the files after each: Ctrl-C in run 3 keeps runs 1 and 2 whole, and
            // run 3 marked as cut short.
            live.doc.runs = RunsSummary::of(&live.doc.steps, repeat.runs, interrupted.then_some(i));
            live.write()?;
        }
        if interrupted {
            break;
        }
    }
    // A signal in the pause between runs came after the last refresh: the warnings must still say so.
    live.refresh_warnings();
    live.doc.thresholds = gates::judge(&live.doc, &repeat.thresholds);
    live.say(Text.render(&live.doc).trim_end());
    // The history is written even when a file could not be: one more place the measurement survives.
    let written = live.write_final();
    history.record(&live.doc);
    written?;
    let nothing_succeeded = live.doc.steps.iter().all(|s| s.requests > 0 && s.ok == 0);
    Ok(if live.doc.interrupted {
        ExitCode::from(crate::stop::exit_code())
    } else if gates::any_broken(&live.doc.thresholds) {
        ExitCode::from(gates::EXIT_THRESHOLDS)
    } else if nothing_succeeded {
        // Every request failed: there is no measurement of the service, and scripts must not take it for one.
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
