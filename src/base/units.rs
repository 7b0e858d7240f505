//! Parsing of the human units hakaru accepts on the command line and in URLs: durations and byte sizes.

use std::time::Duration;

/// Parses a duration such as `30s`, `2m`, `500ms`, `1.5s`, `250us` or `1h`.
///
/// A bare number is rejected: in a URL (`?delay=10`) or an objective (`p99<50`) it could mean anything; command
/// line flags read bare seconds through [`parse_flag_duration`].
/// The error is the fix to show the user, without the flag name (the caller adds it).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let hint = "use a number with a unit: 500ms, 30s, 2m, 1h";
    if number.is_empty() {
        return Err(format!("not a duration; {hint}"));
    }
    let value: f64 = number.parse().map_err(|_| format!("not a duration; {hint}"))?;
    let seconds_per_unit = match unit.trim() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "" => return Err(format!("a unit is missing; {hint}")),
        other => return Err(format!("unknown unit '{other}'; {hint}")),
    };
    let secs = value * seconds_per_unit;
    if !secs.is_finite() || secs > 1e9 {
        return Err(format!("too long; {hint}"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A duration flag: as [`parse_duration`], and a bare number is seconds, as drnbench's `--duration 30` and
/// `--wait 0.01` are (wrk's `-d 30` too).
pub fn parse_flag_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return parse_duration(&format!("{t}s"));
    }
    parse_duration(text)
}

/// Parses a byte size such as `512`, `20kb`, `1.5MB`, `64k`, `2mib` (k = 1000, ki = 1024).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let hint = "use a byte count with an optional unit: 512, 20kb, 1.5mb, 64kib";
    let value: f64 = number.parse().map_err(|_| format!("not a size; {hint}"))?;
    let factor = match unit.trim() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "ki" | "kib" => 1024.0,
        "m" | "mb" => 1e6,
        "mi" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" => 1e9,
        "gi" | "gib" => 1024.0 * 1024.0 * 1024.0,
        other => return Err(format!("unknown unit '{other}'; {hint}")),
    };
    let bytes = value * factor;
    if !bytes.is_finite() || bytes > 1e12 {
        return Err(format!("too large; {hint}"));
    }
    Ok(bytes.round() as u64)
}

/// `1 connection`, `2 connections`.
pub fn count_of(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// `word` as a POSIX shell reads it back: as it is when it holds only characters no shell treats specially, else in
/// single quotes (a quote inside as `'\''`). `-H 'Content-Type: application/json'`, `'{"model":"m"}'`.
pub fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// A count with thousands separated by commas, as people read it: `380`, `10,000`.
pub fn format_count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Formats a duration given in microseconds for people: `850us`, `12.35ms`, `1.20s`.
pub fn format_micros(us: f64) -> String {
    if us < 1000.0 {
        format!("{us:.0}us")
    } else if us < 1_000_000.0 {
        format!("{:.2}ms", us / 1e3)
    } else {
        format!("{:.2}s", us / 1e6)
    }
}

/// Formats a byte count for people with decimal units: `512 B`, `12.3 kB`, `4.56 MB`.
pub fn format_bytes(bytes: f64) -> String {
    if bytes < 1e3 {
        format!("{bytes:.0} B")
    } else if bytes < 1e6 {
        format!("{:.1} kB", bytes / 1e3)
    } else if bytes < 1e9 {
        format!("{:.2} MB", bytes / 1e6)
    } else {
        format!("{:.2} GB", bytes / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_word_is_quoted_only_when_a_shell_would_read_it_otherwise() {
        assert_eq!(shell_word("--rate"), "--rate");
        assert_eq!(shell_word("http://127.0.0.1:8080/a?b=c"), "'http://127.0.0.1:8080/a?b=c'");
        assert_eq!(shell_word("Content-Type: application/json"), "'Content-Type: application/json'");
        assert_eq!(shell_word(r#"{"model":"m"}"#), r#"'{"model":"m"}'"#);
        assert_eq!(shell_word("it's"), r#"'it'\''s'"#);
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn durations_with_units_parse() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
    }

    #[test]
    fn durations_without_a_known_unit_are_rejected_with_the_fix() {
        assert!(parse_duration("3x").unwrap_err().contains("unknown unit 'x'"));
        assert!(parse_duration("30").unwrap_err().contains("unit is missing"));
        assert_eq!(parse_flag_duration("30").unwrap(), Duration::from_secs(30), "a bare flag value is seconds");
        assert_eq!(parse_flag_duration("0.01").unwrap(), Duration::from_millis(10));
        assert_eq!(parse_flag_duration("250ms").unwrap(), Duration::from_millis(250));
        assert!(parse_flag_duration("30x").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn sizes_parse_with_decimal_and_binary_units() {
        assert_eq!(parse_size("512").unwrap(), 512);
        assert_eq!(parse_size("20kb").unwrap(), 20_000);
        assert_eq!(parse_size("20KB").unwrap(), 20_000);
        assert_eq!(parse_size("64kib").unwrap(), 65_536);
        assert_eq!(parse_size("1.5mb").unwrap(), 1_500_000);
        assert!(parse_size("12parsecs").is_err());
    }

    #[test]
    fn micros_format_in_the_unit_people_read() {
        for (input, want) in [(850.0, "850us"), (12_345.0, "12.35ms"), (1_200_000.0, "1.20s")] {
            assert_eq!(format_micros(input), want, "format_micros({input:?})");
        }
    }

    #[test]
    fn counts_group_their_thousands() {
        for (input, want) in [(0, "0"), (380, "380"), (1_000, "1,000"), (10_000, "10,000"), (1_234_567, "1,234,567")] {
            assert_eq!(format_count(input), want, "format_count({input:?})");
        }
    }
}
