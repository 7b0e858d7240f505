//! The study file's checks and the plan they give (unit tests of `study`: the cases' order, ids and arguments, and
//! every mistake's one line).

use super::*;

fn plan(text: &str) -> Result<StudyPlan, String> {
    StudyPlan::parse(Path::new("s.toml"), text).map_err(|e| e.to_string())
}

const TWO: &str = r#"
name = "t"
[[target]]
name = "a"
url = "http://127.0.0.1:1/?delay=5ms"
[[target]]
name = "b"
url = "http://127.0.0.1:2/"
[load]
connections = 2
duration = "1s"
repeat = 2
[[phase]]
name = "cold"
[[phase]]
name = "warm"
"#;

#[test]
fn cases_run_repetition_first_then_target_then_phase() {
    let p = plan(TWO).unwrap();
    let ids: Vec<&str> = p.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        ["r1-a-cold", "r1-a-warm", "r1-b-cold", "r1-b-warm", "r2-a-cold", "r2-a-warm", "r2-b-cold", "r2-b-warm"]
    );
    let labels = ["--label", "study=t", "--label", "target=a", "--label", "workload=default", "--label", "phase=cold"];
    let expected = [&["run", "-c", "2", "-d", "1s", "-q"][..], &labels, &["http://127.0.0.1:1/?delay=5ms"]].concat();
    assert_eq!(p.cases[0].args, expected);
    let (t, unknown) = p.estimate(&p.cases.iter().collect::<Vec<_>>());
    assert_eq!((t, unknown), (Duration::from_secs(8 + 7), 0));
}

#[test]
fn an_unknown_key_names_its_line_column_table_and_fix() {
    let e = plan(&TWO.replace("repeat = 2", "repeat = 2\nrepeats = 3")).unwrap_err();
    assert!(e.starts_with("s.toml:13:1: unknown key 'repeats' in [load]"), "{e}");
    assert!(e.ends_with("did you mean 'repeat'?"), "{e}");
    assert_eq!(e.lines().count(), 1);
    // A table of the top level misspelled is a key of the top level, not of the table above it.
    let e = plan(&(TWO.to_string() + "[[workloads]]\nname = \"w\"\n")).unwrap_err();
    assert!(e.contains("unknown key 'workloads' at the top level"), "{e}");
    assert!(e.ends_with("did you mean 'workload'?"), "{e}");
    // Nothing near: the fix is to remove it.
    let e = plan(&TWO.replace("repeat = 2", "repeat = 2\nzzzzzz = 3")).unwrap_err();
    assert!(e.ends_with("remove it or correct its spelling"), "{e}");
}

#[test]
fn arrival_reaches_an_open_loops_cases_and_a_wrong_word_names_the_key() {
    let open = TWO.replace("duration = \"1s\"", "duration = \"1s\"\nrate = 50\narrival = \"poisson\"");
    let p = plan(&open).unwrap();
    let args = &p.cases[0].args;
    let at = args.iter().position(|a| a == "--arrival").expect("--arrival in the case's flags");
    assert_eq!(args[at + 1], "poisson", "{args:?}");
    // The default (uniform) is left out of the command line, as the flag's default.
    let p = plan(&open.replace("poisson", "uniform")).unwrap();
    assert!(!p.cases[0].args.contains(&"--arrival".to_string()), "{:?}", p.cases[0].args);
    let e = plan(&open.replace("poisson", "Poisson")).unwrap_err();
    assert!(e.contains("arrival \"Poisson\": write \"uniform\" or \"poisson\""), "{e}");
}

#[test]
fn a_wrong_type_names_the_key_and_an_example() {
    let e = plan(&TWO.replace("repeat = 2", "repeat = \"2\"")).unwrap_err();
    assert!(e.starts_with("s.toml:12:10: key 'repeat' in [load] has the wrong type"), "{e}");
    assert!(e.ends_with("write it as repeat = 5"), "{e}");
}

#[test]
fn a_bad_value_found_after_parsing_still_names_its_place() {
    let e = plan(&TWO.replace("duration = \"1s\"", "duration = \"3x\"")).unwrap_err();
    assert!(e.starts_with("s.toml:11:1: duration \"3x\""), "{e}");
    let e = plan(&TWO.replace("url = \"http://127.0.0.1:2/\"", "url = \"ftp://x\"")).unwrap_err();
    assert!(e.starts_with("s.toml:8:1: 'ftp://x'"), "{e}");
}

#[test]
fn a_targets_headers_go_before_the_workloads_and_insecure_is_k() {
    let text = TWO.replace(
        "url = \"http://127.0.0.1:2/\"",
        "url = \"https://127.0.0.1:2/\"\nheaders = [\"Authorization: Bearer x\"]\ninsecure = true",
    ) + "[[workload]]\nname = \"w\"\nheaders = [\"Accept: text/plain\"]\n";
    let p = plan(&text).unwrap();
    let b = p.cases.iter().find(|c| c.target == 1).unwrap();
    assert_eq!(b.args[..6], ["run", "-H", "Authorization: Bearer x", "-H", "Accept: text/plain", "-k"]);
    assert_eq!(b.args.last().unwrap(), "https://127.0.0.1:2/");
    let bad = TWO.replace("url = \"http://127.0.0.1:2/\"", "url = \"redis://127.0.0.1:2\"\ninsecure = true");
    assert!(plan(&bad).unwrap_err().contains("key-value server"));
}

#[test]
fn a_workloads_script_and_data_file_become_run_flags() {
    let text = TWO.to_string()
        + "[[workload]]\nname = \"lua\"\nscript = \"tests/fixtures/scripts/counter.lua\"\nscript_args = [\"a b\"]\n\
           [[workload]]\nname = \"rows\"\npath = \"/u/{{id}}\"\ndata = \"tests/fixtures/data/ids.csv\"\n\
           data_order = \"unique\"\n";
    let p = plan(&text).unwrap();
    let args = |w: &str| p.cases.iter().find(|c| p.workloads[c.workload].name == w).unwrap().args.join(" ");
    let lua = args("lua");
    assert!(
        lua.contains("-s ") && lua.contains("tests/fixtures/scripts/counter.lua ") && lua.ends_with(" -- a b"),
        "{lua}"
    );
    let rows = args("rows");
    assert!(rows.contains("tests/fixtures/data/ids.csv --data-order unique"), "{rows}");
    let bad = text.replace("data_order = \"unique\"", "data_order = \"shuffled\"");
    assert!(plan(&bad).unwrap_err().contains("give \"sequential\""));
}

#[test]
fn an_http2_target_runs_its_cases_with_http2_and_its_streams() {
    let text = TWO.replace("url = \"http://127.0.0.1:2/\"", "url = \"http://127.0.0.1:2/\"\nhttp2 = true\nstreams = 8");
    let p = plan(&text).unwrap();
    let b = p.cases.iter().find(|c| c.target == 1).unwrap();
    let at = b.args.iter().position(|a| a == "--http2").unwrap_or_else(|| panic!("{:?}", b.args));
    assert_eq!(b.args[at + 1..at + 3], ["--streams", "8"], "{:?}", b.args);
    let a = p.cases.iter().find(|c| c.target == 0).unwrap();
    assert!(!a.args.contains(&"--http2".to_string()), "{:?}", a.args);
    let bad = TWO.replace("url = \"http://127.0.0.1:2/\"", "url = \"http://127.0.0.1:2/\"\nstreams = 8");
    assert!(plan(&bad).unwrap_err().contains("add http2 = true"));
}

#[test]
fn an_http3_target_runs_its_cases_with_http3_and_its_streams() {
    let text =
        TWO.replace("url = \"http://127.0.0.1:2/\"", "url = \"https://127.0.0.1:2/\"\nhttp3 = true\nstreams = 8");
    let p = plan(&text).unwrap();
    let b = p.cases.iter().find(|c| c.target == 1).unwrap();
    let at = b.args.iter().position(|a| a == "--http3").unwrap_or_else(|| panic!("{:?}", b.args));
    assert!(b.args.contains(&"--streams".to_string()), "{:?}", b.args);
    assert!(!b.args.contains(&"--http2".to_string()), "{:?} ({at})", b.args);
    let both = text.replace("http3 = true", "http3 = true\nhttp2 = true");
    assert!(plan(&both).unwrap_err().contains("http2 and http3 both"));
}

#[test]
fn too_many_cases_are_refused_before_any_is_planned() {
    let e = plan(&TWO.replace("repeat = 2", "repeat = 4000000000")).unwrap_err();
    assert!(e.starts_with("s.toml:12:1: 4 cases a repetition x repeat = 4000000000 is more than 10000"), "{e}");
}

#[test]
fn urls_join_paths_and_keep_the_targets_query() {
    assert_eq!(join_url("http://h:1", "/a?x=1"), "http://h:1/a?x=1");
    assert_eq!(join_url("http://h:1/?delay=5ms", "/cache?key=a"), "http://h:1/cache?key=a&delay=5ms");
    assert_eq!(join_url("http://h:1/api/", "v1"), "http://h:1/api/v1");
    assert_eq!(join_url("http://h:1/api", ""), "http://h:1/api");
}

#[test]
fn sweeps_and_kv_workloads_get_their_commands() {
    let text = r#"
[[target]]
name = "web"
url = "http://127.0.0.1:1"
[[target]]
name = "redis"
url = "redis://127.0.0.1:6379"
[[workload]]
name = "small"
path = "/?size=10"
value_size = 10
[load]
connections = 4
duration = "1s"
warmup = "500ms"
"#;
    let p = plan(text).unwrap();
    assert_eq!(p.cases.len(), 2);
    // A flag and its value side by side.
    let has = |args: &[String], pair: [&str; 2]| args.windows(2).any(|w| w == pair);
    let kv = &p.cases[1].args;
    assert_eq!((kv[0].as_str(), kv.last().unwrap().as_str()), ("kv", "redis://127.0.0.1:6379"), "{kv:?}");
    assert!(has(kv, ["--value-size", "10"]) && has(kv, ["-c", "4"]) && has(kv, ["-d", "1s"]), "{kv:?}");
    let warm = p.cases[0].warmup_args.as_ref().unwrap();
    assert_eq!(warm[..5], ["run", "--no-monitor", "-c", "4", "-d"], "{warm:?}");
    assert!(has(warm, ["-d", "0.5s"]) && warm.contains(&"-q".to_string()), "{warm:?}");
    // Each case is labelled in the history with its study, target, workload and phase; a warm-up is not kept.
    for label in ["study=", "target=redis", "workload=small", "phase=default"] {
        assert!(kv.windows(2).any(|w| w[0] == "--label" && w[1].starts_with(label)), "{label}: {kv:?}");
    }
    assert!(warm.contains(&"--no-history".to_string()) && !warm.contains(&"--label".to_string()), "{warm:?}");
    // A key-value workload of command templates: its commands, shares and data file go to `kv`, and the
    // data file alone does not make it an HTTP workload.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("rows.csv"), "id\n1\n").unwrap();
    let text = "[[target]]\nname = \"redis\"\nurl = \"redis://127.0.0.1:6379\"\n[[workload]]\nname = \"w\"\n\
         command = [\"SET u:{{id}} x\", \"GET u:{{id}}\"]\ncommand_ratio = [1.0, 3.0]\ndata = \"rows.csv\"\n\
         data_order = \"random\"\n[load]\nconnections = 1\nduration = \"1s\"\n";
    let file = dir.path().join("kv.toml");
    std::fs::write(&file, text).unwrap();
    let p = StudyPlan::from_file(&file).unwrap();
    assert!(p.workloads[0].http.is_none());
    let kv = &p.cases[0].args;
    let data = dir.path().join("rows.csv").display().to_string();
    for pair in [["--command", "SET u:{{id}} x"], ["--command", "GET u:{{id}}"], ["--data", &data]] {
        assert!(has(kv, pair), "{pair:?}: {kv:?}");
    }
    for pair in [["--command-ratio", "1"], ["--command-ratio", "3"], ["--data-order", "random"]] {
        assert!(has(kv, pair), "{pair:?}: {kv:?}");
    }
    // Without command templates the data file stays the HTTP part's, beside a mix for key-value targets.
    let text = "[[target]]\nname = \"redis\"\nurl = \"redis://127.0.0.1:6379\"\n[[workload]]\nname = \"w\"\n\
                mix = \"get:1\"\ndata = \"rows.csv\"\n[load]\nconnections = 1\nduration = \"1s\"\n";
    std::fs::write(&file, text).unwrap();
    let p = StudyPlan::from_file(&file).unwrap();
    let w = &p.workloads[0];
    assert!(w.http.as_ref().is_some_and(|h| h.data.is_some()) && w.kv.as_ref().is_some_and(|k| k.data.is_none()));
    assert!(!p.cases[0].args.contains(&"--data".to_string()), "{:?}", p.cases[0].args);
    let sweep = TWO.replace("connections = 2", "clients = [1, 2]");
    let p = plan(&sweep).unwrap();
    let args = &p.cases[0].args;
    assert_eq!(args[0], "sweep");
    assert!(has(args, ["--clients", "1,2"]) && has(args, ["-d", "1s"]), "{args:?}");
    assert_eq!(p.load.case_time(), Some(Duration::from_secs(3)));
}
