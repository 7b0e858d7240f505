//! Test harness: the built-in target in-process, nginx on free loopback ports, and the hakaru binary run with its
//! JSON result read back. Everything listens on 127.0.0.1 only and is stopped when the test ends.
#![allow(dead_code)]

pub mod endless;
pub mod grpc;
pub mod hostile;
pub mod peak;
pub mod python;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hakaru::serve::{ServeOptions, ServerHandle};

/// A test that cannot run here says so and returns: `test` is its name, `why` what the machine lacks. The line goes
/// past cargo's capture (straight to stderr, so a green run still shows it) and to the file `HAKARU_SKIPPED` names
/// (scripts/test.sh counts them in the suite's last line). Where `HAKARU_NO_SKIP` is set (`.ci/run` sets it: CI
/// runs as root and installs everything), a skip fails the test, unless `HAKARU_ALLOW_SKIP` lists its name.
pub fn skip(test: &str, why: &str) {
    let line = format!("skipped: {test}: {why}");
    let allowed = std::env::var("HAKARU_ALLOW_SKIP").unwrap_or_default();
    if std::env::var_os("HAKARU_NO_SKIP").is_some() && !allowed.split(',').any(|a| a.trim() == test) {
        panic!("{line} (HAKARU_NO_SKIP: this run allows no skip; HAKARU_ALLOW_SKIP may name it)");
    }
    let _ = writeln!(std::io::stderr(), "{line}");
    if let Some(file) = std::env::var_os("HAKARU_SKIPPED") {
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(file).expect("the skip list opens");
        let _ = writeln!(f, "{line}");
    }
}

/// A test that ran but left out checks a busy machine cannot pass (a rate, a plateau): `why` says what the machine
/// did. Said past cargo's capture and counted in the suite's last line as [`skip`] is, but no failure where no skip
/// is allowed: the machine's load is measured and said, not a missing install.
pub fn unchecked(test: &str, why: &str) {
    let line = format!("unchecked: {test}: {why}");
    let _ = writeln!(std::io::stderr(), "{line}");
    if let Some(file) = std::env::var_os("HAKARU_SKIPPED") {
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(file).expect("the skip list opens");
        let _ = writeln!(f, "{line}");
    }
}

/// A tight upper bound on a time, judged as sweep.rs judges its plateau: `held`, or broken on a machine that was
/// late while `meter` ran (a thread's 2 ms sleep overshot by 20 ms or more), which is said ([`unchecked`]), not
/// failed; broken on a machine that kept time, a failure. `test` names the test, `what` the bound.
pub fn on_time(meter: &StallMeter, test: &str, held: bool, what: &str) {
    if held {
        return;
    }
    let late = meter.worst();
    assert!(late >= Duration::from_millis(20), "{what} (the machine kept time: at worst {late:?} late)");
    unchecked(test, &format!("{what}: the machine was {late:?} late, the bound not checked"));
}

/// Caddy run with `config` (its JSON), written as `dir`/caddy.json; its storage, autosaved config and anything
/// else it writes kept under `dir`, its stderr (where it says what it serves) in `dir`/caddy.err.
pub fn spawn_caddy(dir: &Path, config: &serde_json::Value) -> Child {
    std::fs::write(dir.join("caddy.json"), config.to_string()).unwrap();
    Command::new("caddy")
        .arg("run")
        .arg("--config")
        .arg(dir.join("caddy.json"))
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("caddy.err")).unwrap())
        .spawn()
        .expect("caddy starts (Debian's caddy package; scripts/test.sh installs it)")
}

/// The built-in target on a free port.
pub fn target() -> ServerHandle {
    target_with(ServeOptions { listen: "127.0.0.1:0".parse().unwrap(), threads: 1, ..ServeOptions::default() })
}

pub fn target_with(opts: ServeOptions) -> ServerHandle {
    hakaru::serve::start(opts).expect("the built-in target starts")
}

/// Output of one `hakaru` invocation.
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// The result document, when `--json` was written.
    pub json: Option<serde_json::Value>,
}

impl Output {
    pub fn doc(&self) -> &serde_json::Value {
        self.json.as_ref().unwrap_or_else(|| panic!("no JSON result; stderr: {}", self.stderr))
    }

    /// The first step of the result document.
    pub fn step(&self) -> &serde_json::Value {
        &self.doc()["steps"][0]
    }

    pub fn status_count(&self, code: &str) -> u64 {
        self.step()["status"][code].as_u64().unwrap_or(0)
    }

    pub fn error_count(&self, kind: &str) -> u64 {
        self.step()["error_kinds"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["kind"] == kind)
            .map_or(0, |e| e["count"].as_u64().unwrap())
    }
}

/// Each line of `cases` (a command line, and what its refusal says) is refused before any load: exit 2, one line on
/// stderr holding the text.
pub fn refused_in_one_line(cases: &[(&[&str], &str)]) {
    for (args, says) in cases {
        let out = hakaru(args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert!(lines.len() == 1 && lines[0].contains(says), "{args:?}: {}", out.stderr);
    }
}

/// Runs `hakaru` with `args`, adding `--json` to a temporary file for `run` (unless `args` name one); bounded by
/// a 60 s watchdog.
pub fn hakaru(args: &[&str]) -> Output {
    hakaru_with(args, Duration::from_secs(60), |_| {})
}

/// [`hakaru`] with the command adjusted by `configure` (environment, resource limits) and killed after `limit`
/// (its exit code is then -1).
pub fn hakaru_with(args: &[&str], limit: Duration, configure: impl FnOnce(&mut Command)) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hakaru"));
    // Words after `--` are a script's: the result file's flag goes before them.
    let split = args.iter().position(|a| *a == "--").unwrap_or(args.len());
    cmd.args(&args[..split]);
    if matches!(args.first(), Some(&"run" | &"llm" | &"kv")) && !args.contains(&"--json") {
        cmd.arg("--json").arg(&json);
    }
    cmd.args(&args[split..]);
    // Never the real history in the home directory: a database of its own for every run, gone with the test.
    cmd.env("HAKARU_DB", dir.path().join("history.db"));
    configure(&mut cmd);
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("hakaru starts");
    let out = wait_with_deadline(child, limit);
    let json = std::fs::read_to_string(&json).ok().filter(|s| !s.is_empty()).map(|s| serde_json::from_str(&s).unwrap());
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into(),
        stderr: String::from_utf8_lossy(&out.stderr).into(),
        json,
    }
}

fn wait_with_deadline(child: Child, limit: Duration) -> std::process::Output {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        if rx.recv_timeout(limit).is_err() {
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    });
    let out = child.wait_with_output().expect("hakaru runs");
    let _ = tx.send(());
    out
}

/// A free loopback port (the small race between closing and reuse is acceptable in tests).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Whether something accepts connections at `addr`. A connection to itself is not a listener (free_port's ports are
/// of the ephemeral range, where the kernel may give the connecting socket the very port it connects to).
pub fn is_listening(addr: SocketAddr) -> bool {
    TcpStream::connect_timeout(&addr, Duration::from_millis(200))
        .is_ok_and(|s| !hakaru::base::target::connected_to_itself(s.local_addr(), s.peer_addr()))
}

/// Waits until something accepts connections at `addr`.
pub fn wait_listening(addr: SocketAddr, limit: Duration) {
    let start = Instant::now();
    while !is_listening(addr) {
        assert!(start.elapsed() < limit, "nothing listens at {addr} after {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until the HTTP/2 server (prior knowledge) at `addr` answers a preface with its SETTINGS: listening is not
/// yet serving (nginx listens before its event loop runs, and a busy machine once kept it from answering within
/// hakaru's own 5 s check).
pub fn wait_h2c(addr: SocketAddr, limit: Duration) {
    let start = Instant::now();
    let answers = || -> bool {
        let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else { return false };
        let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
        // The preface and an empty SETTINGS frame; the answer's first frame header names SETTINGS (type 4).
        let hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";
        let mut head = [0u8; 9];
        s.write_all(hello).is_ok() && s.read_exact(&mut head).is_ok() && head[3] == 4
    };
    while !answers() {
        assert!(start.elapsed() < limit, "no HTTP/2 SETTINGS from {addr} after {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until `ready` says so, polling, for at most `limit` (then the test fails saying how long it waited).
pub fn wait_for(limit: Duration, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < limit, "still not ready after {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until the built-in target at `addr` has answered at least `n` requests (its /status polls are not
/// counted), for at most `limit`: the event a test acts on, instead of a fixed sleep that a busy machine outlasts.
pub fn wait_served(addr: SocketAddr, n: u64, limit: Duration) {
    let start = Instant::now();
    loop {
        // Not listening yet (a target a study starts) is waited for too.
        let served = try_target_status(addr).and_then(|s| s["n_requests"].as_u64()).unwrap_or(0);
        if served >= n {
            return;
        }
        assert!(start.elapsed() < limit, "the target answered {served} requests of {n} after {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A real nginx from Debian's package, with the config in tests/nginx/, on free loopback ports.
pub struct Nginx {
    child: Child,
    pub port: u16,
    pub tls_port: u16,
    /// h2c (prior knowledge), where the configuration listens with `@H2_PORT@`.
    pub h2_port: u16,
    pub dir: tempfile::TempDir,
}

impl Nginx {
    pub fn start() -> Nginx {
        Nginx::start_with("nginx.conf.in")
    }

    /// An nginx with another config of tests/nginx/ (the same placeholders).
    pub fn start_with(config: &str) -> Nginx {
        let text =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/nginx").join(config)).unwrap();
        Nginx::start_text(&text)
    }

    /// An nginx with the configuration `text` (the same placeholders as the files of tests/nginx/). free_port's
    /// ports are free when picked, not when nginx binds them: another test may take one in between, and nginx
    /// then exits at once; it is started again on new ports (a few times), never waited for in vain.
    pub fn start_text(text: &str) -> Nginx {
        for _ in 0..4 {
            if let Some(n) = Nginx::try_start(text) {
                return n;
            }
        }
        panic!("nginx exited at its start four times (see its error.log): run scripts/test.sh, which installs it");
    }

    fn try_start(text: &str) -> Option<Nginx> {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path();
        let (port, tls_port, h2_port) = (free_port(), free_port(), free_port());
        let conf = text
            .replace("@PREFIX@", prefix.to_str().unwrap())
            .replace("@TLS_PORT@", &tls_port.to_string())
            .replace("@H2_PORT@", &h2_port.to_string())
            .replace("@PORT@", &port.to_string());
        std::fs::write(prefix.join("nginx.conf"), conf).unwrap();
        std::fs::create_dir_all(prefix.join("www/static")).unwrap();
        std::fs::create_dir_all(prefix.join("www/gz")).unwrap();
        std::fs::write(prefix.join("www/static/file.txt"), "static file\n").unwrap();
        std::fs::write(prefix.join("www/static/200kb.bin"), vec![b'x'; 200_000]).unwrap();
        std::fs::write(prefix.join("www/gz/big.txt"), "compressible text\n".repeat(5000)).unwrap();
        self_signed_certificate(prefix);
        let child = spawn_nginx(prefix);
        let speaks_h2c =
            std::fs::read_to_string(prefix.join("nginx.conf")).unwrap().contains(&format!(":{h2_port} http2"));
        let mut n = Nginx { child, port, tls_port, h2_port, dir };
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let start = Instant::now();
        while !is_listening(addr) {
            if n.child.try_wait().ok().flatten().is_some() {
                return None;
            }
            assert!(start.elapsed() < Duration::from_secs(60), "nothing listens at {addr} after 60 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        if speaks_h2c {
            wait_h2c(SocketAddr::from(([127, 0, 0, 1], h2_port)), Duration::from_secs(60));
        }
        Some(n)
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn tls_url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.tls_port)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Debian's nginx binary (in /usr/sbin, which a user's PATH may lack).
pub fn nginx_path() -> PathBuf {
    which("nginx").expect("nginx is not installed: run the README's test command (scripts/test.sh), which installs it")
}

/// The configuration of a test's own nginx: one worker in the foreground, its files under `dir`, no access log
/// unless a server names one; `http` holds `inside` (log formats, servers).
pub fn nginx_conf(dir: &Path, inside: &str) -> String {
    let p = dir.display();
    format!(
        "worker_processes 1;\ndaemon off;\nmaster_process off;\npid {p}/nginx.pid;\nerror_log {p}/error.log warn;\n\
         events {{ worker_connections 4096; }}\nhttp {{\n  access_log off;\n  client_body_temp_path {p}/body;\n  \
         proxy_temp_path {p}/proxy;\n  fastcgi_temp_path {p}/fcgi;\n  uwsgi_temp_path {p}/uwsgi;\n  \
         scgi_temp_path {p}/scgi;\n  keepalive_requests 1000000;\n{inside}}}\n"
    )
}

/// nginx with `prefix` as its prefix and `prefix/nginx.conf` as its configuration (which says `daemon off`).
pub fn spawn_nginx(prefix: &Path) -> Child {
    Command::new(nginx_path())
        .arg("-p")
        .arg(prefix)
        .arg("-c")
        .arg(prefix.join("nginx.conf"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nginx starts")
}

/// A self-signed certificate for `localhost` in `dir` (cert.pem, key.pem), made by openssl.
pub fn self_signed_certificate(dir: &Path) {
    self_signed_certificate_with(dir, &[]);
}

/// [`self_signed_certificate`] with more of openssl's `req` arguments (`-addext subjectAltName=...`).
pub fn self_signed_certificate_with(dir: &Path, extra: &[&str]) {
    let openssl = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost"])
        .args(extra)
        .arg("-keyout")
        .arg(dir.join("key.pem"))
        .arg("-out")
        .arg(dir.join("cert.pem"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("openssl makes a self-signed certificate");
    assert!(openssl.success());
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).chain(["/usr/sbin".into(), "/sbin".into()]).map(|d| d.join(name)).find(|p| p.is_file())
}

/// The built-in target's counters from /status: `[[0, start, elapsed], {counters}]`.
pub fn target_status(addr: SocketAddr) -> serde_json::Value {
    try_target_status(addr).unwrap_or_else(|| panic!("no status from the target at {addr}"))
}

/// [`target_status`], or `None` when the target does not answer (not listening yet, gone).
pub fn try_target_status(addr: SocketAddr) -> Option<serde_json::Value> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    s.write_all(b"GET /status HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let body = text.split("\r\n\r\n").nth(1)?;
    Some(serde_json::from_str::<serde_json::Value>(body).ok()?[1].clone())
}

/// A key-value server process on loopback (redis-server, memcached from Debian; scripts/test.sh installs them),
/// killed when dropped.
pub struct Server {
    pub child: Child,
    pub port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn redis() -> Server {
    redis_with(&[])
}

pub fn redis_with(extra: &[&str]) -> Server {
    let port = free_port();
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .args(extra)
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server is installed (scripts/test.sh installs it)");
    wait_listening(format!("127.0.0.1:{port}").parse().unwrap(), Duration::from_secs(60));
    Server { child, port }
}

pub fn memcached() -> Server {
    let port = free_port();
    let child = Command::new("memcached")
        .args(["-l", "127.0.0.1", "-p", &port.to_string(), "-U", "0", "-u", "root"])
        .stdout(Stdio::null())
        .spawn()
        .expect("memcached is installed (scripts/test.sh installs it)");
    wait_listening(format!("127.0.0.1:{port}").parse().unwrap(), Duration::from_secs(60));
    Server { child, port }
}

/// Sends one raw command and returns what came back (one read is enough for these short replies).
pub fn ask(port: u16, command: &[u8]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(command).unwrap();
    let mut buf = [0u8; 4096];
    let n = s.read(&mut buf).unwrap();
    String::from_utf8_lossy(&buf[..n]).to_string()
}

/// Every way `doc` breaks `schema/result.schema.json`, one line each (empty when it conforms).
pub fn schema_errors(doc: &serde_json::Value) -> Vec<String> {
    schema_errors_in("result.schema.json", doc)
}

/// Every way `doc` breaks the schema `schema/NAME`, one line each (empty when it conforms).
pub fn schema_errors_in(name: &str, doc: &serde_json::Value) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema").join(name);
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    validator.iter_errors(doc).map(|e| format!("at '{}': {e}", e.instance_path())).collect()
}

/// Runs `hakaru kv -q` with a JSON output and returns (exit code, stdout and stderr, document; null when none).
pub fn kv_json(args: &[&str]) -> (i32, String, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("kv.json");
    let mut all = vec!["kv", "-q", "--json", json.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = hakaru_with(&all, Duration::from_secs(120), |_| {});
    let doc =
        std::fs::read_to_string(&json).map(|t| serde_json::from_str(&t).unwrap()).unwrap_or(serde_json::Value::Null);
    (out.code, format!("{}{}", out.stdout, out.stderr), doc)
}

/// A short client sweep (1 and 2 clients, 300 ms a step, no pause) of `url`, with `extra` flags.
pub fn quick_sweep(url: &str, extra: &[&str]) -> Output {
    let mut args = vec!["sweep", "-q", "--clients", "1,2", "-d", "300ms", "--interval", "0s"];
    args.extend_from_slice(extra);
    args.push(url);
    hakaru(&args)
}

/// One `hakaru serve` process (the binary, not the in-process target) on a free loopback port, killed when
/// dropped: a server a test can freeze with SIGSTOP without freezing itself.
pub struct Served {
    child: Child,
    pub addr: String,
}

impl Served {
    pub fn start() -> Served {
        Served::start_by(Command::new(env!("CARGO_BIN_EXE_hakaru")))
    }

    /// `hakaru serve` run by `launcher`: the binary itself, or a wrapper given it as its first arguments (`taskset
    /// -c 0 HAKARU`), to which `serve` and its flags are added.
    pub fn start_by(mut launcher: Command) -> Served {
        use std::io::BufRead as _;
        let mut child = launcher
            .args(["serve", "--listen", "127.0.0.1:0", "--threads", "1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("hakaru serve starts");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let addr = line.trim().rsplit("http://").next().unwrap().to_string();
        assert!(addr.starts_with("127.0.0.1:"), "unexpected first line: {line}");
        Served { child, addr }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn socket_addr(&self) -> SocketAddr {
        self.addr.parse().unwrap()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        // A stopped process must be continued to die of SIGKILL promptly on every kernel: continue it first.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGCONT) };
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An nginx that logs every request (tests/nginx/script.conf.in): method, target, the headers scripts set, body
/// length; what the script and data-file tests compare.
pub struct LoggedNginx {
    pub nginx: Nginx,
    pub log: PathBuf,
}

impl LoggedNginx {
    pub fn start() -> LoggedNginx {
        let nginx = Nginx::start_with("script.conf.in");
        let log = nginx.dir.path().join("access.log");
        LoggedNginx { nginx, log }
    }

    pub fn url(&self, path: &str) -> String {
        self.nginx.url(path)
    }

    /// The lines logged so far.
    pub fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log).unwrap_or_default().lines().map(String::from).collect()
    }

    /// The log once it holds `n` lines (nginx writes a line after answering, so it may come after the client is
    /// done).
    pub fn wait_lines(&self, n: usize) -> Vec<String> {
        wait_for(Duration::from_secs(30), || self.lines().len() >= n);
        self.lines()
    }

    /// Empties the log.
    pub fn clear(&self) {
        std::fs::write(&self.log, "").unwrap();
    }
}

/// A data file of `n` rows `id,name`: `0,n0`, `1,n1`, ...
pub fn id_name_rows(n: usize) -> String {
    std::iter::once("id,name\n".to_string()).chain((0..n).map(|i| format!("{i},n{i}\n"))).collect()
}

/// Writes `text` to `name` in `dir`; returns the path as text, for a command line.
pub fn write_in(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// Runs the hakaru binary with `args`, stdout and stderr to files; returns whether it exited 0 and its peak RSS
/// in KiB (see [`peak::measured`]).
pub fn run_hakaru_measuring_rss(args: &[&std::ffi::OsStr], stdout: &Path, stderr: &Path) -> (bool, u64) {
    let (code, kib) = hakaru_peak_rss(args, stdout, stderr);
    (code == 0, kib)
}

/// [`run_hakaru_measuring_rss`] giving the exit code (-1 when a signal ended it); killed after 5 minutes, so a bound
/// that breaks fails the test instead of holding it.
// The child is reaped by waitpid (`peak::reap`), which std's Child does not know.
#[allow(clippy::zombie_processes)]
pub fn hakaru_peak_rss(args: &[&std::ffi::OsStr], stdout: &Path, stderr: &Path) -> (i32, u64) {
    let peak = stdout.with_extension("peak.kib");
    let child = peak::measured(&peak)
        .args(args)
        // Never the real history: a database beside the output files.
        .env("HAKARU_DB", stdout.with_extension("history.db"))
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(stdout).unwrap())
        .stderr(std::fs::File::create(stderr).unwrap())
        .spawn()
        .unwrap();
    let (code, bytes) = peak::reap(child.id() as libc::pid_t, Duration::from_secs(300), &peak);
    (code, bytes / 1024)
}

/// How late the machine wakes a sleeping thread while a test runs: a thread that sleeps 2 ms over and over and
/// keeps the worst overshoot. A test whose figures depend on the machine keeping time (a rate, a p99 near an SLO)
/// asserts its tight bounds only when this stayed small, and says so when it did not: the load is measured, not
/// assumed.
pub struct StallMeter {
    worst_us: std::sync::Arc<std::sync::atomic::AtomicU64>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl StallMeter {
    pub fn start() -> StallMeter {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        let worst_us = std::sync::Arc::new(AtomicU64::new(0));
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let (w, s) = (worst_us.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let nap = Duration::from_millis(2);
            while !s.load(Ordering::Relaxed) {
                let at = Instant::now();
                std::thread::sleep(nap);
                let late = at.elapsed().saturating_sub(nap).as_micros() as u64;
                w.fetch_max(late, Ordering::Relaxed);
            }
        });
        StallMeter { worst_us, stop, thread: Some(thread) }
    }

    /// The worst lateness seen so far.
    pub fn worst(&self) -> Duration {
        Duration::from_micros(self.worst_us.load(std::sync::atomic::Ordering::Relaxed))
    }
}

impl Drop for StallMeter {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
