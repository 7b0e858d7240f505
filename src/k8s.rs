//! Kubernetes manifests for one run spread over many machines: an Indexed Job of agents (each runs segment I of N
//! of the plan from one common start and writes its result document), the volume claim the documents go to, and
//! a collector Job that merges them. Only text is made here; hakaru never talks to a cluster.
//!
//! The manifests are typed structs serialized with serde-saphyr, so the fields keep the order Kubernetes users
//! read them in. Not serde_norway (serde_yaml's fork): it leaves `2026-11-23T21:00:00Z`, `on`, `yes` and `10:20`
//! plain, which Kubernetes' YAML 1.1 reader takes for a timestamp, booleans and a number (kubernetes-validate
//! refused the start time); serde-saphyr quotes every string a YAML 1.1 reader would read as something else.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::error::UsageError;

/// The line before an agent's document in its log (`--results-volume stdout`).
pub const RESULT_BEGIN: &str = "--- hakaru result begin ---";
/// The line after it.
pub const RESULT_END: &str = "--- hakaru result end ---";
/// Where the results volume is mounted in every pod.
pub const RESULTS_DIR: &str = "/results";
/// The variable the Indexed Job sets to the pod's index, 0 to N-1; Kubernetes expands `$(NAME)` in args from
/// the container's environment, so it is declared in each container (from the index annotation) rather than
/// left to the Job controller to add.
const INDEX_VAR: &str = "JOB_COMPLETION_INDEX";
/// The pod annotation the Job controller writes the index to.
const INDEX_ANNOTATION: &str = "metadata.annotations['batch.kubernetes.io/job-completion-index']";

/// Where the agents' result documents go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Results {
    /// A ReadWriteMany volume claim, and a collector Job merging the documents on it.
    Volume,
    /// Each agent's log, between [`RESULT_BEGIN`] and [`RESULT_END`].
    Stdout,
}

/// Everything the manifests say, checked: built by the `k8s job` command from its flags.
#[derive(Clone, Debug)]
pub struct JobPlan {
    /// Name of the agents' Job (the collector is NAME-merge, the claim NAME-results).
    pub name: String,
    pub namespace: Option<String>,
    /// Image with hakaru as its entrypoint.
    pub image: String,
    /// Image with a POSIX shell, for publishing, waiting and printing.
    pub helper_image: String,
    pub agents: u32,
    /// The common start of the load.
    pub start_at: SystemTime,
    /// The agents' hakaru command (run, sweep or kv) and its flags, rendered from the parsed flags, without the
    /// arguments that hold a secret.
    pub command: Vec<String>,
    /// The arguments that hold a secret (a secret header, a URL's password, a secret query parameter) with their
    /// flags: in a Secret the manifests create, read by the agents from their environment, never in a pod's args.
    pub secret_args: Vec<String>,
    /// `HAKARU_REDACT_HEADERS` and `_PARAMS` for every pod: the secret names the agents and the collector hide.
    pub redact: Vec<(&'static str, String)>,
    pub results: Results,
    pub storage_size: String,
    pub storage_class: Option<String>,
    /// CPU and memory of each agent (requests equal to limits), Kubernetes quantities.
    pub cpu: Option<String>,
    pub memory: Option<String>,
    pub backoff_limit: u32,
    /// The collector Job's deadline.
    pub collect_timeout: Duration,
    /// The collector merges the agents that finished when others failed (`hakaru merge --allow-partial`).
    pub allow_partial: bool,
}

/// Most agents one Job may have: a bound on the collector's argument list and the shell loop, far above the
/// machines one benchmark uses.
pub const MAX_AGENTS: u32 = 10_000;

impl JobPlan {
    /// Checks the names, images, quantities and the agent count; the error names the flag and the fix.
    pub fn check(&self) -> Result<(), UsageError> {
        if self.agents == 0 || self.agents > MAX_AGENTS {
            return Err(UsageError::new(format!(
                "--agents {}: give 1 to {MAX_AGENTS} agents (pods of the Indexed Job)",
                self.agents
            )));
        }
        // Pods are named NAME-INDEX-RANDOM and labelled job-name=NAME-merge: 50 leaves room for both under 63.
        check_dns_label("--name", &self.name, 50)?;
        if let Some(ns) = &self.namespace {
            check_dns_label("--namespace", ns, 63)?;
        }
        check_image("--image", &self.image)?;
        check_image("--helper-image", &self.helper_image)?;
        check_quantity("--storage-size", &self.storage_size)?;
        if let Some(c) = &self.cpu {
            check_quantity("--cpu", c)?;
        }
        if let Some(m) = &self.memory {
            check_quantity("--memory", m)?;
        }
        if let Some(class) = &self.storage_class {
            check_dns_subdomain("--storage-class", class)?;
        }
        if self.collect_timeout.as_secs() == 0 {
            return Err(UsageError::new("--collect-timeout: give at least 1s (e.g. 6h)"));
        }
        Ok(())
    }

    /// The start as RFC 3339 in UTC, whole seconds: what every agent gets as `--start-at`.
    pub fn start_at_text(&self) -> String {
        humantime::format_rfc3339_seconds(self.start_at).to_string()
    }

    /// The directory of this run on the results volume: a new one for every start, so documents of an earlier run
    /// with the same name are never merged into this one (the kubelet creates it as the `subPath`).
    pub fn run_dir(&self) -> String {
        format!("run-{}", self.start_at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()))
    }

    /// The agent's hakaru arguments: the user's command, then its segment, the common start and where its
    /// document goes (a `.partial` name the agent pod renames once hakaru has exited successfully).
    pub fn agent_args(&self) -> Vec<String> {
        let mut args = self.command.clone();
        args.extend([
            "--segment".to_string(),
            format!("$({INDEX_VAR})/{}", self.agents),
            "--start-at".to_string(),
            self.start_at_text(),
            "--json".to_string(),
            format!("{RESULTS_DIR}/agent-$({INDEX_VAR}).partial.json"),
        ]);
        args
    }

    /// The documents the collector waits for and merges: agent-0.json ... agent-(N-1).json.
    pub fn agent_documents(&self) -> Vec<String> {
        (0..self.agents).map(|i| format!("{RESULTS_DIR}/agent-{i}.json")).collect()
    }

    /// Every manifest, in the order to apply them (the claim before the pods that mount it).
    pub fn manifests(&self) -> Vec<Manifest> {
        let mut all = Vec::new();
        if !self.secret_args.is_empty() {
            all.push(Manifest::Secret(self.secret()));
        }
        if self.results == Results::Volume {
            all.push(Manifest::Claim(self.claim()));
        }
        all.push(Manifest::Job(self.agents_job()));
        if self.results == Results::Volume {
            all.push(Manifest::Job(self.collector_job()));
        }
        all
    }

    /// The secret names every pod hides, as environment variables.
    fn redact_env(&self) -> Vec<EnvVar> {
        self.redact.iter().map(|(name, value)| EnvVar { name, value: Some(value.clone()), value_from: None }).collect()
    }

    fn secret_name(&self) -> String {
        format!("{}-args", self.name)
    }

    /// The Secret holding the agents' secret arguments, as the JSON list hakaru reads from `HAKARU_SECRET_ARGS`.
    fn secret(&self) -> SecretObject {
        SecretObject {
            api_version: "v1",
            kind: "Secret",
            metadata: self.metadata(self.secret_name(), "agent"),
            kind_of_secret: "Opaque",
            string_data: BTreeMap::from([(
                SECRET_KEY,
                serde_json::to_string(&self.secret_args).expect("a list of strings"),
            )]),
        }
    }

    /// The manifests as one YAML stream, `---` before each, after a comment saying what they do.
    pub fn to_yaml(&self) -> String {
        let mut out = format!(
            "# hakaru k8s job: {} agents of '{}', the load starting at {} (kubectl apply -f -)\n",
            self.agents,
            self.command.first().map_or("", String::as_str),
            self.start_at_text()
        );
        let mut options = serde_saphyr::SerializerOptions::default();
        // Shell scripts stay on one line as written, not folded at 80 columns.
        options.prefer_block_scalars = false;
        for m in self.manifests() {
            out.push_str("---\n");
            // Serializing these plain structs of strings, numbers and lists cannot fail.
            out.push_str(&serde_saphyr::to_string_with_options(&m, options.clone()).expect("manifests serialize"));
        }
        out
    }

    fn labels(&self, component: &str) -> BTreeMap<&'static str, String> {
        BTreeMap::from([
            ("app.kubernetes.io/component", component.to_string()),
            ("app.kubernetes.io/instance", self.name.clone()),
            ("app.kubernetes.io/name", "hakaru".to_string()),
        ])
    }

    fn metadata(&self, name: String, component: &str) -> Metadata {
        Metadata { name: Some(name), namespace: self.namespace.clone(), labels: self.labels(component) }
    }

    fn claim_name(&self) -> String {
        format!("{}-results", self.name)
    }

    fn claim(&self) -> Object<ClaimSpec> {
        Object {
            api_version: "v1",
            kind: "PersistentVolumeClaim",
            metadata: self.metadata(self.claim_name(), "results"),
            spec: ClaimSpec {
                // Agents on different nodes write to it at once.
                access_modes: vec!["ReadWriteMany"],
                resources: Requests { requests: BTreeMap::from([("storage", self.storage_size.clone())]) },
                storage_class_name: self.storage_class.clone(),
            },
        }
    }

    /// The volume every pod mounts at /results: this run's directory of the claim, or a pod's own empty dir.
    fn results_volume(&self) -> (Volume, VolumeMount) {
        let (source, sub_path) = match self.results {
            Results::Volume => {
                (VolumeSource::PersistentVolumeClaim { claim_name: self.claim_name() }, Some(self.run_dir()))
            }
            Results::Stdout => (VolumeSource::EmptyDir {}, None),
        };
        let volume = Volume { name: "results", source };
        (volume, VolumeMount { name: "results", mount_path: RESULTS_DIR, sub_path })
    }

    fn resources(&self) -> Option<Resources> {
        let mut amounts = BTreeMap::new();
        if let Some(c) = &self.cpu {
            amounts.insert("cpu", c.clone());
        }
        if let Some(m) = &self.memory {
            amounts.insert("memory", m.clone());
        }
        // Requests equal to limits: an agent's CPU is its measuring instrument, it must not be shared.
        (!amounts.is_empty()).then(|| Resources { requests: amounts.clone(), limits: amounts })
    }

    /// The agents: an Indexed Job whose pod runs hakaru as its init container, then publishes the document.
    ///
    /// Why hakaru runs as the init container: a sweep (or a phased kv workload) rewrites its document after every
    /// step, so a file that exists is not yet a finished one, and the hakaru image has no shell to mark it done.
    /// The main container starts only when hakaru has exited successfully, and then renames the document to the
    /// name the collector waits for (one rename: the collector never reads half a file), or prints it to the log.
    fn agents_job(&self) -> Object<JobSpec> {
        let (volume, mount) = self.results_volume();
        let index_env = vec![EnvVar {
            name: INDEX_VAR,
            value: None,
            value_from: Some(FieldSource {
                field_ref: Some(FieldRef { field_path: INDEX_ANNOTATION }),
                secret_key_ref: None,
            }),
        }];
        let mut agent_env = index_env.clone();
        agent_env.extend(self.redact_env());
        if !self.secret_args.is_empty() {
            agent_env.push(EnvVar {
                name: crate::secrets::SECRET_ARGS_VAR,
                value: None,
                value_from: Some(FieldSource {
                    field_ref: None,
                    secret_key_ref: Some(SecretKeyRef { name: self.secret_name(), key: SECRET_KEY }),
                }),
            });
        }
        if self.results == Results::Volume {
            // A failed agent says so on the volume (hakaru writes this file when it exits with a failure), so the
            // collector stops waiting for a document that will never come.
            agent_env.push(EnvVar {
                name: crate::error::FAILURE_FILE_VAR,
                value: Some(format!("{RESULTS_DIR}/agent-$({INDEX_VAR}).failed")),
                value_from: None,
            });
        }
        let agent = Container {
            name: "hakaru",
            image: self.image.clone(),
            command: None,
            args: self.agent_args(),
            env: agent_env,
            resources: self.resources(),
            volume_mounts: vec![mount.clone()],
        };
        let partial = format!("{RESULTS_DIR}/agent-${INDEX_VAR}.partial.json");
        let script = match self.results {
            Results::Volume => format!("set -e; mv -f {partial} {RESULTS_DIR}/agent-${INDEX_VAR}.json"),
            Results::Stdout => {
                format!("set -e; echo '{RESULT_BEGIN}'; cat {partial}; echo; echo '{RESULT_END}'")
            }
        };
        let publish = self.helper("result", script, index_env, mount);
        let component = "agent";
        Object {
            api_version: "batch/v1",
            kind: "Job",
            metadata: self.metadata(self.name.clone(), component),
            spec: JobSpec {
                completion_mode: Some("Indexed"),
                completions: self.agents,
                parallelism: self.agents,
                backoff_limit: self.backoff_limit,
                active_deadline_seconds: None,
                template: PodTemplate {
                    metadata: Metadata { name: None, namespace: None, labels: self.labels(component) },
                    spec: PodSpec {
                        restart_policy: "Never",
                        // One agent per machine where the cluster can: two on one node share its CPU and network.
                        topology_spread_constraints: vec![Spread {
                            max_skew: 1,
                            topology_key: "kubernetes.io/hostname",
                            when_unsatisfiable: "ScheduleAnyway",
                            label_selector: Selector { match_labels: self.labels(component) },
                        }],
                        init_containers: vec![agent],
                        containers: vec![publish],
                        volumes: vec![volume],
                    },
                },
            },
        }
    }

    /// The collector: waits until every agent's document is published, merges them, and prints the merged one.
    fn collector_job(&self) -> Object<JobSpec> {
        let (volume, mount) = self.results_volume();
        let merged = format!("{RESULTS_DIR}/merged.json");
        // A counter, not a list of N tests, so the script stays short for many agents; `expr` rather than
        // `$((...))`, which Kubernetes would read as a variable reference. An agent has ended when its document
        // or its failure file (written by hakaru when it fails) is there.
        let on_failure = if self.allow_partial {
            "echo merging the other agents, marked as partial".to_string()
        } else {
            "echo not merging: give hakaru k8s job --allow-partial to merge the others; exit 1".to_string()
        };
        let wait = format!(
            "i=0; failed=; while [ $i -lt {n} ]; do if [ -f {RESULTS_DIR}/agent-$i.json ]; then i=`expr $i + 1`; \
             elif [ -f {RESULTS_DIR}/agent-$i.failed ]; then failed=\"$failed $i\"; i=`expr $i + 1`; \
             else sleep 5; fi; done; if [ -n \"$failed\" ]; then for f in $failed; do \
             echo \"agent $f failed: `cat {RESULTS_DIR}/agent-$f.failed`\"; done; {on_failure}; fi; \
             echo all {n} agents have ended",
            n = self.agents
        );
        let mut merge_args = vec!["merge".to_string()];
        if self.allow_partial {
            merge_args.push("--allow-partial".to_string());
        }
        merge_args.extend(self.agent_documents());
        merge_args.extend(["-o".to_string(), merged.clone()]);
        let merge = Container {
            name: "merge",
            image: self.image.clone(),
            command: None,
            args: merge_args,
            env: self.redact_env(),
            resources: None,
            volume_mounts: vec![mount.clone()],
        };
        let component = "collector";
        Object {
            api_version: "batch/v1",
            kind: "Job",
            metadata: self.metadata(format!("{}-merge", self.name), component),
            spec: JobSpec {
                completion_mode: None,
                completions: 1,
                parallelism: 1,
                backoff_limit: self.backoff_limit,
                active_deadline_seconds: Some(self.collect_timeout.as_secs()),
                template: PodTemplate {
                    metadata: Metadata { name: None, namespace: None, labels: self.labels(component) },
                    spec: PodSpec {
                        restart_policy: "Never",
                        topology_spread_constraints: Vec::new(),
                        init_containers: vec![self.helper("wait", wait, Vec::new(), mount.clone()), merge],
                        containers: vec![self.helper("print", format!("cat {merged}"), Vec::new(), mount)],
                        volumes: vec![volume],
                    },
                },
            },
        }
    }

    /// A container of the helper image running a shell script.
    fn helper(&self, name: &'static str, script: String, env: Vec<EnvVar>, mount: VolumeMount) -> Container {
        Container {
            name,
            image: self.helper_image.clone(),
            command: Some(vec!["sh".to_string(), "-c".to_string(), script]),
            args: Vec::new(),
            env,
            resources: None,
            volume_mounts: vec![mount],
        }
    }
}

/// Reads a start time: RFC 3339 (`2026-11-23T21:00:00Z`) or Unix seconds.
pub fn parse_start_at(text: &str) -> Result<SystemTime, UsageError> {
    let t = text.trim();
    if t.bytes().all(|b| b.is_ascii_digit())
        && let Ok(secs) = t.parse::<u64>()
    {
        return Ok(UNIX_EPOCH + Duration::from_secs(secs));
    }
    humantime::parse_rfc3339_weak(t).map_err(|_| {
        UsageError::new(format!(
            "--start-at '{text}': not a time; give RFC 3339 in UTC (2026-11-23T21:00:00Z) or Unix seconds"
        ))
    })
}

/// A DNS-1123 label (what Kubernetes requires of names and namespaces), at most `max` characters.
fn check_dns_label(flag: &str, value: &str, max: usize) -> Result<(), UsageError> {
    let ok = !value.is_empty()
        && value.len() <= max
        && value.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !value.starts_with('-')
        && !value.ends_with('-');
    if ok {
        return Ok(());
    }
    Err(UsageError::new(format!(
        "{flag} '{value}': not a Kubernetes name; use at most {max} lowercase letters, digits and '-', \
         starting and ending with a letter or digit"
    )))
}

/// A DNS-1123 subdomain: labels joined by dots (storage class names).
fn check_dns_subdomain(flag: &str, value: &str) -> Result<(), UsageError> {
    if value.len() <= 253 && value.split('.').all(|label| check_dns_label(flag, label, 63).is_ok()) {
        return Ok(());
    }
    Err(UsageError::new(format!("{flag} '{value}': not a Kubernetes name; use lowercase letters, digits, '-' and '.'")))
}

fn check_image(flag: &str, value: &str) -> Result<(), UsageError> {
    if !value.is_empty() && !value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Ok(());
    }
    Err(UsageError::new(format!(
        "{flag} '{value}': not an image reference; give one such as registry.example/hakaru:0.1.0"
    )))
}

/// A Kubernetes quantity: a decimal number and an optional suffix (m, k, M, G, T, P, E, Ki ... Ei).
fn check_quantity(flag: &str, value: &str) -> Result<(), UsageError> {
    let split = value.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(value.len());
    let (number, suffix) = value.split_at(split);
    let number_ok = !number.is_empty()
        && number.matches('.').count() <= 1
        && number.bytes().any(|b| b.is_ascii_digit())
        && number.parse::<f64>().is_ok_and(|n| n > 0.0);
    let suffixes = ["", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    if number_ok && suffixes.contains(&suffix) {
        return Ok(());
    }
    Err(UsageError::new(format!(
        "{flag} '{value}': not a Kubernetes quantity; give a positive number with an optional suffix: 2, 500m, 1Gi"
    )))
}

/// One manifest of the stream.
#[derive(Serialize, Debug)]
#[serde(untagged)]
pub enum Manifest {
    Secret(SecretObject),
    Claim(Object<ClaimSpec>),
    Job(Object<JobSpec>),
}

/// A Kubernetes object: its type, its name and labels, its spec.
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Object<S> {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub metadata: Metadata,
    pub spec: S,
}

#[derive(Serialize, Debug)]
pub struct Metadata {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub labels: BTreeMap<&'static str, String>,
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ClaimSpec {
    pub access_modes: Vec<&'static str>,
    pub resources: Requests,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
}

#[derive(Serialize, Debug)]
pub struct Requests {
    pub requests: BTreeMap<&'static str, String>,
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct JobSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_mode: Option<&'static str>,
    pub completions: u32,
    pub parallelism: u32,
    pub backoff_limit: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<u64>,
    pub template: PodTemplate,
}

#[derive(Serialize, Debug)]
pub struct PodTemplate {
    pub metadata: Metadata,
    pub spec: PodSpec,
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    pub restart_policy: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub topology_spread_constraints: Vec<Spread>,
    pub init_containers: Vec<Container>,
    pub containers: Vec<Container>,
    pub volumes: Vec<Volume>,
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Spread {
    pub max_skew: u32,
    pub topology_key: &'static str,
    pub when_unsatisfiable: &'static str,
    pub label_selector: Selector,
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Selector {
    pub match_labels: BTreeMap<&'static str, String>,
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    pub name: &'static str,
    pub image: String,
    /// None: the image's entrypoint (hakaru).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<Resources>,
    pub volume_mounts: Vec<VolumeMount>,
}

#[derive(Serialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct EnvVar {
    pub name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_from: Option<FieldSource>,
}

#[derive(Serialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct FieldSource {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field_ref: Option<FieldRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_key_ref: Option<SecretKeyRef>,
}

#[derive(Serialize, Debug, Clone)]
pub struct SecretKeyRef {
    pub name: String,
    pub key: &'static str,
}

/// The key of the agents' Secret that holds their secret arguments.
const SECRET_KEY: &str = "args";

/// A Secret: no spec, its data beside the metadata.
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct SecretObject {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub metadata: Metadata,
    #[serde(rename = "type")]
    pub kind_of_secret: &'static str,
    pub string_data: BTreeMap<&'static str, String>,
}

#[derive(Serialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct FieldRef {
    pub field_path: &'static str,
}

#[derive(Serialize, Debug)]
pub struct Resources {
    pub requests: BTreeMap<&'static str, String>,
    pub limits: BTreeMap<&'static str, String>,
}

#[derive(Serialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct VolumeMount {
    pub name: &'static str,
    pub mount_path: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub_path: Option<String>,
}

#[derive(Serialize, Debug)]
pub struct Volume {
    pub name: &'static str,
    #[serde(flatten)]
    pub source: VolumeSource,
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub enum VolumeSource {
    #[serde(rename_all = "camelCase")]
    PersistentVolumeClaim {
        claim_name: String,
    },
    EmptyDir {},
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> JobPlan {
        JobPlan {
            name: "hakaru".into(),
            namespace: None,
            image: "hakaru:test".into(),
            helper_image: "busybox:1.37".into(),
            agents: 3,
            start_at: parse_start_at("2026-11-23T21:00:00Z").unwrap(),
            command: vec!["run".into(), "http://web/".into()],
            secret_args: Vec::new(),
            redact: Vec::new(),
            results: Results::Volume,
            storage_size: "1Gi".into(),
            storage_class: None,
            cpu: None,
            memory: None,
            backoff_limit: 0,
            collect_timeout: Duration::from_secs(3600),
            allow_partial: false,
        }
    }

    #[test]
    fn a_start_reads_as_rfc_3339_or_unix_seconds_and_prints_in_utc() {
        let p = plan();
        assert_eq!(p.start_at_text(), "2026-11-23T21:00:00Z");
        let from_secs = parse_start_at(&p.start_at.duration_since(UNIX_EPOCH).unwrap().as_secs().to_string());
        assert_eq!(from_secs.unwrap(), p.start_at);
        assert!(parse_start_at("tomorrow").unwrap_err().to_string().starts_with("--start-at 'tomorrow'"));
    }

    #[test]
    fn agents_take_their_segment_and_the_common_start() {
        let args = plan().agent_args();
        let tail: Vec<&str> = args.iter().map(String::as_str).skip(2).collect();
        assert_eq!(
            tail,
            [
                "--segment",
                "$(JOB_COMPLETION_INDEX)/3",
                "--start-at",
                "2026-11-23T21:00:00Z",
                "--json",
                "/results/agent-$(JOB_COMPLETION_INDEX).partial.json"
            ]
        );
    }

    #[test]
    fn names_quantities_and_counts_are_checked_with_the_flag_named() {
        let mut p = plan();
        p.name = "Hakaru_1".into();
        assert!(p.check().unwrap_err().to_string().starts_with("--name 'Hakaru_1'"));
        let mut p = plan();
        p.cpu = Some("two".into());
        assert!(p.check().unwrap_err().to_string().starts_with("--cpu 'two'"));
        let mut p = plan();
        p.agents = 0;
        assert!(p.check().unwrap_err().to_string().starts_with("--agents 0"));
        let mut p = plan();
        p.cpu = Some("1500m".into());
        p.memory = Some("2Gi".into());
        p.storage_class = Some("nfs.csi".into());
        assert!(p.check().is_ok());
    }

    #[test]
    fn each_start_gets_its_own_directory_on_the_volume() {
        let mut p = plan();
        let first = p.run_dir();
        p.start_at += Duration::from_secs(1);
        assert_ne!(first, p.run_dir());
    }

    #[test]
    fn the_stdout_mode_has_no_claim_and_no_collector() {
        let mut p = plan();
        p.results = Results::Stdout;
        let yaml = p.to_yaml();
        assert!(!yaml.contains("PersistentVolumeClaim"));
        assert!(yaml.contains("emptyDir: {}"));
        assert_eq!(yaml.matches("kind: Job").count(), 1);
        assert!(yaml.contains(RESULT_BEGIN) && yaml.contains(RESULT_END));
    }
}
