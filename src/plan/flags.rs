//! The flags read alone, each checked into its value with one line naming the flag, the value and the fix:
//! durations, the window, timeouts, `--pace-window`, `--max-line`, `--max-header-list`, `--body-file`.

use super::*;

pub fn flag_duration(flag: &str, value: &str) -> Result<Duration, CliError> {
    let d = parse_flag_duration(value).map_err(|e| CliError::new(format!("{flag} '{value}': {e}")))?;
    if d.is_zero() {
        return Err(CliError::new(format!("{flag} '{value}': must be more than zero")));
    }
    Ok(d)
}

/// The width of the time-series windows unless `--window` says otherwise.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(1);
/// The narrowest `--window`: below it a window holds too few requests to say anything, and the windows' count
/// (kept in the document) grows past what a long run should carry.
pub const MIN_WINDOW: Duration = Duration::from_millis(100);
/// The widest: a window longer than an hour is the step's own figure.
pub const MAX_WINDOW: Duration = Duration::from_secs(3600);

/// `--window`: from 100ms to 1h.
pub fn flag_window(value: &str) -> Result<Duration, CliError> {
    let d = parse_flag_duration(value).map_err(|e| CliError::new(format!("--window '{value}': {e}")))?;
    if d < MIN_WINDOW {
        return Err(CliError::new(format!(
            "--window '{value}': must be at least 100ms (a narrower window holds too few requests); try --window 100ms"
        )));
    }
    if d > MAX_WINDOW {
        return Err(CliError::new(format!("--window '{value}': must be at most 1h; try --window 10s")));
    }
    Ok(d)
}

/// The shortest request or connect timeout: the engine's timers count whole milliseconds (tokio's wheel), so a
/// shorter one would not be enforced as given.
pub const MIN_TIMEOUT: Duration = Duration::from_millis(1);
/// The longest: a deadline far beyond any run would only overflow the clock arithmetic.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// `--timeout` and `--connect-timeout`: from 1ms to 24h.
pub fn flag_timeout(flag: &str, value: &str) -> Result<Duration, CliError> {
    let d = parse_flag_duration(value).map_err(|e| CliError::new(format!("{flag} '{value}': {e}")))?;
    if d < MIN_TIMEOUT {
        return Err(CliError::new(format!(
            "{flag} '{value}': must be at least 1ms (timers count whole milliseconds); try {flag} 1ms"
        )));
    }
    if d > MAX_TIMEOUT {
        return Err(CliError::new(format!("{flag} '{value}': must be at most 24h; try {flag} 30s")));
    }
    Ok(d)
}

/// `--graceful-stop`: 0 (answers in flight dropped at the step's end, as wrk does) up to 24 h.
pub fn flag_graceful_stop(value: &str) -> Result<Duration, CliError> {
    let d = parse_flag_duration(value).map_err(|e| CliError::new(format!("--graceful-stop '{value}': {e}")))?;
    if d > MAX_TIMEOUT {
        return Err(CliError::new(format!("--graceful-stop '{value}': must be at most 24h; try --graceful-stop 30s")));
    }
    Ok(d)
}

/// The default `--pace-window`, for the plans no flag sets it in (kv).
pub const PACE_WINDOW: Duration = Duration::from_micros(400);

/// `--pace-window` from 0 (a wake-up per request, at its time) to 1 ms: a request leaves at most half a
/// millisecond from its time, half the 1 ms past which it would count as late.
pub fn flag_pace_window(value: &str) -> Result<Duration, CliError> {
    let d = parse_flag_duration(value).map_err(|e| CliError::new(format!("--pace-window '{value}': {e}")))?;
    if d > Duration::from_millis(1) {
        return Err(CliError::new(format!(
            "--pace-window '{value}': must be at most 1ms (a request may leave half the window from its time); \
             try --pace-window 400us"
        )));
    }
    Ok(d)
}

/// `--max-line` from 1 KiB (an ordinary response head fits) to 1 MiB: a decoder holds up to this much per
/// connection while a head or line is incomplete.
pub fn flag_max_line(value: &str) -> Result<usize, CliError> {
    let bad = |why: String| CliError::new(format!("--max-line '{value}': {why}"));
    let bytes = crate::base::units::parse_size(value).map_err(bad)?;
    if !(1024..=1024 * 1024).contains(&bytes) {
        return Err(bad(format!("{bytes} bytes; give 1KiB to 1MiB, e.g. --max-line 64KiB")));
    }
    Ok(bytes as usize)
}

/// `--max-header-list`'s default: 64 KiB, as nghttp2 and Go's HTTP/2 client allow (Go: 10 MiB; curl 100 KiB).
pub const DEFAULT_MAX_HEADER_LIST: usize = 64 * 1024;

/// `--max-header-list` from 1 KiB to 64 MiB: HTTP/2's bound of an answer's decoded header list, as RFC 9113 sizes it
/// (each field's name, value and 32 bytes), advertised in the client's SETTINGS.
pub fn flag_max_header_list(value: &str) -> Result<usize, CliError> {
    let bad = |why: String| CliError::new(format!("--max-header-list '{value}': {why}"));
    let bytes = crate::base::units::parse_size(value).map_err(bad)?;
    if !(1024..=64 * 1024 * 1024).contains(&bytes) {
        return Err(bad(format!("{bytes} bytes; give 1KiB to 64MiB, e.g. --max-header-list 1MiB")));
    }
    Ok(bytes as usize)
}

/// The largest `--body-file` read: the body is held in memory once per request and endpoint.
pub const MAX_BODY_FILE: u64 = 64 * 1024 * 1024;

/// Reads `--body-file` (see [`crate::base::bounded`]: a regular file of at most 64 MiB).
pub(super) fn read_body_file(path: &std::path::Path) -> Result<Vec<u8>, CliError> {
    crate::base::bounded::read(path, crate::base::bounded::BODY)
        .map_err(|why| CliError::new(format!("--body-file '{}': {why}", path.display())))
}
