//! Peers' habits: what wrk's, ab's, oha's and hey's users type out of habit, taken where hakaru means the same and
//! explained in one line where it does not.

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
