//! `hakaru kv`: a Redis or memcached server under a workload. A mix runs and prints as `run` does; the phased
//! workloads (Kyoto's order and wicked, YCSB's load and run) run a step per phase into one document and print a
//! line per phase as the Kyoto tools do (`time:`), then the summary.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use crate::cli::args::{KvArgs, KvSweep};
use crate::engine;
use crate::error::CliError;
use crate::export::table::{table_header, table_row};
use crate::history::Recorder;
use crate::plan::kv::KvPlan;
use crate::plan::{self, Outputs, RunPlan};
use crate::result::{StepResult, SweepSettings};
use crate::run::session::{Ending, Session};

/// The pause between the steps of a `--clients` or `--rates` sweep, so the server drains.
const SWEEP_PAUSE: std::time::Duration = std::time::Duration::from_secs(1);

pub fn kv(args: &KvArgs, interrupt: &AtomicBool) -> Result<ExitCode, CliError> {
    let mut kv = KvPlan::from_args(args)?;
    if let Some(preview) = &kv.steps[0].1.replay_preview {
        // `--replay --dry-run`: the capture read and checked whole, nothing sent.
        crate::println!("{preview}");
        return Ok(ExitCode::SUCCESS);
    }
    // Every flag is checked before the server is asked anything.
    let repeat = super::run::Repeat::from_args(&args.load)?;
    crate::judge::gates::check_events("--threshold", &repeat.thresholds, None)?;
    let watchers = plan::watchers(&args.watch, &kv.steps[0].1.endpoints)?;
    // Every step's clients fit (a `--clients` list's later steps may be wider than the first).
    for (_, step) in &kv.steps {
        engine::too_many_clients(step)?;
    }
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
            return Err(CliError::new(format!(
                "--script: the server named the script {loaded}, not its SHA1 {sha}; is it Redis?"
            )));
        }
    }
    let history = super::history::recorder(&args.load.history)?;
    // A wrong answer must end in FAILED and exit code 1, which the phase runner says: Kyoto's workloads go there
    // even with one step.
    if kv.steps.len() == 1 && kv.warmup.is_none() && !kv.kyoto && kv.sweep.is_none() {
        return super::run::run_plan(first, &watchers, &repeat, &history, interrupt);
    }
    if repeat.runs > 1 {
        return Err(CliError::new(format!(
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
    history: &Recorder,
    thresholds: &[crate::judge::gates::Threshold],
    study: Option<&KvSweep>,
    interrupt: &AtomicBool,
) -> Result<ExitCode, CliError> {
    let first: &RunPlan = &kv.steps[0].1;
    // `hakaru sweep` writes its own files: drnbench's CSV (-o) and the wide CSV of a row per step.
    let outputs = match study {
        Some(s) => Outputs {
            json: first.json.clone(),
            csv: s.csv.clone(),
            wide: true,
            drnbench: s.drnbench_csv.clone(),
            hdr_log: first.hdr_log.clone(),
        },
        None => Outputs {
            json: first.json.clone(),
            csv: first.csv.clone(),
            hdr_log: first.hdr_log.clone(),
            ..Outputs::default()
        },
    };
    let sweep_pause = study.map_or(SWEEP_PAUSE, |s| s.interval);
    let mut settings = first.settings.clone();
    settings.method = kv.workload.clone();
    if kv.sweep.is_none() {
        // The header speaks for the whole run, not its first phase: YCSB's load phase inserts --records, its run
        // phase sends -n (or lasts -d).
        let counts: Option<Vec<u64>> = kv.steps.iter().map(|(_, p)| p.settings.requests).collect();
        settings.requests = counts.map(|n| n.iter().sum());
        settings.duration_s = kv.steps.iter().find_map(|(_, p)| p.settings.duration_s);
        // An agent's whole plan counts the same way, so `merge` finds each segment's requests its share.
        if let Some(whole) = settings.whole_plan.as_mut() {
            let wholes: Option<Vec<u64>> =
                kv.steps.iter().map(|(_, p)| p.settings.whole_plan.as_ref().and_then(|w| w.requests)).collect();
            whole.requests = wholes.map(|n| n.iter().sum());
        }
    }
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
    let mut session = Session::new(settings, true, &outputs, thresholds.to_vec(), history, interrupt);
    if kv.steps.len() > 1 {
        session = session.steps_apart();
    }
    let mut notes = first.notes.clone();
    if kv.workload == "wicked" && !kv.guard.flush && !kv.verify {
        notes.push(
            "wicked's clear at half way (Kyoto's) is left out: it would delete what others write meanwhile; --flush keeps it"
                .to_string(),
        );
    }
    if kv.workload == "order" && first.wire.protocol() == crate::protocol::Protocol::Memcache && kv.steps.len() > 3 {
        notes.push("memcached cannot iterate over its keys: the walk phase is skipped".to_string());
    }
    session.prepare(first.connections, first.threads, &notes, None);
    let targets = first.settings.targets.join(" ");
    // A sweep prints `hakaru sweep`'s table (CPU columns and all) and `hakaru show` prints it again the same way;
    // phases print a line each as the Kyoto tools do.
    let table = kv.sweep.as_ref().map(|(kind, _)| kind != "clients");
    match table {
        Some(rates) => {
            session.say(&format!("hakaru {}  {targets}", session.live.doc.settings.command));
            let probes: Vec<&str> = watchers.probes.iter().map(|p| p.name.as_str()).collect();
            session.say(&table_header(rates, false, &probes));
        }
        None => session.say(&format!("hakaru kv {}  {targets}", kv.workload)),
    }
    for (i, (label, plan)) in kv.steps.iter().enumerate() {
        if i > 0 && kv.sweep.is_some() && session.pause(sweep_pause) {
            break;
        }
        let (step, interrupted) = session.measure(plan, label, kv.warmup, watchers);
        session.say(&match table {
            Some(rates) => table_row(&step, rates, false),
            None => phase_line(&step, kv.kyoto),
        });
        session.keep(step, interrupted)?;
        if interrupted || (session.found_wrong() && kv.kyoto) {
            break;
        }
    }
    // Judged on every step merged, as `run` and `sweep` judge (see gates.rs); a sweep ends as `hakaru sweep` does.
    // Only order (its reads) and wicked --verify check the answers: the others have no check to report.
    let checked = kv.workload == "order" || kv.verify;
    session.end(if kv.sweep.is_some() { Ending::Analysis } else { Ending::Checked(checked) })
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
