//! `hakaru merge`: one result document from the documents of the agents that ran the segments of one plan
//! (`--segment I/N`): counts summed, latency histograms added (so the merged percentiles are exact), per-second
//! windows summed by their second, and each agent's own CPU and lateness kept beside the totals.
//!
//! What cannot be merged exactly is said: a window's and a breakdown row's percentiles, and the failures' and
//! service latency summaries, are kept as the highest of the agents' (an upper bound), as they carry no
//! histogram.

use std::collections::BTreeMap;

use crate::metrics::{LatencyHistogram, WindowSummary};
use crate::plan::segment::Segment;
use crate::result::{
    AgentReport, BreakdownRow, ErrorCount, EventsReport, Http2Report, LatencySummary, PhasesReport, ResultDocument,
    SlowRequest, StepResult, WholePlan,
};

/// An optional setting in words, for a message: its value, or `none`.
fn or_none<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "none".to_string(), |v| v.to_string())
}

/// The settings that must be the same in every agent's document for the sum to mean anything, by their names in
/// the document, in words.
fn plan_fingerprint(doc: &ResultDocument) -> Vec<(&'static str, String)> {
    let s = &doc.settings;
    let sweep = s.sweep.as_ref().map(|w| {
        let values: Vec<String> = w.values.iter().map(f64::to_string).collect();
        format!("{} {}", w.kind, values.join(","))
    });
    vec![
        ("command", s.command.clone()),
        ("targets", s.targets.join(" ")),
        ("method", s.method.clone()),
        ("headers", s.headers.join("; ")),
        ("body_bytes", s.body_bytes.to_string()),
        ("load_model", s.load_model.clone()),
        ("duration_s", or_none(s.duration_s)),
        ("keepalive", s.keepalive.to_string()),
        ("timeout_s", s.timeout_s.to_string()),
        ("patterns", or_none(s.patterns.as_deref())),
        ("ok_status", s.ok_status.clone()),
        ("sweep", or_none(sweep)),
        ("start_at", or_none(s.start_at.as_deref())),
        ("steps", doc.steps.iter().map(|st| st.label.as_str()).collect::<Vec<_>>().join(",")),
    ]
}

/// The whole plan's figures by their names in the document: each segment's own are its shares of these.
fn whole_plan_fields(w: &WholePlan) -> [(&'static str, String); 3] {
    [
        ("whole_plan.connections", w.connections.to_string()),
        ("whole_plan.requests", or_none(w.requests)),
        ("whole_plan.rate", or_none(w.rate)),
    ]
}

/// Each document's own connections, requests and rate must be its segment's share of the whole plan: the plan it
/// records, or for documents written before plans were recorded, the sum of the segments when all are there.
fn check_shares(docs: &[ResultDocument], names: &[String], segments: &[Segment], complete: bool) -> Result<(), String> {
    let derived = complete.then(|| WholePlan {
        connections: docs.iter().map(|d| d.settings.connections).sum(),
        requests: docs.iter().map(|d| d.settings.requests).sum(),
        rate: docs.iter().map(|d| d.settings.rate).sum(),
    });
    for ((doc, name), seg) in docs.iter().zip(names).zip(segments) {
        let Some(whole) = doc.settings.whole_plan.as_ref().or(derived.as_ref()) else { continue };
        let s = &doc.settings;
        let rate_share = whole.rate.map(|r| r / seg.count as f64);
        let wrong = if seg.share(whole.connections as u64) != s.connections as u64 {
            Some(("connections", s.connections.to_string(), seg.share(whole.connections as u64).to_string()))
        } else if whole.requests.map(|n| seg.share(n)) != s.requests {
            Some(("requests", or_none(s.requests), or_none(whole.requests.map(|n| seg.share(n)))))
        } else if !rate_share.zip(s.rate).map_or(rate_share == s.rate, |(a, b)| (a - b).abs() <= 1e-9 * a.abs()) {
            Some(("rate", or_none(s.rate), or_none(rate_share)))
        } else {
            None
        };
        if let Some((key, found, share)) = wrong {
            return Err(format!(
                "{name}: {key} is {found}, not {share}, segment {}'s share of the whole plan: the documents are of \
                 different plans",
                seg.label()
            ));
        }
    }
    Ok(())
}

/// Merges the agents' documents; `names` name them in messages (their files). Documents of different plans, two
/// of the same segment, or a segment missing are refused, with the difference named in one line; with
/// `allow_partial` a missing segment is recorded in the merged document (`missing_segments`) and its warnings
/// instead.
pub fn merge(docs: &[ResultDocument], names: &[String], allow_partial: bool) -> Result<ResultDocument, String> {
    let first = docs.first().ok_or("no document to merge")?;
    for (doc, name) in docs.iter().zip(names).skip(1) {
        // A document that does not record its whole plan is checked by its share (`check_shares`).
        let wholes = first.settings.whole_plan.as_ref().zip(doc.settings.whole_plan.as_ref());
        let (mut a, mut b) = (plan_fingerprint(first), plan_fingerprint(doc));
        if let Some((wa, wb)) = wholes {
            a.extend(whole_plan_fields(wa));
            b.extend(whole_plan_fields(wb));
        }
        if let Some(((key, a), (_, b))) = a.iter().zip(&b).find(|(a, b)| a.1 != b.1) {
            return Err(format!(
                "{name}: {key} is {b}, not {a} as in {}: the documents are of different plans",
                names[0]
            ));
        }
    }
    let mut seen: BTreeMap<(usize, usize), &str> = BTreeMap::new();
    let mut segments = Vec::new();
    for (doc, name) in docs.iter().zip(names) {
        let seg = doc.settings.segment.as_deref().ok_or_else(|| {
            format!("{name}: not a segment (run with --segment I/N); merge joins the agents of one plan")
        })?;
        let (index, count) = seg
            .split_once('/')
            .and_then(|(i, n)| Some((i.parse::<usize>().ok()?, n.parse::<usize>().ok()?)))
            .filter(|&(i, n)| i < n)
            .ok_or_else(|| format!("{name}: segment '{seg}' is not I/N"))?;
        if let Some(other) = seen.insert((index, count), name) {
            return Err(format!("{name}: segment {seg} is also in {other}; give each agent's document once"));
        }
        segments.push(Segment { index, count });
    }
    let count = seen.keys().next().map_or(0, |k| k.1);
    if seen.keys().any(|k| k.1 != count) {
        return Err("the documents split the plan into different numbers of segments".into());
    }
    let missing: Vec<String> =
        (0..count).filter(|i| !seen.contains_key(&(*i, count))).map(|i| format!("{i}/{count}")).collect();
    check_shares(docs, names, &segments, missing.is_empty())?;
    if !missing.is_empty() && !allow_partial {
        return Err(format!(
            "segment(s) {} missing: merge every agent's document (or give --allow-partial to merge the others, \
             marked as partial)",
            missing.join(", ")
        ));
    }

    let mut out = first.clone();
    let s = &mut out.settings;
    s.connections = docs.iter().map(|d| d.settings.connections).sum();
    s.threads = docs.iter().map(|d| d.settings.threads).sum();
    s.requests = match docs.iter().map(|d| d.settings.requests).collect::<Option<Vec<u64>>>() {
        Some(each) => Some(total("settings.requests", each)?),
        None => None,
    };
    s.rate = docs.iter().map(|d| d.settings.rate).sum();
    s.segment = None;
    // A complete merge is the whole plan; a partial one keeps the plan its figures are part of.
    if missing.is_empty() {
        s.whole_plan = None;
    }
    let sources: Vec<String> = docs.iter().filter_map(|d| d.settings.source_address.clone()).collect();
    s.source_address = (!sources.is_empty()).then(|| sources.join(","));
    out.interrupted = docs.iter().any(|d| d.interrupted);
    out.steps = (0..first.steps.len())
        .map(|k| {
            let parts: Vec<(&StepResult, &ResultDocument)> = docs.iter().map(|d| (&d.steps[k], d)).collect();
            merge_step(&parts)
        })
        .collect::<Result<_, _>>()?;
    out.warnings = docs
        .iter()
        .flat_map(|d| {
            let seg = d.settings.segment.clone().unwrap_or_default();
            d.warnings.iter().map(move |w| format!("agent {seg}: {w}"))
        })
        .collect();
    if !missing.is_empty() {
        out.warnings.push(format!(
            "PARTIAL: segment(s) {} of the plan are missing (their agents failed or their documents were lost): \
             these figures are of {} of {count} agents' load only",
            missing.join(", "),
            count - missing.len()
        ));
    }
    out.missing_segments = missing;
    out.warnings.push(
        "merged from the agents' documents: step percentiles are exact (histograms added); per-second windows', \
         breakdown rows' and failures' percentiles are the highest of the agents' (an upper bound)"
            .into(),
    );
    if out.settings.sweep.is_some() {
        out.analysis = crate::judge::analysis::analyse(&out.steps, out.settings.sweep.as_ref());
    }
    Ok(out)
}

/// `values` added; past 2^64-1 the documents are refused, the figure named: no true count gets there (an agent
/// would have to send 584 years at 10^9 a second), a damaged or crafted one does, and wrapped it would read as a
/// small true-looking number.
fn total(what: &str, values: impl IntoIterator<Item = u64>) -> Result<u64, String> {
    values.into_iter().try_fold(0u64, |a, v| a.checked_add(v)).ok_or_else(|| {
        format!("the documents' {what} add up past 2^64-1, which no true count does: one was damaged or altered")
    })
}

/// `b` added to `a` as [`total`] adds.
fn add(a: &mut u64, b: u64, what: &str) -> Result<(), String> {
    *a = total(what, [*a, b])?;
    Ok(())
}

fn sum_map(maps: impl Iterator<Item = BTreeMap<String, u64>>, what: &str) -> Result<BTreeMap<String, u64>, String> {
    let mut out = BTreeMap::new();
    for m in maps {
        for (k, v) in m {
            add(out.entry(k).or_insert(0), v, what)?;
        }
    }
    Ok(out)
}

/// Summaries without histograms: counts summed, extremes kept, the mean weighted, percentiles the highest.
fn bound_summary(parts: &[&LatencySummary]) -> Result<LatencySummary, String> {
    let count = total("latency counts", parts.iter().map(|p| p.count))?;
    let mut percentiles = BTreeMap::new();
    for p in parts {
        for (k, v) in &p.percentiles {
            let e = percentiles.entry(k.clone()).or_insert(0);
            *e = (*e).max(*v);
        }
    }
    Ok(LatencySummary {
        unit: "us".into(),
        count,
        min: parts.iter().filter(|p| p.count > 0).map(|p| p.min).min().unwrap_or(0),
        mean: parts.iter().map(|p| p.mean * p.count as f64).sum::<f64>() / count.max(1) as f64,
        stdev: parts.iter().map(|p| p.stdev).fold(0.0, f64::max),
        max: parts.iter().map(|p| p.max).max().unwrap_or(0),
        percentiles,
    })
}

fn merge_step(parts: &[(&StepResult, &ResultDocument)]) -> Result<StepResult, String> {
    let steps: Vec<&StepResult> = parts.iter().map(|p| p.0).collect();
    let mut out = steps[0].clone();
    // Each agent saw the machine it ran on, with its own share of the generator's CPU: one agent's view beside
    // the merged figures would count the other agents as other programs' work (a false busy_machine).
    out.machine = None;
    let mut hist = LatencyHistogram::new();
    for s in &steps {
        let h = LatencyHistogram::from_base64(&s.histogram.data)
            .map_err(|e| format!("step {}: its histogram cannot be read: {e}", s.label))?;
        hist.merge(&h);
    }
    if let Some(other) = steps.iter().find(|s| s.window_s != steps[0].window_s) {
        return Err(format!(
            "step {}: windows of {} s and of {} s cannot be added by their instant; run every agent with the same \
             --window",
            other.label, steps[0].window_s, other.window_s
        ));
    }
    let secs = steps.iter().map(|s| s.duration_s).fold(0.0, f64::max).max(1e-9);
    let label = &steps[0].label;
    let sum =
        |what: &str, f: fn(&StepResult) -> u64| total(&format!("{what} (step {label})"), steps.iter().map(|s| f(s)));
    out.duration_s = secs;
    out.requests = sum("requests", |s| s.requests)?;
    out.responses = sum("responses", |s| s.responses)?;
    out.errors = sum("errors", |s| s.errors)?;
    out.ok = sum("ok", |s| s.ok)?;
    out.failed = sum("failed", |s| s.failed)?;
    out.unfinished = sum("unfinished", |s| s.unfinished)?;
    out.graceful_stop_s = steps.iter().filter_map(|s| s.graceful_stop_s).reduce(f64::max);
    let round3 = |x: f64| (x * 1000.0).round() / 1000.0;
    let t = &mut out.throughput;
    t.bytes_in = sum("bytes in", |s| s.throughput.bytes_in)?;
    t.bytes_out = sum("bytes out", |s| s.throughput.bytes_out)?;
    t.requests_per_s = round3(out.requests as f64 / secs);
    t.ok_per_s = round3(out.ok as f64 / secs);
    t.bytes_in_per_s = round3(t.bytes_in as f64 / secs);
    t.bytes_out_per_s = round3(t.bytes_out as f64 / secs);
    out.latency = LatencySummary::from_histogram(&hist);
    out.histogram.data = hist.to_base64();
    let failed: Vec<&LatencySummary> = steps.iter().filter_map(|s| s.failed_latency.as_ref()).collect();
    out.failed_latency = if failed.is_empty() { None } else { Some(bound_summary(&failed)?) };
    let service: Vec<&LatencySummary> = steps.iter().filter_map(|s| s.service.as_ref()).collect();
    out.service = if service.is_empty() { None } else { Some(bound_summary(&service)?) };
    if let Some(sched) = &mut out.schedule {
        let all: Vec<_> = steps.iter().filter_map(|s| s.schedule.as_ref()).collect();
        sched.target_rate = all.iter().map(|x| x.target_rate).sum();
        sched.achieved_rate = round3(all.iter().map(|x| x.achieved_rate * secs).sum::<f64>() / secs);
        sched.completed_rate = round3(all.iter().map(|x| x.completed_rate * secs).sum::<f64>() / secs);
        sched.late = total("late sends", all.iter().map(|x| x.late))?;
        sched.max_lag_us = all.iter().map(|x| x.max_lag_us).max().unwrap_or(0);
        // The parts' lags added (a part that sent nothing has none).
        let mut lag = crate::metrics::LatencyHistogram::new();
        for p in all.iter().filter_map(|x| x.lag.as_ref()) {
            let h = crate::metrics::LatencyHistogram::from_base64(&p.histogram.data)
                .map_err(|e| format!("a part's schedule lag histogram cannot be read: {e}"))?;
            lag.merge(&h);
        }
        sched.lag = crate::result::phases::Phase::of(&lag);
        // The parts' steps began together or each after its own setup: the longest setup is the merged one's.
        sched.began_after_us = all.iter().filter_map(|x| x.began_after_us).max();
        sched.starved = total("starved sends", all.iter().map(|x| x.starved))?;
        sched.late_cpu = total("late sends on a busy CPU", all.iter().map(|x| x.late_cpu))?;
        // Every part's count, or none: a part from before wake-ups were counted leaves the sum unknown.
        sched.wakeups = match all.iter().map(|x| x.wakeups).collect::<Option<Vec<u64>>>() {
            Some(w) => Some(total("pacer wake-ups", w)?),
            None => None,
        };
    }
    out.status = sum_map(steps.iter().map(|s| s.status.clone()), "status counts")?;
    out.failed_statuses = sum_map(steps.iter().map(|s| s.failed_statuses.clone()), "failed status counts")?;
    let mut kinds: BTreeMap<String, ErrorCount> = BTreeMap::new();
    for e in steps.iter().flat_map(|s| &s.error_kinds) {
        match kinds.get_mut(&e.kind) {
            Some(k) => add(&mut k.count, e.count, "error counts")?,
            None => drop(kinds.insert(e.kind.clone(), e.clone())),
        }
    }
    out.error_kinds = kinds.into_values().collect();
    let c = &mut out.connections;
    c.asked = steps.iter().map(|s| s.connections.asked).sum();
    c.max_open = sum("open connections", |s| s.connections.max_open)?;
    c.opened = sum("connections opened", |s| s.connections.opened)?;
    c.reconnects = sum("reconnects", |s| s.connections.reconnects)?;
    c.closed_by_hakaru = sum("connections closed by hakaru", |s| s.connections.closed_by_hakaru)?;
    c.closed_by_hakaru_why = BTreeMap::new();
    for (why, n) in steps.iter().flat_map(|s| &s.connections.closed_by_hakaru_why) {
        add(c.closed_by_hakaru_why.entry(why.clone()).or_default(), *n, "connections closed by hakaru")?;
    }
    c.max_handing_over = sum("connections handing over", |s| s.connections.max_handing_over)?;
    out.load.connections = steps.iter().map(|s| s.load.connections).sum();
    out.load.threads = steps.iter().map(|s| s.load.threads).sum();
    out.load.rate = steps.iter().map(|s| s.load.rate).sum();
    out.windows = merge_windows(&steps)?;
    out.breakdown = merge_breakdown(&steps, secs)?;
    let mut slowest: Vec<SlowRequest> = steps.iter().flat_map(|s| s.slowest.clone()).collect();
    slowest.sort_by_key(|s| std::cmp::Reverse(s.latency_us));
    slowest.truncate(10);
    out.slowest = slowest;
    out.generator.cpu_percent = steps.iter().map(|s| s.generator.cpu_percent).sum();
    out.generator.cores = steps.iter().map(|s| s.generator.cores).sum();
    out.generator.saturated = steps.iter().any(|s| s.generator.saturated);
    out.start_late_s = steps.iter().filter_map(|s| s.start_late_s).reduce(f64::max);
    out.first_error_reply = steps.iter().find_map(|s| s.first_error_reply.clone());
    out.http2 = Http2Report::merged(&steps.iter().filter_map(|s| s.http2.as_ref()).collect::<Vec<_>>());
    out.quic =
        crate::result::quic::QuicReport::merged(&steps.iter().filter_map(|s| s.quic.as_ref()).collect::<Vec<_>>());
    let grpc: Vec<_> = steps.iter().filter_map(|s| s.grpc.as_ref()).collect();
    out.grpc = crate::result::GrpcReport::merged(&grpc, out.requests, secs);
    out.websocket =
        crate::result::WsReport::merged(&steps.iter().filter_map(|s| s.websocket.as_ref()).collect::<Vec<_>>());
    out.phases = PhasesReport::merged(&steps.iter().filter_map(|s| s.phases.as_ref()).collect::<Vec<_>>())
        .map_err(|e| format!("step {}: {e}", out.label))?;
    out.events =
        EventsReport::merged(&steps.iter().filter_map(|s| s.events.as_ref()).collect::<Vec<_>>(), out.duration_s)
            .map_err(|e| format!("step {}: {e}", out.label))?;
    out.agents = parts
        .iter()
        .map(|(s, d)| AgentReport {
            segment: d.settings.segment.clone().unwrap_or_default(),
            hostname: d.provenance.hostname.clone(),
            requests: s.requests,
            ok: s.ok,
            generator: s.generator,
            server: s.server.clone(),
            start_late_s: s.start_late_s,
        })
        .collect();
    Ok(out)
}

/// Windows summed by their instant, to the millisecond (the agents' steps count from the same instant with
/// `--start-at`, and their windows have one width).
fn merge_windows(steps: &[&StepResult]) -> Result<Vec<WindowSummary>, String> {
    let mut by_t: BTreeMap<u64, WindowSummary> = BTreeMap::new();
    for w in steps.iter().flat_map(|s| &s.windows) {
        let key = (w.t * 1000.0).round() as u64;
        let Some(m) = by_t.get_mut(&key) else {
            by_t.insert(key, w.clone());
            continue;
        };
        add(&mut m.requests, w.requests, "windows' requests")?;
        add(&mut m.errors, w.errors, "windows' errors")?;
        add(&mut m.sent, w.sent, "windows' sends")?;
        for (k, n) in &w.failures {
            add(m.failures.entry(k.clone()).or_default(), *n, "windows' failures")?;
        }
        add(&mut m.open_connections, w.open_connections, "windows' open connections")?;
        m.p50_us = m.p50_us.max(w.p50_us);
        m.p90_us = m.p90_us.max(w.p90_us);
        m.p99_us = m.p99_us.max(w.p99_us);
        m.ttfb_p99_us = m.ttfb_p99_us.max(w.ttfb_p99_us);
        m.first_event_p99_us = m.first_event_p99_us.max(w.first_event_p99_us);
        if let Some(n) = w.tokens {
            add(m.tokens.get_or_insert(0), n, "windows' tokens")?;
        }
        add(&mut m.progress, w.progress, "windows' progress")?;
        add(&mut m.late, w.late, "windows' late")?;
        add(&mut m.starved, w.starved, "windows' starved")?;
        m.max_us = m.max_us.max(w.max_us);
        // Each agent's target is its share of the ramp, its CPU its own; the server is the same one.
        m.target = add_options(m.target, w.target);
        m.cpu_percent = add_options(m.cpu_percent, w.cpu_percent);
        m.server_cpu_percent = match (m.server_cpu_percent, w.server_cpu_percent) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
    Ok(by_t.into_values().collect())
}

fn add_options(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

/// Breakdown rows summed by kind and name; means weighted by successes, percentiles the highest.
fn merge_breakdown(steps: &[&StepResult], secs: f64) -> Result<Vec<BreakdownRow>, String> {
    let mut rows: Vec<BreakdownRow> = Vec::new();
    for r in steps.iter().flat_map(|s| &s.breakdown) {
        match rows.iter_mut().find(|x| x.kind == r.kind && x.name == r.name) {
            Some(x) => {
                let ok = total("breakdown rows' ok", [x.ok, r.ok])?;
                x.mean_us = (x.mean_us * x.ok as f64 + r.mean_us * r.ok as f64) / ok.max(1) as f64;
                add(&mut x.requests, r.requests, "breakdown rows' requests")?;
                x.ok = ok;
                add(&mut x.failed, r.failed, "breakdown rows' failures")?;
                x.p50_us = x.p50_us.max(r.p50_us);
                x.p99_us = x.p99_us.max(r.p99_us);
                let both = |a: Option<u64>, b: Option<u64>, what| match (a, b) {
                    (None, None) => Ok(None),
                    (a, b) => total(what, [a.unwrap_or(0), b.unwrap_or(0)]).map(Some),
                };
                x.p999_us = x.p999_us.max(r.p999_us);
                x.hits = both(x.hits, r.hits, "breakdown rows' hits")?;
                x.misses = both(x.misses, r.misses, "breakdown rows' misses")?;
                x.expected = both(x.expected, r.expected, "breakdown rows' expected answers")?;
            }
            None => rows.push(r.clone()),
        }
    }
    for x in &mut rows {
        x.ok_per_s = (x.ok as f64 / secs * 1000.0).round() / 1000.0;
        x.mean_us = (x.mean_us * 1000.0).round() / 1000.0;
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Segment `index` of `count` of a plan at `whole` requests per second (recorded or not), running `rate`.
    fn segment(index: usize, count: usize, rate: f64, whole: Option<f64>) -> ResultDocument {
        let mut doc: ResultDocument =
            serde_json::from_str(include_str!("../../tests/fixtures/report/sweep-4ms.json")).unwrap();
        let s = &mut doc.settings;
        s.segment = Some(format!("{index}/{count}"));
        s.rate = Some(rate);
        s.whole_plan = whole.map(|r| WholePlan { connections: s.connections * count, requests: None, rate: Some(r) });
        doc
    }

    fn names() -> Vec<String> {
        vec!["a.json".into(), "b.json".into()]
    }

    #[test]
    fn rates_of_different_plans_are_refused_recorded_or_derived_and_the_same_plan_merges() {
        let e = merge(&[segment(0, 2, 100.0, Some(200.0)), segment(1, 2, 150.0, Some(300.0))], &names(), false);
        assert_eq!(
            e.unwrap_err(),
            "b.json: whole_plan.rate is 300, not 200 as in a.json: the documents are of different plans"
        );
        // Written before the plan was recorded: the whole is the segments' sum, 250/s, of which a's share is 125.
        let e = merge(&[segment(0, 2, 100.0, None), segment(1, 2, 150.0, None)], &names(), false).unwrap_err();
        assert!(e.starts_with("a.json: rate is 100, not 125, segment 0/2's share of the whole plan"), "{e}");
        let merged = merge(&[segment(0, 2, 100.0, Some(200.0)), segment(1, 2, 100.0, Some(200.0))], &names(), false);
        let merged = merged.unwrap();
        assert_eq!((merged.settings.rate, merged.settings.whole_plan), (Some(200.0), None));
        // With a segment missing, the merged document keeps the plan its figures are part of.
        let partial = merge(&[segment(0, 2, 100.0, Some(200.0))], &names(), true).unwrap();
        assert_eq!(partial.settings.whole_plan.and_then(|w| w.rate), Some(200.0));
    }

    #[test]
    fn one_agents_view_of_its_machine_is_not_kept_as_the_merged_steps() {
        let mut a = segment(0, 2, 100.0, Some(200.0));
        for step in &mut a.steps {
            step.machine = Some(crate::monitor::MachineReport {
                cores: Vec::new(),
                generator_cpus: vec![0],
                server_cpus: vec![0],
                generator_percent: 50.0,
            });
        }
        let merged = merge(&[a, segment(1, 2, 100.0, Some(200.0))], &names(), false).unwrap();
        assert!(merged.steps.iter().all(|s| s.machine.is_none()));
    }

    #[test]
    fn the_agents_http2_figures_are_added_and_the_fewest_streams_kept() {
        let part = |goaways, used, bytes_in, decoded| {
            let mut doc = segment(0, 2, 100.0, Some(200.0));
            for step in &mut doc.steps {
                step.http2 = Some(Http2Report {
                    streams_asked: 16,
                    streams_used: used,
                    goaways,
                    retried: goaways * 2,
                    header_bytes_out: 700,
                    header_bytes_in: bytes_in,
                    header_bytes_in_decoded: decoded,
                    header_savings: 0.0,
                });
            }
            doc
        };
        let mut b = part(3, 4, 300, 400);
        b.settings.segment = Some("1/2".into());
        let merged = merge(&[part(1, 16, 100, 400), b], &names(), false).unwrap();
        for step in &merged.steps {
            let h2 = step.http2.as_ref().expect("merged");
            assert_eq!((h2.streams_asked, h2.streams_used, h2.goaways, h2.retried), (16, 4, 4, 8));
            assert_eq!((h2.header_bytes_out, h2.header_bytes_in, h2.header_bytes_in_decoded), (1400, 400, 800));
            assert_eq!(h2.header_savings, 0.5, "1 - 400 / 800, of the sums");
        }
    }
}
