//! The table a sweep or a capacity search prints as its steps end: one line per step, then the findings.

use crate::base::units::format_micros;
use crate::result::StepResult;

/// The header line; `rates` for open-loop steps (target and achieved rate instead of clients), `streamed` when
/// answers are read as events (`--events`: time to first token, time per output token, tokens a second).
pub fn table_header(rates: bool, streamed: bool, probe_names: &[&str]) -> String {
    let first = if rates { format!("{:>10} {:>9}", "rate", "achieved") } else { format!("{:>8}", "clients") };
    let mut h = format!(
        "{first} {:>10} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>7}",
        "ok/s", "mean", "p50", "p99", "max", "failed", "hakaru", "server"
    );
    if streamed {
        h.push_str(&format!(" {:>9} {:>9} {:>9}", "ttft p99", "tpot p99", "tok/s"));
    }
    for name in probe_names {
        h.push_str(&format!("  {name}"));
    }
    if probe_names.iter().any(|n| n.to_ascii_lowercase().ends_with("hits")) {
        h.push_str("  hit rate (step)");
    }
    h
}

/// One step's line under [`table_header`].
pub fn table_row(step: &StepResult, rates: bool, streamed: bool) -> String {
    let l = &step.latency;
    let first = match (&step.schedule, rates) {
        (Some(s), true) => format!("{:>10.0} {:>9.1}", s.target_rate, s.achieved_rate),
        _ => format!("{:>8}", step.load.connections),
    };
    let t = |us: f64| if l.count == 0 { "-".to_string() } else { format_micros(us) };
    // A document imported from a file without percentiles (drnbench's CSV) shows none rather than zeros.
    let pct = |p: f64| if l.percentiles.is_empty() { "-".to_string() } else { t(l.percentile(p) as f64) };
    let mut row = format!(
        "{first} {:>10.1} {:>9} {:>9} {:>9} {:>9} {:>7} {:>6.0}% {:>7}",
        step.throughput.ok_per_s,
        t(l.mean),
        pct(50.0),
        pct(99.0),
        t(l.max as f64),
        step.failed,
        step.generator.cpu_percent,
        step.server.as_ref().map(|s| format!("{:.0}%", s.cpu_percent_mean)).unwrap_or_else(|| "-".into()),
    );
    if streamed {
        let e = step.events.as_ref();
        let tokens = e.and_then(|e| e.tokens.as_ref());
        let p99 = |p: Option<&crate::result::phases::Phase>| {
            p.map_or("-".to_string(), |p| format_micros(p.latency.percentile(99.0) as f64))
        };
        row.push_str(&format!(
            " {:>9} {:>9} {:>9}",
            p99(e.and_then(|e| e.first_event.as_ref())),
            p99(tokens.and_then(|t| t.tpot.as_ref())),
            tokens.map_or("-".to_string(), |t| format!("{:.1}", t.tokens_per_s)),
        ));
    }
    for p in &step.probes {
        let value = match (&p.after, p.delta) {
            (Some(v), Some(d)) => format!("{} ({})", short(v), short_delta(d)),
            (Some(v), None) => short(v),
            _ => "failed".into(),
        };
        row.push_str(&format!("  {value}"));
    }
    if let Some(r) = step.hit_rate {
        row.push_str(&format!("  {r:.3}"));
    }
    row
}

/// A probe value for a table cell: numbers to 4 significant decimals, other values as JSON.
fn short(v: &serde_json::Value) -> String {
    match v.as_f64() {
        Some(x) if x.fract() != 0.0 => format!("{x:.4}").trim_end_matches('0').to_string(),
        _ => v.to_string(),
    }
}

fn short_delta(d: f64) -> String {
    if d.fract() == 0.0 { format!("{d:+}") } else { format!("{d:+.4}") }
}
