//! The command line: raw flags as clap reads them, and `main`, which turns them into plans and runs them.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clap::{Args, Parser, Subcommand};

use crate::plan::UsageError;

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
    /// Start the built-in target: answers shaped by the request (?delay=, ?size=, ?status=, /cache, ?fault=).
    Serve(ServeArgs),
    /// Start the built-in target in-process and run a short benchmark against it.
    Demo(DemoArgs),
}

/// What requests to send and how, shared by every command that generates load.
#[derive(Args, Debug, Clone, Default)]
pub struct RequestArgs {
    /// Target URLs, sent round-robin; with --hosts, paths such as /d/select?q=a.
    #[arg(value_name = "URL")]
    pub urls: Vec<String>,
    /// Hosts to spread requests over round-robin, as a load balancer would (with --port and paths).
    #[arg(long, value_name = "H1,H2,...")]
    pub hosts: Option<String>,
    /// Port for --hosts (default 80).
    #[arg(long)]
    pub port: Option<u16>,
    /// Request pattern file in drnbench's plain-text or JSON format.
    #[arg(long, value_name = "FILE")]
    pub patterns: Option<PathBuf>,
    /// HTTP method.
    #[arg(short, long, default_value = "GET")]
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
    /// A request with no complete answer in this time is recorded with status 0.
    #[arg(long, default_value = "5s")]
    pub timeout: String,
    /// Time allowed to open a connection.
    #[arg(long, default_value = "5s")]
    pub connect_timeout: String,
    /// Open a new connection for every request and send `Connection: close` (like ab without -k).
    #[arg(long)]
    pub no_keepalive: bool,
    /// Accept any TLS certificate (self-signed test servers).
    #[arg(long, short = 'k')]
    pub insecure: bool,
    /// Seed of the random choices (patterns), so a run can be repeated; random when absent.
    #[arg(long)]
    pub seed: Option<u64>,
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub request: RequestArgs,
    /// Concurrent connections (closed-loop clients); with --rate, the most connections that may be opened.
    #[arg(short, long, default_value_t = 50)]
    pub connections: usize,
    /// Open loop: send this many requests per second in total, whatever the answers take; latency is measured
    /// from each request's intended send time (coordinated omission corrected) and from the actual send.
    #[arg(long, value_name = "PER_SECOND", allow_negative_numbers = true)]
    pub rate: Option<f64>,
    /// With --rate: evenly spaced requests, or Poisson arrivals (exponential gaps).
    #[arg(long, value_enum, default_value = "uniform", requires = "rate")]
    pub arrival: crate::plan::Arrival,
    /// Stop after this many requests in total.
    #[arg(short = 'n', long)]
    pub requests: Option<u64>,
    /// Stop after this long: 500ms, 30s, 2m (default 10s when neither -n nor -d is given).
    #[arg(short, long)]
    pub duration: Option<String>,
    /// Threads generating load (default: the number of cores).
    #[arg(short, long)]
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

#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port; the address is printed).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Server threads (default: the number of cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Serve at most N requests at once; the others wait (a sweep then shows a knee at N).
    #[arg(long)]
    pub workers: Option<usize>,
    /// Cost of a cache miss at /cache.
    #[arg(long, default_value = "5ms")]
    pub miss_cost: String,
    /// Entries of the LRU cache at /cache.
    #[arg(long, default_value_t = 100)]
    pub cache_size: usize,
}

#[derive(Args, Debug, Clone)]
pub struct DemoArgs {
    /// How long the demo load runs.
    #[arg(short, long, default_value = "3s")]
    pub duration: String,
    /// Concurrent connections.
    #[arg(short, long, default_value_t = 20)]
    pub connections: usize,
    /// Write the result document (JSON) to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Exit code for bad input, as the developers' guide asks.
pub const EXIT_USAGE: u8 = 2;

/// Parses `std::env::args`, runs the command, and maps every failure to one line and an exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_error(e),
    };
    let interrupt = Arc::new(AtomicBool::new(false));
    // The first Ctrl-C stops the load and keeps what was measured; a second one ends the process at once.
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&interrupt));
        let _ = signal_hook::flag::register(signal, Arc::clone(&interrupt));
    }
    let outcome = match cli.command {
        Command::Run(args) => {
            crate::plan::RunPlan::from_args(&args).and_then(|plan| crate::run::run_plan(&plan, &interrupt))
        }
        Command::Serve(args) => serve(&args),
        Command::Demo(args) => crate::demo::demo(&args, &interrupt),
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("hakaru: error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

fn serve(args: &ServeArgs) -> Result<ExitCode, UsageError> {
    let opts = crate::plan::serve_options(args)?;
    crate::serve::run_until_signal(opts).map_err(|e| UsageError::runtime(format!("serve: {e:#}")))?;
    Ok(ExitCode::SUCCESS)
}

/// Prints clap's own help and version as they are, and its errors as one line with the fix.
fn clap_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand => {
            let _ = e.print();
            ExitCode::from(EXIT_USAGE)
        }
        _ => {
            let rendered = e.render().to_string();
            let first = rendered.lines().next().unwrap_or("bad arguments").trim_start_matches("error: ");
            eprintln!("hakaru: error: {first} (see 'hakaru help' for the flags)");
            ExitCode::from(EXIT_USAGE)
        }
    }
}
