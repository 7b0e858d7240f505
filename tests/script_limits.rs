//! What a script cannot do to a run: hold it with a call that never returns (the step's end and Ctrl-C cut the
//! call, and what was measured is written), crash it with bytecode, panic it with a delay, or (with
//! `--script-sandbox`) reach beyond the load: run commands, write files, end the process, load C code.

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{hakaru, hakaru_with, target, write_in};
use hakaru::serve::ServerHandle;

fn url(t: &ServerHandle) -> String {
    format!("http://{}/", t.addr())
}

/// A script whose `request()` sends `n` requests, then loops forever.
fn loops_after(n: u32) -> String {
    format!(
        "local n = 0\nfunction request()\n  n = n + 1\n  if n > {n} then while true do end end\n  return wrk.format()\nend\n"
    )
}

#[test]
fn a_request_that_never_returns_ends_with_its_step_and_the_result_is_written() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let script = write_in(&dir, "loop.lua", &loops_after(20));
    let started = Instant::now();
    let out = hakaru_with(
        &["run", "-t", "1", "-c", "1", "-d", "2s", "-s", &script, &url(&t)],
        Duration::from_secs(60),
        |_| {},
    );
    // Ended near its duration (the bound is for a busy machine), not at the watchdog.
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The first call was wrk's check before the load: 19 requests sent, then the loop until the step's end.
    assert_eq!(out.step()["requests"], 19, "{}", out.stdout);
    assert!(out.step()["duration_s"].as_f64().unwrap() < 10.0);
}

#[test]
fn ctrl_c_cuts_a_request_that_never_returns_and_the_result_is_written() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let script = write_in(&dir, "loop.lua", &loops_after(20));
    let json = dir.path().join("r.json");
    let child = Command::new(env!("CARGO_BIN_EXE_hakaru"))
        .args(["run", "-q", "-t", "1", "-c", "1", "-d", "10m", "--json", json.to_str().unwrap(), "-s", &script])
        .arg(url(&t))
        .env("HAKARU_DB", dir.path().join("h.db"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Ctrl-C once the 19 requests were answered (the thread is in its loop from then on).
    common::wait_served(t.addr(), 19, Duration::from_secs(30));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    // One Ctrl-C is enough: the run ends by itself well within the bound, or it is killed and the test fails.
    let started = Instant::now();
    let mut child = child;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("one Ctrl-C did not end the run within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(doc["interrupted"], true);
    // The 19 answered, or 18 when the signal came before hakaru had read the 19th answer (then unfinished).
    let requests = doc["steps"][0]["requests"].as_u64().unwrap();
    assert!((18..=19).contains(&requests), "{requests}");
}

#[test]
fn a_call_before_the_load_that_never_returns_is_bad_input_past_the_timeout() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    for (name, text, said) in [
        ("top.lua", "while true do end\n", "the top level"),
        ("init.lua", "function init(args) while true do end end\n", "init()"),
        ("first.lua", "function request() while true do end end\n", "the first request()"),
        ("setup.lua", "function setup(t) while true do end end\n", "setup()"),
    ] {
        let script = write_in(&dir, name, text);
        let started = Instant::now();
        let out = hakaru(&["run", "-c", "1", "-n", "5", "--timeout", "1s", "-s", &script, &url(&t)]);
        assert!(started.elapsed() < Duration::from_secs(30), "{name}: took {:?}", started.elapsed());
        assert_eq!(out.code, 2, "{name}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{name}: {}", out.stderr);
        assert!(out.stderr.contains(said) && out.stderr.contains("ran past --timeout (1s)"), "{name}: {}", out.stderr);
    }
}

#[test]
fn bytecode_is_refused_in_one_line_wherever_it_is_loaded() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    // string.dump's output, its constants bent as a crafted chunk would be: never run.
    let dump = "local b = string.dump(function() return 1 end)\nb = b:sub(1, 8) .. string.rep('\\255', #b - 8)\n";
    // The same bytes in a file, for loadfile, dofile and require.
    std::fs::write(dir.path().join("m.lua"), b"\x1bLJ\x02\x0a\xff\xff\xff\xff").unwrap();
    let m = dir.path().join("m.lua").display().to_string();
    let found = format!("package.path = '{}/?.lua'", dir.path().display());
    for (name, before, call) in [
        ("load.lua", dump, "load(b)".to_string()),
        ("loadstring.lua", dump, "loadstring(b)".to_string()),
        ("loadfile.lua", "", format!("loadfile('{m}')")),
        ("dofile.lua", "", format!("dofile('{m}')")),
        ("require.lua", found.as_str(), "require('m')".to_string()),
    ] {
        let script = write_in(&dir, name, &format!("{before}\nlocal f, why = assert({call})\n"));
        let out = hakaru(&["run", "-c", "1", "-n", "5", "-s", &script, &url(&t)]);
        assert_eq!(out.code, 2, "{name}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{name}: {}", out.stderr);
        assert!(out.stderr.contains("bytecode is refused"), "{name}: {}", out.stderr);
    }
    // The script itself as bytecode.
    let path = dir.path().join("dumped.lua");
    std::fs::write(&path, b"\x1bLJ\x02\x0areturn 1").unwrap();
    let out = hakaru(&["run", "-c", "1", "-n", "5", "-s", path.to_str().unwrap(), &url(&t)]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("bytecode is refused"), "{}", out.stderr);
}

#[test]
fn a_delay_too_long_or_negative_is_a_script_error_not_a_panic() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    for (value, shown) in [("1e300", "delay() returned 1e300"), ("-5", "delay() returned -5"), ("3600001", "3600001")] {
        let script = write_in(&dir, "delay.lua", &format!("function delay()\n  return {value}\nend\n"));
        let out = hakaru(&["run", "-c", "1", "-d", "5s", "-s", &script, &url(&t)]);
        assert_eq!(out.code, 2, "{value}: {}", out.stderr);
        assert!(!out.stderr.contains("panicked"), "{value}: {}", out.stderr);
        let warned = out.doc()["warnings"].to_string();
        assert!(warned.contains(shown) && warned.contains("delay.lua line 1"), "{value}: {warned}");
    }
}

#[test]
fn the_sandbox_removes_what_reaches_beyond_the_load_and_keeps_reading() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "kept").unwrap();
    let v = victim.display().to_string();
    for (name, call, said) in [
        ("execute.lua", "os.execute('true')".to_string(), "os.execute is removed by --script-sandbox"),
        ("popen.lua", "io.popen('true')".to_string(), "io.popen is removed"),
        ("write.lua", format!("io.open('{v}', 'w')"), "opens files for reading only"),
        ("append.lua", format!("io.open('{v}', 'a+')"), "opens files for reading only"),
        ("output.lua", format!("io.output('{v}')"), "writes no files"),
        ("remove.lua", format!("os.remove('{v}')"), "os.remove is removed"),
        ("rename.lua", format!("os.rename('{v}', '{v}2')"), "os.rename is removed"),
        ("exit.lua", "os.exit(0)".to_string(), "os.exit is removed"),
        ("loadlib.lua", "package.loadlib('libc.so.6', 'puts')".to_string(), "package.loadlib is removed"),
        (
            "cmodule.lua",
            "package.cpath = '/usr/lib/x86_64-linux-gnu/lua/5.1/?.so' require('lpeg')".to_string(),
            "module 'lpeg' not found",
        ),
    ] {
        let script = write_in(&dir, name, &format!("{call}\n"));
        let out = hakaru(&["run", "-c", "1", "-n", "5", "--script-sandbox", "-s", &script, &url(&t)]);
        assert_eq!(out.code, 2, "{name}: {}", out.stderr);
        assert!(out.stderr.contains(&format!("{name} line 1")) && out.stderr.contains(said), "{name}: {}", out.stderr);
        // Without the sandbox the same call runs (Lua is not a sandbox): shown for the harmless ones.
        if name == "output.lua" {
            let out = hakaru(&["run", "-c", "1", "-n", "5", "-s", &script, &url(&t)]);
            assert_eq!(out.code, 0, "{name} without the sandbox: {}", out.stderr);
        }
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "", "io.output truncated it without the sandbox");
    std::fs::write(&victim, "kept").unwrap();
    // Reading stays: a file, a Lua module, printing.
    let module = write_in(&dir, "helper.lua", "return { path = '/read' }\n");
    let _ = module;
    let reads = write_in(
        &dir,
        "reads.lua",
        &format!(
            "local f = assert(io.open('{v}')) local text = f:read('*a') f:close()\n\
             package.path = '{}/?.lua'\nlocal h = require('helper')\n\
             assert(text == 'kept' and h.path == '/read')\nio.write('')\n",
            dir.path().display()
        ),
    );
    let out = hakaru(&["run", "-c", "1", "-n", "5", "--script-sandbox", "-s", &reads, &url(&t)]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "kept");
}

#[test]
fn the_help_and_the_docs_say_lua_is_not_a_sandbox_and_offer_one() {
    for command in ["run", "sweep", "capacity"] {
        let help = hakaru(&[command, "--help"]).stdout;
        let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("Lua is not a sandbox") && flat.contains("--script-sandbox"), "{command}: {help}");
    }
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/scripting.md")).unwrap();
    assert!(docs.contains("## Lua is not a sandbox") && docs.contains("--script-sandbox"));
}
