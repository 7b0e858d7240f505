//! `run --replay`'s flags: the recorded traffic, how it is paced, and what of it is sent.

use super::*;

/// How a replay's requests are spaced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplayPaceArg {
    /// Each record at its recorded offset from the first (over --speed), one absolute schedule.
    #[default]
    Recorded,
    /// The records in order at --rate.
    Rate,
    /// The records in order through -c clients, each sending when its answer came (a closed loop).
    Closed,
}

#[derive(Args, Debug, Clone, Default, Serialize)]
pub struct ReplayArgs {
    /// Replay recorded traffic to the URL's target: an access log (nginx's or Apache's combined format), JSON lines
    /// ({"time": ..., "method": "GET", "path": "/a"}) or a HAR file (kv: a Redis MONITOR capture); requests that
    /// change data are left out.
    #[arg(long, value_name = "FILE", help_heading = heading::REPLAY, hide_short_help = true)]
    pub replay: Option<PathBuf>,
    /// The file's format: combined (also common, nginx, apache), jsonl, har, or an nginx log_format definition
    /// ('$remote_addr [$time_local] "$request" $status'); default: told from the name (.har) or the first line
    /// (kv: monitor, the only one).
    #[arg(long, value_name = "FORMAT", help_heading = heading::REPLAY, hide_short_help = true)]
    pub replay_format: Option<String>,
    /// How the requests are spaced: as recorded (over --speed), in order at --rate, or in order by -c clients.
    #[arg(long, value_enum, default_value = "recorded", value_name = "PACE", help_heading = heading::REPLAY, hide_short_help = true)]
    pub replay_pace: ReplayPaceArg,
    /// The recorded schedule this many times faster (0.5: half as fast).
    #[arg(long, value_name = "FACTOR", default_value_t = 1.0, help_heading = heading::REPLAY, hide_short_help = true)]
    pub speed: f64,
    /// Idle gaps between records cut to this long (GoReplay's --input-file-max-wait).
    #[arg(long, value_name = "TIME", help_heading = heading::REPLAY, hide_short_help = true)]
    pub replay_max_gap: Option<String>,
    /// Only the records matching: method=GET,HEAD, path=/api (a prefix), status=2xx, host=NAME (a HAR's site;
    /// repeatable: all must hold); kv: command=GET,HGETALL.
    #[arg(long, value_name = "KEY=VALUE", help_heading = heading::REPLAY, hide_short_help = true)]
    pub replay_only: Vec<String>,
    /// Send the records that change data too (POST, PUT, PATCH, DELETE ...; kv: Redis commands that write): by
    /// default they are left out and counted, so a replay never writes to the target unasked.
    #[arg(long, help_heading = heading::REPLAY, hide_short_help = true)]
    pub replay_writes: bool,
    /// Replay the file this many times, back to back.
    #[arg(long = "loop", value_name = "N", default_value_t = 1, allow_negative_numbers = true, value_parser = count::<u64>, help_heading = heading::REPLAY, hide_short_help = true)]
    pub replay_loop: u64,
    /// Only the records from this time of the log on: an instant (2026-12-07T10:00:00Z) or an offset from its first
    /// record (10m).
    #[arg(long, value_name = "WHEN", help_heading = heading::REPLAY, hide_short_help = true)]
    pub replay_from: Option<String>,
    /// Only the records before this time of the log: an instant or an offset from its first record (20m).
    #[arg(long, value_name = "WHEN", help_heading = heading::REPLAY, hide_short_help = true)]
    pub replay_until: Option<String>,
    /// Send each record's recorded host as its Host header (a HAR's site, a JSON line's host or URL, a log_format's
    /// $host), for a target that serves several sites; by default the URL's host is sent (run only).
    #[arg(long, help_heading = heading::REPLAY, hide_short_help = true)]
    pub keep_host: bool,
    /// Print what would be sent (records, what was left out, the span, the expected duration) and send nothing.
    #[arg(long, help_heading = heading::REPLAY, hide_short_help = true)]
    pub dry_run: bool,
}
