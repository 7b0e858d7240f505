//! A step's entry built from its merged metrics (`StepResult::from_metrics`): throughput, latency and service
//! percentiles, errors by kind, the schedule, the protocols' sections; and what reads it back.

use super::*;

impl StepResult {
    /// Builds the step entry from merged metrics.
    pub fn from_metrics(
        label: &str,
        load: StepLoad,
        m: &StepMetrics,
        windows: Vec<WindowSummary>,
        duration: std::time::Duration,
    ) -> Self {
        let secs = duration.as_secs_f64().max(1e-9);
        let errors = m.errors.total();
        let failed = m.failed();
        Self {
            label: label.to_string(),
            protocol: "http".into(),
            duration_s: (secs * 1e6).round() / 1e6,
            requests: m.requests,
            responses: m.requests - errors,
            errors,
            ok: m.requests - failed,
            failed,
            unfinished: m.sent.saturating_sub(m.requests),
            graceful_stop_s: m.graceful_waited.map(|d| (d.as_secs_f64() * 1e3).round() / 1e3),
            throughput: Throughput {
                requests_per_s: round3(m.requests as f64 / secs),
                ok_per_s: round3((m.requests - failed) as f64 / secs),
                bytes_in: m.bytes_in,
                bytes_out: m.bytes_out,
                bytes_in_per_s: round3(m.bytes_in as f64 / secs),
                bytes_out_per_s: round3(m.bytes_out as f64 / secs),
            },
            latency: LatencySummary::from_histogram(&m.latency),
            failed_latency: (failed > 0).then(|| LatencySummary::from_histogram(&m.failed_latency)),
            service: load.rate.map(|_| LatencySummary::from_histogram(&m.service)),
            schedule: load.rate.map(|target_rate| ScheduleReport {
                target_rate,
                achieved_rate: round3(m.sent as f64 / secs),
                completed_rate: round3(m.requests as f64 / secs),
                began_after_us: (!m.schedule_began_after.is_zero())
                    .then(|| m.schedule_began_after.as_micros().min(u64::MAX as u128) as u64),
                late: m.late,
                max_lag_us: m.max_lag_us,
                lag: super::phases::Phase::of(&m.lag),
                starved: m.starved,
                late_cpu: late_on_busy_cpu(&windows, load.threads),
                wakeups: Some(m.pacer_wakeups),
            }),
            status: m.status_counts().into_iter().map(|(s, c)| (s.to_string(), c)).collect(),
            failed_statuses: m.failed_by_status.iter().map(|(s, c)| (s.to_string(), *c)).collect(),
            error_kinds: m
                .errors
                .seen()
                .map(|(k, c, s)| ErrorCount { kind: k.key().into(), count: c, sample: s.into() })
                .collect(),
            connections: Connections {
                asked: load.connections,
                max_open: m.max_open,
                opened: m.connects,
                reconnects: m.reconnects,
                closed_by_hakaru: m.closed_by_hakaru,
                closed_by_hakaru_why: m.closed_by_hakaru_reasons(),
                max_handing_over: m.max_handing_over,
            },
            load,
            window_s: 1.0,
            windows,
            histogram: EncodedHistogram::of(&m.latency),
            generator: GeneratorReport::default(),
            server: None,
            probes: Vec::new(),
            warmup: None,
            breakdown: Vec::new(),
            slowest: Vec::new(),
            hit_rate: None,
            start_late_s: None,
            agents: Vec::new(),
            first_error_reply: m.first_error_reply.clone(),
            http2: None,
            grpc: None,
            quic: None,
            websocket: None,
            phases: PhasesReport::of(&m.phases),
            events: EventsReport::of(&m.events, secs, m.requests),
            machine: None,
        }
    }

    /// The hit rate during the step from its probes' changes: hits / (hits + misses), or hits / gets when the
    /// server counts gets (droonga-http-server's nHits and nGets) or queries. None without both probes, or
    /// when nothing was asked of the cache during the step.
    pub fn hit_rate_from_probes(&self) -> Option<f64> {
        let delta = |words: &[&str]| {
            self.probes
                .iter()
                .find(|p| {
                    let n = p.name.to_ascii_lowercase();
                    words.iter().any(|w| n.ends_with(w)) && !n.contains("rate") && !n.contains("ratio")
                })?
                .delta
        };
        let hits = delta(&["hits", "nhits"])?;
        let total = match delta(&["misses", "nmisses"]) {
            Some(misses) => hits + misses,
            None => delta(&["gets", "ngets", "queries", "n_queries"])?,
        };
        (total > 0.0).then(|| (hits / total).clamp(0.0, 1.0))
    }

    /// Adds the figures per group and per request, and the slowest requests: `labels` names the plan's requests,
    /// `groups` its pattern groups (a key-value workload's operations, with their hits and misses when `kv`).
    /// `label`: what the request of that index is, for people.
    pub fn add_details(&mut self, m: &StepMetrics, label: &dyn Fn(usize) -> String, groups: &[String], kv: bool) {
        let secs = self.duration_s.max(1e-9);
        let row = |kind: &str, name: &str, b: &crate::metrics::Breakdown| BreakdownRow {
            kind: kind.into(),
            name: name.into(),
            requests: b.ok + b.failed,
            ok: b.ok,
            failed: b.failed,
            ok_per_s: round3(b.ok as f64 / secs),
            mean_us: round3(b.latency.mean()),
            p50_us: b.latency.percentile(50.0),
            p99_us: b.latency.percentile(99.0),
            p999_us: kv.then(|| b.latency.percentile(99.9)),
            hits: kv.then_some(b.hits),
            misses: kv.then_some(b.misses),
            expected: kv.then_some(b.expected),
        };
        self.breakdown = groups
            .iter()
            .zip(&m.by_group)
            .map(|(name, b)| row("group", name, b))
            .chain(m.by_request.iter().enumerate().map(|(spec, b)| row("request", &label(spec), b)))
            .collect();
        self.slowest = m
            .slowest
            .iter()
            .map(|s| SlowRequest {
                request: label(s.spec),
                status: s.status,
                error: s.error.map(|k| k.key().to_string()),
                latency_us: s.latency_us,
                command: s.key.as_ref().map(|k| k.command.clone()),
                key: s.key.as_ref().and_then(|k| k.key.clone()),
            })
            .collect();
    }

    /// The step's windows, to be read for what the totals do not say (worst window, drift, stalls).
    pub fn timeline(&self) -> crate::metrics::timeline::Timeline<'_> {
        crate::metrics::timeline::Timeline { windows: &self.windows, width: self.window_s, duration: self.duration_s }
    }

    /// Failed requests, percent of those that ended.
    pub fn failed_percent(&self) -> f64 {
        100.0 * self.failed as f64 / self.requests.max(1) as f64
    }

    /// What the failures were, e.g. `status 503: 10, reset: 2` (statuses outside `ok_status`, then error kinds).
    pub fn failure_mix(&self) -> String {
        let mut parts: Vec<String> =
            self.failed_statuses.iter().map(|(code, n)| format!("status {code}: {n}")).collect();
        parts.extend(self.error_kinds.iter().map(|e| format!("{}: {}", e.kind, e.count)));
        parts.join(", ")
    }

    /// Whether the machine (a core the server and hakaru shared, or other programs' work) limited this step.
    pub fn machine_limit(&self) -> Option<crate::monitor::MachineLimit> {
        self.machine.as_ref()?.limit(self.server.as_ref()?.cpu_percent_mean)
    }

    /// The step's warnings prefixed with its label, for documents with several steps.
    pub fn labelled_warnings(&self, keepalive: bool) -> Vec<String> {
        self.warnings(keepalive).into_iter().map(|w| format!("{}: {w}", self.label)).collect()
    }

    /// Things a reader must know about this step before trusting it (without the step's label).
    pub fn warnings(&self, keepalive: bool) -> Vec<String> {
        let mut w = Vec::new();
        // Only when some connection worked: when none did, the errors say why and this would be noise.
        // An open loop opens only the connections it needs; a closed loop should have had them all.
        let closed = self.schedule.is_none();
        if closed && self.connections.max_open < self.connections.asked as u64 && keepalive && self.responses > 0 {
            w.push(format!(
                "only {} of {} connections were open at once; the load was lower than asked",
                self.connections.max_open, self.connections.asked
            ));
        }
        if let Some(text) = self.first_error_reply.as_ref().filter(|_| self.failed > 0) {
            w.push(format!("the server's first error reply: {text}"));
        }
        if self.failed > 0 && self.ok > 0 {
            w.push(format!(
                "{} of {} requests failed ({:.2} %: {}); the latency figures are those of the {} successes",
                self.failed,
                self.requests,
                self.failed_percent(),
                self.failure_mix(),
                self.ok
            ));
        }
        if let Some(e) = self.events.as_ref().filter(|e| e.answers_in_one_read * 2 > e.answers) {
            w.push(format!(
                "{} of {} answers came whole in one read (every event at once): the server, or a proxy before it, \
                 buffers its stream, so the time to the first event (token) is the whole answer's",
                e.answers_in_one_read, e.answers
            ));
        }
        let timeline = self.timeline();
        w.extend(timeline.stall_warnings());
        w.extend(timeline.drift());
        let g = self.generator;
        let check = crate::monitor::SelfCheck { cpu_percent: g.cpu_percent, cores: g.cores, saturated: g.saturated };
        w.extend(check.warning());
        w.extend(self.machine_limit().map(|l| l.warning()));
        if let Some(share) = g.script_percent.filter(|s| g.saturated && *s >= 50.0) {
            w.push(format!(
                "building requests (the script or the templates) took {share:.0} % of hakaru's CPU, which was \
                 saturated: it limits the rate; give hakaru more threads (-t), or build fixed requests once in init()"
            ));
        }
        for a in self.agents.iter().filter(|a| a.generator.saturated) {
            w.push(format!(
                "agent {} ({}) used {:.0} % of its {} core(s): it may have measured itself as much as the target",
                a.segment, a.hostname, a.generator.cpu_percent, a.generator.cores
            ));
        }
        if let Some(late) = self.start_late_s.filter(|l| *l >= 0.05) {
            w.push(format!(
                "this agent started {late:.3} s after --start-at: its first {late:.3} s are missing from its figures"
            ));
        }
        if let Some(s) = &self.schedule {
            // In an open loop, answers still due at the end are the overload showing: say how many.
            if self.unfinished as f64 > 0.01 * self.requests as f64 {
                let when = match self.graceful_stop_s {
                    Some(g) => format!("{g:.3} s after the step's end (its graceful stop)"),
                    None => "when the step ended".into(),
                };
                w.push(format!(
                    "{} requests were still waiting for an answer {when}; they are in no figure (the server is \
                     overloaded at this rate, or its answers take longer than --graceful-stop)",
                    self.unfinished
                ));
            }
            if s.late > 0 {
                let pct = 100.0 * s.late as f64 / self.requests.max(1) as f64;
                // Only when hakaru counted a request due with every connection busy and -c reached: late
                // requests from timer jitter or a slow server with spare connections are not fixed by -c.
                let busy = if let Some(h2) = self.http2.as_ref().filter(|_| s.starved > 0) {
                    // HTTP/2: every stream of every connection was busy.
                    format!(
                        "; {} of those {} because all {} streams ({} connections x {}) were busy when they fell due: \
                         raise -c or --streams",
                        s.starved,
                        s.late,
                        self.connections.asked * h2.streams_asked,
                        self.connections.asked,
                        h2.streams_asked
                    )
                } else if let Some(ws) = self.websocket.as_ref().filter(|_| s.starved > 0) {
                    // WebSocket --in-flight: every message slot of every connection was busy.
                    format!(
                        "; {} of those {} because all {} messages in flight ({} connections x {}) were busy when they \
                         fell due: raise -c or --in-flight",
                        s.starved,
                        s.late,
                        self.connections.asked * ws.in_flight,
                        self.connections.asked,
                        ws.in_flight
                    )
                } else if s.starved > 0 {
                    format!(
                        "; {} of those {} because {} busy when they fell due: raise -c",
                        s.starved,
                        s.late,
                        if self.connections.asked == 1 {
                            "the 1 connection was".to_string()
                        } else {
                            format!("all {} connections were", self.connections.asked)
                        }
                    )
                } else {
                    String::new()
                };
                // hakaru's own CPU: late requests (beside those -c made late) in seconds its threads were saturated.
                let cpu = match s.late_cpu {
                    0 => String::new(),
                    n => format!(
                        "; {n} in seconds when hakaru's {} used 90 % or more of their cores (its CPU made them late: \
                         give it more threads, cores or agents)",
                        crate::base::units::count_of(self.load.threads as u64, "load thread")
                    ),
                };
                w.push(format!(
                    "{} of the {} requests that ended ({pct:.2} %) left more than 1 ms after their intended time (worst {} \
                     late){busy}{cpu}; their latency counts from the intended time",
                    s.late,
                    self.requests,
                    crate::base::units::format_micros(s.max_lag_us as f64)
                ));
            }
            if s.achieved_rate < 0.99 * s.target_rate {
                w.push(format!(
                    "the rate asked was {:.1} req/s but {:.1} req/s was achieved",
                    s.target_rate, s.achieved_rate
                ));
            }
        }
        if self.requests == 0 && self.unfinished == 0 {
            // Nothing was sent (the rows of `--data-order unique` had run out, or the step was cut before its first
            // request): the target is not to blame.
            w.push("no request was sent in this step; there are no figures".into());
        } else if self.requests == 0 {
            // A server that accepts and never answers: nothing was measured, and the output must say so.
            w.push(format!(
                "no request completed ({} still waiting when the step ended); there are no figures: the target \
                 accepted {} connection(s) and answered nothing in time",
                self.unfinished, self.connections.opened
            ));
        } else if self.responses == 0 {
            w.push("no request got an answer; there are no latency figures".into());
        } else if self.requests > 0 && self.ok == 0 {
            w.push(format!("no request succeeded ({}); there are no latency figures of successes", self.failure_mix()));
        }
        w
    }
}

/// The late requests no busy connection explains that ended in a second when the load threads used 90 % or more
/// of their cores: hakaru's CPU made them late. Each window's late less its starved.
fn late_on_busy_cpu(windows: &[WindowSummary], threads: usize) -> u64 {
    let busy = 90.0 * threads.max(1) as f64;
    let saturated = windows.iter().filter(|w| w.cpu_percent.is_some_and(|c| c >= busy));
    saturated.map(|w| w.late.saturating_sub(w.starved)).sum()
}
