//! The README stays true: every hakaru command of its "Coming from another tool" table parses with hakaru's own
//! command line (clap, no `--help`, nothing run), and its first command names a profile Cargo.toml has.

use clap::Parser as _;
use hakaru::cli::args::Cli;
use hakaru::cli::help::example_words;

/// `line`'s words; an unclosed quote fails the test.
fn words(line: &str) -> Vec<String> {
    example_words(line).unwrap_or_else(|| panic!("an unclosed quote in {line}"))
}

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
}

/// The lines of the README's section under `heading`, up to the next `## `.
fn section(text: &str, heading: &str) -> Vec<String> {
    let mut lines = text.lines().skip_while(|l| *l != heading);
    assert!(lines.next().is_some(), "the README has no '{heading}'");
    lines.take_while(|l| !l.starts_with("## ")).map(str::to_string).collect()
}

/// The hakaru commands of the table: the third cell of each row, between backticks.
fn table_commands() -> Vec<(String, String)> {
    section(&readme(), "## Coming from another tool")
        .iter()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| Tool"))
        .map(|row| {
            let cells: Vec<&str> = row.split(" | ").collect();
            let tool = cells[0].trim_start_matches("| ").to_string();
            let command = cells.get(2).and_then(|c| c.strip_prefix('`')).and_then(|c| c.strip_suffix('`'));
            (tool, command.unwrap_or_else(|| panic!("no `hakaru ...` in the third cell: {row}")).to_string())
        })
        .collect()
}

#[test]
fn every_command_of_the_coming_from_table_parses() {
    let commands = table_commands();
    let tools: Vec<&str> = commands.iter().map(|(t, _)| t.as_str()).collect();
    for tool in ["ab", "wrk", "h2load", "oha", "hey", "redis-benchmark", "memtier_benchmark", "drnbench", "loadtest"] {
        assert!(tools.contains(&tool), "no row for {tool}: {tools:?}");
    }
    for (tool, command) in &commands {
        let argv = words(command);
        assert_eq!(argv[0], "hakaru", "{tool}: {command}");
        if let Err(e) = Cli::try_parse_from(&argv) {
            panic!("{tool}: `{command}` does not parse:\n{e}");
        }
    }
}

/// The peers' commands of the table (the second cell) with `hakaru run` for the tool's name: each either parses as
/// hakaru's own (the flags mean the same here) or gets a line naming hakaru's flag (`habits::misread`).
#[test]
fn every_peers_command_of_the_table_parses_or_names_hakarus_flag() {
    let rows: Vec<(String, String)> = section(&readme(), "## Coming from another tool")
        .iter()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| Tool"))
        .filter_map(|row| {
            let cells: Vec<&str> = row.split(" | ").collect();
            let peer = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?.replace("URL", "http://127.0.0.1:8080/");
            Some((cells[0].trim_start_matches("| ").to_string(), peer))
        })
        .collect();
    let http = ["ab", "wrk", "h2load", "oha", "hey", "ghz", "loadtest", "nighthawk", "vLLM's benchmark"];
    let mut checked = 0;
    for (tool, peer) in rows.iter().filter(|(t, _)| http.iter().any(|h| t.starts_with(h))) {
        let mut argv = words(peer);
        // The tool's own words (`vllm bench serve`) up to its first flag become `hakaru run`.
        let first_flag = argv.iter().position(|w| w.starts_with('-')).unwrap_or(argv.len());
        argv.splice(..first_flag, ["hakaru".to_string(), "run".to_string()]);
        let os: Vec<std::ffi::OsString> = argv.iter().map(Into::into).collect();
        let said = hakaru::commands::habits::misread(&os);
        assert!(said.is_some() || Cli::try_parse_from(&argv).is_ok(), "{tool}: `{peer}` neither parses nor is named");
        checked += 1;
    }
    assert!(checked >= 10, "{checked} rows");
}

#[test]
fn a_wrong_flag_in_the_table_would_be_caught() {
    // What the test above relies on: an unknown flag or a bad value is an error of the parse, not a run.
    assert!(Cli::try_parse_from(words("hakaru run -m 16 --stream 16 http://127.0.0.1:8080/")).is_err());
    assert!(Cli::try_parse_from(words("hakaru kv --pipeline x redis://127.0.0.1:6379")).is_err());
    assert_eq!(words("a -b '{\"a\":1}' -H 'X: y z' ''"), ["a", "-b", "{\"a\":1}", "-H", "X: y z", ""]);
    assert_eq!(example_words("a 'b"), None);
}

#[test]
fn the_quick_start_builds_a_profile_cargo_toml_has() {
    let quick = section(&readme(), "## Quick start").join("\n");
    assert!(quick.contains("cargo run --profile quick -- demo"), "{quick}");
    let cargo = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap();
    assert!(cargo.contains("[profile.quick]\ninherits = \"release\""), "Cargo.toml has no quick profile");
}
