//! `study.json`, the manifest of a study's output directory: one entry per case in the order the cases run,
//! rewritten after each case. `compare`, `report` and history read it, so its shape is fixed:
//! `{"study", "file", "cases": [{"id", "target", "workload", "phase", "repetition", "status", "file", "error",
//! "command"}]}`.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The manifest's file name inside a study's output directory.
pub const MANIFEST: &str = "study.json";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The study's name.
    pub study: String,
    /// The study file's path as given.
    pub file: String,
    /// Every case of the plan, in the order they run (repetition outermost).
    pub cases: Vec<CaseEntry>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseEntry {
    pub id: String,
    pub target: String,
    pub workload: String,
    pub phase: String,
    /// 1-based.
    pub repetition: u32,
    pub status: CaseStatus,
    /// The case's result document, relative to the study directory (`cases/ID.json`); null when there is none.
    pub file: Option<String>,
    /// Why the case failed or was skipped; null when it is ok.
    pub error: Option<String>,
    /// The arguments the case ran with (`hakaru run ...`), secrets redacted.
    pub command: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CaseStatus {
    /// Ran to the end; its result document is complete.
    Ok,
    /// Its target did not start, its `before` command or the case failed, or it was interrupted (its file, when
    /// there is one, holds what was measured until then).
    Failed,
    /// Not run (yet): the study was stopped before it.
    Skipped,
}

impl Manifest {
    /// Reads a study directory's manifest.
    pub fn read(dir: &Path) -> Result<Manifest, String> {
        let path = dir.join(MANIFEST);
        let text = crate::base::bounded::read_text_io(&path, crate::base::bounded::RESULT)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: not a study manifest ({e})", path.display()))
    }

    /// Writes it atomically (a reader sees the previous complete manifest or the new one), every string scrubbed
    /// of secrets (a failed `before` command quoted in an error may hold a token), its fields in their order.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let text = crate::base::secrets::scrubbed_json(self).map_err(std::io::Error::other)?;
        crate::export::write_atomically(&dir.join(MANIFEST), &(text + "\n"))
    }

    /// The entries that ran to the end.
    pub fn ok(&self) -> impl Iterator<Item = &CaseEntry> {
        self.cases.iter().filter(|c| c.status == CaseStatus::Ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shape_other_commands_read_is_kept() {
        let m = Manifest {
            study: "s".into(),
            file: "s.toml".into(),
            cases: vec![CaseEntry {
                id: "r1-a-w-p".into(),
                target: "a".into(),
                workload: "w".into(),
                phase: "p".into(),
                repetition: 1,
                status: CaseStatus::Ok,
                file: Some("cases/r1-a-w-p.json".into()),
                error: None,
                command: vec!["hakaru".into(), "run".into()],
            }],
        };
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"study": "s", "file": "s.toml", "cases": [{"id": "r1-a-w-p", "target": "a",
                "workload": "w", "phase": "p", "repetition": 1, "status": "ok", "file": "cases/r1-a-w-p.json",
                "error": null, "command": ["hakaru", "run"]}]})
        );
        let dir = tempfile::tempdir().unwrap();
        m.write(dir.path()).unwrap();
        assert_eq!(Manifest::read(dir.path()).unwrap(), m);
    }
}
