//! A result file read back: a result document (`hakaru.result/1`, what `--json` writes) or drnbench's CSV, told
//! apart by [`FileKind::of`]. The one reader of result files for `compare`, `report`, `chart`, `history import`,
//! `merge`, a study's summary and the history's stored documents. A document of another schema (a later hakaru's
//! `hakaru.result/2`, another tool's JSON) is refused here, before any of its fields is trusted: read as this
//! version's, its figures could mean something else.

use std::fmt;
use std::path::Path;

use serde::Deserialize;

use super::drnbench::{self, CsvError, DrnbenchRow};
use crate::metrics::LatencyHistogram;
use crate::result::{ResultDocument, SCHEMA};

/// What a result file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A result document (JSON).
    Document,
    /// drnbench's CSV (drnbench's own, or `hakaru sweep -o`).
    Drnbench,
}

impl FileKind {
    /// A document when the text opens with `{` or the name ends in `.json` (so a broken document is said to be a
    /// broken document, not a strange CSV); drnbench's CSV otherwise.
    pub fn of(path: &Path, text: &str) -> FileKind {
        let json_name = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
        if json_name || text.trim_start().starts_with('{') { FileKind::Document } else { FileKind::Drnbench }
    }
}

/// What a result file held.
#[derive(Clone, Debug)]
pub enum Contents {
    Document(Box<ResultDocument>),
    Drnbench(Vec<DrnbenchRow>),
}

/// A document that names a schema other than the one this binary reads.
#[derive(Clone, Debug, PartialEq)]
pub struct ForeignSchema(pub String);

impl fmt::Display for ForeignSchema {
    /// One clause, for a command to put after the file's name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let found = &self.0;
        if found.starts_with("hakaru.result/") {
            write!(f, "schema '{found}' is another version of the result document; this hakaru reads {SCHEMA} only")
        } else {
            write!(f, "schema '{found}' is not a hakaru result document; this hakaru reads {SCHEMA}")
        }
    }
}

/// Why a result file does not read; each command words these itself, the wording here is for the rest.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file cannot be read (the I/O error).
    #[error("cannot read it: {0}")]
    Unreadable(std::io::Error),
    /// Not the JSON of a result document: serde's error, with its line and column (see [`super::json_reason`]).
    #[error("not a hakaru result document: {0}")]
    NotADocument(serde_json::Error),
    /// A document of another schema.
    #[error("{0}")]
    Schema(ForeignSchema),
    /// Not drnbench's CSV.
    #[error("{0}")]
    Drnbench(CsvError),
    /// A document whose figures cannot be true: a histogram that does not decode (or whose header asks for more
    /// memory than any histogram needs), a count that cannot be.
    #[error("{0}; the document was damaged or altered: give the file --json wrote")]
    Impossible(String),
}

/// Only what is needed to tell a document's schema when the whole does not read.
#[derive(Deserialize)]
struct Head {
    schema: Option<serde_json::Value>,
}

/// Reads a result document's text; its schema must be [`SCHEMA`].
pub fn parse_document(text: &str) -> Result<ResultDocument, ReadError> {
    match serde_json::from_str::<ResultDocument>(text) {
        Ok(doc) if doc.schema == SCHEMA => checked(doc),
        Ok(doc) => Err(ReadError::Schema(ForeignSchema(doc.schema))),
        // A later version may have fields this one cannot read: its schema is the better reason. A text that is
        // not even JSON keeps serde's first error, with its place.
        Err(e) => match serde_json::from_str::<Head>(text).ok().and_then(|h| h.schema) {
            Some(serde_json::Value::String(found)) if found != SCHEMA => Err(ReadError::Schema(ForeignSchema(found))),
            _ => Err(ReadError::NotADocument(e)),
        },
    }
}

/// A document stored as JSON elsewhere (the history): its schema checked first, as [`parse_document`] does.
pub fn document_from_value(value: serde_json::Value) -> Result<ResultDocument, ReadError> {
    match value.get("schema").and_then(|s| s.as_str()) {
        Some(found) if found != SCHEMA => Err(ReadError::Schema(ForeignSchema(found.to_string()))),
        _ => checked(serde_json::from_value(value).map_err(ReadError::NotADocument)?),
    }
}

/// `doc` when every histogram in it decodes within its bounds and its counts can be true; the first that does not,
/// by its place, otherwise. Every reader of a document reads it here first, so none decodes a crafted histogram
/// later (an empty percentile printed, an exit code 0) or adds up counts that wrap.
fn checked(doc: ResultDocument) -> Result<ResultDocument, ReadError> {
    for (i, step) in doc.steps.iter().enumerate() {
        let at = format!("steps[{i}]");
        // An empty one is a histogram that is absent (a drnbench CSV imported has none).
        if !step.histogram.data.trim().is_empty() {
            LatencyHistogram::from_base64(&step.histogram.data)
                .map_err(|e| ReadError::Impossible(format!("{at}.histogram: {e}")))?;
        }
        if let Some(phases) = &step.phases {
            phases.histograms().map_err(|e| ReadError::Impossible(format!("{at}.phases: {e}")))?;
        }
        if let Some(e) = impossible_counts(step.requests, step.ok, step.failed) {
            return Err(ReadError::Impossible(format!("{at}: {e}")));
        }
        if step.responses > step.requests || step.errors > step.requests {
            return Err(ReadError::Impossible(format!(
                "{at}: {} responses and {} errors of {} requests: neither can be more than the requests",
                step.responses, step.errors, step.requests
            )));
        }
    }
    if let Some(runs) = &doc.runs {
        if !runs.histogram.data.trim().is_empty() {
            LatencyHistogram::from_base64(&runs.histogram.data)
                .map_err(|e| ReadError::Impossible(format!("runs.histogram: {e}")))?;
        }
        if let Some(e) = impossible_counts(runs.requests, runs.ok, runs.failed) {
            return Err(ReadError::Impossible(format!("runs: {e}")));
        }
    }
    Ok(doc)
}

/// Why `ok` and `failed` cannot be the two parts of `requests` (each request ends one way or the other); None
/// when they are.
fn impossible_counts(requests: u64, ok: u64, failed: u64) -> Option<String> {
    (ok.checked_add(failed) != Some(requests))
        .then(|| format!("ok ({ok}) and failed ({failed}) do not add up to requests ({requests})"))
}

/// Reads `text`, from `path`, as the kind [`FileKind::of`] tells.
pub fn read_text(path: &Path, text: &str) -> Result<Contents, ReadError> {
    match FileKind::of(path, text) {
        FileKind::Document => parse_document(text).map(|d| Contents::Document(Box::new(d))),
        FileKind::Drnbench => drnbench::parse(text).map(Contents::Drnbench).map_err(ReadError::Drnbench),
    }
}

/// Reads a result file of either kind.
pub fn read_file(path: &Path) -> Result<Contents, ReadError> {
    let text = crate::base::bounded::read_text_io(path, crate::base::bounded::RESULT).map_err(ReadError::Unreadable)?;
    read_text(path, &text)
}

/// Reads a file that must be a result document, whatever its name (`merge`, a study's cases); never
/// [`ReadError::Drnbench`].
pub fn read_document(path: &Path) -> Result<ResultDocument, ReadError> {
    let text = crate::base::bounded::read_text_io(path, crate::base::bounded::RESULT).map_err(ReadError::Unreadable)?;
    parse_document(&text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::json_reason;

    fn document(schema: &str) -> String {
        let text = include_str!("../../tests/fixtures/report/sweep-4ms.json");
        let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
        v["schema"] = schema.into();
        v.to_string()
    }

    #[test]
    fn a_phase_histogram_that_cannot_be_read_refuses_the_document_by_its_place() {
        use crate::metrics::LatencyHistogram;
        use crate::result::phases::{Phase, PhasesReport};
        use crate::result::{EncodedHistogram, LatencySummary};
        let mut doc = parse_document(&document(SCHEMA)).unwrap();
        // A V2 header saying 4 GiB of counts follow it, and none do.
        let crafted = "HISTE/////8AAAAAAAAAAwAAAAAAAAABAAAAANaTpAA/8AAAAAAAAA==".to_string();
        let mut histogram = EncodedHistogram::of(&LatencyHistogram::new());
        histogram.data = crafted;
        let waiting = Phase { latency: LatencySummary::from_histogram(&LatencyHistogram::new()), histogram };
        doc.steps[0].phases = Some(PhasesReport {
            connections_opened: 0,
            answers: 1,
            connect: None,
            tls_handshake: None,
            tls_resumed: None,
            tls_full_handshake: None,
            tls_resumed_handshake: None,
            waiting: Some(waiting),
            waiting_from_intended: None,
            receiving: None,
        });
        let v = serde_json::to_value(&doc).unwrap();
        let Err(ReadError::Impossible(e)) = document_from_value(v) else { panic!("a crafted phase histogram read") };
        assert!(e.starts_with("steps[0].phases: its waiting phase's histogram cannot be read"), "{e}");
    }

    #[test]
    fn a_file_is_a_document_by_its_first_character_or_its_name_else_drnbench() {
        assert_eq!(FileKind::of(Path::new("a.csv"), "  {\"schema\""), FileKind::Document);
        assert_eq!(FileKind::of(Path::new("a.JSON"), ""), FileKind::Document);
        assert_eq!(FileKind::of(Path::new("a"), "n_clients,"), FileKind::Drnbench);
        assert_eq!(FileKind::of(Path::new("a.csv"), ""), FileKind::Drnbench);
    }

    #[test]
    fn only_this_schema_reads_and_a_foreign_one_is_named_even_when_its_fields_are_new() {
        assert!(parse_document(&document(SCHEMA)).is_ok());
        for found in ["hakaru.result/2", "other/1"] {
            let Err(ReadError::Schema(e)) = parse_document(&document(found)) else { panic!("{found} read") };
            assert_eq!(e.0, found);
            assert!(e.to_string().contains(SCHEMA), "{e}");
        }
        // Fields this version does not know, under a later schema: the schema is the reason given.
        let later = r#"{"schema": "hakaru.result/2", "runs_v2": []}"#;
        assert!(matches!(parse_document(later), Err(ReadError::Schema(ForeignSchema(s))) if s == "hakaru.result/2"));
        // Not JSON, or a schema that is not text: serde's error and its place.
        let Err(ReadError::NotADocument(e)) = parse_document("{\"schema\": 1,\n  oops}") else { panic!() };
        assert_eq!((e.line(), json_reason(&e).contains(" at line ")), (1, false));
        let v: serde_json::Value = serde_json::from_str(&document("other/1")).unwrap();
        assert!(matches!(document_from_value(v), Err(ReadError::Schema(_))));
    }
}
