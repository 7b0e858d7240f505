//! The history: results of run, sweep, capacity and kv kept in SQLite and read back by `history`, `show`,
//! `export` and `import`; secrets never in the file; a kill -9 during writes loses no committed result; two
//! processes write at once; a database of the first schema migrates. Against the built-in target and a real
//! redis-server on loopback; every database is a temporary file.

use crate::common;

use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Output, hakaru_with, redis_with, target, target_with};
use hakaru::history::{Db, Filter};
use hakaru::serve::ServeOptions;

/// `hakaru ARGS --db DB` (the flag last, so it follows the URLs too).
fn with_db(args: &[&str], db: &Path) -> Output {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--db", db.to_str().unwrap()]);
    hakaru_with(&all, Duration::from_secs(60), |_| {})
}

fn ok(out: &Output) {
    assert_eq!(out.code, 0, "stdout: {}\nstderr: {}", out.stdout, out.stderr);
}

/// Every byte of the database and its WAL and shared-memory files.
fn database_bytes(db: &Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    for suffix in ["", "-wal", "-shm"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        bytes.extend(std::fs::read(PathBuf::from(p)).unwrap_or_default());
    }
    bytes
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn a_run_is_kept_with_its_labels_and_comes_back_through_history_show_and_export() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let csv = dir.path().join("r.csv");
    let url = format!("http://{}/?delay=1ms", t.addr());
    let labels = ["--label", "branch=main", "--label", "nightly"];
    let args: Vec<&str> = ["run", "-q", "-n", "200", "-c", "2"]
        .into_iter()
        .chain(labels)
        .chain(["--csv", csv.to_str().unwrap(), &url])
        .collect();
    let run = with_db(&args, &db);
    ok(&run);
    assert_eq!(run.doc()["settings"]["labels"], serde_json::json!({"branch": "main", "label": "nightly"}));

    let list = with_db(&["history"], &db);
    ok(&list);
    let lines: Vec<&str> = list.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", list.stdout);
    assert!(lines[0].starts_with("id") && lines[0].contains("ok/s") && lines[0].contains("p99"), "{}", lines[0]);
    assert!(lines[1].contains(&url) && lines[1].contains("branch=main,label=nightly"), "{}", lines[1]);
    assert!(lines[1].trim_start().starts_with("1 ") && lines[1].contains(" run "), "{}", lines[1]);
    let qps = run.step()["throughput"]["ok_per_s"].as_f64().unwrap();
    assert!(lines[1].contains(&format!("{qps:.1}")), "the headline rate {qps:.1} in {}", lines[1]);

    // show prints the summary the run printed.
    let show = with_db(&["show", "1"], &db);
    ok(&show);
    let printed = with_db(&["show", "branch=main"], &db);
    assert_eq!(show.stdout, printed.stdout);
    let again =
        hakaru_with(&["run", "-q", "-n", "50", "-c", "1", "--no-history", &url], Duration::from_secs(60), |c| {
            c.env("HAKARU_DB", &db);
        });
    ok(&again);
    assert!(show.stdout.contains("throughput") && show.stdout.contains("percentile"), "{}", show.stdout);
    assert_eq!(show.stdout.trim_end(), run.stdout.trim_end(), "show prints what the run printed");

    // export: the same document and the same CSV as the run wrote.
    let json = with_db(&["export", "1", "--format", "json"], &db);
    ok(&json);
    let exported: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(&exported, run.doc());
    let exported_csv = with_db(&["export", "last", "--format", "csv"], &db);
    assert_eq!(exported_csv.stdout, std::fs::read_to_string(&csv).unwrap());
    let drn = dir.path().join("d.csv");
    ok(&with_db(&["export", "1", "--format", "drnbench", "-o", drn.to_str().unwrap()], &db));
    assert!(std::fs::read_to_string(&drn).unwrap().starts_with("n_clients,total_n_requests"));

    // --no-history kept nothing; filters narrow the list.
    let rows = Db::open(&db).unwrap().find(&Filter::default()).unwrap();
    assert_eq!(rows.len(), 1, "--no-history stored nothing");
    let none = with_db(&["history", "--label", "branch=dev"], &db);
    assert!(none.stdout.starts_with("no results match"), "{}", none.stdout);
    let none = with_db(&["history", "--target", "127.0.0.2"], &db);
    assert!(none.stdout.starts_with("no results match"), "{}", none.stdout);
    let since = with_db(&["history", "--since", "1h"], &db);
    assert_eq!(since.stdout.lines().count(), 2, "{}", since.stdout);
    let future = with_db(&["history", "--since", "2999-01-01"], &db);
    assert!(future.stdout.starts_with("no results match"), "{}", future.stdout);
}

#[test]
fn sweeps_capacity_searches_and_kv_runs_are_kept_too() {
    let t = target_with(ServeOptions { listen: "127.0.0.1:0".parse().unwrap(), threads: 1, ..ServeOptions::default() });
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let url = format!("http://{}/", t.addr());
    let sweep =
        with_db(&["sweep", "-q", "--clients", "1,2", "-d", "300ms", "--interval", "0s", "--label", "k=s", &url], &db);
    ok(&sweep);
    let capacity = with_db(
        &["capacity", "-q", "--slo", "p99<1s", "--rate-start", "50", "--rate-max", "100", "-d", "300ms"]
            .into_iter()
            .chain(["--interval", "0s", "--label", "k=c", &url])
            .collect::<Vec<_>>(),
        &db,
    );
    ok(&capacity);
    let redis = redis_with(&[]);
    let kv_url = format!("redis://127.0.0.1:{}", redis.port);
    let kv = with_db(&["kv", "-q", "-n", "200", "-c", "2", "--label", "k=kv", &kv_url], &db);
    ok(&kv);
    let db = Db::open(&db).unwrap();
    let rows = db.find(&Filter::default()).unwrap();
    let mut commands: Vec<(&str, &str)> =
        rows.iter().map(|r| (r.command.as_str(), r.labels.get("k").map(String::as_str).unwrap_or(""))).collect();
    commands.sort();
    assert_eq!(commands, vec![("capacity", "c"), ("kv", "kv"), ("sweep", "s")]);
    for r in &rows {
        assert!(r.ok_per_s.is_some_and(|q| q > 0.0) && r.p99_us.is_some(), "{r:?}");
    }
    // show prints a sweep as the sweep printed it; a capacity search's table without the verdicts, then its answer.
    let shown = with_db(&["show", "k=s"], db.path());
    assert_eq!(shown.stdout, sweep.stdout);
    let shown = with_db(&["show", "k=c"], db.path());
    let answer = capacity.stdout.lines().find(|l| l.starts_with("  capacity: ")).unwrap();
    assert!(shown.stdout.contains(answer), "{answer} in {}", shown.stdout);
    assert!(capacity.stdout.ends_with(shown.stdout.split(answer).nth(1).unwrap()), "{}", shown.stdout);
    let only = with_db(&["history", "--command", "capacity"], db.path());
    assert_eq!(only.stdout.lines().count(), 2, "{}", only.stdout);
    assert!(only.stdout.contains("k=c"), "{}", only.stdout);
    let (_, sweep_doc) = db.resolve("k=s").unwrap();
    assert_eq!(sweep_doc["steps"].as_array().unwrap().len(), 2);
    assert_eq!(sweep_doc["settings"]["labels"]["k"], "s");
}

#[test]
fn a_run_without_a_success_lists_its_p99_as_a_dash() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let failing = with_db(&["run", "-q", "-n", "20", "-c", "1", &format!("http://{}/?status=500", t.addr())], &db);
    assert_eq!(failing.code, 1, "every request failed: {}", failing.stderr);
    let list = with_db(&["history"], &db);
    let row = list.stdout.lines().nth(1).unwrap_or_else(|| panic!("{}", list.stdout));
    // The last two columns: ok/s 0.0 and p99 "-" (no success has a latency), never `0us`.
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[cells.len() - 2..], ["0.0", "-"], "{}", list.stdout);
}

#[test]
fn secrets_from_headers_cookies_and_urls_never_reach_the_database_file() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let url = format!("http://user:SEKRET-URL-PW@{}/", t.addr());
    let run = with_db(
        &[
            "run",
            "-q",
            "-n",
            "20",
            "-c",
            "1",
            "-H",
            "Authorization: Bearer SEKRET-AUTH",
            "-H",
            "Cookie: sid=SEKRET-COOKIE",
            "--header=Authorization: Bearer SEKRET-GLUED",
            &url,
        ],
        &db,
    );
    ok(&run);
    let redis = redis_with(&["--requirepass", "SEKRET-REDIS-PW"]);
    let kv = with_db(
        &["kv", "-q", "-n", "20", "-c", "1", &format!("redis://:SEKRET-REDIS-PW@127.0.0.1:{}", redis.port)],
        &db,
    );
    ok(&kv);
    assert_eq!(Db::open(&db).unwrap().find(&Filter::default()).unwrap().len(), 2);
    let bytes = database_bytes(&db);
    assert!(contains(&bytes, "<redacted>"), "the redacted header is stored");
    for secret in ["SEKRET-URL-PW", "SEKRET-AUTH", "SEKRET-COOKIE", "SEKRET-GLUED", "SEKRET-REDIS-PW"] {
        assert!(!contains(&bytes, secret), "{secret} is in the database file");
    }
}

#[test]
fn results_and_drnbench_csvs_are_imported_and_the_csv_says_what_it_lacks() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let (json, csv) = (dir.path().join("r.json"), dir.path().join("drnbench.csv"));
    let url = format!("http://{}/?status=503&delay=1ms", t.addr());
    let sweep = hakaru_with(
        &["sweep", "-q", "--clients", "1,3", "-d", "300ms", "--interval", "0s", "--no-history", "--json"]
            .into_iter()
            .chain([json.to_str().unwrap(), "-o", csv.to_str().unwrap(), &url])
            .collect::<Vec<_>>(),
        Duration::from_secs(60),
        |_| {},
    );
    assert_eq!(sweep.code, 1, "every request failed: {}", sweep.stderr);
    let import = with_db(&["import", json.to_str().unwrap(), csv.to_str().unwrap(), "--label", "src=old"], &db);
    ok(&import);
    assert!(import.stdout.contains("as #1\n"), "{}", import.stdout);
    assert!(import.stdout.contains("as #2 (a drnbench CSV; absent: latency percentiles"), "{}", import.stdout);
    let list = with_db(&["history", "--label", "src=old"], &db);
    assert_eq!(list.stdout.matches("sweep (imported)").count(), 2, "{}", list.stdout);

    // The imported JSON is the document; the CSV comes back out as drnbench's CSV with the same figures.
    let back = with_db(&["export", "1"], &db);
    let mut original: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    original["settings"]["labels"] = serde_json::json!({"src": "old"});
    assert_eq!(serde_json::from_str::<serde_json::Value>(&back.stdout).unwrap(), original);
    let back = with_db(&["export", "2", "--format", "drnbench"], &db);
    assert_eq!(back.stdout, std::fs::read_to_string(&csv).unwrap(), "drnbench's CSV comes back out unchanged");
    let show = with_db(&["show", "2"], &db);
    ok(&show);
    // A sweep's table: no percentiles, shown as '-', never as zeros.
    assert!(!show.stdout.contains(" 0us"), "{}", show.stdout);
    let row = show.stdout.lines().nth(2).unwrap();
    assert_eq!(row.split_whitespace().filter(|c| *c == "-").count(), 3, "p50, p99 and the server: {row}");
    assert!(show.stdout.contains("absent from a drnbench CSV"), "{}", show.stdout);

    // A file that is neither: one line naming it, exit 2, nothing stored.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"schema\": \"hakaru.result/1\",\n \"steps\": 3}").unwrap();
    let refused = with_db(&["import", csv.to_str().unwrap(), bad.to_str().unwrap()], &db);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert_eq!(refused.stderr.lines().count(), 1, "{}", refused.stderr);
    assert!(refused.stderr.contains("bad.json:2:"), "{}", refused.stderr);
    assert_eq!(Db::open(&db).unwrap().find(&Filter::default()).unwrap().len(), 2, "a bad file stores none");
}

#[test]
fn bad_references_labels_and_dates_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let missing = with_db(&["history"], &db);
    assert_eq!(missing.code, 2);
    assert!(missing.stderr.contains("no history at"), "{}", missing.stderr);
    Db::open(&db).unwrap();
    for (args, needle) in [
        (vec!["show", "7"], "no result #7"),
        (vec!["show", "x=y"], "no result labelled x=y"),
        (vec!["export", "nonsense"], "not a history reference"),
        (vec!["history", "--since", "yesterday-ish"], "--since 'yesterday-ish'"),
        (vec!["history", "--label", "=v"], "--label '=v'"),
        (vec!["run", "--label", "a b=c", "http://127.0.0.1:1/"], "--label 'a b=c'"),
    ] {
        let out = with_db(&args, &db);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(needle), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn a_run_stopped_by_ctrl_c_is_kept_as_interrupted() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let child = Command::new(env!("CARGO_BIN_EXE_hakaru"))
        .args(["run", "-q", "-c", "2", "-d", "30s", "--db", db.to_str().unwrap(), &format!("http://{}/", t.addr())])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // 50 served by two clients: hakaru has read at least 48 of them (no more than 2 in flight).
    common::wait_served(t.addr(), 50, Duration::from_secs(30));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let (_, doc) = Db::open(&db).unwrap().resolve("last").unwrap();
    assert_eq!(doc["interrupted"], true);
    assert!(doc["steps"][0]["requests"].as_u64().unwrap() > 0);
}

#[test]
fn a_broken_history_is_a_warning_and_the_run_and_its_files_stand() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    // A folder where the database file should be: SQLite cannot open it.
    let db = dir.path().join("h.db");
    std::fs::create_dir(&db).unwrap();
    let run = with_db(&["run", "-q", "-n", "20", "-c", "1", &format!("http://{}/", t.addr())], &db);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.json.is_some(), "the result file is written");
    assert!(run.stderr.contains("hakaru: warning: the result was not kept in the history"), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

#[test]
fn a_full_disk_is_a_warning_and_the_result_file_is_still_written() {
    use std::os::unix::process::CommandExt;
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    // No file may grow past 16 kB: the result JSON (about 5 kB) fits, the database (about 36 kB) does not.
    let run = hakaru_with(
        &["run", "-q", "-n", "20", "-c", "1", "--db", db.to_str().unwrap(), &format!("http://{}/", t.addr())],
        Duration::from_secs(60),
        |c| unsafe {
            c.pre_exec(|| {
                let limit = libc::rlimit { rlim_cur: 16 * 1024, rlim_max: 16 * 1024 };
                libc::setrlimit(libc::RLIMIT_FSIZE, &limit);
                // Past the limit a write fails with EFBIG instead of killing the process.
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                Ok(())
            });
        },
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.json.is_some(), "the result file is written");
    assert!(run.stderr.contains("hakaru: warning: the result was not kept in the history"), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

#[test]
fn a_database_of_the_first_schema_migrates_on_open() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("v1.db");
    let run = hakaru_with(
        &["run", "-q", "-n", "50", "-c", "1", "--no-history", "--label", "branch=v1", &format!("http://{}/", t.addr())],
        Duration::from_secs(60),
        |_| {},
    );
    ok(&run);
    let doc = run.doc();
    {
        // The file as the first schema wrote it: no labels table, no figures columns.
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(hakaru::history::SCHEMA_V1).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        conn.execute(
            "INSERT INTO results (time, command, target, document) VALUES (?1, 'run', ?2, ?3)",
            rusqlite::params![
                doc["provenance"]["started_at"].as_str().unwrap(),
                doc["settings"]["targets"][0].as_str().unwrap(),
                doc.to_string()
            ],
        )
        .unwrap();
    }
    let list = with_db(&["history", "--label", "branch=v1"], &db);
    ok(&list);
    assert_eq!(list.stdout.lines().count(), 2, "{}", list.stdout);
    let qps = run.step()["throughput"]["ok_per_s"].as_f64().unwrap();
    assert!(list.stdout.contains(&format!("{qps:.1}")), "{}", list.stdout);
    let opened = Db::open(&db).unwrap();
    assert_eq!(opened.schema_version().unwrap(), hakaru::history::SCHEMA_VERSION);
    assert_eq!(opened.integrity_check().unwrap(), "ok");
    let show = with_db(&["show", "1"], &db);
    assert_eq!(show.stdout.trim_end(), run.stdout.trim_end());
}

/// The child side of the kill -9 test: inserts documents until killed, printing each committed ID. Ignored in a
/// normal run: the test below starts it.
#[test]
#[ignore = "the child process of a_kill_9_during_writes_leaves_every_committed_result_readable"]
fn inserter_child() {
    let Ok(path) = std::env::var("HAKARU_TEST_INSERTER_DB") else { return };
    let mut db = Db::open(Path::new(&path)).unwrap();
    // A large document, so the kill is likely to land in the middle of writing one.
    let padding = "x".repeat(200_000);
    let mut out = std::io::stdout().lock();
    for i in 0.. {
        let doc = serde_json::json!({
            "schema": "hakaru.result/1",
            "provenance": {"started_at": "2026-11-23T00:00:00Z"},
            "settings": {"command": "run", "targets": [format!("t{i}")], "labels": {"n": i.to_string()}},
            "steps": [], "padding": padding,
        });
        let id = db.insert_json(doc, "recorded").unwrap();
        writeln!(out, "committed {id}").unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn a_kill_9_during_writes_leaves_every_committed_result_readable() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "history::inserter_child", "--ignored", "--nocapture", "--test-threads", "1"])
        .env("HAKARU_TEST_INSERTER_DB", &db)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut committed = Vec::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while committed.len() < 40 {
        let line = lines.next().expect("the inserter prints its commits").unwrap();
        if let Some(id) = line.strip_prefix("committed ") {
            committed.push(id.parse::<i64>().unwrap());
        }
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    let db = Db::open(&db).unwrap();
    assert_eq!(db.integrity_check().unwrap(), "ok");
    for id in &committed {
        let doc = db.get(*id).unwrap().unwrap_or_else(|| panic!("committed result #{id} is lost"));
        assert_eq!(doc["settings"]["targets"][0], format!("t{}", id - 1));
    }
    // A commit may have landed after the last line was read, never fewer.
    assert!(db.find(&Filter::default()).unwrap().len() >= committed.len());
}

#[test]
fn two_processes_storing_at_once_both_succeed() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let run = hakaru_with(
        &["run", "-q", "-n", "20", "-c", "1", "--no-history", &format!("http://{}/", t.addr())],
        Duration::from_secs(60),
        |_| {},
    );
    ok(&run);
    std::fs::write(&json, run.doc().to_string()).unwrap();
    let files: Vec<String> = (0..10).map(|_| json.to_str().unwrap().to_string()).collect();
    // Five new files: the race is in opening a new database (turning it to WAL), lost by one of the two most times.
    // Then the first file again: two processes inserting into a database that exists.
    for (round, want) in [(0, 20), (1, 20), (2, 20), (3, 20), (4, 20), (0, 40)] {
        let db = dir.path().join(format!("h{round}.db"));
        let spawn = || {
            Command::new(env!("CARGO_BIN_EXE_hakaru"))
                .arg("import")
                .args(&files)
                .args(["--db", db.to_str().unwrap()])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (a, b) = (spawn(), spawn());
        for child in [a, b] {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "h{round}.db: {}", String::from_utf8_lossy(&out.stderr));
        }
        let db = Db::open(&db).unwrap();
        assert_eq!(db.find(&Filter::default()).unwrap().len(), want);
        assert_eq!(db.integrity_check().unwrap(), "ok");
    }
}

/// Issue 49: `history`, `show` and `export` of `--runs 3` results give the runs' mean ok/s (with its spread) and
/// their merged p99, as the run's text and `compare` of the same results do, never the best run's.
#[test]
fn results_of_several_runs_are_listed_shown_and_exported_as_their_text_and_compare_give_them() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let url = format!("http://{}/?delay=1ms", t.addr());
    let mut texts = Vec::new();
    for _ in 0..2 {
        let run = with_db(&["run", "--no-tui", "--runs", "3", "-n", "600", "-c", "2", &url], &db);
        ok(&run);
        texts.push(run.stdout);
    }
    let compared = dir.path().join("c.json");
    let text = with_db(&["compare", "1", "2", "--json", compared.to_str().unwrap()], &db);
    ok(&text);
    // compare says the protocol, as the run's header and history do.
    assert!(text.stdout.lines().any(|l| l == "  over HTTP/1.1"), "{}", text.stdout);
    let compared: serde_json::Value = serde_json::from_slice(&std::fs::read(&compared).unwrap()).unwrap();
    let cell = |metric: &str, side: usize| {
        let rows = compared.pointer("/groups/0/points/0/rows").and_then(|r| r.as_array()).unwrap();
        let row = rows.iter().find(|r| r["metric"] == metric).unwrap_or_else(|| panic!("{metric}: {compared}"));
        row["cells"][side]["value"].as_f64().unwrap()
    };
    let list = with_db(&["history"], &db);
    for (side, id) in [(0, "1"), (1, "2")] {
        let export = with_db(&["export", id, "--format", "json"], &db);
        let doc: serde_json::Value = serde_json::from_str(&export.stdout).unwrap();
        let runs = &doc["runs"];
        let (mean, sd) = (runs["ok_per_s"]["mean"].as_f64().unwrap(), runs["ok_per_s"]["sd"].as_f64().unwrap());
        let p99 = runs["latency"]["percentiles"]["p99"].as_u64().unwrap();
        // compare reads the same figures.
        assert!((cell("qps", side) - mean).abs() < 1e-6 && cell("p99", side) == p99 as f64, "{compared}");
        // The listing: "3 runs", the mean with its spread, the merged p99.
        let row = list.stdout.lines().find(|l| l.split_whitespace().next() == Some(id)).unwrap();
        let p99_text = hakaru::base::units::format_micros(p99 as f64);
        // (The columns are aligned: compared word by word, not by their padding.)
        let expected = format!("3 runs {mean:.1} ± {sd:.1} {p99_text}");
        let words: Vec<&str> = row.split_whitespace().collect();
        let last = words[words.len() - 6..].join(" ");
        assert!(row.contains("HTTP/1.1") && last == expected, "{row:?} for {expected:?}\n{}", list.stdout);
        // The run's own text says the same mean and merged p99, and show gives that text.
        let text = &texts[side];
        assert!(text.lines().any(|l| l.starts_with("  ok/s") && l.contains(&format!("{mean:.1}"))), "{text}");
        assert!(text.lines().any(|l| l.starts_with("  p99 ") && l.contains(&p99_text)), "{text}");
        let show = with_db(&["show", id], &db);
        assert!(
            show.stdout.contains("over 3 of 3 runs") && show.stdout.contains(&format!("{mean:.1}")),
            "{}",
            show.stdout
        );
    }
}

/// Issue 50: `history --db` of a FIFO hung (SIGTERM ignored); of /dev/zero, a directory or a text file it exited 1.
/// Each is bad input: one line naming --db, exit 2, at once.
#[test]
fn a_db_that_is_no_database_file_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.db");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads the NUL-terminated path only.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not a database at all\n").unwrap();
    for (db, says) in [
        (fifo.as_path(), "a FIFO"),
        (Path::new("/dev/zero"), "a character device"),
        (dir.path(), "a directory"),
        (text.as_path(), "not a SQLite database"),
    ] {
        let out = hakaru_with(&["history", "--db", db.to_str().unwrap()], Duration::from_secs(30), |_| {});
        assert_eq!(out.code, 2, "{db:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains("--db") && out.stderr.contains(says), "{}", out.stderr);
    }
    // A run with such a --db is refused before its load, not warned about after it.
    let t = target();
    let url = format!("http://{}/", t.addr());
    let args = ["run", "-q", "-n", "5", "--db", fifo.to_str().unwrap(), &url];
    let out = hakaru_with(&args, Duration::from_secs(30), |_| {});
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(common::target_status(t.addr())["n_requests"], 0, "nothing was sent");
}
