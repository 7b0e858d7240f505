//! Every input file has a cap and must be a regular file: a device, a FIFO or an oversized file is refused in one
//! line naming the flag and the file, before anything is read or sent (the trust issue's item 3).

use crate::common;

use std::time::{Duration, Instant};

use common::hakaru_with;

/// Runs hakaru, which must refuse at once: exit 2, one line holding `says`, well under the watchdog.
fn refused(args: &[&str], says: &str) {
    let start = Instant::now();
    let out = hakaru_with(args, Duration::from_secs(60), |_| {});
    assert_eq!(out.code, 2, "{args:?}: {}{}", out.stdout, out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{args:?}: {}", out.stderr);
    assert!(out.stderr.contains(says), "{args:?}: {}", out.stderr);
    // Refused before reading: seconds would mean it read the device or the file.
    assert!(start.elapsed() < Duration::from_secs(30), "{args:?} took {:?}", start.elapsed());
}

#[test]
fn devices_and_oversized_files_are_refused_wherever_a_file_is_read() {
    let dir = tempfile::tempdir().unwrap();
    // A sparse file just over each cap: its size is seen before a byte is read.
    let big = |name: &str, len: u64| {
        let p = dir.path().join(name);
        std::fs::File::create(&p).unwrap().set_len(len).unwrap();
        p.to_str().unwrap().to_string()
    };
    let patterns = big("p.txt", (64 << 20) + 1);
    let study = big("s.toml", (1 << 20) + 1);
    let script = big("x.lua", (1 << 20) + 1);
    let terms = big("t.txt", (64 << 20) + 1);
    let url = "http://127.0.0.1:1/";
    let device = "not a regular file (a device, FIFO or directory)";
    refused(&["run", "--patterns", "/dev/zero", "--hosts", "127.0.0.1", "--port", "1"], device);
    refused(&["run", "--patterns", &patterns, "--hosts", "127.0.0.1", "--port", "1"], "more than the 64 MiB");
    refused(&["run", "--body-file", "/dev/zero", url], "--body-file '/dev/zero': not a regular file");
    refused(&["study", "/dev/zero"], "study file /dev/zero: not a regular file");
    refused(&["study", &study], "more than the 1 MiB it may have");
    refused(&["kv", "--script", "/dev/zero", "--command", "EVALSHA __sha__ 0", "redis://127.0.0.1:1"], device);
    refused(&["kv", "--script", &script, "--command", "EVALSHA __sha__ 0", "redis://127.0.0.1:1"], "1 MiB");
    refused(&["patterns", "generate", "--terms", "/dev/zero", "--template", "/s?q={term}"], device);
    // Results read back: a device is refused by every reader.
    for args in [
        vec!["compare", "/dev/zero", "/dev/zero"],
        vec!["report", "/dev/zero", "-o", "/tmp/never-written.html"],
        vec!["merge", "/dev/zero"],
        vec!["import", "/dev/zero", "--db", "/tmp/hakaru-never-made/h.db"],
    ] {
        refused(&args, "not a regular file");
    }
    refused(&["patterns", "generate", "--terms", &terms, "--template", "/s?q={term}"], "more than the 64 MiB");
}
