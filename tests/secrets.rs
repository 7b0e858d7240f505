//! No secret reaches any output: a password in a URL, secret query parameters (built-in and `--redact-param`),
//! secret headers (built-in and `--redact-header`) and a probe's password are planted in a run, local agents and a
//! study, and every output, file, history database and process command line is searched for them (the trust
//! issue's item 7). Files hakaru creates are the user's alone.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{hakaru_with, target};

/// Every secret planted carries this mark, so one search finds them all.
const MARK: &str = "S3CRET";

/// Every file under `dir` (the history's WAL included) holding the mark.
fn files_holding_the_mark(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in walk(dir) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        if bytes.windows(MARK.len()).any(|w| w == MARK.as_bytes()) {
            found.push(entry.display().to_string());
        }
    }
    found
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out
}

/// The command lines of every process whose command line holds `needle` (as `ps` shows them).
fn command_lines_with(needle: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(raw) = std::fs::read(e.path().join("cmdline")) else { continue };
        let line = String::from_utf8_lossy(&raw).replace('\0', " ");
        if line.contains(needle) {
            lines.push(line);
        }
    }
    lines
}

/// The command lines holding `needle` and `also`, once there are `count` of them (waited for, 30 s at most).
fn wait_for_command_lines(needle: &str, also: &str, count: usize) -> Vec<String> {
    let start = Instant::now();
    loop {
        let mut seen = command_lines_with(needle);
        seen.retain(|l| l.contains(also));
        if seen.len() >= count || start.elapsed() > Duration::from_secs(30) {
            return seen;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `show last`, `export last` and `history` of the database `db` succeed and print none of `words`.
fn history_shows_none_of(db: &Path, words: &[&str]) {
    for args in [vec!["show", "last"], vec!["export", "last"], vec!["history"]] {
        let mut all = args.clone();
        all.extend(["--db", db.to_str().unwrap()]);
        let o = hakaru_with(&all, Duration::from_secs(30), |_| {});
        assert_eq!(o.code, 0, "{args:?}: {}", o.stderr);
        assert!(words.iter().all(|w| !o.stdout.contains(w)), "{args:?}: {}", o.stdout);
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_run_writes_and_prints_no_secret_and_its_files_are_the_users_alone() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history/h.db");
    let (json, csv) = (dir.path().join("r.json"), dir.path().join("r.csv"));
    let url = format!("http://user:{MARK}-pw@{}/?q=1&token={MARK}-token&mysig={MARK}-sig", t.addr());
    let probe = format!("http://u:{MARK}-probe@{}/status#/requests", t.addr());
    let out = hakaru_with(
        &[
            "run",
            "-n",
            "20",
            "-c",
            "1",
            "--redact-param",
            "mysig",
            "--redact-header",
            "X-Custom",
            "-H",
            &format!("X-Auth-Token: {MARK}-a"),
            "-H",
            &format!("X-Custom: {MARK}-custom"),
            "-H",
            &format!("Cookie: sid={MARK}-cookie"),
            "--probe",
            &probe,
            "--db",
            db.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
            &url,
        ],
        Duration::from_secs(60),
        |_| {},
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(!out.stdout.contains(MARK) && !out.stderr.contains(MARK), "{}{}", out.stdout, out.stderr);
    // The report and the history's own commands read what was kept: still nothing.
    let report = dir.path().join("report.html");
    let r = hakaru_with(
        &["report", json.to_str().unwrap(), "-o", report.to_str().unwrap()],
        Duration::from_secs(60),
        |_| {},
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    history_shows_none_of(&db, &[MARK]);
    assert_eq!(files_holding_the_mark(dir.path()), Vec::<String>::new());
    // What the run created is the user's alone; the report, made to be shared and holding no secret, takes the
    // umask (a web server answered 403 to a 0600 one).
    assert_eq!((mode(&json), mode(&csv), mode(&db)), (0o600, 0o600, 0o600));
    // SAFETY: umask only sets and returns this process's mask; set back at once.
    let umask = unsafe {
        let m = libc::umask(0o022);
        libc::umask(m);
        m
    };
    assert_eq!(mode(&report), 0o666 & !(umask as u32), "the report follows the umask");
    assert_eq!(mode(db.parent().unwrap()), 0o700);
}

#[test]
fn an_error_quoting_a_url_hides_its_password_and_token_in_the_failure_file_too() {
    let dir = tempfile::tempdir().unwrap();
    let failure = dir.path().join("failed");
    for url in [
        format!("http://user:{MARK}@127.0.0.1:99999/?token={MARK}"),
        format!("htp://user:{MARK}@h/"),
        format!("http://user:{MARK}@/x"),
    ] {
        let out = hakaru_with(&["run", "-n", "1", &url], Duration::from_secs(30), |c| {
            c.env("HAKARU_FAILURE_FILE", &failure);
        });
        assert_eq!(out.code, 2, "{url}: {}", out.stderr);
        assert!(!out.stderr.contains(MARK), "{}", out.stderr);
        assert!(out.stderr.contains("user:***@"), "{}", out.stderr);
        assert!(!std::fs::read_to_string(&failure).unwrap().contains(MARK));
    }
}

#[test]
fn local_agents_get_secrets_through_their_environment_not_their_command_line() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://user:{MARK}-pw@{}/?delay=1ms&token={MARK}-t", t.addr());
    let json = dir.path().join("merged.json");
    let child = Command::new(env!("CARGO_BIN_EXE_hakaru"))
        .args(["run", "-q", "--agents", "2", "-c", "2", "-d", "3s", "--no-history", "--json"])
        .arg(&json)
        .args(["-H", &format!("Authorization: Bearer {MARK}-bearer"), &url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // While the agents run, their command lines (what `ps` shows) hold no secret.
    // The agents of this run: their documents go to the run's own directory, named after its pid.
    let seen = wait_for_command_lines(&format!("hakaru-agents-{}-", child.id()), "--segment", 2);
    assert_eq!(seen.len(), 2, "both agents seen running: {seen:?}");
    for line in &seen {
        assert!(!line.contains(MARK), "{line}");
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The agents ran the plan: the URL, held only in their environment, reached them.
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(doc["steps"][0]["ok"].as_u64().unwrap() > 0, "{doc}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains(MARK));
    assert_eq!(files_holding_the_mark(dir.path()), Vec::<String>::new());
}

#[test]
fn a_study_keeps_secrets_out_of_its_files_output_and_case_command_lines() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    std::fs::write(
        &file,
        format!(
            r#"
name = "secret"
[[target]]
name = "a"
url = "http://user:{MARK}-pw@{addr}/?delay=1ms&token={MARK}-t"
headers = ["X-Api-Key: {MARK}-key"]
[[workload]]
name = "w"
[load]
connections = 1
duration = "2s"
"#,
            addr = t.addr()
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let dry = hakaru_with(&["study", file.to_str().unwrap(), "--dry-run"], Duration::from_secs(30), |_| {});
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(!dry.stdout.contains(MARK), "{}", dry.stdout);
    let child = Command::new(env!("CARGO_BIN_EXE_hakaru"))
        .args(["study", file.to_str().unwrap(), "-o", out_dir.to_str().unwrap()])
        .env("HAKARU_DB", dir.path().join("h.db"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let seen = wait_for_command_lines("cases/r1-a", "run", 1);
    assert!(!seen.is_empty(), "the case was seen running");
    assert!(seen.iter().all(|l| !l.contains(MARK)), "{seen:?}");
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stdout).contains(MARK));
    // Everything the study wrote (the study file is the user's own, and holds them).
    let mut written = files_holding_the_mark(&out_dir);
    written.retain(|f| !f.ends_with("s.toml"));
    assert_eq!(written, Vec::<String>::new());
    let db = std::fs::read(dir.path().join("h.db")).unwrap_or_default();
    assert!(!db.windows(MARK.len()).any(|w| w == MARK.as_bytes()));
}

/// A script whose `init(args)` fails unless it gets two arguments, both holding the mark: a run that succeeds
/// had them.
fn script_wanting_two_marked_args(dir: &Path) -> String {
    let path = dir.join("args.lua");
    std::fs::write(
        &path,
        format!(
            "function init(args)\n  if #args ~= 2 or not args[2]:find('{MARK}') then error('want two args, got ' .. #args) end\n\
             end\n"
        ),
    )
    .unwrap();
    path.display().to_string()
}

#[test]
fn a_scripts_arguments_and_a_secret_label_reach_no_document_history_or_export() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let json = dir.path().join("r.json");
    let script = script_wanting_two_marked_args(dir.path());
    let url = format!("http://{}/", t.addr());
    let out = hakaru_with(
        &[
            "run",
            "-n",
            "20",
            "-c",
            "1",
            "-s",
            &script,
            "--label",
            &format!("token={MARK}-label"),
            "--label",
            &format!("note=http://u:{MARK}@h/"),
            "--label",
            "branch=main",
            "--db",
            db.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            &url,
            "--",
            "user1",
            &format!("{MARK}-password"),
        ],
        Duration::from_secs(60),
        |_| {},
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(!out.stdout.contains(MARK) && !out.stderr.contains(MARK), "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("--label token=...: it names or holds a secret"), "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let line = doc["provenance"]["command_line"].as_array().unwrap();
    let tail: Vec<&str> = line[line.len() - 3..].iter().map(|w| w.as_str().unwrap()).collect();
    assert_eq!(tail, ["--", "<redacted>", "<redacted>"], "{line:?}");
    // One rule for labels: a secret one is in no document, as --prometheus-rw leaves it out; the others stay.
    assert_eq!(doc["settings"]["labels"], serde_json::json!({"branch": "main"}));
    history_shows_none_of(&db, &[MARK, "user1"]);
    let listed = hakaru_with(
        &["history", "--label", "branch=main", "--db", db.to_str().unwrap()],
        Duration::from_secs(30),
        |_| {},
    );
    assert!(listed.stdout.contains("branch=main"), "{}", listed.stdout);
    let mut written = files_holding_the_mark(dir.path());
    written.retain(|f| !f.ends_with("args.lua"));
    assert_eq!(written, Vec::<String>::new());
}

#[test]
fn local_agents_get_a_secret_url_and_a_scripts_arguments_together_never_on_their_command_lines() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://{}/?delay=1ms&token={MARK}-t", t.addr());
    let json = dir.path().join("merged.json");
    let script = script_wanting_two_marked_args(dir.path());
    let child = Command::new(env!("CARGO_BIN_EXE_hakaru"))
        .args(["run", "-q", "--agents", "2", "-c", "2", "-d", "3s", "--no-history", "--json"])
        .arg(&json)
        .args(["-s", &script, &url, "--", "user1", &format!("{MARK}-password")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let seen = wait_for_command_lines(&format!("hakaru-agents-{}-", child.id()), "--segment", 2);
    assert_eq!(seen.len(), 2, "both agents seen running: {seen:?}");
    for line in &seen {
        assert!(!line.contains(MARK) && !line.contains("user1"), "{line}");
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Both reached the agents: the URL (the run has answers) and the arguments (init() did not fail).
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(doc["steps"][0]["ok"].as_u64().unwrap() > 0, "{doc}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains(MARK));
    let mut written = files_holding_the_mark(dir.path());
    written.retain(|f| !f.ends_with("args.lua"));
    assert_eq!(written, Vec::<String>::new());
}

#[test]
fn a_token_a_script_puts_in_its_requests_is_hidden_when_the_server_echoes_it() {
    use std::io::{BufRead, Write};
    // A server that answers each request with a line echoing its Authorization header: no HTTP, so the error's
    // sample is the answer's start.
    let server = common::hostile::Hostile::start(|s| {
        let mut reader = std::io::BufReader::new(s.try_clone().unwrap());
        let mut s = s;
        let mut token = String::new();
        let mut line = String::new();
        while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
            if let Some(v) = line.strip_prefix("Authorization: Bearer ") {
                token = v.trim().to_string();
            }
            if line == "\r\n" {
                let _ = s.write_all(format!("NO {token}\r\n\r\n").as_bytes());
                return;
            }
            line.clear();
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("login.lua");
    // Made by the script, never given on the command line.
    std::fs::write(
        &script,
        format!(
            "request = function() return wrk.format('GET', '/', {{['Authorization'] = 'Bearer ' .. '{MARK}' .. \
             '-made-by-lua'}}) end\n"
        ),
    )
    .unwrap();
    let json = dir.path().join("out.json");
    let url = server.url("http");
    let args = ["run", "-s", script.to_str().unwrap(), "-n", "3", "-c", "1", &url, "--json", json.to_str().unwrap()];
    let out = hakaru_with(&args, Duration::from_secs(60), |_| {});
    let doc = std::fs::read_to_string(&json).unwrap();
    assert!(doc.contains("<redacted>"), "the echo is in the sample, hidden: {doc}");
    for (what, text) in [("stdout", &out.stdout), ("stderr", &out.stderr), ("document", &doc)] {
        assert!(!text.contains(MARK), "{what} holds the script's token: {text}");
    }
}
