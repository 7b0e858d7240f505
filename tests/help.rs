//! The help teaches (issue 27): `-h` is short with the common flags first, every measuring command ends its help
//! with three examples, the help of `run` and `kv` changes only on purpose (snapshots in tests/golden/), and a
//! misspelled flag gets clap's "did you mean" and the command's own help.
//!
//! Set HAKARU_UPDATE_GOLDEN=1 to rewrite tests/golden/help_*.txt after a deliberate change of the help.

use std::path::Path;
use std::process::Command;

/// hakaru's standard output, standard error and exit code for `args`, at a fixed terminal width. clap wraps help
/// to the terminal only with its `wrap_help` feature (off today); with it, a captured stdout has no terminal and
/// clap reads COLUMNS, so the snapshots hold either way.
fn hakaru(args: &[&str]) -> (String, String, i32) {
    let out =
        Command::new(env!("CARGO_BIN_EXE_hakaru")).args(args).env("COLUMNS", "100").output().expect("hakaru runs");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (text(&out.stdout), text(&out.stderr), out.status.code().unwrap_or(-1))
}

/// The help `args` print, which must succeed.
fn help(args: &[&str]) -> String {
    let (stdout, stderr, code) = hakaru(args);
    assert_eq!(code, 0, "{args:?}: {stderr}");
    stdout
}

/// Compares `text` with tests/golden/`name`, or rewrites the file when HAKARU_UPDATE_GOLDEN is set.
fn golden(name: &str, text: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
    if std::env::var_os("HAKARU_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, text).unwrap();
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run with HAKARU_UPDATE_GOLDEN=1", path.display()));
    assert!(
        text == expected,
        "the help differs from {}; if on purpose, run with HAKARU_UPDATE_GOLDEN=1",
        path.display()
    );
}

/// The 1-based line of `text` that starts (after indentation) with `flag`.
fn line_of(text: &str, flag: &str) -> Option<usize> {
    text.lines().position(|l| l.trim_start().starts_with(flag)).map(|i| i + 1)
}

#[test]
fn the_help_of_run_and_kv_changes_only_on_purpose() {
    golden("help_run_short.txt", &help(&["run", "-h"]));
    golden("help_run_long.txt", &help(&["run", "--help"]));
    golden("help_kv_short.txt", &help(&["kv", "-h"]));
    golden("help_kv_long.txt", &help(&["kv", "--help"]));
}

#[test]
fn run_h_shows_the_common_flags_within_its_first_25_lines() {
    let text = help(&["run", "-h"]);
    for flag in ["-c, --connections", "-n, --requests", "-d, --duration", "--rate", "-H, --header", "--json"] {
        let line = line_of(&text, flag).unwrap_or_else(|| panic!("{flag} not in run -h:\n{text}"));
        assert!(line <= 25, "{flag} at line {line} of run -h:\n{text}");
    }
    // Short: one line a flag, the rare ones left to --help.
    assert!(text.lines().count() <= 65, "run -h is {} lines:\n{text}", text.lines().count());
    assert!(!text.contains("--agent-netns") && !text.contains("--redact-header"), "{text}");
    let long = help(&["run", "--help"]);
    assert!(long.contains("--agent-netns") && long.contains("--redact-header"), "{long}");
}

#[test]
fn every_measuring_command_groups_its_flags_and_ends_with_three_examples() {
    for command in ["run", "sweep", "capacity", "kv"] {
        for flag in ["-h", "--help"] {
            let text = help(&[command, flag]);
            for heading in ["Options:", "Watching the server:", "Load:", "Output:", "History:"] {
                assert!(text.lines().any(|l| l == heading), "{command} {flag} has no {heading}:\n{text}");
            }
            let examples = text.split("\nExamples:\n").nth(1).unwrap_or_else(|| panic!("{command} {flag}:\n{text}"));
            let lines = examples.lines().filter(|l| l.trim_start().starts_with(&format!("hakaru {command} ")));
            assert_eq!(lines.count(), 3, "{command} {flag}:\n{examples}");
        }
        // -h names the longer help.
        assert!(help(&[command, "-h"]).contains(&format!("hakaru {command} --help")), "{command}");
    }
}

#[test]
fn a_misspelled_flag_gets_did_you_mean_and_the_commands_own_help() {
    for (args, similar, own) in [
        (&["run", "--conections", "5", "http://127.0.0.1:1/"][..], "'--connections'", "hakaru run --help"),
        (&["kv", "--piplein", "4", "redis://127.0.0.1:1"][..], "'--pipeline'", "hakaru kv --help"),
        (&["sweep", "--client", "1,2", "http://127.0.0.1:1/"][..], "'--clients'", "hakaru sweep --help"),
        (
            &["capacity", "--slo", "p99<5ms", "--rate-strat", "5", "http://127.0.0.1:1/"][..],
            "'--rate-start'",
            "hakaru capacity --help",
        ),
    ] {
        let (stdout, stderr, code) = hakaru(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "one line for {args:?}:\n{stderr}");
        assert!(lines[0].contains(&format!("a similar argument exists: {similar}")), "{}", lines[0]);
        assert!(lines[0].contains(&format!("see '{own}'")), "{}", lines[0]);
    }
}
