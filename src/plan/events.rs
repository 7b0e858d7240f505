//! `--events`, `--events-until`, `--events-max`, `--events-max-bytes` checked into an [`EventsSpec`].

use std::sync::Arc;

use crate::cli::args::RequestArgs;
use crate::error::CliError;
use crate::protocol::events::{EventKind, EventsSpec, Goodput};

/// `--events-max`'s default: far more than any answer a person reads, few enough to end an endless stream.
pub const DEFAULT_MAX_EVENTS: u64 = 1_000_000;
/// `--events-max-bytes`'s default.
pub const DEFAULT_MAX_BYTES: u64 = 64 << 20;

/// The events asked for, or None without `--events`.
pub fn from_args(a: &RequestArgs) -> Result<Option<Arc<EventsSpec>>, CliError> {
    let Some(kind) = &a.events else {
        let given = [
            ("--events-until", a.events_until.is_some()),
            ("--events-max", a.events_max.is_some()),
            ("--events-max-bytes", a.events_max_bytes.is_some()),
            ("--goodput", a.goodput.is_some()),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, given)| *given) {
            return Err(CliError::new(format!(
                "{flag} reads a stream's events: give --events too (e.g. --events tokens), or leave {flag} out"
            )));
        }
        return Ok(None);
    };
    let kind = EventKind::parse(kind).ok_or_else(|| {
        CliError::new(format!(
            "--events '{}': use sse, ndjson, chunks or tokens (an OpenAI-compatible token stream)",
            kind.escape_debug()
        ))
    })?;
    if a.call.is_some() {
        return Err(CliError::new(
            "--events with --call: a gRPC call's answers are messages, not events; leave --events out",
        ));
    }
    if let Some(until) = &a.events_until
        && until.trim().is_empty()
    {
        return Err(CliError::new(
            "--events-until '': give the text that ends an answer, e.g. --events-until '[DONE]'",
        ));
    }
    let max_events = match a.events_max {
        Some(0) => return Err(CliError::new("--events-max 0: must be at least 1; try --events-max 100000")),
        Some(n) => n,
        None => DEFAULT_MAX_EVENTS,
    };
    let max_bytes = match &a.events_max_bytes {
        None => DEFAULT_MAX_BYTES,
        Some(v) => match crate::base::units::parse_size(v) {
            Ok(0) => return Err(CliError::new(format!("--events-max-bytes '{v}': must be more than 0; try 64MiB"))),
            Ok(n) => n,
            Err(e) => {
                return Err(CliError::new(format!("--events-max-bytes '{v}': {e}; e.g. --events-max-bytes 64MiB")));
            }
        },
    };
    let goodput = a.goodput.as_deref().map(|g| goodput(g, kind)).transpose()?;
    Ok(Some(Arc::new(EventsSpec { kind, until: a.events_until.clone(), max_events, max_bytes, goodput })))
}

/// `--goodput`'s text checked for answers read as `kind` (a study's `goodput` key, before any case runs).
pub fn check_goodput(text: &str, kind: EventKind) -> Result<(), CliError> {
    goodput(text, kind).map(|_| ())
}

/// `--goodput ttft:200ms,tpot:50ms,e2el:10s` (commas or spaces between; a bare number is milliseconds, as vLLM's).
fn goodput(text: &str, kind: EventKind) -> Result<Goodput, CliError> {
    let bad = |why: String| {
        CliError::new(format!(
            "--goodput '{}': {why}; write it like 'ttft:200ms,tpot:50ms' (ttft, tpot, e2el; a number alone is ms)",
            text.escape_debug()
        ))
    };
    let mut g = Goodput { text: text.trim().to_string(), ..Goodput::default() };
    for part in text.split([',', ' ']).map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) = part.split_once(':').ok_or_else(|| bad(format!("'{part}' has no ':'")))?;
        let us = match value.trim().parse::<f64>() {
            Ok(ms) if ms.is_finite() && ms > 0.0 => (ms * 1000.0) as u64,
            _ => crate::base::units::parse_duration(value.trim())
                .map_err(|e| bad(format!("'{value}': {e}")))?
                .as_micros() as u64,
        };
        let slot = match name.trim().to_ascii_lowercase().as_str() {
            "ttft" => &mut g.ttft_us,
            "tpot" if kind != EventKind::Tokens => {
                return Err(bad("tpot is counted in tokens: give --events tokens".into()));
            }
            "tpot" => &mut g.tpot_us,
            "e2el" => &mut g.e2el_us,
            other => return Err(bad(format!("'{other}' is not an objective"))),
        };
        *slot = Some(us);
    }
    if (g.ttft_us, g.tpot_us, g.e2el_us) == (None, None, None) {
        return Err(bad("no objective".into()));
    }
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goodput_reads_vllms_objectives_with_units_or_milliseconds() {
        let g = goodput("ttft:200ms, tpot:50 e2el:10s", EventKind::Tokens).unwrap();
        assert_eq!((g.ttft_us, g.tpot_us, g.e2el_us), (Some(200_000), Some(50_000), Some(10_000_000)));
        assert!(g.met(Some(200_000), Some(10), 1) && !g.met(Some(200_001), None, 1) && !g.met(None, None, 1));
        assert!(g.met(Some(1), None, 1), "an answer of one token meets tpot (vLLM's 0)");
        for (bad, says) in [
            ("ttft=200ms", "has no ':'"),
            ("tbt:1ms", "'tbt' is not an objective"),
            ("ttft:fast", "'fast'"),
            ("", "no objective"),
        ] {
            let e = goodput(bad, EventKind::Tokens).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--goodput '{bad}': ")) && e.contains(says), "{e}");
        }
        assert!(goodput("tpot:50", EventKind::Sse).unwrap_err().to_string().contains("give --events tokens"));
    }
}
