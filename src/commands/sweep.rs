//! `hakaru sweep`: the load swept over client counts (drnbench-request-response) or rates, one step each, a table
//! line as each step ends, the files rewritten after every step, and an analysis at the end.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::{finish, probe_names, step_outputs};
use crate::cli::args::SweepArgs;
use crate::engine;
use crate::error::UsageError;
use crate::export::table::{table_header, table_row};
use crate::load::{LoadModel, Stop};
use crate::plan::segment::Scale;
use crate::plan::steps::{Steps, StepsPlan, flag_duration_or_zero, sweep_steps};
use crate::plan::{RunPlan, arrival};
use crate::result::SweepSettings;
use crate::step::{LiveDocument, measure_step, pause};

pub fn sweep(a: &SweepArgs, interrupt: &AtomicBool) -> Result<ExitCode, UsageError> {
    // Redis and memcached are swept by `kv`'s engine and workload, into the same sweep document.
    if let Some(kv) = crate::plan::kv::from_sweep(a)? {
        return super::kv::kv(&kv, interrupt);
    }
    let steps = sweep_steps(a)?;
    let thresholds = crate::gates::parse_all("--threshold", &a.thresholds)?;
    let flag_wait = a.wait.as_deref().map(|w| flag_duration_or_zero("--wait", w)).transpose()?;
    let parts = StepsPlan::from_args(&a.request, &a.watch, &a.study)?;
    let history = super::history::Recorder::from_args(&a.study.history)?;
    // --wait, else the pattern file's "wait" (drnbench's files may carry one), else none.
    let wait = flag_wait.or(parts.set.wait.map(Duration::from_secs_f64)).unwrap_or(Duration::ZERO);
    let (duration, interval, warmup) = (parts.duration, parts.interval, parts.warmup);
    let set = &parts.set;
    let scale = Scale::from_args(&a.study.scale)?;
    if let Some(seg) = scale.segment {
        // Every step must split: checked before the first step, not found at the fifth.
        let fewest = match &steps {
            Steps::Clients(list) => list.iter().copied().min().unwrap_or(1),
            Steps::Rates(_) => a.study.connections,
        };
        if fewest < seg.count {
            return Err(UsageError::new(format!(
                "--segment {}: a step with {fewest} connection(s) cannot be split over {} agents; give every step at least {} clients",
                seg.label(),
                seg.count,
                seg.count
            )));
        }
    }
    // One plan per step, built as the step begins: a large pattern file is held once, not once per step.
    let plan_of = |i: usize| -> (String, RunPlan) {
        let stop = Stop::Duration(duration);
        let mut plan = match &steps {
            Steps::Clients(list) => {
                let c = list[i];
                let load = LoadModel::Closed { think: wait };
                (format!("c={c}"), RunPlan::new(set, "sweep", c, a.study.threads, stop, load))
            }
            Steps::Rates(list) => {
                let rate = list[i];
                let load = LoadModel::Open { rate, arrival: arrival(a.study.arrival) };
                (format!("rate={rate}"), RunPlan::new(set, "sweep", a.study.connections, a.study.threads, stop, load))
            }
        };
        plan.1.quiet = a.study.quiet;
        // The agents start the first step together; the later ones follow as each agent's steps end (on time:
        // the steps are timed).
        let step_scale = Scale { start_at: scale.start_at.filter(|_| i == 0), ..scale };
        let scaled = plan.1.scaled(&step_scale).expect("every step's split was checked above");
        (plan.0, scaled)
    };
    let first = plan_of(0).1;
    let mut settings = first.settings.clone();
    settings.sweep = Some(SweepSettings {
        kind: match steps {
            Steps::Clients(_) => "clients".into(),
            Steps::Rates(_) => "rates".into(),
        },
        values: match &steps {
            Steps::Clients(c) => c.iter().map(|&x| x as f64).collect(),
            Steps::Rates(r) => r.clone(),
        },
        step_duration_s: duration.as_secs_f64(),
        interval_s: interval.as_secs_f64(),
        warmup_s: warmup.as_secs_f64(),
        wait_s: wait.as_secs_f64(),
        slo: None,
        max_errors_percent: Some(parts.max_error_percent),
    });
    engine::preflight(&first)?;
    let first_threads = first.threads;
    drop(first);
    let mut live = LiveDocument::new(settings, set.keepalive, step_outputs(&parts));
    live.doc.settings.labels = history.labels.clone();
    let most = match &steps {
        Steps::Clients(list) => list.iter().copied().max().unwrap_or(1),
        Steps::Rates(_) => a.study.connections,
    };
    super::check_open_files(&mut live, most, first_threads);
    super::notes(&mut live, &parts.set.warnings);
    live.expected_hit_rate = parts.watchers.expected_hit_rate;
    let rates = matches!(steps, Steps::Rates(_));
    live.say(&format!("hakaru sweep  {}", set.targets.join(" ")));
    live.say(&table_header(rates, &probe_names(&parts)));
    for i in 0..steps.len() {
        if i > 0 {
            pause(interval, interrupt);
        }
        if interrupt.load(Ordering::Relaxed) {
            live.doc.interrupted = true;
            break;
        }
        let (label, plan) = plan_of(i);
        let (step, interrupted) = measure_step(&plan, &label, Some(warmup), &parts.watchers, interrupt);
        if interrupted && step.requests == 0 {
            // Stopped before the step measured anything (during its warm-up): nothing to keep.
            live.doc.interrupted = true;
            break;
        }
        live.say(&table_row(&step, rates));
        live.push(step, interrupted)?;
        if interrupted {
            break;
        }
    }
    // Judged on every step merged, as k6 judges a whole test (see gates.rs).
    live.doc.thresholds = crate::gates::judge(&live.doc, &thresholds);
    finish(&mut live, &history)?;
    Ok(if live.doc.interrupted {
        ExitCode::from(crate::stop::exit_code())
    } else if crate::gates::any_broken(&live.doc.thresholds) {
        ExitCode::from(crate::gates::EXIT_THRESHOLDS)
    } else {
        ExitCode::SUCCESS
    })
}
