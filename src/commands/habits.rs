//! Peers' habits: what the users of wrk, ab, oha, hey, h2load, ghz, loadtest and vLLM's benchmark type out of habit,
//! taken where hakaru means the same and explained in one line where it does not.

use std::ffi::OsString;

use clap::CommandFactory;

use crate::cli::args::{Cli, Command, RequestArgs};

/// `hakaru [FLAGS] URL` (oha's and hey's form, no command) as `hakaru run [FLAGS] URL`, with the note saying so;
/// `None` when a command is named, help or the version is asked, no argument is an http(s) URL, or the first word
/// is neither a flag nor a URL (a misspelled command, which clap names with its "did you mean").
///
/// Taken rather than refused: a URL is never a command's name, so the intent is plain, and `run` is what every
/// peer does with it; the note teaches the full form without costing a second try.
pub fn implied_run(argv: &[OsString]) -> Option<(Vec<OsString>, String)> {
    let is_url = |a: &str| a.starts_with("http://") || a.starts_with("https://");
    let first = argv.get(1)?.to_str()?;
    let cli = Cli::command();
    let named = cli.get_subcommands().any(|c| c.get_name() == first || c.get_all_aliases().any(|a| a == first));
    if named || matches!(first, "-h" | "--help" | "-V" | "--version") || !(first.starts_with('-') || is_url(first)) {
        return None;
    }
    if !argv[1..].iter().any(|a| a.to_str().is_some_and(is_url)) {
        return None;
    }
    let mut with_run = argv.to_vec();
    with_run.insert(1, "run".into());
    Some((with_run, "no command given: running it as `hakaru run` (write `hakaru run URL` to skip this note)".into()))
}

/// The notes and warnings a command's flags call for, each one line, said once before the work.
pub fn notes(command: &Command) -> Vec<String> {
    let mut said = Vec::new();
    let request = match command {
        Command::Run(a) => {
            if a.latency {
                said.push(
                    "note: --latency (wrk's) changes nothing: hakaru always prints the latency percentiles".into(),
                );
            }
            &a.request
        }
        Command::Sweep(a) => &a.request,
        Command::Capacity(a) => &a.request,
        _ => return said,
    };
    said.extend(insecure_without_tls(request));
    said
}

/// `-k` against plain-HTTP URLs only: ab's users mean keep-alive, which hakaru's `-k` (curl's `--insecure`) is not.
fn insecure_without_tls(r: &RequestArgs) -> Option<String> {
    let plain = r.urls.iter().any(|u| u.starts_with("http://"));
    let tls = r.urls.iter().any(|u| u.starts_with("https://"));
    (r.insecure && plain && !tls).then(|| {
        "warning: -k is hakaru's --insecure (accept any TLS certificate), not ab's keep-alive: keep-alive is \
         already on (--no-keepalive turns it off), and an http:// URL uses no TLS"
            .to_string()
    })
}

/// A peer's flag that hakaru does not have: (the flag, whose and what it means there, hakaru's way).
const PEER_FLAGS: &[(&str, &str, &str)] = &[
    ("-z", "oha's, hey's and ghz's duration", "-d 30s"),
    ("-R", "wrk2's rate", "--rate 1000"),
    ("-p", "ab's body file to POST (oha's: streams a connection)", "-m POST --body-file FILE (--http2 --streams N)"),
    ("-T", "ab's and hey's Content-Type", "-H 'Content-Type: application/json'"),
    ("-C", "ab's cookie", "-H 'Cookie: name=value'"),
    ("-A", "ab's basic authentication", "-H 'Authorization: Basic BASE64'"),
    ("-a", "hey's basic authentication", "-H 'Authorization: Basic BASE64'"),
    ("-D", "hey's body file (h2load's: duration)", "--body-file FILE (-d 30s)"),
    ("-r", "h2load's new connections a second", "--connection-rate 10"),
    ("-i", "ab's HEAD requests", "-m HEAD"),
    ("-h2", "hey's HTTP/2", "--http2"),
    ("-disable-keepalive", "hey's", "--no-keepalive"),
    ("--disable-keepalive", "oha's", "--no-keepalive"),
    ("-cpus", "hey's cores", "-t 2"),
    ("--rps", "loadtest's, nighthawk's and ghz's rate", "--rate 1000"),
    ("--http-version", "oha's HTTP version", "--http2 or --http3"),
    ("--latency-correction", "oha's coordinated-omission correction", "--rate R (always corrected)"),
    ("--data-file", "ghz's message file", "--body-file FILE"),
    ("--concurrency", "ghz's and aiperf's requests in flight", "-c 1 --streams 50 (gRPC), -c 50"),
    ("--total", "ghz's call count", "-n 10000"),
    ("--request-rate", "vLLM's benchmark's rate", "--rate 10 (or `hakaru llm`, which takes vLLM's names)"),
    ("--num-prompts", "vLLM's benchmark's request count", "-n 1000 (or `hakaru llm`, which takes vLLM's names)"),
    ("--request-count", "aiperf's request count", "-n 1000"),
    (
        "--max-concurrency",
        "vLLM's benchmark's cap on requests in flight",
        "-c 64 (or `hakaru llm`, which takes vLLM's names)",
    ),
    ("--base-url", "vLLM's benchmark's server", "the URL: http://127.0.0.1:8000/v1/chat/completions"),
    ("--endpoint", "vLLM's benchmark's path", "the URL's path"),
    ("--dataset-name", "vLLM's prompts", "`hakaru llm --dataset-name random|jsonl|sharegpt` (docs/llm.md)"),
    ("--dataset-path", "vLLM's prompts", "`hakaru llm --dataset-path FILE` (docs/llm.md)"),
];

/// A peer's habit on a load command's line that hakaru would misread or refuse without saying why: a flag of the
/// peer's that hakaru does not have, or one hakaru has with another meaning given the peer's kind of value
/// (oha's `-q 1000` is a rate, hakaru's `-q` is quiet; ghz's `-d '{...}'` is the message, hakaru's `-d` the
/// duration). One line naming hakaru's flag; None when nothing looks like a peer's.
pub fn misread(argv: &[OsString]) -> Option<String> {
    let words: Vec<&str> = argv.iter().map(|a| a.to_str().unwrap_or("")).collect();
    if !matches!(words.get(1), Some(&("run" | "sweep" | "capacity"))) {
        return None;
    }
    let is_number = |v: &str| !v.is_empty() && v.parse::<f64>().is_ok();
    for (i, word) in words.iter().enumerate().skip(2) {
        if *word == "--" {
            break;
        }
        let flag = word.split_once('=').map_or(*word, |(f, _)| f);
        if let Some((peer, means, ours)) = PEER_FLAGS.iter().find(|(f, ..)| *f == flag) {
            return Some(format!("{peer} is {means}, not a flag of hakaru's: write {ours}"));
        }
        let next = words.get(i + 1).copied().unwrap_or("");
        let said = match *word {
            "-q" if is_number(next) => {
                format!("-q {next}: -q is hakaru's --quiet; oha's and hey's -q (a rate) is --rate {next}")
            }
            "-d" if next.starts_with(['{', '[', '@']) => format!(
                "-d {}: -d is hakaru's duration; ghz's and hey's -d (the message or body) is -b",
                crate::base::secrets::excerpt(next)
            ),
            "-s" if is_number(next) && !std::path::Path::new(next).exists() => {
                format!("-s {next}: -s is hakaru's script (wrk's); ab's -s (a timeout) is --timeout {next}s")
            }
            "-m" if next.starts_with('{') => format!(
                "-m {}: -m is hakaru's HTTP method; ghz's -m (metadata) is --metadata",
                crate::base::secrets::excerpt(next)
            ),
            _ => continue,
        };
        return Some(said);
    }
    None
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn argv(line: &str) -> Vec<OsString> {
        line.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn a_url_with_no_command_is_run_and_a_named_command_or_help_is_left_alone() {
        let (with_run, _) = implied_run(&argv("hakaru https://127.0.0.1:1/")).unwrap();
        assert_eq!(with_run, argv("hakaru run https://127.0.0.1:1/"));
        let (with_run, note) = implied_run(&argv("hakaru -c 10 http://127.0.0.1:1/")).unwrap();
        assert_eq!(with_run, argv("hakaru run -c 10 http://127.0.0.1:1/"));
        assert!(note.contains("hakaru run URL"), "{note}");
        assert!(matches!(Cli::try_parse_from(&with_run).unwrap().command, Command::Run(_)));
        for left in [
            "hakaru run http://127.0.0.1:1/",
            "hakaru sweep http://127.0.0.1:1/",
            "hakaru --help",
            "hakaru help run",
            "hakaru",
            "hakaru redis://127.0.0.1:1",
            "hakaru ruin http://127.0.0.1:1/",
        ] {
            // A misspelled command stays for clap to name; only a missing one is implied.
            assert_eq!(implied_run(&argv(left)), None, "{left}");
        }
    }

    #[test]
    fn k_is_warned_about_only_where_no_url_uses_tls() {
        let args = |urls: &[&str], insecure: bool| RequestArgs {
            urls: urls.iter().map(|u| u.to_string()).collect(),
            insecure,
            ..RequestArgs::default()
        };
        assert!(insecure_without_tls(&args(&["http://h/"], true)).is_some());
        assert_eq!(insecure_without_tls(&args(&["http://h/"], false)), None);
        assert_eq!(insecure_without_tls(&args(&["https://h/"], true)), None);
        assert_eq!(insecure_without_tls(&args(&["http://a/", "https://b/"], true)), None, "-k serves the https one");
    }
}
