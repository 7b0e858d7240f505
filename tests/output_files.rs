//! Output files (`--json`, `--csv`, `-o`) never replace what their path points to: links are written through,
//! devices and FIFOs in place, `-` and `/dev/stdout` go to standard output, regular files are replaced
//! atomically; two outputs on one file are refused, and a run that ends early leaves no file behind.

use crate::common;

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{free_port, target, target_status};

/// Exit code, stdout and stderr of one hakaru run in `dir`, killed after 60 s.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs hakaru in `dir` with exactly `args` (no `--json` added, unlike `common::hakaru`).
fn hakaru_in(dir: &Path, args: &[&str]) -> Ran {
    // The history goes to a folder of its own, so `dir` holds only the outputs the tests look for.
    let history = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_hakaru"))
        .args(args)
        .env("HAKARU_DB", history.path().join("history.db"))
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("hakaru starts");
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if rx.recv_timeout(Duration::from_secs(60)).is_err() {
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    });
    let out = child.wait_with_output().unwrap();
    let _ = tx.send(());
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into(),
        stderr: String::from_utf8_lossy(&out.stderr).into(),
    }
}

/// The files in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

fn is_result_document(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| v["steps"][0]["requests"] == 5)
}

#[test]
fn a_symlink_is_written_through_to_its_target() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("real.json"), "old").unwrap();
    std::os::unix::fs::symlink("real.json", dir.path().join("link.json")).unwrap();
    // A dangling link: its target is created.
    std::os::unix::fs::symlink("made.csv", dir.path().join("link.csv")).unwrap();
    let r = hakaru_in(dir.path(), &["run", "-q", "-n", "5", "--json", "link.json", "--csv", "link.csv", &url]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let link = std::fs::symlink_metadata(dir.path().join("link.json")).unwrap();
    assert!(link.file_type().is_symlink(), "the link was replaced by a file");
    assert!(is_result_document(&std::fs::read_to_string(dir.path().join("real.json")).unwrap()));
    assert!(std::fs::symlink_metadata(dir.path().join("link.csv")).unwrap().file_type().is_symlink());
    assert!(std::fs::read_to_string(dir.path().join("made.csv")).unwrap().lines().count() >= 2);
    assert_eq!(listing(dir.path()), ["link.csv", "link.json", "made.csv", "real.json"], "no temporary file left");
}

#[test]
fn a_symlink_to_a_device_writes_the_device_in_place() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let dir = tempfile::tempdir().unwrap();
    // A link to /dev/null stands in for /dev/null itself, which a test must never risk replacing.
    let null = dir.path().join("null");
    std::os::unix::fs::symlink("/dev/null", &null).unwrap();
    let r = hakaru_in(dir.path(), &["run", "-q", "-n", "5", "--json", "null", &url]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(std::fs::symlink_metadata(&null).unwrap().file_type().is_symlink(), "the link was renamed over");
    assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device());
    assert_eq!(listing(dir.path()), ["null"], "no temporary file left");
}

#[test]
fn a_fifo_is_written_in_place() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (tx, rx) = std::sync::mpsc::channel();
    let reader_path = fifo.clone();
    std::thread::spawn(move || {
        // Blocks until hakaru opens the FIFO to write the result; a reader that got EOF early reads again.
        let mut text = String::new();
        for _ in 0..3 {
            text = std::fs::read_to_string(&reader_path).unwrap_or_default();
            if !text.is_empty() {
                break;
            }
        }
        let _ = tx.send(text);
    });
    let r = hakaru_in(dir.path(), &["run", "-q", "-n", "5", "--csv", "fifo", &url]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO was replaced");
    let text = rx.recv_timeout(Duration::from_secs(10)).expect("the CSV arrives through the FIFO");
    assert!(text.lines().count() >= 2, "{text}");
    assert_eq!(listing(dir.path()), ["fifo"]);
}

#[test]
fn dash_and_dev_fd_1_write_to_standard_output() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let dir = tempfile::tempdir().unwrap();
    for spelling in ["-", "/dev/fd/1"] {
        let r = hakaru_in(dir.path(), &["run", "-q", "-n", "5", "--json", spelling, &url]);
        assert_eq!(r.code, 0, "{spelling}: {}", r.stderr);
        // Standard output holds the document alone; the summary goes to stderr.
        assert!(is_result_document(r.stdout.trim_end()), "{spelling}: {}", r.stdout);
        assert!(r.stderr.contains("throughput"), "{spelling}: {}", r.stderr);
        assert!(listing(dir.path()).is_empty(), "{spelling}: {:?}", listing(dir.path()));
    }
}

#[test]
fn a_sweep_writes_one_document_to_standard_output_at_the_end_and_its_table_to_stderr() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let dir = tempfile::tempdir().unwrap();
    let r = hakaru_in(
        dir.path(),
        &["sweep", "-q", "--clients", "1,2", "-d", "1s", "--interval", "0s", "--json", "-", &url],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc: serde_json::Value = serde_json::from_str(r.stdout.trim_end()).expect("one document, not one per step");
    assert_eq!(doc["steps"].as_array().unwrap().len(), 2);
    assert!(r.stderr.contains("ok/s"), "{}", r.stderr);
}

// Apart from the test above: before the fix this would have replaced the system's /dev/stdout link.
#[test]
fn dev_stdout_writes_to_standard_output() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let dir = tempfile::tempdir().unwrap();
    let r = hakaru_in(dir.path(), &["run", "-q", "-n", "5", "--csv", "/dev/stdout", &url]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("p99"), "the CSV header is on stdout: {}", r.stdout);
    assert!(std::fs::symlink_metadata("/dev/stdout").unwrap().file_type().is_symlink());
}

#[test]
fn a_regular_file_is_replaced_atomically_keeping_its_permissions() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.json");
    std::fs::write(&file, "old").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let r = hakaru_in(dir.path(), &["run", "-q", "-n", "5", "--json", "r.json", &url]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(is_result_document(&std::fs::read_to_string(&file).unwrap()));
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o640);
    assert_eq!(listing(dir.path()), ["r.json"]);
}

#[test]
fn the_same_file_for_two_outputs_is_refused_before_the_load() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("exists"), "old").unwrap();
    std::os::unix::fs::symlink("exists", dir.path().join("alias")).unwrap();
    let cases: [&[&str]; 5] = [
        &["run", "-n", "5", "--json", "a", "--csv", "a", &url],
        &["run", "-n", "5", "--json", "a", "--csv", "sub/../a", &url],
        &["run", "-n", "5", "--json", "exists", "--csv", "alias", &url],
        &["run", "-n", "5", "--json", "-", "--csv", "/dev/stdout", &url],
        &["sweep", "--clients", "1", "-d", "1s", "-o", "b", "--json", "./b", &url],
    ];
    for args in cases {
        let r = hakaru_in(dir.path(), args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        assert!(r.stderr.contains("are the same file"), "{args:?}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{}", r.stdout);
    }
    assert_eq!(target_status(t.addr())["n_requests"], 0, "refused before any request");
    assert_eq!(listing(dir.path()), ["alias", "exists", "sub"], "nothing created");
    assert_eq!(std::fs::read_to_string(dir.path().join("exists")).unwrap(), "old");
}

#[test]
fn an_early_exit_leaves_no_file_behind() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("old.json"), "old").unwrap();
    let closed = format!("http://127.0.0.1:{}/", free_port());
    let runs: [&[&str]; 3] = [
        &["run", "-n", "5", "--json", "r.json", "--csv", "r.csv", &closed],
        &["run", "-n", "5", "--json", "old.json", &closed],
        &["sweep", "--clients", "1", "-d", "1s", "-o", "s.csv", "--json", "s.json", &closed],
    ];
    for args in runs {
        let r = hakaru_in(dir.path(), args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("connection refused"), "{}", r.stderr);
    }
    assert_eq!(listing(dir.path()), ["old.json"], "no empty file for a run that never started");
    assert_eq!(std::fs::read_to_string(dir.path().join("old.json")).unwrap(), "old", "not truncated");
}

#[test]
fn a_directory_or_a_missing_directory_is_refused_before_the_load() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("d")).unwrap();
    for path in ["d", "no/such/r.json"] {
        let r = hakaru_in(dir.path(), &["run", "-n", "5", "--json", path, &url]);
        assert_eq!(r.code, 2, "{path}: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!("output file '{path}'")) && r.stderr.contains("writable path"),
            "{}",
            r.stderr
        );
    }
    assert_eq!(target_status(t.addr())["n_requests"], 0);
}
