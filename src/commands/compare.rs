//! `hakaru compare A B [C...]`: results side by side against the first (or `--baseline`), as text, JSON or
//! Markdown; exit code 1 when a `--fail-if` gate finds a side significantly worse by more than its factor.

use std::io::Write as _;
use std::process::ExitCode;

use crate::cli::args::CompareArgs;
use crate::compare::input::{Loaded, load};
use crate::compare::{Comparison, FailIf, Group, compare_groups, judge_fail_ifs, render};
use crate::error::CliError;
use crate::export::{is_stdout, write_atomically};
use crate::inputs::names::Names;

pub fn compare(a: &CompareArgs) -> Result<ExitCode, CliError> {
    let gates = a.fail_if.iter().map(|t| FailIf::parse(t)).collect::<Result<Vec<_>, _>>()?;
    if a.inputs.len() == 1 && !std::path::Path::new(&a.inputs[0]).is_dir() {
        return Err(CliError::new(format!(
            "compare '{}': one input; give two or more result files, or a study directory",
            a.inputs[0]
        )));
    }
    // An output on an input would destroy what is compared.
    for (flag, out) in [("--json", &a.json), ("--markdown", &a.markdown)] {
        let Some(out) = out else { continue };
        let named = a.inputs.iter().flat_map(|i| i.split(',')).any(|i| std::path::Path::new(i.trim()) == out);
        if named {
            return Err(CliError::new(format!(
                "{flag} '{}': that is an input; write the comparison to another file",
                out.display()
            )));
        }
    }
    let names = Names::parse(&a.names).map_err(CliError::new)?;
    let mut sides = Vec::new();
    let mut studies = Vec::new();
    for input in &a.inputs {
        let from_history = |reference: &str| super::history::documents(a.db.as_deref(), "compare", reference);
        match load(input, &from_history)? {
            Loaded::Side(mut s) => {
                let mut candidates = vec![input.as_str(), s.name.as_str()];
                candidates.extend(s.targets.iter().map(String::as_str));
                if let Some(label) = names.label(&candidates) {
                    s.name = label.to_string();
                }
                sides.push(s);
            }
            Loaded::Study(mut groups) => {
                // A study's sides are its targets, by name.
                for side in groups.iter_mut().flat_map(|g| g.sides.iter_mut()) {
                    if let Some(label) = names.label(&[side.name.as_str()]) {
                        side.name = label.to_string();
                    }
                }
                studies.push((input, groups));
            }
        }
    }
    if let Some(unused) = names.unused() {
        return Err(CliError::new(unused));
    }
    let groups: Vec<Group> = match (studies.len(), sides.len()) {
        (0, _) => vec![Group { title: String::new(), sides }],
        (1, 0) => studies.pop().expect("one study").1,
        _ => {
            return Err(CliError::new(format!(
                "compare {}: a study directory is compared alone (its targets against each other); give it \
                 without other inputs",
                studies[0].0
            )));
        }
    };
    let compared = compare_groups(&groups, a.baseline.as_deref())?;
    let fail_if = judge_fail_ifs(&compared, &gates);
    let comparison = Comparison { schema: "hakaru.compare/1".into(), groups: compared, fail_if };
    let mut to_stdout = false;
    let mut write = |path: &std::path::Path, text: String| -> Result<(), CliError> {
        to_stdout |= is_stdout(path);
        write_atomically(path, &text).map_err(|e| CliError::runtime(format!("writing '{}': {e}", path.display())))
    };
    if let Some(p) = &a.json {
        let text = serde_json::to_string_pretty(&comparison).expect("a comparison serializes") + "\n";
        write(p, text)?;
    }
    if let Some(p) = &a.markdown {
        write(p, render::markdown(&comparison))?;
    }
    // The table goes to the terminal; to stderr when a file went to standard output, which stays clean.
    let text = render::text(&comparison);
    let _ =
        if to_stdout { write!(std::io::stderr().lock(), "{text}") } else { write!(std::io::stdout().lock(), "{text}") };
    Ok(if comparison.fail_if.iter().any(|r| r.failed) { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
