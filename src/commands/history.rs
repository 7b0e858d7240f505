//! The history's commands: `hakaru history` (the listing), `show`, `export` and `import`, and [`recorder`], the
//! history sink of run, sweep, capacity and kv made from their flags.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::base::units::format_micros;
use crate::cli::args::{ExportArgs, ExportFormat, HistoryArgs, HistoryListArgs, ImportArgs, ShowArgs};
use crate::error::CliError;
use crate::export::table::{table_header, table_row};
use crate::export::{Exporter, csv::Csv, drnbench::DrnbenchCsv, json::Json, sweep_csv::SweepCsv, text::Text};
use crate::history::{self, Db, Filter, HistoryError, Recorder, drnbench_import};
use crate::result::ResultDocument;

/// The [`Recorder`] a measuring command's `--label`, `--db` and `--no-history` ask for.
pub fn recorder(a: &HistoryArgs) -> Result<Recorder, CliError> {
    Recorder::new(&a.labels, a.db.as_deref(), a.no_history)
}

/// The stored result a reference names (`42`, `last`, `label=main`), for `compare`, `report` and `chart`:
/// `command` names the asker in the message when there is no such result (nor a file of that name).
pub fn documents(
    db: Option<&Path>,
    command: &str,
    reference: &str,
) -> Result<Vec<crate::result::ResultDocument>, CliError> {
    let db = open_existing(db).map_err(|e| {
        CliError::new(format!(
            "{command} '{reference}': no such file or directory, and no history to look it up in ({e})"
        ))
    })?;
    let (_, doc) = db.resolve_document(reference).map_err(|e| {
        CliError::new(format!(
            "{command} '{reference}': no such file or directory, nor a result of the history ({}); give a result \
             file or a reference from 'hakaru history'",
            e.into_cli()
        ))
    })?;
    Ok(vec![doc])
}

fn open_existing(db: Option<&Path>) -> Result<Db, CliError> {
    let path = history::database_path(db)
        .ok_or_else(|| CliError::new("--db: no history database: give --db FILE or set HAKARU_DB"))?;
    Db::open_existing(&path).map_err(HistoryError::into_cli)
}

/// `--since`: a date, a time, or an age -> the RFC 3339 time the stored times are compared with.
fn since(text: &str) -> Result<String, CliError> {
    let t = text.trim();
    let bad = || {
        CliError::new(format!(
            "--since '{text}': not a date; give 2026-11-23, 2026-11-23T10:00:00Z or an age such as 7d or 12h"
        ))
    };
    if let Ok(age) = humantime::parse_duration(t) {
        let then = std::time::SystemTime::now().checked_sub(age).ok_or_else(bad)?;
        return Ok(humantime::format_rfc3339_seconds(then).to_string());
    }
    let full = if t.len() == 10 { format!("{t}T00:00:00Z") } else { t.to_string() };
    let when = humantime::parse_rfc3339_weak(&full).map_err(|_| bad())?;
    Ok(humantime::format_rfc3339_seconds(when).to_string())
}

/// `hakaru history`: the table of stored results.
pub fn list(a: &HistoryListArgs) -> Result<ExitCode, CliError> {
    let filter = Filter {
        target: a.target.clone(),
        labels: history::labels(&a.labels)?.into_iter().collect(),
        since: a.since.as_deref().map(since).transpose()?,
        command: a.command.clone(),
        workload: None,
        limit: Some(a.limit),
    };
    let db = open_existing(a.db.as_deref())?;
    let rows = db.find(&filter).map_err(HistoryError::into_cli)?;
    let mut out = String::new();
    if rows.is_empty() {
        out.push_str(&format!("no results match in {}\n", db.path().display()));
    } else {
        // A streamed result's time to first token and tokens a second, in columns of their own when any row has them.
        let streamed = rows.iter().any(|r| r.ttft_p99_us.is_some());
        let cells: Vec<[String; 13]> = rows
            .iter()
            .map(|r| {
                let labels: Vec<String> = r.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
                // `--runs N`: the runs' mean ok/s with its spread and their merged p99, as the run's text gives.
                let ok_per_s = match (r.ok_per_s, r.ok_per_s_sd) {
                    (Some(q), Some(sd)) => format!("{q:.1} ± {sd:.1}"),
                    (Some(q), None) => format!("{q:.1}"),
                    (None, _) => "-".into(),
                };
                [
                    r.id.to_string(),
                    r.time.clone(),
                    if r.source == "imported" { format!("{} (imported)", r.command) } else { r.command.clone() },
                    r.protocol.clone(),
                    r.target.clone(),
                    labels.join(","),
                    r.runs.map_or(String::new(), |n| crate::base::units::count_of(n, "run")),
                    ok_per_s,
                    r.p99_us.map_or("-".into(), |p| format_micros(p as f64)),
                    r.ttft_p99_us.map_or("-".into(), |p| format_micros(p as f64)),
                    r.tokens_per_s.map_or("-".into(), |t| format!("{t:.1}")),
                    r.tpot_p99_us.map_or("-".into(), |p| format_micros(p as f64)),
                    r.goodput_percent.map_or("-".into(), |g| format!("{g:.1} %")),
                ]
            })
            .collect();
        let header = [
            "id", "time", "command", "protocol", "target", "labels", "runs", "ok/s", "p99", "ttft p99", "tok/s",
            "tpot p99", "goodput",
        ];
        let shown = if streamed { header.len() } else { header.len() - 4 };
        let widths: Vec<usize> = (0..header.len())
            .map(|i| cells.iter().map(|c| c[i].chars().count()).chain([header[i].len()]).max().unwrap())
            .collect();
        let line = |c: &[&str]| {
            let mut l = String::new();
            for (i, cell) in c.iter().enumerate() {
                // Numbers right-aligned, text left-aligned; the last column needs no padding.
                match i {
                    0 | 6..=12 => l.push_str(&format!("{cell:>w$}  ", w = widths[i])),
                    _ => l.push_str(&format!("{cell:<w$}  ", w = widths[i])),
                }
            }
            l.trim_end().to_string() + "\n"
        };
        out.push_str(&line(&header[..shown]));
        for c in &cells {
            out.push_str(&line(&c.each_ref().map(String::as_str)[..shown]));
        }
    }
    print(&out);
    Ok(ExitCode::SUCCESS)
}

/// Prints to stdout; a reader that went away (`| head`) is not an error.
fn print(text: &str) {
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

fn document(db: &Db, reference: &str) -> Result<(i64, ResultDocument), CliError> {
    db.resolve_document(reference).map_err(HistoryError::into_cli)
}

/// `hakaru show ID`: the summary as the run printed it: a run's text, or a sweep's (capacity search's) table,
/// answer, findings and warnings.
pub fn show(a: &ShowArgs) -> Result<ExitCode, CliError> {
    let db = open_existing(a.db.as_deref())?;
    let (_, doc) = document(&db, &a.reference)?;
    let Some(sweep) = &doc.settings.sweep else {
        print(&Text.render(&doc));
        return Ok(ExitCode::SUCCESS);
    };
    let rates = sweep.kind != "clients";
    let streamed = doc.steps.iter().any(|s| s.events.is_some());
    let probes: Vec<&str> =
        doc.steps.first().map(|s| s.probes.iter().map(|p| p.name.as_str()).collect()).unwrap_or_default();
    let mut lines = vec![
        format!("hakaru {}  {}", doc.settings.command, doc.settings.targets.join(" ")),
        table_header(rates, streamed, &probes),
    ];
    lines.extend(doc.steps.iter().map(|s| table_row(s, rates, streamed)));
    if let Some(answer) = doc.analysis.as_ref().and_then(|an| an.capacity.as_ref()) {
        lines.push(String::new());
        lines.push(crate::export::text::answer_line(answer, sweep.values.first().copied().unwrap_or(0.0)));
    }
    lines.extend(crate::export::text::closing_lines(&doc));
    print(&(lines.join("\n") + "\n"));
    Ok(ExitCode::SUCCESS)
}

/// `hakaru export ID --format F`: the stored result through one of the exporters.
pub fn export(a: &ExportArgs) -> Result<ExitCode, CliError> {
    let db = open_existing(a.db.as_deref())?;
    let (_, doc) = document(&db, &a.reference)?;
    let exporter: Box<dyn Exporter> = match a.format {
        ExportFormat::Json => Box::new(Json),
        // A run's CSV is one row of loadtest's columns; a sweep's is hakaru's wide CSV, as the commands write them.
        ExportFormat::Csv if doc.settings.sweep.is_none() => Box::new(Csv),
        ExportFormat::Csv => Box::new(SweepCsv),
        ExportFormat::Drnbench => Box::new(DrnbenchCsv),
    };
    let text = exporter.render(&doc);
    match &a.output {
        Some(path) => crate::export::write_atomically(path, &text)
            .map_err(|e| CliError::new(format!("--output '{}': {e}; give a writable path", path.display())))?,
        None => print(&text),
    }
    Ok(ExitCode::SUCCESS)
}

/// One file read for import: its document as JSON, and what the listing should say about it.
struct Imported {
    file: PathBuf,
    doc: serde_json::Value,
    note: Option<String>,
}

/// Reads a result JSON file or a drnbench CSV (`crate::inputs::result`); the error is one line with the file, line
/// and column.
fn read_import(path: &Path, labels: &BTreeMap<String, String>) -> Result<Imported, CliError> {
    use crate::inputs::result::{Contents, ReadError, read_file};
    let name = path.display().to_string();
    let (mut doc, note) = match read_file(path) {
        Ok(Contents::Document(doc)) => (*doc, None),
        Ok(Contents::Drnbench(rows)) => {
            let modified = std::fs::metadata(path).and_then(|m| m.modified()).unwrap_or(std::time::SystemTime::now());
            let started = humantime::format_rfc3339_seconds(modified).to_string();
            let doc = drnbench_import::from_rows(&name, rows, &started).map_err(CliError::new)?;
            (doc, Some(format!("a drnbench CSV; absent: {}", drnbench_import::ABSENT)))
        }
        Err(e) => {
            return Err(CliError::new(match e {
                ReadError::Unreadable(e) => {
                    format!("import '{name}': {e}; give a result JSON or a drnbench CSV file")
                }
                ReadError::NotADocument(e) => format!(
                    "{name}:{}:{}: not a hakaru result document: {e}; give a file written by --json",
                    e.line(),
                    e.column()
                ),
                ReadError::Schema(schema) => format!("{name}: {schema}"),
                e @ ReadError::Impossible(_) => format!("{name}: {e}"),
                ReadError::Drnbench(e) => drnbench_import::csv_error(&name, e),
            }));
        }
    };
    doc.settings.labels.extend(labels.clone());
    let doc = serde_json::to_value(&doc).map_err(|e| CliError::runtime(e.to_string()))?;
    Ok(Imported { file: path.to_path_buf(), doc, note })
}

/// `hakaru import FILE...`: every file read first (a bad one stores none), then stored.
pub fn import(a: &ImportArgs) -> Result<ExitCode, CliError> {
    let labels = history::labels(&a.labels)?;
    let files: Vec<Imported> = a.files.iter().map(|f| read_import(f, &labels)).collect::<Result<_, _>>()?;
    let path = history::database_path(a.db.as_deref())
        .ok_or_else(|| CliError::new("--db: no history database: give --db FILE or set HAKARU_DB"))?;
    let mut db = Db::open(&path).map_err(HistoryError::into_cli)?;
    for f in files {
        let id = db.insert_json(f.doc, "imported").map_err(HistoryError::into_cli)?;
        let note = f.note.map(|n| format!(" ({n})")).unwrap_or_default();
        print(&format!("imported {} as #{id}{note}\n", f.file.display()));
    }
    Ok(ExitCode::SUCCESS)
}
