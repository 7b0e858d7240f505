//! `hakaru run`: one load step (or `--runs N` of them back to back), watched, into the result document and out
//! through the exporters, with the `--threshold` gates judged on it. Exit code 1 when not one request succeeded,
//! 99 when a threshold is broken.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::cli::args::{LoadArgs, RunArgs};
use crate::engine;
use crate::error::CliError;
use crate::history::Recorder;
use crate::judge::gates::{self, Threshold};
use crate::monitor::Watchers;
use crate::plan::{self, Outputs, RunPlan};
use crate::run::session::{Ending, Session};

/// Most runs `--runs` accepts: each is a full step with its own entry in the document.
const MOST_RUNS: usize = 1000;

/// Checks the arguments, runs the step, prints the summary and writes the files; a stop signal keeps what was
/// measured (exit code 128 + the signal: 130 for Ctrl-C, 143 for SIGTERM).
pub fn run(args: &RunArgs, interrupt: &AtomicBool) -> Result<ExitCode, CliError> {
    let repeat = Repeat::from_args(&args.load)?;
    gates::check_events("--threshold", &repeat.thresholds, args.request.events.as_deref())?;
    let plan = RunPlan::from_args(args)?;
    if let Some(preview) = &plan.replay_preview {
        // `--replay --dry-run`: the plan checked whole, nothing sent.
        crate::println!("{preview}");
        return Ok(ExitCode::SUCCESS);
    }
    let watchers = plan::watchers(&args.watch, &plan.endpoints)?;
    let history = super::history::recorder(&args.load.history)?;
    run_plan(&plan, &watchers, &repeat, &history, interrupt)
}

/// How often the plan runs and what its result must meet (`--runs`, `--run-interval`, `--threshold`).
pub struct Repeat {
    pub runs: usize,
    pub interval: Duration,
    pub thresholds: Vec<Threshold>,
}

impl Repeat {
    pub fn from_args(a: &LoadArgs) -> Result<Repeat, CliError> {
        if a.runs == 0 || a.runs > MOST_RUNS {
            return Err(CliError::new(format!(
                "--runs {}: give a number of runs from 1 to {MOST_RUNS}, e.g. --runs 5",
                a.runs
            )));
        }
        let interval = crate::base::units::parse_flag_duration(&a.run_interval)
            .map_err(|e| CliError::new(format!("--run-interval '{}': {e}", a.run_interval)))?;
        Ok(Repeat { runs: a.runs, interval, thresholds: gates::parse_all("--threshold", &a.thresholds)? })
    }
}

pub fn run_plan(
    plan: &RunPlan,
    watchers: &Watchers,
    repeat: &Repeat,
    history: &Recorder,
    interrupt: &AtomicBool,
) -> Result<ExitCode, CliError> {
    engine::preflight(plan)?;
    let outputs =
        Outputs { json: plan.json.clone(), csv: plan.csv.clone(), hdr_log: plan.hdr_log.clone(), ..Outputs::default() };
    let mut session =
        Session::new(plan.settings.clone(), plan.keepalive, &outputs, repeat.thresholds.clone(), history, interrupt)
            .repeated(repeat.runs);
    session.prepare(plan.connections, plan.threads, &plan.notes, Some(watchers));
    let several = repeat.runs > 1;
    for i in 1..=repeat.runs {
        if i > 1 && session.pause(repeat.interval) {
            break;
        }
        let label = if several { format!("run {i}") } else { "run".to_string() };
        // Each run draws its own random choices (an LLM's synthetic prompts, `{{rand}}`, a pattern's picks): the
        // same draws again would find the server's caches warm (an LLM server's prefix cache) where the first
        // run found them cold.
        let mut own = None;
        if i > 1 {
            let mut p = plan.clone();
            p.seed = plan.seed.wrapping_add((i as u64 - 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            own = Some(p);
        }
        let (step, interrupted) = session.measure(own.as_ref().unwrap_or(plan), &label, None, watchers);
        session.keep(step, interrupted)?;
        if interrupted {
            break;
        }
    }
    session.end(Ending::Summary)
}
