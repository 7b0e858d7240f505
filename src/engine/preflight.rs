//! The checks before the load: every endpoint accepts a connection (and speaks the protocol asked: a greeting, a
//! PING, an answer to a first request), within the connect timeout, so a closed port or a wrong server is one clear
//! line; a kv run's setup commands sent once.

use super::*;

/// Checks that every endpoint accepts a connection before the load starts: a closed port is bad input.
pub fn preflight(plan: &RunPlan) -> Result<(), CliError> {
    too_many_clients(plan)?;
    too_few_files(plan)?;
    if plan.wire.protocol() == crate::protocol::Protocol::Http3 {
        // QUIC is UDP: a TCP connect would say nothing of it (and fail against a server serving HTTP/3 alone).
        return h3::preflight(plan);
    }
    // Targets as their users wrote them: redis://HOST:PORT for a Redis server, not http://.
    let shown = |ep: &crate::base::target::Endpoint| match plan.wire.protocol() {
        crate::protocol::Protocol::Http => ep.to_string(),
        p => ep.kv_target(p.scheme()),
    };
    for ep in &plan.endpoints {
        // A connection to itself is refused too: nothing listens there.
        let connected = ep.connect_blocking(plan.connect_timeout).and_then(|s| match s.to_itself() {
            true => Err(std::io::ErrorKind::ConnectionRefused.into()),
            false => Ok(s),
        });
        if let Err(e) = connected {
            let why = match e.kind() {
                std::io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
                    format!("no answer within {}", humantime::format_duration(plan.connect_timeout))
                }
                _ => e.to_string(),
            };
            let fix = if ep.proxy.is_some() {
                "start the proxy or fix --proxy"
            } else {
                "start the server or fix the host and port"
            };
            return Err(CliError::new(format!(
                "target {}: cannot connect to {} ({why}); {fix}",
                shown(ep),
                ep.address()
            )));
        }
    }
    // A script's setup() and init() run before the load, as wrk runs them: an error there is bad input.
    if let Some(script) = &plan.script {
        script.prepare(plan.threads, matches!(plan.load, LoadModel::Open { .. }))?;
    }
    // A Redis server is asked one command (after the greeting) before the load: one that wants a password given
    // none, or refuses for another reason, is bad input in the server's own words, not a run of "500"s.
    if plan.wire.protocol() == crate::protocol::Protocol::Resp || plan.wire.greeting().is_some() {
        for ep in &plan.endpoints {
            ping_now(ep, plan.wire.greeting(), plan.connect_timeout, reply_limit(plan))
                .map_err(|why| CliError::new(format!("target {}: {why}", shown(ep))))?;
        }
    }
    if plan.wire.protocol().over_http2() {
        return h2::preflight(plan);
    }
    // A port that accepts TCP but never completes a TLS handshake (a plain-HTTP server behind https://) would
    // give nothing but handshake failures, or "0 requests" when the step is shorter than --connect-timeout.
    let https: Vec<_> = plan.endpoints.iter().filter(|e| e.scheme == Scheme::Https).collect();
    if !https.is_empty() {
        let tls = tls::Tls::new(&plan.tls, plan.insecure, false);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| CliError::runtime(format!("cannot start an event loop for the TLS check: {e}")))?;
        for ep in https {
            rt.block_on(conn::check_tls(ep, &tls, plan.connect_timeout))
                .map_err(|why| CliError::new(format!("target {ep}: {why}")))?;
            let at = plan.endpoints.iter().position(|e| std::ptr::eq(e, ep)).expect("one of the plan's");
            let first =
                plan.requests.iter().find_map(|r| r.endpoints.iter().position(|&e| e == at).map(|i| &r.prepared[i]));
            if let Some(request) = first
                && let Some(why) =
                    rt.block_on(refused_without_certificate(ep, &tls, request, plan.connect_timeout, plan.max_line))
            {
                return Err(CliError::new(format!("target {ep}: {why}")));
            }
        }
    }
    Ok(())
}

/// The greeting (Redis AUTH, SELECT) and a PING tried once before the load: a wrong password or database, or a
/// server that wants a password given none (`NOAUTH`), is bad input said in one line, not a million failures.
pub(super) fn ping_now(
    ep: &crate::base::target::Endpoint,
    g: Option<&crate::protocol::Greeting>,
    connect_limit: Duration,
    limit: Duration,
) -> Result<(), String> {
    let mut s = greeted(ep, g, connect_limit, limit)?;
    // One deadline for the exchange: a server that dribbles a byte at a time cannot stall it.
    let deadline = Instant::now() + limit;
    let ping = std::sync::Arc::from(crate::protocol::resp::encode(&[b"PING"]));
    let reply = ask(&mut s, crate::protocol::Protocol::Resp, &ping, deadline, "PING")?;
    match reply.error {
        None => Ok(()),
        Some(error) => {
            let said = crate::protocol::printable_text(crate::base::secrets::scrub_text(&error));
            let fix = if said.starts_with("NOAUTH") {
                "it wants a password: give it in the URL, ':PASSWORD@' before the host ('USER:PASSWORD@' for an ACL \
                 user)"
            } else {
                "is it the server you meant?"
            };
            Err(format!("the server refused PING ({said}): {fix}"))
        }
    }
}

/// How long a check before the load waits for a reply: the run's own `--timeout` (a request's), so a server that
/// never answers, or answers in another protocol, is named within the time the user allowed.
pub(super) fn reply_limit(plan: &RunPlan) -> Duration {
    plan.requests.first().map_or(Duration::from_secs(5), |r| r.timeout)
}

/// The protocol a reply's first bytes speak when they are not the one asked for: `this port speaks Redis, not
/// memcached` beats a wait for a line that never comes, or a decoder's complaint.
pub(super) fn other_protocol(asked: crate::protocol::Protocol, got: &[u8]) -> Option<&'static str> {
    use crate::protocol::Protocol;
    let line = got.split(|&b| b == b'\n').next().unwrap_or(got);
    let http = got.starts_with(b"HTTP/");
    let memcached = [&b"ERROR"[..], b"CLIENT_ERROR", b"SERVER_ERROR"].iter().any(|m| line.starts_with(m));
    let redis = matches!(got.first(), Some(b'-' | b'+' | b'$' | b'*' | b':')) && line.ends_with(b"\r");
    match asked {
        _ if http => Some("this port speaks HTTP, not a key-value protocol; give its http:// URL to hakaru run"),
        Protocol::Resp if memcached => Some("this port speaks memcached, not Redis; give memcache://HOST:PORT"),
        Protocol::Memcache if redis => Some("this port speaks Redis, not memcached; give redis://HOST:PORT"),
        _ => None,
    }
}

/// A blocking connection to `ep`, greeted (AUTH, SELECT) by `deadline`: an error reply refuses it, in words that
/// never hold the password.
pub(super) fn greeted(
    ep: &crate::base::target::Endpoint,
    greeting: Option<&crate::protocol::Greeting>,
    connect_limit: Duration,
    limit: Duration,
) -> Result<crate::base::target::Stream, String> {
    let mut s = ep.connect_blocking(connect_limit).map_err(|e| format!("cannot connect ({e})"))?;
    let deadline = Instant::now() + limit;
    if let Some(g) = greeting {
        for command in &g.commands {
            let reply =
                ask(&mut s, crate::protocol::Protocol::Resp, command, deadline, &g.what).map_err(|e| g.scrub(&e))?;
            if let Some(error) = reply.error {
                return Err(format!(
                    "the server refused {}: {}; check the password and the database in the URL",
                    g.what,
                    g.scrub(&error)
                ));
            }
        }
    }
    Ok(s)
}

/// A reply read by [`ask`].
pub(super) struct Asked {
    /// The error reply's text, when the reply was one.
    pub(super) error: Option<String>,
    /// The reply's data (bulk strings, integers, items), one after the other.
    pub(super) value: Vec<u8>,
}

/// Sends one command on a blocking connection and reads its one reply by `deadline`.
pub(super) fn ask(
    s: &mut crate::base::target::Stream,
    protocol: crate::protocol::Protocol,
    command: &std::sync::Arc<[u8]>,
    deadline: Instant,
    what: &str,
) -> Result<Asked, String> {
    use crate::protocol::{AnyDecoder, ResponseDecoder};
    use std::io::Write;
    s.write_all(command).map_err(|e| format!("sending {what}: {e}"))?;
    let mut d = AnyDecoder::new(protocol, crate::protocol::DEFAULT_MAX_LINE);
    d.keep_values(true);
    d.start(false);
    let mut answer = None;
    let mut first = Vec::new();
    read_by(s, deadline, what, |bytes| {
        if first.len() < 64 {
            first.extend_from_slice(&bytes[..bytes.len().min(64)]);
        }
        if let Some(other) = other_protocol(protocol, &first) {
            return Err(other.to_string());
        }
        answer = d.feed(bytes).map_err(|e| format!("reply to {what}: {e}"))?;
        Ok(answer.is_some())
    })?;
    let answer = answer.expect("read until answered");
    if d.stray().is_some() {
        return Err(format!("the server sent more than one reply to {what}"));
    }
    let error = (answer.status == crate::protocol::resp::STATUS_ERROR).then(|| match &d {
        AnyDecoder::Resp(r) => r.error().unwrap_or("an error reply").to_string(),
        _ => "an error reply".to_string(),
    });
    Ok(Asked { error, value: d.value().to_vec() })
}

/// Reads from a blocking connection until `take` says the bytes so far make a whole reply, by `deadline`: the one
/// read loop of the checks before the load (greeting, setup, survey), which a dripping server cannot stretch.
pub(super) fn read_by(
    s: &mut crate::base::target::Stream,
    deadline: Instant,
    what: &str,
    mut take: impl FnMut(&[u8]) -> Result<bool, String>,
) -> Result<(), String> {
    use std::io::Read;
    let mut buf = [0u8; 4096];
    // What is read is bounded too: a server that answers with an endless array would fill memory before the
    // deadline.
    let mut read = 0;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let late =
            || format!("no reply to {what} within --timeout; is the server answering? (raise --timeout if slow)");
        if left.is_zero() {
            return Err(late());
        }
        let _ = s.set_read_timeout(Some(left));
        let n = s.read(&mut buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => late(),
            _ => format!("no reply to {what} ({e})"),
        })?;
        if n == 0 {
            return Err(format!("the server closed the connection after {what}"));
        }
        read += n;
        if read > survey::MAX_REPLY {
            return Err(format!(
                "the reply to {what} is longer than {} bytes; is it the server you meant?",
                survey::MAX_REPLY
            ));
        }
        if take(&buf[..n])? {
            return Ok(());
        }
    }
}

/// Runs a workload's setup on every server before the load (clearing the database for `order` and `wicked`,
/// loading `--script`): each command named for messages; returns each command's reply data from the first
/// server. A refusal is bad input, in one line.
pub fn setup(plan: &RunPlan, commands: &[(String, Vec<u8>)]) -> Result<Vec<Vec<u8>>, CliError> {
    let mut values = Vec::new();
    for (i, ep) in plan.endpoints.iter().enumerate() {
        let target = ep.kv_target(plan.wire.protocol().scheme());
        let fail = |why: String| CliError::new(format!("target {target}: {why}"));
        let limit = reply_limit(plan);
        let mut s = greeted(ep, plan.wire.greeting(), plan.connect_timeout, limit).map_err(fail)?;
        for (what, command) in commands {
            let deadline = Instant::now() + limit;
            let reply = ask(&mut s, plan.wire.protocol(), &std::sync::Arc::from(command.as_slice()), deadline, what)
                .map_err(fail)?;
            if let Some(error) = reply.error {
                return Err(fail(format!("the server refused {what}: {error}")));
            }
            if i == 0 {
                values.push(reply.value);
            }
        }
    }
    Ok(values)
}

/// Before the load, when a server asked for a client certificate and none was given (`--cert`): the first request
/// is sent once (only if sending it twice does no harm) and a refusal is said in one line, as nginx's
/// `ssl_verify_client on` answers 400 and others end the connection. A server that only asks (optional client
/// authentication, as Kubernetes' API server) and answers is left to the run. None: nothing to refuse.
async fn refused_without_certificate(
    ep: &crate::base::target::Endpoint,
    tls: &super::tls::Tls,
    request: &crate::protocol::PreparedRequest,
    timeout: std::time::Duration,
    max_line: usize,
) -> Option<String> {
    use crate::protocol::{AnyDecoder, Protocol, ResponseDecoder};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if !tls.was_asked_for_certificate() || tls.gives_certificate() || !request.idempotent {
        return None;
    }
    let refused = |what: String| {
        Some(format!(
            "the server asks for a client certificate (mutual TLS) and none was given: {what}; give --cert FILE --key \
             FILE"
        ))
    };
    let deadline = tokio::time::Instant::now() + timeout;
    let exchange = async {
        let mut conn = match super::conn::connect(ep, Some(tls), timeout, false).await {
            Ok(c) => c,
            Err(f) => return refused(format!("the handshake failed ({})", f.message)),
        };
        if let Err(e) = conn.write_all(&request.bytes).await {
            return refused(format!("it ended the connection ({e})"));
        }
        let mut decoder = AnyDecoder::new(Protocol::Http, max_line);
        decoder.start(request.expects_no_body);
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match conn.read(&mut buf).await {
                Ok(0) => return refused("it closed the connection without an answer".into()),
                Err(e) => return refused(format!("it ended the connection ({e})")),
                Ok(n) => match decoder.feed(&buf[..n]) {
                    Ok(None) => {}
                    Ok(Some(a)) if a.status >= 400 => {
                        return refused(format!("it answered {}", crate::protocol::status_text(a.status)));
                    }
                    // Answered: optional client authentication, or one the run will count.
                    Ok(Some(_)) | Err(_) => return None,
                },
            }
        }
    };
    tokio::time::timeout_at(deadline, exchange).await.unwrap_or(None)
}
