//! `--data` rows in a gRPC message (`-b '{"name":"{{name}}"}' --data rows.csv`) against Python's grpcio server
//! (tests/grpc_server.py, which counts each name and times it is called with): exact calls per row on the server,
//! a row whose value does not fit the message refused before any call, naming its row and column; built-ins
//! (`{{seq}}`, `{{rand}}` ...) making each call's message its own.

use crate::common;

use common::grpc::{Greeter, PROTO};
use common::{hakaru, write_in};

const ROWS: &str = "name,times\nann,1\nbob,2\n\"c, \"\"the\"\" third\",3\nann,1\n";

fn run(server: &Greeter, rows: &str, body: &str, load: &[&str]) -> common::Output {
    let dir = tempfile::tempdir().unwrap();
    let proto = write_in(&dir, "hello.proto", PROTO);
    let data = write_in(&dir, "rows.csv", rows);
    let url = server.url();
    let mut args = vec!["run", "--no-monitor", &url, "--call", "helloworld.Greeter/SayHello"];
    args.extend(["--proto", &proto, "-b", body, "--data", &data]);
    args.extend_from_slice(load);
    hakaru(&args)
}

#[test]
fn each_call_sends_its_rows_message_and_the_server_sees_each_row_exactly() {
    let mut server = Greeter::start();
    // Rows taken in turn by every client from one cursor: 400 calls are 100 of each of the 4 rows.
    let body = r#"{"name": "{{name}}", "times": {{times}}}"#;
    let out = run(&server, ROWS, body, &["-n", "400", "-c", "2", "--streams", "4", "-H", "x-hakaru: 1"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["ok"], 400, "{}", out.step());
    assert_eq!(server.count("SayHello"), 400);
    assert_eq!(server.count("SayHello name=ann times=1"), 200, "rows 1 and 4 are the same message");
    assert_eq!(server.count("SayHello name=bob times=2"), 100);
    // A value with a comma and quotes goes in the JSON string as it is in the row.
    assert_eq!(server.count("SayHello name=c, \"the\" third times=3"), 100);
    assert_eq!(server.count("SayHello with metadata"), 400, "-H and gRPC's headers go with each row's message");
    assert_eq!(server.count("SayHello with a deadline"), 400);
}

#[test]
fn a_unique_order_sends_each_row_once_then_the_run_ends() {
    let mut server = Greeter::start();
    let out = run(&server, ROWS, r#"{"name": "{{name}}"}"#, &["-d", "60s", "-c", "2", "--data-order", "unique"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["ok"], 4, "{}", out.step());
    assert_eq!(server.count("SayHello name=ann times=0"), 2);
    assert_eq!(server.count("SayHello name=bob times=0"), 1);
    assert_eq!(server.count("SayHello"), 4);
}

#[test]
fn a_row_that_does_not_fit_the_message_is_refused_before_any_call() {
    let mut server = Greeter::start();
    let rows = "name,times\nann,1\nbob,many\n";
    let body = r#"{"name": "{{name}}", "times": "{{times}}"}"#;
    let out = run(&server, rows, body, &["-n", "10"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    let line = out.stderr.trim();
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(line.contains("rows.csv' row 2 column 'times': "), "{line}");
    // A built-in where its value does not fit: refused before any call, naming it and the value it gives.
    let out = run(&server, "name\nann\n", r#"{"name": {{seq}}}"#, &["-n", "10"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("{{seq}} gives 1 there"), "{}", out.stderr);
    // {{rand}}'s far end too, though the first calls would have fitted (times is an int32).
    let out = run(&server, "name\nann\n", r#"{"name": "{{name}}", "times": {{rand 1 3000000000}}}"#, &["-n", "10"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("{{rand}} gives 3000000000 there"), "{}", out.stderr);
    assert_eq!(server.count("SayHello"), 0, "no call was made");
}

#[test]
fn built_ins_make_each_calls_message_its_own_as_for_http() {
    let mut server = Greeter::start();
    // ghz's {{.RequestNumber}} and {{randomInt}} as hakaru writes them: every call's message is its own.
    let body = r#"{"name": "{{name}}-{{seq}}", "times": {{rand 1 3}}}"#;
    let out = run(&server, "name\nann\nbob\n", body, &["-n", "300", "-c", "2", "--streams", "4"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["ok"], 300, "{}", out.step());
    let counts = server.counts();
    let mut seqs = Vec::new();
    let mut times = std::collections::BTreeSet::new();
    for (key, n) in &counts {
        let Some(rest) = key.strip_prefix("SayHello name=") else { continue };
        assert_eq!(n, 1, "{key}: each call's name has its own number");
        let (name, t) = rest.split_once(" times=").unwrap();
        let (row, seq) = name.split_once('-').unwrap();
        assert!(row == "ann" || row == "bob", "{key}");
        seqs.push(seq.parse::<u64>().unwrap());
        times.insert(t.parse::<u64>().unwrap());
    }
    seqs.sort();
    assert_eq!(seqs, (1..=300).collect::<Vec<u64>>(), "{{seq}} is 1 to 300, once each");
    assert_eq!(times, [1, 2, 3].into(), "{{rand 1 3}} drawn per call");
    assert_eq!(server.count("SayHello"), 300);

    // Built-ins alone in a string field: spliced into an encoding made once per shape (1, 2 and 3 digits here),
    // each call's own value on the wire all the same.
    let mut server = Greeter::start();
    let dir = tempfile::tempdir().unwrap();
    let proto = common::write_in(&dir, "hello.proto", PROTO);
    let url = server.url();
    let args = ["run", "--no-monitor", &url, "--call", "helloworld.Greeter/SayHello", "--proto", &proto];
    let out =
        hakaru(&[&args[..], &["-b", r#"{"name": "user-{{seq}}"}"#, "-n", "300", "-c", "2", "--streams", "4"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let counts = server.counts();
    let mut seqs: Vec<u64> = counts
        .iter()
        .filter_map(|(key, n)| {
            let seq = key.strip_prefix("SayHello name=user-")?.strip_suffix(" times=0")?;
            assert_eq!(n, 1, "{key}");
            seq.parse().ok()
        })
        .collect();
    seqs.sort();
    assert_eq!(seqs, (1..=300).collect::<Vec<u64>>(), "every call its own name");
}
