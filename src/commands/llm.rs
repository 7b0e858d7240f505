//! `hakaru llm`: `run` against an OpenAI-compatible endpoint, each request's body from a dataset of prompts, read
//! as a token stream: the same plan, engine, session, gates and files as `run`.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use crate::cli::args::LlmArgs;
use crate::error::CliError;
use crate::judge::gates;
use crate::plan::{self, RunPlan};

pub fn llm(args: &LlmArgs, interrupt: &AtomicBool) -> Result<ExitCode, CliError> {
    let repeat = super::run::Repeat::from_args(&args.run.load)?;
    let prepared = plan::llm::prepare(args)?;
    if let Some(rates) = &prepared.rates {
        return super::sweep::sweep(&sweep_of(&prepared, rates), interrupt);
    }
    if let Some((slo, start, max)) = &prepared.search {
        let s = sweep_of(&prepared, &[]);
        let c = crate::cli::args::CapacityArgs {
            prompts: s.prompts,
            slo: slo.clone(),
            rate_start: *start,
            rate_max: *max,
            precision: crate::cli::render::defaults::<crate::cli::args::CapacityArgs>().precision,
            request: s.request,
            watch: s.watch,
            steps: s.steps,
        };
        return super::capacity::capacity(&c, interrupt);
    }
    gates::check_events("--threshold", &repeat.thresholds, prepared.args.request.events.as_deref())?;
    let history = super::history::recorder(&prepared.args.load.history)?;
    let watch = prepared.args.watch.clone();
    let plan = RunPlan::from_llm(prepared)?;
    let watchers = plan::watchers(&watch, &plan.endpoints)?;
    super::run::run_plan(&plan, &watchers, &repeat, &history, interrupt)
}

/// `--request-rate 1,2,4`: `sweep`'s flags from llm's, the body and its stream as `llm` made them.
fn sweep_of(prepared: &plan::llm::Prepared, rates: &[f64]) -> crate::cli::args::SweepArgs {
    let mut s: crate::cli::args::SweepArgs = crate::cli::render::defaults();
    let (a, l) = (&prepared.args, &prepared.args.load);
    (s.request, s.watch, s.thresholds) = (a.request.clone(), a.watch.clone(), l.thresholds.clone());
    s.rates = Some(rates.iter().map(f64::to_string).collect::<Vec<_>>().join(","));
    s.prompts = Some(prepared.note.clone());
    let st = &mut s.steps;
    (st.connections, st.arrival, st.threads) = (l.connections, l.arrival, l.threads);
    st.duration = l.duration.clone().expect("a sweep of rates is timed (checked)");
    // Two seconds between steps: the last step's answers end (its graceful stop) and the server drains.
    st.interval = "2s".into();
    (st.json, st.csv, st.hdr_log, st.window) = (l.json.clone(), l.csv.clone(), l.hdr_log.clone(), l.window.clone());
    (st.quiet, st.live, st.scale, st.history) = (l.quiet, l.live.clone(), l.scale.clone(), l.history.clone());
    s
}
