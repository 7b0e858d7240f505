//! What `compare` makes of its inputs: result documents (JSON), drnbench CSV files (hakaru's `sweep -o` layout)
//! and study directories (`study.json` and one result document per case), read by `crate::inputs`, turned into
//! sides of runs per load point. History IDs and labels come through the resolver the command gives [`load`]
//! (the history is the commands' to open).

use std::path::Path;

use super::{Group, Sample, Side};
use crate::error::CliError;
use crate::export::drnbench::DRNBENCH_COLUMNS;
use crate::inputs::drnbench::{CsvError, DrnbenchRow};
use crate::metrics::LatencyHistogram;
use crate::result::{ResultDocument, StepResult};

/// What one command-line input holds: a side (one or more files joined by commas), or a whole study.
pub enum Loaded {
    Side(Side),
    Study(Vec<Group>),
}

/// Reads one input: `FILE[,FILE...]` (result JSON or drnbench CSV, their runs pooled as one side), a study
/// directory, or else a history reference (`crate::inputs::argument` tells which).
pub fn load(input: &str, history: &dyn Fn(&str) -> Result<Vec<ResultDocument>, CliError>) -> Result<Loaded, CliError> {
    use crate::inputs::argument::{Argument, ArgumentError, classify};
    let files = match classify(input) {
        Ok(Argument::Study(dir)) => return study(dir).map(Loaded::Study),
        Ok(Argument::Files(files)) => files,
        Ok(Argument::Reference(reference)) => {
            let mut side = Side::new(input);
            for doc in history(reference)? {
                add_document(&mut side, &doc, input);
            }
            return Ok(Loaded::Side(side));
        }
        Err(ArgumentError::Empty) => {
            return Err(CliError::new(format!("compare '{input}': an empty input; give a result JSON file")));
        }
        Err(ArgumentError::NotAFile(missing)) => {
            return Err(CliError::new(format!(
                "compare '{input}': '{missing}' is not a file; join result files of one side with commas"
            )));
        }
    };
    let mut side = Side::new(input);
    for p in files {
        add_file(&mut side, Path::new(p))?;
    }
    Ok(Loaded::Side(side))
}

/// Adds the runs of one file (result JSON or drnbench CSV, as `crate::inputs::result` tells them) to `side`.
fn add_file(side: &mut Side, path: &Path) -> Result<(), CliError> {
    use crate::inputs::result::{Contents, ReadError, read_file};
    let shown = path.display();
    match read_file(path) {
        Ok(Contents::Document(doc)) => {
            add_document(side, &doc, &shown.to_string());
            Ok(())
        }
        Ok(Contents::Drnbench(rows)) => {
            add_drnbench_rows(side, path, rows);
            Ok(())
        }
        Err(e) => Err(CliError::new(match e {
            ReadError::Unreadable(e) => format!("compare: reading '{shown}': {e}"),
            ReadError::NotADocument(e) => format!(
                "compare: '{shown}' line {} column {}: not a hakaru result document ({}); give the file `--json` \
                 wrote",
                e.line(),
                e.column(),
                crate::inputs::json_reason(&e)
            ),
            ReadError::Schema(schema) => format!("compare: '{shown}': {schema}"),
            e @ ReadError::Impossible(_) => format!("compare: '{shown}': {e}"),
            ReadError::Drnbench(e) => {
                let (line, why) = match e {
                    CsvError::Header(e) => (1, e),
                    CsvError::NotDrnbench(_) => {
                        (1, format!("the header does not start with {}", DRNBENCH_COLUMNS.join(",")))
                    }
                    CsvError::Row { line, error } => (line, error),
                    e @ CsvError::TooManyRows { line } => (line, e.to_string()),
                    e @ CsvError::TooManyStatuses(_) => (1, e.to_string()),
                    CsvError::NotANumber { line, name, cell, .. } => {
                        (line, format!("'{cell}' in {name} is not a number"))
                    }
                    CsvError::NotWhole { line, name, cell, .. } => {
                        (line, format!("'{cell}' in {name} is not a whole number"))
                    }
                };
                format!("compare: '{shown}' line {line}: {why}; give a CSV written by drnbench or `hakaru sweep -o`")
            }
        })),
    }
}

/// Adds a document's steps as runs: a sweep's steps are points (`c=4`, `rate=1000`), the steps of `--runs` (or a
/// single run) are runs of the one point. A run cut short by a signal is left out and said.
pub fn add_document(side: &mut Side, doc: &ResultDocument, name: &str) {
    let protocol = doc.protocol_label();
    if !protocol.is_empty() && !side.protocols.iter().any(|p| p == protocol) {
        side.protocols.push(protocol.to_string());
    }
    let load = load_of(doc);
    if !side.loads.contains(&load) {
        side.loads.push(load);
    }
    for t in &doc.settings.targets {
        if !side.targets.contains(t) {
            side.targets.push(t.clone());
        }
    }
    let partial = doc.runs.as_ref().and_then(|r| r.partial_run);
    for (i, step) in doc.steps.iter().enumerate() {
        if Some(i + 1) == partial {
            side.notes.push(format!("{name}: {} was cut short by a signal and is left out", step.label));
            continue;
        }
        let point = if doc.settings.sweep.is_some() { step.label.clone() } else { String::new() };
        side.add(&point, Sample::of_step(step));
    }
    if doc.interrupted && partial.is_none() {
        side.notes.push(format!("{name} was interrupted: its last step covers only the time until then"));
    }
}

/// The load a document ran, in words: what must match for a fair comparison (not the target).
fn load_of(doc: &ResultDocument) -> String {
    let s = &doc.settings;
    let points = s.sweep.as_ref().map(|w| format!(", {} {:?}", w.kind, w.values)).unwrap_or_default();
    let rate = s.rate.map(|r| format!(" at {r}/s")).unwrap_or_default();
    let limit = match (s.requests, s.duration_s) {
        (Some(n), _) => format!("{n} requests"),
        (None, Some(d)) => format!("{d}s"),
        (None, None) => String::new(),
    };
    let connections = crate::base::units::count_of(s.connections as u64, "connection");
    format!("{} {} loop{rate}, {connections}, {limit}{points}", s.command, s.load_model)
}

impl Sample {
    pub fn of_step(step: &StepResult) -> Sample {
        let l = &step.latency;
        let lat = |p: f64| (l.count > 0).then(|| l.percentile(p) as f64);
        Sample {
            ok_per_s: step.throughput.ok_per_s,
            mean_us: (l.count > 0).then_some(l.mean),
            p50_us: lat(50.0),
            p99_us: lat(99.0),
            p999_us: lat(99.9),
            requests: step.requests,
            failed: step.failed,
            answers: l.count,
            histogram: LatencyHistogram::from_base64(&step.histogram.data).ok(),
            first_event_us: step.events.as_ref().and_then(|e| e.first_event.as_ref()).map(|p| p.latency.mean),
            tokens_per_s: step.events.as_ref().and_then(|e| e.tokens.as_ref()).map(|t| t.tokens_per_s),
            tpot_us: step.events.as_ref().and_then(|e| e.tokens.as_ref()?.tpot.as_ref()).map(|p| p.latency.mean),
            goodput_per_s: step.events.as_ref().and_then(|e| e.goodput.as_ref()).map(|g| g.per_s),
        }
    }
}

/// drnbench's CSV (`crate::inputs::drnbench`): one row per client count; successes per second are the rate of
/// requests times the share of 2xx and 3xx statuses; the mean time is of every request (drnbench times failures
/// too); no percentiles.
fn add_drnbench_rows(side: &mut Side, path: &Path, rows: Vec<DrnbenchRow>) {
    for r in rows {
        let ok_share = (r.ok_percent() / 100.0).clamp(0.0, 1.0);
        side.add(
            &format!("c={}", r.clients),
            Sample {
                ok_per_s: r.qps * ok_share,
                mean_us: r.mean_s.map(|s| s * 1e6),
                p50_us: None,
                p99_us: None,
                p999_us: None,
                requests: r.requests,
                failed: (r.requests as f64 * (1.0 - ok_share)).round() as u64,
                // drnbench times no answer apart: no percentile, so none is needed.
                answers: 0,
                histogram: None,
                first_event_us: None,
                tokens_per_s: None,
                tpot_us: None,
                goodput_per_s: None,
            },
        );
    }
    side.notes.push(format!(
        "{}: drnbench's CSV has no percentiles, and its mean time counts failed requests too",
        path.display()
    ));
}

/// A study directory: one group per workload and phase (in the manifest's order), one side per target (the
/// first target first), each case that finished a run of its side.
pub fn study(dir: &Path) -> Result<Vec<Group>, CliError> {
    use crate::inputs::study::{MANIFEST, ManifestError, read_cases};
    let cases = read_cases(dir).map_err(|e| {
        CliError::new(match e {
            e @ ManifestError::Unreadable(_) => format!("compare '{}': {e}", dir.display()),
            e @ ManifestError::NotAManifest { .. } => format!("compare: '{}' {e}", dir.join(MANIFEST).display()),
        })
    })?;
    let mut groups: Vec<Group> = Vec::new();
    for case in &cases {
        let (workload, phase) = (case.workload.as_deref().unwrap_or(""), case.phase.as_deref().unwrap_or(""));
        let side = side_in(&mut groups, &study_group_title(workload, phase), &case.target);
        let Some(file) = case.file.as_ref().filter(|_| case.ok()) else {
            let status = case.status.as_deref().unwrap_or("ok");
            side.notes.push(format!("a case of {} is {status} and left out", case.target));
            continue;
        };
        add_file(side, &dir.join(file))?;
    }
    if groups.is_empty() {
        return Err(CliError::new(format!("compare '{}': the study has no cases yet", dir.display())));
    }
    Ok(groups)
}

/// The title of a study's group: its cases of one workload and phase.
pub fn study_group_title(workload: &str, phase: &str) -> String {
    format!("workload {workload}, phase {phase}")
}

/// The side of `target` in the group titled `title`, each made when first named: groups and sides keep the order
/// of the manifest's cases, failed ones included, so the first target is the baseline. The report sorts a study
/// through this too, so its verdicts are compare's.
pub fn side_in<'g>(groups: &'g mut Vec<Group>, title: &str, target: &str) -> &'g mut Side {
    let gi = groups.iter().position(|g| g.title == title).unwrap_or_else(|| {
        groups.push(Group { title: title.to_string(), sides: Vec::new() });
        groups.len() - 1
    });
    let sides = &mut groups[gi].sides;
    let si = sides.iter().position(|s| s.name == target).unwrap_or_else(|| {
        sides.push(Side::new(target));
        sides.len() - 1
    });
    &mut sides[si]
}
