//! Where and how a result was measured: version, machine, kernel, start time, command line.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    pub hakaru_version: String,
    pub hostname: String,
    pub cpu_model: String,
    pub cores: usize,
    pub kernel: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// Secret header values (Authorization, Cookie...) are replaced by `<redacted>`.
    pub command_line: Vec<String>,
    /// `release` or `debug`: a debug build measures itself more than the target.
    pub build: String,
    /// The seed of the random choices, so the run can be repeated (also in the settings).
    pub seed: u64,
}

/// Headers whose values must not end up in result files that people share.
const SECRET_HEADERS: [&str; 4] = ["authorization", "proxy-authorization", "cookie", "x-api-key"];

/// `Authorization: Bearer abc` -> `Authorization: <redacted>`, `redis://user:pw@host` -> `redis://user:***@host`;
/// anything else is returned as it is.
pub fn redact_secret(arg: &str) -> String {
    // A secret header first: a URL inside its value must not decide how it is shown.
    if let Some((name, _)) = arg.split_once(':')
        && SECRET_HEADERS.iter().any(|s| name.trim().eq_ignore_ascii_case(s))
    {
        return format!("{}: <redacted>", name.trim());
    }
    if let Some(at) = arg.find("://") {
        let rest = &arg[at + 3..];
        // Key-value URLs have no '@' after their host, so everything up to the last '@' is the user and password
        // (which may hold '/', as base64 passwords do); an HTTP URL's authority ends at '/', '?' or '#'.
        let kv = ["redis", "memcache", "memcached"].contains(&arg[..at].to_ascii_lowercase().as_str());
        let authority = if kv { rest } else { &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())] };
        if let Some(amp) = authority.rfind('@') {
            let userinfo = &rest[..amp];
            let user = userinfo.split_once(':').map_or("", |(u, _)| u);
            let hidden = if user.is_empty() { "***".to_string() } else { format!("{user}:***") };
            return format!("{}{hidden}{}", &arg[..at + 3], &rest[amp..]);
        }
    }
    arg.to_string()
}

/// One command-line argument with its secrets redacted, a flag with its value glued on included:
/// `--header=Authorization: x` -> `--header=Authorization: <redacted>`, `-HCookie: y` -> `-HCookie: <redacted>`.
pub fn redact_arg(arg: &str) -> String {
    if let Some(rest) = arg.strip_prefix("--")
        && let Some((flag, value)) = rest.split_once('=')
    {
        return format!("--{flag}={}", redact_secret(value));
    }
    if let Some(value) = arg.strip_prefix("-H").filter(|v| !v.is_empty()) {
        return format!("-H{}", redact_secret(value));
    }
    redact_secret(arg)
}

/// Whether this binary was built without optimizations.
pub fn is_debug_build() -> bool {
    cfg!(debug_assertions)
}

impl Provenance {
    /// Reads the machine's facts from /proc (Linux); what cannot be read is left as "unknown".
    pub fn collect(started: std::time::SystemTime, seed: u64) -> Self {
        let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_string()).ok();
        let cpu_model = read("/proc/cpuinfo")
            .and_then(|info| {
                info.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        Self {
            hakaru_version: env!("CARGO_PKG_VERSION").into(),
            hostname: read("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into()),
            cpu_model,
            cores: crate::monitor::available_cores(),
            kernel: read("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
            started_at: humantime::format_rfc3339_seconds(started).to_string(),
            command_line: std::env::args().map(|a| redact_arg(&a)).collect(),
            build: if is_debug_build() { "debug" } else { "release" }.into(),
            seed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_urls_are_hidden() {
        assert_eq!(redact_secret("redis://u:hunter2@127.0.0.1:6379/2"), "redis://u:***@127.0.0.1:6379/2");
        assert_eq!(redact_secret("redis://:hunter2@h"), "redis://***@h");
        assert_eq!(redact_secret("http://127.0.0.1/a@b"), "http://127.0.0.1/a@b");
        // A password holding '/', a query holding '@', a secret header holding a URL.
        assert_eq!(redact_secret("redis://:ab/cd@127.0.0.1"), "redis://***@127.0.0.1");
        assert_eq!(redact_secret("http://h:8080?email=a@b.com"), "http://h:8080?email=a@b.com");
        assert_eq!(redact_secret("Cookie: sid=S; r=https://u@x"), "Cookie: <redacted>");
    }

    #[test]
    fn secret_headers_are_redacted_and_others_kept() {
        assert_eq!(redact_secret("Authorization: Bearer abc"), "Authorization: <redacted>");
        assert_eq!(redact_secret("cookie:a=b"), "cookie: <redacted>");
        assert_eq!(redact_secret("X-Test: 1"), "X-Test: 1");
        assert_eq!(redact_secret("http://127.0.0.1:8080/"), "http://127.0.0.1:8080/");
    }

    #[test]
    fn flags_with_their_secret_values_glued_on_are_redacted() {
        assert_eq!(redact_arg("--header=Authorization: Bearer abc"), "--header=Authorization: <redacted>");
        assert_eq!(redact_arg("-HCookie: sid=1"), "-HCookie: <redacted>");
        assert_eq!(redact_arg("--url=redis://:pw@127.0.0.1"), "--url=redis://***@127.0.0.1");
        assert_eq!(redact_arg("--label=branch=main"), "--label=branch=main");
        assert_eq!(redact_arg("-H"), "-H");
    }
}
