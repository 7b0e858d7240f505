//! The [`Recorder`]: where a measuring command's session keeps its final document, the history database (or
//! nowhere, with `--no-history`), under the run's labels.

use std::collections::BTreeMap;
use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};

use super::{Db, database_path, parse_label};
use crate::error::CliError;
use crate::result::ResultDocument;

/// The database (None with `--no-history`) and the labels a run is kept under.
pub struct Recorder {
    path: Option<PathBuf>,
    pub labels: BTreeMap<String, String>,
}

/// `--label` values -> labels; a bad one is one line naming the flag.
pub fn labels(flag_values: &[String]) -> Result<BTreeMap<String, String>, CliError> {
    flag_values.iter().map(|l| parse_label(l).map_err(|why| CliError::new(format!("--label {why}")))).collect()
}

impl Recorder {
    /// Checks the flags' values before any load: labels must read; the database is only opened at the end.
    pub fn new(label_values: &[String], db: Option<&Path>, no_history: bool) -> Result<Recorder, CliError> {
        let mut labels = labels(label_values)?;
        labels.retain(|k, v| {
            let secret = crate::base::secrets::is_secret_label(k, v);
            if secret {
                eprintln!(
                    "hakaru: warning: --label {}=...: it names or holds a secret, so it is kept nowhere (not in the \
                     result, the history or --prometheus-rw)",
                    crate::base::secrets::scrub_text(k)
                );
            }
            !secret
        });
        let path = if no_history { None } else { database_path(db) };
        // A FIFO as --db would hang the end of the run (SQLite's open waits for a writer): bad input before the load.
        // Anything else that is no database is found when the result is kept, a warning that loses nothing.
        use std::os::unix::fs::FileTypeExt as _;
        if let Some(p) = path.as_deref().filter(|p| std::fs::metadata(p).is_ok_and(|m| m.file_type().is_fifo())) {
            super::check_file(p).map_err(super::HistoryError::into_cli)?;
        }
        if !no_history && path.is_none() {
            eprintln!(
                "hakaru: warning: no history: neither --db, HAKARU_DB nor HOME is set; this result is not kept there"
            );
        }
        Ok(Recorder { path, labels })
    }
}

impl crate::run::session::Sink for Recorder {
    fn labels(&self) -> BTreeMap<String, String> {
        self.labels.clone()
    }

    /// Keeps the final document in the history. A failure (a full disk, a locked or broken database) is a warning
    /// line: the result files are already written and the exit code stays as the measurement made it.
    fn record(&self, doc: &ResultDocument) {
        let Some(path) = &self.path else { return };
        match Db::open(path).and_then(|mut db| db.insert(doc, &self.labels)) {
            Ok(id) => {
                // Only on a terminal: scripts read stderr for warnings, and the ID is in `hakaru history`.
                if std::io::stderr().is_terminal() {
                    eprintln!("hakaru: kept in the history as #{id} (hakaru show {id})");
                }
            }
            Err(e) => eprintln!("hakaru: warning: the result was not kept in the history: {e} (the files are written)"),
        }
    }
}
