//! The live dashboard, in a real terminal: hakaru runs in tmux (Debian's package) at a known size, the tests read
//! the screen with `capture-pane`, press `q` as a user would, and check what the screen showed against the result
//! document. Every wait is for something on the screen or for the pane's end, with a generous bound.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::target;

/// The longest wait for the screen to show something.
const LIMIT: Duration = Duration::from_secs(60);

/// A tmux server of its own (its own socket, no user configuration) running one pane, killed when dropped.
struct Tmux {
    socket: String,
    dir: tempfile::TempDir,
}

impl Tmux {
    /// `hakaru args` in a `width` x `height` terminal, its history in a database of its own.
    fn run(width: u16, height: u16, args: &[&str]) -> Tmux {
        static N: AtomicUsize = AtomicUsize::new(0);
        let socket = format!("hakaru-test-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
        let dir = tempfile::tempdir().unwrap();
        let t = Tmux { socket, dir };
        let (w, h) = (width.to_string(), height.to_string());
        t.tmux(&["-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", &w, "-y", &h]);
        // The pane stays when hakaru ends, so its exit status and the text it left can be read.
        t.tmux(&["set-option", "-t", "t", "remain-on-exit", "on"]);
        let mut line =
            format!("env HAKARU_DB={} {}", t.dir.path().join("h.db").display(), env!("CARGO_BIN_EXE_hakaru"));
        for a in args {
            line.push_str(&format!(" '{a}'"));
        }
        // The exit status written by the shell: tmux may mark a pane dead before it knows the status.
        line.push_str(&format!("; echo $? > {}", t.dir.path().join("exit").display()));
        t.tmux(&["respawn-pane", "-k", "-t", "t", &line]);
        t
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux is installed (scripts/test.sh installs Debian's package)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "t"])
    }

    /// Waits until the screen holds every one of `texts`; returns that screen.
    fn wait_for_screen(&self, texts: &[&str]) -> String {
        self.wait_until(|screen| texts.iter().all(|t| screen.contains(t)))
    }

    /// Waits until `ready` holds of the screen; returns that screen (or fails showing the last one).
    fn wait_until(&self, ready: impl Fn(&str) -> bool) -> String {
        let start = std::time::Instant::now();
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return screen;
            }
            assert!(start.elapsed() < LIMIT, "the screen is still not as awaited after {LIMIT:?}:\n{screen}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for hakaru to end; its exit status.
    fn exit_status(&self) -> i32 {
        let path = self.dir.path().join("exit");
        let start = std::time::Instant::now();
        loop {
            if let Some(code) = std::fs::read_to_string(&path).ok().and_then(|s| s.trim().parse().ok()) {
                return code;
            }
            assert!(start.elapsed() < LIMIT, "hakaru has not ended after {LIMIT:?}:\n{}", self.screen());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}

/// The number after `label` on the screen (`│completed 1234`: the panel's line, not a chart's title).
fn figure(screen: &str, label: &str) -> u64 {
    let at = screen.find(label).unwrap_or_else(|| panic!("'{label}' is not on the screen:\n{screen}")) + label.len();
    screen[at..].chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap()
}

fn document(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A run until `q`, in a terminal of `width` x `height`: every part of the dashboard is drawn, the figures it shows
/// are at most the document's (taken earlier), `q` stops the load as Ctrl-C does (exit 130, the document kept and
/// marked), and the summary replaces the dashboard.
fn a_run_is_drawn_and_stopped_with_q(width: u16, height: u16) {
    let t = target();
    let url = format!("http://{}/?delay=1ms", t.addr());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let json_arg = json.display().to_string();
    let tmux = Tmux::run(width, height, &["run", &url, "-d", "120s", "-c", "2", "--rate", "100", "--json", &json_arg]);
    // Wait for a few windows: the charts and the histogram have something to draw.
    let screen = tmux.wait_until(|s| s.contains("│completed ") && figure(s, "│completed ") >= 200);
    for part in [
        "hakaru run",
        "requests/s",
        "latency: p50",
        "latency so far",
        "statuses and errors",
        "requests so far",
        "hakaru CPU",
        "first byte p99 ",
        "q or Ctrl-C",
    ] {
        assert!(screen.contains(part), "{width}x{height}: no '{part}':\n{screen}");
    }
    for line in screen.lines() {
        assert!(line.chars().count() <= width as usize, "a line wider than the terminal:\n{screen}");
    }
    let shown = figure(&screen, "│completed ");
    let shown_200 = figure(&screen, "status 200: ");
    tmux.tmux(&["send-keys", "-t", "t", "q"]);
    assert_eq!(tmux.exit_status(), 130, "{}", tmux.screen());
    let doc = document(&json);
    assert_eq!(doc["interrupted"], true);
    let step = &doc["steps"][0];
    assert!(step["requests"].as_u64().unwrap() >= shown, "shown {shown}, document {step}");
    assert!(step["status"]["200"].as_u64().unwrap() >= shown_200);
    // The dashboard is gone and the summary is on the screen, with the stop said.
    let after = tmux.wait_for_screen(&["stopped by Ctrl-C (SIGINT)"]);
    assert!(!after.contains("q or Ctrl-C: stop"), "the dashboard is still there:\n{after}");
}

#[test]
fn a_run_in_80x24_is_drawn_whole_and_q_stops_it_as_ctrl_c() {
    a_run_is_drawn_and_stopped_with_q(80, 24);
}

#[test]
fn a_run_in_200x60_is_drawn_whole_and_q_stops_it_as_ctrl_c() {
    a_run_is_drawn_and_stopped_with_q(200, 60);
}

/// Between two steps of a sweep the dashboard shows the finished step's own figures: exactly the document's.
#[test]
fn a_sweeps_finished_step_shows_the_documents_figures_during_the_pause() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("s.json").display().to_string();
    let tmux =
        Tmux::run(120, 40, &["sweep", "--clients", "1,2", "-d", "2s", "--interval", "120s", "--json", &json, &url]);
    // The finished step's whole frame: tmux may be read between the header's cells and the figures' (a frame is
    // drawn as changed cells, in several writes), so the figures are read once two reads agree.
    let screen = tmux.wait_until(|screen| {
        screen.contains("pause before the next step") && screen.contains("100 %") && *screen == tmux.screen()
    });
    let (shown, shown_200) = (figure(&screen, "│completed "), figure(&screen, "status 200: "));
    // The sweep's table row, said under the dashboard, is shown on it.
    assert!(screen.contains("warnings and steps"), "{screen}");
    tmux.tmux(&["send-keys", "-t", "t", "C-c"]);
    assert_eq!(tmux.exit_status(), 130, "{}", tmux.screen());
    let doc = document(Path::new(&json));
    let step = &doc["steps"][0];
    assert_eq!(doc["steps"].as_array().unwrap().len(), 1, "the pause was cut short: {doc}");
    assert_eq!(step["requests"].as_u64(), Some(shown), "{screen}");
    assert_eq!(step["status"]["200"].as_u64(), Some(shown_200), "{screen}");
}

/// A duration as the dashboard shows it (`900us`, `52.00ms`, `1.20s`) after `label`, in milliseconds; None for `-`.
fn millis(screen: &str, label: &str) -> Option<f64> {
    let at = screen.find(label).unwrap_or_else(|| panic!("'{label}' is not on the screen:\n{screen}")) + label.len();
    let text: String = screen[at..].chars().take_while(|c| !c.is_whitespace()).collect();
    let (number, scale) = [("ms", 1.0), ("us", 1e-3), ("s", 1e3)]
        .iter()
        .find_map(|(unit, scale)| Some((text.strip_suffix(unit)?.parse::<f64>().ok()?, *scale)))?;
    Some(number * scale)
}

/// A token stream's run shows, for its last window, the p99 of the time to first byte and to first token, and the
/// tokens a second.
#[test]
fn a_token_streams_run_shows_its_first_token_and_tokens_per_second() {
    let t = target();
    // Each answer: its head at once, its first token 40 ms after the request, then 5 more 2 ms apart.
    let url = format!("http://{}/?events=6&gap=2ms&first=40ms&kind=tokens", t.addr());
    let tmux = Tmux::run(100, 30, &["run", &url, "-d", "120s", "-c", "2", "--events", "tokens"]);
    let screen = tmux.wait_until(|s| {
        s.contains("tokens/s ")
            && !s.contains("tokens/s -")
            && figure(s, "tokens/s ") > 0
            && millis(s, "first token p99 ").is_some()
            && millis(s, "first byte p99 ").is_some()
    });
    let (first_token, first_byte) =
        (millis(&screen, "first token p99 ").unwrap(), millis(&screen, "first byte p99 ").unwrap());
    assert!(first_token >= 39.5, "the server waits 40 ms before the first token: {first_token} ms\n{screen}");
    // Every answer's head comes before its first token, so the window's p99s are in that order.
    assert!(first_byte <= first_token, "first byte {first_byte} ms, first token {first_token} ms\n{screen}");
    tmux.tmux(&["send-keys", "-t", "t", "q"]);
    assert_eq!(tmux.exit_status(), 130, "{}", tmux.screen());
}

/// `--no-tui` keeps the progress line.
#[test]
fn no_tui_shows_the_progress_line() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let tmux = Tmux::run(100, 30, &["run", &url, "-d", "120s", "-c", "1", "--rate", "50", "--no-tui"]);
    let screen = tmux.wait_for_screen(&["req/s now"]);
    assert!(!screen.contains("q or Ctrl-C"), "{screen}");
    tmux.tmux(&["send-keys", "-t", "t", "C-c"]);
    assert_eq!(tmux.exit_status(), 130);
}
