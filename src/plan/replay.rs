//! `run --replay FILE` planned: the recording read and filtered, its records made requests to the URL's target
//! (its host, not the recorded one), and the load they take: each at its recorded offset (the open loop's slots
//! from the schedule), in order at `--rate`, or in order by `-c` clients.

use super::*;
use crate::base::secrets::excerpt;
use crate::cli::args::{ReplayArgs, ReplayPaceArg};
use crate::replay::{self, Filter, Format, Record};

/// The recorded schedule the pacer follows: slot k at `offsets[k % n]` + `(k / n)` periods from the start, for
/// `total` slots (every pass's records); none after them.
#[derive(Clone, Debug)]
pub struct ReplaySchedule {
    pub offsets: Arc<[u64]>,
    /// One pass's length, microseconds: the last offset and one mean gap, so a loop starts as a next record would.
    pub period_us: u64,
    pub total: u64,
}

/// The most passes `--loop` takes.
const MOST_LOOPS: u64 = 1_000_000;

impl ReplaySchedule {
    /// Slot `k`'s offset from the start, microseconds; a day past the last slot's for a slot past them (a timed
    /// step ends first: a replay never sends more than its passes).
    pub fn offset(&self, k: u64) -> u64 {
        let n = self.offsets.len().max(1) as u64;
        if k >= self.total {
            return self.offset(self.total.saturating_sub(1)).saturating_add(86_400_000_000);
        }
        (k / n).saturating_mul(self.period_us).saturating_add(self.offsets[(k % n) as usize])
    }
}

/// A replay as the request set takes it: the records, and what the run reports of them.
pub(super) struct Replayed {
    pub(super) records: Vec<Record>,
    pub(super) schedule: ReplaySchedule,
    pub(super) summary: String,
    /// `--dry-run`'s text: the summary and the first records with their offsets.
    pub(super) preview: Option<String>,
}

/// Reads `--replay`'s file; None without it.
pub(super) fn read(a: &ReplayArgs, has: &RequestArgs) -> Result<Option<Replayed>, CliError> {
    let Some(path) = &a.replay else {
        check_unused(a)?;
        return Ok(None);
    };
    let with = [
        ("--patterns", has.patterns.is_some()),
        ("--hosts", has.hosts.is_some()),
        ("--data", has.data.is_some()),
        ("--script", has.script.is_some()),
        ("--call", has.call.is_some()),
        ("several URLs", has.urls.len() > 1),
        ("-b/--body", has.body.is_some()),
        ("--body-file", has.body_file.is_some()),
        ("-m/--method", !has.method.trim().eq_ignore_ascii_case("GET")),
        ("a ws:// URL", has.urls.iter().any(|u| u.starts_with("ws://") || u.starts_with("wss://"))),
        (
            "{{...}} templates",
            has.urls.iter().chain(&has.headers).any(|t| t.contains("{{"))
                || has.body.as_deref().is_some_and(|b| b.contains("{{")),
        ),
    ];
    if let Some((what, _)) = with.iter().find(|(_, g)| *g) {
        return Err(CliError::new(format!(
            "--replay with {what}: a replay's requests are its records, sent to one URL's target; leave {what} out"
        )));
    }
    let max_gap = pace(a)?;
    check_loops(a)?;
    let format = match &a.replay_format {
        None => None,
        Some(f) => Some(
            Format::from_flag(f)
                .map_err(|why| CliError::new(format!("--replay-format '{}': {why}", f.escape_debug())))?,
        ),
    };
    let mut filter = Filter { writes: a.replay_writes, ..Filter::default() };
    for f in &a.replay_only {
        filter.add(f).map_err(|why| CliError::new(format!("--replay-only '{}': {why}", f.escape_debug())))?;
    }
    (filter.from, filter.until) = window(a)?;
    let bad = |why: String| CliError::new(format!("--replay '{}': {why}", path.display()));
    let mut rec = replay::read(path, crate::base::bounded::PATTERNS, format, &filter).map_err(bad)?;
    // A header given with -H wins over the recorded one (a fresh token over an expired one).
    let given: Vec<String> =
        has.headers.iter().filter_map(|h| h.split_once(':')).map(|(n, _)| n.trim().to_ascii_lowercase()).collect();
    for r in &mut rec.records {
        r.headers.retain(|(n, _)| !given.contains(&n.to_ascii_lowercase()));
    }
    let without_host = keep_host(a.keep_host, &given, &mut rec.records).map_err(CliError::new)?;
    // A record no request can be made of (a space in its path, an odd method) is skipped and said, as a line that
    // is no record is.
    let mut unsendable = (0u64, None);
    let sendable = |r: &Record| {
        check_target(&r.path)?;
        check_method(&r.method)?;
        r.headers.iter().try_for_each(|(n, v)| check_header(n, v))
    };
    rec.records.retain(|r| match sendable(r) {
        Ok(()) => true,
        Err(why) => {
            unsendable.0 += 1;
            unsendable.1.get_or_insert_with(|| format!("{} {}: {why}", r.method, excerpt(&r.path)));
            false
        }
    });
    if rec.records.is_empty() {
        return Err(bad(format!("no record can be sent: {}", unsendable.1.unwrap_or_default())));
    }
    // A recorded secret (a HAR's Authorization, each cookie) is replayed, and hidden wherever a peer echoes it: the
    // first 64 distinct values (every text shown is searched for each, as a script's are).
    let mut remembered = 0;
    for (n, v) in rec.records.iter().flat_map(|r| &r.headers) {
        if remembered >= 64 {
            break;
        }
        remembered += crate::base::secrets::remember_header(&format!("{n}: {v}"));
    }
    let schedule = schedule_of(replay::schedule(&rec.records, a.speed, max_gap), a);
    let mut said = vec![format!("{} records ({})", rec.records.len(), rec.format.name())];
    if let (n, Some(first)) = &unsendable {
        said.push(format!("{n} that no request can be made of skipped (the first: {first})"));
    }
    if rec.writes_left_out > 0 {
        said.push(format!("{} that change data left out (--replay-writes sends them)", rec.writes_left_out));
    }
    if rec.outside_window > 0 {
        said.push(format!("{} outside --replay-from/--replay-until left out", rec.outside_window));
    }
    if a.keep_host {
        said.push(match without_host {
            0 => "each with its recorded host".to_string(),
            n => format!("each with its recorded host ({n} without one sent the URL's)"),
        });
    }
    if rec.filtered_out > 0 {
        said.push(match rec.hosts.is_empty() {
            true => format!("{} left out by --replay-only", rec.filtered_out),
            false => format!(
                "{} of other sites or --replay-only left out (replaying {}'s; --replay-only host=NAME for another)",
                rec.filtered_out,
                rec.hosts.join(", ")
            ),
        });
    }
    if let Some((line, why)) = &rec.first_skipped {
        let lines = crate::base::units::count_of(rec.skipped, "line");
        said.push(format!("{lines} not records skipped (the first, line {line}: {why})"));
    }
    if rec.out_of_order > 0 {
        said.push(format!(
            "{} out of time order sorted into place (at most {:.3} s behind)",
            rec.out_of_order,
            rec.most_behind_us as f64 / 1e6
        ));
    }
    let summary = format!("replay {}: {}; {}", recording(path, rec.span), said.join(", "), paced(a, &schedule));
    // Paths shown escaped (a record's bytes never reach the terminal raw) with their secrets redacted.
    let preview = a.dry_run.then(|| {
        let mut text = summary.clone();
        for (r, at) in rec.records.iter().zip(schedule.offsets.iter()).take(20) {
            let path = excerpt(&crate::base::secrets::redact_secret(&r.path));
            text.push_str(&format!("\n  +{:>10.3} s  {} {path}", *at as f64 / 1e6, r.method));
        }
        if rec.records.len() > 20 {
            text.push_str(&format!("\n  ... {} more", rec.records.len() - 20));
        }
        text
    });
    Ok(Some(Replayed { records: rec.records, schedule, summary, preview }))
}

/// `--keep-host`: each record's recorded host as its Host header (checked with its other headers after); how many
/// had none (they are sent the URL's). Refused beside `-H Host` (two hosts asked) and for a log that records none.
fn keep_host(keep: bool, given: &[String], records: &mut [Record]) -> Result<u64, String> {
    if !keep {
        return Ok(0);
    }
    if given.iter().any(|n| n == "host") {
        return Err("--keep-host with -H Host: give one (-H sends one host to every record)".into());
    }
    let mut without = 0;
    for r in records.iter_mut() {
        match &r.host {
            Some(h) => r.headers.push(("Host".into(), h.clone())),
            None => without += 1,
        }
    }
    if without == records.len() as u64 {
        return Err("--keep-host: no record names its host (a combined log has none: use a log_format with $host, \
                    JSON lines with \"host\" or whole URLs, or a HAR)"
            .into());
    }
    Ok(without)
}

/// The recording as the summary names it: its path, size, and the instants of its first and last records.
pub(super) fn recording(path: &std::path::Path, span: Option<(i64, i64)>) -> String {
    let size = std::fs::metadata(path).map(|m| crate::base::units::format_bytes(m.len() as f64)).unwrap_or_default();
    match span {
        Some((first, last)) => {
            format!("{} ({size}, {} to {})", path.display(), replay::instant_text(first), replay::instant_text(last))
        }
        None => format!("{} ({size})", path.display()),
    }
}

/// How the replay is paced, for its summary: `as recorded over 12.500 s (speed 2), 3 passes`.
pub(super) fn paced(a: &ReplayArgs, schedule: &ReplaySchedule) -> String {
    let span = schedule.offset(schedule.total - 1) as f64 / 1e6;
    let pace = match a.replay_pace {
        ReplayPaceArg::Recorded => format!("as recorded over {span:.3} s (speed {})", a.speed),
        ReplayPaceArg::Rate => "in order at --rate".into(),
        ReplayPaceArg::Closed => "in order by -c clients".into(),
    };
    let loops = if a.replay_loop > 1 { format!(", {} passes", a.replay_loop) } else { String::new() };
    format!("{pace}{loops}")
}

/// The schedule of one pass's `offsets` (microseconds from the first record), `--loop` passes of it.
pub(super) fn schedule_of(offsets: Vec<u64>, a: &ReplayArgs) -> ReplaySchedule {
    let n = offsets.len() as u64;
    let last = offsets.last().copied().unwrap_or(0);
    // One record alone: a second between passes, at the speed asked.
    let mean_gap = if n > 1 { last / (n - 1) } else { (1e6 / a.speed) as u64 };
    ReplaySchedule { offsets: offsets.into(), period_us: last + mean_gap.max(1), total: n * a.replay_loop }
}

/// Without `--replay`, no flag that shapes a replay: one given alone would do nothing, silently.
pub(super) fn check_unused(a: &ReplayArgs) -> Result<(), CliError> {
    let given = [
        ("--replay-format", a.replay_format.is_some()),
        ("--replay-max-gap", a.replay_max_gap.is_some()),
        ("--replay-only", !a.replay_only.is_empty()),
        ("--replay-writes", a.replay_writes),
        ("--dry-run", a.dry_run),
        ("--speed", a.speed != 1.0),
        ("--loop", a.replay_loop != 1),
        ("--replay-pace", a.replay_pace != ReplayPaceArg::Recorded),
        ("--replay-from", a.replay_from.is_some()),
        ("--replay-until", a.replay_until.is_some()),
        ("--keep-host", a.keep_host),
    ];
    if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
        return Err(CliError::new(format!("{flag} shapes a replay: give --replay FILE too, or leave {flag} out")));
    }
    Ok(())
}

/// `--replay-from` and `--replay-until` read.
pub(super) fn window(a: &ReplayArgs) -> Result<(Option<replay::When>, Option<replay::When>), CliError> {
    let when = |flag: &str, text: &Option<String>| {
        text.as_deref()
            .map(|t| {
                replay::When::parse(t).map_err(|why| CliError::new(format!("{flag} '{}': {why}", t.escape_debug())))
            })
            .transpose()
    };
    Ok((when("--replay-from", &a.replay_from)?, when("--replay-until", &a.replay_until)?))
}

/// `--loop` checked: 1 to [`MOST_LOOPS`] passes.
pub(super) fn check_loops(a: &ReplayArgs) -> Result<(), CliError> {
    if a.replay_loop == 0 || a.replay_loop > MOST_LOOPS {
        return Err(CliError::new(format!("--loop {}: give 1 to {MOST_LOOPS} passes over the file", a.replay_loop)));
    }
    Ok(())
}

/// `--speed` checked, and `--replay-max-gap` in microseconds: how a recorded schedule is paced (a replay's, an LLM
/// trace's).
pub(super) fn pace(a: &ReplayArgs) -> Result<Option<u64>, CliError> {
    if !(a.speed.is_finite() && (0.001..=1000.0).contains(&a.speed)) {
        return Err(CliError::new(format!("--speed {}: give a factor from 0.001 to 1000 (2: twice as fast)", a.speed)));
    }
    let max_gap = a.replay_max_gap.as_deref().map(|g| flag_duration("--replay-max-gap", g)).transpose()?;
    Ok(max_gap.map(|g| g.as_micros() as u64))
}

/// The step a replay runs: its count of requests (every record, each pass) unless `-n` or `-d` says, and its load.
pub(super) fn load(
    a: &ReplayArgs,
    schedule: &ReplaySchedule,
    stop: Until,
    load: LoadModel,
    given: &LoadArgs,
) -> Result<(Until, LoadModel), CliError> {
    let n = schedule.total;
    // Every pass's records at most: -n and -d cut a replay short, never run it past its passes (a timed step's
    // slots past them never come).
    let stop = match (given.requests, &given.duration) {
        (None, None) => Until::Requests(n),
        (Some(asked), _) => Until::Requests(asked.min(n)),
        _ => stop,
    };
    // One thread: its clients take the records from one cursor, in order (threads of their own would each start
    // at the first).
    if given.threads.is_some_and(|t| t > 1) {
        return Err(CliError::new("--replay keeps the records in one order: leave out -t (or give -t 1)"));
    }
    let load = match a.replay_pace {
        ReplayPaceArg::Recorded => {
            if given.rate.is_some() || given.rate_stages.is_some() || given.stages.is_some() {
                return Err(CliError::new(
                    "--replay paces requests as recorded: leave out --rate and stages, or give --replay-pace rate",
                ));
            }
            let span = schedule.offset(n.saturating_sub(1)).max(1) as f64 / 1e6;
            LoadModel::Open { rate: (n as f64 / span).clamp(MIN_RATE, MAX_RATE), arrival: Arrival::Recorded }
        }
        ReplayPaceArg::Rate if given.rate.is_none() => {
            return Err(CliError::new("--replay-pace rate: give the rate, e.g. --rate 100"));
        }
        ReplayPaceArg::Rate | ReplayPaceArg::Closed => load,
    };
    Ok((stop, load))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loops_start_a_mean_gap_after_the_last_record() {
        let s = ReplaySchedule { offsets: vec![0, 100, 300].into(), period_us: 450, total: 7 };
        let at: Vec<u64> = (0..7).map(|k| s.offset(k)).collect();
        assert_eq!(at, [0, 100, 300, 450, 550, 750, 900]);
        assert_eq!(s.offset(7), 900 + 86_400_000_000, "no slot past the passes");
    }
}
