//! `hakaru merge`: the agents' result documents of one plan read (`crate::inputs`), merged, printed and written.

use std::io::Write as _;
use std::process::ExitCode;

use crate::cli::args::MergeArgs;
use crate::error::CliError;
use crate::export::{Exporter, is_stdout, json::Json, text::Text, write_atomically};
use crate::inputs::result::{ReadError, read_document};

pub fn merge(a: &MergeArgs) -> Result<ExitCode, CliError> {
    let mut docs = Vec::new();
    let mut names = Vec::new();
    let mut absent = Vec::new();
    for path in &a.files {
        let shown = path.display().to_string();
        let doc = match read_document(path) {
            Ok(doc) => doc,
            // A failed agent never published its document: with --allow-partial, its segment is named as missing.
            Err(ReadError::Unreadable(e)) if a.allow_partial && e.kind() == std::io::ErrorKind::NotFound => {
                absent.push(shown);
                continue;
            }
            Err(ReadError::Unreadable(e)) => {
                return Err(CliError::new(format!(
                    "{shown}: cannot read it ({e}); give the agents' --json files{}",
                    if e.kind() == std::io::ErrorKind::NotFound { " (or --allow-partial)" } else { "" }
                )));
            }
            Err(ReadError::NotADocument(e)) => {
                return Err(CliError::new(format!(
                    "{shown}:{}:{}: not a hakaru result document ({e}); give the agents' --json files",
                    e.line(),
                    e.column()
                )));
            }
            Err(e) => return Err(CliError::new(format!("{shown}: {e}"))),
        };
        docs.push(doc);
        names.push(shown);
    }
    if docs.is_empty() {
        return Err(CliError::runtime(format!("none of the documents is there ({})", absent.join(", "))));
    }
    for shown in &absent {
        eprintln!("hakaru merge: {shown} is not there: its segment is merged as missing (--allow-partial)");
    }
    let merged = crate::judge::merge::merge(&docs, &names, a.allow_partial).map_err(CliError::new)?;
    let to_stdout = a.output.as_deref().is_some_and(is_stdout);
    // The file first: a reader of the summary that goes away (`| head`) must not cost the merged document.
    if let Some(path) = a.output.as_deref().filter(|_| !to_stdout) {
        write_atomically(path, &Json.render(&merged))
            .map_err(|e| CliError::runtime(format!("writing '{}': {e}", path.display())))?;
    }
    let summary = Text.render(&merged);
    if to_stdout {
        let _ = writeln!(std::io::stderr(), "{}", summary.trim_end());
        let _ = write!(std::io::stdout(), "{}", Json.render(&merged));
    } else {
        let _ = writeln!(std::io::stdout(), "{}", summary.trim_end());
    }
    Ok(ExitCode::SUCCESS)
}
