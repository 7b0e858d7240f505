//! `--events`, `--events-until`, `--events-max`, `--events-max-bytes` checked into an [`EventsSpec`].

use std::sync::Arc;

use crate::cli::args::RequestArgs;
use crate::error::UsageError;
use crate::protocol::events::{EventKind, EventsSpec};

/// `--events-max`'s default: far more than any answer a person reads, few enough to end an endless stream.
pub const DEFAULT_MAX_EVENTS: u64 = 1_000_000;
/// `--events-max-bytes`'s default.
pub const DEFAULT_MAX_BYTES: u64 = 64 << 20;

/// The events asked for, or None without `--events`.
pub fn from_args(a: &RequestArgs) -> Result<Option<Arc<EventsSpec>>, UsageError> {
    let Some(kind) = &a.events else { return Ok(None) };
    let kind = EventKind::parse(kind).ok_or_else(|| {
        UsageError::new(format!(
            "--events '{}': use sse, ndjson, chunks or tokens (an OpenAI-compatible token stream)",
            kind.escape_debug()
        ))
    })?;
    if a.call.is_some() {
        return Err(UsageError::new(
            "--events with --call: a gRPC call's answers are messages, not events; leave --events out",
        ));
    }
    if let Some(until) = &a.events_until
        && until.trim().is_empty()
    {
        return Err(UsageError::new(
            "--events-until '': give the text that ends an answer, e.g. --events-until '[DONE]'",
        ));
    }
    let max_events = match a.events_max {
        Some(0) => return Err(UsageError::new("--events-max 0: must be at least 1; try --events-max 100000")),
        Some(n) => n,
        None => DEFAULT_MAX_EVENTS,
    };
    let max_bytes = match &a.events_max_bytes {
        None => DEFAULT_MAX_BYTES,
        Some(v) => match crate::base::units::parse_size(v) {
            Ok(0) => return Err(UsageError::new(format!("--events-max-bytes '{v}': must be more than 0; try 64MiB"))),
            Ok(n) => n,
            Err(e) => {
                return Err(UsageError::new(format!("--events-max-bytes '{v}': {e}; e.g. --events-max-bytes 64MiB")));
            }
        },
    };
    Ok(Some(Arc::new(EventsSpec { kind, until: a.events_until.clone(), max_events, max_bytes })))
}
