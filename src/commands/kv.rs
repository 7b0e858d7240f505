//! `hakaru kv`: a Redis or memcached server under a workload. A mix runs and prints as `run` does; the phased
//! workloads (Kyoto's order and wicked, YCSB's load and run) run a step per phase into one document and print a
//! line per phase as the Kyoto tools do (`time:`), then the summary.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use crate::cli::args::{KvArgs, SweepStudy};
use crate::engine;
use crate::error::UsageError;
use crate::export::{Exporter, csv::Csv, drnbench::DrnbenchCsv, json::Json, sweep_csv::SweepCsv, text::Text};
use crate::metrics::ErrorKind;
use crate::plan::kv::KvPlan;
use crate::plan::{self, RunPlan};
use crate::result::{StepResult, SweepSettings};
use crate::step::{LiveDocument, measure_step, pause};

/// The pause between the steps of a `--clients` or `--rates` sweep, so the server drains.
const SWEEP_PAUSE: std::time::Duration = std::time::Duration::from_secs(1);

pub fn kv(args: &KvArgs, interrupt: &AtomicBool) -> Result<ExitCode, UsageError> {
    let mut kv = KvPlan::from_args(args)?;
    // Every flag is checked before the server is asked anything.
    let repeat = super::run::Repeat::from_args(&args.load)?;
    let watchers = plan::watchers(&args.watch, &kv.steps[0].1.endpoints)?;
    engine::preflight(&kv.steps[0].1)?;
    // Before anything is written or deleted: what the servers hold, judged (a refusal is bad input, exit 2).
    let holdings = engine::survey::survey(&kv.steps[0].1, kv.guard.keys_to_check())?;
    let notes = kv.guard.judge(&holdings)?;
    kv.steps[0].1.notes.extend(notes);
    let first = &kv.steps[0].1;
    let answers = engine::setup(first, &kv.setup)?;
    if let Some(sha) = &kv.script_sha {
        let loaded = answers.first().map(|v| String::from_utf8_lossy(v).into_owned()).unwrap_or_default();
        if &loaded != sha {
            return Err(UsageError::new(format!(
                "--script: the server named the script {loaded}, not its SHA1 {sha}; is it Redis?"
            )));
        }
    }
    let history = super::history::Recorder::from_args(&args.load.history)?;
    // A wrong answer must end in FAILED and exit code 1, which the phase runner says: Kyoto's workloads go there
    // even with one step.
    if kv.steps.len() == 1 && kv.warmup.is_none() && !kv.kyoto && kv.sweep.is_none() {
        return super::run::run_plan(first, &watchers, &repeat, &history, interrupt);
    }
    if repeat.runs > 1 {
        return Err(UsageError::new(format!(
            "--runs {}: repeated runs are for a mix (or commands); run {} again instead",
            repeat.runs, kv.workload
        )));
    }
    run_phases(&kv, &watchers, &history, &repeat.thresholds, args.from_sweep.as_ref(), interrupt)
}

/// The steps one after another into one document, a line for each as it ends.
fn run_phases(
    kv: &KvPlan,
    watchers: &crate::monitor::Watchers,
    history: &super::history::Recorder,
    thresholds: &[crate::gates::Threshold],
    study: Option<&SweepStudy>,
    interrupt: &AtomicBool,
) -> Result<ExitCode, UsageError> {
    let first: &RunPlan = &kv.steps[0].1;
    let mut outputs: Vec<(std::path::PathBuf, Box<dyn Exporter>)> = Vec::new();
    if let Some(p) = &first.json {
        outputs.push((p.clone(), Box::new(Json)));
    }
    if let Some(p) = &first.csv {
        outputs.push((p.clone(), Box::new(Csv)));
    }
    // `hakaru sweep` writes its own files: drnbench's CSV (-o) and the wide CSV of a row per step.
    if let Some(p) = study.and_then(|s| s.drnbench_csv.as_ref()) {
        outputs.push((p.clone(), Box::new(DrnbenchCsv)));
    }
    if let Some(p) = study.and_then(|s| s.csv.as_ref()) {
        outputs.push((p.clone(), Box::new(SweepCsv)));
    }
    let sweep_pause = study.map_or(SWEEP_PAUSE, |s| s.interval);
    let mut settings = first.settings.clone();
    settings.method = kv.workload.clone();
    if let Some((kind, values)) = &kv.sweep {
        settings.sweep = Some(SweepSettings {
            kind: kind.clone(),
            values: values.clone(),
            step_duration_s: first.settings.duration_s.unwrap_or(0.0),
            interval_s: sweep_pause.as_secs_f64(),
            warmup_s: kv.warmup.map_or(0.0, |w| w.as_secs_f64()),
            wait_s: 0.0,
            slo: None,
            max_errors_percent: Some(study.map_or(1.0, |s| s.max_error_percent)),
        });
    }
    let mut live = LiveDocument::new(settings, true, outputs);
    live.doc.settings.labels = history.labels.clone();
    super::check_open_files(&mut live, first.connections, first.threads);
    super::notes(&mut live, &first.notes);
    if kv.workload == "wicked" && !kv.guard.flush && !kv.verify {
        super::notes(
            &mut live,
            &["wicked's clear at half way (Kyoto's) is left out: it would delete what others write meanwhile; --flush keeps it"
                .to_string()],
        );
    }
    if kv.workload == "order" && first.protocol == crate::protocol::Protocol::Memcache && kv.steps.len() > 3 {
        super::notes(&mut live, &["memcached cannot iterate over its keys: the walk phase is skipped".to_string()]);
    }
    live.say(&format!("hakaru kv {}  {}", kv.workload, first.settings.targets.join(" ")));
    let mut wrong = None;
    for (i, (label, plan)) in kv.steps.iter().enumerate() {
        if i > 0 && kv.sweep.is_some() {
            pause(sweep_pause, interrupt);
        }
        let (step, interrupted) = measure_step(plan, label, kv.warmup, watchers, interrupt);
        live.say(&phase_line(&step, kv.kyoto));
        if wrong.is_none() {
            wrong = step.error_kinds.iter().find(|e| e.kind == ErrorKind::WrongValue.key()).map(|e| e.sample.clone());
        }
        live.push(step, interrupted)?;
        if interrupted || (wrong.is_some() && kv.kyoto) {
            break;
        }
    }
    // Judged on every step merged, as `run` and `sweep` judge (see gates.rs).
    live.doc.thresholds = crate::gates::judge(&live.doc, thresholds);
    let broken = crate::gates::any_broken(&live.doc.thresholds);
    if kv.sweep.is_some() {
        // A sweep ends as `hakaru sweep` does: the analysis (plateau, knee, bottleneck) and the warnings.
        super::finish(&mut live, history)?;
        return Ok(if live.doc.interrupted {
            ExitCode::from(crate::stop::exit_code())
        } else if broken {
            ExitCode::from(crate::gates::EXIT_THRESHOLDS)
        } else {
            ExitCode::SUCCESS
        });
    }
    live.refresh_warnings();
    live.say("");
    live.say(Text.render(&live.doc).trim_end());
    // The history is written even when a file could not be: one more place the measurement survives.
    let written = live.write_final();
    history.record(&live.doc);
    written?;
    if live.doc.interrupted {
        return Ok(ExitCode::from(crate::stop::exit_code()));
    }
    if let Some(sample) = wrong {
        // Kyoto's tools end a failed check with the seed that replays it.
        live.say(&format!("FAILED: {}", sample));
        return Ok(ExitCode::from(1));
    }
    live.say("ok");
    Ok(if broken { ExitCode::from(crate::gates::EXIT_THRESHOLDS) } else { ExitCode::SUCCESS })
}

/// One phase, as the Kyoto tools print it (`time:` in seconds) with hakaru's figures beside.
fn phase_line(step: &StepResult, kyoto: bool) -> String {
    let time = if kyoto { format!("  time: {:.3}", step.duration_s) } else { String::new() };
    format!(
        "{:<12} count: {:<9} ok: {:<9} failed: {:<6}{time}  ops/s: {:.0}  p50 {:.3} ms  p99 {:.3} ms",
        step.label,
        step.requests,
        step.ok,
        step.failed,
        step.throughput.ok_per_s,
        percentile_ms(step, "p50"),
        percentile_ms(step, "p99"),
    )
}

fn percentile_ms(step: &StepResult, p: &str) -> f64 {
    step.latency.percentiles.get(p).copied().unwrap_or(0) as f64 / 1000.0
}
