//! The TLS flags (`--cacert`, `--cert` and `--key`, `--tls-version`, `--sni`, `--tls-resume`) checked and their
//! files read before the load: a `TlsOptions` the engine makes its TLS client settings from.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::sign::CertifiedKey;

use crate::cli::args::{OnOff, RequestArgs, TlsVersionArg};
use crate::error::CliError;
use crate::result::TlsSettings;

/// The one TLS version offered (`--tls-version`); both when None.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsVersion {
    V1_2,
    V1_3,
}

/// What the TLS flags ask for, their files read and checked.
#[derive(Clone, Debug)]
pub struct TlsOptions {
    /// `--cacert`: certificates trusted besides the web's roots.
    pub roots: Vec<CertificateDer<'static>>,
    /// The client certificate of `--cert`, with `--key`'s key, checked to be the certificate's (mutual TLS).
    pub client: Option<Arc<CertifiedKey>>,
    pub version: Option<TlsVersion>,
    /// `--sni`: the name sent and checked instead of the URL's host.
    pub sni: Option<ServerName<'static>>,
    /// `--tls-resume`: session tickets and IDs kept and offered.
    pub resume: bool,
    /// `--0rtt` (HTTP/3): early data sent on a resumed session.
    pub early_data: bool,
    /// What the result document says of them; None when no TLS flag was given.
    pub record: Option<TlsSettings>,
}

impl Default for TlsOptions {
    fn default() -> Self {
        Self {
            roots: Vec::new(),
            client: None,
            version: None,
            sni: None,
            resume: true,
            early_data: false,
            record: None,
        }
    }
}

impl TlsOptions {
    /// The TLS flags of a request, checked. `https`: some URL uses TLS (the flags are refused otherwise: they would
    /// change nothing, which is not what whoever typed them meant).
    pub fn from_args(a: &RequestArgs, https: bool) -> Result<TlsOptions, CliError> {
        let given = [
            ("--cacert", a.cacert.is_some()),
            ("--cert", a.cert.is_some()),
            ("--tls-version", a.tls_version.is_some()),
            ("--sni", a.sni.is_some()),
            ("--tls-resume", a.tls_resume == OnOff::Off),
            ("--0rtt", a.zero_rtt),
        ];
        let Some((first, _)) = given.iter().find(|(_, g)| *g) else { return Ok(TlsOptions::default()) };
        if !https {
            return Err(CliError::new(format!(
                "{first}: no https:// URL to use it on; give https:// URLs or leave out the TLS flags"
            )));
        }
        let roots = match &a.cacert {
            Some(path) => read_certificates("--cacert", path, "the CA's certificate")?,
            None => Vec::new(),
        };
        let client = match (&a.cert, &a.key) {
            (Some(cert), Some(key)) => Some(Arc::new(client_key(cert, key)?)),
            _ => None,
        };
        let sni = match &a.sni {
            None => None,
            Some(name) => Some(ServerName::try_from(name.clone()).map_err(|_| {
                CliError::new(format!(
                    "--sni '{}': not a server name; give a DNS name such as api.example.com",
                    name.escape_debug()
                ))
            })?),
        };
        let version = a.tls_version.map(|v| match v {
            TlsVersionArg::V1_2 => TlsVersion::V1_2,
            TlsVersionArg::V1_3 => TlsVersion::V1_3,
        });
        let record = TlsSettings {
            cacert: a.cacert.as_ref().map(|p| p.display().to_string()),
            cert: a.cert.as_ref().map(|p| p.display().to_string()),
            version: version.map(|v| if v == TlsVersion::V1_2 { "1.2" } else { "1.3" }.to_string()),
            sni: a.sni.clone(),
            resume: a.tls_resume == OnOff::On,
            zero_rtt: a.zero_rtt,
        };
        let (resume, early_data) = (record.resume, record.zero_rtt);
        Ok(TlsOptions { roots, client, version, sni, resume, early_data, record: Some(record) })
    }
}

/// Every certificate of a PEM file, at least one.
fn read_certificates(flag: &str, path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, CliError> {
    let bad = |why: String| CliError::new(format!("{flag} {}: {why}", path.display()));
    let bytes = crate::base::bounded::read(path, crate::base::bounded::SMALL).map_err(bad)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("not a PEM file ({}); give {what} in PEM", pem_error(&e))))?;
    if certs.is_empty() {
        return Err(bad(format!("no certificate in it (no -----BEGIN CERTIFICATE----- block); give {what} in PEM")));
    }
    // Each one is parsed now (as a trust anchor is), so a damaged file is refused here rather than failing every
    // handshake.
    let mut store = rustls::RootCertStore::empty();
    for (i, cert) in certs.iter().enumerate() {
        store
            .add(cert.clone())
            .map_err(|e| bad(format!("certificate {} cannot be read ({e}); give {what} in PEM", i + 1)))?;
    }
    Ok(certs)
}

/// `--cert` and `--key`: the chain, the key, and the key checked to be the certificate's.
fn client_key(cert: &Path, key: &Path) -> Result<CertifiedKey, CliError> {
    let chain = read_certificates("--cert", cert, "the client certificate")?;
    let bad = |why: String| CliError::new(format!("--key {}: {why}", key.display()));
    let bytes = crate::base::bounded::read(key, crate::base::bounded::SMALL).map_err(bad)?;
    let der = PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| match e {
        pem::Error::NoItemsFound if contains(&bytes, b"ENCRYPTED") => {
            bad("the key is protected by a passphrase, which hakaru does not ask for; give it unprotected \
             (openssl pkey -in KEY -out plain.pem)"
                .into())
        }
        pem::Error::NoItemsFound => {
            bad("no private key in it (no -----BEGIN PRIVATE KEY-----, RSA PRIVATE KEY or EC PRIVATE KEY block); \
             give the certificate's key in PEM"
                .into())
        }
        e => bad(format!("not a PEM file ({}); give the certificate's key in PEM", pem_error(&e))),
    })?;
    let provider = rustls::crypto::ring::default_provider();
    CertifiedKey::from_der(chain, der, &provider).map_err(|e| match e {
        rustls::Error::InconsistentKeys(_) => CliError::new(format!(
            "--cert {} --key {}: the key is not the certificate's; give the key the certificate was made for",
            cert.display(),
            key.display()
        )),
        e => bad(format!("the key cannot be used ({e}); give an RSA, ECDSA or Ed25519 key in PEM")),
    })
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A PEM error in words: the file's own contents are never quoted (a key file's are secret).
fn pem_error(e: &pem::Error) -> String {
    match e {
        pem::Error::MissingSectionEnd { .. } => "a -----BEGIN block with no -----END".into(),
        pem::Error::IllegalSectionStart { .. } => "a -----BEGIN line that is not whole".into(),
        pem::Error::Base64Decode(_) => "a block that is not base64".into(),
        _ => "unreadable".into(),
    }
}
