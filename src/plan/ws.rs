//! WebSocket's flags -> the plan of a `ws://` or `wss://` run: the URL as the `http://` (`https://`) endpoint it
//! connects to, the upgrade request (with `-H`'s headers) built once, and `--message` (or `--message-file`) as each
//! request's bytes, `{{...}}` holes filled per message by the template filler.

use std::sync::Arc;

use crate::base::target::Endpoint;
use crate::cli::args::{RequestArgs, WsModeArg};
use crate::error::CliError;
use crate::plan::RequestSpec;
use crate::protocol::ws::{Mode, Settings, handshake};

/// A run's WebSocket target, as the request plan reads it.
pub struct WsRequest {
    /// The request flags as HTTP's: the URL `http://` (or `https://`), the message as the body.
    pub args: RequestArgs,
    /// The message each request sends.
    pub message: Vec<u8>,
    pub binary: bool,
    pub max_message: u64,
    pub mode: Mode,
    pub expect: Option<Vec<u8>>,
    pub in_flight: usize,
    pub match_field: Option<String>,
    pub stamp_field: Option<String>,
    /// The URLs as the user wrote them (`ws://...`), for the document.
    pub targets: Vec<String>,
}

fn is_ws(url: &str) -> bool {
    let lower = url.get(..6).unwrap_or(url).to_ascii_lowercase();
    lower.starts_with("ws://") || lower.starts_with("wss://")
}

/// The WebSocket run of `a`, when its URL is a ws:// one; bad input is one line naming the flag.
pub fn prepare(a: &RequestArgs) -> Result<Option<WsRequest>, CliError> {
    let ws_urls = a.urls.iter().filter(|u| is_ws(u)).count();
    if ws_urls == 0 {
        let given = [
            (a.message.is_some(), "--message"),
            (a.message_file.is_some(), "--message-file"),
            (a.binary, "--binary"),
            (a.ws_mode != WsModeArg::Exchange, "--ws-mode"),
            (a.expect != "any", "--expect"),
            (a.in_flight != 1, "--in-flight"),
            (a.match_field.is_some(), "--match-field"),
            (a.stamp_field.is_some(), "--stamp-field"),
        ];
        if let Some((_, flag)) = given.iter().find(|(g, _)| *g) {
            return Err(CliError::new(format!(
                "{flag} is for WebSocket: give a ws:// (or wss://) URL, or send an HTTP body with -b"
            )));
        }
        return Ok(None);
    }
    if ws_urls != a.urls.len() {
        return Err(CliError::new("ws:// URLs with others: a run sends WebSocket messages or HTTP, not both"));
    }
    if a.urls.len() > 1 {
        return Err(CliError::new(
            "several ws:// URLs: one WebSocket target per run is supported yet (docs/websocket.md); give one",
        ));
    }
    let apart = [
        (a.hosts.is_some(), "--hosts"),
        (a.patterns.is_some(), "--patterns"),
        (a.http2, "--http2"),
        (a.http3, "--http3"),
        (a.streams.is_some(), "--streams"),
        (a.unix_socket.is_some(), "--unix-socket"),
        (a.call.is_some(), "--call"),
        // The upgrade goes to the server itself, its answer is messages, and the connection is kept for all of them.
        (a.proxy.is_some(), "--proxy"),
        (a.events.is_some(), "--events"),
        (a.max_requests_per_connection.is_some(), "--max-requests-per-connection"),
        (a.connection_rate.is_some(), "--connection-rate"),
    ];
    if let Some((_, flag)) = apart.iter().find(|(given, _)| *given) {
        return Err(CliError::new(format!(
            "{flag} with a ws:// URL: not supported for WebSocket yet (docs/websocket.md); leave it out"
        )));
    }
    if a.no_keepalive {
        return Err(CliError::new(
            "--no-keepalive with a ws:// URL: a WebSocket connection carries every message; leave --no-keepalive out",
        ));
    }
    if a.body.is_some() || a.body_file.is_some() {
        return Err(CliError::new("-b/--body-file with a ws:// URL: give the message with --message TEXT"));
    }
    if !a.method.trim().eq_ignore_ascii_case("GET") {
        return Err(CliError::new(format!(
            "--method '{}' with a ws:// URL: the upgrade request is a GET; leave --method out",
            a.method.escape_debug()
        )));
    }
    let url = &a.urls[0];
    if url.contains("{{") {
        return Err(CliError::new(
            "{{...}} in a ws:// URL: the upgrade's path is not filled yet; put templates in --message or -H",
        ));
    }
    let max_message = flag_max_message(a.max_message.as_deref().unwrap_or("16MiB"))?;
    let message = match (&a.message, &a.message_file) {
        (Some(m), _) => m.clone().into_bytes(),
        (None, Some(path)) => {
            let bytes = crate::base::bounded::read(path, crate::base::bounded::BODY)
                .map_err(|why| CliError::new(format!("--message-file '{}': {why}", path.display())))?;
            if !a.binary && std::str::from_utf8(&bytes).is_err() {
                return Err(CliError::new(format!(
                    "--message-file '{}': not UTF-8, which a text message must be; add --binary",
                    path.display()
                )));
            }
            bytes
        }
        // Listening needs no message (it subscribes with one if given), nor does connecting.
        (None, None) if a.ws_mode != WsModeArg::Exchange => Vec::new(),
        // A script's request() returns each message.
        (None, None) if a.script.is_some() => Vec::new(),
        (None, None) => {
            return Err(CliError::new(
                "a ws:// URL needs the message each request sends: add --message TEXT (or --message-file FILE), or \
                 --ws-mode listen to count what the server pushes",
            ));
        }
    };
    let mode = match a.ws_mode {
        WsModeArg::Exchange => Mode::Exchange,
        WsModeArg::Listen => Mode::Listen,
        WsModeArg::Connect => Mode::Connect,
    };
    let in_flight = flag_in_flight(a, mode)?;
    if a.script.is_some() && (in_flight > 1 || a.match_field.is_some()) {
        return Err(CliError::new(
            "--script with --in-flight or --match-field: a script's request() and response() go one message at a \
             time; leave --in-flight and --match-field out",
        ));
    }
    if let Some(pointer) = &a.match_field {
        check_match_field(pointer, &message, mode)?;
    }
    if let Some(pointer) = &a.stamp_field {
        let bad = |why: String| CliError::new(format!("--stamp-field '{}': {why}", pointer.escape_debug()));
        crate::protocol::ws::matching::check_pointer(pointer).map_err(bad)?;
        if mode != Mode::Listen {
            return Err(bad(format!(
                "a pushed message's send time is read in --ws-mode listen only, not {}; add --ws-mode listen",
                mode.name()
            )));
        }
    }
    if a.data.is_some() && std::str::from_utf8(&message).is_err() {
        return Err(CliError::new(
            "--data with a binary --message-file: templates are filled in text messages only; leave --data out",
        ));
    }
    let mut args = a.clone();
    args.urls = vec![http_url(url)];
    // A text message (given or read from its file) may hold templates, which the request plan finds in the body.
    args.body = String::from_utf8(message.clone()).ok();
    args.message = None;
    args.message_file = None;
    Ok(Some(WsRequest {
        args,
        message,
        binary: a.binary,
        max_message,
        mode,
        expect: (a.expect != "any").then(|| a.expect.clone().into_bytes()),
        in_flight,
        match_field: a.match_field.clone(),
        stamp_field: a.stamp_field.clone(),
        targets: vec![crate::base::secrets::redact_secret(url)],
    }))
}

/// The most messages one connection may have awaiting answers (`--in-flight`).
pub const MAX_IN_FLIGHT: usize = 1000;

/// `--in-flight` from 1 to [`MAX_IN_FLIGHT`], and only where a message waits for an answer.
fn flag_in_flight(a: &RequestArgs, mode: Mode) -> Result<usize, CliError> {
    let n = a.in_flight;
    if !(1..=MAX_IN_FLIGHT).contains(&n) {
        return Err(CliError::new(format!(
            "--in-flight {n}: give 1 to {MAX_IN_FLIGHT} messages per connection, e.g. --in-flight 10"
        )));
    }
    if n > 1 && mode != Mode::Exchange {
        return Err(CliError::new(format!(
            "--in-flight {n} with --ws-mode {}: messages in flight are exchange mode's; leave --in-flight out",
            mode.name()
        )));
    }
    Ok(n)
}

/// `--match-field`: a JSON pointer, in exchange mode, at which the message (its `{{...}}` holes taken as 0) holds
/// an id.
fn check_match_field(pointer: &str, message: &[u8], mode: Mode) -> Result<(), CliError> {
    let bad = |why: String| CliError::new(format!("--match-field '{}': {why}", pointer.escape_debug()));
    crate::protocol::ws::matching::check_pointer(pointer).map_err(bad)?;
    if mode != Mode::Exchange {
        return Err(bad(format!("answers are paired in exchange mode only, not --ws-mode {}", mode.name())));
    }
    let text = String::from_utf8_lossy(message);
    let mut sample = String::new();
    let mut rest = text.as_ref();
    while let Some(open) = rest.find("{{") {
        sample.push_str(&rest[..open]);
        sample.push('0');
        rest = rest[open..].find("}}").map_or("", |close| &rest[open + close + 2..]);
    }
    sample.push_str(rest);
    if crate::protocol::ws::matching::id_at(sample.as_bytes(), pointer).is_none() {
        return Err(bad(format!(
            "the message has no id there (not JSON, or nothing at the pointer): \"{}\"; give a message such as \
             '{{\"id\":{{{{seq}}}}}}' with --match-field /id",
            crate::base::secrets::scrub_text(&sample.chars().take(60).collect::<String>())
        )));
    }
    Ok(())
}

/// `--max-message` from 1 KiB to 1 GiB (WebSocket's and gRPC's).
pub(super) fn flag_max_message(value: &str) -> Result<u64, CliError> {
    let bad = |why: String| CliError::new(format!("--max-message '{value}': {why}"));
    let bytes = crate::base::units::parse_size(value).map_err(bad)?;
    if !(1024..=1024 * 1024 * 1024).contains(&bytes) {
        return Err(bad(format!("{bytes} bytes; give 1KiB to 1GiB, e.g. --max-message 1MiB")));
    }
    Ok(bytes)
}

/// `ws://` as `http://`, `wss://` as `https://`: the connection is HTTP's until the upgrade.
fn http_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("ws", url));
    let scheme = if scheme.eq_ignore_ascii_case("wss") { "https" } else { "http" };
    format!("{scheme}://{rest}")
}

impl WsRequest {
    /// The connections' settings: the upgrade request to `endpoint`'s `path` with the user's `headers`.
    pub fn settings(&self, endpoint: &Endpoint, path: &str, headers: &[(String, String)]) -> Arc<Settings> {
        Arc::new(Settings {
            head: handshake::request_head(path, &endpoint.host_header(), headers),
            templated_headers: headers.iter().any(|(_, v)| v.contains("{{")),
            bare: handshake::request_head(path, &endpoint.host_header(), &[]),
            binary: self.binary,
            max_message: self.max_message,
            mode: self.mode,
            expect: self.expect.clone(),
            in_flight: self.in_flight,
            match_field: self.match_field.clone(),
            stamp_field: self.stamp_field.clone(),
        })
    }

    /// Each request's bytes are the message (the HTTP request built for the URL only checked it).
    pub fn message_specs(&self, specs: &mut [RequestSpec]) {
        let message = bytes::Bytes::copy_from_slice(&self.message);
        for spec in specs {
            spec.label = match self.mode {
                Mode::Exchange => format!("message to {}", self.targets[0]),
                Mode::Listen => format!("message from {}", self.targets[0]),
                Mode::Connect => format!("connection to {}", self.targets[0]),
            }
            .into();
            for p in spec.prepared.iter_mut() {
                p.bytes = message.clone();
                p.expects_no_body = false;
                p.idempotent = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ws_url_connects_as_http_and_wss_as_https() {
        assert_eq!(http_url("ws://127.0.0.1:9000/chat?x=1"), "http://127.0.0.1:9000/chat?x=1");
        assert_eq!(http_url("WSS://example.org/"), "https://example.org/");
        assert!(is_ws("ws://h/") && is_ws("wss://h/") && !is_ws("http://h/") && !is_ws("ws:/"));
    }
}
