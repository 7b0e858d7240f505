//! A comparison for people: a text table per point for the terminal, or Markdown for CI comments. Each metric
//! lists the baseline, then every other side with its ratio to the baseline, the 95 % interval of the ratio, the
//! p-value, the p-value adjusted over the family (Holm) and the verdict.

use std::fmt::Write as _;

use super::{Cell, Comparison, Metric};
use crate::base::units::format_micros;

fn value(metric: Metric, v: Option<f64>) -> String {
    match (metric, v) {
        (_, None) => "-".into(),
        (Metric::Qps | Metric::TokensPerS | Metric::Goodput, Some(v)) => format!("{v:.1}"),
        (Metric::Failed, Some(v)) => format!("{v:.2} %"),
        (_, Some(v)) => format_micros(v),
    }
}

/// The columns after the side's name: n, value, ratio, interval, p, Holm-adjusted p, verdict.
fn columns(metric: Metric, c: &Cell) -> [String; 7] {
    let ratio = c.ratio.map_or(String::new(), |r| format!("{r:.3}"));
    let ci = c.ci95.map_or(String::new(), |[lo, hi]| format!("{lo:.3} .. {hi:.3}"));
    let [p, holm] = c.p_texts();
    [c.n.to_string(), value(metric, c.value), ratio, ci, p, holm, c.verdict_words(metric)]
}

fn heading(title: &str, point: &str) -> Option<String> {
    match (title.is_empty(), point.is_empty()) {
        (true, true) => None,
        (false, true) => Some(title.to_string()),
        (true, false) => Some(format!("point {point}")),
        (false, false) => Some(format!("{title}, point {point}")),
    }
}

/// The terminal table.
pub fn text(c: &Comparison) -> String {
    let mut out = String::new();
    for g in &c.groups {
        let width = g.points.iter().flat_map(|p| &p.rows).flat_map(|r| &r.cells).map(|c| c.side.len()).max();
        let width = width.unwrap_or(4).clamp(4, 40);
        let _ = writeln!(out, "compare  baseline: {}", g.baseline);
        // The protocols: one for all (`over HTTP/2`), or each side's where they differ.
        let said: Vec<&(String, String)> = g.protocols.iter().filter(|(_, p)| !p.is_empty()).collect();
        if let Some((_, first)) = said.first() {
            if said.iter().all(|(_, p)| p == first) {
                let _ = writeln!(out, "  over {first}");
            } else {
                let each: Vec<String> = said.iter().map(|(side, p)| format!("{side} {p}")).collect();
                let _ = writeln!(out, "  over: {}", each.join(", "));
            }
        }
        for p in &g.points {
            if let Some(h) = heading(&g.title, &p.point) {
                let _ = writeln!(out, "\n{h}");
            }
            let _ = writeln!(
                out,
                "  {:<7} {:<width$} {:>3} {:>11} {:>7}  {:<16} {:>8} {:>8}  verdict",
                "metric", "side", "n", "value", "ratio", "95 % interval", "p", "Holm p"
            );
            for r in &p.rows {
                for (i, cell) in r.cells.iter().enumerate() {
                    let [n, v, ratio, ci, pv, holm, verdict] = columns(r.metric, cell);
                    let metric = if i == 0 { r.metric.name() } else { "" };
                    let side: String = cell.side.chars().take(width).collect();
                    let line = format!(
                        "  {metric:<7} {side:<width$} {n:>3} {v:>11} {ratio:>7}  {ci:<16} {pv:>8} {holm:>8}  {verdict}"
                    );
                    let _ = writeln!(out, "{}", line.trim_end());
                }
            }
        }
        for n in &g.notes {
            let _ = writeln!(out, "  ! {n}");
        }
        out.push('\n');
    }
    out.push_str(&fail_if_text(c));
    out
}

fn fail_if_text(c: &Comparison) -> String {
    let mut out = String::new();
    for r in &c.fail_if {
        let at = heading(&r.group, &r.point).map(|h| format!(" ({h})")).unwrap_or_default();
        let word = if r.failed { "FAIL" } else { "ok" };
        let _ = writeln!(out, "fail-if '{}': {}{at}: {word}: {}", r.fail_if, r.side, r.reason);
    }
    out
}

/// Markdown for a CI comment: a heading and a table per point.
pub fn markdown(c: &Comparison) -> String {
    let mut out = String::new();
    for g in &c.groups {
        let _ = writeln!(out, "### compare (baseline: `{}`)\n", g.baseline);
        for p in &g.points {
            if let Some(h) = heading(&g.title, &p.point) {
                let _ = writeln!(out, "**{h}**\n");
            }
            out.push_str("| metric | side | n | value | ratio | 95 % interval | p | Holm p | verdict |\n");
            out.push_str("|---|---|---:|---:|---:|---|---:|---:|---|\n");
            for r in &p.rows {
                for (i, cell) in r.cells.iter().enumerate() {
                    let [n, v, ratio, ci, pv, holm, verdict] = columns(r.metric, cell);
                    let metric = if i == 0 { r.metric.name() } else { "" };
                    let side = cell.side.replace('|', "\\|");
                    let _ = writeln!(
                        out,
                        "| {metric} | `{side}` | {n} | {v} | {ratio} | {ci} | {pv} | {holm} | {verdict} |"
                    );
                }
            }
            out.push('\n');
        }
        for n in &g.notes {
            let _ = writeln!(out, "- {n}");
        }
    }
    let gates = fail_if_text(c);
    if !gates.is_empty() {
        out.push('\n');
        for l in gates.lines() {
            let _ = writeln!(out, "- {l}");
        }
    }
    out
}
