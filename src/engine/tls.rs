//! The TLS client settings a run's connections share (rustls' `ClientConfig`): roots (the web's, `--cacert`'s),
//! the client certificate, the versions offered, session resumption, the server name; and what a handshake was.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rustls::client::{ResolvesClientCert, Resumption};
use rustls::pki_types::ServerName;
use rustls::sign::CertifiedKey;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::plan::tls::{TlsOptions, TlsVersion};

/// A run's TLS client: one configuration for every connection, so resumed sessions are shared by the threads.
pub struct Tls {
    connector: TlsConnector,
    sni: Option<ServerName<'static>>,
    client: Arc<ClientAuth>,
    version: Option<TlsVersion>,
}

impl Tls {
    /// The settings of `opts`, any certificate accepted with `insecure`; ALPN offers `h2` first when `http2`.
    pub fn new(opts: &TlsOptions, insecure: bool, http2: bool) -> Tls {
        let (mut config, client) = client_config(opts, insecure);
        // With HTTP/2 http/1.1 is offered too, so a server without h2 says so (and is refused in words) rather than
        // ending the handshake with an alert.
        config.alpn_protocols =
            if http2 { vec![b"h2".to_vec(), b"http/1.1".to_vec()] } else { vec![b"http/1.1".to_vec()] };
        Tls { connector: TlsConnector::from(Arc::new(config)), sni: opts.sni.clone(), client, version: opts.version }
    }

    /// QUIC's TLS settings for HTTP/3: the same roots, certificate and resumption, TLS 1.3 (QUIC has no other),
    /// ALPN h3 alone (a server without it ends the handshake: `handshake_failed`).
    pub fn quic(opts: &TlsOptions, insecure: bool) -> rustls::ClientConfig {
        let (mut config, _) = client_config(&TlsOptions { version: Some(TlsVersion::V1_3), ..opts.clone() }, insecure);
        config.alpn_protocols = vec![b"h3".to_vec()];
        // `--0rtt`: offer early data with a resumed session's ticket (quinn then lets the connection send at once).
        config.enable_early_data = opts.early_data;
        config
    }

    pub fn connector(&self) -> &TlsConnector {
        &self.connector
    }

    /// The name sent (SNI) and checked against the certificate: `--sni`'s, else the URL's host.
    pub fn server_name(&self, host: &str) -> Result<ServerName<'static>, String> {
        match &self.sni {
            Some(name) => Ok(name.clone()),
            None => ServerName::try_from(host.to_string()).map_err(|e| format!("server name '{host}': {e}")),
        }
    }

    /// A server asked for a client certificate in a handshake made with these settings.
    pub fn was_asked_for_certificate(&self) -> bool {
        self.client.asked.load(Ordering::Relaxed)
    }

    /// `--tls-version` in words (`1.2`), None when both are offered.
    pub fn version(&self) -> Option<&'static str> {
        self.version.map(|v| if v == TlsVersion::V1_2 { "1.2" } else { "1.3" })
    }

    /// A client certificate is given (`--cert`).
    pub fn gives_certificate(&self) -> bool {
        self.client.key.is_some()
    }
}

/// The rustls settings of `opts` without ALPN, any certificate accepted with `insecure`.
fn client_config(opts: &TlsOptions, insecure: bool) -> (rustls::ClientConfig, Arc<ClientAuth>) {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let versions: &[&rustls::SupportedProtocolVersion] = match opts.version {
        None => rustls::DEFAULT_VERSIONS,
        Some(TlsVersion::V1_2) => &[&rustls::version::TLS12],
        Some(TlsVersion::V1_3) => &[&rustls::version::TLS13],
    };
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(versions)
        .expect("ring supports TLS 1.2 and 1.3");
    let client = Arc::new(ClientAuth { key: opts.client.clone(), asked: AtomicBool::new(false) });
    let mut config = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(crate::base::tls::AcceptAnyCertificate(provider)))
            .with_client_cert_resolver(Arc::clone(&client) as Arc<dyn ResolvesClientCert>)
    } else {
        let mut roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
        // Checked by the plan: none is refused here.
        roots.add_parsable_certificates(opts.roots.iter().cloned());
        builder
            .with_root_certificates(roots)
            .with_client_cert_resolver(Arc::clone(&client) as Arc<dyn ResolvesClientCert>)
    };
    if !opts.resume {
        config.resumption = Resumption::disabled();
    }
    (config, client)
}

/// The handshake resumed a session (a ticket or session ID).
pub fn resumed(stream: &TlsStream<TcpStream>) -> bool {
    stream.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed)
}

/// The client certificate given to a server that asks for one (none without `--cert`), noting that it asked.
#[derive(Debug)]
struct ClientAuth {
    key: Option<Arc<CertifiedKey>>,
    asked: AtomicBool,
}

impl ResolvesClientCert for ClientAuth {
    fn resolve(&self, _issuers: &[&[u8]], _schemes: &[rustls::SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        self.asked.store(true, Ordering::Relaxed);
        self.key.clone()
    }

    fn has_certs(&self) -> bool {
        self.key.is_some()
    }
}
