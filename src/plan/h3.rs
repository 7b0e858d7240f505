//! `--http3` checked: the flags it does not take yet and the URLs it needs (https://, a host and port reached
//! over UDP), each refused in one line before any load.

use crate::base::target::{Endpoint, Scheme};
use crate::cli::args::{RequestArgs, TlsVersionArg};
use crate::error::CliError;

/// The flags `--http3` cannot be given with (yet, or ever: HTTP/3 is TLS 1.3 over UDP).
pub(super) fn check_flags(a: &RequestArgs) -> Result<(), CliError> {
    if !a.http3 {
        if a.zero_rtt {
            return Err(CliError::new("--0rtt without --http3: 0-RTT is QUIC's here; add --http3"));
        }
        return Ok(());
    }
    if a.zero_rtt && a.tls_resume == crate::cli::args::OnOff::Off {
        return Err(CliError::new(
            "--0rtt with --tls-resume off: 0-RTT needs a resumed session; leave one of them out",
        ));
    }
    if a.http2 {
        return Err(CliError::new("--http2 with --http3: a run speaks one HTTP version; give one of them"));
    }
    if a.tls_version == Some(TlsVersionArg::V1_2) {
        return Err(CliError::new("--tls-version 1.2 with --http3: QUIC is TLS 1.3 only; leave --tls-version out"));
    }
    let apart = [
        (a.proxy.is_some(), "--proxy", "an HTTP proxy carries TCP, and QUIC is UDP"),
        (a.unix_socket.is_some(), "--unix-socket", "QUIC goes over UDP to a host and port"),
    ];
    if let Some((_, flag, why)) = apart.iter().find(|(given, ..)| *given) {
        return Err(CliError::new(format!("{flag} with --http3: {why}; leave one of them out")));
    }
    Ok(())
}

/// Every endpoint of an HTTP/3 run is https://: HTTP/3 has no cleartext form.
pub(super) fn check_endpoints(endpoints: &[Endpoint]) -> Result<(), CliError> {
    match endpoints.iter().find(|e| e.scheme != Scheme::Https) {
        Some(ep) => Err(CliError::new(format!(
            "target {ep}: --http3 needs an https:// URL (HTTP/3 is always encrypted); write https://{}",
            ep.host_header()
        ))),
        None => Ok(()),
    }
}
