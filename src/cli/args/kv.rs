//! `hakaru kv`'s flags: servers, the workload's mix, keys and values, phases, the guard's flags.

use super::*;

/// `hakaru kv`: a key-value server under a memtier-style mix of operations.
#[derive(Args, Debug, Clone, Serialize)]
pub struct KvArgs {
    /// Servers: redis://[USER:PASSWORD@]HOST:PORT[/DB] (RESP2) or memcache://HOST:PORT (the text protocol).
    /// Clients are spread over them round-robin, each client keeping to one.
    #[arg(value_name = "URL", required = true)]
    pub urls: Vec<String>,
    /// mix (--mix or --command), order or wicked (Kyoto Tycoon's), ycsb-a ... ycsb-f (YCSB's).
    ///
    /// mix: --mix or --command; order and wicked: Kyoto Tycoon's test patterns (they need an empty database: one
    /// holding keys is refused unless --flush); ycsb-a ... ycsb-f: YCSB's core workloads (a load phase, then the
    /// run).
    #[arg(long, default_value = "mix", display_order = 7)]
    pub workload: String,
    /// The operations and their shares: get:90,set:10.
    #[arg(long, default_value = "get:90,set:10", display_order = 8)]
    pub mix: String,
    /// Requests written together on a connection before their replies are read.
    ///
    /// Each request's latency runs from the write to its own reply.
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true, value_parser = count::<usize>, help_heading = heading::LOAD)]
    pub pipeline: usize,
    /// Load before the measurement, left out of the figures: 5s.
    #[arg(long, value_name = "TIME", help_heading = heading::LOAD)]
    pub warmup: Option<String>,
    /// A sweep of the mix over client counts, a step each (with -d or -n per step): 1,2,4,8,16.
    #[arg(long, value_name = "LIST", conflicts_with = "rates", help_heading = heading::LOAD)]
    pub clients: Option<String>,
    /// A sweep of the mix over open-loop rates, a step each: 1000,2000,4000.
    #[arg(long, value_name = "LIST", help_heading = heading::LOAD)]
    pub rates: Option<String>,
    /// Distinct keys (drawn as the run goes; none are prepared).
    #[arg(long, value_name = "N", default_value_t = 1000, allow_negative_numbers = true, value_parser = count::<u64>, help_heading = heading::KEYS)]
    pub keys: u64,
    /// How keys are drawn: R uniform, G Gaussian, S sequential, P parallel, Z zipfian.
    ///
    /// memtier's letters: R uniform, G Gaussian, S sequential (every client the same walk), P parallel (each client
    /// its own part), Z zipfian (0.99).
    #[arg(long, default_value = "R", value_name = "R|G|S|P|Z", help_heading = heading::KEYS)]
    pub key_pattern: String,
    /// Bytes of each value set.
    #[arg(long, value_name = "N", default_value_t = 32, allow_negative_numbers = true, value_parser = count::<usize>, help_heading = heading::KEYS)]
    pub value_size: usize,
    /// Value sizes drawn uniformly from MIN-MAX bytes instead of --value-size.
    #[arg(long, value_name = "MIN-MAX", help_heading = heading::KEYS)]
    pub value_size_range: Option<String>,
    /// Text before each key's number; keys under a prefix not hakaru's are never overwritten.
    ///
    /// A prefix of hakaru's own (beginning with "hakaru") is taken as hakaru's to overwrite; under any other, keys
    /// that already exist are refused unless --overwrite.
    #[arg(long, default_value = "hakaru:", help_heading = heading::KEYS)]
    pub key_prefix: String,
    /// A command template instead of --mix (repeatable): 'SET __key__ __data__'.
    ///
    /// For example 'SET __key__ __data__', 'EVALSHA __sha__ 1 __key__'; on memcached any storage or retrieval
    /// command ('set __key__ __data__', 'get __key__').
    #[arg(long, value_name = "TEMPLATE", help_heading = heading::COMMANDS)]
    pub command: Vec<String>,
    /// Share of each --command, in the order given (default 1 each).
    #[arg(long, value_name = "N", help_heading = heading::COMMANDS)]
    pub command_ratio: Vec<f64>,
    /// Key pattern of each --command, in the order given (default: --key-pattern).
    #[arg(long, value_name = "R|G|S|P|Z", help_heading = heading::COMMANDS, hide_short_help = true)]
    pub command_key_pattern: Vec<String>,
    /// Rows for {{column}} templates in --command's words (keys, values): CSV with a header line, or JSON lines.
    ///
    /// 'SET {{id}} {{name}}'; the built-ins {{seq}}, {{uuid}}, {{rand 1 1000}} and {{now_ms}} work without it
    /// (docs/scripting.md). Each op takes the next row, all clients from one cursor.
    #[arg(long, value_name = "FILE", help_heading = heading::COMMANDS)]
    pub data: Option<PathBuf>,
    /// How --data's rows are taken: one after another (from the first again after the last), at random, or each
    /// once (the run ends when they run out).
    #[arg(long, value_enum, default_value = "sequential", value_name = "ORDER", help_heading = heading::COMMANDS, hide_short_help = true)]
    pub data_order: DataOrderArg,
    /// A Lua script loaded on every Redis server before the run; its SHA1 is __sha__ in --command.
    ///
    /// Loaded with SCRIPT LOAD.
    #[arg(long, value_name = "FILE", help_heading = heading::COMMANDS)]
    pub script: Option<PathBuf>,
    /// Delete EVERYTHING in the database (FLUSHDB) or on the server (flush_all) before the load.
    ///
    /// Redis: FLUSHDB of the URL's database; memcached: flush_all. This includes data hakaru did not write. Without
    /// it nothing is deleted: order and wicked refuse a target that holds keys, and wicked leaves out Kyoto's clear
    /// at half way.
    #[arg(long, help_heading = heading::DATA)]
    pub flush: bool,
    /// Allow the mix and YCSB's load phase to overwrite keys that already exist.
    ///
    /// The mix only under a --key-prefix not hakaru's; without --overwrite such a target is refused before the
    /// load.
    #[arg(long, help_heading = heading::DATA)]
    pub overwrite: bool,
    /// order and wicked: operations per client in each phase or iteration (Kyoto's rnum, per thread there).
    #[arg(long, value_name = "N", default_value_t = 10000, allow_negative_numbers = true, value_parser = count::<u64>, help_heading = heading::KYOTO, hide_short_help = true)]
    pub rnum: u64,
    /// order: keys drawn at random from every client's range (some reads miss) instead of each client's own.
    #[arg(long, help_heading = heading::KYOTO, hide_short_help = true)]
    pub rnd: bool,
    /// order: also add, append and a walk over every key (SCAN; memcached cannot iterate and skips it).
    #[arg(long, help_heading = heading::KYOTO, hide_short_help = true)]
    pub etc: bool,
    /// wicked: iterations of rnum operations per client, each timed.
    ///
    /// On Redis about 1 % of them run in MULTI/EXEC transactions, each counted as one operation.
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true, value_parser = count::<u64>, help_heading = heading::KYOTO, hide_short_help = true)]
    pub it: u64,
    /// wicked: check every answer against each client's model of its keys; the first wrong one stops the run.
    ///
    /// Each client owns its keys and keeps a model of them; the run stops at the first wrong answer with the seed
    /// that replays it.
    #[arg(long, help_heading = heading::KYOTO, hide_short_help = true)]
    pub verify: bool,
    /// YCSB: records inserted by the load phase.
    #[arg(long, value_name = "N", default_value_t = 1000, allow_negative_numbers = true, value_parser = count::<u64>, help_heading = heading::YCSB, hide_short_help = true)]
    pub records: u64,
    /// YCSB: load, run, or both (load then run).
    #[arg(long, default_value = "both", value_name = "load|run|both", help_heading = heading::YCSB, hide_short_help = true)]
    pub ycsb_phase: String,
    /// An operation with no complete reply in this time is recorded with status 0.
    #[arg(long, value_name = "TIME", default_value = "5s", help_heading = heading::CONNECTION)]
    pub timeout: String,
    /// Time allowed to open a connection.
    #[arg(long, value_name = "TIME", default_value = "5s", help_heading = heading::CONNECTION)]
    pub connect_timeout: String,
    /// The longest reply line taken; a longer one fails the operation as line_too_long.
    #[arg(long, value_name = "SIZE", default_value = "64KiB", help_heading = heading::CONNECTION, hide_short_help = true)]
    pub max_line: String,
    /// Seed of the random choices, so a run can be repeated; random when absent.
    #[arg(long, help_heading = heading::KEYS, hide_short_help = true)]
    pub seed: Option<u64>,
    #[command(flatten)]
    #[serde(flatten)]
    pub watch: WatchArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub load: LoadArgs,
    /// `--replay FILE`: a Redis MONITOR capture replayed (its commands as the workload).
    #[command(flatten)]
    #[serde(flatten)]
    pub replay: ReplayArgs,
    /// Set by `hakaru sweep` given key-value servers: how its steps run and where they are written.
    #[arg(skip)]
    #[serde(skip)]
    pub from_sweep: Option<KvSweep>,
}

/// What `hakaru sweep` over key-value servers keeps of its own flags: `kv` has no --interval, --max-error-rate
/// or -o, and sweep's --csv is the wide CSV of one row per step.
#[derive(Debug, Clone)]
pub struct KvSweep {
    pub interval: std::time::Duration,
    pub max_error_percent: f64,
    pub drnbench_csv: Option<PathBuf>,
    pub csv: Option<PathBuf>,
}
