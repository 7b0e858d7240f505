//! A study directory's manifest (`study.json`) as its readers take it: the cases with their target, workload,
//! phase, repetition, status and result file, as a `{"cases": [...]}` object (what `hakaru study` writes,
//! `study::manifest`) or the list of cases alone. Fields a reader does not need may be missing; a case without a
//! status counts as ok.

use std::path::Path;

use serde::Deserialize;

use super::json_reason;

/// The manifest's file name inside a study directory.
pub const MANIFEST: &str = "study.json";

/// One case of a manifest.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct StudyCase {
    pub target: String,
    #[serde(default)]
    pub workload: Option<String>,
    #[serde(default)]
    pub phase: Option<String>,
    #[serde(default)]
    pub repetition: Option<u64>,
    /// `ok`, `failed` or `skipped`.
    #[serde(default)]
    pub status: Option<String>,
    /// The case's result document, relative to the study directory.
    #[serde(default)]
    pub file: Option<String>,
}

impl StudyCase {
    /// The case ran to the end (status `ok`, or none given): its result is a run of its target.
    pub fn ok(&self) -> bool {
        self.status.as_deref().is_none_or(|s| s == "ok")
    }
}

#[derive(Deserialize)]
struct Manifest {
    cases: Vec<StudyCase>,
}

/// Why a directory's manifest does not read; each command words these itself (after the directory's name), the
/// wording here is for the rest.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// No readable `study.json` (the I/O error).
    #[error("a directory without a readable study.json ({0}); give a study's output directory")]
    Unreadable(std::io::Error),
    /// It is not a manifest: where and why (serde's message without its position).
    #[error("line {line} column {column}: not a study manifest ({reason})")]
    NotAManifest { line: usize, column: usize, reason: String },
}

/// The cases of the study in `dir`, in the manifest's order.
pub fn read_cases(dir: &Path) -> Result<Vec<StudyCase>, ManifestError> {
    let text = crate::base::bounded::read_text_io(&dir.join(MANIFEST), crate::base::bounded::RESULT)
        .map_err(ManifestError::Unreadable)?;
    // Read by its first character rather than as an untagged enum, so an error keeps its line and column.
    if text.trim_start().starts_with('[') {
        serde_json::from_str::<Vec<StudyCase>>(&text)
    } else {
        serde_json::from_str::<Manifest>(&text).map(|m| m.cases)
    }
    .map_err(|e| ManifestError::NotAManifest { line: e.line(), column: e.column(), reason: json_reason(&e) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_shapes_read_and_a_bad_one_says_where() {
        let dir = tempfile::tempdir().unwrap();
        let case = r#"{"target": "a", "workload": "w", "status": "failed", "file": null, "extra": 1}"#;
        std::fs::write(dir.path().join(MANIFEST), format!(r#"{{"study": "s", "cases": [{case}]}}"#)).unwrap();
        let cases = read_cases(dir.path()).unwrap();
        assert_eq!((cases[0].target.as_str(), cases[0].workload.as_deref(), cases[0].ok()), ("a", Some("w"), false));
        std::fs::write(dir.path().join(MANIFEST), r#"[{"target": "b"}]"#).unwrap();
        let cases = read_cases(dir.path()).unwrap();
        assert!(cases[0].ok() && cases[0].phase.is_none());
        std::fs::write(dir.path().join(MANIFEST), "{\"cases\": [\n{\"file\": 1}]}").unwrap();
        match read_cases(dir.path()) {
            Err(ManifestError::NotAManifest { line: 2, reason, .. }) => {
                assert!(!reason.contains(" at line "), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(read_cases(&dir.path().join("none")), Err(ManifestError::Unreadable(_))));
    }
}
