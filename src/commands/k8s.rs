//! `hakaru k8s job`: the agents' command checked (`agents::deployment`), then the manifests (src/k8s.rs) printed.

use std::process::ExitCode;

use crate::cli::args::{K8sCommand, K8sJobArgs, ResultsVolumeArg};
use crate::deploy::k8s::{JobPlan, Results};
use crate::error::CliError;

pub fn k8s(cmd: &K8sCommand) -> Result<ExitCode, CliError> {
    match cmd {
        K8sCommand::Job(args) => job(args),
    }
}

fn job(args: &K8sJobArgs) -> Result<ExitCode, CliError> {
    let plan = JobPlan {
        d: super::agents::deployment(&args.common, "k8s job")?,
        namespace: args.namespace.clone(),
        helper_image: args.helper_image.clone(),
        results: match args.results_volume {
            ResultsVolumeArg::Pvc => Results::Volume,
            ResultsVolumeArg::Stdout => Results::Stdout,
        },
        storage_size: args.storage_size.clone(),
        storage_class: args.storage_class.clone(),
        cpu: args.cpu.clone(),
        memory: args.memory.clone(),
        backoff_limit: args.backoff_limit,
    };
    plan.check()?;
    print!("{}", plan.to_yaml());
    Ok(ExitCode::SUCCESS)
}
