//! The check before an HTTP/2 load: one connection opened and the server's answer to the preface read (h2c: its
//! SETTINGS; TLS: ALPN h2), within the connect timeout, so a server without HTTP/2 is one clear line.

use super::*;

/// Before the load: every endpoint speaks HTTP/2, by prior knowledge on http:// (the answer to the preface is
/// SETTINGS) or over TLS with ALPN h2. A server that does not is bad input, said in one line.
pub(in crate::engine) fn preflight(plan: &crate::plan::RunPlan) -> Result<(), crate::error::CliError> {
    use crate::base::target::Scheme;
    let mut rt = None;
    for ep in &plan.endpoints {
        let refused = |why: String| crate::error::CliError::new(format!("target {ep}: {why}"));
        if ep.scheme == Scheme::Https {
            if rt.is_none() {
                rt = Some(tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| {
                    crate::error::CliError::runtime(format!("cannot start an event loop for the TLS check: {e}"))
                })?);
            }
            let tls = super::super::tls::Tls::new(&plan.tls, plan.insecure, true);
            let rt = rt.as_ref().expect("made above");
            rt.block_on(super::super::conn::check_tls(ep, &tls, plan.connect_timeout)).map_err(refused)?;
            let conn = rt.block_on(connect(ep, Some(&tls), plan.connect_timeout, false));
            // A certificate the run will count as `tls` is not this check's business.
            if let Ok(conn) = conn {
                check_alpn(&conn).map_err(|_| {
                    refused(
                        "the server does not offer HTTP/2 over TLS (ALPN h2), only HTTP/1.1; leave out --http2".into(),
                    )
                })?;
            }
        } else if ep.proxy.is_some() {
            // Through a proxy: the tunnel is what can be checked before the load (a 407 is bad input).
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| {
                crate::error::CliError::runtime(format!("cannot start an event loop for the proxy check: {e}"))
            })?;
            rt.block_on(connect(ep, None, plan.connect_timeout, false)).map_err(|f| refused(f.message))?;
        } else {
            prior_knowledge(ep, plan.connect_timeout).map_err(refused)?;
        }
    }
    Ok(())
}

/// Sends the preface and an empty SETTINGS, and reads the first frame header: SETTINGS is HTTP/2.
fn prior_knowledge(ep: &crate::base::target::Endpoint, limit: Duration) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    let mut s = ep.connect_blocking(limit).map_err(|e| format!("cannot connect ({e})"))?;
    let mut hello = frame::PREFACE.to_vec();
    frame::settings(&mut hello, &[]);
    std::io::Write::write_all(&mut s, &hello).map_err(|e| format!("cannot send the HTTP/2 preface ({e})"))?;
    let mut got = Vec::with_capacity(64);
    let mut buf = [0u8; 64];
    while got.len() < frame::HEAD {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let _ = s.set_read_timeout(Some(left));
        match std::io::Read::read(&mut s, &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n.min(64 - got.len().min(64))]),
        }
        if got.len() >= 64 {
            break;
        }
    }
    if got.len() >= frame::HEAD {
        let head = Head::read(&got);
        if head.kind == frame::SETTINGS && head.stream == 0 && head.flags & frame::ACK == 0 {
            return Ok(());
        }
    }
    let answer = if got.is_empty() {
        format!("no answer within {}", humantime::format_duration(limit))
    } else {
        let first_line = got.split(|&b| b == b'\r' || b == b'\n').next().unwrap_or(&got);
        format!("it answered \"{}\"", crate::protocol::http::response::quote(first_line))
    };
    Err(format!(
        "the server does not speak HTTP/2 with prior knowledge (h2c) on this port ({answer}); leave out --http2, or \
         use https:// where it offers HTTP/2 over TLS"
    ))
}
