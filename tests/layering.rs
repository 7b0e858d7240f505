//! The layering of `src/` stays true: raw flags at the bottom importing nothing, read only by the plan and the
//! commands; no library module names the commands; no import cycle between top-level modules.
//!
//! A top-level module is a file or folder directly under `src/`. References are read as text (`crate::name`,
//! `hakaru::name`, `super::name` at the top level), with comments left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `src/`, with its path relative to `src/` and its code without comments.
fn sources() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&root, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
            let text = std::fs::read_to_string(&p).unwrap();
            (rel, without_comments(&text))
        })
        .collect()
}

/// The code of a file with `//` comments removed (a `//` inside a string cuts the line short, which can only hide
/// a reference, never invent one).
fn without_comments(text: &str) -> String {
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The top-level module a file belongs to: `engine/conn.rs` -> `engine`, `plan/mod.rs` -> `plan`, `lib.rs` ->
/// `step`; `main.rs` and `lib.rs` are the crate root.
fn top_module(rel: &str) -> String {
    match rel.split_once('/') {
        Some((dir, _)) => dir.to_string(),
        None => rel.trim_end_matches(".rs").to_string(),
    }
}

/// The top-level modules a file's code names, as `crate::x`, `hakaru::x` or (in a top-level file) `super::x`.
fn references(rel: &str, code: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut prefixes = vec!["crate::", "hakaru::"];
    if !rel.contains('/') {
        prefixes.push("super::");
    }
    let mut found = BTreeSet::new();
    for prefix in prefixes {
        for (at, _) in code.match_indices(prefix) {
            // `crate::` inside another path (`foo_crate::`) is not a reference.
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let rest = &code[at + prefix.len()..];
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if modules.contains(&name) {
                found.insert(name);
            }
            // `use crate::{a, b::c}` names several modules at once.
            if rest.starts_with('{') {
                let group = &rest[1..rest.find('}').unwrap_or(rest.len())];
                for part in group.split(',') {
                    let name: String = part.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                    if modules.contains(&name) {
                        found.insert(name);
                    }
                }
            }
        }
    }
    found
}

fn modules(files: &[(String, String)]) -> BTreeSet<String> {
    files.iter().map(|(rel, _)| top_module(rel)).filter(|m| m != "main" && m != "lib").collect()
}

/// The files outside the `allowed` top-level modules whose code names the top-level module `named`.
fn files_naming(named: &str, allowed: &[&str]) -> Vec<String> {
    let files = sources();
    let mods = modules(&files);
    files
        .iter()
        .filter(|(rel, _)| !allowed.contains(&top_module(rel).as_str()))
        .filter(|(rel, code)| references(rel, code, &mods).contains(named))
        .map(|(rel, _)| rel.clone())
        .collect()
}

#[test]
fn only_the_plan_the_commands_and_main_read_the_command_line_types() {
    // A study renders its cases' command lines from the typed flags the child parses (cli::render).
    let offenders = files_naming("cli", &["cli", "plan", "study", "commands", "main", "lib"]);
    assert!(offenders.is_empty(), "these files name the clap argument module `cli`: {offenders:?}");
}

#[test]
fn only_the_command_line_types_the_plan_and_the_commands_use_clap() {
    // clap's traits (ValueEnum::from_str, Parser) read raw flags: a library module that calls them parses words
    // the way the command line does, beside the plan's own reading of them.
    let offenders: Vec<String> = sources()
        .into_iter()
        .filter(|(rel, _)| !["cli", "plan", "commands", "main", "lib"].contains(&top_module(rel).as_str()))
        .filter(|(_, code)| names_clap(code))
        .map(|(rel, _)| rel)
        .collect();
    assert!(offenders.is_empty(), "these files use clap outside cli/, plan/ and commands/: {offenders:?}");
}

/// Whether code names the clap crate (`clap::`, `use clap`), not as part of a longer name (`my_clap::`).
fn names_clap(code: &str) -> bool {
    code.match_indices("clap").any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = &code[at + 4..];
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && (after.starts_with("::") || after.starts_with(';'))
    })
}

#[test]
fn the_clap_reader_sees_paths_and_imports_only() {
    assert!(names_clap("let a = <ArrivalArg as clap::ValueEnum>::from_str(x, true);"));
    assert!(names_clap("use clap::Parser;"));
    assert!(names_clap("extern crate clap;"));
    assert!(!names_clap("let my_clap::x = 1; let clapping = 2;"));
}

#[test]
fn no_library_module_names_the_commands() {
    let offenders = files_naming("commands", &["commands", "main", "lib"]);
    assert!(offenders.is_empty(), "library files that name `commands`: {offenders:?}");
}

#[test]
fn only_the_commands_use_the_history() {
    // The history sits beside the exporters: it reads result documents; the library below it never writes there.
    let offenders = files_naming("history", &["history", "commands", "main", "lib"]);
    assert!(offenders.is_empty(), "library files that name `history`: {offenders:?}");
}

#[test]
fn the_command_line_types_import_nothing_from_the_crate() {
    let files = sources();
    let mods = modules(&files);
    for (rel, code) in files.iter().filter(|(rel, _)| top_module(rel) == "cli") {
        let named: Vec<String> = references(rel, code, &mods).into_iter().filter(|m| m != "cli").collect();
        assert!(named.is_empty(), "src/{rel} imports {named:?}; the raw flags must import nothing from the crate");
    }
}

#[test]
fn top_level_modules_import_each_other_without_a_cycle() {
    let files = sources();
    let mods = modules(&files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = mods.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    for (rel, code) in &files {
        let top = top_module(rel);
        if top == "main" || top == "lib" {
            continue;
        }
        for r in references(rel, code, &mods) {
            if r != top {
                graph.get_mut(&top).unwrap().insert(r);
            }
        }
    }
    // Depth-first search; a module met again while still on the path closes a cycle.
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == m) {
            let mut cycle = path[at..].to_vec();
            cycle.push(m.to_string());
            return Some(cycle);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for next in &graph[m] {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        if let Some(cycle) = visit(m, &graph, &mut Vec::new(), &mut done) {
            panic!("import cycle between top-level modules: {}", cycle.join(" -> "));
        }
    }
}

#[test]
fn the_reference_reader_sees_grouped_and_plain_imports_and_skips_comments() {
    let mods: BTreeSet<String> = ["cli", "plan", "engine"].iter().map(|s| s.to_string()).collect();
    let code = without_comments("use crate::{plan::RunPlan, engine};\n// crate::cli is named in a comment\n");
    let found = references("step.rs", &code, &mods);
    assert_eq!(found, ["engine", "plan"].iter().map(|s| s.to_string()).collect());
    let found = references("commands/run.rs", "let x = hakaru::cli::args::Cli::parse();", &mods);
    assert!(found.contains("cli"));
    assert!(references("x.rs", "let my_crate::cli = 1;", &mods).is_empty());
}

#[test]
fn the_root_of_src_holds_only_the_crates_entry_points_and_its_error() {
    // Every other file is in a folder named for its part of the flow (docs/architecture.md).
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut loose: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|n| !["main.rs", "lib.rs", "error.rs"].contains(&n.as_str()))
        .collect();
    loose.sort();
    assert!(loose.is_empty(), "files loose in src/: {loose:?}; put each in the folder of its part of the flow");
}
