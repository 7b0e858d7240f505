//! `hakaru sweep`: the load swept over client counts (drnbench-request-response) or rates, one step each, a table
//! line as each step ends, the files rewritten after every step, and an analysis at the end.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::probe_names;
use crate::base::load::{LoadModel, Until};
use crate::cli::args::SweepArgs;
use crate::engine;
use crate::error::CliError;
use crate::export::table::{table_header, table_row};
use crate::plan::segment::Scale;
use crate::plan::steps::{Steps, StepsPlan, flag_duration_or_zero, sweep_steps};
use crate::plan::{RunPlan, arrival};
use crate::result::SweepSettings;
use crate::run::session::{Ending, Session};

pub fn sweep(a: &SweepArgs, interrupt: &AtomicBool) -> Result<ExitCode, CliError> {
    // Redis and memcached are swept by `kv`'s engine and workload, into the same sweep document.
    if let Some(kv) = crate::plan::kv::from_sweep(a)? {
        return super::kv::kv(&kv, interrupt);
    }
    let steps = sweep_steps(a)?;
    let thresholds = crate::judge::gates::parse_all("--threshold", &a.thresholds)?;
    crate::judge::gates::check_events("--threshold", &thresholds, a.request.events.as_deref())?;
    let flag_wait = a.wait.as_deref().map(|w| flag_duration_or_zero("--wait", w)).transpose()?;
    let parts = StepsPlan::from_args(&a.request, &a.watch, &a.steps)?;
    let history = super::history::recorder(&a.steps.history)?;
    // --wait, else the pattern file's "wait" (drnbench's files may carry one), else none.
    let wait = flag_wait.or(parts.set.wait.map(Duration::from_secs_f64)).unwrap_or(Duration::ZERO);
    let (duration, interval, warmup) = (parts.duration, parts.interval, parts.warmup);
    let set = &parts.set;
    let scale = Scale::from_args(&a.steps.scale)?;
    if let Some(seg) = scale.segment {
        // Every step must split: checked before the first step, not found at the fifth.
        let fewest = match &steps {
            Steps::Clients(list) => list.iter().copied().min().unwrap_or(1),
            Steps::Rates(_) => a.steps.connections,
        };
        if fewest < seg.count {
            return Err(CliError::new(format!(
                "--segment {}: a step with {fewest} connection(s) cannot be split over {} agents; give every step at least {} clients",
                seg.label(),
                seg.count,
                seg.count
            )));
        }
    }
    // One plan per step, built as the step begins: a large pattern file is held once, not once per step.
    let plan_of = |i: usize| -> (String, RunPlan) {
        let stop = Until::Duration(duration);
        let mut plan = match &steps {
            Steps::Clients(list) => {
                let c = list[i];
                let load = LoadModel::Closed { think: wait };
                (format!("c={c}"), RunPlan::new(set, "sweep", c, a.steps.threads, stop, load))
            }
            Steps::Rates(list) => {
                let rate = list[i];
                let load = LoadModel::Open { rate, arrival: arrival(a.steps.arrival) };
                (format!("rate={rate}"), RunPlan::new(set, "sweep", a.steps.connections, a.steps.threads, stop, load))
            }
        };
        plan.1.quiet = a.steps.quiet;
        plan.1.live = parts.live.clone();
        parts.over_time(&mut plan.1);
        // The agents start the first step together; the later ones follow as each agent's steps end (on time:
        // the steps are timed).
        let step_scale = Scale { start_at: scale.start_at.filter(|_| i == 0), ..scale };
        let scaled = plan.1.scaled(&step_scale).expect("every step's split was checked above");
        (plan.0, scaled)
    };
    let first = plan_of(0).1;
    let mut settings = first.settings.clone();
    settings.prompts = a.prompts.clone();
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
    crate::plan::steps::require_range(a)?;
    let most = match &steps {
        Steps::Clients(list) => list.iter().copied().max().unwrap_or(1),
        Steps::Rates(_) => a.steps.connections,
    };
    // The widest step too, before anything is made: the first may be small and a later one past what fits.
    let mut widest = first.clone();
    widest.connections = most;
    engine::too_many_clients(&widest)?;
    drop(widest);
    engine::preflight(&first)?;
    let first_threads = first.threads;
    drop(first);
    let mut session =
        Session::new(settings, set.keepalive, &parts.outputs(), thresholds, &history, interrupt).steps_apart();
    session.prepare(most, first_threads, &parts.set.warnings, Some(&parts.watchers));
    let rates = matches!(steps, Steps::Rates(_));
    session.say(&format!("hakaru sweep  {}", set.targets.join(" ")));
    let streamed = set.events.is_some();
    session.say(&table_header(rates, streamed, &probe_names(&parts)));
    for i in 0..steps.len() {
        if (i > 0 && session.pause(interval)) || session.stopped() {
            break;
        }
        let (label, plan) = plan_of(i);
        let (step, interrupted) = session.measure(&plan, &label, Some(warmup), &parts.watchers);
        if interrupted && step.requests == 0 {
            // Stopped before the step measured anything (during its warm-up): nothing to keep.
            session.stopped();
            break;
        }
        session.say(&table_row(&step, rates, streamed));
        session.keep(step, interrupted)?;
        if interrupted {
            break;
        }
    }
    // Judged on every step merged, as k6 judges a whole test (see gates.rs).
    session.end(Ending::Analysis)
}
