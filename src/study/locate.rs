//! Where in the study file a key is written (`Locator`: file, line and column for a check made after parsing), and
//! toml's and serde's errors as one line with the key and its fix (`serde_error`: the nearest known key for a
//! misspelt one, an example for a wrong type).

use std::path::Path;

use crate::error::CliError;

/// Finds keys in the study file's text, so that a check made after parsing still names the line and column.
pub(super) struct Locator<'a> {
    pub(super) path: &'a Path,
    pub(super) text: &'a str,
}

impl Locator<'_> {
    /// `FILE:LINE:COL: what` where the key at `key_path` (`["target", "1", "url"]`) is written; the file alone
    /// when the key is not found (a default value).
    pub(super) fn error(&self, key_path: &[&str], what: &str) -> CliError {
        let place = self.offset(key_path).map(|o| {
            let (l, c) = line_col(self.text, o);
            format!(":{l}:{c}")
        });
        CliError::new(format!("{}{}: {what}", self.path.display(), place.unwrap_or_default()))
    }

    fn offset(&self, key_path: &[&str]) -> Option<usize> {
        let root = toml::de::DeTable::parse(self.text).ok()?;
        let mut table = root.get_ref();
        let mut best = None;
        let mut segs = key_path.iter().peekable();
        while let Some(seg) = segs.next() {
            let (k, v) = table.iter().find(|(k, _)| k.get_ref().as_ref() == *seg)?;
            best = Some(k.span().start);
            let mut value = v;
            // An array of tables: the next segment is its index.
            if let Some(arr) = value.get_ref().as_array() {
                let i: usize = segs.peek()?.parse().ok()?;
                segs.next();
                value = arr.get(i)?;
                best = Some(value.span().start);
            }
            match value.get_ref().as_table() {
                Some(t) => table = t,
                None => break,
            }
        }
        best
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub(super) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// The header (`[load]`, `[[target]]`) of the table the byte offset is in.
pub(super) fn table_at(text: &str, offset: usize) -> String {
    // The lines before the one that holds the offset: a table header there (`[[workloads]]`) is a key of the top
    // level, not the table it names.
    let line_start = text[..offset.min(text.len())].rfind('\n').map_or(0, |i| i + 1);
    if text[line_start..].trim_start().starts_with('[') {
        return "the top level".into();
    }
    let before = &text[..line_start];
    before
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('[') && !l.contains('='))
        .map(|l| l.split('#').next().unwrap_or(l).trim().to_string())
        .unwrap_or_else(|| "the top level".into())
}

/// Levenshtein's distance between two keys (short ASCII words: the plain table is enough).
pub(super) fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (prev + usize::from(ca != cb)).min(row[j] + 1).min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// An example of each key, for the fix of a wrong type.
pub(super) fn example(key: &str) -> &'static str {
    match key {
        "name" => "name = \"fast\"",
        "description" => "description = \"what this study compares\"",
        "url" => "url = \"http://127.0.0.1:8080\"",
        "urls" => "urls = [\"http://127.0.0.1:8080\", \"http://127.0.0.1:8081\"]",
        "start" => "start = \"$HAKARU serve --listen 127.0.0.1:8080\"",
        "stop" => "stop = \"pkill -f my-server\"",
        "ready" => "ready = \"127.0.0.1:8080\"",
        "ready_timeout" => "ready_timeout = \"10s\"",
        "monitor" => "monitor = [\"port:8080\"]",
        "probe" => "probe = [\"http://127.0.0.1:8080/status#/1/cache_hits\"]",
        "path" => "path = \"/api?key=1\"",
        "paths" => "paths = [\"/a\", \"/b\"]",
        "method" => "method = \"POST\"",
        "headers" => "headers = [\"Accept: application/json\"]",
        "insecure" => "insecure = true",
        "http2" => "http2 = true",
        "http3" => "http3 = true",
        "streams" => "streams = 16",
        "proxy" => "proxy = \"http://127.0.0.1:3128\"",
        "cacert" => "cacert = \"ca.pem\"",
        "cert" => "cert = \"client.pem\"",
        "key" => "key = \"client.key\"",
        "tls_version" => "tls_version = \"1.3\"",
        "sni" => "sni = \"api.example.com\"",
        "tls_resume" => "tls_resume = false",
        "zero_rtt" => "zero_rtt = true",
        "connect_to" => "connect_to = [\"api.example.com:443:127.0.0.1:8443\"]",
        "max_requests_per_connection" => "max_requests_per_connection = 100",
        "connection_rate" => "connection_rate = 100",
        "unix_socket" => "unix_socket = \"/run/app.sock\"",
        "proto" => "proto = \"hello.proto\"",
        "protoset" => "protoset = \"hello.protoset\"",
        "import_path" => "import_path = [\"protos\"]",
        "call" => "call = \"helloworld.Greeter/SayHello\"",
        "body" => "body = \"{}\"",
        "body_file" => "body_file = \"body.json\"",
        "message" => "message = \"{\\\"n\\\":{{seq}}}\"",
        "ws_mode" => "ws_mode = \"listen\"",
        "patterns" => "patterns = \"patterns.json\"",
        "script" => "script = \"counter.lua\"",
        "script_args" => "script_args = [\"user1\"]",
        "data" => "data = \"users.csv\"",
        "data_order" => "data_order = \"unique\"",
        "events" => "events = \"tokens\"",
        "events_until" => "events_until = \"[DONE]\"",
        "goodput" => "goodput = \"ttft:200ms,tpot:50ms\"",
        "mix" => "mix = \"get:90,set:10\"",
        "keys" => "keys = 1000",
        "value_size" => "value_size = 20480",
        "key_prefix" => "key_prefix = \"key:\"",
        "command" => "command = [\"SET user:{{id}} {{name}}\"]",
        "command_ratio" => "command_ratio = [9.0, 1.0]",
        "redis_script" => "redis_script = \"busy.lua\"",
        "replay" => "replay = \"access.log\"",
        "replay_writes" => "replay_writes = true",
        "replay_speed" => "replay_speed = 2.0",
        "connections" => "connections = 10",
        "duration" => "duration = \"2s\"",
        "requests" => "requests = 1000",
        "rate" => "rate = 500",
        "clients" => "clients = [1, 2, 4]",
        "rates" => "rates = [100, 200, 400]",
        "interval" => "interval = \"1s\"",
        "stages" => "stages = \"30s:10,1m:100,30s:0\"",
        "rate_stages" => "rate_stages = \"30s:100,2m:5000\"",
        "warmup" => "warmup = \"1s\"",
        "repeat" => "repeat = 5",
        "pause" => "pause = \"1s\"",
        "threads" => "threads = 2",
        "timeout" => "timeout = \"5s\"",
        "seed" => "seed = 42",
        "arrival" => "arrival = \"poisson\"",
        "before" => "before = \"redis-cli -p 6379 flushall\"",
        "restart" => "restart = true",
        "target" => "[[target]] (a table per target)",
        "workload" => "[[workload]] (a table per workload)",
        "phase" => "[[phase]] (a table per phase)",
        "load" => "[load] (one table)",
        _ => "",
    }
}

/// toml's and serde's error as one line: file, line, column, the key, and the fix.
pub(super) fn serde_error(path: &Path, text: &str, e: &toml::de::Error) -> CliError {
    let message = e.message().trim().replace('\n', " ");
    let offset = e.span().map(|s| s.start).unwrap_or(0);
    let (line, col) = line_col(text, offset);
    let place = format!("{}:{line}:{col}", path.display());
    let table = table_at(text, offset);
    // serde names the key between backticks in "unknown field `x`" and "missing field `x`".
    let quoted = message.split('`').nth(1).map(str::to_string);
    if let Some(rest) = message.strip_prefix("unknown field") {
        let key = quoted.unwrap_or_default();
        let expected = rest.split_once("expected").map(|(_, e)| e.replace('`', "").trim().to_string());
        let known: Vec<String> = expected
            .as_deref()
            .map(|e| e.trim_start_matches("one of ").split(',').map(|k| k.trim().to_string()).collect())
            .unwrap_or_default();
        let keys = expected
            .map(|e| format!(" (the keys of {table}: {})", e.trim_start_matches("one of ").trim()))
            .unwrap_or_default();
        // The nearest known key, when one is a slip away (`workloads` -> `workload`).
        let fix = match known.iter().map(|k| (edit_distance(&key, k), k)).filter(|(d, _)| *d <= 2).min() {
            Some((_, k)) => format!("did you mean '{k}'?"),
            None => "remove it or correct its spelling".to_string(),
        };
        let at = if table == "the top level" { "at the top level".to_string() } else { format!("in {table}") };
        return CliError::new(format!("{place}: unknown key '{key}' {at}{keys}: {fix}"));
    }
    if message.starts_with("missing field") {
        let key = quoted.unwrap_or_default();
        let fix = match example(&key) {
            "" => format!("add {key}"),
            ex => format!("add {ex}"),
        };
        return CliError::new(format!("{place}: key '{key}' is missing in {table}: {fix}"));
    }
    if ["invalid type", "invalid value", "invalid length"].iter().any(|p| message.starts_with(p)) {
        // The key is what stands before '=' on the line of the wrong value.
        let line_text = text.lines().nth(line - 1).unwrap_or("");
        let key = line_text.split_once('=').map(|(k, _)| k.trim().trim_matches('"').to_string()).unwrap_or_default();
        let key = key.rsplit('.').next().unwrap_or(&key).to_string();
        let fix = match example(&key) {
            "" => "give it the type the message names".to_string(),
            ex => format!("write it as {ex}"),
        };
        return CliError::new(format!("{place}: key '{key}' in {table} has the wrong type ({message}): {fix}"));
    }
    CliError::new(format!("{place}: {message}: fix the TOML syntax there"))
}
