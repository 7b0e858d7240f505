//! The raw command line: clap's derive structs and nothing else. This module imports nothing from the crate; the
//! plan checks these values and turns them into what the library runs.

mod deploy;
mod kv;
mod llm;
mod replay;
mod results;
mod values;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::Serialize;

use super::help::{self, heading};
pub use deploy::*;
pub use kv::*;
pub use llm::*;
pub use replay::*;
pub use results::*;
pub use values::*;

#[derive(Parser, Debug)]
#[command(name = "hakaru", version, about = "Measure latency and throughput of network services, honestly.")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// A header whose value is a secret, never shown (repeatable).
    ///
    /// Besides the built-in list (Authorization, Cookie, X-Api-Key, X-Auth-Token ...): never printed, written or
    /// passed on a command line. Repeatable, on any command.
    #[arg(long, value_name = "NAME", global = true, help_heading = heading::SECRETS, hide_short_help = true)]
    pub redact_header: Vec<String>,
    /// A query parameter whose value is a secret, never shown (repeatable).
    ///
    /// Besides the built-in list (token, api_key, access_token, sig ...). Repeatable, on any command.
    #[arg(long, value_name = "NAME", global = true, help_heading = heading::SECRETS, hide_short_help = true)]
    pub redact_param: Vec<String>,
}

// The arguments are parsed once per process: their size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Load an HTTP/1.1, HTTP/2, HTTP/3, gRPC or WebSocket target with N clients for a duration or a number of requests.
    #[command(after_help = help::RUN_EXAMPLES, after_long_help = help::RUN_EXAMPLES_LONG)]
    Run(RunArgs),
    /// Load an OpenAI-compatible LLM endpoint with prompts from a dataset (random, JSON lines, ShareGPT), streamed:
    /// time to first token, time per output token, inter-token latency, tokens/s and goodput.
    #[command(after_help = help::LLM_EXAMPLES)]
    Llm(LlmArgs),
    /// Sweep the load: client counts (drnbench-request-response) or rates, one step each, with an analysis; HTTP
    /// URLs, or key-value servers (redis://, memcache://) under kv's default mix.
    #[command(after_help = help::SWEEP_EXAMPLES, after_long_help = help::SWEEP_EXAMPLES_LONG)]
    Sweep(SweepArgs),
    /// Find the highest rate that meets a latency objective (e.g. --slo 'p99<50ms'), stepping up then bisecting.
    #[command(after_help = help::CAPACITY_EXAMPLES, after_long_help = help::CAPACITY_EXAMPLES_LONG)]
    Capacity(CapacityArgs),
    /// Make request pattern files: extract search terms, generate drnbench pattern files.
    #[command(subcommand)]
    Patterns(PatternsCommand),
    /// Start the built-in target: answers shaped by the request (?delay=, ?size=, ?status=, /cache, ?fault=).
    #[command(after_help = help::SERVE_EXAMPLES)]
    Serve(ServeArgs),
    /// Start the built-in target (4 workers x 20 ms) and sweep clients over it: the table and the analysis.
    #[command(after_help = help::DEMO_EXAMPLES)]
    Demo(DemoArgs),
    /// Load a Redis or memcached server: a mix, commands, Kyoto's order/wicked, YCSB (redis://, memcache://).
    #[command(after_help = help::KV_EXAMPLES, after_long_help = help::KV_EXAMPLES_LONG)]
    Kv(KvArgs),
    /// Join the result documents of the agents that ran the segments of one plan (--segment I/N) into one.
    Merge(MergeArgs),
    /// List the results kept in the history, newest first: id, time, command, target, labels, ok/s and p99.
    #[command(after_help = help::HISTORY_EXAMPLES)]
    History(HistoryListArgs),
    /// Print a stored result's summary as its run printed it: hakaru show 42, hakaru show branch=main.
    Show(ShowArgs),
    /// Write a stored result as JSON, CSV or drnbench's CSV.
    Export(ExportArgs),
    /// Store result JSON files (hakaru --json) and drnbench CSV files in the history.
    Import(ImportArgs),
    /// Compare results: ratios to the first, 95 % intervals and verdicts from repeated runs, CI gates.
    #[command(after_help = help::COMPARE_EXAMPLES)]
    Compare(CompareArgs),
    /// Write one self-contained HTML report (tables and charts) from result JSON, drnbench CSV or study directories.
    Report(ReportArgs),
    /// Draw one chart (qps, p99, mean or the percentile spectrum) as an SVG or PNG image.
    Chart(ChartArgs),
    /// Run a study file: targets x workloads x phases x repetitions, interleaved, every result kept.
    #[command(after_help = help::STUDY_EXAMPLES)]
    Study(StudyArgs),
    /// Print Kubernetes manifests that spread one run over many machines and merge the results (kubectl apply -f -).
    #[command(subcommand)]
    K8s(K8sCommand),
    /// Print the Docker Swarm commands that spread one run over many machines and merge the results (| sh).
    #[command(subcommand)]
    Swarm(SwarmCommand),
    /// Wait for every agent's document (or failure) in a results directory and merge them: the orchestrators' collector.
    Collect(CollectArgs),
}

/// What requests to send and how, shared by every command that generates load.
#[derive(Args, Debug, Clone, Default, Serialize)]
pub struct RequestArgs {
    /// Target URLs, sent round-robin; with --hosts, paths such as /d/select?q=a.
    #[arg(value_name = "URL")]
    pub urls: Vec<String>,
    /// HTTP method.
    #[arg(short, long, default_value = "GET", visible_alias = "default-method", help_heading = heading::REQUEST)]
    pub method: String,
    /// Extra header, "Name: value" (repeatable).
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE", display_order = 5)]
    pub headers: Vec<String>,
    /// Request body.
    #[arg(short, long, value_name = "STRING", conflicts_with = "body_file", help_heading = heading::REQUEST)]
    pub body: Option<String>,
    /// Request body read from a file.
    #[arg(long, value_name = "FILE", help_heading = heading::REQUEST)]
    pub body_file: Option<PathBuf>,
    /// A request with no complete answer in this time is recorded with status 0 (a bare number is seconds).
    #[arg(long, value_name = "TIME", default_value = "5s", visible_alias = "default-timeout", help_heading = heading::REQUEST)]
    pub timeout: String,
    /// When a timed step ends, sending stops and the answers in flight get this long to finish, counted as any
    /// other (k6's gracefulStop; vLLM's benchmark waits for every answer); those unfinished then are `unfinished`.
    /// 0 drops them at the end, as wrk does. Default: --timeout.
    #[arg(long, value_name = "TIME", hide_short_help = true, help_heading = heading::REQUEST)]
    pub graceful_stop: Option<String>,
    /// Time allowed to open a connection.
    #[arg(long, value_name = "TIME", default_value = "5s", hide_short_help = true, help_heading = heading::REQUEST)]
    pub connect_timeout: String,
    /// The longest response head or chunk-size line taken; a longer one fails the request as line_too_long.
    #[arg(long, value_name = "SIZE", default_value = "64KiB", help_heading = heading::REQUEST, hide_short_help = true)]
    pub max_line: String,
    /// HTTP/2: the longest header list an answer may decode to (name, value and 32 bytes a field, as
    /// SETTINGS_MAX_HEADER_LIST_SIZE, which says it to the server); a longer one fails as header_list_too_large.
    #[arg(long, value_name = "SIZE", default_value = "64KiB", help_heading = heading::REQUEST, hide_short_help = true)]
    pub max_header_list: String,
    /// Open loop: the pacer wakes at most once per this window and sends every request due within half of it
    /// (0: a wake-up for each request, at its time).
    ///
    /// A wake-up costs more than a keep-alive request; at high rates many requests share one. A request leaves at
    /// most half the window before or after its intended send time: a late one's latency counts from that time, an
    /// early one's from its actual send.
    #[arg(long, value_name = "TIME", default_value = "400us", help_heading = heading::LOAD, hide_short_help = true)]
    pub pace_window: String,
    /// A new connection for every request, with `Connection: close` (ab without -k).
    ///
    /// Keep-alive is on by default: ab needs -k for it, hakaru does not.
    #[arg(long, conflicts_with = "keepalive", help_heading = heading::REQUEST)]
    pub no_keepalive: bool,
    /// Keep connections alive: the default, accepted for those used to ab's -k (hakaru's -k is curl's --insecure).
    #[arg(long, help_heading = heading::REQUEST, hide_short_help = true)]
    pub keepalive: bool,
    /// Accept any TLS certificate (self-signed test servers).
    #[arg(long, short = 'k', help_heading = heading::REQUEST)]
    pub insecure: bool,
    /// Connect to this Unix socket instead of the URL's host and port, which stay the Host header (curl's and oha's
    /// --unix-socket). http:// URLs only.
    #[arg(long, value_name = "PATH", help_heading = heading::REQUEST, hide_short_help = true)]
    pub unix_socket: Option<PathBuf>,
    /// Connect to ADDR:PORT for the URLs of HOST:PORT, without asking DNS (curl's --connect-to); the Host header,
    /// SNI and certificate check stay the URL's. An empty HOST or PORT matches any (repeatable).
    #[arg(long, value_name = "HOST:PORT:ADDR:PORT", help_heading = heading::REQUEST, hide_short_help = true)]
    pub connect_to: Vec<String>,
    /// Close each connection after it has carried N requests (nighthawk's --max-requests-per-connection; HTTP/1.1
    /// and HTTP/2): connections neither live forever nor carry one request each. Counted in
    /// connections.closed_by_hakaru.
    #[arg(long, value_name = "N", value_parser = count::<u64>, help_heading = heading::REQUEST, hide_short_help = true)]
    pub max_requests_per_connection: Option<u64>,
    /// Open at most R new connections a second across all threads (h2load's -r): -c connections ramp up at that
    /// rate, and with --no-keepalive or --max-requests-per-connection it is the handshake rate. The wait for a
    /// turn is not a request's latency in a closed loop; in an open loop its requests leave late, counted so.
    #[arg(long, value_name = "PER_SECOND", value_parser = per_second, allow_negative_numbers = true, help_heading = heading::REQUEST, hide_short_help = true)]
    pub connection_rate: Option<f64>,
    /// Go through this HTTP proxy: http://[USER:PASSWORD@]HOST:PORT, or env (HTTPS_PROXY, http_proxy and NO_PROXY).
    ///
    /// https:// and --http2 go through a CONNECT tunnel; plain HTTP/1.1 is sent to the proxy in absolute form. The
    /// proxy's own failures are counted apart (proxy_refused, proxy_status_407, ...).
    #[arg(short = 'x', long, value_name = "URL|env", help_heading = heading::REQUEST, hide_short_help = true)]
    pub proxy: Option<String>,
    /// Trust the CA certificates of this PEM file besides the web's root certificates (curl's --cacert).
    #[arg(long, value_name = "FILE", help_heading = heading::REQUEST, hide_short_help = true)]
    pub cacert: Option<PathBuf>,
    /// A client certificate for mutual TLS: a PEM file of the certificate and its chain, with --key (curl's --cert).
    #[arg(long, value_name = "FILE", requires = "key", help_heading = heading::REQUEST, hide_short_help = true)]
    pub cert: Option<PathBuf>,
    /// The private key of --cert: a PEM file (PKCS#8, PKCS#1 or SEC1), not protected by a passphrase.
    #[arg(long, value_name = "FILE", requires = "cert", help_heading = heading::REQUEST, hide_short_help = true)]
    pub key: Option<PathBuf>,
    /// Offer this TLS version only (default: 1.2 and 1.3).
    #[arg(long, value_enum, value_name = "1.2|1.3", help_heading = heading::REQUEST, hide_short_help = true)]
    pub tls_version: Option<TlsVersionArg>,
    /// The server name sent in the TLS handshake (SNI) and checked against the certificate, instead of the URL's
    /// host; the Host header stays the URL's.
    #[arg(long, value_name = "NAME", help_heading = heading::REQUEST, hide_short_help = true)]
    pub sni: Option<String>,
    /// TLS session resumption (tickets and session IDs), on as browsers have it; off makes every handshake full.
    #[arg(long, value_enum, value_name = "on|off", default_value = "on", help_heading = heading::REQUEST, hide_short_help = true)]
    pub tls_resume: OnOff,
    /// Speak HTTP/2: prior knowledge (h2c) on http:// URLs, ALPN h2 on https://.
    ///
    /// -c stays the number of connections; --streams sets the requests in flight on each (h2load's -c and -m).
    #[arg(long, help_heading = heading::REQUEST)]
    pub http2: bool,
    /// Speak HTTP/3: QUIC with TLS 1.3 and ALPN h3, https:// URLs only (-k for a self-signed certificate).
    ///
    /// -c stays the number of connections; --streams sets the requests in flight on each, as with --http2.
    #[arg(long, help_heading = heading::REQUEST, hide_short_help = true)]
    pub http3: bool,
    /// With --http3: send a resumed connection's first requests as 0-RTT early data, before its handshake ends.
    ///
    /// The first connection to a server makes a full handshake and keeps the server's session ticket; the next ones
    /// resume with it and send at once. Early data can be replayed by an attacker: a server may refuse it, and
    /// only requests safe to repeat belong in it. The document counts the attempts and those the server accepted.
    #[arg(long = "0rtt", help_heading = heading::REQUEST, hide_short_help = true)]
    pub zero_rtt: bool,
    /// With --http2 or --http3: concurrent streams per connection (h2load's -m); a server allowing fewer is used as it allows.
    #[arg(long, value_name = "N", value_parser = count::<usize>, help_heading = heading::REQUEST)]
    pub streams: Option<usize>,
    /// Statuses that count as success: codes and ranges, e.g. 200-299,304.
    ///
    /// Other answers are failures: counted apart, out of the headline latency figures.
    #[arg(long, value_name = "CODES", default_value = "200-399", help_heading = heading::REQUEST)]
    pub ok_status: String,
    /// Seed of the random choices (patterns), so a run can be repeated; random when absent.
    #[arg(long, allow_negative_numbers = true, value_parser = count::<u64>, help_heading = heading::REQUEST, hide_short_help = true)]
    pub seed: Option<u64>,
    /// Hosts to spread requests over round-robin, as a load balancer would (with --port and paths).
    #[arg(long, value_name = "H1,H2,...", visible_alias = "default-hosts", alias = "default-host", help_heading = heading::HOSTS)]
    pub hosts: Option<String>,
    /// Port for --hosts (default 80; a host:port entry of --hosts keeps its own port).
    #[arg(long, allow_negative_numbers = true, visible_alias = "default-port", hide_short_help = true, help_heading = heading::HOSTS)]
    pub port: Option<u16>,
    /// Path for --hosts when neither paths nor --patterns are given.
    #[arg(long, value_name = "PATH", visible_alias = "default-path", hide_short_help = true, help_heading = heading::HOSTS)]
    pub path: Option<String>,
    /// Request pattern file in drnbench's plain-text or JSON format.
    #[arg(long, value_name = "FILE", visible_alias = "request-patterns-file", help_heading = heading::HOSTS)]
    pub patterns: Option<PathBuf>,
    /// wrk's Lua script: request() builds each request, response() reads answers, done() reports (docs/scripting.md).
    ///
    /// The script's init(args) gets the words after `--`. One URL gives wrk.scheme, host, port and path;
    /// -m, -H and -b give wrk.method, headers and body. Lua is not a sandbox: a script can run commands and write
    /// files as you (see --script-sandbox).
    #[arg(short = 's', long, value_name = "FILE.lua", help_heading = heading::REQUEST)]
    pub script: Option<PathBuf>,
    /// Runs the script without os.execute, io.popen, writing files (io.open for writing, os.remove, os.rename),
    /// os.exit, package.loadlib and C modules: for scripts you did not write. Lua alone is not a sandbox.
    #[arg(long, requires = "script", help_heading = heading::REQUEST, hide_short_help = true)]
    pub script_sandbox: bool,
    /// Rows for {{column}} templates in the URL's path, -H values and the body: CSV with a header line, or JSON lines.
    ///
    /// Built-ins work with or without it: {{seq}}, {{uuid}}, {{rand 1 1000}}, {{now_ms}} (docs/scripting.md).
    #[arg(long, value_name = "FILE", conflicts_with = "script", help_heading = heading::REQUEST)]
    pub data: Option<PathBuf>,
    /// How --data's rows are taken: one after another (all clients, from the first again after the last), at
    /// random, or each once (the run ends when they run out).
    #[arg(long, value_enum, default_value = "sequential", value_name = "ORDER", help_heading = heading::REQUEST, hide_short_help = true)]
    pub data_order: DataOrderArg,
    /// gRPC (grpc:// URLs): the method called, package.Service/Method (ghz's package.Service.Method too).
    ///
    /// -b gives the request message as JSON, -H the metadata, --timeout the call's grpc-timeout (docs/grpc.md).
    #[arg(long, value_name = "SERVICE/METHOD", help_heading = heading::REQUEST, hide_short_help = true)]
    pub call: Option<String>,
    /// gRPC: the .proto file that defines --call's service (parsed by hakaru; no protoc needed).
    ///
    /// Without --proto or --protoset the server is asked (server reflection).
    #[arg(long, value_name = "FILE", requires = "call", help_heading = heading::REQUEST, hide_short_help = true)]
    pub proto: Option<PathBuf>,
    /// gRPC: a compiled FileDescriptorSet that defines --call's service (`protoc -o FILE --include_imports`).
    #[arg(long, value_name = "FILE", requires = "call", conflicts_with = "proto", help_heading = heading::REQUEST, hide_short_help = true)]
    pub protoset: Option<PathBuf>,
    /// gRPC: a directory the .proto file's imports are looked up in (repeatable; --proto's own directory first).
    #[arg(long, value_name = "DIR", requires = "proto", visible_alias = "import-paths", help_heading = heading::REQUEST, hide_short_help = true)]
    pub import_path: Vec<PathBuf>,
    /// gRPC client-streaming and bidirectional methods: messages each call sends, then it ends its stream (ghz's
    /// --stream-call-count). A JSON array in -b gives the messages, taken in turn.
    #[arg(long, value_name = "N", visible_alias = "stream-call-count", requires = "call", value_parser = count::<u32>, help_heading = heading::REQUEST, hide_short_help = true)]
    pub stream_messages: Option<u32>,
    /// gRPC client-streaming and bidirectional methods: the time between a call's messages (ghz's
    /// --stream-interval); 0 (the default): all at once.
    #[arg(long, value_name = "TIME", requires = "call", help_heading = heading::REQUEST, hide_short_help = true)]
    pub stream_interval: Option<String>,
    /// gRPC: compress each request message with gzip (sent with grpc-encoding: gzip), and take compressed answers.
    ///
    /// ghz's -e/--enable-compression. Off by default: messages go uncompressed, as gRPC's own clients send them.
    #[arg(long, value_name = "gzip", requires = "call", help_heading = heading::REQUEST, hide_short_help = true)]
    pub grpc_compression: Option<String>,
    /// gRPC: metadata as a JSON object, {"key": "value", ...} (ghz's -m/--metadata; hakaru's -m is --method):
    /// the same as a -H line for each key.
    #[arg(long, value_name = "JSON", requires = "call", help_heading = heading::REQUEST, hide_short_help = true)]
    pub metadata: Option<String>,
    /// Read each answer as a stream of events: sse, ndjson, chunks, or tokens (an OpenAI-compatible token stream).
    ///
    /// Time to first event (token), the gaps between events, events (tokens) per answer, events/s and bytes/s over
    /// the step (docs/run.md). HTTP/1.1 and HTTP/2.
    #[arg(long, value_name = "KIND", help_heading = heading::REQUEST, hide_short_help = true)]
    pub events: Option<String>,
    /// --events: the event holding this text ends the answer (tokens: [DONE] unless told); a body ending without
    /// it is a stream_cut.
    #[arg(long, value_name = "TEXT", help_heading = heading::REQUEST, hide_short_help = true)]
    pub events_until: Option<String>,
    /// --events: the most events in one answer (default 1000000); more fails it as stream_too_long.
    #[arg(long, value_name = "N", help_heading = heading::REQUEST, hide_short_help = true)]
    pub events_max: Option<u64>,
    /// --events: the most body bytes in one answer (default 64MiB); more fails it as stream_too_long.
    #[arg(long, value_name = "SIZE", help_heading = heading::REQUEST, hide_short_help = true)]
    pub events_max_bytes: Option<String>,
    /// --events: goodput's objectives, each answer judged by them: ttft:200ms,tpot:50ms,e2el:10s (a bare number is
    /// milliseconds, as vLLM's --goodput); the answers a second that met them all, and their share.
    #[arg(long, value_name = "OBJECTIVES", help_heading = heading::REQUEST, hide_short_help = true)]
    pub goodput: Option<String>,
    /// WebSocket (ws://, wss:// URLs): the message each request sends; the next message received is its answer.
    ///
    /// May hold {{...}} templates, filled per message (with --data's rows too); -H goes on the upgrade request
    /// (docs/websocket.md).
    #[arg(long, value_name = "TEXT", conflicts_with = "message_file", help_heading = heading::REQUEST, hide_short_help = true)]
    pub message: Option<String>,
    /// WebSocket: the message read from a file.
    #[arg(long, value_name = "FILE", help_heading = heading::REQUEST, hide_short_help = true)]
    pub message_file: Option<PathBuf>,
    /// WebSocket: send the message as a binary frame (text otherwise).
    #[arg(long, help_heading = heading::REQUEST, hide_short_help = true)]
    pub binary: bool,
    /// WebSocket and gRPC: the longest message taken from the server; one announcing more is refused at its head.
    ///
    /// Unless given: 16MiB for WebSocket, 4MiB for gRPC (gRPC's own default).
    #[arg(long, value_name = "SIZE", help_heading = heading::REQUEST, hide_short_help = true)]
    pub max_message: Option<String>,
    /// WebSocket: what a request is. exchange: a message sent, the next received; listen: each message the server
    /// pushes (--message, if given, is sent once per connection, as a subscription); connect: a connection opened
    /// and upgraded (with --message, one exchange on it), then closed.
    #[arg(long, value_enum, default_value = "exchange", value_name = "MODE", help_heading = heading::REQUEST, hide_short_help = true)]
    pub ws_mode: WsModeArg,
    /// WebSocket: messages awaiting their answers on one connection at once (-c connections, N messages each);
    /// answers are taken in order unless --match-field pairs them.
    #[arg(long, value_name = "N", default_value_t = 1, help_heading = heading::REQUEST, hide_short_help = true)]
    pub in_flight: usize,
    /// WebSocket: pair each answer with its message by the id at this JSON pointer in both (e.g. /id); other
    /// answers are counted as unmatched, not taken.
    #[arg(long, value_name = "POINTER", help_heading = heading::REQUEST, hide_short_help = true)]
    pub match_field: Option<String>,
    /// WebSocket --ws-mode listen: the JSON pointer of the time each pushed message was sent (a number since the
    /// Unix epoch, in s, ms, us or ns by its size): each message's fan-out delay is when it arrived less that.
    #[arg(long, value_name = "POINTER", help_heading = heading::REQUEST, hide_short_help = true)]
    pub stamp_field: Option<String>,
    /// WebSocket: the answer each message must get, byte for byte (another is counted as wrong_value), or any.
    #[arg(long, value_name = "TEXT|any", default_value = "any", help_heading = heading::REQUEST, hide_short_help = true)]
    pub expect: String,
    /// Arguments for the script's init(args), after `--`.
    #[arg(last = true, value_name = "SCRIPT_ARGS", requires = "script", hide_short_help = true)]
    pub script_args: Vec<String>,
}

/// Watching the server while the load runs.
#[derive(Args, Debug, Clone, Default, Serialize)]
pub struct WatchArgs {
    /// Report CPU % (all threads and children) and RSS of this server process, every step (repeatable).
    #[arg(long = "monitor-pid", value_name = "PID", help_heading = heading::WATCH)]
    pub monitor_pid: Vec<u32>,
    /// Watch every process with this name (repeatable).
    #[arg(long = "monitor-name", value_name = "NAME", help_heading = heading::WATCH)]
    pub monitor_name: Vec<String>,
    /// Watch the processes listening on this port (repeatable).
    ///
    /// Without any --monitor-* flag, a target on this machine is found this way by itself.
    #[arg(long = "monitor-port", value_name = "PORT", help_heading = heading::WATCH)]
    pub monitor_port: Vec<u16>,
    /// Do not look for a target on this machine to watch.
    #[arg(long = "no-monitor", help_heading = heading::WATCH)]
    pub no_monitor: bool,
    /// Fetch a JSON value before and after every step: 'http://host/d/status#/1/cache_hit_rate' (repeatable).
    #[arg(long = "probe", value_name = "URL#/POINTER", help_heading = heading::WATCH)]
    pub probe: Vec<String>,
    /// The cache hit rate planned (0.5 or 50%): warn when a probe measures another.
    ///
    /// The rate comes for example from `patterns generate --hit-rate`; the warning is given when a probe whose name
    /// mentions "hit" measures more than 0.1 away from it.
    #[arg(long, value_name = "RATE", hide_short_help = true, help_heading = heading::WATCH)]
    pub expect_hit_rate: Option<String>,
}

#[derive(Args, Debug, Clone, Serialize)]
pub struct RunArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub request: RequestArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub watch: WatchArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub replay: ReplayArgs,
    /// wrk's --latency, accepted: hakaru always prints the latency percentiles.
    #[arg(long, hide_short_help = true)]
    #[serde(skip)]
    pub latency: bool,
}

/// How much load one step offers, for how long, and where its result goes (`run` and `kv`).
#[derive(Args, Debug, Clone, Serialize)]
pub struct LoadArgs {
    /// Concurrent connections (closed-loop clients); with --rate, the most that may be opened.
    #[arg(short, long, value_name = "N", default_value_t = 50, allow_negative_numbers = true, value_parser = count::<usize>, display_order = 1)]
    pub connections: usize,
    /// Open loop: this many requests per second in total, whatever the answers take.
    ///
    /// Latency is measured from each request's intended send time (coordinated omission corrected) and from the
    /// actual send.
    #[arg(long, value_name = "PER_SECOND", allow_negative_numbers = true, display_order = 4)]
    pub rate: Option<f64>,
    /// A ramp of clients in one run (closed loop), k6's stages: 30s:10,1m:100,30s:0.
    ///
    /// Each stage moves the number of clients linearly from the previous stage's (0 before the first) to its
    /// own over its duration; connections stay open across the run, new ones opened only as the target grows.
    /// The run lasts the stages' total.
    #[arg(long, value_name = "T:N,...", conflicts_with_all = ["rate", "rate_stages", "requests", "duration"], help_heading = heading::LOAD)]
    pub stages: Option<String>,
    /// A ramp of the rate in one run (open loop): 30s:100,2m:5000 (requests per second).
    ///
    /// The rate moves linearly from the previous stage's (0 before the first) to each stage's; latency counts
    /// from each request's intended send time, as with --rate. -c is the most connections it may open.
    #[arg(long, value_name = "T:RATE,...", conflicts_with_all = ["rate", "requests", "duration"], help_heading = heading::LOAD)]
    pub rate_stages: Option<String>,
    /// With --rate: evenly spaced requests, or Poisson arrivals (exponential gaps).
    #[arg(long, value_enum, default_value = "uniform", requires = "rate", help_heading = heading::LOAD)]
    pub arrival: ArrivalArg,
    /// With a rate: gamma-distributed gaps of this shape, in place of --arrival (vLLM's --burstiness): 1 is Poisson,
    /// below 1 burstier, above more even; the mean rate stays the one asked.
    #[arg(long, value_name = "FACTOR", help_heading = heading::LOAD, hide_short_help = true)]
    pub burstiness: Option<f64>,
    /// Stop after this many requests in total.
    #[arg(short = 'n', long, value_name = "N", allow_negative_numbers = true, value_parser = count::<u64>, display_order = 2)]
    pub requests: Option<u64>,
    /// Stop after this long: 500ms, 30s, 2m (default 10s when neither -n nor -d is given).
    #[arg(short, long, value_name = "TIME", display_order = 3)]
    pub duration: Option<String>,
    /// Threads generating load (default: the number of cores; with --rate, one per 100,000/s, at most the cores).
    #[arg(short, long, value_name = "N", allow_negative_numbers = true, value_parser = count::<usize>, help_heading = heading::LOAD)]
    pub threads: Option<usize>,
    /// Write the result document (JSON) to this file.
    #[arg(long, value_name = "FILE", display_order = 6)]
    pub json: Option<PathBuf>,
    /// Write one CSV row (loadtest's columns, then percentiles) to this file.
    #[arg(long, value_name = "FILE", help_heading = heading::OUTPUT)]
    pub csv: Option<PathBuf>,
    /// Write HdrHistogram's interval log (.hlog) to this file: a row per window, as wrk2 and jHiccup write.
    ///
    /// Values in microseconds; the latency from the intended send tagged `corrected`, the service time (open
    /// loop) tagged `service`. HistogramLogAnalyzer and every HdrHistogram library read it.
    #[arg(long, value_name = "FILE", help_heading = heading::OUTPUT)]
    pub hdr_log: Option<PathBuf>,
    /// Width of the time-series windows (rates, failures, percentiles over time): 100ms at least.
    #[arg(long, value_name = "T", default_value = "1s", help_heading = heading::OUTPUT, hide_short_help = true)]
    pub window: String,
    /// No live progress on stderr.
    #[arg(short, long, help_heading = heading::OUTPUT)]
    pub quiet: bool,
    /// Run the same load N times back to back, then the mean, spread and 95 % interval.
    ///
    /// One row per run; the mean, spread and interval are of throughput and p99, with the runs' histograms merged.
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true, value_parser = count::<usize>, help_heading = heading::LOAD)]
    pub runs: usize,
    /// With --runs: pause between runs (lets the server drain).
    #[arg(long, value_name = "T", default_value = "1s", help_heading = heading::LOAD, hide_short_help = true)]
    pub run_interval: String,
    /// A gate for CI, judged on the whole result: 'p99<50ms', 'errors<1%', 'qps>1000' (repeatable).
    ///
    /// The figures are p50..p99.99, mean, max, errors and qps; the comparisons < <= > >=. A broken gate exits with
    /// code 99 after every result is written.
    #[arg(long = "threshold", value_name = "GATE", help_heading = heading::OUTPUT)]
    pub thresholds: Vec<String>,
    #[command(flatten)]
    #[serde(flatten)]
    pub live: LiveArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub scale: ScaleArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub history: HistoryArgs,
}

/// What a run shows and sends while it runs (`run`, `kv`, `sweep`, `capacity`).
#[derive(Args, Debug, Clone, Serialize)]
pub struct LiveArgs {
    /// On a terminal, the one progress line instead of the live dashboard.
    #[arg(long, hide_short_help = true, help_heading = heading::OUTPUT)]
    pub no_tui: bool,
    /// Push the figures while the run goes to a Prometheus remote-write URL: http://HOST:9090/api/v1/write.
    ///
    /// Remote-write 1.0 (protobuf, snappy): requests by status and error kind, sent and completed rates, latency as
    /// a classic histogram, labelled run_id, target, step, phase and every --label. A failed push is retried,
    /// counted and warned about; it never stops the load.
    #[arg(long, value_name = "URL", help_heading = heading::OUTPUT)]
    pub prometheus_rw: Option<String>,
    /// With --prometheus-rw: how often to push (1s to 1h).
    #[arg(long, value_name = "TIME", default_value = "5s", help_heading = heading::OUTPUT, hide_short_help = true)]
    pub prometheus_interval: String,
}

impl Default for LiveArgs {
    fn default() -> Self {
        LiveArgs { no_tui: false, prometheus_rw: None, prometheus_interval: "5s".into() }
    }
}

/// Scale-out: this process's share of a plan run by several agents, and their common start.
#[derive(Args, Debug, Clone, Default, Serialize)]
pub struct ScaleArgs {
    /// Run segment I of N of the plan (I from 0); `hakaru merge` joins the segments' documents.
    ///
    /// Connections, -n and --rate are split so the N segments add up to the whole. auto/N takes I from
    /// JOB_COMPLETION_INDEX (Kubernetes, from 0) or HAKARU_AGENT_SLOT (Docker Swarm's slot, from 1); {index} in
    /// --json and --csv stands for I.
    #[arg(long, value_name = "I/N", hide_short_help = true, help_heading = heading::SCALE)]
    pub segment: Option<String>,
    /// Start the load at this instant (RFC 3339 or Unix seconds), so agents start together.
    ///
    /// For example 2026-11-23T21:00:00Z or 1795467600, the same on every machine; a late start is said in the
    /// output.
    #[arg(long, value_name = "TIME", hide_short_help = true, help_heading = heading::SCALE)]
    pub start_at: Option<String>,
    /// `ok`: run a load whose --start-at is more than 5 s past (refused without it), starting now.
    #[arg(long, value_name = "ok", hide_short_help = true, help_heading = heading::SCALE)]
    pub start_late: Option<String>,
    /// Run the plan as N agent processes on this machine, then merge their documents.
    ///
    /// Each agent runs its --segment from one common --start-at: more cores than one process uses well, and the
    /// rehearsal of a scale-out.
    #[arg(long, value_name = "N", conflicts_with = "segment", allow_negative_numbers = true, value_parser = count::<usize>, hide_short_help = true, help_heading = heading::SCALE)]
    pub agents: Option<usize>,
    /// Open every connection from this local address (bound before connecting).
    ///
    /// An agent's own address, or one of several on one machine (127.0.0.2 ... on loopback) to spread connections
    /// over more source ports.
    #[arg(long, value_name = "ADDR", hide_short_help = true, help_heading = heading::SCALE)]
    pub source_address: Option<String>,
    /// With --agents N: each agent's --source-address, N addresses separated by commas.
    #[arg(long, value_name = "A,B,...", requires = "agents", hide_short_help = true, help_heading = heading::SCALE)]
    pub agent_source: Option<String>,
    /// With --agents N: each agent in its network namespace, N names separated by commas.
    ///
    /// Each agent runs under `ip netns exec NS` (as root): agents with addresses and routes of their own on one
    /// machine.
    #[arg(long, value_name = "NS,...", requires = "agents", hide_short_help = true, help_heading = heading::SCALE)]
    pub agent_netns: Option<String>,
}

/// How the steps of a sweep or a capacity search run, and where they are written.
#[derive(Args, Debug, Clone, Serialize)]
pub struct StepFlags {
    /// Open-loop steps: evenly spaced requests, or Poisson arrivals.
    #[arg(long, value_enum, default_value = "uniform", help_heading = heading::LOAD)]
    pub arrival: ArrivalArg,
    /// Open-loop steps: the most connections a step may open.
    #[arg(short, long, value_name = "N", default_value_t = 50, allow_negative_numbers = true, value_parser = count::<usize>, help_heading = heading::LOAD)]
    pub connections: usize,
    /// Length of each step.
    #[arg(short, long, value_name = "TIME", default_value = "30s", display_order = 3)]
    pub duration: String,
    /// A step with a larger share of failed requests does not count: 1%, 0.001, 0.
    ///
    /// Failed requests are errors and statuses outside --ok-status. Such a step counts neither as a plateau in a
    /// sweep nor as meeting the objective in a capacity search.
    #[arg(long, visible_alias = "max-errors", value_name = "SHARE", default_value = "1%", help_heading = heading::LOAD)]
    pub max_error_rate: String,
    /// Pause between steps (lets the server drain).
    #[arg(long, value_name = "TIME", default_value = "10s", help_heading = heading::LOAD)]
    pub interval: String,
    /// Load before each step, measured apart and left out of the step's figures.
    #[arg(long, value_name = "TIME", default_value = "0s", help_heading = heading::LOAD)]
    pub warmup: String,
    /// Threads generating load (default: the number of cores; with --rate, one per 100,000/s, at most the cores).
    #[arg(short, long, value_name = "N", allow_negative_numbers = true, value_parser = count::<usize>, help_heading = heading::LOAD)]
    pub threads: Option<usize>,
    /// drnbench's CSV, exactly (its six columns, then a percentage per status), written after every step.
    #[arg(short, long, value_name = "FILE", visible_alias = "output-path", help_heading = heading::OUTPUT)]
    pub output: Option<PathBuf>,
    /// hakaru's wide CSV: drnbench's columns, then percentiles, failures, CPU, rates, probes and statuses.
    #[arg(long, value_name = "FILE", help_heading = heading::OUTPUT)]
    pub csv: Option<PathBuf>,
    /// The result document (JSON), written after every step.
    #[arg(long, value_name = "FILE", display_order = 6)]
    pub json: Option<PathBuf>,
    /// Write HdrHistogram's interval log (.hlog) of every step to this one file, each step's rows tagged apart.
    ///
    /// Tags `STEP.corrected` (latency from the intended send) and `STEP.service` (open-loop steps), STEP being
    /// the step's label (c=10, rate=1000): HistogramLogAnalyzer shows each tag as a series of its own.
    #[arg(long, value_name = "FILE", help_heading = heading::OUTPUT)]
    pub hdr_log: Option<PathBuf>,
    /// Width of the time-series windows of every step: 100ms at least.
    #[arg(long, value_name = "T", default_value = "1s", help_heading = heading::OUTPUT, hide_short_help = true)]
    pub window: String,
    /// No live progress on stderr.
    #[arg(short, long, help_heading = heading::OUTPUT)]
    pub quiet: bool,
    #[command(flatten)]
    #[serde(flatten)]
    pub live: LiveArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub scale: ScaleArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub history: HistoryArgs,
}

#[derive(Args, Debug, Clone, Serialize)]
pub struct SweepArgs {
    /// Set by `hakaru llm --request-rate 1,2,4`: what the prompts are, for the document's `settings.prompts`.
    #[arg(skip)]
    #[serde(skip)]
    pub prompts: Option<String>,
    /// Explicit client counts, a step each: 1,2,4,8,16.
    #[arg(long, value_name = "N,N,...", conflicts_with_all = ["start_clients", "end_clients", "rates", "rate_start"], display_order = 1)]
    pub clients: Option<String>,
    /// Open-loop rate sweep: requests per second of each step, 1000,2000,4000.
    #[arg(long, value_name = "R,R,...", conflicts_with_all = ["start_clients", "end_clients", "rate_start"], display_order = 2)]
    pub rates: Option<String>,
    /// First client count; the steps are start, start+step, ... up to the end (drnbench's rule).
    ///
    /// A count of 0 is run as 1, as drnbench does.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count::<usize>, visible_alias = "start-n-clients", help_heading = heading::STEPS)]
    pub start_clients: Option<usize>,
    /// Last client count.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count::<usize>, visible_alias = "end-n-clients", help_heading = heading::STEPS)]
    pub end_clients: Option<usize>,
    /// Client count added at each step.
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true, value_parser = count::<usize>, help_heading = heading::STEPS)]
    pub step: usize,
    /// Rate sweep from this rate ...
    // The pairs are checked by the plan rather than with `requires`: clap's message for a missing one does not
    // fit on the one line hakaru prints, and would lose the flag's name.
    #[arg(long, value_name = "R", allow_negative_numbers = true, help_heading = heading::STEPS)]
    pub rate_start: Option<f64>,
    /// ... to this rate ...
    #[arg(long, value_name = "R", allow_negative_numbers = true, help_heading = heading::STEPS)]
    pub rate_end: Option<f64>,
    /// ... in steps of this many requests per second (default: 4 steps).
    #[arg(long, value_name = "R", allow_negative_numbers = true, help_heading = heading::STEPS)]
    pub rate_step: Option<f64>,
    /// Each client waits this long after each answer (drnbench's --wait).
    ///
    /// The default is a "wait" in seconds given in the pattern file, else 0.
    #[arg(long, value_name = "TIME", help_heading = heading::STEPS)]
    pub wait: Option<String>,
    #[command(flatten)]
    #[serde(flatten)]
    pub request: RequestArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub watch: WatchArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub steps: StepFlags,
    /// A gate for CI, judged on every step merged: 'p99<50ms', 'errors<1%', 'qps>1000' (repeatable).
    ///
    /// As k6 judges a whole test. A broken gate exits with code 99 after every result is written.
    #[arg(long = "threshold", value_name = "GATE", help_heading = heading::OUTPUT)]
    pub thresholds: Vec<String>,
}

/// A capacity search runs shorter steps closer together, with more connections, than a sweep.
#[derive(Args, Debug, Clone, Serialize)]
#[command(
    mut_arg("duration", |a| a.default_value("10s")),
    mut_arg("interval", |a| a.default_value("2s")),
    mut_arg("connections", |a| a.default_value("200"))
)]
pub struct CapacityArgs {
    /// Set by `hakaru llm --slo`: what the prompts are, for the document's `settings.prompts`.
    #[arg(skip)]
    #[serde(skip)]
    pub prompts: Option<String>,
    /// The objective every step must meet: 'p99<50ms', 'p99.9<=200ms', 'mean<10ms', several joined by commas.
    // Required, but left to the plan to refuse when empty: its one line names --slo and shows how to write it.
    #[arg(long, default_value = "", hide_default_value = true, display_order = 1)]
    pub slo: String,
    /// First rate tried (requests per second); it doubles until the objective fails, then bisects.
    #[arg(long, value_name = "R", default_value_t = 100.0, allow_negative_numbers = true, help_heading = heading::SEARCH)]
    pub rate_start: f64,
    /// Highest rate tried.
    #[arg(long, value_name = "R", default_value_t = 1_000_000.0, allow_negative_numbers = true, help_heading = heading::SEARCH)]
    pub rate_max: f64,
    /// Stop bisecting when the interval between passing and failing rates is this share of the passing rate.
    #[arg(long, value_name = "SHARE", default_value = "5%", help_heading = heading::SEARCH)]
    pub precision: String,
    #[command(flatten)]
    #[serde(flatten)]
    pub request: RequestArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub watch: WatchArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub steps: StepFlags,
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

/// `hakaru compare`: results side by side against a baseline.
#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// The history database that IDs and labels are read from (default as for run).
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
    /// A label for an input, LABEL=INPUT: the input as typed, a result's target URL or a study's target name
    /// (--name nginx=http://127.0.0.1:8080/); it titles the input's tables, lines and verdicts (repeatable).
    #[arg(long = "name", value_name = "LABEL=INPUT")]
    pub names: Vec<String>,
    /// Result JSON files, drnbench CSV files (several files of one side joined by commas: a.json,a2.json), one
    /// study directory (its targets compared per workload and phase), or history references (42, label=main).
    /// The first is the baseline.
    #[arg(value_name = "INPUT", required = true)]
    pub inputs: Vec<String>,
    /// The input (or study target) to compare the others with, instead of the first.
    #[arg(long, value_name = "INPUT")]
    pub baseline: Option<String>,
    /// Exit with code 1 when a side is significantly worse than the baseline by more than a factor (the whole 95 %
    /// interval of the ratio beyond it): 'p99 > 1.10 * baseline', 'qps < 0.95 * baseline' (repeatable).
    #[arg(long = "fail-if", value_name = "GATE")]
    pub fail_if: Vec<String>,
    /// Write the comparison as JSON to FILE (- for standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the comparison as Markdown (for a CI comment) to FILE (- for standard output).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
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
    /// A gate judged on every case's result, as `run --threshold` judges one: 'p99<50ms', 'errors<1%',
    /// 'qps>1000' (repeatable). A broken one exits with code 99 after every result and the report are written.
    #[arg(long = "threshold", value_name = "GATE")]
    pub thresholds: Vec<String>,
    /// Every case pushes its figures to this Prometheus remote-write URL while it runs (as run's --prometheus-rw).
    #[arg(long, value_name = "URL")]
    pub prometheus_rw: Option<String>,
    /// With --prometheus-rw: how often each case pushes (1s to 1h).
    #[arg(long, value_name = "TIME", default_value = "5s")]
    pub prometheus_interval: String,
}
