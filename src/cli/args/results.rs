//! The flags of the commands over kept results (`history`, `show`, `export`, `import`, `merge`, `report`, `chart`)
//! and the history flags every measuring command shares.

use super::*;

/// Where a result is kept in the history, and its labels (every command that measures).
#[derive(Args, Debug, Clone, Default, Serialize)]
pub struct HistoryArgs {
    /// The history database (default: $HAKARU_DB, else $XDG_DATA_HOME/hakaru/history.db, else
    /// ~/.local/share/hakaru/history.db).
    #[arg(long, value_name = "FILE", hide_short_help = true, help_heading = heading::HISTORY)]
    pub db: Option<PathBuf>,
    /// Do not keep this result in the history.
    #[arg(long, help_heading = heading::HISTORY)]
    pub no_history: bool,
    /// A label kept with the result, to find it again: key=value, e.g. branch=main (repeatable).
    ///
    /// A bare word is label=WORD.
    #[arg(long = "label", value_name = "KEY=VALUE", help_heading = heading::HISTORY)]
    pub labels: Vec<String>,
}

/// `hakaru history`: which stored results to list.
#[derive(Args, Debug, Clone)]
pub struct HistoryListArgs {
    /// Only results whose target contains this text.
    #[arg(long)]
    pub target: Option<String>,
    /// Only results with this label, key=value (repeatable: all must hold).
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    /// Only results measured since then: 2026-11-23, 2026-11-23T10:00:00Z, or an age such as 7d or 12h.
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Only results of this command: run, sweep, capacity, kv.
    #[arg(long)]
    pub command: Option<String>,
    /// At most this many results.
    #[arg(long, default_value_t = 20, allow_negative_numbers = true, value_parser = count::<usize>)]
    pub limit: usize,
    /// The history database (default as for run).
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
}

/// `hakaru show`: one stored result.
#[derive(Args, Debug, Clone)]
pub struct ShowArgs {
    /// An ID (42), 'last', or a label key=value (the newest result with it).
    #[arg(value_name = "ID")]
    pub reference: String,
    /// The history database (default as for run).
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
}

/// `hakaru export`: one stored result in a file format.
#[derive(Args, Debug, Clone)]
pub struct ExportArgs {
    /// An ID (42), 'last', or a label key=value (the newest result with it).
    #[arg(value_name = "ID")]
    pub reference: String,
    /// json (the result document), csv (a run's row, or a sweep's wide CSV) or drnbench (drnbench's CSV).
    #[arg(long, value_enum, default_value = "json")]
    pub format: ExportFormat,
    /// Write here instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The history database (default as for run).
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
}

/// The formats `hakaru export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    Json,
    Csv,
    Drnbench,
}

/// `hakaru import`: files into the history.
#[derive(Args, Debug, Clone)]
pub struct ImportArgs {
    /// Result JSON files (written by --json) and drnbench CSV files (drnbench-request-response's output).
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// A label kept with every imported result: key=value (repeatable).
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    /// The history database (default as for run).
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
pub struct MergeArgs {
    /// The agents' result documents (JSON), one per segment.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Write the merged document here (`-` for stdout); the summary is printed either way.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Merge even if some agents' documents are missing (files that do not exist, segments not given): the merged
    /// document names the missing segments and says its figures are partial.
    #[arg(long)]
    pub allow_partial: bool,
}

/// What `report` and `chart` read: their inputs, where history references are looked up, and the inputs' labels.
#[derive(Args, Debug, Clone)]
pub struct ResultInputs {
    /// Result JSON files, drnbench CSV files, study directories or history references (42, label=main); each is a
    /// line (or lines) in the charts.
    #[arg(value_name = "INPUT", required = true)]
    pub inputs: Vec<String>,
    /// The history database that IDs and labels are read from (default as for run).
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
    /// A label for an input, LABEL=INPUT: the input as typed, a result's target URL or a study's target name
    /// (--name nginx=http://127.0.0.1:8080/); it titles the input's tables, lines and verdicts (repeatable).
    #[arg(long = "name", value_name = "LABEL=INPUT")]
    pub names: Vec<String>,
}

#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    #[command(flatten)]
    pub from: ResultInputs,
    /// The HTML file to write.
    #[arg(short, long, value_name = "FILE", default_value = "report.html")]
    pub output: String,
    /// The page's heading.
    #[arg(long, default_value = "hakaru report")]
    pub title: String,
}

#[derive(Args, Debug, Clone)]
pub struct ChartArgs {
    #[command(flatten)]
    pub from: ResultInputs,
    /// What to draw: qps, p99 or mean against clients or rate, or the percentile spectrum; with --events, ttft (time
    /// to first event or token) or gaps (between events); with --over-time, connections (open at each window's end).
    #[arg(long, value_name = "qps|p99|mean|spectrum|ttft|gaps|connections", default_value = "qps")]
    pub metric: String,
    /// The image to write: FILE.svg or FILE.png.
    #[arg(short, long, value_name = "FILE")]
    pub output: String,
    /// The chart's title (default: the metric's name).
    #[arg(long)]
    pub title: Option<String>,
    /// Draw qps, p99, ttft (each window's p99 of the time to first byte, or to the first event or token with
    /// --events) or connections over time (seconds from the start, every step one after another), from the windows.
    #[arg(long)]
    pub over_time: bool,
}
