//! The load flags checked: when a step stops (`-n`, `-d`), the closed or open loop, the rate's bounds and a ramp's
//! stages (`--stages`, `--rate-stages`, a study's `stages`).

use super::*;

/// The engine's arrival model for `--arrival`.
pub fn arrival(a: ArrivalArg) -> Arrival {
    match a {
        ArrivalArg::Uniform => Arrival::Uniform,
        ArrivalArg::Poisson => Arrival::Poisson,
    }
}

/// `--burstiness`'s bounds: below 0.01 a gamma's gaps are nearly all zero and one vast (the mean's 100 times the
/// spread), above 1000 they are even to a tenth of a percent: `--arrival uniform` says that.
const MIN_BURSTINESS: f64 = 0.01;
const MAX_BURSTINESS: f64 = 1000.0;

/// The lowest rate: one request every 1000 s. Below it the gap between sends (and a thread's share of it)
/// overflows the clock arithmetic of the schedule.
pub const MIN_RATE: f64 = 0.001;
/// The highest rate: one request a nanosecond, the schedule's resolution.
pub const MAX_RATE: f64 = 1e9;

/// Reads `--rate`: requests per second, from [`MIN_RATE`] to [`MAX_RATE`].
pub fn parse_rate(flag: &str, r: f64) -> Result<f64, CliError> {
    if r.is_finite() && r > 0.0 && !(MIN_RATE..=MAX_RATE).contains(&r) {
        return Err(CliError::new(format!(
            "{flag} {r:e}: must be from 0.001 (one request every 1000 s) to 1e9 requests per second; try {flag} 1000"
        )));
    }
    if r.is_finite() && r > 0.0 {
        Ok(r)
    } else {
        Err(CliError::new(format!("{flag} {r}: must be more than 0 requests per second; try {flag} 1000")))
    }
}

/// The load flags of `run` and `kv`, checked: when the step stops and how clients send.
pub(crate) fn load_parts(a: &LoadArgs) -> Result<(Until, LoadModel), CliError> {
    if a.connections == 0 {
        return Err(CliError::new("--connections 0: must be at least 1; try -c 50"));
    }
    let stop = match (a.requests, &a.duration) {
        (Some(_), Some(_)) => {
            return Err(CliError::new(
                "--requests and --duration both given: choose one, a count (-n 1000) or a time (-d 30s)",
            ));
        }
        (Some(0), None) => return Err(CliError::new("--requests 0: must be at least 1")),
        (Some(n), None) => Until::Requests(n),
        (None, Some(d)) => Until::Duration(flag_duration("--duration", d)?),
        (None, None) => Until::Duration(Duration::from_secs(10)),
    };
    check_threads(a.threads)?;
    let arrival = match a.burstiness {
        None => arrival(a.arrival),
        Some(_) if a.rate.is_none() && a.rate_stages.is_none() => {
            return Err(CliError::new(
                "--burstiness shapes the gaps of an open loop: give a rate too (--rate 10, or llm's --request-rate 10)",
            ));
        }
        // Threads and agents each draw their own share of the rate: gamma processes added together are not one of
        // that shape (they tend to Poisson), so the shape holds only in one schedule.
        Some(_) if a.threads.is_some_and(|t| t > 1) || a.scale.agents.is_some() || a.scale.segment.is_some() => {
            return Err(CliError::new(
                "--burstiness keeps its shape in one schedule: leave out -t (or give -t 1), --agents and --segment",
            ));
        }
        Some(b) if b.is_finite() && (MIN_BURSTINESS..=MAX_BURSTINESS).contains(&b) => Arrival::Gamma { burstiness: b },
        Some(b) => {
            return Err(CliError::new(format!(
                "--burstiness {b}: give a shape from {MIN_BURSTINESS} to {MAX_BURSTINESS} (1 is Poisson, 0.5 burstier, \
                 4 more even)"
            )));
        }
    };
    let load = match a.rate {
        None => LoadModel::Closed { think: Duration::ZERO },
        Some(r) => LoadModel::Open { rate: parse_rate("--rate", r)?, arrival },
    };
    match ramp_of(a)? {
        // A ramp lasts its stages; an open one's rate is its peak (each thread's share of the connections).
        Some((ramp, open)) => {
            let stop = Until::Duration(ramp.duration());
            let load = match open {
                true => LoadModel::Open { rate: ramp.peak(), arrival },
                false => LoadModel::Closed { think: Duration::ZERO },
            };
            Ok((stop, load))
        }
        None => Ok((stop, load)),
    }
}

/// The most clients a ramp of clients reaches (each is a connection).
pub(super) const MAX_CLIENTS: usize = 1_000_000;
/// The most stages a ramp takes (a ramp is read by people; thousands of stages would be a script's).
pub(super) const MOST_STAGES: usize = 100;

/// `--stages` or `--rate-stages` as a ramp, and whether it is of the rate (open loop).
pub(crate) fn ramp_of(a: &LoadArgs) -> Result<Option<(Ramp, bool)>, CliError> {
    let (flag, text, open) = match (&a.stages, &a.rate_stages) {
        (Some(t), _) => ("--stages", t, false),
        (None, Some(t)) => ("--rate-stages", t, true),
        (None, None) => return Ok(None),
    };
    let ramp = parse_stages(text, open)
        .map_err(|why| CliError::new(format!("{flag} '{text}': {why}; e.g. {flag} {}", stages_example(open))))?;
    Ok(Some((ramp, open)))
}

/// A ramp's example: of clients (`--stages`, a study's `stages`) or of the rate (`--rate-stages`, `rate_stages`).
pub fn stages_example(open: bool) -> &'static str {
    if open { "30s:100,2m:5000" } else { "30s:10,1m:100,30s:0" }
}

/// A ramp's stages (`30s:10,1m:100`: duration:target, k6's), of the rate (`open`) or of clients, checked as the
/// flags and a study's `[load]` take them; the error says what is wrong, for the caller to put after the name.
pub fn parse_stages(text: &str, open: bool) -> Result<Ramp, String> {
    let what = if open { "a rate" } else { "a client count" };
    let mut stages = Vec::new();
    for part in text.split(',') {
        let bad = |why: String| format!("stage '{part}' {why}");
        let Some((d, target)) = part.trim().split_once(':') else {
            return Err(bad("is not DURATION:TARGET".into()));
        };
        let d = parse_flag_duration(d.trim()).map_err(|e| bad(format!("has a bad duration ({e})")))?;
        if d.is_zero() {
            return Err(bad("lasts no time".into()));
        }
        let target: f64 = target
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| bad(format!("has no {what} (a number from 0) after the colon")))?;
        if open && target > MAX_RATE {
            return Err(bad(format!("asks more than {MAX_RATE:e} requests per second")));
        }
        if !open && (target.fract() != 0.0 || target > MAX_CLIENTS as f64) {
            return Err(bad(format!("needs a whole number of clients up to {MAX_CLIENTS}")));
        }
        stages.push((d, target));
    }
    if stages.len() > MOST_STAGES {
        return Err(format!("{} stages; give at most {MOST_STAGES}", stages.len()));
    }
    let ramp = Ramp::new(&stages).ok_or("no stage")?;
    if ramp.peak() <= 0.0 {
        return Err("every target is 0, so nothing would be sent".into());
    }
    if ramp.duration() > MAX_TIMEOUT {
        return Err("the stages last more than 24h; shorten them".into());
    }
    Ok(ramp)
}
