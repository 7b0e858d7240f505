//! One owner for a measured run: built once from a plan's outputs, gates and history sink, it owns the live result
//! document, measures the steps through the step runner (a fixed load, `--runs`, phases, a sweep, capacity's
//! search) or adopts a merged document (agents), judges the gates, writes the files, hands the run to the history
//! and gives the exit code. Every measuring command is args -> plan -> session -> exit code, so a new protocol or
//! load model plugs in here once, not into five commands.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::error::CliError;
use crate::export::hdrlog::HdrLog;
use crate::export::text::{Text, closing_lines};
use crate::export::{Exporter, csv::Csv, drnbench::DrnbenchCsv, json::Json, sweep_csv::SweepCsv};
use crate::judge::gates::{self, Threshold};
use crate::live::Live;
use crate::metrics::ErrorKind;
use crate::monitor::Watchers;
use crate::plan::{Outputs, RunPlan};
use crate::result::{CapacityAnswer, ResultDocument, RunsSummary, Settings, StepResult};
use crate::run::step::{LiveDocument, measure_step};

/// Exit code of a run that measured nothing of the service: every request failed, or a checked workload found a
/// wrong answer.
pub const EXIT_FAILED: u8 = 1;

/// Where a run keeps its final document besides its files (the history); passed in by the command, so the session
/// needs no database of its own.
pub trait Sink {
    /// The labels the run is kept under (also written into the document's settings).
    fn labels(&self) -> BTreeMap<String, String>;
    /// Keeps the final document; a failure is the sink's to say, never the run's.
    fn record(&self, doc: &ResultDocument);
}

/// No history (tests, and runs whose documents are someone else's to keep).
pub struct NoSink;

impl Sink for NoSink {
    fn labels(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn record(&self, _doc: &ResultDocument) {}
}

/// The plan's output files made into exporters: here, once, for every command.
fn exporters(o: &Outputs) -> Vec<(PathBuf, Box<dyn Exporter>)> {
    let mut out: Vec<(PathBuf, Box<dyn Exporter>)> = Vec::new();
    if let Some(p) = &o.drnbench {
        out.push((p.clone(), Box::new(DrnbenchCsv)));
    }
    if let Some(p) = &o.csv {
        out.push((p.clone(), if o.wide { Box::new(SweepCsv) } else { Box::new(Csv) }));
    }
    if let Some(p) = &o.json {
        out.push((p.clone(), Box::new(Json)));
    }
    out
}

/// How the run's text ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The text summary (run, a mix, merged agents).
    Summary,
    /// The summary after a blank line, then `FAILED: ...` with the seed that replays it (kv's phased workloads,
    /// as the Kyoto tools end), or, when the workload checked its answers (true), that every answer was right.
    Checked(bool),
    /// A sweep's or capacity search's closing: the analysis (plateau, knee, bottleneck) and the warnings.
    Analysis,
}

/// A measured run in progress.
pub struct Session<'a> {
    pub live: LiveDocument,
    sink: &'a dyn Sink,
    thresholds: Vec<Threshold>,
    interrupt: &'a AtomicBool,
    /// `--runs N`: the document carries the runs' summary, rewritten after each.
    runs: usize,
    /// The files are rewritten after every step (not for a single run: written once, whole, at the end).
    each: bool,
    /// The first wrong answer a checked workload found (its sample, which names the seed).
    wrong: Option<String>,
    /// A capacity search's answer, kept in the analysis.
    capacity: Option<CapacityAnswer>,
    /// The dashboard or progress line and the remote-write push, started with the first step.
    shown: Option<Live>,
    /// Lines said while the dashboard covers the terminal, printed when it is gone (true: a warning on stderr).
    deferred: RefCell<Vec<(bool, String)>>,
    /// `--hdr-log`: where it goes, and the log once the first step opened it (None again after a failure).
    hdr_path: Option<PathBuf>,
    hdr: Option<HdrLog>,
    /// `--data-order unique`'s rows ran out (said once).
    rows_ran_out: bool,
    /// The HDR log's rows tagged by step (a sweep's or a capacity search's steps, each its own load).
    hdr_by_step: bool,
}

impl<'a> Session<'a> {
    /// A run of `settings` into `outputs`, judged by `thresholds` when it ends and kept in `sink`.
    pub fn new(
        settings: Settings,
        keepalive: bool,
        outputs: &Outputs,
        thresholds: Vec<Threshold>,
        sink: &'a dyn Sink,
        interrupt: &'a AtomicBool,
    ) -> Session<'a> {
        let mut live = LiveDocument::new(settings, keepalive, exporters(outputs));
        live.doc.settings.labels = sink.labels();
        Session {
            live,
            sink,
            thresholds,
            interrupt,
            runs: 1,
            each: true,
            wrong: None,
            capacity: None,
            shown: None,
            deferred: RefCell::new(Vec::new()),
            rows_ran_out: false,
            hdr_path: outputs.hdr_log.clone(),
            hdr: None,
            hdr_by_step: false,
        }
    }

    /// Steps of different loads (a sweep, a capacity search, kv's phases): each step's rows in the HDR log get a
    /// tag of their own.
    pub fn steps_apart(mut self) -> Self {
        self.hdr_by_step = true;
        self
    }

    /// A document made elsewhere (the agents' merged one) in place of the new one, to be judged, written and kept
    /// as a measured one is; the flags' labels join its own.
    pub fn adopting(mut self, doc: ResultDocument) -> Self {
        let labels = std::mem::take(&mut self.live.doc.settings.labels);
        self.live.doc = doc;
        self.live.doc.settings.labels.extend(labels);
        // A wrong answer an agent found fails the merged run as it failed the agent's.
        self.wrong = first_wrong(&self.live.doc.steps);
        self
    }

    /// `--runs N`: the steps are repeated runs of one plan.
    pub fn repeated(mut self, runs: usize) -> Self {
        self.runs = runs;
        self.each = runs > 1;
        self
    }

    /// What the run found before its steps: whether `connections` fit under the open-file limit, the plan's
    /// notes, the hit rate the watchers expect. Said on stderr now and kept in the document's warnings.
    pub fn prepare(&mut self, connections: usize, threads: usize, notes: &[String], watchers: Option<&Watchers>) {
        if let Some(w) = crate::engine::fd_budget(connections, threads).warning() {
            self.note(&w);
        }
        for n in notes {
            self.note(n);
        }
        self.live.expected_hit_rate = watchers.and_then(|w| w.expected_hit_rate);
    }

    /// A warning about the whole run, on stderr now (after the dashboard when it covers the terminal) and in the
    /// document.
    pub fn note(&mut self, text: &str) {
        let text = crate::base::secrets::scrub_text(text);
        self.warn_now(&text);
        self.live.notes.push(text);
    }

    /// A warning on stderr, or on the dashboard and kept for after it.
    fn warn_now(&self, text: &str) {
        match &self.shown {
            Some(live) if live.covers_terminal() => {
                live.warn(text);
                self.deferred.borrow_mut().push((true, text.to_string()));
            }
            _ => eprintln!("hakaru: warning: {text}"),
        }
    }

    /// A line of the human text (see [`LiveDocument::say`]); while the dashboard covers the terminal, shown there
    /// and printed when it is gone.
    pub fn say(&self, text: &str) {
        match &self.shown {
            Some(live) if live.covers_terminal() => {
                live.line(&crate::base::secrets::scrub_text(text));
                self.deferred.borrow_mut().push((false, text.to_string()));
            }
            _ => self.live.say(text),
        }
    }

    /// Whether a stop signal has come; the document is then marked cut short.
    pub fn stopped(&mut self) -> bool {
        let stopped = self.interrupt.load(Ordering::Relaxed);
        self.live.doc.interrupted |= stopped;
        stopped
    }

    /// The pause between steps (so the server drains), cut short by a stop signal; true when one came.
    pub fn pause(&mut self, d: Duration) -> bool {
        if let Some(live) = &self.shown {
            live.pausing();
        }
        crate::base::stop::pause(d, self.interrupt);
        self.stopped()
    }

    /// Measures one step of `plan` (see [`measure_step`]); whether a stop signal ended it. The first step starts
    /// the dashboard and the push its plan asks for; the step's own figures are shown and pushed when it ends. Its
    /// windows go to the HDR log as they complete.
    pub fn measure(
        &mut self,
        plan: &RunPlan,
        label: &str,
        warmup: Option<Duration>,
        watchers: &Watchers,
    ) -> (StepResult, bool) {
        if self.shown.is_none() {
            let run_id = crate::live::new_run_id();
            if plan.live.push.is_some() {
                // So the pushed series and the document find each other.
                self.live.doc.settings.labels.insert("run_id".into(), run_id.clone());
            }
            self.shown = Some(Live::start(plan, &self.live.doc.settings.labels, &run_id));
        }
        let mut failure = None;
        if let Some(path) = self.hdr_path.clone().filter(|_| self.hdr.is_none()) {
            match HdrLog::create(&path) {
                Ok(log) => self.hdr = Some(log),
                Err(e) => failure = Some(e),
            }
        }
        if let Some(Err(e)) = self.hdr.as_mut().map(|log| log.step(label, self.hdr_by_step)) {
            failure = Some(e);
        }
        let service = matches!(plan.load, crate::base::load::LoadModel::Open { .. });
        let hdr = &mut self.hdr;
        let live = self.shown.as_mut().expect("started above");
        let (step, interrupted) = measure_step(plan, label, warmup, watchers, self.interrupt, live, &mut |w| {
            if let Some(Err(e)) = hdr.as_mut().map(|log| log.window(w, service)) {
                failure = Some(e);
                *hdr = None;
            }
        });
        live.step_done(&step);
        for w in live.take_warnings() {
            self.warn_now(&w);
        }
        if let Some(e) = failure {
            self.hdr_failed(&e);
        }
        if plan.rows_ran_out() && !self.rows_ran_out {
            // Said once, where it happened: a rate or a later step that fell short did so for want of rows.
            self.rows_ran_out = true;
            self.note(&format!(
                "--data-order unique: every row of the data file was sent once by the end of step '{label}'; the \
                 load ended there, and any later step had no row left to send"
            ));
        }
        (step, interrupted)
    }

    /// The HDR log could not be written: said once, and no more rows are written (the document holds every
    /// figure; the log is then incomplete, and the warning says so).
    fn hdr_failed(&mut self, e: &std::io::Error) {
        if let Some(path) = self.hdr_path.take() {
            self.hdr = None;
            self.note(&format!(
                "--hdr-log '{}': cannot write it ({e}); the HDR log stops here, the result document holds every figure",
                path.display()
            ));
        }
    }

    /// Keeps a finished step and rewrites the files, so a failure or a signal later leaves it on disk.
    pub fn keep(&mut self, step: StepResult, interrupted: bool) -> Result<(), CliError> {
        if self.wrong.is_none() {
            self.wrong = first_wrong(std::slice::from_ref(&step));
        }
        let i = self.live.doc.steps.len() + 1;
        self.live.doc.steps.push(step);
        self.live.doc.interrupted |= interrupted;
        self.live.refresh_warnings();
        if self.runs > 1 {
            // Ctrl-C in run 3 keeps runs 1 and 2 whole, and run 3 marked as cut short.
            self.live.doc.runs = RunsSummary::of(&self.live.doc.steps, self.runs, interrupted.then_some(i));
        }
        if self.each {
            self.live.write()?;
        }
        Ok(())
    }

    /// A capacity search's answer, for the analysis the run ends with.
    pub fn answer(&mut self, answer: CapacityAnswer) {
        self.capacity = Some(answer);
    }

    /// A wrong answer was found (a checked workload stops at the first).
    pub fn found_wrong(&self) -> bool {
        self.wrong.is_some()
    }

    /// Ends the run: the gates judged on every step merged, the analysis of a sweep, the text, the files written a
    /// last time, the history; then the one exit code of every measuring command.
    pub fn end(mut self, ending: Ending) -> Result<ExitCode, CliError> {
        // The dashboard gives the terminal back first, then what was said under it, so the scrollback holds it all.
        if let Some(live) = self.shown.take() {
            let warnings = live.close();
            for (warning, text) in self.deferred.take() {
                if warning {
                    eprintln!("hakaru: warning: {text}");
                } else {
                    self.live.say(&text);
                }
            }
            for w in warnings {
                self.note(&w);
            }
        }
        let doc = &mut self.live.doc;
        doc.thresholds = gates::judge(doc, &self.thresholds);
        if ending == Ending::Analysis {
            let capacity = self.capacity.take().or_else(|| doc.analysis.as_ref().and_then(|a| a.capacity.clone()));
            doc.analysis = crate::judge::analysis::analyse(&doc.steps, doc.settings.sweep.as_ref()).map(|mut a| {
                a.capacity = capacity;
                a
            });
        }
        if ending != Ending::Analysis && doc.settings.ramp.is_some() {
            // A ramp's knee, from the windows of its (last) step.
            doc.analysis = doc.steps.last().and_then(crate::judge::analysis::analyse_ramp);
        }
        // A signal in the pause after the last step came after the last refresh: the warnings must still say so.
        self.live.refresh_warnings();
        match ending {
            Ending::Summary => self.say(Text.render(&self.live.doc).trim_end()),
            Ending::Checked(_) => {
                self.say("");
                self.say(Text.render(&self.live.doc).trim_end());
            }
            Ending::Analysis => {}
        }
        // The history is written even when a file could not be: one more place the measurement survives.
        let written = self.live.write_final();
        self.sink.record(&self.live.doc);
        written?;
        match ending {
            Ending::Analysis => {
                for line in closing_lines(&self.live.doc) {
                    self.say(&line);
                }
            }
            Ending::Checked(checked) if !self.live.doc.interrupted => match &self.wrong {
                // Kyoto's tools end a failed check with the seed that replays it.
                Some(sample) => self.say(&format!("FAILED: {sample}")),
                None if checked => self.say("checked: every answer right"),
                None => {}
            },
            _ => {}
        }
        let code = exit_code(&self.live.doc, self.wrong.is_some());
        if code == EXIT_FAILED && self.wrong.is_none() {
            // Said last, in the one line a study's case log or a script reads for why the run failed.
            let steps = &self.live.doc.steps;
            let failed: u64 = steps.iter().map(|s| s.failed).sum();
            let unfinished: u64 = steps.iter().map(|s| s.unfinished).sum();
            eprintln!(
                "hakaru: error: not one request succeeded ({failed} failed, {unfinished} unfinished when the time ran \
                 out): there is no measurement of the service"
            );
        }
        Ok(ExitCode::from(code))
    }
}

/// The first wrong answer a checked workload recorded in `steps` (its sample names the seed that replays it).
fn first_wrong(steps: &[StepResult]) -> Option<String> {
    steps.iter().flat_map(|s| &s.error_kinds).find(|e| e.kind == ErrorKind::WrongValue.key()).map(|e| e.sample.clone())
}

/// The exit code of a measured run, for every command: 128 + the signal when one stopped it; 1 when a checked
/// workload found a wrong answer or not one request succeeded, failed or never completed (there is no measurement
/// of the service, and scripts must not take it for one); 99 when a `--threshold` is broken; else 0.
pub fn exit_code(doc: &ResultDocument, wrong: bool) -> u8 {
    // Every step ended without one success: all failed, or none completed (a server that never answers).
    let nothing_succeeded = !doc.steps.is_empty() && doc.steps.iter().all(|s| s.ok == 0);
    if doc.interrupted {
        crate::base::stop::exit_code()
    } else if wrong {
        EXIT_FAILED
    } else if gates::any_broken(&doc.thresholds) {
        gates::EXIT_THRESHOLDS
    } else if nothing_succeeded {
        EXIT_FAILED
    } else {
        0
    }
}
