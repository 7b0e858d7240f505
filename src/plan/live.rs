//! `--no-tui`, `--prometheus-rw URL` and `--prometheus-interval`: what a run shows on the terminal and where it
//! pushes its figures while it runs, checked before any load.

use std::time::Duration;

use crate::base::target::{Endpoint, ParsedUrl, Scheme};
use crate::cli::args::LiveArgs;
use crate::error::CliError;

/// The longest remote-write URL taken: an endpoint's address, not a document.
const MAX_PUSH_URL: usize = 2048;
/// Pushes at least this far apart: a push per window at most.
const MIN_PUSH_INTERVAL: Duration = Duration::from_secs(1);
/// And at most this far apart.
const MAX_PUSH_INTERVAL: Duration = Duration::from_secs(3600);

/// What a run shows and sends while it runs.
#[derive(Clone, Debug, Default)]
pub struct LiveSettings {
    /// The dashboard on a terminal (false: the progress line, `--no-tui`).
    pub tui: bool,
    /// `--prometheus-rw`: where and how often to push.
    pub push: Option<PushPlan>,
}

/// A checked remote-write endpoint.
#[derive(Clone, Debug)]
pub struct PushPlan {
    pub url: ParsedUrl,
    /// The URL as messages show it (secrets hidden, cut when long).
    pub shown: String,
    pub interval: Duration,
}

impl LiveSettings {
    pub fn from_args(a: &LiveArgs) -> Result<LiveSettings, CliError> {
        let push = match &a.prometheus_rw {
            None => None,
            Some(url) => Some(PushPlan { interval: push_interval(&a.prometheus_interval)?, ..push_url(url)? }),
        };
        Ok(LiveSettings { tui: !a.no_tui, push })
    }
}

fn push_interval(value: &str) -> Result<Duration, CliError> {
    let d = super::flag_duration("--prometheus-interval", value)?;
    if !(MIN_PUSH_INTERVAL..=MAX_PUSH_INTERVAL).contains(&d) {
        return Err(CliError::new(format!(
            "--prometheus-interval '{value}': give a time from 1s to 1h, e.g. --prometheus-interval 5s"
        )));
    }
    Ok(d)
}

/// The URL parsed, its scheme and length checked and its host resolved, so a typo is bad input before the load
/// rather than a warning per push.
fn push_url(url: &str) -> Result<PushPlan, CliError> {
    let shown = crate::base::target::shown(url);
    let bad = |why: &str| CliError::new(format!("--prometheus-rw '{shown}': {why}"));
    if url.len() > MAX_PUSH_URL {
        return Err(bad(&format!(
            "a URL of {} bytes, more than the {MAX_PUSH_URL} taken; give the endpoint's address",
            url.len()
        )));
    }
    let parsed = ParsedUrl::parse(url).map_err(|e| bad(&e))?;
    if parsed.scheme == Scheme::Https {
        return Err(bad(
            "https is not supported yet; push over http:// (to Prometheus itself, or to an agent that forwards)",
        ));
    }
    let authority = url.split_once("://").map_or("", |(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or(""));
    if authority.contains('@') {
        return Err(bad("credentials in the URL are not supported yet; push to an endpoint without them"));
    }
    Endpoint::resolve(parsed.scheme, &parsed.host, parsed.port).map_err(|e| bad(&e))?;
    Ok(PushPlan { url: parsed, shown, interval: Duration::ZERO })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(url: &str, interval: &str) -> LiveArgs {
        LiveArgs { no_tui: false, prometheus_rw: Some(url.into()), prometheus_interval: interval.into() }
    }

    #[test]
    fn a_loopback_endpoint_is_taken_with_its_interval() {
        let s = LiveSettings::from_args(&args("http://127.0.0.1:9090/api/v1/write", "2s")).unwrap();
        let p = s.push.unwrap();
        assert_eq!(
            (p.url.port, p.url.path_and_query.as_str(), p.interval),
            (9090, "/api/v1/write", Duration::from_secs(2))
        );
        assert!(s.tui);
    }

    #[test]
    fn bad_endpoints_name_the_flag_and_the_fix() {
        for (url, interval, says) in [
            ("https://127.0.0.1:9090/api/v1/write", "5s", "https is not supported yet"),
            ("http://u:secretpw@127.0.0.1:9090/w", "5s", "credentials in the URL"),
            ("ftp://127.0.0.1/", "5s", "--prometheus-rw"),
            ("http://127.0.0.1:9090/w", "500ms", "from 1s to 1h"),
            ("http://127.0.0.1:9090/w", "2h", "from 1s to 1h"),
        ] {
            let e = LiveSettings::from_args(&args(url, interval)).unwrap_err().to_string();
            assert!(e.contains(says), "{url}: {e}");
            assert!(!e.contains("secretpw"), "{e}");
        }
        let long = format!("http://127.0.0.1:9090/{}", "a".repeat(5000));
        let e = LiveSettings::from_args(&args(&long, "5s")).unwrap_err().to_string();
        assert!(e.contains("more than the 2048") && e.len() < 400, "{e}");
    }
}
