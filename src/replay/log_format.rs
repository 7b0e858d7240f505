//! A custom nginx `log_format`, given as its definition (`--replay-format '$remote_addr [$time_local] "$request"
//! $status'`), read as literal text and `$variables`: a line matches the literals in turn, each variable's value
//! the text up to the next literal. The record takes its time from `$time_local`, `$time_iso8601` or `$msec`, its
//! request from `$request` (or `$request_method` with `$request_uri`, or `$uri` and `$args`), its status from
//! `$status`; the other variables are skipped.

use super::Record;

#[derive(Clone, Debug, PartialEq)]
enum Piece {
    Literal(String),
    Var(String),
}

/// A `log_format` definition, read.
#[derive(Clone, Debug, PartialEq)]
pub struct LogFormat {
    pieces: Vec<Piece>,
}

const TIMES: [&str; 3] = ["time_local", "time_iso8601", "msec"];

impl LogFormat {
    /// Reads a definition; the error says what it lacks.
    pub fn parse(def: &str) -> Result<LogFormat, String> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut rest = def;
        while let Some(at) = rest.find('$') {
            literal.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            let (name, used) = match after.strip_prefix('{') {
                Some(inner) => {
                    let end = inner.find('}').ok_or("a '${' without its '}'")?;
                    (&inner[..end], end + 2)
                }
                None => {
                    let end = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
                    (&after[..end], end)
                }
            };
            if name.is_empty() {
                return Err("a '$' names no variable".into());
            }
            if matches!(pieces.last(), Some(Piece::Var(_))) && literal.is_empty() {
                return Err(format!(
                    "${name} follows another variable with nothing between: where one ends is unknown"
                ));
            }
            if !literal.is_empty() {
                pieces.push(Piece::Literal(std::mem::take(&mut literal)));
            }
            pieces.push(Piece::Var(name.to_string()));
            rest = &after[used..];
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            pieces.push(Piece::Literal(literal));
        }
        let has = |n: &str| pieces.iter().any(|p| *p == Piece::Var(n.to_string()));
        if !TIMES.iter().any(|t| has(t)) {
            return Err("no time: give $time_local, $time_iso8601 or $msec".into());
        }
        if !(has("request") || has("request_uri") || has("uri")) {
            return Err("no request: give $request (or $request_method with $request_uri)".into());
        }
        Ok(LogFormat { pieces })
    }

    /// One line as a record, or why not.
    pub fn read(&self, line: &str) -> Result<Record, String> {
        let mut values: Vec<(&str, &str)> = Vec::new();
        let mut pos = 0;
        for (i, piece) in self.pieces.iter().enumerate() {
            match piece {
                Piece::Literal(l) => {
                    if !line[pos..].starts_with(l.as_str()) {
                        return Err(format!("column {}: not '{}' as the log_format has it", pos + 1, l.escape_debug()));
                    }
                    pos += l.len();
                }
                Piece::Var(name) => {
                    let end = match self.pieces.get(i + 1) {
                        Some(Piece::Literal(next)) => {
                            pos + line[pos..].find(next.as_str()).ok_or_else(|| {
                                format!("${name} from column {}: no '{}' after it", pos + 1, next.escape_debug())
                            })?
                        }
                        _ => line.len(),
                    };
                    values.push((name, &line[pos..end]));
                    pos = end;
                }
            }
        }
        let get = |n: &str| values.iter().find(|(k, _)| *k == n).map(|(_, v)| *v).filter(|v| *v != "-");
        let at_us = if let Some(t) = get("time_local") {
            super::time::log_time(t).ok_or("its $time_local is not like 10/Oct/2000:13:55:36 -0700")?
        } else if let Some(t) = get("time_iso8601") {
            super::time::rfc3339(t).ok_or("its $time_iso8601 is not RFC 3339 text with a zone")?
        } else {
            let s: f64 = get("msec").and_then(|m| m.parse().ok()).ok_or("its $msec is not seconds since the epoch")?;
            (s * 1e6) as i64
        };
        let (method, path) = match get("request") {
            Some(r) => {
                let mut w = r.split(' ');
                (w.next().unwrap_or("").to_string(), w.next().unwrap_or("").to_string())
            }
            None => {
                let path = match (get("request_uri"), get("uri"), get("args")) {
                    (Some(u), _, _) => u.to_string(),
                    (None, Some(u), Some(a)) => format!("{u}?{a}"),
                    (None, Some(u), None) => u.to_string(),
                    (None, None, _) => String::new(),
                };
                (get("request_method").unwrap_or("GET").to_string(), path)
            }
        };
        if method.is_empty() || !path.starts_with('/') {
            return Err(format!(
                "the request \"{method} {}\" is not METHOD /path",
                crate::base::secrets::excerpt(&path)
            ));
        }
        let status = get("status").and_then(|s| s.parse().ok());
        // `$host` (the request's host, lower-cased by nginx) or `$http_host` (its Host header as sent).
        let host = get("host").or(get("http_host")).and_then(super::clean_host);
        Ok(Record { at_us, method: method.to_ascii_uppercase(), path, body: None, status, headers: Vec::new(), host })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_custom_format_reads_its_time_request_and_status() {
        let f = LogFormat::parse(r#"$remote_addr [$time_iso8601] "$request" $status $request_time ${upstream_addr}"#)
            .unwrap();
        let r =
            f.read(r#"10.0.0.1 [2026-01-01T02:00:00+02:00] "get /a?q=1 HTTP/1.1" 404 0.003 127.0.0.1:9000"#).unwrap();
        assert_eq!(
            (r.at_us, r.method.as_str(), r.path.as_str(), r.status),
            (1_767_225_600_000_000, "GET", "/a?q=1", Some(404))
        );
        let f = LogFormat::parse("$msec $request_method $uri $args").unwrap();
        let r = f.read("1767225600.250 POST /k a=1").unwrap();
        assert_eq!((r.at_us, r.method.as_str(), r.path.as_str()), (1_767_225_600_250_000, "POST", "/k?a=1"));
        assert!(f.read("1767225600.250").unwrap_err().contains("no ' ' after it"));
        assert!(f.read("x1767225600.250 GET /k a").is_err());
        assert_eq!(r.host, None);
        let f = LogFormat::parse("$msec $http_host $request_method $uri").unwrap();
        assert_eq!(
            f.read("1767225600.250 Shop.Example:8080 GET /k").unwrap().host.as_deref(),
            Some("shop.example:8080")
        );
    }

    #[test]
    fn a_definition_without_a_time_or_a_request_or_with_glued_variables_is_refused() {
        assert!(LogFormat::parse("$remote_addr $request").unwrap_err().contains("no time"));
        assert!(LogFormat::parse("$msec $status").unwrap_err().contains("no request"));
        assert!(LogFormat::parse("$msec$request").unwrap_err().contains("nothing between"));
        assert!(LogFormat::parse("$msec ${request").unwrap_err().contains("without its '}'"));
    }
}
