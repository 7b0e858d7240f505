//! `hakaru report`: result JSON files, drnbench CSVs and study directories into one self-contained HTML page.

use std::path::Path;
use std::process::ExitCode;

use crate::cli::args::ReportArgs;
use crate::error::UsageError;
use crate::export::{check_output, write_atomically};
use crate::inputs::argument::{Argument, ArgumentError, classify};
use crate::report::{Input, Report, html, load_file, load_input};

pub fn report(a: &ReportArgs) -> Result<ExitCode, UsageError> {
    let output = Path::new(&a.output);
    check_writable("-o", output)?;
    let inputs = load_all(&a.inputs, a.db.as_deref())?;
    let page = html::render(&Report::build(&a.title, &inputs));
    write_atomically(output, &page)
        .map_err(|e| UsageError::runtime(format!("-o {}: cannot write the report: {e}", output.display())))?;
    eprintln!("hakaru: wrote {} ({} inputs, {} kB)", output.display(), inputs.len(), page.len().div_ceil(1024));
    Ok(ExitCode::SUCCESS)
}

/// Every input read, in the order given (a study directory, files joined by commas, or a history reference, as
/// `compare` takes them); the first bad one is reported.
pub(super) fn load_all(args: &[String], db: Option<&std::path::Path>) -> Result<Vec<Input>, UsageError> {
    let mut inputs = Vec::new();
    for arg in args {
        match classify(arg) {
            Ok(Argument::Study(_)) => inputs.extend(load_input(arg)?),
            Ok(Argument::Files(files)) => {
                for file in files {
                    inputs.push(load_file(file)?);
                }
            }
            Ok(Argument::Reference(reference)) => {
                for doc in super::history::documents(db, "input", reference)? {
                    inputs.push(crate::report::input_from_document(arg, doc));
                }
            }
            Err(ArgumentError::Empty) => {
                return Err(UsageError::new(format!(
                    "input '{arg}': an empty input; give a result JSON file, a drnbench CSV file or a study \
                     directory, or a reference the history holds"
                )));
            }
            Err(ArgumentError::NotAFile(missing)) => {
                return Err(UsageError::new(format!(
                    "input '{arg}': '{missing}' is not a file; join result files with commas, or give one reference \
                     the history holds"
                )));
            }
        }
    }
    if inputs.is_empty() {
        return Err(UsageError::new(
            "the inputs hold no results (a study directory without finished cases?); give result JSON or drnbench CSV files",
        ));
    }
    Ok(inputs)
}

/// Refuses an output that cannot be written before anything is read.
pub(super) fn check_writable(flag: &str, path: &Path) -> Result<(), UsageError> {
    check_output(path).map_err(|e| {
        UsageError::new(format!("{flag} {}: cannot write there: {e}; give a writable file path", path.display()))
    })
}
