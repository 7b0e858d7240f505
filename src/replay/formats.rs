//! Access-log lines read into records: nginx's and Apache's combined (and common) format, and JSON lines with a
//! time, a method and a path. Each reader says why a line is not one of its records, for the caller to count or
//! to quote.

use super::Record;
use super::time::{log_time, rfc3339};

/// Which reader a file takes.
#[derive(Clone, Debug, PartialEq)]
pub enum Format {
    /// `IP - user [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 2326 "ref" "agent"` (and the common format,
    /// the same without the last two fields).
    Combined,
    /// `{"time": ..., "method": "GET", "path": "/a"}` a line.
    JsonLines,
    /// HAR 1.2 (`log.entries[]`), one document.
    Har,
    /// A custom nginx `log_format`, given as its definition.
    Custom(std::sync::Arc<super::log_format::LogFormat>),
}

impl Format {
    /// `--replay-format`: a format's name, or a `log_format` definition (it holds a `$variable`).
    pub fn from_flag(text: &str) -> Result<Format, String> {
        if text.contains('$') {
            return super::log_format::LogFormat::parse(text).map(|f| Format::Custom(std::sync::Arc::new(f)));
        }
        Format::parse(text).ok_or_else(|| "give combined, jsonl, har or an nginx log_format definition".into())
    }

    pub fn parse(name: &str) -> Option<Format> {
        match name {
            "combined" | "common" | "nginx" | "apache" => Some(Format::Combined),
            "jsonl" | "json" => Some(Format::JsonLines),
            "har" => Some(Format::Har),
            _ => None,
        }
    }

    /// The format of a file of lines, from its first line that is not blank (a HAR is told by its name, `.har`,
    /// or by `--replay-format har`).
    pub fn sniff(first: &str) -> Format {
        if first.trim_start().starts_with('{') { Format::JsonLines } else { Format::Combined }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Format::Combined => "combined",
            Format::JsonLines => "jsonl",
            Format::Har => "har",
            Format::Custom(_) => "log_format",
        }
    }

    /// One line as a record, or why not (a HAR is one document: read by `har.rs`).
    pub fn read(&self, line: &str) -> Result<Record, String> {
        match self {
            Format::Combined => combined(line),
            Format::JsonLines | Format::Har => json_line(line),
            Format::Custom(f) => f.read(line),
        }
    }
}

fn combined(line: &str) -> Result<Record, String> {
    let open = line.find('[').ok_or("no [time]: not the combined or common log format")?;
    let close = open + line[open..].find(']').ok_or("no ']' after the time")?;
    let at_us = log_time(&line[open + 1..close]).ok_or("its time is not like 10/Oct/2000:13:55:36 -0700")?;
    let rest = &line[close + 1..];
    let q1 = rest.find('"').ok_or("no \"request\" after the time")?;
    let q2 = q1 + 1 + rest[q1 + 1..].find('"').ok_or("the request's quote is not closed")?;
    let request = &rest[q1 + 1..q2];
    let mut words = request.split(' ');
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    if method.is_empty() || !target.starts_with('/') {
        return Err(format!("the request \"{}\" is not METHOD /path", crate::base::secrets::excerpt(request)));
    }
    let status = rest[q2 + 1..].split_whitespace().next().and_then(|s| s.parse::<u16>().ok());
    let (method, path) = (method.to_ascii_uppercase(), target.to_string());
    Ok(Record { at_us, method, path, body: None, status, headers: Vec::new(), host: None })
}

#[derive(serde::Deserialize)]
struct JsonRecord {
    #[serde(alias = "timestamp", alias = "ts", alias = "@timestamp")]
    time: serde_json::Value,
    #[serde(default)]
    method: Option<String>,
    #[serde(alias = "url", alias = "uri", alias = "request_uri")]
    path: Option<String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    status: Option<u16>,
    /// The recorded host (`--keep-host` sends it); a whole URL's host when this is absent.
    #[serde(default)]
    host: Option<String>,
}

/// A JSON time: epoch seconds (a fraction allowed), milliseconds, microseconds or nanoseconds told by size, or
/// RFC 3339 text with its zone (`Z` or `+02:00`: nginx's `$time_iso8601`).
fn json_time(v: &serde_json::Value) -> Option<i64> {
    match v {
        serde_json::Value::Number(n) => {
            let x = n.as_f64()?;
            let us = match x.abs() {
                a if a < 1e11 => x * 1e6,
                a if a < 1e14 => x * 1e3,
                a if a < 1e17 => x,
                _ => x / 1e3,
            };
            (us.is_finite() && us.abs() < 1e18).then_some(us as i64)
        }
        serde_json::Value::String(s) => rfc3339(s),
        _ => None,
    }
}

fn json_line(line: &str) -> Result<Record, String> {
    let r: JsonRecord = serde_json::from_str(line)
        .map_err(|e| format!("column {}: {}", e.column(), crate::base::secrets::json_reason(&e)))?;
    let at_us = json_time(&r.time)
        .ok_or("its \"time\" is neither epoch seconds, milliseconds or microseconds nor RFC 3339 text")?;
    let path = r.path.ok_or("no \"path\" (or \"url\")")?;
    // A whole URL's host is the recorded one: the target's replaces it. Only a URL's: a path whose query holds
    // `://` (`/login?next=https://...`) is a path.
    let lower = path.get(..8).unwrap_or(&path).to_ascii_lowercase();
    let mut host = r.host.as_deref().and_then(super::clean_host);
    let path = match lower.starts_with("http://") || lower.starts_with("https://") {
        true => {
            let rest = &path[path.find("://").map_or(0, |i| i + 3)..];
            let end = rest.find(['/', '?']).unwrap_or(rest.len());
            // The URL's authority less any user:password@ (never sent as a Host).
            let authority = &rest[..end];
            host = host.or_else(|| super::clean_host(authority));
            match rest.find(['/', '?']) {
                Some(i) if rest.as_bytes()[i] == b'?' => format!("/{}", &rest[i..]),
                Some(i) => rest[i..].to_string(),
                None => "/".to_string(),
            }
        }
        false => path,
    };
    if !path.starts_with('/') {
        return Err(format!("the path \"{}\" does not start with /", crate::base::secrets::excerpt(&path)));
    }
    // A record with a body and no method was no GET: taken as a POST (so left out unless writes are asked).
    let method = match (r.method, &r.body) {
        (Some(m), _) => m.to_ascii_uppercase(),
        (None, Some(_)) => "POST".into(),
        (None, None) => "GET".into(),
    };
    Ok(Record { at_us, method, path, body: r.body, status: r.status, headers: Vec::new(), host })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combined_and_common_lines_give_their_time_request_and_status() {
        let r = Format::Combined
            .read(
                r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif?a=1 HTTP/1.0" 200 2326 "-" "ua""#,
            )
            .unwrap();
        // 2000-10-10T20:55:36Z.
        assert_eq!(r.at_us, 971_211_336_000_000);
        assert_eq!((r.method.as_str(), r.path.as_str(), r.status), ("GET", "/apache_pb.gif?a=1", Some(200)));
        let r = Format::Combined.read(r#"::1 - - [01/Jan/2026:00:00:00 +0000] "POST /x HTTP/1.1" 201 0"#).unwrap();
        assert_eq!((r.at_us, r.method.as_str(), r.status), (1_767_225_600_000_000, "POST", Some(201)));
        for (bad, says) in [
            ("hello", "no [time]"),
            (r#"1 - - [32/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 1"#, "its time"),
            (r#"1 - - [01/Jan/300000000000:00:00:00 +0000] "GET / HTTP/1.1" 200 1"#, "its time"),
            (r#"1 - - [10/Oct/2000:13:55:36 -0700] "-" 400 0"#, "is not METHOD /path"),
        ] {
            assert!(Format::Combined.read(bad).unwrap_err().contains(says), "{bad}");
        }
    }

    #[test]
    fn json_lines_take_epoch_times_of_any_unit_and_rfc3339() {
        let at = |t: &str| Format::JsonLines.read(&format!(r#"{{"time":{t},"path":"/a"}}"#)).unwrap().at_us;
        assert_eq!(at("1767225600.5"), 1_767_225_600_500_000);
        assert_eq!(at("1767225600500"), 1_767_225_600_500_000);
        assert_eq!(at("1767225600500000"), 1_767_225_600_500_000);
        assert_eq!(at(r#""2026-01-01T00:00:00.5Z""#), 1_767_225_600_500_000);
        assert_eq!(at("1767225600500000000"), 1_767_225_600_500_000);
        assert_eq!(at(r#""2026-01-01T02:00:00.5+02:00""#), 1_767_225_600_500_000);
        assert_eq!(at(r#""2025-12-31T23:00:00.5-01:00""#), 1_767_225_600_500_000);
        assert!(Format::JsonLines.read(r#"{"time":"2026-01-01T00:00:00","path":"/"}"#).is_err(), "no zone");
        let r = Format::JsonLines.read(r#"{"time":1,"path":"/login?next=https://x.example/home&token=t"}"#).unwrap();
        assert_eq!(r.path, "/login?next=https://x.example/home&token=t");
        let r = Format::JsonLines.read(r#"{"time":1,"url":"HTTPS://h.example?q=1"}"#).unwrap();
        assert_eq!(r.path, "/?q=1");
        let r = Format::JsonLines.read(r#"{"time":1,"path":"/f","body":"x"}"#).unwrap();
        assert_eq!(r.method, "POST", "a body without a method is a write's");
        assert_eq!(Format::JsonLines.read(r#"{"time":1,"path":"/","method":"get"}"#).unwrap().method, "GET");
        let r = Format::JsonLines
            .read(r#"{"ts":1,"method":"PUT","url":"https://old.example/k?v=1","body":"x","status":204}"#)
            .unwrap();
        assert_eq!((r.method.as_str(), r.path.as_str(), r.body.as_deref()), ("PUT", "/k?v=1", Some("x")));
        assert_eq!(r.host.as_deref(), Some("old.example"), "a whole URL's host is the recorded one");
        let r = Format::JsonLines.read(r#"{"time":1,"path":"/","host":"api.example"}"#).unwrap();
        assert_eq!(r.host.as_deref(), Some("api.example"));
        let r = Format::JsonLines.read(r#"{"time":1,"url":"http://u:pw@h.example:81/"}"#).unwrap();
        assert_eq!(r.host.as_deref(), Some("h.example:81"), "no credentials in a host");
        assert!(Format::JsonLines.read(r#"{"time":"yesterday","path":"/"}"#).unwrap_err().contains("\"time\""));
        assert!(Format::JsonLines.read(r#"{"time":1}"#).unwrap_err().contains("no \"path\""));
        assert!(Format::JsonLines.read("{").unwrap_err().starts_with("column "));
    }
}
