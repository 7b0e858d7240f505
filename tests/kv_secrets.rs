//! Passwords inside Redis commands other than AUTH (`CONFIG SET requirepass`, `ACL SETUSER bob >pw`,
//! `MIGRATE ... AUTH`/`AUTH2`, `HELLO ... AUTH`) are hidden as AUTH's is: in the output, the result document, the
//! CSV and the history (the trust issue's third pass, item 4), against a real redis-server.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{hakaru_with, redis};

/// Every password planted carries this mark, so one search finds them all.
const MARK: &str = "S3CRET";

/// Every file under `dir` (the history's WAL included) holding the mark.
fn files_holding_the_mark(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            found.extend(files_holding_the_mark(&p));
        } else if std::fs::read(&p).unwrap_or_default().windows(MARK.len()).any(|w| w == MARK.as_bytes()) {
            found.push(p.display().to_string());
        }
    }
    found
}

#[test]
fn passwords_inside_redis_commands_reach_no_output_file_or_history() {
    let r = redis();
    let url = format!("redis://127.0.0.1:{}", r.port);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history/h.db");
    let (json, csv) = (dir.path().join("r.json"), dir.path().join("r.csv"));
    // Harmless on the test's own server: masterauth is used only by a replica, bob is a new user, MIGRATE and
    // HELLO fail (nothing listens on port 1; the password is wrong), and failures are data.
    let commands = [
        format!("CONFIG SET masterauth {MARK}-config"),
        format!("ACL SETUSER bob on >{MARK}-acl ~hakaru:* +get"),
        format!("MIGRATE 127.0.0.1 1 __key__ 0 100 AUTH {MARK}-migrate"),
        format!("MIGRATE 127.0.0.1 1 \"\" 0 100 AUTH2 bob {MARK}-migrate2 KEYS __key__"),
        format!("HELLO 2 AUTH default {MARK}-hello"),
    ];
    let mut args = vec!["kv", "-n", "40", "-c", "2", "--overwrite"];
    for c in &commands {
        args.extend(["--command", c.as_str()]);
    }
    args.extend(["--db", db.to_str().unwrap(), "--json", json.to_str().unwrap(), "--csv", csv.to_str().unwrap()]);
    args.push(&url);
    let out = hakaru_with(&args, Duration::from_secs(120), |_| {});
    assert!(out.code == 0 || out.code == 1, "{}{}", out.stdout, out.stderr);
    assert!(!out.stdout.contains(MARK) && !out.stderr.contains(MARK), "{}{}", out.stdout, out.stderr);
    // What is shown instead: the command up to the password.
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let names: Vec<&str> =
        doc["steps"][0]["breakdown"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"CONFIG SET masterauth <redacted>"), "{names:?}");
    assert!(names.contains(&"ACL SETUSER bob on ><redacted> ~hakaru:* +get"), "{names:?}");
    for args in [vec!["show", "last"], vec!["export", "last"], vec!["history"]] {
        let mut all = args.clone();
        all.extend(["--db", db.to_str().unwrap()]);
        let o = hakaru_with(&all, Duration::from_secs(30), |_| {});
        assert_eq!(o.code, 0, "{args:?}: {}", o.stderr);
        assert!(!o.stdout.contains(MARK), "{args:?}: {}", o.stdout);
    }
    assert_eq!(files_holding_the_mark(dir.path()), Vec::<String>::new());
}
