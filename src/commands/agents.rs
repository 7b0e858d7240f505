//! `--agents N`: the plan run as N agent processes of this binary on this machine, each its `--segment I/N`
//! and one common `--start-at`, their documents merged as `hakaru merge` does, then printed and written as one.
//! Also what agents started by an orchestrator need from the command line: `place` (`--segment auto/N` and
//! `{index}` read from the environment) and `deployment` (the agents' command checked, for `k8s job` and
//! `swarm service` alike).

use std::path::PathBuf;
use std::process::{Command as Process, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use clap::Parser;

use crate::cli::args::{Cli, Command, HistoryArgs, KvArgs, LoadArgs, OrchestratorArgs, RunArgs, ScaleArgs, SweepArgs};
use crate::cli::render::{render, split_secrets};
use crate::deploy::orchestrator::Deployment;
use crate::error::CliError;
use crate::plan::Outputs;
use crate::plan::segment::show_instant;
use crate::result::ResultDocument;
use crate::run::session::{Ending, Session};

/// The most agents `--agents` starts on one machine: each is a process with its own threads on the same cores.
const MOST_LOCAL_AGENTS: usize = 64;

/// Time for the agents to start and check their targets before the common instant.
const START_MARGIN: Duration = Duration::from_secs(2);

/// What `--agents N` asks: N, where the merged document goes, and each agent's `--source-address` if given.
pub struct Agents {
    pub n: usize,
    /// The files the merged document goes to, as the command's own flags name them.
    pub outputs: Outputs,
    /// `--threshold`: judged on the merged document, as on one process's.
    pub thresholds: Vec<String>,
    /// `--label`, `--db`, `--no-history`: the merged document is kept in the history.
    pub history: HistoryArgs,
    pub sources: Option<String>,
    pub namespaces: Option<String>,
    pub plan: AgentPlan,
}

/// `Some` when the command asks for `--agents N`.
pub fn asked(command: &Command) -> Option<Agents> {
    // `capacity` refuses --agents itself, with --segment and --start-at.
    let plan = AgentPlan::of(command)?;
    let scale = plan.scale();
    let (thresholds, history) = match &plan {
        AgentPlan::Run(RunArgs { load, .. }) | AgentPlan::Kv(KvArgs { load, .. }) => (&load.thresholds, &load.history),
        AgentPlan::Sweep(a) => (&a.thresholds, &a.steps.history),
    };
    let outputs = match &plan {
        AgentPlan::Run(RunArgs { load, .. }) | AgentPlan::Kv(KvArgs { load, .. }) => {
            Outputs { json: load.json.clone(), csv: load.csv.clone(), ..Outputs::default() }
        }
        AgentPlan::Sweep(a) => Outputs {
            json: a.steps.json.clone(),
            csv: a.steps.csv.clone(),
            wide: true,
            drnbench: a.steps.output.clone(),
            hdr_log: None,
        },
    };
    Some(Agents {
        n: scale.agents?,
        outputs,
        thresholds: thresholds.clone(),
        history: history.clone(),
        sources: scale.agent_source.clone(),
        namespaces: scale.agent_netns.clone(),
        plan,
    })
}

/// The plan every agent runs, as typed flags: its own line is rendered from them (see `cli::render`).
#[derive(Clone)]
pub enum AgentPlan {
    Run(RunArgs),
    Kv(KvArgs),
    Sweep(SweepArgs),
}

/// The agents started, killed and waited for if this process leaves before it waited for them.
struct Children(Vec<(usize, PathBuf, Option<std::process::Child>)>);

impl Drop for Children {
    fn drop(&mut self) {
        for (_, _, child) in &mut self.0 {
            if let Some(mut c) = child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

impl AgentPlan {
    /// The flags a parsed command carries, when it is one that takes a segment of a plan.
    pub fn of(command: &Command) -> Option<AgentPlan> {
        match command {
            Command::Run(a) => Some(AgentPlan::Run(a.clone())),
            Command::Kv(a) => Some(AgentPlan::Kv(a.clone())),
            Command::Sweep(a) => Some(AgentPlan::Sweep(a.clone())),
            _ => None,
        }
    }

    /// Its scale-out flags (`--agents`, `--segment`, `--start-at`...).
    pub fn scale(&self) -> &ScaleArgs {
        match self {
            AgentPlan::Run(RunArgs { load, .. }) | AgentPlan::Kv(KvArgs { load, .. }) => &load.scale,
            AgentPlan::Sweep(a) => &a.steps.scale,
        }
    }

    /// `--rate`, where the command has one (a sweep's rates are its steps).
    pub fn rate(&self) -> Option<f64> {
        match self {
            AgentPlan::Run(RunArgs { load, .. }) | AgentPlan::Kv(KvArgs { load, .. }) => load.rate,
            AgentPlan::Sweep(_) => None,
        }
    }

    /// The command line of the plan as it is (`k8s job` adds each agent's part in its manifests).
    pub fn render(&self) -> Result<Vec<String>, CliError> {
        match self {
            AgentPlan::Run(a) => render("run", a),
            AgentPlan::Kv(a) => render("kv", a),
            AgentPlan::Sweep(a) => render("sweep", a),
        }
        .map_err(CliError::new)
    }

    /// Every one of `agents` gets a part: no fewer connections, requests or step clients than agents (`lead`
    /// names who asked, for the message).
    pub fn check_split(&self, agents: usize, lead: &str) -> Result<(), CliError> {
        let fewest = |what: &str, n: u64| {
            if n < agents as u64 {
                Err(CliError::new(format!(
                    "{lead}: {n} {what} cannot be split over {agents} agents; give at least {agents}"
                )))
            } else {
                Ok(())
            }
        };
        match self {
            AgentPlan::Run(RunArgs { replay, .. }) if replay.replay.is_some() => {
                return Err(CliError::new("--replay: one process replays the file; leave out --agents and --segment"));
            }
            AgentPlan::Run(RunArgs { load, request, .. }) => {
                crate::plan::RunPlan::check_for_agents(Some(request), load)?
            }
            AgentPlan::Kv(KvArgs { load, .. }) => crate::plan::RunPlan::check_for_agents(None, load)?,
            AgentPlan::Sweep(_) => {}
        }
        match self {
            AgentPlan::Run(RunArgs { load, .. }) | AgentPlan::Kv(KvArgs { load, .. }) => {
                fewest("connection(s)", load.connections as u64)?;
                load.requests.map_or(Ok(()), |n| fewest("request(s)", n))
            }
            AgentPlan::Sweep(a) => match crate::plan::steps::sweep_steps(a)? {
                crate::plan::steps::Steps::Clients(list) => {
                    fewest("client(s) in a step", list.iter().copied().min().unwrap_or(1) as u64)
                }
                crate::plan::steps::Steps::Rates(_) => fewest("connection(s)", a.steps.connections as u64),
            },
        }
    }

    /// Agent `i` of `n`'s arguments: its segment, the common start, its own document (`json`), quiet, no history
    /// (the merged run is kept, by this process), without `--agents` and the merged run's files.
    fn agent_line(
        &self,
        i: usize,
        n: usize,
        start_at: &str,
        json: &std::path::Path,
        source: Option<&str>,
    ) -> Result<Vec<String>, CliError> {
        let agent = |scale: &mut ScaleArgs, history: &mut HistoryArgs| {
            scale.agents = None;
            scale.agent_source = None;
            scale.agent_netns = None;
            scale.segment = Some(format!("{i}/{n}"));
            scale.start_at = Some(scale.start_at.clone().unwrap_or_else(|| start_at.to_string()));
            if let Some(s) = source {
                scale.source_address = Some(s.to_string());
            }
            history.no_history = true;
        };
        let load = |l: &mut LoadArgs| {
            agent(&mut l.scale, &mut l.history);
            (l.json, l.csv, l.hdr_log, l.quiet) = (Some(json.to_path_buf()), None, None, true);
        };
        match self.clone() {
            AgentPlan::Run(mut a) => {
                load(&mut a.load);
                AgentPlan::Run(a)
            }
            AgentPlan::Kv(mut a) => {
                load(&mut a.load);
                AgentPlan::Kv(a)
            }
            AgentPlan::Sweep(mut a) => {
                let s = &mut a.steps;
                agent(&mut s.scale, &mut s.history);
                (s.json, s.csv, s.output, s.hdr_log, s.quiet) = (Some(json.to_path_buf()), None, None, None, true);
                AgentPlan::Sweep(a)
            }
        }
        .render()
    }
}

/// An agent started by an orchestrator finds its place: `--segment auto/N` read as `I/N` from the environment
/// (`orchestrator::resolve_segment`), and `{index}` in `--json`, `--csv`, `--hdr-log` and `-o` replaced by I, so one command
/// serves every agent. Done before any plan is made; a placeholder without a segment is refused.
pub fn place(command: &mut Command) -> Result<(), CliError> {
    let (scale, paths): (&mut ScaleArgs, Vec<(&str, &mut Option<PathBuf>)>) = match command {
        Command::Run(RunArgs { load, .. }) | Command::Kv(KvArgs { load, .. }) => {
            let paths = vec![("--json", &mut load.json), ("--csv", &mut load.csv), ("--hdr-log", &mut load.hdr_log)];
            (&mut load.scale, paths)
        }
        Command::Sweep(a) => {
            let s = &mut a.steps;
            let paths = vec![
                ("--json", &mut s.json),
                ("--csv", &mut s.csv),
                ("-o", &mut s.output),
                ("--hdr-log", &mut s.hdr_log),
            ];
            (&mut s.scale, paths)
        }
        _ => return Ok(()),
    };
    if let Some(text) = &scale.segment {
        scale.segment = Some(crate::deploy::orchestrator::resolve_segment(text).map_err(CliError::new)?);
    }
    let index = scale.segment.as_deref().and_then(|s| s.split_once('/')).and_then(|(i, _)| i.trim().parse().ok());
    for (flag, path) in paths {
        let Some(p) = path.as_deref().filter(|p| crate::deploy::orchestrator::has_placeholder(p)) else { continue };
        let Some(i) = index else {
            return Err(CliError::new(format!(
                "{flag} '{}': {} stands for the segment's index; give --segment I/N or auto/N, or name the file \
                 without it",
                p.display(),
                crate::deploy::orchestrator::INDEX_PLACEHOLDER
            )));
        };
        *path = Some(crate::deploy::orchestrator::with_index(p, i));
    }
    Ok(())
}

/// A comma-separated list of `flag` with one item per agent (empty when the flag is not given).
fn one_per_agent<'a>(flag: &str, what: &str, list: Option<&'a str>, n: usize) -> Result<Vec<&'a str>, CliError> {
    let Some(list) = list else { return Ok(Vec::new()) };
    let items: Vec<&str> = list.split(',').map(str::trim).collect();
    if items.len() != n || items.iter().any(|i| i.is_empty()) {
        return Err(CliError::new(format!(
            "{flag} '{list}': {} {what} for {n} agents; give one per agent, separated by commas",
            items.len()
        )));
    }
    Ok(items)
}

pub fn run_agents(agents: &Agents, interrupt: &AtomicBool) -> Result<ExitCode, CliError> {
    let (n, outputs) = (agents.n, &agents.outputs);
    if n == 0 {
        return Err(CliError::new("--agents 0: give at least 1 agent"));
    }
    if n > MOST_LOCAL_AGENTS {
        return Err(CliError::new(format!(
            "--agents {n}: at most {MOST_LOCAL_AGENTS} agents on one machine (they share its cores); spread more over \
             machines with --segment I/N or hakaru k8s job"
        )));
    }
    let hdr_log = match &agents.plan {
        AgentPlan::Run(RunArgs { load, .. }) | AgentPlan::Kv(KvArgs { load, .. }) => load.hdr_log.is_some(),
        AgentPlan::Sweep(a) => a.steps.hdr_log.is_some(),
    };
    if hdr_log {
        return Err(CliError::new(format!(
            "--hdr-log with --agents {n}: not yet (the agents' logs are not merged into one); run each agent with \
             --segment I/N and its own --hdr-log"
        )));
    }
    // Checked before any agent starts, as the command's own process would: every agent must get a part.
    agents.plan.check_split(n, &format!("--agents {n}"))?;
    let thresholds = crate::judge::gates::parse_all("--threshold", &agents.thresholds)?;
    let history = super::history::recorder(&agents.history)?;
    let sources = one_per_agent("--agent-source", "address(es)", agents.sources.as_deref(), n)?;
    let namespaces = one_per_agent("--agent-netns", "namespace(s)", agents.namespaces.as_deref(), n)?;
    if !namespaces.is_empty() {
        // SAFETY: geteuid only reads this process's effective user id.
        if unsafe { libc::geteuid() } != 0 {
            return Err(CliError::new(
                "--agent-netns: entering a network namespace (ip netns exec) needs root; run as root or leave it out",
            ));
        }
        for ns in &namespaces {
            if !std::path::Path::new("/run/netns").join(ns).exists() {
                return Err(CliError::new(format!(
                    "--agent-netns: no network namespace '{ns}' (ip netns list shows them); create it with ip netns add"
                )));
            }
        }
    }
    let start_at = show_instant(SystemTime::now() + START_MARGIN);
    let dir = AgentDir::new()?;
    let exe = std::env::current_exe().map_err(|e| CliError::runtime(format!("finding hakaru itself: {e}")))?;
    // Every child started is waited for on every path (a failed start, an agent that fails): no zombie, no agent
    // left running after this process.
    let mut children = Children(Vec::new());
    for i in 0..n {
        let json = dir.path().join(format!("agent-{i}.json"));
        let log = std::fs::File::create(dir.path().join(format!("agent-{i}.log")))
            .map_err(|e| CliError::runtime(format!("an agent's log: {e}")))?;
        let mut agent = match namespaces.get(i) {
            Some(ns) => {
                let mut p = Process::new("ip");
                p.args(["netns", "exec", ns]).arg(&exe);
                p
            }
            None => Process::new(&exe),
        };
        // A secret (a header, a URL's password) reaches the agent through its environment, never its command line.
        let line = agents.plan.agent_line(i, n, &start_at, &json, sources.get(i).copied())?;
        let (shown, hidden) = split_secrets(&line, crate::base::secrets::holds_secret);
        agent.args(shown);
        if !hidden.is_empty() {
            agent.env(crate::base::secrets::SECRET_ARGS_VAR, serde_json::to_string(&hidden).expect("strings"));
        }
        let child = agent
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| CliError::runtime(format!("starting agent {i}/{n}: {e}")))?;
        children.0.push((i, json, Some(child)));
    }
    // A stop signal reaches the agents too (they are in this process group on a terminal); here it only ends
    // the wait for them, and what they wrote is merged.
    let mut ended = Vec::new();
    for (i, json, child) in &mut children.0 {
        let Some(mut child) = child.take() else { continue };
        ended.push((*i, json.clone(), child.wait()));
    }
    let mut docs = Vec::new();
    let mut names = Vec::new();
    for (i, json, status) in ended {
        let status = status.map_err(|e| CliError::runtime(format!("waiting for agent {i}/{n}: {e}")))?;
        let log = std::fs::read_to_string(dir.path().join(format!("agent-{i}.log"))).unwrap_or_default();
        let said = log.lines().find(|l| l.starts_with("hakaru: error:")).map(str::to_string);
        match std::fs::read_to_string(&json).ok().and_then(|t| serde_json::from_str::<ResultDocument>(&t).ok()) {
            Some(doc) => {
                docs.push(doc);
                names.push(format!("agent {i}/{n}"));
            }
            None => {
                let why = said.unwrap_or_else(|| format!("it ended with {status} and wrote no result"));
                let code = status.code().unwrap_or(1);
                let message = format!("agent {i}/{n}: {}", why.trim_start_matches("hakaru: error: "));
                return Err(if code == 2 { CliError::new(message) } else { CliError::runtime(message) });
            }
        }
    }
    let merged = crate::judge::merge::merge(&docs, &names, false).map_err(CliError::runtime)?;
    let (settings, keepalive) = (merged.settings.clone(), merged.settings.keepalive);
    let mut session = Session::new(settings, keepalive, outputs, thresholds, &history, interrupt).adopting(merged);
    if interrupt.load(Ordering::Relaxed) {
        session.live.doc.interrupted = true;
    }
    session.say(format!("hakaru: {n} agents, merged").as_str());
    // A checked workload ends as its agents' would: `ok`, or `FAILED:` with the seed that replays it.
    let (phased, checked) = match &agents.plan {
        AgentPlan::Kv(a) => (a.workload.trim() != "mix", a.workload.trim() == "order" || a.verify),
        _ => (false, false),
    };
    session.end(if phased { Ending::Checked(checked) } else { Ending::Summary })
}

/// The agents' documents and logs, in a directory of this process's own, removed when the merge is done.
struct AgentDir(PathBuf);

impl AgentDir {
    fn new() -> Result<AgentDir, CliError> {
        let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!("hakaru-agents-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| CliError::runtime(format!("a directory for the agents ({}): {e}", dir.display())))?;
        Ok(AgentDir(dir))
    }

    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for AgentDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What `k8s job` and `swarm service` both print, from their common flags: the agents' command parsed and
/// checked here (a typo is one line now, not N failed agents), its secret arguments split off for the
/// orchestrator's secret store, the common start. `who` names the command in messages.
pub fn deployment(args: &OrchestratorArgs, who: &str) -> Result<Deployment, CliError> {
    // The agents' line rendered from the flags just parsed: what each agent's parser will read back.
    let (line, redact) = agent_command(&args.command, args.agents as usize, who)?;
    // Secret names this process knows (its environment, from its own flags) and the agents' command's own: the
    // arguments they name go to the orchestrator's secret store, and every container hides them too.
    let names = |var: &str, own: &[String]| -> Vec<String> {
        crate::base::secrets::user_names(var).iter().chain(own).cloned().collect()
    };
    let headers = names(crate::base::secrets::REDACT_HEADERS_VAR, &redact.0);
    let params = names(crate::base::secrets::REDACT_PARAMS_VAR, &redact.1);
    let (command, secret_args) =
        split_secrets(&line, |a| crate::base::secrets::holds_secret_named(a, &headers, &params));
    let start_at = match &args.start_at {
        Some(at) => crate::deploy::orchestrator::parse_start_at(at).map_err(CliError::new)?,
        None => crate::deploy::orchestrator::start_in(SystemTime::now(), duration_flag("--start-in", &args.start_in)?),
    };
    let d = Deployment {
        name: args.name.clone(),
        image: args.image.clone(),
        agents: args.agents,
        start_at,
        command,
        secret_args,
        redact: [
            (crate::base::secrets::REDACT_HEADERS_VAR, headers.join(",")),
            (crate::base::secrets::REDACT_PARAMS_VAR, params.join(",")),
        ]
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .collect(),
        collect_timeout: duration_flag("--collect-timeout", &args.collect_timeout)?,
        allow_partial: args.allow_partial,
    };
    d.check().map_err(CliError::new)?;
    Ok(d)
}

fn duration_flag(flag: &str, text: &str) -> Result<Duration, CliError> {
    crate::base::units::parse_flag_duration(text).map_err(|e| CliError::new(format!("{flag} '{text}': {e}")))
}

/// The flags each agent gets from the orchestrator's command; the user's command must not set them too.
const SET_FOR_THE_AGENTS: [&str; 3] = ["--segment", "--start-at", "--json"];

/// The agents' command line as rendered from its parsed flags, and the secret names (`--redact-header`,
/// `--redact-param`) it carries, which its rendering leaves out (they are global flags) and the agents get instead.
type AgentCommand = (Vec<String>, (Vec<String>, Vec<String>));

/// Parses the agents' command with hakaru's own parser, so a typo is refused here rather than in N agents; only
/// `run`, `sweep` and `kv` take a segment of a plan.
///
/// Only the parse: the plan itself (URLs resolved, files read, the target reached) is checked by each agent where
/// it runs, where the names resolve and the files are.
fn agent_command(command: &[String], agents: usize, who: &str) -> Result<AgentCommand, CliError> {
    if let Some(flag) =
        command.iter().find(|a| SET_FOR_THE_AGENTS.iter().any(|f| a.as_str() == *f || a.starts_with(&format!("{f}="))))
    {
        return Err(CliError::new(format!(
            "the agents' command sets {flag}: remove it, {who} gives every agent its --segment, the common \
             --start-at and --json /results/agent-I.json"
        )));
    }
    let cli =
        Cli::try_parse_from(std::iter::once("hakaru").chain(command.iter().map(String::as_str))).map_err(|e| {
            // clap's suggestion ("a similar argument exists: '--connections'") is the fix: keep it on the line, with
            // the agents' command's own help.
            let tip = super::clap_error_tip(&e).map(|t| format!("; {t}"));
            let help = super::own_help(command.iter().cloned());
            CliError::new(format!(
                "the agents' command: {}{} (see '{help}')",
                super::clap_error_line(&e),
                tip.unwrap_or_default()
            ))
        })?;
    // Every agent must get a part: a plan with fewer connections or requests than agents would fail in them.
    let Some(plan) = AgentPlan::of(&cli.command) else {
        return Err(CliError::new(format!(
            "the agents' command '{}': give run, sweep or kv after '--' (the commands that take a segment)",
            command[0]
        )));
    };
    plan.check_split(agents, "the agents' command")?;
    // Each is one agent already: local agents inside it would multiply the plan.
    let scale = plan.scale();
    if scale.agents.is_some() || scale.agent_source.is_some() || scale.agent_netns.is_some() {
        return Err(CliError::new(format!(
            "the agents' command sets --agents: remove it (and --agent-source, --agent-netns); each agent of {who} \
             --agents N is one"
        )));
    }
    if let Some(r) = plan.rate() {
        crate::plan::parse_rate("--rate", r)?;
    }
    Ok((plan.render()?, (cli.redact_header.clone(), cli.redact_param.clone())))
}
