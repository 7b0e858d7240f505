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
    pub command_line: Vec<String>,
}

impl Provenance {
    /// Reads the machine's facts from /proc (Linux); what cannot be read is left as "unknown".
    pub fn collect(started: std::time::SystemTime) -> Self {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .ok()
        };
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
            cores: crate::plan::available_cores(),
            kernel: read("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
            started_at: humantime::format_rfc3339_seconds(started).to_string(),
            command_line: std::env::args().collect(),
        }
    }
}
