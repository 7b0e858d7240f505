//! `kv --replay FILE`: a Redis MONITOR capture replayed to the URL's server. Each recorded command is a prepared
//! request, taken in order from one cursor on one load thread, at its recorded offset over `--speed` (the open
//! loop's slots from the schedule: lateness never adds up), in order at `--rate`, or in order by `-c` clients.
//! Commands that write are left out unless `--replay-writes`; those that change a connection's state, administer
//! the server or block are never sent.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Base, KvPlan};
use crate::base::secrets::excerpt;
use crate::cli::args::KvArgs;
use crate::error::CliError;
use crate::plan::kv_guard::Guard;
use crate::plan::replay::{check_loops, load, pace, schedule_of, window};
use crate::plan::{RequestSpec, Selection};
use crate::protocol::{PreparedRequest, Protocol, resp};
use crate::replay::monitor::{self, Filter, Kind};

/// The plan of a MONITOR capture's replay: one step, its commands the requests.
pub(super) fn plan(a: &KvArgs, base: &Base, guard: Guard) -> Result<KvPlan, CliError> {
    let r = &a.replay;
    let path = r.replay.as_ref().expect("a replay was asked");
    refuse_others(a, base)?;
    check_loops(r)?;
    let max_gap = pace(r)?;
    let mut filter = Filter { writes: r.replay_writes, ..Filter::default() };
    for f in &r.replay_only {
        let bad = |why: &str| CliError::new(format!("--replay-only '{}': {why}", f.escape_debug()));
        let (key, values) = f.split_once('=').ok_or_else(|| bad("write command=GET,HGETALL"))?;
        if !matches!(key.trim(), "command" | "method") {
            return Err(bad("a capture's commands are filtered by command=NAME[,NAME]"));
        }
        filter.commands.extend(values.split(',').map(|v| v.trim().to_ascii_uppercase()).filter(|v| !v.is_empty()));
    }
    (filter.from, filter.until) = window(r)?;
    let bad = |why: String| CliError::new(format!("--replay '{}': {why}", path.display()));
    let capture = monitor::read(path, crate::base::bounded::DATASET, &filter).map_err(bad)?;
    if capture.commands.is_empty() {
        return Err(bad(nothing_to_replay(&capture)));
    }
    // Figures by command name; each recorded command a request of its own, on the one server.
    let mut names: Vec<String> = Vec::new();
    let on: Arc<[usize]> = Arc::new([0]);
    let requests: Vec<RequestSpec> = capture
        .commands
        .iter()
        .map(|c| {
            let name = c.name();
            let group = names.iter().position(|n| *n == name).unwrap_or_else(|| {
                names.push(name.clone());
                names.len() - 1
            });
            let args: Vec<&[u8]> = c.args.iter().map(Vec::as_slice).collect();
            let prepared = PreparedRequest {
                bytes: resp::encode(&args).into(),
                expects_no_body: false,
                idempotent: monitor::kind(&name) == Kind::Reads,
            };
            RequestSpec {
                endpoints: Arc::clone(&on),
                prepared: std::iter::once(prepared).collect(),
                timeout: base.timeout,
                group,
                label: name.into(),
            }
        })
        .collect();
    let times: Vec<i64> = capture.commands.iter().map(|c| c.at_us).collect();
    let schedule = schedule_of(crate::replay::offsets(&times, r.speed, max_gap, false), r);
    let summary = summary(path, &capture, &names, r, &schedule);
    let preview = r.dry_run.then(|| {
        let mut text = summary.clone();
        for (c, at) in capture.commands.iter().zip(schedule.offsets.iter()).take(20) {
            let words: Vec<String> = c.args.iter().map(|w| excerpt(&String::from_utf8_lossy(w))).collect();
            text.push_str(&format!("\n  +{:>10.3} s  {}", *at as f64 / 1e6, words.join(" ")));
        }
        if capture.commands.len() > 20 {
            text.push_str(&format!("\n  ... {} more", capture.commands.len() - 20));
        }
        text
    });
    let method = format!("replay of {}", names.join(" | "));
    let set = base.set(requests, names, method, None, Selection::InOrder);
    let (stop, model) = crate::plan::load_parts(&a.load)?;
    let (stop, model) = load(r, &schedule, stop, model, &a.load)?;
    let mut plan = crate::plan::one_step_with(&set, "kv", &a.load, Some((stop, model)))?;
    (plan.threads, plan.settings.threads) = (1, 1);
    plan.most_requests = Some(schedule.total);
    if model.is_recorded() {
        plan.replay = Some(schedule);
    }
    plan.settings.replay = Some(summary);
    plan.replay_preview = preview;
    Ok(KvPlan {
        steps: vec![("kv".into(), plan)],
        setup: Vec::new(),
        script_sha: None,
        warmup: None,
        workload: "replay".into(),
        kyoto: false,
        verify: false,
        sweep: None,
        guard,
    })
}

/// The flags of a workload or of an HTTP replay, refused with a capture: its commands are the workload.
fn refuse_others(a: &KvArgs, base: &Base) -> Result<(), CliError> {
    if base.protocol != Protocol::Resp {
        return Err(CliError::new("--replay reads Redis MONITOR captures: give a redis:// URL (memcached has none)"));
    }
    if base.endpoints.len() > 1 {
        return Err(CliError::new("--replay sends a capture to one server: give one redis:// URL"));
    }
    let r = &a.replay;
    if let Some(f) = r.replay_format.as_deref().filter(|f| !f.eq_ignore_ascii_case("monitor")) {
        return Err(CliError::new(format!(
            "--replay-format '{}': kv replays Redis MONITOR captures only (--replay-format monitor, or leave it out)",
            f.escape_debug()
        )));
    }
    // Every workload flag away from its default: a capture's commands are the workload, so none would act.
    let d: KvArgs = crate::cli::render::defaults();
    let given = [
        ("--workload", a.workload.trim() != d.workload),
        ("--mix", a.mix != d.mix),
        ("--command", !a.command.is_empty()),
        ("--command-ratio", !a.command_ratio.is_empty()),
        ("--command-key-pattern", !a.command_key_pattern.is_empty()),
        ("--data", a.data.is_some()),
        ("--data-order", a.data_order != d.data_order),
        ("--script", a.script.is_some()),
        ("--keys", a.keys != d.keys),
        ("--key-pattern", a.key_pattern != d.key_pattern),
        ("--key-prefix", a.key_prefix != d.key_prefix),
        ("--value-size", a.value_size != d.value_size),
        ("--value-size-range", a.value_size_range.is_some()),
        ("--flush", a.flush),
        ("--overwrite", a.overwrite),
        ("--verify", a.verify),
        ("--rnum", a.rnum != d.rnum),
        ("--rnd", a.rnd),
        ("--etc", a.etc),
        ("--it", a.it != d.it),
        ("--records", a.records != d.records),
        ("--ycsb-phase", a.ycsb_phase != d.ycsb_phase),
        ("--pipeline", a.pipeline > 1),
        ("--clients", a.clients.is_some()),
        ("--rates", a.rates.is_some()),
        ("--warmup", a.warmup.is_some()),
        ("--keep-host", r.keep_host),
        ("--agents", a.load.scale.agents.is_some() || a.load.scale.segment.is_some()),
    ];
    if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
        return Err(CliError::new(format!(
            "--replay with {flag}: a capture's commands are the workload, sent by one process to one server; leave \
             {flag} out"
        )));
    }
    Ok(())
}

/// Why a capture gave nothing to send.
fn nothing_to_replay(c: &monitor::Capture) -> String {
    let why = if c.writes_left_out > 0 {
        format!(
            "its {} commands that write are left out; give --replay-writes to send them (they change the server's \
             data)",
            c.writes_left_out
        )
    } else if c.filtered_out + c.outside_window > 0 {
        format!("--replay-only or the time window left out all {} commands", c.filtered_out + c.outside_window)
    } else if !c.never.is_empty() {
        format!("its commands are never replayed ({})", counts(&c.never))
    } else if let Some((line, why)) = &c.first_skipped {
        format!("line {line}: {why}")
    } else {
        "no command in it".into()
    };
    format!("nothing to replay: {why}; give the output of redis-cli MONITOR")
}

fn counts(by_name: &BTreeMap<String, u64>) -> String {
    by_name.iter().map(|(n, c)| format!("{n} {c}")).collect::<Vec<_>>().join(", ")
}

/// What the replay sends and what it left out, for the document's `settings.replay` and the dry run.
fn summary(
    path: &std::path::Path,
    c: &monitor::Capture,
    names: &[String],
    r: &crate::cli::args::ReplayArgs,
    schedule: &crate::plan::replay::ReplaySchedule,
) -> String {
    let mut said = vec![format!("{} commands (monitor: {})", c.commands.len(), names.join(", "))];
    if c.writes_left_out > 0 {
        said.push(format!("{} that write left out (--replay-writes sends them)", c.writes_left_out));
    }
    if !c.never.is_empty() {
        said.push(format!("never replayed: {}", counts(&c.never)));
    }
    if c.from_scripts > 0 {
        said.push(format!("{} run by scripts left out (their EVAL is recorded)", c.from_scripts));
    }
    if c.filtered_out > 0 {
        said.push(format!("{} left out by --replay-only", c.filtered_out));
    }
    if c.outside_window > 0 {
        said.push(format!("{} outside --replay-from/--replay-until left out", c.outside_window));
    }
    if let Some((line, why)) = &c.first_skipped {
        let lines = crate::base::units::count_of(c.skipped, "line");
        said.push(format!("{lines} not commands skipped (the first, line {line}: {why})"));
    }
    if c.dbs.len() > 1 {
        let dbs: Vec<String> = c.dbs.iter().map(u32::to_string).collect();
        said.push(format!("recorded on databases {} and all sent to the URL's", dbs.join(", ")));
    }
    let file = crate::plan::replay::recording(path, c.span);
    format!("replay {file}: {}; {}", said.join(", "), crate::plan::replay::paced(r, schedule))
}
