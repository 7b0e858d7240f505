//! `hakaru k8s job`: checks the flags and the agents' command, then prints the manifests (src/k8s.rs) to stdout.

use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use clap::Parser;

use super::agents::AgentPlan;
use crate::cli::args::{Cli, K8sCommand, K8sJobArgs, ResultsVolumeArg};
use crate::error::UsageError;
use crate::k8s::{JobPlan, Results, parse_start_at};
use crate::units::parse_flag_duration;

pub fn k8s(cmd: &K8sCommand) -> Result<ExitCode, UsageError> {
    match cmd {
        K8sCommand::Job(args) => job(args),
    }
}

fn job(args: &K8sJobArgs) -> Result<ExitCode, UsageError> {
    // The agents' line rendered from the flags just parsed: what each agent's parser will read back.
    let (line, redact) = agent_command(&args.command, args.agents as usize)?;
    // Secret names this process knows (its environment, from its own flags) and the agents' command's own: the
    // arguments they name go into the Secret, and every pod hides them too.
    let names = |var: &str, own: &[String]| -> Vec<String> {
        crate::secrets::user_names(var).iter().chain(own).cloned().collect()
    };
    let headers = names(crate::secrets::REDACT_HEADERS_VAR, &redact.0);
    let params = names(crate::secrets::REDACT_PARAMS_VAR, &redact.1);
    let (command, secret_args) =
        crate::cli::render::split_secrets(&line, |a| crate::secrets::holds_secret_named(a, &headers, &params));
    let start_at = match &args.start_at {
        Some(at) => parse_start_at(at)?,
        None => {
            let start_in = duration_flag("--start-in", &args.start_in)?;
            // Whole seconds, rounded up: the manifests carry RFC 3339 seconds, and the start must not come early.
            let since_epoch = (SystemTime::now() + start_in).duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
            SystemTime::UNIX_EPOCH
                + Duration::from_secs(since_epoch.as_secs() + u64::from(since_epoch.subsec_nanos() > 0))
        }
    };
    let plan = JobPlan {
        name: args.name.clone(),
        namespace: args.namespace.clone(),
        image: args.image.clone(),
        helper_image: args.helper_image.clone(),
        agents: args.agents,
        start_at,
        command,
        secret_args,
        redact: [
            (crate::secrets::REDACT_HEADERS_VAR, headers.join(",")),
            (crate::secrets::REDACT_PARAMS_VAR, params.join(",")),
        ]
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .collect(),
        results: match args.results_volume {
            ResultsVolumeArg::Pvc => Results::Volume,
            ResultsVolumeArg::Stdout => Results::Stdout,
        },
        storage_size: args.storage_size.clone(),
        storage_class: args.storage_class.clone(),
        cpu: args.cpu.clone(),
        memory: args.memory.clone(),
        backoff_limit: args.backoff_limit,
        collect_timeout: duration_flag("--collect-timeout", &args.collect_timeout)?,
        allow_partial: args.allow_partial,
    };
    plan.check()?;
    print!("{}", plan.to_yaml());
    Ok(ExitCode::SUCCESS)
}

fn duration_flag(flag: &str, text: &str) -> Result<Duration, UsageError> {
    parse_flag_duration(text).map_err(|e| UsageError::new(format!("{flag} '{text}': {e}")))
}

/// The flags each agent gets from the manifests; the user's command must not set them too.
const SET_BY_THE_JOB: [&str; 3] = ["--segment", "--start-at", "--json"];

/// Parses the agents' command with hakaru's own parser, so a typo is refused here rather than in N pods; only
/// `run`, `sweep` and `kv` take a segment of a plan.
///
/// Only the parse: the plan itself (URLs resolved, files read, the target reached) is checked by each agent in
/// the cluster, where the names resolve and the files are.
/// The agents' command line as rendered from its parsed flags, and the secret names (`--redact-header`,
/// `--redact-param`) it carries, which its rendering leaves out (they are global flags) and the pods get instead.
type AgentCommand = (Vec<String>, (Vec<String>, Vec<String>));

fn agent_command(command: &[String], agents: usize) -> Result<AgentCommand, UsageError> {
    if let Some(flag) =
        command.iter().find(|a| SET_BY_THE_JOB.iter().any(|f| a.as_str() == *f || a.starts_with(&format!("{f}="))))
    {
        return Err(UsageError::new(format!(
            "the agents' command sets {flag}: remove it, k8s job gives every agent its --segment, the common \
             --start-at and --json /results/agent-I.json"
        )));
    }
    let cli =
        Cli::try_parse_from(std::iter::once("hakaru").chain(command.iter().map(String::as_str))).map_err(|e| {
            // clap's suggestion ("a similar argument exists: '--connections'") is the fix: keep it on the line, with
            // the agents' command's own help.
            let tip = super::clap_error_tip(&e).map(|t| format!("; {t}"));
            let help = super::own_help(command.iter().cloned());
            UsageError::new(format!(
                "the agents' command: {}{} (see '{help}')",
                super::clap_error_line(&e),
                tip.unwrap_or_default()
            ))
        })?;
    // Every agent must get a part: a plan with fewer connections or requests than agents would fail in its pods.
    let Some(plan) = AgentPlan::of(&cli.command) else {
        return Err(UsageError::new(format!(
            "the agents' command '{}': give run, sweep or kv after '--' (the commands that take a segment)",
            command[0]
        )));
    };
    plan.check_split(agents, "the agents' command")?;
    // Each pod is one agent already: local agents inside it would multiply the plan.
    let scale = plan.scale();
    if scale.agents.is_some() || scale.agent_source.is_some() || scale.agent_netns.is_some() {
        return Err(UsageError::new(
            "the agents' command sets --agents: remove it (and --agent-source, --agent-netns); each pod is one agent of --agents N",
        ));
    }
    if let Some(r) = plan.rate() {
        crate::plan::parse_rate("--rate", r)?;
    }
    Ok((plan.render()?, (cli.redact_header.clone(), cli.redact_param.clone())))
}
