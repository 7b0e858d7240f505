//! Kubernetes manifests for one run spread over many machines: an Indexed Job of agents (each runs segment I of N
//! of the plan from one common start and writes its result document), the volume claim the documents go to, and
//! a collector Job that merges them. What every orchestrator is told alike (the agents' arguments and environment,
//! the collector's command) is `orchestrator::Deployment`'s; only the manifests are made here, as text: hakaru
//! never talks to a cluster.
//!
//! The manifests are typed structs serialized with serde-saphyr, so the fields keep the order Kubernetes users
//! read them in. Not serde_norway (serde_yaml's fork): it leaves `2026-11-23T21:00:00Z`, `on`, `yes` and `10:20`
//! plain, which Kubernetes' YAML 1.1 reader takes for a timestamp, booleans and a number (kubernetes-validate
//! refused the start time); serde-saphyr quotes every string a YAML 1.1 reader would read as something else.

use serde::Serialize;
use std::collections::BTreeMap;

use crate::deploy::orchestrator::{Deployment, K8S_INDEX_VAR, RESULTS_DIR};
use crate::error::CliError;

/// The line before an agent's document in its log (`--results-volume stdout`).
pub const RESULT_BEGIN: &str = "--- hakaru result begin ---";
/// The line after it.
pub const RESULT_END: &str = "--- hakaru result end ---";
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
    /// The agents, their command, the common start and the collector; its name is the agents' Job's (the
    /// collector is NAME-merge, the claim NAME-results). Secret arguments go into a Secret the manifests create,
    /// read by the agents from their environment, never into a pod's args.
    pub d: Deployment,
    pub namespace: Option<String>,
    /// Image with a POSIX shell, for printing (the hakaru image has none).
    pub helper_image: String,
    pub results: Results,
    pub storage_size: String,
    pub storage_class: Option<String>,
    /// CPU and memory of each agent (requests equal to limits), Kubernetes quantities.
    pub cpu: Option<String>,
    pub memory: Option<String>,
    pub backoff_limit: u32,
}

impl JobPlan {
    /// Checks the names, images, quantities and the agent count; the error names the flag and the fix.
    pub fn check(&self) -> Result<(), CliError> {
        self.d.check().map_err(CliError::new)?;
        // Pods are named NAME-INDEX-RANDOM and labelled job-name=NAME-merge: 50 leaves room for both under 63.
        check_dns_label("--name", &self.d.name, 50)?;
        if let Some(ns) = &self.namespace {
            check_dns_label("--namespace", ns, 63)?;
        }
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
        Ok(())
    }

    /// Every manifest, in the order to apply them (the claim before the pods that mount it).
    pub fn manifests(&self) -> Vec<Manifest> {
        let mut all = Vec::new();
        if !self.d.secret_args.is_empty() {
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
        self.d.redact.iter().map(|(name, value)| plain_env(name, value.clone())).collect()
    }

    fn secret_name(&self) -> String {
        format!("{}-args", self.d.name)
    }

    /// The Secret holding the agents' secret arguments, as the JSON list hakaru reads from `HAKARU_SECRET_ARGS`.
    fn secret(&self) -> SecretObject {
        SecretObject {
            api_version: "v1",
            kind: "Secret",
            metadata: self.metadata(self.secret_name(), "agent"),
            kind_of_secret: "Opaque",
            string_data: BTreeMap::from([(SECRET_KEY, self.d.secret_json().unwrap_or_default())]),
        }
    }

    /// The manifests as one YAML stream, `---` before each, after a comment saying what they do.
    pub fn to_yaml(&self) -> String {
        let mut out = format!(
            "# hakaru k8s job: {} agents of '{}', the load starting at {} (kubectl apply -f -)\n",
            self.d.agents,
            self.d.command.first().map_or("", String::as_str),
            self.d.start_at_text()
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
            ("app.kubernetes.io/instance", self.d.name.clone()),
            ("app.kubernetes.io/name", "hakaru".to_string()),
        ])
    }

    fn metadata(&self, name: String, component: &str) -> Metadata {
        Metadata { name: Some(name), namespace: self.namespace.clone(), labels: self.labels(component) }
    }

    fn claim_name(&self) -> String {
        format!("{}-results", self.d.name)
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
                (VolumeSource::PersistentVolumeClaim { claim_name: self.claim_name() }, Some(self.d.run_dir()))
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

    /// The agents: an Indexed Job whose pods run hakaru, each finding its segment from the index Kubernetes gives it.
    ///
    /// On the volume, hakaru itself says when its document is complete (`agent-I.done`, written after every
    /// output) or that it failed (`agent-I.failed`), so the pod is one container of the hakaru image. For the
    /// log (`stdout`), hakaru runs as the init container and a helper container prints the document once hakaru
    /// has exited successfully (a sweep rewrites it after every step: a file that exists is not yet a finished one).
    fn agents_job(&self) -> Object<JobSpec> {
        let (volume, mount) = self.results_volume();
        let index_env = vec![EnvVar {
            name: K8S_INDEX_VAR,
            value: None,
            value_from: Some(FieldSource {
                field_ref: Some(FieldRef { field_path: INDEX_ANNOTATION }),
                secret_key_ref: None,
            }),
        }];
        let mut agent_env = index_env.clone();
        match self.results {
            Results::Volume => agent_env.extend(self.d.agent_env().into_iter().map(|(n, v)| plain_env(n, v))),
            Results::Stdout => agent_env.extend(self.redact_env()),
        }
        if !self.d.secret_args.is_empty() {
            agent_env.push(EnvVar {
                name: crate::base::secrets::SECRET_ARGS_VAR,
                value: None,
                value_from: Some(FieldSource {
                    field_ref: None,
                    secret_key_ref: Some(SecretKeyRef { name: self.secret_name(), key: SECRET_KEY }),
                }),
            });
        }
        let agent = Container {
            name: "hakaru",
            image: self.d.image.clone(),
            command: None,
            args: self.d.agent_args(),
            env: agent_env,
            resources: self.resources(),
            volume_mounts: vec![mount.clone()],
        };
        let (init_containers, containers) = match self.results {
            Results::Volume => (Vec::new(), vec![agent]),
            Results::Stdout => {
                let document = format!("{RESULTS_DIR}/agent-${K8S_INDEX_VAR}.json");
                let script = format!("set -e; echo '{RESULT_BEGIN}'; cat {document}; echo; echo '{RESULT_END}'");
                (vec![agent], vec![self.helper("result", script, index_env, mount)])
            }
        };
        let component = "agent";
        Object {
            api_version: "batch/v1",
            kind: "Job",
            metadata: self.metadata(self.d.name.clone(), component),
            spec: JobSpec {
                completion_mode: Some("Indexed"),
                completions: self.d.agents,
                parallelism: self.d.agents,
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
                        init_containers,
                        containers,
                        volumes: vec![volume],
                    },
                },
            },
        }
    }

    /// The collector: `hakaru collect` waits until every agent has ended and merges; the helper prints the merged
    /// document to its log.
    fn collector_job(&self) -> Object<JobSpec> {
        let (volume, mount) = self.results_volume();
        let collect = Container {
            name: "collect",
            image: self.d.image.clone(),
            command: None,
            args: self.d.collector_args(),
            env: self.redact_env(),
            resources: None,
            volume_mounts: vec![mount.clone()],
        };
        let print = format!("cat {}", self.d.merged_document());
        let component = "collector";
        Object {
            api_version: "batch/v1",
            kind: "Job",
            metadata: self.metadata(format!("{}-merge", self.d.name), component),
            spec: JobSpec {
                completion_mode: None,
                completions: 1,
                parallelism: 1,
                backoff_limit: self.backoff_limit,
                active_deadline_seconds: Some(self.d.collect_timeout.as_secs()),
                template: PodTemplate {
                    metadata: Metadata { name: None, namespace: None, labels: self.labels(component) },
                    spec: PodSpec {
                        restart_policy: "Never",
                        topology_spread_constraints: Vec::new(),
                        init_containers: vec![collect],
                        containers: vec![self.helper("print", print, Vec::new(), mount)],
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

/// An environment variable with its value.
fn plain_env(name: &'static str, value: String) -> EnvVar {
    EnvVar { name, value: Some(value), value_from: None }
}

/// A DNS-1123 label (what Kubernetes requires of names and namespaces), at most `max` characters.
fn check_dns_label(flag: &str, value: &str, max: usize) -> Result<(), CliError> {
    let ok = !value.is_empty()
        && value.len() <= max
        && value.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !value.starts_with('-')
        && !value.ends_with('-');
    if ok {
        return Ok(());
    }
    Err(CliError::new(format!(
        "{flag} '{value}': not a Kubernetes name; use at most {max} lowercase letters, digits and '-', \
         starting and ending with a letter or digit"
    )))
}

/// A DNS-1123 subdomain: labels joined by dots (storage class names).
fn check_dns_subdomain(flag: &str, value: &str) -> Result<(), CliError> {
    if value.len() <= 253 && value.split('.').all(|label| check_dns_label(flag, label, 63).is_ok()) {
        return Ok(());
    }
    Err(CliError::new(format!("{flag} '{value}': not a Kubernetes name; use lowercase letters, digits, '-' and '.'")))
}

fn check_image(flag: &str, value: &str) -> Result<(), CliError> {
    if !value.is_empty() && !value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Ok(());
    }
    Err(CliError::new(format!(
        "{flag} '{value}': not an image reference; give one such as registry.example/hakaru:0.1.0"
    )))
}

/// A Kubernetes quantity: a decimal number and an optional suffix (m, k, M, G, T, P, E, Ki ... Ei).
fn check_quantity(flag: &str, value: &str) -> Result<(), CliError> {
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
    Err(CliError::new(format!(
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
    #[serde(skip_serializing_if = "Vec::is_empty")]
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
    use std::time::Duration;

    use super::*;

    fn plan() -> JobPlan {
        JobPlan {
            d: crate::deploy::orchestrator::tests::deployment(),
            namespace: None,
            helper_image: "busybox:1.37".into(),
            results: Results::Volume,
            storage_size: "1Gi".into(),
            storage_class: None,
            cpu: None,
            memory: None,
            backoff_limit: 0,
        }
    }

    #[test]
    fn names_quantities_and_counts_are_checked_with_the_flag_named() {
        let mut p = plan();
        p.d.name = "Hakaru_1".into();
        assert!(p.check().unwrap_err().to_string().starts_with("--name 'Hakaru_1'"));
        let mut p = plan();
        p.cpu = Some("two".into());
        assert!(p.check().unwrap_err().to_string().starts_with("--cpu 'two'"));
        let mut p = plan();
        p.d.agents = 0;
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
        let first = p.d.run_dir();
        p.d.start_at += Duration::from_secs(1);
        assert_ne!(first, p.d.run_dir());
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
