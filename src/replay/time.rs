//! The instants a recording's lines give: a combined log's `10/Oct/2000:13:55:36 -0700` and RFC 3339 text, in
//! microseconds since the Unix epoch (read by the formats, the log_format reader, HAR files and the time window).

/// Microseconds since the Unix epoch of a combined log's `10/Oct/2000:13:55:36 -0700`.
pub(super) fn log_time(text: &str) -> Option<i64> {
    let (date, zone) = text.split_once(' ').unwrap_or((text, "+0000"));
    let mut parts = date.splitn(4, [':', '/']);
    let (day, month, year) = (parts.next()?, parts.next()?, parts.next()?);
    let clock = parts.next()?;
    let day: i64 = day.parse().ok()?;
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let month = MONTHS.iter().position(|m| *m == month)? as i64 + 1;
    // Years of four digits: a hostile one of twelve would overflow the arithmetic below.
    let year: i64 = year.parse().ok().filter(|y| (1..=9999).contains(y))?;
    let mut hms = clock.split(':').map(|p| p.parse::<i64>().ok());
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    if !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let zone = zone.trim();
    let sign = match zone.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let (zh, zm): (i64, i64) = (zone.get(1..3)?.parse().ok()?, zone.get(3..5)?.parse().ok()?);
    let secs = days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s - sign * (zh * 3600 + zm * 60);
    Some(secs * 1_000_000)
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// RFC 3339 text in microseconds since the epoch; its zone is required (a time without one is no instant).
pub(super) fn rfc3339(s: &str) -> Option<i64> {
    let s = s.trim();
    let (clock, offset_s) = match s.strip_suffix(['Z', 'z']) {
        Some(clock) => (clock, 0),
        None => {
            let at = s.len().checked_sub(6)?;
            let (clock, zone) = s.split_at_checked(at)?;
            let sign = match zone.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (h, m) = zone[1..].split_once(':')?;
            (clock, sign * (h.parse::<i64>().ok()? * 3600 + m.parse::<i64>().ok()? * 60))
        }
    };
    let t = humantime::parse_rfc3339_weak(&format!("{clock}Z")).ok()?;
    let us = i64::try_from(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_micros()).ok()?;
    Some(us - offset_s * 1_000_000)
}
