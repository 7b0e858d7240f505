//! One run spread over the agents an orchestrator starts (Kubernetes Indexed Jobs, Docker Swarm services): where an
//! agent learns its place (`--segment auto/N`), the files it leaves on the results volume, and everything the
//! Kubernetes manifests (`k8s`) and the Swarm commands (`swarm`) say alike: the agents' arguments and
//! environment, the common start, the collector's command. Each of those adds only its own format.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where the results volume is mounted in every agent's and the collector's container.
pub const RESULTS_DIR: &str = "/results";
/// Stands for the agent's segment index (from 0) in `--json`, `--csv` and the end files' paths: the orchestrator
/// runs one command for every agent, and each agent's files must still have names of their own.
pub const INDEX_PLACEHOLDER: &str = "{index}";
/// `--segment auto/N`: the index comes from the environment.
pub const AUTO: &str = "auto";
/// Set by Kubernetes in every pod of an Indexed Job: the pod's index, from 0.
pub const K8S_INDEX_VAR: &str = "JOB_COMPLETION_INDEX";
/// Set from Docker Swarm's `{{.Task.Slot}}` in a service's environment (Swarm expands templates in environment
/// variables and mounts, not in arguments): the replica's slot, from 1.
pub const SLOT_VAR: &str = "HAKARU_AGENT_SLOT";
/// A file a command that ends successfully writes (`exit code 0`), after every output is written: the collector's
/// sign that the agent's document is complete (a sweep rewrites it after every step, so its existing says nothing).
pub const DONE_FILE_VAR: &str = "HAKARU_DONE_FILE";

/// The agent's segment index (from 0) from its environment: `JOB_COMPLETION_INDEX` as it is (0-based), else
/// `HAKARU_AGENT_SLOT` minus one (1-based). The base is the variable's: each orchestrator sets only its own.
/// `Ok(None)` when neither is set.
pub fn index_from_env() -> Result<Option<usize>, String> {
    index_from(std::env::var(K8S_INDEX_VAR).ok(), std::env::var(SLOT_VAR).ok())
}

fn index_from(k8s: Option<String>, slot: Option<String>) -> Result<Option<usize>, String> {
    if let Some(text) = k8s {
        return text.trim().parse::<usize>().map(Some).map_err(|_| {
            format!("{K8S_INDEX_VAR}='{text}' is not an index; Kubernetes sets it to 0, 1, ... in an Indexed Job")
        });
    }
    if let Some(text) = slot {
        return match text.trim().parse::<usize>() {
            Ok(slot) if slot >= 1 => Ok(Some(slot - 1)),
            _ => Err(format!(
                "{SLOT_VAR}='{text}' is not a slot; set it to Docker Swarm's '{{{{.Task.Slot}}}}' (1, 2, ...)"
            )),
        };
    }
    Ok(None)
}

/// `--segment` as given, with `auto/N` read as `I/N` from the environment; other values are returned as they are
/// (the plan checks them).
pub fn resolve_segment(text: &str) -> Result<String, String> {
    let Some(count) = text.trim().strip_prefix(AUTO).and_then(|rest| rest.strip_prefix('/')) else {
        return Ok(text.to_string());
    };
    let n: usize = count
        .trim()
        .parse()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("--segment '{text}': write auto/N with N the number of agents, like auto/3"))?;
    match index_from_env() {
        Err(e) => Err(format!("--segment '{text}': {e}")),
        Ok(None) => Err(format!(
            "--segment '{text}': neither {K8S_INDEX_VAR} (Kubernetes Indexed Jobs, from 0) nor {SLOT_VAR} (Docker \
             Swarm: --env {SLOT_VAR}='{{{{.Task.Slot}}}}', from 1) is set; set one, or give --segment I/N"
        )),
        Ok(Some(i)) if i >= n => {
            let (var, base) = match std::env::var(K8S_INDEX_VAR) {
                Ok(v) => (format!("{K8S_INDEX_VAR}={v}"), "from 0"),
                Err(_) => (format!("{SLOT_VAR}={}", std::env::var(SLOT_VAR).unwrap_or_default()), "from 1"),
            };
            Err(format!(
                "--segment '{text}': {var} ({base}) is agent {} of only {n}; run {n} agents (completions, \
                 replicas) or give auto/N with N the number of agents",
                i + 1
            ))
        }
        Ok(Some(i)) => Ok(format!("{i}/{n}")),
    }
}

/// A path with [`INDEX_PLACEHOLDER`] replaced by `index`.
pub fn with_index(path: &Path, index: usize) -> PathBuf {
    PathBuf::from(path.to_string_lossy().replace(INDEX_PLACEHOLDER, &index.to_string()))
}

/// Whether a path holds [`INDEX_PLACEHOLDER`].
pub fn has_placeholder(path: &Path) -> bool {
    path.to_string_lossy().contains(INDEX_PLACEHOLDER)
}

/// The file an end-file variable ([`DONE_FILE_VAR`], `HAKARU_FAILURE_FILE`) names, its placeholder replaced by this
/// agent's index when the environment gives one (a failure before the flags were read must still land on the
/// agent's own name).
pub fn end_file(var: &str) -> Option<PathBuf> {
    let path = PathBuf::from(std::env::var_os(var)?);
    Some(match index_from_env() {
        Ok(Some(i)) => with_index(&path, i),
        _ => path,
    })
}

/// Agent `i`'s document, its end files, in the results directory `dir`.
pub fn document(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("agent-{i}.json"))
}
pub fn done_file(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("agent-{i}.done"))
}
pub fn failure_file(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("agent-{i}.failed"))
}

/// Most agents one deployment may have: a bound on the collector's waiting and the manifests, far above the
/// machines one benchmark uses.
pub const MAX_AGENTS: u32 = 10_000;

/// What every orchestrator is told alike, checked by the command that prints it: the agents, their command, the
/// common start and the collector.
#[derive(Clone, Debug)]
pub struct Deployment {
    /// Name of the agents (a Job, a service); the collector is NAME-merge.
    pub name: String,
    /// Image with hakaru as its entrypoint (scripts/image.sh builds one).
    pub image: String,
    pub agents: u32,
    /// The common start of the load.
    pub start_at: SystemTime,
    /// The agents' hakaru command (run, sweep or kv) and its flags, rendered from the parsed flags, without the
    /// arguments that hold a secret.
    pub command: Vec<String>,
    /// The arguments that hold a secret (a secret header, a URL's password, a secret query parameter) with their
    /// flags: in the orchestrator's secret store (a Kubernetes Secret, a Docker secret), never in arguments.
    pub secret_args: Vec<String>,
    /// `HAKARU_REDACT_HEADERS` and `_PARAMS` for every container: the secret names the agents and the collector hide.
    pub redact: Vec<(&'static str, String)>,
    /// The collector gives up when the agents have not all ended within this time.
    pub collect_timeout: Duration,
    /// The collector merges the agents that finished when others failed (`--allow-partial`).
    pub allow_partial: bool,
}

impl Deployment {
    /// The agent count and the collector's deadline; names and images are each orchestrator's to check.
    pub fn check(&self) -> Result<(), String> {
        if self.agents == 0 || self.agents > MAX_AGENTS {
            return Err(format!("--agents {}: give 1 to {MAX_AGENTS} agents", self.agents));
        }
        if self.image.is_empty() || self.image.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!(
                "--image '{}': not an image reference; give one such as registry.example/hakaru:0.1.0",
                self.image
            ));
        }
        if self.collect_timeout.as_secs() == 0 {
            return Err("--collect-timeout: give at least 1s (e.g. 6h)".into());
        }
        Ok(())
    }

    /// The start as RFC 3339 in UTC, whole seconds: what every agent gets as `--start-at`.
    pub fn start_at_text(&self) -> String {
        humantime::format_rfc3339_seconds(self.start_at).to_string()
    }

    /// The directory of this run on the results volume: a new one for every start, so documents of an earlier run
    /// with the same name are never merged into this one.
    pub fn run_dir(&self) -> String {
        format!("run-{}", self.start_at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()))
    }

    /// The agent's hakaru arguments, the same for every agent: the user's command, then its segment read from
    /// the environment, the common start, its document under its own index, and no history of its own (the merged
    /// document is the run).
    pub fn agent_args(&self) -> Vec<String> {
        let mut args = self.command.clone();
        args.extend([
            "--segment".to_string(),
            format!("{AUTO}/{}", self.agents),
            "--start-at".to_string(),
            self.start_at_text(),
            "--json".to_string(),
            format!("{RESULTS_DIR}/agent-{INDEX_PLACEHOLDER}.json"),
            "--no-history".to_string(),
        ]);
        args
    }

    /// The agents' environment besides their index: the secret names to hide, and the end files the collector
    /// waits for (`done` for a document that is complete, `failed` with the exit code and why).
    pub fn agent_env(&self) -> Vec<(&'static str, String)> {
        let mut env = self.redact.clone();
        env.push((DONE_FILE_VAR, format!("{RESULTS_DIR}/agent-{INDEX_PLACEHOLDER}.done")));
        env.push((crate::error::FAILURE_FILE_VAR, format!("{RESULTS_DIR}/agent-{INDEX_PLACEHOLDER}.failed")));
        env
    }

    /// The collector's hakaru arguments: wait for every agent in the results directory, merge, write merged.json.
    pub fn collector_args(&self) -> Vec<String> {
        let mut args = vec![
            "collect".to_string(),
            RESULTS_DIR.to_string(),
            "--agents".to_string(),
            self.agents.to_string(),
            "--timeout".to_string(),
            format!("{}s", self.collect_timeout.as_secs()),
            "-o".to_string(),
            self.merged_document(),
        ];
        if self.allow_partial {
            args.push("--allow-partial".to_string());
        }
        args
    }

    /// Where the collector writes the merged document.
    pub fn merged_document(&self) -> String {
        format!("{RESULTS_DIR}/merged.json")
    }

    /// The secret arguments as the JSON list hakaru reads (`HAKARU_SECRET_ARGS` or the file
    /// `HAKARU_SECRET_ARGS_FILE` names); None when there are none.
    pub fn secret_json(&self) -> Option<String> {
        (!self.secret_args.is_empty()).then(|| serde_json::to_string(&self.secret_args).expect("a list of strings"))
    }
}

/// Reads a start time: RFC 3339 (`2026-11-23T21:00:00Z`) or Unix seconds.
pub fn parse_start_at(text: &str) -> Result<SystemTime, String> {
    let t = text.trim();
    if t.bytes().all(|b| b.is_ascii_digit())
        && let Ok(secs) = t.parse::<u64>()
    {
        return Ok(UNIX_EPOCH + Duration::from_secs(secs));
    }
    humantime::parse_rfc3339_weak(t).map_err(|_| {
        format!("--start-at '{text}': not a time; give RFC 3339 in UTC (2026-11-23T21:00:00Z) or Unix seconds")
    })
}

/// `now + start_in` in whole seconds, rounded up: the agents get RFC 3339 seconds, and the start must not come early.
pub fn start_in(now: SystemTime, start_in: Duration) -> SystemTime {
    let since_epoch = (now + start_in).duration_since(UNIX_EPOCH).unwrap_or_default();
    UNIX_EPOCH + Duration::from_secs(since_epoch.as_secs() + u64::from(since_epoch.subsec_nanos() > 0))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn the_index_is_kubernetes_from_0_or_swarm_slot_from_1() {
        assert_eq!(index_from(Some("0".into()), None), Ok(Some(0)));
        assert_eq!(index_from(None, Some("1".into())), Ok(Some(0)));
        assert_eq!(index_from(None, Some("3".into())), Ok(Some(2)));
        assert_eq!(index_from(None, None), Ok(None));
        // Kubernetes' variable is taken when both are there: it is the one a pod cannot lack.
        assert_eq!(index_from(Some("2".into()), Some("1".into())), Ok(Some(2)));
        assert!(index_from(None, Some("0".into())).unwrap_err().starts_with("HAKARU_AGENT_SLOT='0'"));
        // An unexpanded template (Swarm's, given in arguments or to a plain docker run) is named as such.
        let e = index_from(None, Some("{{.Task.Slot}}".into())).unwrap_err();
        assert!(e.contains("{{.Task.Slot}}"), "{e}");
        assert!(index_from(Some("x".into()), None).unwrap_err().starts_with("JOB_COMPLETION_INDEX='x'"));
    }

    #[test]
    fn placeholders_and_other_segments() {
        assert_eq!(resolve_segment("1/3"), Ok("1/3".to_string()));
        assert!(resolve_segment("auto/0").unwrap_err().starts_with("--segment 'auto/0'"));
        assert!(resolve_segment("auto/x").unwrap_err().contains("auto/N"));
        assert_eq!(with_index(Path::new("/results/agent-{index}.json"), 2), Path::new("/results/agent-2.json"));
        assert!(has_placeholder(Path::new("a-{index}")) && !has_placeholder(Path::new("a-0")));
    }

    #[test]
    fn the_test_deployment_is_valid() {
        assert!(deployment().check().is_ok());
    }

    pub(crate) fn deployment() -> Deployment {
        Deployment {
            name: "hakaru".into(),
            image: "hakaru:test".into(),
            agents: 3,
            start_at: parse_start_at("2026-11-23T21:00:00Z").unwrap(),
            command: vec!["run".into(), "http://web/".into()],
            secret_args: Vec::new(),
            redact: Vec::new(),
            collect_timeout: Duration::from_secs(3600),
            allow_partial: false,
        }
    }

    #[test]
    fn every_agent_gets_the_same_arguments_and_finds_its_place_itself() {
        let d = deployment();
        assert_eq!(
            d.agent_args()[2..],
            [
                "--segment",
                "auto/3",
                "--start-at",
                "2026-11-23T21:00:00Z",
                "--json",
                "/results/agent-{index}.json",
                "--no-history"
            ]
        );
        assert_eq!(d.collector_args()[..4], ["collect", "/results", "--agents", "3"]);
        let env = d.agent_env();
        assert!(env.contains(&(DONE_FILE_VAR, "/results/agent-{index}.done".into())));
    }

    #[test]
    fn a_start_reads_as_rfc_3339_or_unix_seconds_and_prints_in_utc() {
        let d = deployment();
        assert_eq!(d.start_at_text(), "2026-11-23T21:00:00Z");
        let from_secs = parse_start_at(&d.start_at.duration_since(UNIX_EPOCH).unwrap().as_secs().to_string());
        assert_eq!(from_secs.unwrap(), d.start_at);
        assert!(parse_start_at("tomorrow").unwrap_err().starts_with("--start-at 'tomorrow'"));
        let at = start_in(UNIX_EPOCH + Duration::from_millis(1500), Duration::from_secs(60));
        assert_eq!(at, UNIX_EPOCH + Duration::from_secs(62));
    }
}
