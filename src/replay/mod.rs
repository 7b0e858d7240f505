//! Recorded traffic read for replay (`run --replay FILE`): the records of an access log kept in time order, those
//! that change data left out unless asked, filtered, and their schedule: each record's offset from the first, over
//! `--speed`, idle gaps capped. The plan makes the records requests to the target and the schedule the open loop's
//! slots, so each request leaves at its recorded offset from one absolute start (never a sleep between records
//! added up) and its latency counts from that instant.

pub mod formats;
mod har;
mod log_format;
pub mod monitor;
mod time;

use std::io::BufReader;
use std::path::Path;

pub use formats::Format;

/// One recorded request.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// Microseconds since the Unix epoch.
    pub at_us: i64,
    pub method: String,
    /// The path and query, as recorded (the host is the target's).
    pub path: String,
    pub body: Option<String>,
    /// The recorded answer's status, when the log has it (for `--replay-only status=`).
    pub status: Option<u16>,
    /// Headers as recorded (a HAR's), the connection's own left out.
    pub headers: Vec<(String, String)>,
    /// The recorded host (a HAR's: its entries may be of several sites); None when the log names none.
    pub host: Option<String>,
}

/// The longest line read: a request line past it is no access log's.
const MOST_LINE: u64 = 1 << 20;
/// The most records one replay holds: each becomes a prepared request (about 300 bytes).
pub const MOST_RECORDS: usize = 1_000_000;

/// Which records are replayed (`--replay-only`, `--replay-writes`).
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub methods: Vec<String>,
    pub path_prefixes: Vec<String>,
    /// Status codes, or classes as their first digit (2 for 2xx).
    pub statuses: Vec<(u16, bool)>,
    /// Methods that change data (POST, PUT, PATCH, DELETE ...) are replayed too.
    pub writes: bool,
    /// Recorded hosts to replay (`host=`); a HAR without one replays its first entry's host alone.
    pub hosts: Vec<String>,
    /// A time window of the log (`--replay-from`, `--replay-until`): from inclusive, until exclusive.
    pub from: Option<When>,
    pub until: Option<When>,
}

/// A time of the log: an instant (microseconds since the epoch) or an offset from its first record.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum When {
    At(i64),
    After(u64),
}

impl When {
    /// RFC 3339 text with its zone, or a duration (`90s`, `10m`).
    pub fn parse(text: &str) -> Result<When, String> {
        if let Some(at) = time::rfc3339(text) {
            return Ok(When::At(at));
        }
        match humantime::parse_duration(text.trim()) {
            Ok(d) => Ok(When::After(d.as_micros().min(u64::MAX as u128) as u64)),
            Err(_) => {
                Err("give an instant of the log (2026-12-07T10:00:00Z) or an offset from its first record (10m)".into())
            }
        }
    }

    /// Its instant in a log whose first record is at `first` (microseconds).
    fn instant(self, first: i64) -> i64 {
        match self {
            When::At(t) => t,
            When::After(us) => first.saturating_add(us.min(i64::MAX as u64) as i64),
        }
    }
}

impl Filter {
    /// Adds one `--replay-only KEY=VALUE[,VALUE]`.
    pub fn add(&mut self, text: &str) -> Result<(), String> {
        let (key, values) = text.split_once('=').ok_or("write KEY=VALUE: method=GET, path=/api, status=2xx")?;
        for v in values.split(',').map(str::trim).filter(|v| !v.is_empty()) {
            match key.trim() {
                "method" => self.methods.push(v.to_ascii_uppercase()),
                "path" if v.starts_with('/') => self.path_prefixes.push(v.to_string()),
                "path" => return Err(format!("path '{v}': give a prefix starting with /")),
                "host" => self.hosts.push(v.to_ascii_lowercase()),
                "status" => self.statuses.push(match v.strip_suffix("xx") {
                    Some(class) => (class.parse().map_err(|_| format!("status '{v}': give 200 or 2xx"))?, true),
                    None => (v.parse().map_err(|_| format!("status '{v}': give 200 or 2xx"))?, false),
                }),
                other => return Err(format!("'{other}': filter by method, path, status or host")),
            }
        }
        Ok(())
    }

    fn keeps(&self, r: &Record) -> bool {
        (self.hosts.is_empty() || r.host.as_ref().is_none_or(|h| self.hosts.contains(h)))
            && (self.methods.is_empty() || self.methods.contains(&r.method))
            && (self.path_prefixes.is_empty() || self.path_prefixes.iter().any(|p| r.path.starts_with(p.as_str())))
            && (self.statuses.is_empty()
                || r.status.is_some_and(|s| {
                    self.statuses.iter().any(|&(want, class)| if class { s / 100 == want } else { s == want })
                }))
    }
}

/// A recorded host as a Host header may carry it: lower-cased, without any `user:password@` (never sent), and
/// only a name, an IPv4 address or a bracketed IPv6 one with an optional port; None for anything else (a space,
/// a control character, a second colon), which is then not sent.
pub fn clean_host(text: &str) -> Option<String> {
    let host = text.rsplit('@').next().unwrap_or(text).trim().to_ascii_lowercase();
    let (name_ok, port) = match host.strip_prefix('[') {
        Some(v6) => {
            let (addr, rest) = v6.split_once(']')?;
            let ok = !addr.is_empty() && addr.bytes().all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.');
            let port = match rest {
                "" => None,
                r => Some(r.strip_prefix(':')?),
            };
            (ok, port)
        }
        None => {
            let (name, port) = match host.split_once(':') {
                Some((n, p)) => (n, Some(p)),
                None => (host.as_str(), None),
            };
            let ok =
                !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
            (ok, port)
        }
    };
    let port_ok = port.is_none_or(|p| (1..=5).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()));
    (name_ok && port_ok).then_some(host)
}

/// A method that only reads: anything else may change the target's data.
pub fn reads_only(method: &str) -> bool {
    matches!(method, "GET" | "HEAD" | "OPTIONS")
}

/// What was read, and what of it is replayed.
#[derive(Debug)]
pub struct Recording {
    pub format: Format,
    /// In time order.
    pub records: Vec<Record>,
    /// Lines not of the format (blank lines aside), and the first one's number and reason.
    pub skipped: u64,
    pub first_skipped: Option<(u64, String)>,
    /// Records that change data, left out (without `--replay-writes`).
    pub writes_left_out: u64,
    /// Records the filter left out.
    pub filtered_out: u64,
    /// Records that came before the one above them in the file (sorted into place), and the most by which one did.
    pub out_of_order: u64,
    pub most_behind_us: u64,
    /// A HAR's hosts replayed (the others' entries are among `filtered_out`).
    pub hosts: Vec<String>,
    /// Records outside the time window (`--replay-from`, `--replay-until`).
    pub outside_window: u64,
    /// The first record's instant in the file (a window's offsets count from it) and the latest, of every record.
    pub span: Option<(i64, i64)>,
}

/// Reads `path` (a regular file, at most `cap` bytes) in `format` (or the one its name or first line shows).
pub fn read(path: &Path, cap: u64, format: Option<Format>, filter: &Filter) -> Result<Recording, String> {
    let har = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("har"));
    let format = format.or(har.then_some(Format::Har));
    let mut rec = Recording {
        format: format.clone().unwrap_or(Format::Combined),
        records: Vec::new(),
        skipped: 0,
        first_skipped: None,
        writes_left_out: 0,
        filtered_out: 0,
        out_of_order: 0,
        most_behind_us: 0,
        hosts: Vec::new(),
        outside_window: 0,
        span: None,
    };
    let mut latest = i64::MIN;
    if format == Some(Format::Har) {
        // One document: its entries are numbered as lines are. A browser's recording holds other sites' requests
        // (with their cookies): without `host=`, only the first entry's site is replayed, the others counted.
        let text = crate::base::bounded::read_text(path, cap)?;
        let entries = har::entries(&text)?;
        let mut filter = filter.clone();
        if filter.hosts.is_empty() {
            let first = entries.iter().find_map(|e| e.as_ref().ok().and_then(|r| r.host.clone()));
            filter.hosts.extend(first);
        }
        for (i, entry) in entries.into_iter().enumerate() {
            take(&mut rec, &mut latest, i as u64 + 1, entry, &filter)?;
        }
        rec.hosts = filter.hosts.clone();
    } else {
        let file = crate::base::bounded::open(path, cap)?;
        let mut reader = BufReader::new(file);
        let (mut line, mut number, mut format) = (Vec::new(), 0u64, format);
        while crate::base::bounded::next_line(&mut reader, &mut line, MOST_LINE)? {
            number += 1;
            if line.len() as u64 > MOST_LINE {
                return Err(format!("line {number}: longer than {} MiB; no access log's line is", MOST_LINE >> 20));
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            let f = format.get_or_insert_with(|| Format::sniff(text));
            rec.format = f.clone();
            take(&mut rec, &mut latest, number, f.read(text), filter)?;
        }
    }
    finish(rec)
}

/// One record read (line or entry `number`), or why not: counted, left out or kept.
fn take(
    rec: &mut Recording,
    latest: &mut i64,
    number: u64,
    read: Result<Record, String>,
    filter: &Filter,
) -> Result<(), String> {
    let r = match read {
        Ok(r) => r,
        Err(why) => {
            rec.skipped += 1;
            rec.first_skipped.get_or_insert((number, why));
            return Ok(());
        }
    };
    // The window, as records stream by (a long log cut to an hour never holds the rest).
    if !within(&mut rec.span, filter.from, filter.until, r.at_us) {
        rec.outside_window += 1;
        return Ok(());
    }
    if !filter.writes && !reads_only(&r.method) {
        rec.writes_left_out += 1;
        return Ok(());
    }
    if !filter.keeps(&r) {
        rec.filtered_out += 1;
        return Ok(());
    }
    if r.at_us < *latest {
        rec.out_of_order += 1;
        rec.most_behind_us = rec.most_behind_us.max(latest.abs_diff(r.at_us));
    }
    *latest = (*latest).max(r.at_us);
    if rec.records.len() == MOST_RECORDS {
        return Err(format!(
            "more than {MOST_RECORDS} records to replay; cut the log (a time window, --replay-only) or replay it in \
             parts"
        ));
    }
    rec.records.push(r);
    Ok(())
}

/// The records in time order, or why there is none to replay.
fn finish(mut rec: Recording) -> Result<Recording, String> {
    // The window is blamed only when nothing else left records out (a window of writes is the writes' fault).
    let window_alone = rec.outside_window > 0 && rec.writes_left_out == 0 && rec.filtered_out == 0;
    if let (true, Some((first, last))) = (rec.records.is_empty() && window_alone, rec.span) {
        return Err(format!(
            "--replay-from and --replay-until left out all {} records: the log runs from {} to {} ({:.3} s)",
            rec.outside_window,
            instant_text(first),
            instant_text(last),
            (last - first) as f64 / 1e6
        ));
    }
    if rec.records.is_empty() {
        let why = match &rec.first_skipped {
            Some((line, why)) => format!("line {line}: {why}"),
            None if rec.writes_left_out > 0 => format!(
                "all {} records change data (POST, PUT, PATCH, DELETE ...); give --replay-writes to send them too",
                rec.writes_left_out
            ),
            None if rec.filtered_out > 0 => format!("--replay-only left out all {} records", rec.filtered_out),
            None => "no record in it".into(),
        };
        return Err(format!(
            "nothing to replay: {why}; give an access log (combined format), JSON lines or a HAR file"
        ));
    }
    // Stable: records of one instant keep the file's order.
    rec.records.sort_by_key(|r| r.at_us);
    Ok(rec)
}

/// Notes `at` in a recording's `span` (its first record's instant in the file and the latest) and says whether the
/// window from `from` (inclusive) to `until` holds it, their offsets counted from the first record: a log's
/// records and a MONITOR capture's commands alike.
pub(crate) fn within(span: &mut Option<(i64, i64)>, from: Option<When>, until: Option<When>, at: i64) -> bool {
    let (first, last) = span.get_or_insert((at, at));
    *last = (*last).max(at);
    let from = from.map_or(i64::MIN, |w| w.instant(*first));
    let until = until.map_or(i64::MAX, |w| w.instant(*first));
    (from..until).contains(&at)
}

/// An instant of the log as RFC 3339 text (UTC, to the microsecond).
pub fn instant_text(us: i64) -> String {
    let t = std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_micros(us.max(0) as u64));
    t.map_or_else(|| us.to_string(), |t| humantime::format_rfc3339_micros(t).to_string())
}

/// Each record's offset from the first, microseconds, as the replay sends them: a log of whole seconds (the
/// combined format's) has its records of one second spread evenly across it, idle gaps are cut to `max_gap_us`,
/// and every offset is divided by `speed`.
pub fn schedule(records: &[Record], speed: f64, max_gap_us: Option<u64>) -> Vec<u64> {
    let times: Vec<i64> = records.iter().map(|r| r.at_us).collect();
    offsets(&times, speed, max_gap_us, true)
}

/// [`schedule`] of instants (microseconds, in order); `spread`: a log of whole seconds has its records of one second
/// spread across it (an access log's; an LLM trace's instants are kept as they are).
pub fn offsets(at_us: &[i64], speed: f64, max_gap_us: Option<u64>, spread: bool) -> Vec<u64> {
    let whole_seconds = spread && at_us.iter().all(|t| t % 1_000_000 == 0);
    let mut times: Vec<f64> = at_us.iter().map(|t| *t as f64).collect();
    if whole_seconds {
        let mut i = 0;
        while i < times.len() {
            let j = times[i..].iter().position(|t| *t != times[i]).map_or(times.len(), |k| i + k);
            let n = (j - i) as f64;
            for (k, t) in times[i..j].iter_mut().enumerate() {
                *t += 1e6 * k as f64 / n;
            }
            i = j;
        }
    }
    let mut out = Vec::with_capacity(times.len());
    let mut at = 0.0;
    for (k, t) in times.iter().enumerate() {
        if k > 0 {
            let gap = t - times[k - 1];
            at += max_gap_us.map_or(gap, |m| gap.min(m as f64));
        }
        out.push((at / speed).round() as u64);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_host_loses_its_credentials_and_only_a_host_is_kept() {
        assert_eq!(clean_host("alice:s3cret@Shop.Example").as_deref(), Some("shop.example"));
        assert_eq!(clean_host("a.example:8443").as_deref(), Some("a.example:8443"));
        assert_eq!(clean_host("[::1]:8080").as_deref(), Some("[::1]:8080"));
        assert_eq!(clean_host("[::1]").as_deref(), Some("[::1]"));
        for bad in ["a b", "a\r\nX-Evil: 1", "", "a:b:c", "a:", "[::1]x", "[zz]", "a:123456"] {
            assert_eq!(clean_host(bad), None, "{bad:?}");
        }
    }

    fn rec(at_us: i64, method: &str, path: &str, status: u16) -> Record {
        Record {
            at_us,
            method: method.into(),
            path: path.into(),
            body: None,
            status: Some(status),
            headers: vec![],
            host: None,
        }
    }

    #[test]
    fn a_log_of_whole_seconds_is_spread_within_each_second_gaps_capped_and_sped_up() {
        let s = 1_000_000;
        let r =
            [rec(0, "GET", "/", 200), rec(0, "GET", "/", 200), rec(s, "GET", "/", 200), rec(61 * s, "GET", "/", 200)];
        assert_eq!(schedule(&r, 1.0, None), [0, 500_000, 1_000_000, 61_000_000]);
        assert_eq!(schedule(&r, 2.0, Some(10 * s as u64)), [0, 250_000, 500_000, 5_500_000]);
        // A trace's instants are kept as they are, whole seconds or not.
        assert_eq!(offsets(&[0, s, s], 1.0, None, false), [0, 1_000_000, 1_000_000]);
        // Microsecond times are kept as they are.
        let r = [rec(5, "GET", "/", 200), rec(7, "GET", "/", 200)];
        assert_eq!(schedule(&r, 1.0, None), [0, 2]);
    }

    #[test]
    fn filters_take_methods_paths_and_status_classes() {
        let mut f = Filter::default();
        f.add("method=get,head").unwrap();
        f.add("path=/api").unwrap();
        f.add("status=2xx,404").unwrap();
        assert!(f.keeps(&rec(0, "GET", "/api/x", 204)) && f.keeps(&rec(0, "HEAD", "/api", 404)));
        assert!(!f.keeps(&rec(0, "GET", "/web", 200)) && !f.keeps(&rec(0, "GET", "/api", 500)));
        assert!(f.add("color=red").unwrap_err().contains("method, path, status or host"));
        assert!(f.add("status=ok").unwrap_err().contains("give 200 or 2xx"));
        assert!(f.add("nothing").unwrap_err().contains("KEY=VALUE"));
    }

    #[test]
    fn a_file_is_read_in_time_order_with_writes_and_bad_lines_counted() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("access.log");
        let lines = [
            r#"1 - - [01/Jan/2026:00:00:02 +0000] "GET /b HTTP/1.1" 200 1"#,
            "garbage",
            r#"1 - - [01/Jan/2026:00:00:01 +0000] "GET /a HTTP/1.1" 200 1"#,
            r#"1 - - [01/Jan/2026:00:00:03 +0000] "DELETE /c HTTP/1.1" 204 0"#,
        ];
        std::fs::write(&p, lines.join("\n")).unwrap();
        let r = read(&p, 1 << 20, None, &Filter::default()).unwrap();
        let paths: Vec<&str> = r.records.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(paths, ["/a", "/b"]);
        assert_eq!((r.skipped, r.writes_left_out, r.out_of_order, r.most_behind_us), (1, 1, 1, 1_000_000));
        assert_eq!(r.first_skipped.as_ref().map(|(n, _)| *n), Some(2));
        let with = read(&p, 1 << 20, None, &Filter { writes: true, ..Filter::default() }).unwrap();
        assert_eq!(with.records.len(), 3);
        std::fs::write(&p, r#"1 - - [01/Jan/2026:00:00:03 +0000] "POST /c HTTP/1.1" 201 0"#).unwrap();
        assert!(read(&p, 1 << 20, None, &Filter::default()).unwrap_err().contains("give --replay-writes"));
        std::fs::write(&p, "one\ntwo\n").unwrap();
        assert!(read(&p, 1 << 20, None, &Filter::default()).unwrap_err().contains("line 1: no [time]"));
    }
}
