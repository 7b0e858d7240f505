//! `-x/--proxy` through a real forward proxy (Debian's tinyproxy, started by the test on a free loopback port) to a
//! real nginx: CONNECT tunnels for https:// and HTTP/2, absolute-form requests for plain HTTP/1.1, counted in both
//! servers' logs; the proxy's credentials (its BasicAuth) never shown; `--proxy env` and NO_PROXY.
use crate::common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{free_port, hakaru, hakaru_with, wait_for, wait_listening};

/// A process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// tinyproxy on a free port, logging every request to `dir/tinyproxy.log`; `auth`: its BasicAuth user and password.
fn tinyproxy(dir: &Path, auth: Option<(&str, &str)>) -> (Killed, u16) {
    let port = free_port();
    let d = dir.display();
    let basic = auth.map_or(String::new(), |(u, p)| format!("BasicAuth {u} {p}\n"));
    let conf = format!(
        "Port {port}\nListen 127.0.0.1\nTimeout 60\nLogFile \"{d}/tinyproxy.log\"\nLogLevel Connect\n\
         PidFile \"{d}/tinyproxy.pid\"\nMaxClients 500\nAllow 127.0.0.1\nDisableViaHeader Yes\n{basic}"
    );
    std::fs::write(dir.join("tinyproxy.conf"), conf).unwrap();
    let child = Command::new("tinyproxy")
        .arg("-d")
        .arg("-c")
        .arg(dir.join("tinyproxy.conf"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("tinyproxy is installed (scripts/test.sh installs it)");
    let proxy = Killed(child);
    wait_listening(SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_secs(10));
    (proxy, port)
}

/// The requests tinyproxy logged whose request line starts with `start` (`CONNECT `, `GET http://`).
fn proxied(dir: &Path, start: &str) -> usize {
    let log = std::fs::read_to_string(dir.join("tinyproxy.log")).unwrap_or_default();
    log.lines()
        .filter(|l| {
            l.split_once("): ").is_some_and(|(head, rest)| head.contains("Request (") && rest.starts_with(start))
        })
        .count()
}

/// nginx with a plain and a TLS (self-signed) server, h2 on both, each request logged to access.log.
fn nginx(dir: &Path) -> (Killed, u16, u16) {
    let (plain, tls) = (free_port(), free_port());
    let p = dir.display();
    let conf = common::nginx_conf(
        dir,
        &format!(
            "  log_format short '$server_port $server_protocol $status $http_proxy_authorization';\n  \
             server {{\n    listen 127.0.0.1:{plain};\n    listen 127.0.0.1:{tls} ssl http2;\n    \
             ssl_certificate {p}/cert.pem;\n    ssl_certificate_key {p}/key.pem;\n    \
             location = / {{ access_log {p}/access.log short; default_type text/plain; return 200 \"hello\\n\"; }}\n  }}\n"
        ),
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    common::self_signed_certificate(dir);
    let child = Killed(common::spawn_nginx(dir));
    for port in [plain, tls] {
        wait_listening(SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_secs(10));
    }
    (child, plain, tls)
}

fn access_lines(dir: &Path, n: usize) -> Vec<String> {
    let read = || std::fs::read_to_string(dir.join("access.log")).unwrap_or_default();
    wait_for(Duration::from_secs(30), || read().lines().count() >= n);
    read().lines().map(String::from).collect()
}

#[test]
fn https_goes_through_connect_tunnels_and_plain_http_in_absolute_form_each_counted_by_both_servers() {
    let (ndir, pdir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_nginx, plain, tls) = nginx(ndir.path());
    let (_proxy, port) = tinyproxy(pdir.path(), None);
    let proxy = format!("http://127.0.0.1:{port}");

    // A tunnel per request: 1,000 CONNECTs, 1,000 requests at nginx.
    let url = format!("https://localhost:{tls}/");
    let out = hakaru(&["run", "-q", "-k", "-c", "4", "-n", "1000", "--no-keepalive", "-x", &proxy, &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.status_count("200"), 1000, "{}", out.stdout);
    let lines = access_lines(ndir.path(), 1000);
    assert_eq!(lines.len(), 1000);
    assert!(lines.iter().all(|l| l.starts_with(&format!("{tls} HTTP/1.1 200"))), "{:?}", &lines[..2]);
    // One tunnel more: the TLS check before the load (a handshake, no request).
    wait_for(Duration::from_secs(30), || proxied(pdir.path(), "CONNECT ") >= 1001);
    assert_eq!(proxied(pdir.path(), &format!("CONNECT localhost:{tls} ")), 1001);
    assert_eq!(out.doc()["settings"]["proxy"], proxy.as_str());
    assert!(common::schema_errors(out.doc()).is_empty(), "{:?}", common::schema_errors(out.doc()));

    // Plain HTTP/1.1: the proxy forwards each absolute-form request.
    let url = format!("http://127.0.0.1:{plain}/");
    let out = hakaru(&["run", "-q", "-c", "4", "-n", "1000", "-x", &proxy, &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.status_count("200"), 1000, "{}", out.stdout);
    assert_eq!(access_lines(ndir.path(), 2000).len(), 2000);
    wait_for(Duration::from_secs(30), || proxied(pdir.path(), "GET http://") >= 1000);
    assert_eq!(proxied(pdir.path(), &format!("GET http://127.0.0.1:{plain}/ HTTP/1.1")), 1000);

    // HTTP/2 over TLS through one tunnel per connection.
    let url = format!("https://localhost:{tls}/");
    let out = hakaru(&["run", "-q", "-k", "--http2", "-c", "2", "--streams", "4", "-n", "400", "-x", &proxy, &url]);
    assert_eq!(out.status_count("200"), 400, "{}{}", out.stdout, out.stderr);
    let lines = access_lines(ndir.path(), 2400);
    assert_eq!(lines.iter().filter(|l| l.starts_with(&format!("{tls} HTTP/2.0 200"))).count(), 400);
}

#[test]
fn the_proxys_credentials_pass_and_are_never_shown_and_a_missing_one_is_refused_in_one_line() {
    let (ndir, pdir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_nginx, plain, tls) = nginx(ndir.path());
    let (_proxy, port) = tinyproxy(pdir.path(), Some(("hakaru", "s3cretPW")));
    let https = format!("https://localhost:{tls}/");

    let out = hakaru(&["run", "-q", "-k", "-n", "10", "-x", &format!("http://127.0.0.1:{port}"), &https]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(
        lines[0].contains("407 Proxy Authentication Required") && lines[0].contains("user and password in --proxy"),
        "{}",
        lines[0]
    );

    let with = format!("http://hakaru:s3cretPW@127.0.0.1:{port}");
    let db = tempfile::tempdir().unwrap();
    for url in [https.clone(), format!("http://127.0.0.1:{plain}/")] {
        let out = hakaru_with(&["run", "-k", "-n", "50", "-x", &with, &url], Duration::from_secs(60), |c| {
            c.env("HAKARU_DB", db.path().join("history.db"));
        });
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(out.status_count("200"), 50, "{}", out.stdout);
        let doc = out.doc().to_string();
        for text in [&out.stdout, &out.stderr, &doc] {
            assert!(!text.contains("s3cretPW") && !text.contains("aGFrYXJ1OnMzY3JldFBX"), "{text}");
        }
        assert!(doc.contains("hakaru:***@127.0.0.1"), "the proxy is recorded, its password hidden");
    }
    // nginx never saw the proxy's credentials: they are for the proxy.
    assert!(access_lines(ndir.path(), 100).iter().all(|l| l.ends_with(" -")), "no Proxy-Authorization reached nginx");
    let history = std::fs::read(db.path().join("history.db")).unwrap();
    assert!(!history.windows(8).any(|w| w == b"s3cretPW"), "nor the history");
}

#[test]
fn proxy_env_reads_https_proxy_and_no_proxy_only_when_asked_and_a_closed_proxy_is_refused() {
    let (ndir, pdir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_nginx, _plain, tls) = nginx(ndir.path());
    let (_proxy, port) = tinyproxy(pdir.path(), None);
    let url = format!("https://localhost:{tls}/");
    let env = |no_proxy: &'static str| {
        let proxy = format!("http://127.0.0.1:{port}");
        move |c: &mut Command| {
            c.env("HTTPS_PROXY", &proxy).env("NO_PROXY", no_proxy);
        }
    };
    // Set but not asked for: straight to nginx.
    let out = hakaru_with(&["run", "-q", "-k", "-n", "20", &url], Duration::from_secs(60), env(""));
    assert_eq!(out.status_count("200"), 20, "{}", out.stderr);
    assert_eq!(proxied(pdir.path(), "CONNECT "), 0);
    // Asked for: through the proxy.
    let out =
        hakaru_with(&["run", "-q", "-k", "-n", "20", "-c", "1", "-x", "env", &url], Duration::from_secs(60), env(""));
    assert_eq!(out.status_count("200"), 20, "{}", out.stderr);
    wait_for(Duration::from_secs(30), || proxied(pdir.path(), "CONNECT ") >= 1);
    // NO_PROXY names the host: straight again.
    let before = proxied(pdir.path(), "CONNECT ");
    let out =
        hakaru_with(&["run", "-q", "-k", "-n", "20", "-x", "env", &url], Duration::from_secs(60), env("localhost"));
    assert_eq!(out.status_count("200"), 20, "{}", out.stderr);
    assert_eq!(proxied(pdir.path(), "CONNECT "), before);
    assert!(out.doc()["settings"].get("proxy").is_none());

    // Nothing listens where the proxy should be: bad input, one line, before the load.
    let closed = format!("http://127.0.0.1:{}", free_port());
    let out = hakaru(&["run", "-q", "-k", "-n", "20", "-x", &closed, &url]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("cannot connect to the proxy") && out.stderr.contains("--proxy"), "{}", out.stderr);
    let out = hakaru(&["run", "-q", "-n", "1", "-x", "socks5://127.0.0.1:1080", &url]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--proxy 'socks5://127.0.0.1:1080': only HTTP proxies"), "{}", out.stderr);
}

#[test]
fn a_proxy_that_goes_away_mid_run_is_counted_as_the_proxys_failure_not_the_targets() {
    let (ndir, pdir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_nginx, _plain, tls) = nginx(ndir.path());
    let (mut proxy, port) = tinyproxy(pdir.path(), None);
    let url = format!("https://localhost:{tls}/");
    let proxy_url = format!("http://127.0.0.1:{port}");
    let args = ["run", "-q", "-k", "--no-keepalive", "-c", "2", "--rate", "100", "-n", "300", "-x", &proxy_url, &url];
    let run = std::thread::spawn({
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        move || hakaru(&args.iter().map(String::as_str).collect::<Vec<_>>())
    });
    // A paced run takes 3 s at least: the proxy is stopped once it has carried 30 tunnels.
    wait_for(Duration::from_secs(30), || proxied(pdir.path(), "CONNECT ") >= 30);
    let _ = proxy.0.kill();
    let _ = proxy.0.wait();
    let out = run.join().unwrap();
    let refused = out.error_count("proxy_refused");
    assert!(refused > 0 && out.status_count("200") >= 20, "{}\n{}", out.stdout, out.step()["error_kinds"]);
    let kinds = out.step()["error_kinds"].as_array().unwrap().clone();
    let sample = kinds.iter().find(|k| k["kind"] == "proxy_refused").unwrap()["sample"].as_str().unwrap().to_string();
    assert!(sample.contains(&format!("the proxy {proxy_url}")), "{sample}");
    // A tunnel cut mid-exchange ends as the target's connection would (or as the proxy's, before CONNECT was answered).
    for k in &kinds {
        assert!(
            ["proxy_refused", "proxy_error", "reset", "closed", "tls"].contains(&k["kind"].as_str().unwrap()),
            "{k}"
        );
    }
}
