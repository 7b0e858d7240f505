//! Command lines made from the typed flags, for the child processes hakaru starts or prints (local agents, a
//! Kubernetes Job's agents, a study's cases), and the flags' defaults as values. One function for every command,
//! driven by clap's own definitions (ids, long names, defaults) and serde's view of the values: a new or renamed
//! flag needs nothing here, and the round-trip tests (render, parse, compare) hold it.

use clap::{Args, CommandFactory, FromArgMatches};
use serde::Serialize;
use serde_json::Value;

use super::args::Cli;

/// The arguments (after `hakaru`) that parse back into `args` as the subcommand `subcommand`: every flag whose
/// value differs from its default, then the positional values.
///
/// Refused (a message naming why) only when a value cannot be written as text: a path that is not UTF-8.
pub fn render<T: Serialize>(subcommand: &str, args: &T) -> Result<Vec<String>, String> {
    let cli = Cli::command();
    let sub = cli.find_subcommand(subcommand).ok_or_else(|| format!("'{subcommand}' is not a hakaru command"))?;
    let fields = match serde_json::to_value(args) {
        Ok(Value::Object(fields)) => fields,
        // serde refuses a path that is not UTF-8: it cannot stand on another process's command line as text.
        Ok(_) | Err(_) => {
            return Err(format!("a value of '{subcommand}' (a file name?) is not UTF-8 text; rename it"));
        }
    };
    let mut out = vec![subcommand.to_string()];
    let mut positional = Vec::new();
    // Words after `--` (a script's arguments) come last, after the `--`.
    let mut last = Vec::new();
    for arg in sub.get_arguments() {
        let Some(value) = fields.get(arg.get_id().as_str()) else { continue };
        // The short form where there is one, as people write them (`-c 4 -d 2s`).
        let flag = match (arg.get_short(), arg.get_long()) {
            (Some(short), _) => Some(format!("-{short}")),
            (None, Some(long)) => Some(format!("--{long}")),
            (None, None) => None,
        };
        let defaults: Vec<String> = arg.get_default_values().iter().map(|d| d.to_string_lossy().into_owned()).collect();
        let values: Vec<&Value> = match value {
            Value::Array(items) => items.iter().collect(),
            Value::Null => Vec::new(),
            one => vec![one],
        };
        for v in values {
            match (&flag, v) {
                (None, v) if arg.is_last_set() => last.push(text(v)),
                (None, v) => positional.push(text(v)),
                // A switch: present when true.
                (Some(f), Value::Bool(on)) if !arg.get_action().takes_values() => {
                    if *on {
                        out.push(f.clone());
                    }
                }
                (Some(f), v) => {
                    let t = text(v);
                    if !(defaults.len() == 1 && same(&defaults[0], &t)) {
                        match arg.get_long() {
                            // A value that starts with '-' (a multipart body's `--boundary`) would read as a flag:
                            // glued to its flag it is a value.
                            Some(long) if t.starts_with('-') => out.push(format!("--{long}={t}")),
                            _ => {
                                out.push(f.clone());
                                out.push(t);
                            }
                        }
                    }
                }
            }
        }
    }
    out.extend(positional);
    if !last.is_empty() {
        out.push("--".into());
        out.extend(last);
    }
    Ok(out)
}

/// A command line (as [`render`] makes it: the subcommand first) split in two: what may be shown (in `ps`, a
/// manifest, a log) and the arguments holding a secret (a secret header, a URL with a password or a secret query
/// parameter), each with its flag, which a child reads from its environment instead (`HAKARU_SECRET_ARGS`).
/// `is_secret` says whether one argument's text holds a secret. A script's arguments (the words after `--`) are
/// hidden whole, `--` first, at the end of the hidden ones: the child appends the hidden arguments to the shown
/// ones, so they must end its line as they ended this one.
pub fn split_secrets(line: &[String], is_secret: impl Fn(&str) -> bool) -> (Vec<String>, Vec<String>) {
    let script_args = line.iter().skip(1).position(|a| a == "--").map_or(line.len(), |i| i + 1);
    let (line, script_args) = line.split_at(script_args);
    let cli = Cli::command();
    let sub = line.first().and_then(|name| cli.find_subcommand(name));
    // The flag a word names (`-H`, `--header`: one id) when it takes the next argument as its value.
    let valued = |flag: &str| {
        sub.and_then(|sub| {
            sub.get_arguments().find(|a| {
                let named = match flag.strip_prefix("--") {
                    Some(long) => a.get_long() == Some(long),
                    None => flag.len() == 2 && a.get_short() == flag.chars().nth(1),
                };
                named && a.get_action().takes_values()
            })
        })
        .map(|a| a.get_id().to_string())
    };
    // The line as parts: a flag with its value, or one word; with the flag's id.
    let mut parts: Vec<(&[String], Option<String>)> = Vec::new();
    let mut i = 0;
    while i < line.len() {
        let arg = &line[i];
        let id =
            if i > 0 && arg.starts_with('-') && !arg.contains('=') && i + 1 < line.len() { valued(arg) } else { None };
        let take = if id.is_some() { 2 } else { 1 };
        parts.push((&line[i..i + take], id));
        i += take;
    }
    // A flag whose values pair by their order with another flag's (`kv --command` with `--command-ratio` and
    // `--command-key-pattern`) is hidden whole when one of its values is secret: the hidden arguments are added
    // after the shown ones, and moving one of them would pair it with another's share. (Headers need no order.)
    const PAIRED_BY_ORDER: [&str; 1] = ["command"];
    let secret_ids: Vec<&String> = parts
        .iter()
        .skip(1)
        .filter(|(part, _)| part.iter().any(|a| is_secret(a)))
        .filter_map(|(_, id)| id.as_ref())
        .filter(|id| PAIRED_BY_ORDER.contains(&id.as_str()))
        .collect();
    let (mut shown, mut hidden) = (Vec::new(), Vec::new());
    for (n, (part, id)) in parts.iter().enumerate() {
        let secret = part.iter().any(|a| is_secret(a)) || id.as_ref().is_some_and(|id| secret_ids.contains(&id));
        if n > 0 && secret {
            hidden.extend_from_slice(part);
        } else {
            shown.extend_from_slice(part);
        }
    }
    hidden.extend_from_slice(script_args);
    (shown, hidden)
}

/// A value as the command line writes it.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        // Rust's own float text: 3000 for 3000.0, 50.5 for 50.5 (serde_json would write 3000.0).
        Value::Number(n) if n.is_f64() => n.as_f64().map_or_else(|| n.to_string(), |f| f.to_string()),
        other => other.to_string(),
    }
}

/// A value equals a default: the same text, or the same number (`100` and `100.0`).
fn same(default: &str, value: &str) -> bool {
    default == value || matches!((default.parse::<f64>(), value.parse::<f64>()), (Ok(a), Ok(b)) if a == b)
}

/// The flags' defaults as the parser gives them, positional values empty: the starting point of a command made in
/// code (a kv sweep's mix, the demo's sweep). Read from clap's definitions, so there is no second list of defaults.
pub fn defaults<T: Args + FromArgMatches>() -> T {
    let mut cmd = T::augment_args(clap::Command::new("defaults").no_binary_name(true));
    let required: Vec<clap::Id> =
        cmd.get_arguments().filter(|a| a.is_required_set()).map(|a| a.get_id().clone()).collect();
    for id in required {
        cmd = cmd.mut_arg(id, |a| a.required(false));
    }
    let matches = cmd.try_get_matches_from(Vec::<String>::new()).expect("no arguments parse as the defaults");
    T::from_arg_matches(&matches).expect("the defaults make the flags' struct")
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::super::args::{Command, KvArgs, SweepArgs};
    use super::*;

    fn parse(line: &[String]) -> Command {
        let mut argv = vec!["hakaru".to_string()];
        argv.extend_from_slice(line);
        Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{line:?}: {e}")).command
    }

    /// Parses `line`, renders the flags, parses that again: the same flags (compared as their debug text).
    fn round_trip(line: &str) -> Vec<String> {
        let words: Vec<String> = line.split_whitespace().map(String::from).collect();
        let first = parse(&words);
        let rendered = match &first {
            Command::Run(a) => render("run", a).unwrap(),
            Command::Sweep(a) => render("sweep", a).unwrap(),
            Command::Capacity(a) => render("capacity", a).unwrap(),
            Command::Kv(a) => render("kv", a).unwrap(),
            other => panic!("not a measuring command: {other:?}"),
        };
        let again = parse(&rendered);
        assert_eq!(format!("{first:?}"), format!("{again:?}"), "{line}\nrendered as {rendered:?}");
        rendered
    }

    #[test]
    fn every_measuring_command_renders_what_parses_back_into_the_same_flags() {
        let run = round_trip(
            "run -c 7 -n 100 --rate 50.5 --arrival poisson -H A:1 -H B:2 --no-keepalive -k --ok-status 200 \
             --seed 9 --json a.json --csv a.csv -q --runs 3 --threshold p99<5ms --threshold ok_rate>1 \
             --segment 1/2 --start-at now --label k=v --no-history --monitor-pid 3 --probe http://x/#/a \
             --timeout 2s -m POST -b {} http://127.0.0.1:1/ http://127.0.0.1:2/",
        );
        // Defaults are left out, positional values come last.
        assert!(!run.contains(&"--connect-timeout".to_string()), "{run:?}");
        assert_eq!(run.last().unwrap(), "http://127.0.0.1:2/");
        round_trip("run http://127.0.0.1:1/");
        // A value that looks like a flag stays a value.
        let glued = round_trip("run --body=--boundary --label=-x http://127.0.0.1:1/");
        assert!(glued.contains(&"--body=--boundary".to_string()), "{glued:?}");
        round_trip(
            "sweep --clients 1,2,4 -d 2s --interval 1s --warmup 1s -o d.csv --csv w.csv --json s.json \
             --max-error-rate 5% --wait 1s --threshold p99<1s --hosts a,b --port 8 --path /x",
        );
        round_trip("sweep --rate-start 10 --rate-end 100 --rate-step 10 -c 4 http://127.0.0.1:1/");
        round_trip("capacity --slo p99<50ms --rate-start 50 --rate-max 5000 --precision 10% http://127.0.0.1:1/");
        round_trip(
            "kv --workload wicked --rnum 50 --it 3 --verify --flush --overwrite --key-prefix k: --pipeline 4 \
             --mix get:1 --command GET_x --command-ratio 2 --keys 10 --value-size-range 1-9 --clients 1,2 \
             redis://127.0.0.1:1/2",
        );
    }

    #[test]
    fn secrets_leave_the_shown_line_with_their_flags_and_come_back_whole() {
        let line: Vec<String> =
            ["run", "-H", "Authorization: x", "-H", "A: 1", "-c", "2", "-q", "http://u:pw@h/", "http://h/"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        let secret = |a: &str| a.contains("Authorization") || a.contains("pw@");
        let (shown, hidden) = split_secrets(&line, secret);
        assert_eq!(shown, ["run", "-H", "A: 1", "-c", "2", "-q", "http://h/"]);
        assert_eq!(hidden, ["-H", "Authorization: x", "http://u:pw@h/"]);
        // Shown then hidden parse as the whole line did.
        let again: Vec<String> = shown.iter().chain(&hidden).cloned().collect();
        let (Command::Run(a), Command::Run(b)) = (parse(&line), parse(&again)) else { panic!("run") };
        assert_eq!(a.request.headers.len(), b.request.headers.len());
        assert_eq!(b.request.urls, ["http://h/", "http://u:pw@h/"]);
    }

    #[test]
    fn a_scripts_arguments_are_hidden_and_still_end_the_line_after_a_hidden_url() {
        let line: Vec<String> =
            ["run", "-s", "x.lua", "http://h/?token=abc", "--", "u", "p"].iter().map(|s| s.to_string()).collect();
        let (shown, hidden) = split_secrets(&line, |a| a.contains("token="));
        assert_eq!(shown, ["run", "-s", "x.lua"]);
        assert_eq!(hidden, ["http://h/?token=abc", "--", "u", "p"]);
        let again: Vec<String> = shown.iter().chain(&hidden).cloned().collect();
        let Command::Run(a) = parse(&again) else { panic!("run") };
        assert_eq!(
            (a.request.urls, a.request.script_args),
            (vec!["http://h/?token=abc".to_string()], vec!["u".into(), "p".into()])
        );
        // Without a secret, the script's arguments are hidden all the same.
        let (shown, hidden) = split_secrets(&line, |_| false);
        assert_eq!(
            (shown.last().unwrap().as_str(), hidden),
            ("http://h/?token=abc", vec!["--".to_string(), "u".into(), "p".into()])
        );
    }

    #[test]
    fn a_secret_command_keeps_its_place_among_the_commands_and_their_shares() {
        let line: Vec<String> = ["kv", "--command", "AUTH pw", "--command", "SET k v", "--command-ratio", "1"]
            .iter()
            .chain(&["--command-ratio", "9", "redis://127.0.0.1:1"])
            .map(|s| s.to_string())
            .collect();
        let (shown, hidden) = split_secrets(&line, |a| a == "AUTH pw");
        assert_eq!(shown, ["kv", "--command-ratio", "1", "--command-ratio", "9", "redis://127.0.0.1:1"]);
        assert_eq!(hidden, ["--command", "AUTH pw", "--command", "SET k v"]);
        let again: Vec<String> = shown.iter().chain(&hidden).cloned().collect();
        let Command::Kv(k) = parse(&again) else { panic!("kv") };
        assert_eq!((k.command, k.command_ratio), (vec!["AUTH pw".to_string(), "SET k v".into()], vec![1.0, 9.0]));
    }

    #[test]
    fn defaults_are_the_parsers_own() {
        let kv: KvArgs = defaults();
        let Command::Kv(parsed) = parse(&["kv".into(), "redis://127.0.0.1:1".into()]) else { panic!("kv") };
        assert_eq!(format!("{:?}", KvArgs { urls: parsed.urls.clone(), ..kv }), format!("{parsed:?}"));
        let sweep: SweepArgs = defaults();
        assert_eq!(sweep.steps.duration, "30s");
        assert!(sweep.request.urls.is_empty());
    }
}
