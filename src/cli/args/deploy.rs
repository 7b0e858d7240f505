//! The flags of the scale-out commands that write manifests or orchestrate agents: `k8s job`, `swarm service`,
//! `collect`.

use super::*;

/// `hakaru k8s`: manifests for Kubernetes, printed; hakaru never talks to a cluster.
#[derive(Subcommand, Debug, Clone)]
pub enum K8sCommand {
    /// An Indexed Job of N agents, each taking its segment of the plan from one common start, and a collector Job
    /// that merges their result documents: hakaru k8s job --agents 4 --image IMAGE -- run -c 100 -d 60s URL
    Job(K8sJobArgs),
}

#[derive(Args, Debug, Clone)]
pub struct K8sJobArgs {
    #[command(flatten)]
    pub common: OrchestratorArgs,
    /// Namespace of every object (default: kubectl's current one).
    #[arg(long)]
    pub namespace: Option<String>,
    /// Where the agents' result documents go: a ReadWriteMany volume claim merged by a collector Job, or each
    /// agent's log between marker lines (kubectl logs, then hakaru merge on your machine).
    #[arg(long, value_enum, default_value = "pvc")]
    pub results_volume: ResultsVolumeArg,
    /// Size of the results volume claim (a Kubernetes quantity).
    #[arg(long, default_value = "1Gi")]
    pub storage_size: String,
    /// Storage class of the results volume claim; it must offer ReadWriteMany (default: the cluster's default).
    #[arg(long)]
    pub storage_class: Option<String>,
    /// An image with a POSIX shell for the small steps around hakaru (printing the merged document).
    #[arg(long, default_value = "busybox:1.37")]
    pub helper_image: String,
    /// CPU of each agent, requested and limited (a Kubernetes quantity: 2, 1500m).
    #[arg(long)]
    pub cpu: Option<String>,
    /// Memory of each agent, requested and limited (a Kubernetes quantity: 512Mi, 2Gi).
    #[arg(long)]
    pub memory: Option<String>,
    /// Retries of a failed agent; 0 by default, since a retried agent starts after the common start.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = count::<u32>)]
    pub backoff_limit: u32,
}

/// What `k8s job` and `swarm service` are both told: the agents, their image and command, the start, the collector.
#[derive(Args, Debug, Clone)]
pub struct OrchestratorArgs {
    /// Agents (pods of the Indexed Job, replicas of the service), each running segment I of N of the plan.
    #[arg(long, allow_negative_numbers = true, value_parser = count::<u32>)]
    pub agents: u32,
    /// The container image holding hakaru as its entrypoint (scripts/image.sh builds one).
    #[arg(long)]
    pub image: String,
    /// Name of the agents (Job or service); the collector is NAME-merge.
    #[arg(long, default_value = "hakaru")]
    pub name: String,
    /// The load starts this long after the commands are printed, on every agent at once; leave time for the
    /// agents to be scheduled and the image pulled.
    #[arg(long, default_value = "60s")]
    pub start_in: String,
    /// A fixed start instead of --start-in: RFC 3339 (2026-11-23T21:00:00Z) or Unix seconds.
    #[arg(long, value_name = "TIME", conflicts_with = "start_in")]
    pub start_at: Option<String>,
    /// The collector gives up when the agents have not all ended within this time of its start.
    #[arg(long, default_value = "6h")]
    pub collect_timeout: String,
    /// When an agent fails, the collector merges the other agents' documents (marked as partial) instead of
    /// failing.
    #[arg(long)]
    pub allow_partial: bool,
    /// The agents' command: run, sweep or kv and its flags, after `--`; hakaru adds --segment, --start-at, --json.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `hakaru swarm`: Docker Swarm commands, printed; hakaru never talks to Docker.
#[derive(Subcommand, Debug, Clone)]
pub enum SwarmCommand {
    /// A service of N agent replicas, each taking its segment of the plan from one common start, and a collector
    /// service that merges their result documents: hakaru swarm service --agents 3 --image IMAGE -- run URL | sh
    Service(SwarmServiceArgs),
}

#[derive(Args, Debug, Clone)]
pub struct SwarmServiceArgs {
    #[command(flatten)]
    pub common: OrchestratorArgs,
    /// The directory the results go to, bind-mounted at /results: on every node at the same path (one machine, or
    /// a shared file system such as NFS).
    #[arg(long, value_name = "DIR", default_value = "/var/lib/hakaru")]
    pub results: PathBuf,
    /// The agents' network: host (the node's own, no overlay in the measured path) or an overlay network's name.
    #[arg(long, default_value = "host")]
    pub network: String,
}

#[derive(Args, Debug, Clone)]
pub struct CollectArgs {
    /// The results directory: agent-I.json with agent-I.done when agent I has finished, agent-I.failed when it failed.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The agents to wait for: agent-0 to agent-(N-1).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count::<u32>)]
    pub agents: u32,
    /// Give up when the agents have not all ended within this time.
    #[arg(long, value_name = "TIME", default_value = "6h")]
    pub timeout: String,
    /// Write the merged document here (`-` for stdout); the summary is printed either way.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// When agents failed, merge the others (the merged document names the missing segments) instead of failing.
    #[arg(long)]
    pub allow_partial: bool,
}

/// `--results-volume`: where the agents' documents go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ResultsVolumeArg {
    /// A ReadWriteMany PersistentVolumeClaim and a collector Job that merges the documents on it.
    Pvc,
    /// Each agent prints its document to its log between marker lines.
    Stdout,
}
