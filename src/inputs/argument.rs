//! One command-line input of `compare`, `report` or `chart`, told apart: a study directory, a file or several
//! joined by commas, or else a reference to a result in the history (`42`, `last`, `label=main`), which the
//! command looks up.

use std::path::Path;

/// What one input names.
#[derive(Clone, Debug, PartialEq)]
pub enum Argument<'a> {
    /// A study's output directory.
    Study(&'a Path),
    /// Result files, in the order given: one, or several joined by commas (compare pools them as one side).
    Files(Vec<&'a str>),
    /// Not a file: a history reference, as given.
    Reference(&'a str),
}

/// Why an input names nothing to read.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgumentError<'a> {
    /// Nothing but commas and spaces.
    Empty,
    /// A list of several names, this one not a file (a history reference stands alone).
    NotAFile(&'a str),
}

/// Something that can be read as a file: anything but a directory (a pipe, `/dev/stdin`, too).
fn a_file(name: &str) -> bool {
    let path = Path::new(name);
    path.exists() && !path.is_dir()
}

/// Tells what `input` names. A file whose own name holds a comma is that file, not a list.
pub fn classify(input: &str) -> Result<Argument<'_>, ArgumentError<'_>> {
    let path = Path::new(input);
    if path.is_dir() {
        return Ok(Argument::Study(path));
    }
    if a_file(input) {
        return Ok(Argument::Files(vec![input]));
    }
    let parts: Vec<&str> = input.split(',').map(str::trim).filter(|p| !p.is_empty()).collect();
    match parts.iter().find(|p| !a_file(p)) {
        _ if parts.is_empty() => Err(ArgumentError::Empty),
        None => Ok(Argument::Files(parts)),
        Some(_) if parts.len() == 1 => Ok(Argument::Reference(input)),
        Some(missing) => Err(ArgumentError::NotAFile(missing)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_files_lists_and_references_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.json");
        let odd = dir.path().join("x,y.json");
        std::fs::write(&a, "{}").unwrap();
        std::fs::write(&odd, "{}").unwrap();
        let (a, odd, d) = (a.to_str().unwrap(), odd.to_str().unwrap(), dir.path().to_str().unwrap());
        assert_eq!(classify(d), Ok(Argument::Study(dir.path())));
        assert_eq!(classify(odd), Ok(Argument::Files(vec![odd])));
        let list = format!("{a}, {a},");
        assert_eq!(classify(&list), Ok(Argument::Files(vec![a, a])));
        assert_eq!(classify("label=main"), Ok(Argument::Reference("label=main")));
        assert_eq!(classify(" , "), Err(ArgumentError::Empty));
        let list = format!("{a},nowhere.json");
        assert_eq!(classify(&list), Err(ArgumentError::NotAFile("nowhere.json")));
    }
}
