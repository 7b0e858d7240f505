//! The raw command line: clap's derive structs and nothing else. This module imports nothing from the crate; the
//! plan checks these values and turns them into what the library runs.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(name = "hakaru", version, about = "Measure latency and throughput of network services, honestly.")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// The arguments are parsed once per process: their size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Load an HTTP/1.1 target with N clients for a duration or a number of requests.
    Run(RunArgs),
    /// Sweep the load: client counts (drnbench-request-response) or rates, one step each, with an analysis.
    Sweep(SweepArgs),
    /// Find the highest rate that meets a latency objective (e.g. --slo 'p99<50ms'), stepping up then bisecting.
    Capacity(CapacityArgs),
    /// Make request pattern files: extract search terms, generate drnbench pattern files.
    #[command(subcommand)]
    Patterns(PatternsCommand),
    /// Start the built-in target: answers shaped by the request (?delay=, ?size=, ?status=, /cache, ?fault=).
    Serve(ServeArgs),
    /// Start the built-in target (4 workers x 5 ms) and sweep clients over it: the table and the analysis.
    Demo(DemoArgs),
    /// Load a Redis or memcached server with a get/set mix (redis://HOST:PORT, memcache://HOST:PORT).
    Kv(KvArgs),
    /// Run a study file: targets x workloads x phases x repetitions, interleaved, every result kept.
    Study(StudyArgs),
}

/// What requests to send and how, shared by every command that generates load.
#[derive(Args, Debug, Clone, Default)]
pub struct RequestArgs {
    /// Target URLs, sent round-robin; with --hosts, paths such as /d/select?q=a.
    #[arg(value_name = "URL")]
    pub urls: Vec<String>,
    /// Hosts to spread requests over round-robin, as a load balancer would (with --port and paths).
    #[arg(long, value_name = "H1,H2,...", visible_alias = "default-hosts", alias = "default-host")]
    pub hosts: Option<String>,
    /// Port for --hosts (default 80; a host:port entry of --hosts keeps its own port).
    #[arg(long, allow_negative_numbers = true, visible_alias = "default-port")]
    pub port: Option<u16>,
    /// Path for --hosts when neither paths nor --patterns are given (drnbench's --default-path).
    #[arg(long, value_name = "PATH", visible_alias = "default-path")]
    pub path: Option<String>,
    /// Request pattern file in drnbench's plain-text or JSON format.
    #[arg(long, value_name = "FILE", visible_alias = "request-patterns-file")]
    pub patterns: Option<PathBuf>,
    /// HTTP method.
    #[arg(short, long, default_value = "GET", visible_alias = "default-method")]
    pub method: String,
    /// Extra header, "Name: value" (repeatable).
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// Request body.
    #[arg(short, long, value_name = "STRING", conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Request body read from a file.
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,
    /// A request with no complete answer in this time is recorded with status 0 (a bare number is seconds).
    #[arg(long, default_value = "5s", visible_alias = "default-timeout")]
    pub timeout: String,
    /// Time allowed to open a connection.
    #[arg(long, default_value = "5s")]
    pub connect_timeout: String,
    /// Open a new connection for every request and send `Connection: close` (like ab without -k). Keep-alive is
    /// on by default: ab needs -k for it, hakaru does not.
    #[arg(long, conflicts_with = "keepalive")]
    pub no_keepalive: bool,
    /// Keep connections alive: the default, accepted for those used to ab's -k (hakaru's -k is curl's --insecure).
    #[arg(long)]
    pub keepalive: bool,
    /// Accept any TLS certificate (self-signed test servers).
    #[arg(long, short = 'k')]
    pub insecure: bool,
    /// Statuses that count as success: codes and ranges, e.g. 200-299,304. Other answers are failures: counted
    /// apart, out of the headline latency figures.
    #[arg(long, value_name = "CODES", default_value = "200-399")]
    pub ok_status: String,
    /// Seed of the random choices (patterns), so a run can be repeated; random when absent.
    #[arg(long, allow_negative_numbers = true, value_parser = count::<u64>)]
    pub seed: Option<u64>,
}

/// Watching the server while the load runs.
#[derive(Args, Debug, Clone, Default)]
pub struct WatchArgs {
    /// Report CPU % (all threads and children) and RSS of this server process, every step (repeatable).
    #[arg(long = "monitor-pid", value_name = "PID")]
    pub monitor_pid: Vec<u32>,
    /// Watch every process with this name (repeatable).
    #[arg(long = "monitor-name", value_name = "NAME")]
    pub monitor_name: Vec<String>,
    /// Watch the processes listening on this port (repeatable). Without any --monitor-* flag, a target on this
    /// machine is found this way by itself.
    #[arg(long = "monitor-port", value_name = "PORT")]
    pub monitor_port: Vec<u16>,
    /// Do not look for a target on this machine to watch.
    #[arg(long = "no-monitor")]
    pub no_monitor: bool,
    /// Fetch a JSON value before and after every step: 'http://host/d/status#/1/cache_hit_rate' (repeatable).
    #[arg(long = "probe", value_name = "URL#/POINTER")]
    pub probe: Vec<String>,
    /// The cache hit rate planned (0.5 or 50%, e.g. from `patterns generate --hit-rate`): warn when a probe whose
    /// name mentions "hit" measures more than 0.1 away from it.
    #[arg(long, value_name = "RATE")]
    pub expect_hit_rate: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub request: RequestArgs,
    #[command(flatten)]
    pub watch: WatchArgs,
    #[command(flatten)]
    pub load: LoadArgs,
}

/// How much load one step offers, for how long, and where its result goes (`run` and `kv`).
#[derive(Args, Debug, Clone)]
pub struct LoadArgs {
    /// Concurrent connections (closed-loop clients); with --rate, the most connections that may be opened.
    #[arg(short, long, default_value_t = 50, allow_negative_numbers = true, value_parser = count::<usize>)]
    pub connections: usize,
    /// Open loop: send this many requests per second in total, whatever the answers take; latency is measured
    /// from each request's intended send time (coordinated omission corrected) and from the actual send.
    #[arg(long, value_name = "PER_SECOND", allow_negative_numbers = true)]
    pub rate: Option<f64>,
    /// With --rate: evenly spaced requests, or Poisson arrivals (exponential gaps).
    #[arg(long, value_enum, default_value = "uniform", requires = "rate")]
    pub arrival: ArrivalArg,
    /// Stop after this many requests in total.
    #[arg(short = 'n', long, allow_negative_numbers = true, value_parser = count::<u64>)]
    pub requests: Option<u64>,
    /// Stop after this long: 500ms, 30s, 2m (default 10s when neither -n nor -d is given).
    #[arg(short, long)]
    pub duration: Option<String>,
    /// Threads generating load (default: the number of cores).
    #[arg(short, long, allow_negative_numbers = true, value_parser = count::<usize>)]
    pub threads: Option<usize>,
    /// Write the result document (JSON) to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one CSV row (loadtest's columns, then percentiles) to this file.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// No live progress on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

/// How the steps of a sweep or a capacity search run, and where they are written.
#[derive(Args, Debug, Clone)]
pub struct StudyFlags {
    /// Open-loop steps: evenly spaced requests, or Poisson arrivals.
    #[arg(long, value_enum, default_value = "uniform")]
    pub arrival: ArrivalArg,
    /// Open-loop steps: the most connections a step may open.
    #[arg(short, long, default_value_t = 50, allow_negative_numbers = true, value_parser = count::<usize>)]
    pub connections: usize,
    /// Length of each step.
    #[arg(short, long, default_value = "30s")]
    pub duration: String,
    /// A step with more failed requests than this share (errors and statuses outside --ok-status) does not
    /// count: not as a plateau in a sweep, not as meeting the objective in a capacity search. 1%, 0.001, 0.
    #[arg(long, visible_alias = "max-errors", value_name = "SHARE", default_value = "1%")]
    pub max_error_rate: String,
    /// Pause between steps (lets the server drain).
    #[arg(long, default_value = "10s")]
    pub interval: String,
    /// Load before each step, measured apart and left out of the step's figures.
    #[arg(long, default_value = "0s")]
    pub warmup: String,
    /// Threads generating load (default: the number of cores).
    #[arg(short, long, allow_negative_numbers = true, value_parser = count::<usize>)]
    pub threads: Option<usize>,
    /// drnbench's CSV, exactly (its six columns, then a percentage per status), written after every step.
    #[arg(short, long, value_name = "FILE", visible_alias = "output-path")]
    pub output: Option<PathBuf>,
    /// hakaru's wide CSV: drnbench's columns, then percentiles, failures, CPU, rates, probes and statuses.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// The result document (JSON), written after every step.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No live progress on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Args, Debug, Clone)]
pub struct SweepArgs {
    #[command(flatten)]
    pub request: RequestArgs,
    #[command(flatten)]
    pub watch: WatchArgs,
    #[command(flatten)]
    pub study: StudyFlags,
    /// First client count; the steps are start, start+step, ... up to the end, a 0 run as 1 (drnbench's rule).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count::<usize>, visible_alias = "start-n-clients")]
    pub start_clients: Option<usize>,
    /// Last client count.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count::<usize>, visible_alias = "end-n-clients")]
    pub end_clients: Option<usize>,
    /// Client count added at each step.
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true, value_parser = count::<usize>)]
    pub step: usize,
    /// Explicit client counts instead: 1,2,4,8,16.
    #[arg(long, value_name = "N,N,...", conflicts_with_all = ["start_clients", "end_clients", "rates", "rate_start"])]
    pub clients: Option<String>,
    /// Open-loop rate sweep: requests per second of each step, 1000,2000,4000.
    #[arg(long, value_name = "R,R,...", conflicts_with_all = ["start_clients", "end_clients", "rate_start"])]
    pub rates: Option<String>,
    /// Rate sweep from this rate ...
    // The pairs are checked by the plan rather than with `requires`: clap's message for a missing one does not
    // fit on the one line hakaru prints, and would lose the flag's name.
    #[arg(long, value_name = "R", allow_negative_numbers = true)]
    pub rate_start: Option<f64>,
    /// ... to this rate ...
    #[arg(long, value_name = "R", allow_negative_numbers = true)]
    pub rate_end: Option<f64>,
    /// ... in steps of this many requests per second (default: 4 steps).
    #[arg(long, value_name = "R", allow_negative_numbers = true)]
    pub rate_step: Option<f64>,
    /// Each client waits this long after each answer (drnbench's --wait).
    /// (default: a "wait" in seconds given in the pattern file, else 0).
    #[arg(long)]
    pub wait: Option<String>,
}

/// A capacity search runs shorter steps closer together, with more connections, than a sweep.
#[derive(Args, Debug, Clone)]
#[command(
    mut_arg("duration", |a| a.default_value("10s")),
    mut_arg("interval", |a| a.default_value("2s")),
    mut_arg("connections", |a| a.default_value("200"))
)]
pub struct CapacityArgs {
    #[command(flatten)]
    pub request: RequestArgs,
    #[command(flatten)]
    pub watch: WatchArgs,
    #[command(flatten)]
    pub study: StudyFlags,
    /// The objective every step must meet: 'p99<50ms', 'p99.9<=200ms', 'mean<10ms', several joined by commas.
    // Required, but left to the plan to refuse when empty: its one line names --slo and shows how to write it.
    #[arg(long, default_value = "", hide_default_value = true)]
    pub slo: String,
    /// First rate tried (requests per second); it doubles until the objective fails, then bisects.
    #[arg(long, default_value_t = 100.0, allow_negative_numbers = true)]
    pub rate_start: f64,
    /// Highest rate tried.
    #[arg(long, default_value_t = 1_000_000.0, allow_negative_numbers = true)]
    pub rate_max: f64,
    /// Stop bisecting when the interval between passing and failing rates is this share of the passing rate.
    #[arg(long, default_value = "5%")]
    pub precision: String,
}

#[derive(Subcommand, Debug, Clone)]
pub enum PatternsCommand {
    /// Print one search term per line from Groonga select results (drnbench-extract-searchterms) or any JSON.
    Extract {
        /// Column of the records to print.
        #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = count::<usize>)]
        column: usize,
        /// For any JSON: a pointer to an array of terms (a `*` segment means every element), e.g. /hits/*/title.
        #[arg(long)]
        pointer: Option<String>,
        /// URI-escape each term.
        #[arg(long)]
        escape: bool,
        /// Input files (stdin when none).
        files: Vec<PathBuf>,
    },
    /// Write a drnbench JSON pattern file from a template and search terms (drnbench-generate-select-patterns).
    Generate {
        /// Path of each request; {term} is replaced by each term: '/d/select?table=Pages&query={term}'.
        // Required, but left to the command to refuse when empty, so that its one line names --template.
        #[arg(long, default_value = "", hide_default_value = true)]
        template: String,
        /// One term per line; - for stdin.
        #[arg(long, default_value = "-")]
        terms: PathBuf,
        /// One group per host, requests spread over them: a,b,c (host or host:port).
        #[arg(long, value_delimiter = ',')]
        hosts: Vec<String>,
        /// Expected cache hit rate (0.5 or 50%): uses cache-size / hit-rate unique requests.
        #[arg(long)]
        hit_rate: Option<String>,
        /// Entries the server caches (Groonga and droonga-http-server: 100).
        #[arg(long, default_value_t = 100, allow_negative_numbers = true, value_parser = count::<usize>)]
        cache_size: usize,
        /// Do not URI-escape the terms.
        #[arg(long)]
        no_escape: bool,
        /// HTTP method of the requests.
        #[arg(short, long, default_value = "GET")]
        method: String,
        /// Write the pattern file here instead of stdout.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
}

#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port; the address is printed).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Server threads (default: the number of cores).
    #[arg(long, allow_negative_numbers = true, value_parser = count::<usize>)]
    pub threads: Option<usize>,
    /// Serve at most N requests at once; the others wait (a sweep then shows a knee at N).
    #[arg(long, allow_negative_numbers = true, value_parser = count::<usize>)]
    pub workers: Option<usize>,
    /// Cost of a cache miss at /cache.
    #[arg(long, default_value = "5ms")]
    pub miss_cost: String,
    /// Entries of the LRU cache at /cache.
    #[arg(long, default_value_t = 100, allow_negative_numbers = true, value_parser = count::<usize>)]
    pub cache_size: usize,
}

#[derive(Args, Debug, Clone)]
pub struct DemoArgs {
    /// How long each of the sweep's five steps runs.
    #[arg(short, long, default_value = "3s")]
    pub duration: String,
    /// Write the result document (JSON) to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `--arrival`: how open-loop requests are spaced (the plan maps it to the engine's arrival model).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ArrivalArg {
    /// Evenly spaced, 1/rate apart.
    Uniform,
    /// Exponential gaps with mean 1/rate, as independent users arrive.
    Poisson,
}

/// Reads a count (a whole number, 0 or more). Count flags also take negative numbers as values, so that `-n -5`
/// is refused with the flag's name rather than as an unknown flag `-5`.
fn count<T: std::str::FromStr>(text: &str) -> Result<T, String> {
    text.trim().parse::<T>().map_err(|_| "not a count; give a whole number, 0 or more".to_string())
}

/// `hakaru kv`: a key-value server under a memtier-style mix of operations.
#[derive(Args, Debug, Clone)]
pub struct KvArgs {
    /// Servers, sent round-robin: redis://HOST:PORT (RESP2) or memcache://HOST:PORT (the text protocol).
    #[arg(value_name = "URL", required = true)]
    pub urls: Vec<String>,
    #[command(flatten)]
    pub watch: WatchArgs,
    /// The operations and their shares: get:90,set:10.
    #[arg(long, default_value = "get:90,set:10")]
    pub mix: String,
    /// Distinct keys, drawn at random (each key once before any twice, as in an urn).
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true, value_parser = count::<usize>)]
    pub keys: usize,
    /// Bytes of each value set.
    #[arg(long, default_value_t = 32, allow_negative_numbers = true, value_parser = count::<usize>)]
    pub value_size: usize,
    /// Text before each key's number.
    #[arg(long, default_value = "key:")]
    pub key_prefix: String,
    #[command(flatten)]
    pub load: LoadArgs,
    /// An operation with no complete reply in this time is recorded with status 0.
    #[arg(long, default_value = "5s")]
    pub timeout: String,
    /// Time allowed to open a connection.
    #[arg(long, default_value = "5s")]
    pub connect_timeout: String,
    /// Seed of the random choices, so a run can be repeated; random when absent.
    #[arg(long)]
    pub seed: Option<u64>,
}

/// `hakaru study FILE.toml`: every case of a study file, interleaved, each result kept.
#[derive(Args, Debug, Clone)]
pub struct StudyArgs {
    /// The study file (TOML): [[target]], [[workload]], [load], [[phase]].
    #[arg(value_name = "FILE.toml")]
    pub file: PathBuf,
    /// Output directory: study.json, study.csv, summary.txt, cases/, logs/ (default: study-NAME).
    #[arg(short, long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Print the cases in the order they would run and how long they would take; run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Finish the study in this directory: keep the cases whose result is complete, run the others.
    #[arg(long, value_name = "DIR", conflicts_with = "output")]
    pub resume: Option<PathBuf>,
}
