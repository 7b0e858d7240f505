//! `hakaru k8s job`: the manifests validate against the Kubernetes API schemas (the PyPI package
//! kubernetes-validate, strict), read back as Kubernetes reads YAML (PyYAML is YAML 1.1, as Kubernetes' reader is)
//! they give every agent its segment and one common start, and a bad agents' command is refused before any YAML.
//!
//! Set HAKARU_UPDATE_GOLDEN=1 to rewrite tests/golden/k8s_job.yaml after a deliberate change of the manifests.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime};

use serde_json::Value;

const START: &str = "2026-11-23T21:00:00Z";

fn hakaru(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hakaru")).args(args).output().expect("hakaru runs")
}

/// `hakaru k8s job --image IMAGE --start-at START ARGS`, which must succeed; the YAML it printed.
fn manifests(args: &[&str]) -> String {
    let mut all = vec!["k8s", "job", "--image", "registry.example/hakaru:0.1.0", "--start-at", START];
    all.extend_from_slice(args);
    let out = hakaru(&all);
    assert!(out.status.success(), "{all:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Runs python3 with `args`, `stdin` fed in; a missing module fails the test with the way to install it.
fn python(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new("python3")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 is needed by the k8s tests (scripts/test.sh installs kubernetes-validate)");
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("ModuleNotFoundError") && !stderr.contains("No module named"),
        "kubernetes-validate (and its PyYAML) is missing: run scripts/test.sh, or python3 -m pip install \
         kubernetes-validate\n{stderr}"
    );
    out
}

/// Validates the YAML with kubernetes-validate in strict mode (unknown fields are errors).
fn assert_valid(yaml: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("manifests.yaml");
    std::fs::write(&file, yaml).unwrap();
    let out = python(&["-m", "kubernetes_validate", "--strict", file.to_str().unwrap()], "");
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "kubernetes-validate refused the manifests:\n{report}\n{yaml}");
    let kinds = yaml.matches("\nkind: ").count();
    assert_eq!(report.matches(" passed for resource ").count(), kinds, "every manifest checked:\n{report}");
}

/// The YAML stream as PyYAML (YAML 1.1, as Kubernetes) reads it, one JSON value per document.
fn documents(yaml: &str) -> Vec<Value> {
    let script = "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(sys.stdin))))";
    let out = python(&["-c", script], yaml);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array().unwrap().iter().map(|s| s.as_str().expect("every argument reads as a string")).collect()
}

/// The pod spec of the Job named `name`.
fn pod<'a>(docs: &'a [Value], name: &str) -> &'a Value {
    let job = docs.iter().find(|d| d["kind"] == "Job" && d["metadata"]["name"] == name).expect("the job");
    &job["spec"]["template"]["spec"]
}

#[test]
fn the_manifests_validate_against_the_kubernetes_schemas_in_strict_mode() {
    assert_valid(&manifests(&["--agents", "3", "--", "run", "-c", "30", "-d", "30s", "http://web/"]));
    assert_valid(&manifests(&[
        "--agents",
        "2",
        "--results-volume",
        "stdout",
        "--namespace",
        "load",
        "--cpu",
        "1500m",
        "--memory",
        "512Mi",
        "--",
        "kv",
        "-n",
        "10000",
        "redis://redis:6379",
    ]));
    assert_valid(&manifests(&[
        "--agents",
        "5",
        "--name",
        "search-sweep",
        "--storage-class",
        "nfs-client",
        "--backoff-limit",
        "1",
        "--",
        "sweep",
        "--start-clients",
        "10",
        "--end-clients",
        "50",
        "--step",
        "10",
        "http://web/",
    ]));
}

#[test]
fn each_agent_runs_its_segment_from_one_common_start_on_the_image_given() {
    let yaml = manifests(&["--agents", "4", "--", "run", "-c", "30", "-d", "30s", "-H", "X-Debug: on", "http://web/"]);
    let docs = documents(&yaml);
    let job = docs.iter().find(|d| d["kind"] == "Job" && d["metadata"]["name"] == "hakaru").unwrap();
    assert_eq!(job["spec"]["completionMode"], "Indexed");
    assert_eq!(job["spec"]["completions"], 4);
    assert_eq!(job["spec"]["parallelism"], 4);
    assert_eq!(job["spec"]["backoffLimit"], 0);
    let spec = pod(&docs, "hakaru");
    assert_eq!(spec["restartPolicy"], "Never");
    // One container of the hakaru image: it says itself when its document is complete (agent-I.done).
    assert!(spec["initContainers"].is_null(), "{spec}");
    let agent = &spec["containers"][0];
    assert_eq!(agent["image"], "registry.example/hakaru:0.1.0");
    let args = strings(&agent["args"]);
    // The user's command rendered from its parsed flags (strings stay strings: "30", "X-Debug: on"), then what
    // the Job adds.
    assert_eq!(args[..8], ["run", "-H", "X-Debug: on", "-c", "30", "-d", "30s", "http://web/"]);
    let at = |flag: &str| args.iter().enumerate().filter(|(_, a)| **a == flag).map(|(i, _)| i).collect::<Vec<_>>();
    let segment = at("--segment");
    assert_eq!(segment.len(), 1, "{args:?}");
    // The same arguments for every pod: each reads its index from JOB_COMPLETION_INDEX.
    assert_eq!(args[segment[0] + 1], "auto/4");
    let start = at("--start-at");
    assert_eq!(start.len(), 1, "{args:?}");
    assert_eq!(args[start[0] + 1], START);
    assert_eq!(args[at("--json")[0] + 1], "/results/agent-{index}.json");
    assert_eq!(agent["env"][0]["name"], "JOB_COMPLETION_INDEX");
    let env: Vec<(&str, &str)> = agent["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| Some((e["name"].as_str()?, e["value"].as_str()?)))
        .collect();
    assert_eq!(
        env,
        [("HAKARU_DONE_FILE", "/results/agent-{index}.done"), ("HAKARU_FAILURE_FILE", "/results/agent-{index}.failed")]
    );

    // The collector (hakaru collect, the same image) waits for the four agents and merges, on the same run
    // directory.
    let collector = pod(&docs, "hakaru-merge");
    let collect = &collector["initContainers"][0];
    assert_eq!(collect["image"], "registry.example/hakaru:0.1.0");
    assert_eq!(
        strings(&collect["args"]),
        ["collect", "/results", "--agents", "4", "--timeout", "21600s", "-o", "/results/merged.json"]
    );
    assert_eq!(collector["volumes"][0]["persistentVolumeClaim"]["claimName"], "hakaru-results");
    assert_eq!(agent["volumeMounts"][0]["subPath"], collector["containers"][0]["volumeMounts"][0]["subPath"]);
    let claim = docs.iter().find(|d| d["kind"] == "PersistentVolumeClaim").unwrap();
    assert_eq!(strings(&claim["spec"]["accessModes"]), ["ReadWriteMany"]);
}

#[test]
fn a_failed_agent_is_seen_by_the_collector_which_merges_the_others_only_when_allowed() {
    // Three agents run for real against the built-in target, with the environment and arguments the manifests give
    // them; agent 1 cannot write its document (its directory is missing), so hakaru refuses to start and writes
    // its failure file. The collector (the manifests' own command) reports it, then refuses or merges the other two
    // as the flag says.
    let target = hakaru::serve::start(hakaru::serve::ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
        ..Default::default()
    })
    .unwrap();
    let url = format!("http://{}/", target.addr());
    for allow in [false, true] {
        let mut args = vec!["--agents", "3"];
        if allow {
            args.push("--allow-partial");
        }
        args.extend(["--", "run", "-c", "3", "-n", "90", url.as_str()]);
        let docs = documents(&manifests(&args));
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().to_str().unwrap();
        let agent = &pod(&docs, "hakaru")["containers"][0];
        let env: Vec<(&str, String)> = agent["env"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| Some((e["name"].as_str()?, e["value"].as_str()?.replace("/results", results))))
            .collect();
        let start = (SystemTime::now() + Duration::from_secs(1)).duration_since(SystemTime::UNIX_EPOCH).unwrap();
        for index in ["0", "1", "2"] {
            let expand = |a: &str| {
                let a = a.replace("/results", results);
                // Agent 1's document cannot be written: its directory is missing.
                if index == "1" { a.replace(results, &format!("{results}/missing")) } else { a }
            };
            let mut argv: Vec<String> = strings(&agent["args"]).iter().map(|a| expand(a)).collect();
            // A start a second ahead rather than the golden START, long past.
            let at = argv.iter().position(|a| a == "--start-at").unwrap() + 1;
            argv[at] = start.as_secs().to_string();
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_hakaru"));
            cmd.args(&argv).envs(env.iter().map(|(n, v)| (n, v))).env("JOB_COMPLETION_INDEX", index);
            let out = cmd.output().unwrap();
            assert_eq!(out.status.success(), index != "1", "agent {index}: {}", String::from_utf8_lossy(&out.stderr));
        }
        let failed = std::fs::read_to_string(dir.path().join("agent-1.failed")).expect("agent 1's failure file");
        assert!(failed.starts_with("exit code 2: output file") && failed.contains("agent-1.json"), "{failed}");
        assert!(dir.path().join("agent-0.done").exists() && dir.path().join("agent-2.done").exists());
        // The collector, as its container runs it.
        let collect = &pod(&docs, "hakaru-merge")["initContainers"][0];
        let argv: Vec<String> = strings(&collect["args"]).iter().map(|a| a.replace("/results", results)).collect();
        let merged = Command::new(env!("CARGO_BIN_EXE_hakaru")).args(&argv).output().unwrap();
        let said = String::from_utf8_lossy(&merged.stderr);
        assert!(said.contains("agent 1/3 failed: exit code 2: output file"), "{said}");
        if !allow {
            assert_eq!(merged.status.code(), Some(1), "{said}");
            assert!(said.contains("--allow-partial"), "{said}");
            continue;
        }
        assert!(merged.status.success(), "{said}");
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("merged.json")).unwrap()).unwrap();
        assert_eq!(doc["missing_segments"], serde_json::json!(["1/3"]));
        assert_eq!(doc["steps"][0]["requests"], 60, "agents 0 and 2 ran 30 requests each");
        assert!(doc["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().starts_with("PARTIAL")));
    }
    target.stop();
}

#[test]
fn the_stdout_mode_prints_each_document_between_marker_lines() {
    let docs = documents(&manifests(&["--agents", "2", "--results-volume", "stdout", "--", "run", "http://web/"]));
    assert_eq!(docs.len(), 1, "no claim and no collector");
    let spec = pod(&docs, "hakaru");
    assert!(spec["volumes"][0]["emptyDir"].is_object());
    let dir = tempfile::tempdir().unwrap();
    let script = strings(&spec["containers"][0]["command"])[2].replace("/results", dir.path().to_str().unwrap());
    std::fs::write(dir.path().join("agent-1.json"), "{\"steps\": []}\n").unwrap();
    let out = Command::new("sh").args(["-c", &script]).env("JOB_COMPLETION_INDEX", "1").output().unwrap();
    let log = String::from_utf8(out.stdout).unwrap();
    let inner: Vec<&str> = log
        .lines()
        .skip_while(|l| *l != hakaru::deploy::k8s::RESULT_BEGIN)
        .skip(1)
        .take_while(|l| *l != hakaru::deploy::k8s::RESULT_END)
        .collect();
    assert_eq!(serde_json::from_str::<Value>(&inner.join("\n")).unwrap(), serde_json::json!({"steps": []}));
}

#[test]
fn the_start_is_the_time_of_printing_plus_start_in() {
    let before = SystemTime::now();
    let out = hakaru(&["k8s", "job", "--agents", "1", "--image", "i", "--start-in", "2m", "--", "run", "http://web/"]);
    assert!(out.status.success());
    let yaml = String::from_utf8(out.stdout).unwrap();
    let line = yaml.lines().skip_while(|l| l.trim() != "- --start-at").nth(1).unwrap();
    let start = humantime::parse_rfc3339(line.trim().trim_start_matches("- ").trim_matches('"')).unwrap();
    let ahead = start.duration_since(before).unwrap();
    assert!(ahead >= Duration::from_secs(119) && ahead <= Duration::from_secs(130), "{ahead:?}");
}

/// Bad input: exit 2, one line on stderr naming what is wrong, nothing on stdout (no half a stream to apply).
fn assert_refused(args: &[&str], says: &str) {
    let out = hakaru(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains(says), "{stderr}");
    assert!(out.stdout.is_empty(), "printed YAML anyway");
}

#[test]
fn a_typo_in_the_agents_command_is_refused_with_exit_2_and_one_line() {
    let base = ["k8s", "job", "--agents", "3", "--image", "i", "--"];
    let with = |tail: &[&'static str]| base.iter().chain(tail).copied().collect::<Vec<&str>>();
    assert_refused(&with(&["run", "--conections", "3", "http://web/"]), "'--conections'");
    assert_refused(&with(&["run", "--conections", "3", "http://web/"]), "'--connections'");
    assert_refused(&with(&["rnu", "http://web/"]), "'rnu'");
    assert_refused(&with(&["kv", "-c", "many", "redis://r:6379"]), "'many'");
    assert_refused(&with(&["serve"]), "give run, sweep or kv");
    assert_refused(&with(&["run", "--json", "x.json", "http://web/"]), "sets --json");
    assert_refused(&with(&["run", "--segment=1/3", "http://web/"]), "sets --segment");
    // A plan the agents cannot split would fail in every pod: refused before any manifest.
    assert_refused(&with(&["run", "-c", "2", "http://web/"]), "2 connection(s) cannot be split over 3 agents");
    assert_refused(&with(&["run", "-n", "2", "http://web/"]), "2 request(s) cannot be split over 3 agents");
    assert_refused(&with(&["sweep", "--clients", "1,4", "http://web/"]), "1 client(s) in a step");
}

#[test]
fn bad_job_flags_are_refused_naming_the_flag() {
    let job = |extra: &[&'static str]| {
        let mut a = vec!["k8s", "job", "--image", "i"];
        a.extend_from_slice(extra);
        a.extend(["--", "run", "http://web/"]);
        a
    };
    assert_refused(&job(&["--agents", "0"]), "--agents 0");
    assert_refused(&job(&["--agents", "2", "--name", "Load_Test"]), "--name 'Load_Test'");
    assert_refused(&job(&["--agents", "2", "--memory", "lots"]), "--memory 'lots'");
    assert_refused(&job(&["--agents", "2", "--start-at", "soon"]), "--start-at 'soon'");
    assert_refused(&job(&["--agents", "2", "--start-in", "5 fortnights"]), "--start-in");
}

#[test]
fn the_manifests_match_the_golden_file() {
    let yaml = manifests(&[
        "--agents",
        "3",
        "--cpu",
        "2",
        "--",
        "run",
        "-c",
        "60",
        "--rate",
        "3000",
        "-d",
        "60s",
        "http://web/",
    ]);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/k8s_job.yaml");
    if std::env::var_os("HAKARU_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &yaml).unwrap();
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run with HAKARU_UPDATE_GOLDEN=1", path.display()));
    assert_eq!(yaml, expected, "differs from {}", path.display());
}

#[test]
fn secrets_go_into_a_secret_the_agents_read_from_their_environment_never_into_args() {
    let yaml = manifests(&[
        "--agents",
        "2",
        "--",
        "run",
        "-c",
        "4",
        "-H",
        "Authorization: Bearer S3CRET-A",
        "-H",
        "Accept: text/plain",
        "http://u:S3CRET-B@web/?token=S3CRET-C",
        "http://web/health",
    ]);
    assert_valid(&yaml);
    let docs = documents(&yaml);
    let secret = docs.iter().find(|d| d["kind"] == "Secret").expect("a Secret");
    let name = secret["metadata"]["name"].as_str().unwrap();
    let held: Vec<String> = serde_json::from_str(secret["stringData"]["args"].as_str().unwrap()).unwrap();
    assert_eq!(held, ["-H", "Authorization: Bearer S3CRET-A", "http://u:S3CRET-B@web/?token=S3CRET-C"]);
    // Only the Secret holds them: not the Jobs' args, not the comment line.
    for d in docs.iter().filter(|d| d["kind"] != "Secret") {
        assert!(!d.to_string().contains("S3CRET"), "{d}");
    }
    assert_eq!(yaml.matches("S3CRET").count(), 3, "{yaml}");
    let agent = &pod(&docs, "hakaru")["containers"][0];
    let args = strings(&agent["args"]);
    assert_eq!(args[..6], ["run", "-H", "Accept: text/plain", "-c", "4", "http://web/health"]);
    let env = agent["env"].as_array().unwrap();
    let from = env.iter().find(|e| e["name"] == "HAKARU_SECRET_ARGS").expect("the variable");
    assert_eq!(from["valueFrom"]["secretKeyRef"]["name"], name);
    assert_eq!(from["valueFrom"]["secretKeyRef"]["key"], "args");
}

#[test]
fn a_scripts_arguments_go_into_the_secret_after_a_secret_url_never_into_args() {
    let yaml = manifests(&[
        "--agents",
        "2",
        "--",
        "run",
        "-s",
        "x.lua",
        "http://web/?token=S3CRET-C",
        "--",
        "user1",
        "S3CRET-P",
    ]);
    assert_valid(&yaml);
    let docs = documents(&yaml);
    let secret = docs.iter().find(|d| d["kind"] == "Secret").expect("a Secret");
    let held: Vec<String> = serde_json::from_str(secret["stringData"]["args"].as_str().unwrap()).unwrap();
    // Appended to the shown arguments, they end the agent's line as they ended the command given.
    assert_eq!(held, ["http://web/?token=S3CRET-C", "--", "user1", "S3CRET-P"]);
    for d in docs.iter().filter(|d| d["kind"] != "Secret") {
        assert!(!d.to_string().contains("S3CRET") && !d.to_string().contains("user1"), "{d}");
    }
    let args = strings(&pod(&docs, "hakaru")["containers"][0]["args"]);
    assert!(!args.contains(&"--"), "{args:?}");
}
