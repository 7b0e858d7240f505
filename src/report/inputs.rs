//! What a report reads: result documents, drnbench CSVs and study directories, each an `Input` labelled for its
//! series (a study's cases told apart by what differs between them).

use super::*;

/// Where the numbers of one input came from, as read.
#[derive(Clone, Debug)]
pub enum Source {
    Result(Box<ResultDocument>),
    /// drnbench-request-response's CSV (or hakaru's copy of it): min, max and mean only, no percentiles.
    Drnbench(Vec<DrnbenchRow>),
}

/// One input with the name its lines carry in the legend.
#[derive(Clone, Debug)]
pub struct Input {
    pub label: String,
    /// The file it was read from, for the reader.
    pub origin: String,
    pub source: Source,
    /// The study case it is, when it came from a study directory: where its verdicts are sorted.
    pub case: Option<Case>,
}

/// A study case's place among the sides `compare` would make of its study.
#[derive(Clone, Debug)]
pub struct Case {
    /// The group (`compare::input::study_group_title`): its workload and phase.
    pub group: String,
    pub target: String,
    /// Every target of the group in the manifest's order, failed cases included: the first is the baseline.
    pub targets: Vec<String>,
    /// The case ran to the end (status `ok`): only such cases are runs of a side.
    pub ok: bool,
}

pub use crate::inputs::drnbench::DrnbenchRow;

/// Turns one input that names a file or a directory into inputs: a result JSON file, a drnbench CSV file or a
/// study directory. History IDs and labels are the command's to look up (only the commands open the history); it
/// gives their documents to [`input_from_document`].
pub fn load_input(arg: &str) -> Result<Vec<Input>, CliError> {
    let path = Path::new(arg);
    if path.is_dir() {
        return load_study(path);
    }
    if !path.exists() {
        return Err(CliError::new(format!(
            "input '{arg}': no such file or directory; give a result JSON file, a drnbench CSV file or a study \
             directory, or a reference the history holds (hakaru history lists them)"
        )));
    }
    load_file(arg).map(|input| vec![input])
}

/// One result file given by name, labelled by its document's one target or else its file stem.
pub fn load_file(arg: &str) -> Result<Input, CliError> {
    let path = Path::new(arg);
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| arg.to_string());
    let contents = read_file(path).map_err(|e| read_error(arg, e))?;
    Ok(input_of(arg, &stem, contents))
}

/// What a file held as one input: a document named by its one target (else `stem`), drnbench's rows by `stem`.
pub(super) fn input_of(origin: &str, stem: &str, contents: Contents) -> Input {
    let (label, source) = match contents {
        Contents::Document(doc) => (doc_label(&doc, stem), Source::Result(doc)),
        Contents::Drnbench(rows) => (stem.to_string(), Source::Drnbench(rows)),
    };
    Input { label, origin: origin.into(), source, case: None }
}

/// An input from a result document read elsewhere (the history), named by its target or else `origin`.
pub fn input_from_document(origin: &str, doc: ResultDocument) -> Input {
    input_of(origin, origin, Contents::Document(Box::new(doc)))
}

/// A document's legend name: its one target URL, else (several targets or none) the file stem.
pub(super) fn doc_label(doc: &ResultDocument, stem: &str) -> String {
    match doc.settings.targets.as_slice() {
        [one] => one.clone(),
        _ => stem.to_string(),
    }
}

/// A result file that does not read (`crate::inputs::result`), as the report says it.
pub(super) fn read_error(origin: &str, e: ReadError) -> CliError {
    CliError::new(match e {
        ReadError::Unreadable(e) => format!("input '{origin}': cannot read it: {e}; give a readable file"),
        ReadError::NotADocument(e) => format!(
            "input '{origin}': line {} column {}: not a hakaru result document: {}; give the JSON that \
             'hakaru run/sweep --json FILE' writes",
            e.line(),
            e.column(),
            json_reason(&e)
        ),
        ReadError::Schema(schema) => format!("input '{origin}': {schema}"),
        e @ ReadError::Impossible(_) => format!("input '{origin}': {e}"),
        ReadError::Drnbench(e @ CsvError::NotDrnbench(_)) => {
            format!("input '{origin}': {e}; give a result JSON or a drnbench CSV")
        }
        ReadError::Drnbench(e @ (CsvError::NotANumber { .. } | CsvError::NotWhole { .. })) => {
            format!("input '{origin}': {e}; fix the cell")
        }
        ReadError::Drnbench(e) => format!("input '{origin}': {e}"),
    })
}

/// Reads a study directory through its manifest: each case's result document, labelled by its target.
pub(super) fn load_study(dir: &Path) -> Result<Vec<Input>, CliError> {
    let shown = dir.join(MANIFEST).display().to_string();
    let cases = read_cases(dir).map_err(|e| {
        CliError::new(match e {
            e @ ManifestError::Unreadable(_) => format!("input '{}': {e}", dir.display()),
            ManifestError::NotAManifest { line, column, reason } => format!(
                "input '{shown}': line {line} column {column}: not a study manifest: {reason}; it lists cases with \
                 target and file"
            ),
        })
    })?;
    let group_of = |c: &StudyCase| {
        crate::compare::input::study_group_title(c.workload.as_deref().unwrap_or(""), c.phase.as_deref().unwrap_or(""))
    };
    let mut inputs = Vec::new();
    for case in &cases {
        let group = group_of(case);
        let mut targets: Vec<String> = Vec::new();
        for c in cases.iter().filter(|c| group_of(c) == group) {
            if !targets.contains(&c.target) {
                targets.push(c.target.clone());
            }
        }
        let tag = Case { group, target: case.target.clone(), targets, ok: case.ok() };
        let Some(file) = &case.file else { continue };
        let path = dir.join(file);
        // A failed case may have no result; one that has a file is read like any other input.
        if !path.is_file() && case.status.as_deref().is_some_and(|s| s != "ok" && s != "done") {
            continue;
        }
        let origin = path.display().to_string();
        let contents = read_file(&path).map_err(|e| match e {
            ReadError::Unreadable(e) => {
                CliError::new(format!("input '{shown}': case file '{file}': cannot read it: {e}; rerun the case"))
            }
            e => read_error(&origin, e),
        })?;
        let mut input = input_of(&origin, &case.target, contents);
        input.label = case.target.clone();
        input.case = Some(tag.clone());
        inputs.push((input, case.clone()));
    }
    Ok(disambiguate(inputs))
}

/// Study cases share their target's name; cases that would share a legend entry are told apart by their
/// workload, phase and repetition, in that order, only as far as needed.
pub(super) fn disambiguate(cases: Vec<(Input, StudyCase)>) -> Vec<Input> {
    let count = |key: &dyn Fn(&StudyCase) -> String| {
        let mut n: BTreeMap<String, usize> = BTreeMap::new();
        for (_, c) in &cases {
            *n.entry(key(c)).or_default() += 1;
        }
        n
    };
    let by_target = count(&|c| c.target.clone());
    let with_workload = |c: &StudyCase| format!("{} {}", c.target, c.workload.clone().unwrap_or_default());
    let by_workload = count(&with_workload);
    let with_phase = |c: &StudyCase| format!("{} {}", with_workload(c), c.phase.clone().unwrap_or_default());
    let by_phase = count(&with_phase);
    cases
        .iter()
        .map(|(input, c)| {
            let mut label = c.target.clone();
            if by_target[&c.target] > 1 {
                let mut parts: Vec<String> = Vec::new();
                if let Some(w) = c.workload.as_ref().filter(|_| by_workload.len() > by_target.len()) {
                    parts.push(w.clone());
                }
                if let Some(p) = c.phase.as_ref().filter(|_| by_phase.len() > by_workload.len()) {
                    parts.push(p.clone());
                }
                if by_phase[&with_phase(c)] > 1 {
                    parts.push(format!("#{}", c.repetition.unwrap_or(0)));
                }
                if !parts.is_empty() {
                    label = format!("{label} {}", parts.join(" "));
                }
            }
            Input { label, ..input.clone() }
        })
        .collect()
}
