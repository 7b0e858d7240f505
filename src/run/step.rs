//! The step runner: one step (one load level) measured with everything around it (warm-up, probes, server and self
//! monitoring), and the result document rewritten after every step, so a failure or Ctrl-C at step 7 leaves steps
//! 1 to 6 on disk. Every command that generates load runs its steps through here.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::base::load::Until;
use crate::engine;
use crate::error::CliError;
use crate::export::{Exporter, is_stdout, write_atomically};
use crate::live::{Live, Phase};
use crate::metrics::Window;
use crate::monitor::{self, SelfCheck, Watchers, is_hit_rate_probe};
use crate::plan::RunPlan;
use crate::plan::wire::Wire;
use crate::result::provenance::Provenance;
use crate::result::{GeneratorReport, ResultDocument, SCHEMA, Settings, StepLoad, StepResult, WarmupSummary};

/// How long a probe may take before it counts as failed.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// How far a step's measured hit rate is from the plan, as a warning; a value above 1 is a percentage.
pub fn hit_rate_warning(step: &StepResult, expected: f64) -> Option<String> {
    // The step's own rate when probes of hits and misses give it; else the server's rate since it started.
    let (measured, by) = match step.hit_rate {
        Some(r) => (r, "during the step (from the probes of hits and misses)".to_string()),
        None => {
            let p = step.probes.iter().find(|p| is_hit_rate_probe(&p.name))?;
            let v = p.after.as_ref()?.as_f64()?;
            (if v > 1.0 { v / 100.0 } else { v }, format!("by {} (since the server started)", p.name))
        }
    };
    ((measured - expected).abs() > 0.1).then(|| {
        format!(
            "the cache hit rate measured {by} is {measured:.2}, far from the {expected:.2} planned: the pattern \
             set, the cache size or the warm-up differ from the plan"
        )
    })
}

/// Runs one step of `plan`: its warm-up (figures kept apart), probes before, the step under the monitors,
/// probes after, each window shown and pushed by `live`. Returns the step and whether a stop signal ended it.
/// `tap` sees every window of the step (not of the warm-up) as it completes, the watched server's CPU in its
/// summary.
pub fn measure_step(
    plan: &RunPlan,
    label: &str,
    warmup: Option<Duration>,
    watchers: &Watchers,
    interrupt: &AtomicBool,
    live: &mut Live,
    tap: &mut dyn FnMut(&Window),
) -> (StepResult, bool) {
    // Scale-out: wait for the common instant before anything (warm-up, probes, the monitor) begins, but for a
    // moment to set them up in: the load threads wait for the instant itself.
    if let Some(at) = plan.start_at {
        engine::wait_until(at.checked_sub(Duration::from_millis(200)).unwrap_or(at), interrupt);
    }
    let warmup = warmup.filter(|d| !d.is_zero());
    // After a warm-up the step starts when the warm-up ends, not at --start-at.
    let after_warmup;
    let plan = if warmup.is_some() && plan.start_at.is_some() {
        after_warmup = RunPlan { start_at: None, ..plan.clone() };
        &after_warmup
    } else {
        plan
    };
    let warmup = warmup.map(|d| {
        let mut warm = plan.clone();
        warm.stop = Until::Duration(d);
        live.begin(&warm, label, Phase::Warmup);
        let out = engine::run_step(&warm, interrupt, |w| live.window(w, watchers.monitor.as_ref()));
        live.end_phase();
        WarmupSummary {
            duration_s: out.elapsed.as_secs_f64(),
            requests: out.metrics.requests,
            requests_per_s: out.metrics.requests as f64 / out.elapsed.as_secs_f64().max(1e-9),
            errors: out.metrics.errors.total(),
            p50_us: out.metrics.latency.percentile(50.0),
            p99_us: out.metrics.latency.percentile(99.0),
        }
    });
    let before = monitor::probe_all(&watchers.probes, PROBE_TIMEOUT);
    if let Some(m) = &watchers.monitor {
        m.begin_step();
    }
    let machine_before = (monitor::sample_cores(), monitor::own_cpu_time(), Instant::now());
    live.begin(plan, label, Phase::Measure);
    // The server's CPU in each window: the difference between readings at the windows' ends.
    let mut server_cpu = 0.0;
    let outcome = if interrupt.load(Ordering::Relaxed) {
        None
    } else {
        Some(engine::run_step(plan, interrupt, |w| {
            if let Some(m) = &watchers.monitor {
                let now = m.step_cpu_seconds();
                let secs = w.length.as_secs_f64();
                w.summary.server_cpu_percent =
                    (secs > 0.0).then(|| ((now - server_cpu) / secs * 1000.0).round() / 10.0);
                server_cpu = now;
            }
            live.window(w, watchers.monitor.as_ref());
            tap(w);
        }))
    };
    live.end_phase();
    let server = watchers.monitor.as_ref().map(|m| m.end_step());
    let machine = machine_report(machine_before, watchers);
    let after = monitor::probe_all(&watchers.probes, PROBE_TIMEOUT);

    let load = StepLoad {
        model: plan.settings.load_model.clone(),
        connections: plan.connections,
        threads: plan.threads,
        rate: plan.settings.rate,
    };
    let (metrics, windows, elapsed, interrupted, load_cpu, late, script_cpu) = match outcome {
        Some(o) => (o.metrics, o.windows, o.elapsed, o.interrupted, o.load_cpu, o.late_start, o.script_cpu),
        None => (Default::default(), Vec::new(), Duration::ZERO, true, Duration::ZERO, None, Duration::ZERO),
    };
    if let Some(script) = &plan.script {
        // wrk's done(summary, latency, requests), after every measured step (a sweep's steps each).
        if let Err(why) = script.done(&crate::script::Figures::of(&metrics, &windows, elapsed)) {
            eprintln!("hakaru: --script {why}");
        }
    }
    let mut step = StepResult::from_metrics(label, load, &metrics, windows, elapsed);
    step.window_s = plan.window.as_secs_f64();
    if let (Some(ramp), Some(sched)) = (&plan.ramp, step.schedule.as_mut()) {
        // A ramp asks its mean rate over the step (its peak is in the settings' stages).
        sched.target_rate = (ramp.total() / ramp.duration().as_secs_f64() * 1000.0).round() / 1000.0;
    }
    step.start_late_s = late.map(|l| (l.as_secs_f64() * 1000.0).round() / 1000.0);
    // Labels are made for the requests the document names (a breakdown's few, the slowest), not for each of a
    // pattern file's 400,000.
    let label = |spec: usize| plan.requests.get(spec).map(|r| r.label()).unwrap_or_default();
    step.add_details(&metrics, &label, &plan.group_names, matches!(plan.wire, Wire::Kv { .. }));
    if let Some(w) = &plan.workload {
        // A write's "done" is no hit: hits and misses are counted for the operations that read.
        for kind in ["group", "request"] {
            for (spec, row) in step.breakdown.iter_mut().filter(|r| r.kind == kind).enumerate() {
                if !w.reads(spec) {
                    (row.hits, row.misses) = (None, None);
                }
            }
        }
    }
    step.protocol = plan.wire.protocol().name().into();
    // Each protocol's own section, from its own report.
    let secs = elapsed.as_secs_f64();
    match &plan.wire {
        Wire::Http2 { .. } => step.http2 = Some(crate::result::Http2Report::new(&metrics.wire.h2, plan.wire.streams())),
        Wire::Grpc { messages_out, .. } => {
            step.http2 = Some(crate::result::Http2Report::new(&metrics.wire.h2, plan.wire.streams()));
            let sent = u64::from(*messages_out);
            step.grpc =
                Some(crate::result::GrpcReport::new(sent, metrics.wire.h2.grpc_messages, metrics.requests, secs));
        }
        Wire::Http3 { .. } => step.quic = Some(crate::result::quic::QuicReport::new(&metrics.wire.quic)),
        Wire::WebSocket(w) => step.websocket = crate::result::WsReport::of(w, &metrics, step.ok, secs),
        Wire::Http1 | Wire::Kv { .. } => {}
    }
    // The load threads' own CPU, against the cores they can use: one thread can saturate one core at most.
    let cores = plan.threads.min(monitor::own_cores());
    let check = SelfCheck::with_cores(Duration::ZERO, load_cpu, elapsed, cores);
    let builds = plan.script.is_some() || plan.template.is_some() || plan.workload.as_ref().is_some_and(|w| w.builds());
    let script_percent = builds.then(|| share_percent(script_cpu, load_cpu));
    step.generator = GeneratorReport {
        cpu_percent: check.cpu_percent,
        cores: check.cores,
        saturated: check.saturated,
        script_percent,
    };
    step.server = server;
    step.machine = machine;
    step.probes = monitor::readings(&watchers.probes, before, after);
    step.hit_rate = step.hit_rate_from_probes();
    step.warmup = warmup;
    (step, interrupted)
}

/// The machine during the step, from the readings at its start: every core's busy share, the CPUs hakaru and the
/// watched server may run on, hakaru's whole CPU. None when /proc/stat gave no core, or for a step too short
/// (under 0.1 s, ten clock ticks) for shares to mean anything.
fn machine_report(
    (cores, own_cpu, at): (monitor::MachineSample, Duration, Instant),
    watchers: &Watchers,
) -> Option<monitor::MachineReport> {
    let wall = at.elapsed();
    let busy = cores.busy_until(&monitor::sample_cores());
    if busy.is_empty() || wall < Duration::from_millis(100) {
        return None;
    }
    Some(monitor::MachineReport {
        cores: busy,
        generator_cpus: monitor::cpus_allowed(0).unwrap_or_default(),
        server_cpus: watchers.monitor.as_ref().map(|m| monitor::cpus_allowed_any(m.pids())).unwrap_or_default(),
        generator_percent: share_percent(monitor::own_cpu_time().saturating_sub(own_cpu), wall),
    })
}

/// `part` as a percentage of `whole`, to one decimal.
fn share_percent(part: Duration, whole: Duration) -> f64 {
    let whole = whole.as_secs_f64();
    if whole <= 0.0 { 0.0 } else { (part.as_secs_f64() / whole * 1000.0).round() / 10.0 }
}

/// A result document under construction, rewritten to its files after every step.
pub struct LiveDocument {
    pub doc: ResultDocument,
    /// Whether the steps keep connections alive (for the warnings).
    keepalive: bool,
    /// `--expect-hit-rate`, checked against every step's hit-rate probe.
    pub expected_hit_rate: Option<f64>,
    /// Warnings about the whole run found before its steps (e.g. too few open files), kept in every rewrite.
    pub notes: Vec<String>,
    outputs: Vec<(PathBuf, Box<dyn Exporter>)>,
}

impl LiveDocument {
    pub fn new(settings: Settings, keepalive: bool, outputs: Vec<(PathBuf, Box<dyn Exporter>)>) -> LiveDocument {
        let doc = ResultDocument {
            schema: SCHEMA.into(),
            provenance: Provenance::collect(std::time::SystemTime::now(), settings.seed),
            settings,
            interrupted: false,
            steps: Vec::new(),
            warnings: Vec::new(),
            analysis: None,
            runs: None,
            thresholds: Vec::new(),
            missing_segments: Vec::new(),
        };
        LiveDocument { doc, keepalive, expected_hit_rate: None, notes: Vec::new(), outputs }
    }

    /// Adds a finished step, refreshes the warnings and writes every output file.
    pub fn push(&mut self, step: StepResult, interrupted: bool) -> Result<(), CliError> {
        self.doc.steps.push(step);
        self.doc.interrupted |= interrupted;
        self.refresh_warnings();
        self.write()
    }

    pub fn refresh_warnings(&mut self) {
        let single = self.doc.steps.len() == 1 && self.doc.settings.sweep.is_none();
        let mut w: Vec<String> = self.notes.clone();
        for step in &self.doc.steps {
            let mut own = step.warnings(self.keepalive);
            own.extend(self.expected_hit_rate.and_then(|r| hit_rate_warning(step, r)));
            w.extend(own.into_iter().map(|x| if single { x } else { format!("{}: {x}", step.label) }));
        }
        if !self.keepalive {
            w.push(
                "keep-alive is off: every request opens a new connection, which usually costs more than the request"
                    .into(),
            );
        }
        if crate::result::provenance::is_debug_build() {
            w.push("this is a debug build of hakaru: build with --release before trusting the numbers".into());
        }
        if self.doc.interrupted {
            w.push(format!("{}: the figures cover only the time until then", crate::base::stop::reason()));
        }
        self.doc.warnings = w;
    }

    /// Writes every output file from the document as it is now (through a temporary file and a rename).
    /// Outputs that are standard output are left for [`LiveDocument::write_final`]: a document per step there
    /// would be several documents in one stream.
    pub fn write(&self) -> Result<(), CliError> {
        self.write_outputs(false)
    }

    /// Writes every output file, standard output included: once, when the run ends.
    pub fn write_final(&self) -> Result<(), CliError> {
        self.write_outputs(true)
    }

    fn write_outputs(&self, last: bool) -> Result<(), CliError> {
        for (path, exporter) in &self.outputs {
            if !last && is_stdout(path) {
                continue;
            }
            write_atomically(path, &exporter.render(&self.doc))
                .map_err(|e| CliError::runtime(format!("writing '{}': {e}", path.display())))?;
        }
        Ok(())
    }

    /// Prints a line of the human text: on stdout, or on stderr when an output goes to standard output, so that
    /// the file there stays one clean document.
    pub fn say(&self, text: &str) {
        use std::io::Write as _;
        // Every line printed has its secrets hidden, whatever it quotes (a probe's URL, a request).
        let text = crate::base::secrets::scrub_text(text);
        // A reader that went away (`| head`) must not turn a finished measurement into a panic: the files are
        // still written; what could not be printed is dropped.
        if self.outputs.iter().any(|(p, _)| is_stdout(p)) {
            let _ = writeln!(std::io::stderr().lock(), "{text}");
        } else {
            let _ = writeln!(std::io::stdout().lock(), "{text}");
        }
    }
}
