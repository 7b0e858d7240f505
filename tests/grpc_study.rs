//! A study and a comparison over gRPC methods of Python's grpcio server (tests/grpc_server.py):
//! two servers whose Nap method answers after 5 ms and 20 ms, compared by a study (`grpc://` targets with `proto`,
//! a workload's `call`) and by `hakaru compare` on its directory. (Sweeps and capacity searches: tests/grpc.rs.)

use crate::common;

use std::time::Duration;

use common::grpc::{Greeter, PROTO};
use common::{hakaru, hakaru_with, write_in};

#[test]
fn a_study_of_a_fast_and_a_slow_grpc_server_and_compare_give_a_verdict() {
    let mut fast = Greeter::start_with(&["--nap", "5"]);
    let mut slow = Greeter::start_with(&["--nap", "20"]);
    let dir = tempfile::tempdir().unwrap();
    write_in(&dir, "hello.proto", PROTO);
    // Two clients for a second, three runs a side: at 20 ms a call a run has enough calls for its median to be
    // judged, and the ratio (4) is far beyond a busy machine's noise.
    let study = format!(
        r#"name = "naps"
[[target]]
name = "fast"
url = "{}"
proto = "hello.proto"
[[target]]
name = "slow"
url = "{}"
proto = "hello.proto"
[[workload]]
name = "nap"
call = "helloworld.Greeter/Nap"
body = '{{"name": "x"}}'
[load]
connections = 2
duration = "1s"
repeat = 3
pause = "50ms"
"#,
        fast.url(),
        slow.url()
    );
    let file = write_in(&dir, "naps.toml", &study);
    let out_dir = dir.path().join("out");
    let out = hakaru_with(&["study", &file, "-o", out_dir.to_str().unwrap()], Duration::from_secs(120), |_| {});
    assert_eq!(out.code, 0, "stdout {}\nstderr {}", out.stdout, out.stderr);
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("study.json")).unwrap()).unwrap();
    let cases = manifest["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 6, "{manifest}");
    let mut ok = [0, 0];
    for c in cases {
        assert_eq!(c["status"], "ok", "{c}");
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out_dir.join(c["file"].as_str().unwrap())).unwrap()).unwrap();
        let step = &doc["steps"][0];
        assert_eq!(step["protocol"], "grpc", "{step}");
        assert_eq!(step["ok"], step["requests"], "{step}");
        ok[usize::from(c["target"] == "slow")] += step["ok"].as_u64().unwrap();
    }
    // Every call counted was seen by its server (a call written as a run's time ran out may be seen uncounted).
    let seen = [fast.count("Nap"), slow.count("Nap")];
    assert!(seen[0] >= ok[0] && seen[1] >= ok[1] && ok[1] > 0, "seen {seen:?}, counted {ok:?}");

    let json = dir.path().join("compare.json");
    let out = hakaru(&["compare", "--json", json.to_str().unwrap(), out_dir.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = doc["groups"][0]["points"][0]["rows"].as_array().unwrap();
    let p50 = &rows.iter().find(|r| r["metric"] == "p50").unwrap()["cells"][1];
    assert_eq!((p50["n"].as_u64(), p50["verdict"].as_str()), (Some(3), Some("slower")), "{p50}");
    assert!(p50["ratio"].as_f64().unwrap() > 1.5, "{p50}");
}
