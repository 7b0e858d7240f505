//! `hakaru kv`: a Redis or memcached server under a mix of operations, run, printed and written as `run` does.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use crate::cli::args::KvArgs;
use crate::error::UsageError;
use crate::plan::{self, RunPlan};

pub fn kv(args: &KvArgs, interrupt: &AtomicBool) -> Result<ExitCode, UsageError> {
    let repeat = super::run::Repeat::from_args(&args.load)?;
    let plan = RunPlan::from_kv_args(args)?;
    let watchers = plan::watchers(&args.watch, &plan.endpoints)?;
    super::run::run_plan(&plan, &watchers, &repeat, interrupt)
}
