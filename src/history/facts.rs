//! The indexed facts of a result document: the columns a listing shows and filters by, and the workload's
//! identity.

use std::collections::BTreeMap;

use serde_json::Value;

/// The indexed facts of a document.
pub(super) struct Facts {
    pub(super) time: String,
    pub(super) command: String,
    pub(super) target: String,
    pub(super) hakaru_version: String,
    pub(super) host: String,
    pub(super) ok_per_s: Option<f64>,
    pub(super) p99_us: Option<i64>,
    pub(super) workload: String,
    pub(super) protocol: String,
    pub(super) runs: Option<i64>,
    pub(super) ok_per_s_sd: Option<f64>,
    pub(super) ttft_p99_us: Option<i64>,
    pub(super) tokens_per_s: Option<f64>,
    pub(super) tpot_p99_us: Option<i64>,
    pub(super) goodput_percent: Option<f64>,
}

/// What makes two results comparable: the settings without the labels and the seed (the command, targets,
/// requests, load, sweep steps...), hashed (FNV-1a, 64 bits, over the settings' JSON with sorted keys) into 16 hex
/// digits. A later `compare` refuses, or warns about, results of different workloads.
pub fn workload_id(doc: &Value) -> String {
    let mut settings = doc.get("settings").cloned().unwrap_or(Value::Null);
    if let Some(o) = settings.as_object_mut() {
        o.remove("labels");
        o.remove("seed");
        // How the pacer batches its wake-ups is how hakaru sends, not what load the target was offered: the
        // results of the same rate before and after --pace-window existed stay comparable.
        o.remove("pace_window_us");
    }
    // Keys sorted at every level: the same text whatever order the document (or serde_json's map) kept.
    fn canonical(v: &Value, out: &mut String) {
        match v {
            Value::Object(o) => {
                let sorted: BTreeMap<&String, &Value> = o.iter().collect();
                out.push('{');
                for (i, (k, v)) in sorted.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    canonical(v, out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    canonical(v, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut text = String::new();
    canonical(&settings, &mut text);
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3));
    format!("{hash:016x}")
}

impl Facts {
    pub(super) fn of(doc: &Value) -> Facts {
        let text = |p: &str| doc.pointer(p).and_then(Value::as_str).unwrap_or("").to_string();
        let targets = doc.pointer("/settings/targets").and_then(Value::as_array);
        let target = targets.map(|t| t.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "));
        let steps = doc.pointer("/steps").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let best = headline_step(doc, steps);
        // A p99 of no successes would be the empty histogram's 0: shown as "-", not as `0us`.
        let answered = best.filter(|s| s.pointer("/latency/count").and_then(Value::as_u64).unwrap_or(1) > 0);
        let protocol = steps.first().and_then(|s| s.get("protocol")).and_then(Value::as_str).map_or("", |p| {
            crate::result::protocol_label(p, doc.pointer("/settings/http_version").and_then(Value::as_str))
        });
        // The headline figures: of the best step, or with `--runs N` what the run's text and `compare` give, the
        // runs' mean ok/s (its spread beside it) and their merged latency.
        let runs = doc.get("runs").filter(|r| r.get("completed").and_then(Value::as_u64).unwrap_or(0) > 0);
        let (ok_per_s, p99_us, completed, ok_per_s_sd) = match runs {
            Some(runs) => {
                let ok = runs.get("ok").and_then(Value::as_u64).unwrap_or(0);
                (
                    runs.pointer("/ok_per_s/mean").and_then(Value::as_f64),
                    runs.pointer("/latency/percentiles/p99").and_then(Value::as_i64).filter(|_| ok > 0),
                    runs.get("completed").and_then(Value::as_i64),
                    runs.pointer("/ok_per_s/sd").and_then(Value::as_f64),
                )
            }
            None => (
                best.and_then(|s| s.pointer("/throughput/ok_per_s")).and_then(Value::as_f64),
                answered.and_then(|s| s.pointer("/latency/percentiles/p99")).and_then(Value::as_i64),
                None,
                None,
            ),
        };
        // A streamed step's figures: the headline step's (a `--runs N` result's first run stands for the rest).
        let streamed = best.or(steps.first()).and_then(|s| s.get("events")).filter(|e| e.is_object());
        let ttft_p99_us = streamed.and_then(|e| e.pointer("/first_event/percentiles/p99")).and_then(Value::as_i64);
        let tokens_per_s = streamed.and_then(|e| e.pointer("/tokens/tokens_per_s")).and_then(Value::as_f64);
        Facts {
            ttft_p99_us,
            tokens_per_s,
            tpot_p99_us: streamed.and_then(|e| e.pointer("/tokens/tpot/percentiles/p99")).and_then(Value::as_i64),
            goodput_percent: streamed.and_then(|e| e.pointer("/goodput/percent")).and_then(Value::as_f64),
            time: text("/provenance/started_at"),
            command: text("/settings/command"),
            target: target.unwrap_or_default(),
            hakaru_version: text("/provenance/hakaru_version"),
            host: text("/provenance/hostname"),
            ok_per_s,
            p99_us,
            workload: workload_id(doc),
            protocol: protocol.to_string(),
            runs: completed,
            ok_per_s_sd,
        }
    }
}

/// The step a listing row stands for. A capacity search's is the capacity found (the highest rate that met the
/// objective; none when no rate did), not a faster failing step; any other document's is the step with the most
/// successes per second (a run has one step).
fn headline_step<'a>(doc: &Value, steps: &'a [Value]) -> Option<&'a Value> {
    let rate = |s: &Value| s.pointer("/load/rate").and_then(Value::as_f64);
    if let Some(capacity) = doc.pointer("/analysis/capacity").filter(|c| c.is_object()) {
        let found = capacity.get("rate").and_then(Value::as_f64)?;
        return steps.iter().find(|s| rate(s) == Some(found));
    }
    steps.iter().max_by(|a, b| {
        let q = |s: &Value| s.pointer("/throughput/ok_per_s").and_then(Value::as_f64).unwrap_or(-1.0);
        q(a).total_cmp(&q(b))
    })
}

pub(super) fn labels_of(doc: &Value) -> BTreeMap<String, String> {
    doc.pointer("/settings/labels")
        .and_then(Value::as_object)
        .map(|o| o.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect())
        .unwrap_or_default()
}
