//! `--name LABEL=WHAT` (compare, report, chart): the label an input goes by in every table, line and verdict,
//! given for the input as typed (`a.json`, `42`), for a result's target URL, or for a study's target name.

use std::cell::Cell;

/// The labels asked for, in the order given, each marked once it labelled something.
#[derive(Debug, Default)]
pub struct Names {
    given: Vec<(String, String, Cell<bool>)>,
}

/// What the example in every message shows.
const EXAMPLE: &str = "e.g. --name nginx=http://127.0.0.1:8080/ or --name before=a.json";

impl Names {
    /// Reads the `--name` values; Err is the message naming the value and the fix.
    pub fn parse(values: &[String]) -> Result<Names, String> {
        let mut given: Vec<(String, String, Cell<bool>)> = Vec::new();
        for v in values {
            let Some((label, what)) = v.split_once('=').filter(|(l, w)| !l.trim().is_empty() && !w.trim().is_empty())
            else {
                return Err(format!(
                    "--name '{v}': give LABEL=INPUT (an input as typed, a target URL or a study's target), {EXAMPLE}"
                ));
            };
            let (label, what) = (label.trim(), what.trim());
            if let Some((other, _, _)) = given.iter().find(|(_, w, _)| same(w, what)) {
                return Err(format!("--name '{v}': '{what}' is named '{other}' already; give each input one name"));
            }
            if given.iter().any(|(l, _, _)| l == label) {
                return Err(format!("--name '{v}': the label '{label}' is given twice; give each input its own"));
            }
            given.push((label.to_string(), what.to_string(), Cell::new(false)));
        }
        Ok(Names { given })
    }

    /// The label of the first name given for any of `candidates` (the input as typed, its label now, its targets).
    pub fn label(&self, candidates: &[&str]) -> Option<&str> {
        let (label, _, used) = self.given.iter().find(|(_, what, _)| candidates.iter().any(|c| same(c, what)))?;
        used.set(true);
        Some(label)
    }

    /// A name that labelled nothing, as the message that says so; None when every one was used.
    pub fn unused(&self) -> Option<String> {
        let (label, what, _) = self.given.iter().find(|(_, _, used)| !used.get())?;
        Some(format!(
            "--name '{label}={what}': no input is '{what}' or has it as its target; give an input as typed, its \
             target URL or a study's target name, {EXAMPLE}"
        ))
    }
}

/// The same input or URL: as typed, or but for a trailing slash.
fn same(a: &str, b: &str) -> bool {
    a == b || a.trim_end_matches('/') == b.trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Result<Names, String> {
        Names::parse(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn a_name_labels_an_input_its_target_or_a_study_target_and_says_when_it_labelled_nothing() {
        let n = names(&["nginx=http://127.0.0.1:8080", "old=a.json", "fast=a"]).unwrap();
        assert_eq!(n.label(&["b.json", "http://127.0.0.1:8080/"]), Some("nginx"));
        assert_eq!(n.label(&["a.json"]), Some("old"));
        assert_eq!(n.label(&["c.json"]), None);
        let e = n.unused().unwrap();
        assert!(e.starts_with("--name 'fast=a': no input is 'a' or has it as its target;"), "{e}");
        assert_eq!(n.label(&["a"]), Some("fast"));
        assert_eq!(n.unused(), None);
    }

    #[test]
    fn a_bad_name_is_one_line_with_the_fix() {
        for (bad, says) in [
            (&["nginx"][..], "--name 'nginx': give LABEL=INPUT"),
            (&["=a.json"][..], "--name '=a.json': give LABEL=INPUT"),
            (&["a=x.json", "b=x.json"][..], "--name 'b=x.json': 'x.json' is named 'a' already"),
            (&["a=x.json", "a=y.json"][..], "--name 'a=y.json': the label 'a' is given twice"),
        ] {
            let e = names(bad).unwrap_err();
            assert!(e.starts_with(says), "{e}");
        }
    }
}
