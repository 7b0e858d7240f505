//! Where and how a result was measured: version, machine, kernel, start time, command line.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    pub hakaru_version: String,
    pub hostname: String,
    pub cpu_model: String,
    pub cores: usize,
    pub kernel: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// Secret header values (Authorization, Cookie...) and a script's arguments (after `--`) are replaced by
    /// `<redacted>`.
    pub command_line: Vec<String>,
    /// `release` or `debug`: a debug build measures itself more than the target.
    pub build: String,
    /// The seed of the random choices, so the run can be repeated (also in the settings).
    pub seed: u64,
}

/// Whether this binary was built without optimizations.
pub fn is_debug_build() -> bool {
    cfg!(debug_assertions)
}

impl Provenance {
    /// Reads the machine's facts from /proc (Linux); what cannot be read is left as "unknown".
    pub fn collect(started: std::time::SystemTime, seed: u64) -> Self {
        let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_string()).ok();
        let cpu_model = read("/proc/cpuinfo")
            .and_then(|info| {
                info.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        Self {
            hakaru_version: env!("CARGO_PKG_VERSION").into(),
            hostname: read("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into()),
            cpu_model,
            cores: crate::monitor::available_cores(),
            kernel: read("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
            started_at: humantime::format_rfc3339_seconds(started).to_string(),
            command_line: crate::base::secrets::redact_line(&std::env::args().collect::<Vec<_>>()),
            build: if is_debug_build() { "debug" } else { "release" }.into(),
            seed,
        }
    }
}
