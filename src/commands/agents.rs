//! `--agents N`: the plan run as N agent processes of this binary on this machine, each its `--segment I/N`
//! and one common `--start-at`, their documents merged as `hakaru merge` does, then printed and written as one.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command as Process, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use crate::cli::args::Command;
use crate::error::UsageError;
use crate::export::{Exporter, csv::Csv, drnbench::DrnbenchCsv, json::Json, sweep_csv::SweepCsv, text::Text};
use crate::plan::segment::show_instant;
use crate::result::ResultDocument;
use crate::step::LiveDocument;

/// Time for the agents to start and check their targets before the common instant.
const START_MARGIN: Duration = Duration::from_secs(2);

/// The output files the merged document goes to, as the command's own flags name them.
pub struct Outputs {
    json: Option<PathBuf>,
    csv: Option<PathBuf>,
    drnbench: Option<PathBuf>,
    sweep: bool,
}

/// What `--agents N` asks: N, where the merged document goes, and each agent's `--source-address` if given.
pub struct Agents {
    pub n: usize,
    pub outputs: Outputs,
    pub sources: Option<String>,
    pub namespaces: Option<String>,
}

/// `Some` when the command asks for `--agents N`.
pub fn asked(command: &Command) -> Option<Agents> {
    let (scale, outputs) = match command {
        Command::Run(a) => (&a.load.scale, load_outputs(&a.load)),
        Command::Kv(a) => (&a.load.scale, load_outputs(&a.load)),
        Command::Sweep(a) => (
            &a.study.scale,
            Outputs {
                json: a.study.json.clone(),
                csv: a.study.csv.clone(),
                drnbench: a.study.output.clone(),
                sweep: true,
            },
        ),
        // `capacity` refuses --agents itself, with --segment and --start-at.
        _ => return None,
    };
    scale.agents.map(|n| Agents {
        n,
        outputs,
        sources: scale.agent_source.clone(),
        namespaces: scale.agent_netns.clone(),
    })
}

fn load_outputs(l: &crate::cli::args::LoadArgs) -> Outputs {
    Outputs { json: l.json.clone(), csv: l.csv.clone(), drnbench: None, sweep: false }
}

/// The command line without `--agents N` and the output flags (the agents write their own documents).
fn agent_args(args: &[OsString]) -> Vec<OsString> {
    const WITH_VALUE: [&str; 8] =
        ["--agents", "--agent-source", "--agent-netns", "--json", "--csv", "-o", "--output", "--output-path"];
    let mut out = Vec::new();
    let mut skip = false;
    for a in args {
        if std::mem::take(&mut skip) {
            continue;
        }
        let text = a.to_string_lossy();
        if WITH_VALUE.contains(&text.as_ref()) {
            skip = true;
        } else if text == "-q" || text == "--quiet" {
            // Every agent is quiet; the merged summary is this process's to print.
        } else if !WITH_VALUE.iter().any(|f| f.starts_with("--") && text.starts_with(&format!("{f}="))) {
            out.push(a.clone());
        }
    }
    out
}

/// A comma-separated list of `flag` with one item per agent (empty when the flag is not given).
fn one_per_agent<'a>(flag: &str, what: &str, list: Option<&'a str>, n: usize) -> Result<Vec<&'a str>, UsageError> {
    let Some(list) = list else { return Ok(Vec::new()) };
    let items: Vec<&str> = list.split(',').map(str::trim).collect();
    if items.len() != n || items.iter().any(|i| i.is_empty()) {
        return Err(UsageError::new(format!(
            "{flag} '{list}': {} {what} for {n} agents; give one per agent, separated by commas",
            items.len()
        )));
    }
    Ok(items)
}

pub fn run_agents(agents: &Agents, interrupt: &AtomicBool) -> Result<ExitCode, UsageError> {
    let (n, outputs) = (agents.n, &agents.outputs);
    if n == 0 {
        return Err(UsageError::new("--agents 0: give at least 1 agent"));
    }
    let sources = one_per_agent("--agent-source", "address(es)", agents.sources.as_deref(), n)?;
    let namespaces = one_per_agent("--agent-netns", "namespace(s)", agents.namespaces.as_deref(), n)?;
    if !namespaces.is_empty() {
        // SAFETY: geteuid only reads this process's effective user id.
        if unsafe { libc::geteuid() } != 0 {
            return Err(UsageError::new(
                "--agent-netns: entering a network namespace (ip netns exec) needs root; run as root or leave it out",
            ));
        }
        for ns in &namespaces {
            if !std::path::Path::new("/run/netns").join(ns).exists() {
                return Err(UsageError::new(format!(
                    "--agent-netns: no network namespace '{ns}' (ip netns list shows them); create it with ip netns add"
                )));
            }
        }
    }
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let mut base = agent_args(&args);
    let start_given = base.iter().any(|a| a.to_string_lossy().starts_with("--start-at"));
    if !start_given {
        base.push("--start-at".into());
        base.push(show_instant(SystemTime::now() + START_MARGIN).into());
    }
    let dir = AgentDir::new()?;
    let exe = std::env::current_exe().map_err(|e| UsageError::runtime(format!("finding hakaru itself: {e}")))?;
    let mut children = Vec::new();
    for i in 0..n {
        let json = dir.path().join(format!("agent-{i}.json"));
        let log = std::fs::File::create(dir.path().join(format!("agent-{i}.log")))
            .map_err(|e| UsageError::runtime(format!("an agent's log: {e}")))?;
        let mut agent = match namespaces.get(i) {
            Some(ns) => {
                let mut p = Process::new("ip");
                p.args(["netns", "exec", ns]).arg(&exe);
                p
            }
            None => Process::new(&exe),
        };
        agent.args(&base);
        if let Some(source) = sources.get(i) {
            agent.args(["--source-address", source]);
        }
        let child = agent
            .args(["--segment", &format!("{i}/{n}"), "--json"])
            .arg(&json)
            .arg("-q")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| UsageError::runtime(format!("starting agent {i}/{n}: {e}")))?;
        children.push((i, json, child));
    }
    // A stop signal reaches the agents too (they are in this process group on a terminal); here it only ends
    // the wait for them, and what they wrote is merged.
    let mut docs = Vec::new();
    let mut names = Vec::new();
    for (i, json, mut child) in children {
        let status = child.wait().map_err(|e| UsageError::runtime(format!("waiting for agent {i}/{n}: {e}")))?;
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
                return Err(if code == 2 { UsageError::new(message) } else { UsageError::runtime(message) });
            }
        }
    }
    let merged = crate::merge::merge(&docs, &names, false).map_err(UsageError::runtime)?;
    let mut files: Vec<(PathBuf, Box<dyn Exporter>)> = Vec::new();
    if let Some(p) = &outputs.json {
        files.push((p.clone(), Box::new(Json)));
    }
    if let Some(p) = &outputs.csv {
        files.push((p.clone(), if outputs.sweep { Box::new(SweepCsv) } else { Box::new(Csv) }));
    }
    if let Some(p) = &outputs.drnbench {
        files.push((p.clone(), Box::new(DrnbenchCsv)));
    }
    let keepalive = merged.settings.keepalive;
    let mut live = LiveDocument::new(merged.settings.clone(), keepalive, files);
    live.doc = merged;
    live.write_final()?;
    live.say(format!("hakaru: {n} agents, merged").as_str());
    live.say(Text.render(&live.doc).trim_end());
    Ok(if interrupt.load(Ordering::Relaxed) || live.doc.interrupted {
        ExitCode::from(crate::stop::exit_code())
    } else {
        ExitCode::SUCCESS
    })
}

/// The agents' documents and logs, in a directory of this process's own, removed when the merge is done.
struct AgentDir(PathBuf);

impl AgentDir {
    fn new() -> Result<AgentDir, UsageError> {
        let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!("hakaru-agents-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| UsageError::runtime(format!("a directory for the agents ({}): {e}", dir.display())))?;
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
