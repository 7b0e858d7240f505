//! `hakaru capacity --slo 'p99<50ms'`: the highest open-loop rate that meets a latency objective, found by
//! doubling the rate until a step fails, then bisecting between the last pass and the first failure.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use super::probe_names;
use crate::base::load::{LoadModel, Until};
use crate::cli::args::CapacityArgs;
use crate::engine;
use crate::error::CliError;
use crate::export::table::{table_header, table_row};
use crate::export::text::answer_line;
use crate::plan::slo::{Slo, parse_percent};
use crate::plan::steps::StepsPlan;
use crate::plan::{RunPlan, arrival, parse_rate};
use crate::result::{CapacityAnswer, StepResult, SweepSettings};
use crate::run::session::{Ending, Session};

/// At most this many steps, whatever the precision asked.
const MAX_STEPS: usize = 30;

/// Whether a step passes: the objective, the failure budget, and the rate actually reached. `random`: arrivals are
/// Poisson's (or gamma's), so the count sent in a step varies by chance around rate x length: a shortfall within
/// three standard deviations (3 x its square root) is chance, not a rate hakaru could not send.
fn verdict(slo: &Slo, max_failed_percent: f64, step: &StepResult, random: bool) -> Result<(), String> {
    // Failures first: a step that answered 503s fast must not pass on its (few) successes' latency.
    if step.failed_percent() > max_failed_percent {
        return Err(format!("failed {:.2} % > {max_failed_percent} % ({})", step.failed_percent(), step.failure_mix()));
    }
    if let Some(v) = slo.violation(step) {
        return Err(v);
    }
    if let Some(s) = &step.schedule {
        // A rate hakaru could not send is not a rate the server was shown to meet.
        let expected = s.target_rate * step.duration_s;
        let least = match random {
            true => (0.95 * expected).min(expected - 3.0 * expected.sqrt()),
            false => 0.95 * expected,
        };
        if s.achieved_rate * step.duration_s < least {
            return Err(format!("achieved {:.1}/s of {:.1}/s", s.achieved_rate, s.target_rate));
        }
    }
    Ok(())
}

pub fn capacity(a: &CapacityArgs, interrupt: &AtomicBool) -> Result<ExitCode, CliError> {
    let slo = Slo::parse(&a.slo)?;
    if slo.goodput_percent.is_some() && a.request.goodput.is_none() {
        return Err(CliError::new(format!(
            "--slo '{}': goodput needs the objectives each answer meets: give --goodput, e.g. --goodput ttft:200ms",
            slo.text
        )));
    }
    for figure in slo.bounds.iter().filter_map(|b| b.figure) {
        figure
            .measured_with(a.request.events.as_deref())
            .map_err(|why| CliError::new(format!("--slo '{}': {why}", slo.text)))?;
    }
    let precision = parse_percent("--precision", &a.precision)? / 100.0;
    if precision <= 0.0 {
        return Err(CliError::new(format!("--precision '{}': must be more than 0; try 5%", a.precision)));
    }
    let start = parse_rate("--rate-start", a.rate_start)?;
    let max = parse_rate("--rate-max", a.rate_max)?;
    if max < start {
        return Err(CliError::new(format!("--rate-max {max} is below --rate-start {start}")));
    }
    if a.steps.scale.agents.is_some() {
        return Err(CliError::new("--agents: not for capacity: agents searching apart would each decide alone"));
    }
    if a.steps.scale.segment.is_some() || a.steps.scale.start_at.is_some() {
        return Err(CliError::new(
            "--segment and --start-at are for run, sweep and kv: agents searching for a capacity apart would each decide alone",
        ));
    }
    let parts = StepsPlan::from_args(&a.request, &a.watch, &a.steps)?;
    let history = super::history::recorder(&a.steps.history)?;
    let (duration, interval, warmup) = (parts.duration, parts.interval, parts.warmup);
    let max_errors = parts.max_error_percent;
    let set = &parts.set;
    let plan_at = |rate: f64| {
        let load = LoadModel::Open { rate, arrival: arrival(a.steps.arrival) };
        let mut plan =
            RunPlan::new(set, "capacity", a.steps.connections, a.steps.threads, Until::Duration(duration), load);
        plan.quiet = a.steps.quiet;
        plan.live = parts.live.clone();
        parts.over_time(&mut plan);
        plan
    };
    let first = plan_at(start);
    engine::preflight(&first)?;
    let mut settings = first.settings.clone();
    settings.prompts = a.prompts.clone();
    settings.sweep = Some(SweepSettings {
        kind: "capacity".into(),
        values: vec![start],
        step_duration_s: duration.as_secs_f64(),
        interval_s: interval.as_secs_f64(),
        warmup_s: warmup.as_secs_f64(),
        wait_s: 0.0,
        slo: Some(slo.text.clone()),
        max_errors_percent: Some(max_errors),
    });
    let mut session =
        Session::new(settings, set.keepalive, &parts.outputs(), Vec::new(), &history, interrupt).steps_apart();
    session.prepare(first.connections, first.threads, &parts.set.warnings, Some(&parts.watchers));
    session
        .say(&format!("hakaru capacity  {}  objective {slo}, failures at most {max_errors} %", set.targets.join(" ")));
    let streamed = set.events.is_some();
    session.say(&format!("{}  verdict", table_header(true, streamed, &probe_names(&parts))));

    let (mut pass, mut fail): (Option<f64>, Option<f64>) = (None, None);
    let mut rate = start;
    for i in 0..MAX_STEPS {
        if (i > 0 && session.pause(interval)) || session.stopped() {
            break;
        }
        let plan = plan_at(rate);
        // The rate as asked: a bisection's 1.5/s is not labelled 2.
        let (step, interrupted) = session.measure(&plan, &format!("rate={rate}"), Some(warmup), &parts.watchers);
        if interrupted && step.requests == 0 {
            // Stopped before the step measured anything (during its warm-up): nothing to keep.
            session.stopped();
            break;
        }
        let random = a.steps.arrival == crate::cli::args::ArrivalArg::Poisson || plan.settings.burstiness.is_some();
        let outcome = verdict(&slo, max_errors, &step, random);
        session.say(&format!(
            "{}  {}",
            table_row(&step, true, streamed),
            match &outcome {
                Ok(()) => "meets".to_string(),
                Err(why) => format!("fails: {why}"),
            }
        ));
        session.keep(step, interrupted)?;
        if interrupted {
            break;
        }
        match outcome {
            Ok(()) => pass = Some(pass.map_or(rate, |p: f64| p.max(rate))),
            Err(_) => fail = Some(fail.map_or(rate, |f: f64| f.min(rate))),
        }
        rate = match (pass, fail) {
            (Some(p), None) if p >= max => break,
            (Some(p), None) => (p * 2.0).min(max),
            // Even the first rate failed: halve it until one passes (down to 1 request/s).
            (None, Some(f)) if f / 2.0 < 1.0 => break,
            (None, Some(f)) => f / 2.0,
            (Some(p), Some(f)) if (f - p) / p <= precision => break,
            (Some(p), Some(f)) => (p + f) / 2.0,
            (None, None) => break,
        };
    }
    let answer =
        CapacityAnswer { slo: slo.text.clone(), max_errors_percent: max_errors, rate: pass, first_failing_rate: fail };
    // The session's analysis keeps the answer beside the plateau and the knee it finds.
    session.answer(answer.clone());
    session.say("");
    session.say(&answer_line(&answer, start));
    session.end(Ending::Analysis)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::StepMetrics;
    use crate::result::StepLoad;

    #[test]
    fn a_poisson_steps_shortfall_within_chance_passes_and_an_even_ones_does_not() {
        // 1 request a second asked for 30 s; 20 sent: 10 short of 30, within Poisson's 3 standard deviations (16.4).
        let mut m = StepMetrics::new();
        let t = std::time::Instant::now();
        for _ in 0..20 {
            m.record_response(200, true, t, t, t + std::time::Duration::from_millis(1));
        }
        m.sent = 20;
        let load = StepLoad { rate: Some(1.0), model: "open".into(), connections: 4, threads: 1 };
        let step = StepResult::from_metrics("rate=1", load, &m, vec![], std::time::Duration::from_secs(30));
        let slo = Slo::parse("p99<1s").unwrap();
        assert_eq!(verdict(&slo, 1.0, &step, true), Ok(()));
        assert_eq!(verdict(&slo, 1.0, &step, false), Err("achieved 0.7/s of 1.0/s".into()));
    }
}
