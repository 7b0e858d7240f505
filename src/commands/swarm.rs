//! `hakaru swarm service`: the agents' command checked (`agents::deployment`), then the Docker Swarm script
//! (src/swarm.rs) printed.

use std::process::ExitCode;

use crate::cli::args::{SwarmCommand, SwarmServiceArgs};
use crate::deploy::swarm::ServicePlan;
use crate::error::UsageError;

pub fn swarm(cmd: &SwarmCommand) -> Result<ExitCode, UsageError> {
    match cmd {
        SwarmCommand::Service(args) => service(args),
    }
}

fn service(args: &SwarmServiceArgs) -> Result<ExitCode, UsageError> {
    let plan = ServicePlan {
        d: super::agents::deployment(&args.common, "swarm service")?,
        results: args.results.clone(),
        network: args.network.clone(),
    };
    plan.check()?;
    print!("{}", plan.to_script());
    Ok(ExitCode::SUCCESS)
}
