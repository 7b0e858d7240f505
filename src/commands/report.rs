//! `hakaru report`: result JSON files, drnbench CSVs and study directories into one self-contained HTML page.

use std::path::Path;
use std::process::ExitCode;

use crate::cli::args::ReportArgs;
use crate::error::CliError;
use crate::export::{check_output, write_shareable_atomically};
use crate::inputs::argument::{Argument, ArgumentError, classify};
use crate::inputs::names::Names;
use crate::report::{Input, Report, Source, html, load_file, load_input};

pub fn report(a: &ReportArgs) -> Result<ExitCode, CliError> {
    let output = Path::new(&a.output);
    check_writable("-o", output)?;
    let inputs = load_all(&a.from)?;
    let page = html::render(&Report::build(&a.title, &inputs));
    write_shareable_atomically(output, page.as_bytes())
        .map_err(|e| CliError::runtime(format!("-o {}: cannot write the report: {e}", output.display())))?;
    let shown = crate::base::units::count_of(inputs.len() as u64, "input");
    eprintln!("hakaru: wrote {} ({shown}, {} kB)", output.display(), page.len().div_ceil(1024));
    Ok(ExitCode::SUCCESS)
}

/// Every input read, in the order given (a study directory, files joined by commas, or a history reference, as
/// `compare` takes them), each labelled as `--name` asks; the first bad one is reported.
pub(super) fn load_all(from: &crate::cli::args::ResultInputs) -> Result<Vec<Input>, CliError> {
    let (args, db) = (&from.inputs, from.db.as_deref());
    let names = Names::parse(&from.names).map_err(CliError::new)?;
    let mut inputs = Vec::new();
    for arg in args {
        let first = inputs.len();
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
                return Err(CliError::new(format!(
                    "input '{arg}': an empty input; give a result JSON file, a drnbench CSV file or a study \
                     directory, or a reference the history holds"
                )));
            }
            Err(ArgumentError::NotAFile(missing)) => {
                return Err(CliError::new(format!(
                    "input '{arg}': '{missing}' is not a file; join result files with commas, or give one reference \
                     the history holds"
                )));
            }
        }
        for input in &mut inputs[first..] {
            name_input(input, arg, &names);
        }
    }
    if let Some(unused) = names.unused() {
        return Err(CliError::new(unused));
    }
    if inputs.is_empty() {
        return Err(CliError::new(
            "the inputs hold no results (a study directory without finished cases?); give result JSON or drnbench CSV files",
        ));
    }
    Ok(inputs)
}

/// Gives `input` (read from `arg`) the label `--name` asks for it: by the argument, the file or its document's
/// target. A study's case goes by its target's name, renamed alike in every case (its verdicts are sorted by it).
fn name_input(input: &mut Input, arg: &str, names: &Names) {
    if let Some(case) = &mut input.case {
        for t in case.targets.iter_mut() {
            if let Some(label) = names.label(&[t.as_str()]) {
                *t = label.to_string();
            }
        }
        if let Some(label) = names.label(&[case.target.as_str()]) {
            case.target = label.to_string();
            input.label = label.to_string();
        }
        return;
    }
    let targets = match &input.source {
        Source::Result(doc) => doc.settings.targets.clone(),
        Source::Drnbench(_) => Vec::new(),
    };
    let origin = input.origin.clone();
    let mut candidates = vec![arg, origin.as_str(), input.label.as_str()];
    candidates.extend(targets.iter().map(String::as_str));
    if let Some(label) = names.label(&candidates) {
        input.label = label.to_string();
    }
}

/// Refuses an output that cannot be written before anything is read.
pub(super) fn check_writable(flag: &str, path: &Path) -> Result<(), CliError> {
    check_output(path).map_err(|e| {
        CliError::new(format!("{flag} {}: cannot write there: {e}; give a writable file path", path.display()))
    })
}
