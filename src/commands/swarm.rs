//! `hakaru swarm service`: the agents' command checked (`agents::deployment`), then the Docker Swarm script
//! (src/swarm.rs) printed.

use std::process::ExitCode;

use crate::cli::args::{SwarmCommand, SwarmServiceArgs};
use crate::deploy::swarm::ServicePlan;
use crate::error::CliError;

pub fn swarm(cmd: &SwarmCommand) -> Result<ExitCode, CliError> {
    match cmd {
        SwarmCommand::Service(args) => service(args),
    }
}

fn service(args: &SwarmServiceArgs) -> Result<ExitCode, CliError> {
    let plan = ServicePlan {
        d: super::agents::deployment(&args.common, "swarm service")?,
        results: args.results.clone(),
        network: args.network.clone(),
    };
    plan.check()?;
    print!("{}", plan.to_script());
    Ok(ExitCode::SUCCESS)
}
