//! Every input bounded (issue 40, items 9 and 11): a crafted histogram or a count that cannot be true in a result
//! document is refused in one line by every reader, before it costs memory or reads as a true figure.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use common::peak::{hakaru_peak, hakaru_peak_within};
use serde_json::Value;

/// A V2 histogram header announcing 4 GiB of counts that are not there: 40 bytes, 56 of base64. HdrHistogram's
/// decoder sized its buffer by it (4.2 GB resident).
fn crafted_histogram() -> String {
    let mut b = Vec::new();
    b.extend(0x1c84_9313u32.to_be_bytes());
    b.extend(u32::MAX.to_be_bytes());
    b.extend(0u32.to_be_bytes());
    b.extend(3u32.to_be_bytes());
    b.extend(1u64.to_be_bytes());
    b.extend(3_600_000_000u64.to_be_bytes());
    b.extend(1f64.to_be_bytes());
    base64::engine::general_purpose::STANDARD.encode(b)
}

fn write(path: &Path, doc: &Value) -> String {
    std::fs::write(path, doc.to_string()).unwrap();
    path.to_str().unwrap().to_string()
}

/// The refusal every reader must give: exit 2, one line holding `says`, and a peak far below what the crafted
/// header asks for.
fn refused(dir: &Path, args: &[&str], says: &str) {
    // 2 GiB of address space at most: the unfixed reader's 4 GiB buffer fails there instead of filling the machine.
    let out = hakaru_peak_within(dir, args, Duration::from_secs(120), Some(2 << 30));
    assert_eq!(out.code, 2, "{args:?}: {}{}", out.stdout, out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{args:?}: {}", out.stderr);
    assert!(out.stderr.contains(says), "{args:?}: {says} not in {}", out.stderr);
    assert!(out.max_rss < 200 << 20, "{args:?}: peak {} MiB", out.max_rss >> 20);
}

#[test]
fn a_crafted_histogram_is_refused_in_one_line_by_every_reader_before_it_allocates() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good: Value = serde_json::from_str(include_str!("fixtures/report/sweep-4ms.json")).unwrap();
    let mut bad = good.clone();
    bad["steps"][1]["histogram"]["data"] = crafted_histogram().into();
    let (good_file, bad_file) = (write(&d.join("good.json"), &good), write(&d.join("bad.json"), &bad));
    let says = "steps[1].histogram: histogram says 4294967295 bytes of counts follow its header, 0 do";
    let db = d.join("h.db");
    let db = db.to_str().unwrap();
    refused(d, &["compare", &good_file, &bad_file], says);
    refused(d, &["report", &bad_file, "-o", "r.html"], says);
    refused(d, &["chart", &bad_file, "-o", "c.svg"], says);
    refused(d, &["merge", &bad_file], says);
    refused(d, &["import", &bad_file, "--db", db], says);
    // One stored before this check (or written into the database by hand): `show` refuses it too.
    let ok = hakaru_peak(d, &["import", &good_file, "--db", db], Duration::from_secs(60));
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute("UPDATE results SET document = ?1", [bad.to_string()]).unwrap();
    drop(conn);
    refused(d, &["show", "last", "--db", db], says);
    refused(d, &["compare", "last", &good_file, "--db", db], says);
}

/// Two agents' segments of one plan, run against the built-in target.
fn segments(dir: &Path) -> (String, String) {
    let target = common::target();
    let url = format!("http://{}/", target.addr());
    let run = |name: &str, segment: &str| {
        let path = dir.join(name);
        let status = Command::new(env!("CARGO_BIN_EXE_hakaru"))
            .args(["run", "-q", "-c", "2", "-n", "40", "--segment", segment, "--json", path.to_str().unwrap(), &url])
            .env("HAKARU_DB", dir.join("history.db"))
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        path.to_str().unwrap().to_string()
    };
    (run("a.json", "0/2"), run("b.json", "1/2"))
}

fn read(path: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn merge_refuses_counts_that_cannot_be_true_instead_of_wrapping_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (a, b) = segments(d);
    assert_eq!(hakaru_peak(d, &["merge", &a, &b], Duration::from_secs(60)).code, 0);
    let original = read(&a);
    // 2^64-1 requests, every one of them ok: true-looking alone, past 2^64-1 with the other segment's (the merge
    // printed "39 requests" and exited 0).
    let mut doc = original.clone();
    doc["steps"][0]["requests"] = u64::MAX.into();
    doc["steps"][0]["responses"] = u64::MAX.into();
    doc["steps"][0]["ok"] = u64::MAX.into();
    std::fs::write(&a, doc.to_string()).unwrap();
    refused(d, &["merge", &a, &b], "the documents' requests (step ");
    // More ok than requests: refused on reading, by every reader.
    let mut doc = original.clone();
    doc["steps"][0]["ok"] = (original["steps"][0]["requests"].as_u64().unwrap() + 1).into();
    std::fs::write(&a, doc.to_string()).unwrap();
    refused(d, &["merge", &a, &b], "steps[0]: ok (21) and failed (0) do not add up to requests (20)");
    refused(d, &["compare", &a, &b], "do not add up to requests");
    // A sum that wraps within one document.
    let mut doc = original.clone();
    doc["steps"][0]["failed"] = u64::MAX.into();
    std::fs::write(&a, doc.to_string()).unwrap();
    refused(d, &["merge", &a, &b], "failed (18446744073709551615) do not add up to requests (20)");
}

/// hakaru's one-line refusal, exit 2, and its text.
fn refusal(args: &[&str]) -> String {
    let out = common::hakaru(args);
    assert_eq!(out.code, 2, "{args:?}: {}{}", out.stdout, out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{args:?}: {}", out.stderr);
    out.stderr
}

#[test]
fn an_error_about_a_file_never_quotes_a_file_of_another_kind_and_only_a_short_scrubbed_excerpt_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, content: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, content).unwrap();
        p.to_str().unwrap().to_string()
    };
    let hash = "$6$rounds=5000$SECRETSALT$SECRETHASH";
    let shadow = file("shadow", format!("root:{hash}:19000:0:99999:7:::\nbin:*:19000::::::\n").as_bytes());
    let run = |patterns: &str| refusal(&["run", "--patterns", patterns, "--hosts", "127.0.0.1", "--port", "1"]);
    // `--patterns /etc/shadow` printed the file's first line.
    let said = run(&shadow);
    assert!(said.contains("this is not a drnbench pattern file"), "{said}");
    assert!(!said.contains("SECRET") && !said.contains("root"), "{said}");
    if std::fs::read("/etc/shadow").is_ok() {
        let said = run("/etc/shadow");
        assert!(!said.contains("root:"), "{said}");
    }
    // Binary: nothing of it.
    let said = run(&file("bin", b"/a\n\0\x01SECRET\xff\n"));
    assert!(!said.contains("SECRET"), "{said}");
    // A pattern file's own mistake: quoted short, its secrets hidden.
    let long = format!("/search?q={}", "x".repeat(200));
    let said = run(&file("p.txt", format!("/a\n/b?token=SECRET {long}\n").as_bytes()));
    assert!(said.contains("2:") && !said.contains("SECRET") && !said.contains(&"x".repeat(41)), "{said}");
    let said = run(&file("p2.txt", format!("/a\nhost?password=SECRET{long}\n").as_bytes()));
    assert!(said.contains("is neither a path nor a URL") && !said.contains(&"x".repeat(41)), "{said}");
    // JSON: serde quotes a string of the wrong type whole.
    let said = run(&file("p.json", format!("{{\"g\": {{\"frequency\": \"{long}\"}}}}").as_bytes()));
    assert!(!said.contains(&"x".repeat(41)), "{said}");
    // A data file whose header is no header: its first line is not printed as the columns.
    let said = refusal(&["run", "--data", &shadow, "http://127.0.0.1:1/{{x}}"]);
    assert!(said.contains("holds no column names") && !said.contains("SECRET"), "{said}");
}

#[test]
fn a_study_names_a_device_as_a_device_and_says_why_it_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("s.toml");
    let text = |body_file: &str| {
        format!(
            "name = \"s\"\n[[target]]\nname = \"t\"\nurl = \"http://127.0.0.1:1/\"\n[[workload]]\nname = \"post\"\n\
             method = \"POST\"\nbody_file = \"{body_file}\"\n[load]\nconnections = 1\nduration = \"1s\"\n"
        )
    };
    std::fs::write(&study, text("/dev/zero")).unwrap();
    // It said "no such file".
    let said = refusal(&["study", study.to_str().unwrap(), "--dry-run"]);
    assert!(said.contains("body_file \"/dev/zero\" is a character device, not a regular file"), "{said}");
    assert!(said.contains("never ends") && !said.contains("no such file"), "{said}");
    std::fs::write(&study, text(dir.path().to_str().unwrap())).unwrap();
    let said = refusal(&["study", study.to_str().unwrap(), "--dry-run"]);
    assert!(said.contains("is a directory, not a regular file"), "{said}");
    std::fs::write(&study, text("absent.json")).unwrap();
    assert!(refusal(&["study", study.to_str().unwrap(), "--dry-run"]).contains("no such file"));
}

/// A tmpfs of `size` mounted on `at` for the test, unmounted when dropped.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    /// None (with the reason said) where a tmpfs cannot be mounted: not root, or a container that forbids it.
    fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).unwrap();
        let out = Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(at).output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs(at.to_path_buf())),
            Ok(o) => {
                let why = format!("a tmpfs cannot be mounted here: {}", String::from_utf8_lossy(&o.stderr).trim());
                common::skip(FULL_DISK, &why);
                None
            }
            Err(e) => {
                common::skip(FULL_DISK, &format!("mount cannot run here: {e}"));
                None
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

const FULL_DISK: &str = "a_study_on_a_full_disk_runs_no_load_and_names_the_disk_on_each_cases_line";

#[test]
fn a_study_on_a_full_disk_runs_no_load_and_names_the_disk_on_each_cases_line() {
    let dir = tempfile::tempdir().unwrap();
    let Some(disk) = Tmpfs::mount(&dir.path().join("disk"), "1m") else { return };
    let out_dir = disk.0.join("out");
    for sub in ["cases", "logs"] {
        std::fs::create_dir_all(out_dir.join(sub)).unwrap();
    }
    // The disk filled to its last byte.
    let mut fill = std::fs::File::create(disk.0.join("fill")).unwrap();
    while std::io::Write::write_all(&mut fill, &[0u8; 4096]).is_ok() {}
    drop(fill);
    // A target that would see the load: it must see none.
    let target = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    target.set_nonblocking(true).unwrap();
    let study = dir.path().join("s.toml");
    let text = format!(
        "name = \"s\"\n[[target]]\nname = \"t\"\nurl = \"http://{}/\"\n[load]\nconnections = 1\nduration = \"1s\"\n\
         repeat = 2\npause = \"0s\"\n",
        target.local_addr().unwrap()
    );
    std::fs::write(&study, text).unwrap();
    let out = common::hakaru_with(
        &["study", study.to_str().unwrap(), "-o", out_dir.to_str().unwrap()],
        Duration::from_secs(120),
        |_| {},
    );
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    // Each case's line says the disk is full, not "exit code 1: no output".
    let lines: Vec<&str> = out.stdout.lines().filter(|l| l.contains("FAILED")).collect();
    assert_eq!(lines.len(), 2, "{}", out.stdout);
    for l in lines {
        assert!(l.contains("the disk holding the results directory") && l.contains("is full"), "{l}");
    }
    assert!(!out.stdout.contains("no output"), "{}", out.stdout);
    assert!(target.accept().is_err(), "a case ran its load on a full disk");
}

/// drnbench's CSV: a header and `rows` rows (about 75 bytes each).
fn drnbench_csv(path: &Path, rows: usize) -> u64 {
    use std::io::Write as _;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(
        f,
        "n_clients,total_n_requests,queries_per_second,min_elapsed_time,max_elapsed_time,average_elapsed_time,0,200"
    )
    .unwrap();
    for i in 1..=rows {
        writeln!(
            f,
            "{i},{},{:.6},0.001773766,0.238031643,0.019765581680722916,0,100.0",
            1000 + i,
            33.2 + i as f64 / 7.0
        )
        .unwrap();
    }
    drop(f);
    std::fs::metadata(path).unwrap().len()
}

#[test]
fn a_drnbench_csv_import_stays_within_four_times_its_size_and_50_mib() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 15 MB, 200,000 rows: it took 2.4 GB (and minutes); refused at its 1001st row.
    let big = d.join("big.csv");
    let size = drnbench_csv(&big, 200_000);
    // At most 1 GiB of address space: the unbounded reader fails there instead of filling a shared machine.
    let args = ["import", big.to_str().unwrap(), "--db", "h.db"];
    let out = hakaru_peak_within(d, &args, Duration::from_secs(120), Some(1 << 30));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("big.csv:1002: more than 1000 rows"), "{}", out.stderr);
    assert!(out.max_rss < 4 * size + (50 << 20), "peak {} MiB for {size} bytes", out.max_rss >> 20);
    // The most rows there may be: imported within the bound, as compare reads them.
    let most = d.join("most.csv");
    let size = drnbench_csv(&most, 1000);
    for args in [
        vec!["import", most.to_str().unwrap(), "--db", "h.db"],
        vec!["compare", most.to_str().unwrap(), most.to_str().unwrap()],
    ] {
        let out = hakaru_peak(d, &args, Duration::from_secs(120));
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        assert!(out.max_rss < 4 * size + (50 << 20), "{args:?}: peak {} MiB for {size} bytes", out.max_rss >> 20);
    }
}

/// A plain pattern file of `bytes` bytes or more (drnbench's search terms, a path a line); its size.
fn plain_patterns(path: &Path, bytes: u64) -> u64 {
    use std::io::Write as _;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let (mut i, mut written) = (0u64, 0u64);
    while written < bytes {
        let line = format!("/d/select?query=term{i}&limit=10&sort=-_score\n");
        f.write_all(line.as_bytes()).unwrap();
        (i, written) = (i + 1, written + line.len() as u64);
    }
    f.flush().unwrap();
    written
}

/// A JSON pattern file of `bytes` bytes or more, each pattern an object with a method and a header; its size.
fn json_patterns(path: &Path, bytes: u64) -> u64 {
    let mut text = String::from(r#"{"with-query": {"frequency": 1.0, "patterns": ["#);
    let mut i = 0;
    while (text.len() as u64) < bytes {
        if i > 0 {
            text.push(',');
        }
        text += &format!(r#"{{"path":"/d/select?query=term{i}&limit=10","method":"GET","headers":{{"X-A":"b"}}}}"#);
        i += 1;
    }
    text += "]}}";
    std::fs::write(path, &text).unwrap();
    text.len() as u64
}

#[test]
fn a_pattern_file_stays_within_four_times_its_size_and_50_mib() {
    // 19 MB of plain lines took 248 MiB (400,000 requests: each pattern, request, label and endpoint list an
    // allocation of its own, and the requests copied for each step and thread); 10 MB of JSON took 122 MiB.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = common::target();
    let port = server.addr().port().to_string();
    let (plain, json) = (d.join("p.txt"), d.join("p.json"));
    for (file, size) in [(&plain, plain_patterns(&plain, 19_000_000)), (&json, json_patterns(&json, 10_000_000))] {
        let file = file.to_str().unwrap();
        let args = ["run", "--patterns", file, "--hosts", "127.0.0.1", "--port", &port, "-n", "20", "-c", "2"];
        let out = hakaru_peak_within(d, &args, Duration::from_secs(240), Some(2 << 30));
        assert_eq!(out.code, 0, "{file}: {}", out.stderr);
        assert!(out.stdout.contains("20 requests"), "{file}: {}", out.stdout);
        let bound = 4 * size + (50 << 20);
        assert!(
            out.max_rss < bound,
            "{file}: peak {} MiB for {size} bytes (at most {} MiB)",
            out.max_rss >> 20,
            bound >> 20
        );
    }
    server.stop();
}

#[test]
fn a_data_file_stays_within_four_times_its_size_and_50_mib_and_a_wide_one_is_refused() {
    // 10 million one-column rows (20 MB) took 1.67 GB, a value a String in a vector a row; 2 million columns
    // (21 MB) 481 MB.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = common::target();
    let url = format!("http://127.0.0.1:{}/{{{{id}}}}", server.addr().port());
    let tall = d.join("tall.csv");
    std::fs::write(&tall, ["id\n", &"7\n".repeat(9_999_999)].concat()).unwrap();
    let size = std::fs::metadata(&tall).unwrap().len();
    let args = ["run", "--data", tall.to_str().unwrap(), &url, "-n", "20", "-c", "2"];
    let out = hakaru_peak_within(d, &args, Duration::from_secs(240), Some(2 << 30));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("20 requests"), "{}", out.stdout);
    let bound = 4 * size + (50 << 20);
    assert!(out.max_rss < bound, "peak {} MiB for {size} bytes (at most {} MiB)", out.max_rss >> 20, bound >> 20);
    // Too wide, as CSV or as a JSON line: one line naming the limit, before the values are kept.
    let names: Vec<String> = (0..2_000_000).map(|i| format!("c{i}")).collect();
    let wide = d.join("wide.csv");
    std::fs::write(&wide, format!("{}\n{}\n", names.join(","), vec!["1"; names.len()].join(","))).unwrap();
    let object: Vec<String> = names[..200_000].iter().map(|n| format!("\"{n}\":1")).collect();
    let wide_json = d.join("wide.jsonl");
    std::fs::write(&wide_json, format!("{{\"id\":1,{}}}\n", object.join(","))).unwrap();
    for file in [&wide, &wide_json] {
        let args = ["run", "--data", file.to_str().unwrap(), &url, "-n", "20"];
        let out = hakaru_peak_within(d, &args, Duration::from_secs(120), Some(2 << 30));
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(
            out.stderr.contains("10000") && out.stderr.contains("give only the columns the request uses"),
            "{}",
            out.stderr
        );
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
        assert!(out.max_rss < 200 << 20, "{}: peak {} MiB", file.display(), out.max_rss >> 20);
    }
    server.stop();
}
