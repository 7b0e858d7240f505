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
    gates::check_events("--threshold", &repeat.thresholds, prepared.args.request.events.as_deref())?;
    let history = super::history::recorder(&prepared.args.load.history)?;
    let watch = prepared.args.watch.clone();
    let plan = RunPlan::from_llm(prepared)?;
    let watchers = plan::watchers(&watch, &plan.endpoints)?;
    super::run::run_plan(&plan, &watchers, &repeat, &history, interrupt)
}
