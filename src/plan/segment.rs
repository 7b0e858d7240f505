//! Scale-out: this process's segment of a plan run by several agents (`--segment I/N`, as k6's execution
//! segments) and their common start (`--start-at`). Segments split connections, requests and rate so that the
//! N segments add up to the whole exactly; `hakaru merge` joins their documents.

use std::net::IpAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::RunPlan;
use crate::base::load::{LoadModel, Until};
use crate::cli::args::ScaleArgs;
use crate::error::CliError;
use crate::result::WholePlan;

/// Segment `index` (from 0) of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub index: usize,
    pub count: usize,
}

impl Segment {
    /// This segment's share of `total`: the first `total % count` segments take one more, so the shares add up.
    pub fn share(&self, total: u64) -> u64 {
        let n = self.count as u64;
        total / n + u64::from((self.index as u64) < total % n)
    }

    /// The shares of the segments before this one: where its part starts.
    pub fn before(&self, total: u64) -> u64 {
        let (n, i) = (self.count as u64, self.index as u64);
        i * (total / n) + i.min(total % n)
    }

    pub fn label(&self) -> String {
        format!("{}/{}", self.index, self.count)
    }
}

/// How far past `--start-at` may be and still be kept: an agent started a moment late still counts from the
/// common instant (it says by how much). Further back it is a saved command or manifest run again, whose step
/// would count from an instant long gone (30 days back: 2.5 GB of empty windows, absurd latencies).
pub const LATE_LIMIT: Duration = Duration::from_secs(5);
/// How far ahead `--start-at` may be: agents are started shortly before their instant; beyond a day it is a typo
/// (a year, a Unix time in milliseconds) that would sleep without a word, or overflow the clock.
pub const AHEAD_LIMIT: Duration = Duration::from_secs(24 * 3600);

/// The scale-out flags, read.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Scale {
    pub segment: Option<Segment>,
    /// The common start; None when absent, or past and run anyway (`started_late`).
    pub start_at: Option<SystemTime>,
    /// `--start-late ok` took a `--start-at` more than [`LATE_LIMIT`] past: by how much. The load starts now.
    pub started_late: Option<Duration>,
    /// `--source-address`: the local address every connection is opened from.
    pub source: Option<IpAddr>,
}

impl Scale {
    pub fn from_args(a: &ScaleArgs) -> Result<Scale, CliError> {
        let segment = a
            .segment
            .as_deref()
            .map(|text| {
                let bad = || {
                    CliError::new(format!(
                        "--segment '{text}': write I/N with 0 <= I < N, like 0/3 (the first of three agents)"
                    ))
                };
                let (i, n) = text.split_once('/').ok_or_else(bad)?;
                let (index, count): (usize, usize) =
                    (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
                if count == 0 || index >= count {
                    return Err(bad());
                }
                Ok(Segment { index, count })
            })
            .transpose()?;
        let late_ok = match a.start_late.as_deref() {
            None => false,
            Some("ok") => true,
            Some(other) => {
                return Err(CliError::new(format!(
                    "--start-late '{other}': the only value is ok (--start-late ok runs a load whose --start-at is past)"
                )));
            }
        };
        let (mut start_at, mut started_late) = (None, None);
        if let Some(text) = a.start_at.as_deref() {
            let at = parse_instant(text)?;
            match check_start(text, at, SystemTime::now(), late_ok)? {
                Some(late) => started_late = Some(late),
                None => start_at = Some(at),
            }
        }
        let source = a.source_address.as_deref().map(parse_source).transpose()?;
        Ok(Scale { segment, start_at, started_late, source })
    }
}

/// Where `at` (as the user wrote it: `text`) lies from `now`: refused more than [`AHEAD_LIMIT`] ahead, or more
/// than [`LATE_LIMIT`] past unless `late_ok`. Some(lateness) when a start that far past is run anyway.
fn check_start(text: &str, at: SystemTime, now: SystemTime, late_ok: bool) -> Result<Option<Duration>, CliError> {
    // Whole seconds: "30days 2h 5s", not nanoseconds.
    let said = |d: Duration| humantime::format_duration(Duration::from_secs(d.as_secs().max(1))).to_string();
    match at.duration_since(now) {
        Ok(ahead) if ahead > AHEAD_LIMIT => Err(CliError::new(format!(
            "--start-at '{text}': {} from now, more than a day ahead; give an instant within the next 24h (RFC 3339 in UTC or Unix seconds)",
            said(ahead)
        ))),
        Ok(_) => Ok(None),
        Err(past) if past.duration() <= LATE_LIMIT => Ok(None),
        Err(past) if late_ok => Ok(Some(past.duration())),
        Err(past) => Err(CliError::new(format!(
            "--start-at '{text}': {} ago, more than 5s in the past; give an instant ahead, or add --start-late ok to start the load now anyway",
            said(past.duration())
        ))),
    }
}

/// `--source-address`: an IP address of this machine (checked by binding to it, so a typo or a foreign address is
/// bad input here rather than every connection failing).
fn parse_source(text: &str) -> Result<IpAddr, CliError> {
    let ip: IpAddr = text.trim().parse().map_err(|_| {
        CliError::new(format!("--source-address '{text}': not an IP address; give one of this machine's addresses"))
    })?;
    std::net::TcpListener::bind((ip, 0)).map_err(|e| {
        CliError::new(format!(
            "--source-address '{text}': cannot open connections from it ({e}); give one of this machine's addresses"
        ))
    })?;
    Ok(ip)
}

/// `2026-11-23T21:00:00Z` (RFC 3339) or `1795467600` (Unix seconds, fractions allowed).
fn parse_instant(text: &str) -> Result<SystemTime, CliError> {
    if let Ok(secs) = text.trim().parse::<f64>()
        && secs >= 0.0
    {
        // Checked: 1e300 seconds is no Duration, and a Duration past the clock's range no SystemTime.
        return Duration::try_from_secs_f64(secs).ok().and_then(|d| UNIX_EPOCH.checked_add(d)).ok_or_else(|| {
            CliError::new(format!(
                "--start-at '{text}': beyond any clock; give an instant within the next 24h (RFC 3339 or Unix seconds)"
            ))
        });
    }
    humantime::parse_rfc3339_weak(text.trim()).map_err(|_| {
        CliError::new(format!("--start-at '{text}': not a time; give RFC 3339 (2026-11-23T21:00:00Z) or Unix seconds"))
    })
}

/// An instant for messages and the document: RFC 3339, UTC, milliseconds.
pub fn show_instant(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

impl RunPlan {
    /// This plan cut to its segment and given its start: the segment's connections, requests and rate; its
    /// open-loop slots offset so the segments' slots interleave; its clients numbered after the segments before
    /// it (so a key-value workload's client keeps its keys whichever agent runs it).
    pub fn scaled(mut self, scale: &Scale) -> Result<RunPlan, CliError> {
        self.start_at = scale.start_at;
        self.settings.start_at = scale.start_at.map(show_instant);
        if let Some(late) = scale.started_late {
            self.notes.push(format!(
                "--start-late ok: --start-at was {} past, so this load started when hakaru was ready, not with other agents",
                humantime::format_duration(Duration::from_secs(late.as_secs()))
            ));
        }
        if let Some(source) = scale.source {
            for ep in &mut self.endpoints {
                if let Some(path) = &ep.unix {
                    return Err(CliError::new(format!(
                        "--source-address {source}: connections go to the Unix socket {}, which has no source \
                         address; drop one",
                        path.display()
                    )));
                }
                if source.is_ipv4() != ep.addr.is_ipv4() {
                    return Err(CliError::new(format!(
                        "--source-address {source}: {} is reached over {}; give an address of that family",
                        ep.addr,
                        if ep.addr.is_ipv4() { "IPv4" } else { "IPv6" }
                    )));
                }
                ep.source = Some(source);
            }
            self.settings.source_address = Some(source.to_string());
        }
        let Some(seg) = scale.segment else { return Ok(self) };
        // Recorded before the split, so that `merge` refuses segments of different plans.
        let s = &self.settings;
        let whole = WholePlan { connections: self.connections, requests: s.requests, rate: s.rate };
        let all = self.connections as u64;
        let connections = seg.share(all) as usize;
        if connections == 0 {
            return Err(CliError::new(format!(
                "--segment {}: {all} connection(s) cannot be split over {} agents; give at least one connection per agent",
                seg.label(),
                seg.count
            )));
        }
        if let Until::Requests(n) = self.stop {
            let mine = seg.share(n);
            if mine == 0 {
                return Err(CliError::new(format!(
                    "--segment {}: {n} request(s) cannot be split over {} agents; give at least one request per agent",
                    seg.label(),
                    seg.count
                )));
            }
            self.stop = Until::Requests(mine);
            self.settings.requests = Some(mine);
        }
        if let LoadModel::Open { rate, arrival } = self.load {
            // Segment i's slots start i / rate after the common start: the segments' slots interleave.
            self.slot_offset = Duration::from_secs_f64(seg.index as f64 / rate);
            let mine = rate / seg.count as f64;
            self.load = LoadModel::Open { rate: mine, arrival };
            self.settings.rate = Some(mine);
        }
        // A segment's ramp is its share: of the rate, or of the clients (as its connections are).
        self.ramp = self.ramp.take().map(|r| match self.load {
            LoadModel::Open { .. } => r.scaled(1.0 / seg.count as f64),
            LoadModel::Closed { .. } => r.scaled(connections as f64 / all as f64),
        });
        self.client_offset = seg.before(all) as usize;
        self.all_clients = all as usize;
        self.connections = connections;
        self.threads = self.threads.min(connections).max(1);
        self.settings.connections = connections;
        self.settings.threads = self.threads;
        self.settings.segment = Some(seg.label());
        self.settings.whole_plan = Some(whole);
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_and_parts_follow_each_other() {
        for (total, n) in [(10u64, 3usize), (2, 3), (1000, 7), (5, 5)] {
            let segs: Vec<Segment> = (0..n).map(|index| Segment { index, count: n }).collect();
            assert_eq!(segs.iter().map(|s| s.share(total)).sum::<u64>(), total);
            for w in segs.windows(2) {
                assert_eq!(w[0].before(total) + w[0].share(total), w[1].before(total));
            }
        }
    }

    #[test]
    fn flags_read_or_refuse_in_one_line() {
        let soon = show_instant(SystemTime::now() + Duration::from_secs(60));
        let a = ScaleArgs { segment: Some("1/3".into()), start_at: Some(soon.clone()), ..Default::default() };
        let s = Scale::from_args(&a).unwrap();
        assert_eq!(s.segment, Some(Segment { index: 1, count: 3 }));
        assert_eq!(show_instant(s.start_at.unwrap()), soon);
        assert_eq!(show_instant(parse_instant("2026-11-23T21:00:00Z").unwrap()), "2026-11-23T21:00:00.000Z");
        assert_eq!(parse_instant("1795467600").unwrap(), UNIX_EPOCH + Duration::from_secs(1_795_467_600));
        for bad in ["3/3", "1", "a/b", "0/0"] {
            let e = Scale::from_args(&ScaleArgs { segment: Some(bad.into()), ..Default::default() }).unwrap_err();
            assert!(e.to_string().starts_with(&format!("--segment '{bad}'")), "{e}");
        }
        let e = Scale::from_args(&ScaleArgs { start_at: Some("tomorrow".into()), ..Default::default() }).unwrap_err();
        assert!(e.to_string().contains("--start-at 'tomorrow'"), "{e}");
    }

    #[test]
    fn a_start_far_from_now_is_refused_unless_a_late_one_is_meant() {
        let now = UNIX_EPOCH + Duration::from_secs(1_795_467_600);
        let at = |secs: i64| now.checked_add(Duration::from_secs(secs.unsigned_abs())).unwrap();
        let before = |secs: u64| now.checked_sub(Duration::from_secs(secs)).unwrap();
        // Within 5 s past and a day ahead: kept, the step counting from the instant.
        for ok in [before(5), before(1), now, at(3600), at(24 * 3600)] {
            assert_eq!(check_start("t", ok, now, false).unwrap(), None);
        }
        let e = check_start("t", before(30 * 86_400), now, false).unwrap_err().to_string();
        assert!(e.contains("--start-at 't': 30days ago") && e.contains("--start-late ok"), "{e}");
        let e = check_start("t", at(24 * 3600 + 1), now, false).unwrap_err().to_string();
        assert!(e.contains("1day 1s from now, more than a day ahead"), "{e}");
        // --start-late ok: run now, saying how late.
        assert_eq!(check_start("t", before(6), now, true).unwrap(), Some(Duration::from_secs(6)));
        assert_eq!(check_start("t", before(1), now, true).unwrap(), None);
    }

    #[test]
    fn instants_beyond_the_clock_are_refused_not_a_panic() {
        for text in ["1e300", "99999999999999999999999"] {
            let e = parse_instant(text).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--start-at '{text}': beyond any clock")), "{e}");
        }
        let e = Scale::from_args(&ScaleArgs { start_late: Some("yes".into()), ..Default::default() }).unwrap_err();
        assert!(e.to_string().starts_with("--start-late 'yes': the only value is ok"), "{e}");
    }
}
