//! The human summary printed on stdout: throughput, percentiles, a small histogram, statuses, errors, warnings.

use std::fmt::Write as _;

use super::Exporter;
use crate::base::units::{count_of, format_bytes, format_micros};
use crate::metrics::histogram::REPORTED_PERCENTILES;
use crate::metrics::{ErrorKind, LatencyHistogram};
use crate::result::{CapacityAnswer, ResultDocument, RunsSummary, Spread, StepResult, ThresholdResult, percentile_key};

pub struct Text;

const BAR_WIDTH: usize = 40;
const BINS: usize = 10;

impl Exporter for Text {
    fn render(&self, doc: &ResultDocument) -> String {
        let s = &doc.settings;
        let mut out = String::new();
        let limit = match (s.requests, s.duration_s) {
            (Some(n), _) => format!("{n} requests"),
            (None, Some(d)) => format!("{d}s"),
            (None, None) => String::new(),
        };
        // Key-value, gRPC and WebSocket clients always keep their connections: keep-alive is HTTP's word, said
        // for HTTP alone.
        let protocol = doc.protocol_label();
        let keepalive = match is_kv(doc) || matches!(protocol, "gRPC" | "WebSocket") {
            true => String::new(),
            false => format!(", keep-alive {}", if s.keepalive { "on" } else { "off" }),
        };
        // The protocol first: two results of one URL over HTTP/1.1 and HTTP/2 look alike otherwise.
        let protocol = if protocol.is_empty() { String::new() } else { format!("{protocol}, ") };
        let _ = writeln!(
            out,
            "hakaru {}  {}\n  {protocol}{}, {}{keepalive}, {}, timeout {}s",
            s.command,
            s.targets.join(" "),
            crate::base::units::count_of(s.connections as u64, "connection"),
            crate::base::units::count_of(s.threads as u64, "thread"),
            limit,
            s.timeout_s
        );
        for line in [&s.prompts, &s.replay].into_iter().flatten() {
            let _ = writeln!(out, "  {line}");
        }
        match &doc.runs {
            Some(runs) => render_runs(&mut out, doc, runs),
            None => {
                // A lone run's step needs no name; each of several (kv's phases: load, run) is named.
                for step in &doc.steps {
                    render_step(&mut out, step, doc.steps.len() > 1, doc.settings.percentile_metrics.as_ref());
                }
            }
        }
        // A ramp's analysis (a sweep's is printed after its table, by `closing_lines`).
        if let Some(a) = doc.analysis.as_ref().filter(|_| s.sweep.is_none()) {
            out.push_str("\nramp\n");
            for line in &a.summary {
                let _ = writeln!(out, "  {line}");
            }
        }
        out.push_str(&thresholds_text(&doc.thresholds));
        if !doc.warnings.is_empty() {
            out.push_str("\nwarnings\n");
            for w in &doc.warnings {
                let _ = writeln!(out, "  ! {w}");
            }
        }
        out
    }
}

/// `--runs N`: one row per run, the spread of throughput and p99 over the complete runs, and the percentiles of
/// their merged histograms.
fn render_runs(out: &mut String, doc: &ResultDocument, runs: &RunsSummary) {
    let _ = writeln!(
        out,
        "\n  {:<10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8}",
        "run", "ok/s", "mean", "p50", "p99", "max", "ok", "failed"
    );
    for (i, step) in doc.steps.iter().enumerate() {
        let l = &step.latency;
        let t = |us: f64| if l.count == 0 { "-".to_string() } else { format_micros(us) };
        let mark = if runs.partial_run == Some(i + 1) { "  (cut short: not in the figures below)" } else { "" };
        let _ = writeln!(
            out,
            "  {:<10} {:>10.1} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8}{mark}",
            step.label,
            step.throughput.ok_per_s,
            t(l.mean),
            t(l.percentile(50.0) as f64),
            t(l.percentile(99.0) as f64),
            t(l.max as f64),
            step.ok,
            step.failed
        );
    }
    let _ = writeln!(
        out,
        "\n  over {} of {} runs    mean        sd          min         max         95 % interval of the mean",
        runs.completed, runs.planned
    );
    spread_line(out, "ok/s", &runs.ok_per_s, &|x| format!("{x:.1}"));
    spread_line(out, "p99", &runs.p99_us, &|x| format_micros(x));
    let failed = 100.0 * runs.failed as f64 / runs.requests.max(1) as f64;
    let _ = writeln!(out, "  requests     ok {}, failed {} ({failed:.2} %)", runs.ok, runs.failed);
    let l = &runs.latency;
    if l.count > 0 {
        latency_line(out, l, "   (every run's histogram merged)");
        out.push_str("\n  percentile   latency (merged)\n");
        for p in REPORTED_PERCENTILES {
            let _ = writeln!(out, "  {:<12} {}", percentile_key(p), format_micros(l.percentile(p) as f64));
        }
    }
    // Streamed answers' figures (time to first token, tokens, goodput) of the runs the summary covers, merged.
    let judged = crate::result::complete_runs(&doc.steps, runs.partial_run);
    let parts: Vec<&crate::result::events::EventsReport> = judged.iter().filter_map(|s| s.events.as_ref()).collect();
    let secs = judged.iter().map(|s| s.duration_s).sum();
    if let Ok(Some(e)) = crate::result::events::EventsReport::merged(&parts, secs) {
        out.push('\n');
        for (i, line) in e.summary_lines().iter().enumerate() {
            let merged = if i == 0 { "   (every run merged)" } else { "" };
            let _ = writeln!(out, "  events       {line}{merged}");
        }
    }
}

/// vLLM's `--percentile-metrics` lines: each figure's mean, median and asked percentiles, from its histogram.
fn percentile_lines(pm: &crate::result::PercentileMetrics, e: &crate::result::events::EventsReport) -> Vec<String> {
    let Ok(m) = e.metrics() else { return Vec::new() };
    pm.metrics
        .iter()
        .filter_map(|name| {
            let h = crate::result::events::Figure::named(name)?.of(&m);
            let mut line = format!("{name:<12} ");
            if h.is_empty() {
                line.push('-');
                return Some(line);
            }
            line.push_str(&format!(
                "mean {}   median {}",
                format_micros(h.mean()),
                format_micros(h.percentile(50.0) as f64)
            ));
            for p in &pm.percentiles {
                line.push_str(&format!("   p{p} {}", format_micros(h.percentile(*p) as f64)));
            }
            Some(line)
        })
        .collect()
}

fn latency_line(out: &mut String, l: &crate::result::LatencySummary, after: &str) {
    let _ = writeln!(
        out,
        "  latency      min {}   mean {}   stdev {}   max {}{after}",
        format_micros(l.min as f64),
        format_micros(l.mean),
        format_micros(l.stdev),
        format_micros(l.max as f64)
    );
}

fn spread_line(out: &mut String, name: &str, s: &Spread, show: &dyn Fn(f64) -> String) {
    let opt = |v: Option<f64>| v.map_or("-".to_string(), show);
    // Neither throughput nor latency can be negative: a wide interval is cut at 0.
    let ci = s.ci95.map_or("- (one run)".to_string(), |[lo, hi]| format!("{} .. {}", show(lo.max(0.0)), show(hi)));
    let _ = writeln!(
        out,
        "  {name:<12} {:<11} {:<11} {:<11} {:<11} {ci}",
        show(s.mean),
        opt(s.sd),
        show(s.min),
        show(s.max)
    );
}

/// The thresholds with pass or fail and the value measured (empty without thresholds).
pub fn thresholds_text(results: &[ThresholdResult]) -> String {
    let Some(first) = results.first() else { return String::new() };
    let mut out = format!("\nthresholds (judged on {})\n", first.judged_on);
    for r in results {
        let value = |v: f64| match r.unit.as_str() {
            "us" => format_micros(v),
            "percent" => format!("{v:.2} %"),
            _ => format!("{v:.1}/s"),
        };
        let measured = r.measured.map_or("nothing measured".to_string(), value);
        let (mark, word) = if r.pass { ("✓", "pass") } else { ("✗", "FAIL") };
        let _ = writeln!(out, "  {mark} {word}  {:<24} {} {measured}", r.threshold, r.metric);
    }
    out
}

/// Whether the document measured key-value servers (redis://, memcache://) rather than HTTP.
fn is_kv(doc: &ResultDocument) -> bool {
    match doc.steps.first() {
        Some(step) => step.protocol == "redis" || step.protocol == "memcached",
        None => doc.settings.targets.iter().all(|t| t.starts_with("redis") || t.starts_with("memcache")),
    }
}

fn render_step(out: &mut String, step: &StepResult, named: bool, metrics: Option<&crate::result::PercentileMetrics>) {
    let l = &step.latency;
    let t = &step.throughput;
    let _ = writeln!(out);
    if named || step.label != "run" {
        let _ = writeln!(out, "step {}", step.label);
    }
    // peers.sh and other scripts take the first number of the first line that mentions req/s: keep it the rate.
    // WebSocket's listen mode counts the messages the server pushed: no request asked for them.
    let listening = step.websocket.as_ref().is_some_and(|w| w.messages_per_connection_per_s.is_some());
    let (per_s, things) = if listening { ("messages/s", "messages") } else { ("req/s", "requests") };
    let all =
        if step.failed > 0 { format!("; {:.1} {per_s} with the failures", t.requests_per_s) } else { String::new() };
    let _ = writeln!(
        out,
        "  throughput   {:.1} {per_s}   ({} {things} in {:.2} s{all})",
        t.ok_per_s, step.requests, step.duration_s
    );
    let mix = if step.failed > 0 { format!(": {}", step.failure_mix()) } else { String::new() };
    let _ =
        writeln!(out, "  requests     ok {}, failed {} ({:.2} %){mix}", step.ok, step.failed, step.failed_percent());
    if step.unfinished > 0 {
        let _ = writeln!(
            out,
            "  unfinished   {} requests still awaited an answer when the step ended (in no figure)",
            step.unfinished
        );
    }
    if let Some(sched) = &step.schedule {
        let _ = writeln!(
            out,
            "  rate         asked {:.1}/s   sent {:.1}/s   completed {:.1}/s   late (> 1 ms) {}{}   worst lag {}{}",
            sched.target_rate,
            sched.achieved_rate,
            sched.completed_rate,
            sched.late,
            match &sched.lag {
                Some(l) => format!("   lag p99 {}", format_micros(l.latency.percentile(99.0) as f64)),
                None => String::new(),
            },
            format_micros(sched.max_lag_us as f64),
            match sched.wakeups {
                Some(w) if w > 0 =>
                    format!("   {:.1} sent a wake-up", (step.requests + step.unfinished) as f64 / w as f64),
                _ => String::new(),
            }
        );
        // Said when the setup was long beside the step (1 % of it): a fixed rate's step began after it.
        if let Some(b) = sched.began_after_us.filter(|&b| b as f64 >= step.duration_s * 1e4) {
            let _ = writeln!(
                out,
                "               the step began {} after it was started, once every thread had a connection",
                format_micros(b as f64)
            );
        }
    }
    let _ = writeln!(
        out,
        "  transfer     in {}/s   out {}/s",
        format_bytes(t.bytes_in_per_s),
        format_bytes(t.bytes_out_per_s)
    );
    if l.count == 0 {
        out.push_str(if step.responses == 0 { "  latency      no answers\n" } else { "  latency      no successes\n" });
    } else {
        latency_line(out, l, "");
        match &step.service {
            // A document imported from a file without percentiles (drnbench's CSV): say so, print no zeros.
            _ if l.percentiles.is_empty() => out.push_str("\n  percentiles  absent from this document\n"),
            // Open loop: the corrected latency beside the service time a closed-loop tool would report.
            Some(service) => {
                out.push_str("\n  percentile   latency      service time\n");
                for p in REPORTED_PERCENTILES {
                    let key = percentile_key(p);
                    let _ = writeln!(
                        out,
                        "  {key:<12} {:<12} {}",
                        format_micros(l.percentile(p) as f64),
                        format_micros(service.percentile(p) as f64)
                    );
                }
                out.push_str("  (latency counts from each request's intended send time; service time from the send)\n");
            }
            None => {
                out.push_str("\n  percentile   latency\n");
                for p in REPORTED_PERCENTILES {
                    let key = percentile_key(p);
                    let _ = writeln!(out, "  {key:<12} {}", format_micros(l.percentile(p) as f64));
                }
            }
        }
        if let Ok(h) = LatencyHistogram::from_base64(&step.histogram.data) {
            render_histogram(out, &h);
        }
    }
    if let Some(w) = step.timeline().worst() {
        let _ = writeln!(
            out,
            "  worst window at {:.2} s ({} wide): p99 {}, sent {:.1}/s, completed {:.1}/s",
            w.t,
            format_micros(step.window_s * 1e6),
            format_micros(w.p99_us as f64),
            w.sent_per_s,
            w.completed_per_s
        );
    }
    if let Some(f) = step.failed_latency.as_ref().filter(|_| step.ok > 0) {
        let _ = writeln!(
            out,
            "  (the latency above is of the {} successes; the {} failures took mean {}, p50 {}, p99 {}, max {})",
            step.ok,
            step.failed,
            format_micros(f.mean),
            format_micros(f.percentile(50.0) as f64),
            format_micros(f.percentile(99.0) as f64),
            format_micros(f.max as f64)
        );
    }
    if let Some(line) = step.phases.as_ref().and_then(|p| p.summary_line()) {
        let _ = writeln!(out, "  phases       {line}");
    }
    for line in step.events.as_ref().map(|e| e.summary_lines()).unwrap_or_default() {
        let _ = writeln!(out, "  events       {line}");
    }
    if let (Some(pm), Some(e)) = (metrics, step.events.as_ref()) {
        for line in percentile_lines(pm, e) {
            let _ = writeln!(out, "  {line}");
        }
    }
    let _ = writeln!(out);
    let status = if step.protocol == "grpc" { grpc_statuses(step) } else { http_statuses(step) };
    let _ = writeln!(out, "  status       {}", if status.is_empty() { "none".into() } else { status.join("   ") });
    if step.protocol == "redis" || step.protocol == "memcached" {
        // Key-value replies are counted under HTTP-like codes so that every figure and exporter serves both.
        out.push_str(
            "               (200 a value or done, 204 a miss, 409 not stored, 500 an error reply, 0 timeout)\n",
        );
    }
    if step.error_kinds.is_empty() {
        out.push_str("  errors       none\n");
    } else {
        for (i, e) in step.error_kinds.iter().enumerate() {
            let label = if i == 0 { "errors" } else { "" };
            let words = ErrorKind::from_key(&e.kind).map_or("", ErrorKind::describe);
            let _ = writeln!(out, "  {label:<12} {} ({words}): {}   e.g. {}", e.kind, e.count, e.sample);
        }
    }
    let c = &step.connections;
    let _ = writeln!(
        out,
        "  connections  {} of {} open at once, {} opened, {} reconnect{}",
        c.max_open,
        c.asked,
        c.opened,
        c.reconnects,
        if c.reconnects == 1 { "" } else { "s" }
    );
    if c.closed_by_hakaru > 0 {
        // Each reason that happened, never a flag that was not given (a document without reasons is older).
        let why: Vec<String> = c
            .closed_by_hakaru_why
            .iter()
            .map(|(k, n)| format!("{n} {}", crate::metrics::HakaruClose::words(k)))
            .collect();
        let why = if why.is_empty() { String::new() } else { format!(": {}", why.join(", ")) };
        let _ = writeln!(out, "               {} closed by hakaru{why}", c.closed_by_hakaru);
    }
    if c.max_handing_over > 0 {
        let _ = writeln!(
            out,
            "               and up to {} {}",
            c.max_handing_over,
            match step.protocol.as_str() {
                "websocket" => "closing (their closing handshake under way beside the new ones)",
                _ => "handing over after a GOAWAY (finishing their streams beside the new ones)",
            }
        );
    }
    if let Some(h) = &step.http2 {
        http2_lines(out, h);
    }
    if let Some(q) = &step.quic {
        // How many datagrams one send carried is what segmentation offload buys; losses say whether the network
        // (or a full socket buffer) was part of what was measured.
        let _ = writeln!(
            out,
            "  quic         {} datagrams sent in {} sends ({} a send), {} received; packets lost {} of {} ({:.2} %)",
            q.datagrams_sent,
            q.send_calls,
            q.datagrams_per_send,
            q.datagrams_received,
            q.packets_lost,
            q.packets_sent,
            q.loss() * 100.0
        );
        if q.zero_rtt_sent > 0 {
            let _ = writeln!(
                out,
                "  0-rtt        {} of {} connections sent early data the server accepted",
                q.zero_rtt_accepted, q.zero_rtt_sent
            );
        }
    }
    if let Some(g) = &step.grpc {
        let _ = writeln!(
            out,
            "  messages     {} received ({} a call, {:.1}/s), {} sent a call",
            g.messages_received, g.messages_received_per_call, g.messages_received_per_s, g.messages_sent_per_call
        );
    }
    if let Some(per_s) = step.websocket.as_ref().and_then(|w| w.messages_per_connection_per_s) {
        let _ = writeln!(out, "  listening    {per_s:.1} messages/s a connection");
    }
    if let Some(line) = step.websocket.as_ref().and_then(crate::result::WsReport::fan_out_line) {
        let _ = writeln!(out, "  {line}");
    }
    if let Some(w) = step.websocket.as_ref().filter(|w| w.in_flight > 1 || w.match_field.is_some()) {
        let paired = w.match_field.as_deref().map_or("in order".to_string(), |p| format!("by the id at {p}"));
        let _ = writeln!(
            out,
            "  in flight    {} {} a connection, answers paired {paired}; unmatched answers: {} without an id, {} \
             not in flight",
            w.in_flight,
            if w.in_flight == 1 { "message" } else { "messages" },
            w.unmatched_no_id,
            w.unmatched_not_in_flight
        );
    }
    let g = &step.generator;
    if g.cores > 0 {
        let _ = writeln!(
            out,
            "  hakaru       {:.0} % of one core ({} it may use){}{}",
            g.cpu_percent,
            count_of(g.cores as u64, "core"),
            g.script_percent.map(|s| format!(", {s:.0} % of it building requests")).unwrap_or_default(),
            if g.saturated { " (saturated: the generator may be the bottleneck)" } else { "" }
        );
    }
    if let Some(s) = &step.server {
        let pids: Vec<String> = s.pids.iter().map(u32::to_string).collect();
        let thread = s.busiest_thread.as_ref().map(|t| format!(", busiest thread {} {:.0} %", t.name, t.cpu_percent));
        let _ = writeln!(
            out,
            "  server       {:.0} % of one core, at most {:.0} % ({} on this machine){}, RSS {}, pid {}{}",
            s.cpu_percent_mean,
            s.cpu_percent_max,
            count_of(s.cores as u64, "core"),
            thread.unwrap_or_default(),
            format_bytes(s.rss_max_bytes as f64),
            pids.join(","),
            if s.saturated { " (saturated: the server is CPU-bound at this load)" } else { "" }
        );
    }
    for p in &step.probes {
        let show = |v: &Option<serde_json::Value>| v.as_ref().map_or("-".to_string(), |v| v.to_string());
        let delta = p.delta.map(|d| format!(" ({d:+})")).unwrap_or_default();
        let error = p.error.as_ref().map(|e| format!("   failed: {e}")).unwrap_or_default();
        let _ = writeln!(out, "  probe        {}: {} -> {}{delta}{error}", p.name, show(&p.before), show(&p.after));
    }
    if let Some(r) = step.hit_rate {
        let _ =
            writeln!(out, "  hit rate     {r:.3} during the step (from the changes of the probes of hits and misses)");
    }
    render_breakdown(out, step);
}

/// The figures per group and per request, and the slowest requests.
/// HTTP/2's lines: the streams used (a server's lower limit said), GOAWAYs and retries, and h2load's header
/// compression figure (header bytes on the wire, and what HPACK saved of the response headers).
fn http2_lines(out: &mut String, h: &crate::result::Http2Report) {
    let limit = if h.streams_used > 0 && h.streams_used < h.streams_asked as u64 {
        format!(
            "{} streams per connection (--streams {}; the server allows {})",
            h.streams_used, h.streams_asked, h.streams_used
        )
    } else {
        format!("{} per connection", count_of(h.streams_asked as u64, "stream"))
    };
    let goaways = if h.goaways + h.retried > 0 {
        format!(", {} GOAWAY, {} streams sent again", h.goaways, h.retried)
    } else {
        String::new()
    };
    let _ = writeln!(out, "  http2        {limit}{goaways}");
    let _ = writeln!(
        out,
        "  headers      {} sent, {} received (decoded {}: space savings {:.2} %)",
        crate::base::units::format_bytes(h.header_bytes_out as f64),
        crate::base::units::format_bytes(h.header_bytes_in as f64),
        crate::base::units::format_bytes(h.header_bytes_in_decoded as f64),
        h.header_savings * 100.0
    );
}

fn render_breakdown(out: &mut String, step: &StepResult) {
    if !step.breakdown.is_empty() {
        // Key-value operations add p99.9, hits, misses and the answers their workload expected.
        let kv = step.breakdown.iter().any(|r| r.p999_us.is_some());
        let title = if kv { "operation" } else { "group / request" };
        let width = step.breakdown.iter().map(|r| r.name.len()).max().unwrap_or(0).clamp(title.len(), 48);
        let _ = write!(
            out,
            "\n  {title:<width$}  {:>9} {:>8} {:>8} {:>10} {:>9} {:>9} {:>9}",
            "requests", "ok", "failed", "ok/s", "mean", "p50", "p99"
        );
        if kv {
            let _ = write!(out, " {:>9} {:>8} {:>8} {:>8}", "p99.9", "hits", "misses", "expected");
        }
        out.push('\n');
        // A key-value workload lists what ran: YCSB-A has no SCAN, a phase one operation.
        for r in step.breakdown.iter().filter(|r| !kv || r.requests > 0) {
            let t = |us: f64| if r.ok == 0 { "-".to_string() } else { format_micros(us) };
            let name: String = if r.name.len() > width {
                format!("{}...", &r.name[..r.name.floor_char_boundary(width - 3)])
            } else {
                r.name.clone()
            };
            let _ = write!(
                out,
                "  {name:<width$}  {:>9} {:>8} {:>8} {:>10.1} {:>9} {:>9} {:>9}",
                r.requests,
                r.ok,
                r.failed,
                r.ok_per_s,
                t(r.mean_us),
                t(r.p50_us as f64),
                t(r.p99_us as f64)
            );
            if kv {
                let n = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
                let _ = write!(
                    out,
                    " {:>9} {:>8} {:>8} {:>8}",
                    t(r.p999_us.unwrap_or(0) as f64),
                    n(r.hits),
                    n(r.misses),
                    n(r.expected)
                );
            }
            out.push('\n');
        }
    }
    if !step.slowest.is_empty() {
        out.push_str("\n  slowest\n");
        for s in &step.slowest {
            let how = match &s.error {
                Some(kind) => kind.clone(),
                None => s.status.to_string(),
            };
            let _ = writeln!(out, "  {:>12}  {how:<20} {}", format_micros(s.latency_us as f64), s.shown());
        }
    }
}

fn render_histogram(out: &mut String, h: &LatencyHistogram) {
    let bins = h.log_bins(BINS);
    let most = bins.iter().map(|b| b.1).max().unwrap_or(0).max(1);
    out.push_str("\n  histogram (up to)\n");
    for (upper, count) in bins {
        let width = (count as f64 / most as f64 * BAR_WIDTH as f64).round() as usize;
        let bar = "#".repeat(if count > 0 { width.max(1) } else { 0 });
        let _ = writeln!(out, "  {:>10}  {bar:<BAR_WIDTH$} {count}", format_micros(upper as f64));
    }
}

/// The findings and warnings printed after a sweep's or a capacity search's table (and by `hakaru show`).
pub fn closing_lines(doc: &ResultDocument) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(a) = &doc.analysis {
        lines.push(String::new());
        lines.extend(a.summary.iter().map(|s| format!("  {s}")));
    }
    let gates = thresholds_text(&doc.thresholds);
    if !gates.is_empty() {
        lines.push(gates.trim_end().to_string());
    }
    if !doc.warnings.is_empty() {
        lines.push("\nwarnings".into());
        lines.extend(doc.warnings.iter().map(|w| format!("  ! {w}")));
    }
    lines
}

/// A capacity search's answer as it prints at its end (and `hakaru show` again); `start` is the first rate tried.
pub fn answer_line(answer: &CapacityAnswer, start: f64) -> String {
    let slo = &answer.slo;
    match (answer.rate, answer.first_failing_rate) {
        (Some(p), Some(f)) => format!("  capacity: {p:.0} req/s meets {slo}; {f:.0} req/s does not"),
        (Some(p), None) => {
            format!("  capacity: at least {p:.0} req/s meets {slo} (the highest rate tried; raise --rate-max)")
        }
        (None, _) => format!("  capacity: not even {start:.0} req/s meets {slo}; try a lower --rate-start"),
    }
}

/// The status line's entries: each HTTP status with its count (0: timeouts, as drnbench records them).
fn http_statuses(step: &StepResult) -> Vec<String> {
    step.status
        .iter()
        .map(|(code, n)| if code == "0" { format!("0 (timeout): {n}") } else { format!("{code}: {n}") })
        .collect()
}

/// A gRPC step's status line, as ghz gives it: each call by its grpc-status (`OK: 10000   UNAVAILABLE: 3`), an HTTP
/// status only where it is not 200 (a call answered by something that is not gRPC), timeouts as elsewhere.
fn grpc_statuses(step: &StepResult) -> Vec<String> {
    let mut out = Vec::new();
    for (code, n) in &step.status {
        match code.as_str() {
            "200" => out.insert(0, format!("OK: {n}")),
            "0" => out.push(format!("0 (timeout): {n}")),
            _ => out.push(format!("HTTP {code}: {n}")),
        }
    }
    let statuses = crate::protocol::grpc::STATUS_NAMES.iter().skip(1);
    for name in statuses {
        let key = format!("grpc_{}", name.to_ascii_lowercase());
        if let Some(e) = step.error_kinds.iter().find(|e| e.kind == key) {
            out.push(format!("{name}: {}", e.count));
        }
    }
    out
}
