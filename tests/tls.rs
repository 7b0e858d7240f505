//! TLS as deployments have it, against a real nginx: a test CA made with openssl, mutual TLS
//! (`ssl_verify_client on`), session resumption counted by hakaru and by nginx's `$ssl_session_reused`, one TLS
//! version, `--sni`; and the TLS flags' bad files refused in one line before any load.
use crate::common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use common::{free_port, hakaru, wait_for, wait_listening};

/// Runs openssl in `dir`, which must succeed.
fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").args(args).current_dir(dir).output().expect("openssl is installed");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A CA (ca.pem), a server certificate for localhost and tls.test signed by it (server.pem, server.key), a client
/// certificate signed by it (client.pem, client.key), and another CA's client certificate (stranger.pem/.key).
fn make_pki(dir: &Path) {
    let key = |name: &str| {
        openssl(dir, &["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", name])
    };
    let ca = |name: &str, cn: &str| {
        key(&format!("{name}.key"));
        openssl(
            dir,
            &[
                "req",
                "-x509",
                "-new",
                "-key",
                &format!("{name}.key"),
                "-days",
                "2",
                "-subj",
                &format!("/CN={cn}"),
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
                "-out",
                &format!("{name}.pem"),
            ],
        );
    };
    let signed = |name: &str, by: &str, ext: &str| {
        key(&format!("{name}.key"));
        openssl(
            dir,
            &[
                "req",
                "-new",
                "-key",
                &format!("{name}.key"),
                "-subj",
                &format!("/CN={name}"),
                "-out",
                &format!("{name}.csr"),
            ],
        );
        std::fs::write(dir.join(format!("{name}.ext")), ext).unwrap();
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &format!("{name}.csr"),
                "-CA",
                &format!("{by}.pem"),
                "-CAkey",
                &format!("{by}.key"),
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                &format!("{name}.ext"),
                "-out",
                &format!("{name}.pem"),
            ],
        );
    };
    ca("ca", "hakaru test CA");
    ca("other", "another CA");
    signed("server", "ca", "subjectAltName=DNS:localhost,DNS:tls.test\nextendedKeyUsage=serverAuth\n");
    signed("client", "ca", "extendedKeyUsage=clientAuth\n");
    signed("stranger", "other", "extendedKeyUsage=clientAuth\n");
}

/// nginx with four TLS servers, each logging `$ssl_session_reused $ssl_protocol $ssl_client_verify
/// $ssl_server_name $status` to its own log: `mtls` (ssl_verify_client on), `open` (session cache and tickets
/// on), `only13` (TLS 1.3 only); all with the CA's server certificate.
struct TlsNginx {
    child: Child,
    dir: tempfile::TempDir,
    mtls: u16,
    open: u16,
    only13: u16,
}

impl Drop for TlsNginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl TlsNginx {
    fn start() -> TlsNginx {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().display().to_string();
        make_pki(dir.path());
        let (mtls, open, only13) = (free_port(), free_port(), free_port());
        let server = |port: u16, name: &str, extra: &str| {
            format!(
                "  server {{\n    listen 127.0.0.1:{port} ssl;\n    ssl_certificate {p}/server.pem;\n    \
                 ssl_certificate_key {p}/server.key;\n    ssl_session_cache shared:{name}:1m;\n    {extra}\n    \
                 location = / {{ access_log {p}/{name}.log tls; default_type text/plain; return 200 \"hello\\n\"; }}\n  }}\n"
            )
        };
        let conf = common::nginx_conf(
            dir.path(),
            &format!(
                "  log_format tls '$ssl_session_reused $ssl_protocol $ssl_client_verify $ssl_server_name $status';\n{}{}{}",
                server(mtls, "mtls", &format!("ssl_client_certificate {p}/ca.pem; ssl_verify_client on;")),
                server(open, "open", "ssl_session_tickets on; ssl_protocols TLSv1.2 TLSv1.3;"),
                server(only13, "only13", "ssl_protocols TLSv1.3;"),
            ),
        );
        std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
        let child = common::spawn_nginx(dir.path());
        let n = TlsNginx { child, dir, mtls, open, only13 };
        for port in [mtls, open, only13] {
            wait_listening(SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_secs(10));
        }
        n
    }

    fn url(&self, port: u16) -> String {
        format!("https://localhost:{port}/")
    }

    fn file(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    /// A server's access log once it holds `n` lines (nginx writes a line as each request ends).
    fn log(&self, name: &str, n: usize) -> Vec<String> {
        let path = self.dir.path().join(format!("{name}.log"));
        let read = || std::fs::read_to_string(&path).unwrap_or_default();
        wait_for(Duration::from_secs(30), || read().lines().count() >= n);
        read().lines().map(String::from).collect()
    }
}

/// The one line hakaru said on stderr (it must be exactly one).
fn one_line(stderr: &str) -> &str {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    lines[0]
}

#[test]
fn mutual_tls_passes_with_the_cas_client_certificate_and_is_refused_in_one_line_without_it() {
    let n = TlsNginx::start();
    let (ca, cert, key) = (n.file("ca.pem"), n.file("client.pem"), n.file("client.key"));
    let url = n.url(n.mtls);
    let out = hakaru(&["run", "-q", "-c", "2", "-n", "200", "--cacert", &ca, "--cert", &cert, "--key", &key, &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.status_count("200"), 200, "{}", out.stdout);
    let lines = n.log("mtls", 200);
    assert_eq!(lines.len(), 200);
    assert!(lines.iter().all(|l| l.contains(" SUCCESS ") && l.ends_with(" 200")), "{:?}", &lines[..3]);
    let settings = &out.doc()["settings"]["tls"];
    assert_eq!((settings["cacert"].as_str(), settings["cert"].as_str()), (Some(ca.as_str()), Some(cert.as_str())));
    assert!(common::schema_errors(out.doc()).is_empty(), "{:?}", common::schema_errors(out.doc()));

    // No certificate: refused before the load, in one line saying what to give.
    let out = hakaru(&["run", "-q", "-n", "200", "--cacert", &ca, &url]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    let line = one_line(&out.stderr);
    assert!(line.contains("asks for a client certificate") && line.contains("--cert FILE --key FILE"), "{line}");
    assert!(line.contains("400 Bad Request"), "nginx's own answer: {line}");
    assert!(out.json.is_none(), "no load, no document");

    // Another CA's certificate: nginx answers 400 to every request, which the run counts.
    let (cert, key) = (n.file("stranger.pem"), n.file("stranger.key"));
    let out = hakaru(&["run", "-q", "-n", "20", "--cacert", &ca, "--cert", &cert, "--key", &key, &url]);
    assert_eq!(out.status_count("400"), 20, "{}{}", out.stdout, out.stderr);
}

#[test]
fn resumption_off_makes_every_handshake_full_and_on_resumes_as_nginx_logs_it() {
    let n = TlsNginx::start();
    let ca = n.file("ca.pem");
    let url = n.url(n.open);
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "-q", "-c", "1", "-n", "100", "--no-keepalive", "--cacert", &ca];
        args.extend_from_slice(extra);
        args.push(&url);
        let out = hakaru(&args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(out.status_count("200"), 100, "{}", out.stdout);
        let phases = out.step()["phases"].clone();
        assert_eq!(phases["tls_handshake"]["count"], 100, "a handshake per request: {phases}");
        phases["tls_resumed"].as_u64().expect("the count of resumed handshakes")
    };
    let reused = |lines: &[String]| lines.iter().filter(|l| l.starts_with("r ")).count() as u64;

    assert_eq!(run(&["--tls-resume", "off"]), 0);
    let lines = n.log("open", 100);
    assert_eq!((lines.len(), reused(&lines)), (100, 0), "nginx agrees: {:?}", &lines[..3]);
    std::fs::write(n.dir.path().join("open.log"), "").unwrap();

    let resumed = run(&[]);
    let lines = n.log("open", 100);
    assert!(resumed > 0, "resumption is on by default");
    assert_eq!(reused(&lines), resumed, "nginx's $ssl_session_reused agrees: {:?}", &lines[..3]);
    assert!(lines.iter().all(|l| l.contains(" TLSv1.3 ")), "{:?}", &lines[..3]);
    std::fs::write(n.dir.path().join("open.log"), "").unwrap();

    // TLS 1.2 resumes too (session tickets or IDs).
    let resumed = run(&["--tls-version", "1.2"]);
    let lines = n.log("open", 100);
    assert!(lines.iter().all(|l| l.contains(" TLSv1.2 ")), "{:?}", &lines[..3]);
    assert!(resumed > 0);
    assert_eq!(reused(&lines), resumed, "{:?}", &lines[..3]);
}

#[test]
fn a_tls_version_the_server_does_not_speak_is_refused_in_one_line_and_sni_names_the_server() {
    let n = TlsNginx::start();
    let ca = n.file("ca.pem");
    let out = hakaru(&["run", "-q", "-n", "10", "--cacert", &ca, "--tls-version", "1.2", &n.url(n.only13)]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    let line = one_line(&out.stderr);
    assert!(line.contains("TLS 1.2") && line.contains("--tls-version"), "{line}");

    let out = hakaru(&["run", "-q", "-n", "10", "--cacert", &ca, "--tls-version", "1.3", &n.url(n.only13)]);
    assert_eq!(out.status_count("200"), 10, "{}", out.stderr);

    // An address in the URL, the name the certificate is for given apart: sent in the handshake and checked.
    let by_address = format!("https://127.0.0.1:{}/", n.open);
    let out = hakaru(&["run", "-q", "-n", "10", "--cacert", &ca, "--sni", "tls.test", &by_address]);
    assert_eq!(out.status_count("200"), 10, "{}", out.stderr);
    let lines = n.log("open", 10);
    assert!(lines.iter().all(|l| l.contains(" tls.test ")), "{:?}", &lines[..3]);
    assert_eq!(out.doc()["settings"]["tls"]["sni"], "tls.test");
}

#[test]
fn the_tls_flags_bad_files_are_refused_in_one_line_naming_the_flag_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    make_pki(dir.path());
    let f = |name: &str| dir.path().join(name).display().to_string();
    std::fs::write(dir.path().join("text.pem"), "not a certificate\n").unwrap();
    std::fs::write(dir.path().join("cut.pem"), "-----BEGIN CERTIFICATE-----\nMIIB\n").unwrap();
    let secret_lines: Vec<String> = ["client.key", "stranger.key"]
        .iter()
        .flat_map(|k| {
            std::fs::read_to_string(dir.path().join(k)).unwrap().lines().map(String::from).collect::<Vec<_>>()
        })
        .filter(|l| !l.starts_with("-----"))
        .collect();
    // Nothing listens there: the files are refused before any connection is tried.
    let url = format!("https://localhost:{}/", free_port());
    let cases: Vec<(Vec<String>, Vec<String>)> = vec![
        (
            vec!["--cacert".into(), f("missing.pem")],
            vec![format!("--cacert {}", f("missing.pem")), "cannot read".into()],
        ),
        (vec!["--cacert".into(), f("text.pem")], vec![format!("--cacert {}", f("text.pem")), "no certificate".into()]),
        (vec!["--cacert".into(), f("cut.pem")], vec![format!("--cacert {}", f("cut.pem")), "-----END".into()]),
        (
            vec!["--cert".into(), f("client.pem"), "--key".into(), f("stranger.key")],
            vec!["the key is not the certificate's".into(), f("stranger.key")],
        ),
        (
            vec!["--cert".into(), f("client.pem"), "--key".into(), f("client.pem")],
            vec![format!("--key {}", f("client.pem")), "no private key".into()],
        ),
        (vec!["--sni".into(), "not a name".into()], vec!["--sni 'not a name'".into()]),
    ];
    for (flags, said) in cases {
        let mut args = vec!["run", "-q", "-n", "1"];
        args.extend(flags.iter().map(String::as_str));
        args.push(&url);
        let out = hakaru(&args);
        assert_eq!(out.code, 2, "{flags:?}: {}", out.stderr);
        let line = one_line(&out.stderr);
        assert!(said.iter().all(|s| line.contains(s.as_str())), "{flags:?}: {line}");
        // Nothing of a key file is quoted.
        assert!(!secret_lines.iter().any(|k| line.contains(k.as_str())) && !line.contains("panicked"), "{line}");
    }
    // A TLS flag with no https:// URL would change nothing.
    let out = hakaru(&["run", "-q", "-n", "1", "--cacert", &f("ca.pem"), "http://127.0.0.1:1/"]);
    assert_eq!(out.code, 2);
    assert!(one_line(&out.stderr).contains("--cacert: no https:// URL"), "{}", out.stderr);
    // --cert without --key, and the reverse.
    let out = hakaru(&["run", "-q", "-n", "1", "--cert", &f("client.pem"), &url]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--key"), "{}", out.stderr);
}
