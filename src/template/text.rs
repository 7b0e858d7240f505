//! One template text (a URL path, a header value, a body) cut into literal bytes and `{{...}}` holes: a data
//! file's column, or a built-in (`{{seq}}`, `{{uuid}}`, `{{rand 1 1000}}`, `{{now_ms}}`).

/// What fills one hole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hole {
    /// The current row's value in this column.
    Column(usize),
    /// The request's number in the run, from 1.
    Seq,
    /// A random UUID (version 4).
    Uuid,
    /// A random whole number from `lo` to `hi`, both included.
    Rand(i64, i64),
    /// Milliseconds since the Unix epoch.
    NowMs,
    /// From `lo` to `hi` random common words (about a token each: an LLM prompt of a known length), made per request.
    Words(u64, u64),
}

/// The most words one `{{words}}` hole makes: a prompt of about a million tokens, past any model's context.
pub const MOST_WORDS: u64 = 1_000_000;

/// A template: literal pieces and holes, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Text {
    pub parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    Literal(Vec<u8>),
    Hole(Hole),
}

impl Text {
    /// Reads `text`; `columns` are the data file's (none without one). Without a data file only the built-ins are
    /// holes, and any other `{{...}}` is left as it is written (a body may hold braces of its own); with one, a
    /// name that is neither a column nor a built-in is an error naming the columns.
    pub fn parse(text: &str, columns: Option<&[String]>) -> Result<Text, String> {
        let mut parts = Vec::new();
        let mut literal = Vec::new();
        let mut rest = text;
        while let Some(first) = rest.find("{{") {
            let Some(close) = rest[first + 2..].find("}}").map(|c| c + first + 2) else { break };
            // The innermost "{{" before the "}}": in `{{"a": {{uuid}}}}` the hole is `uuid`.
            let open = rest[..close].rfind("{{").unwrap_or(first);
            let close = close - open - 2;
            let inside = &rest[open + 2..open + 2 + close];
            match hole(inside.trim(), columns)? {
                Some(h) => {
                    literal.extend_from_slice(&rest.as_bytes()[..open]);
                    if !literal.is_empty() {
                        parts.push(Part::Literal(std::mem::take(&mut literal)));
                    }
                    parts.push(Part::Hole(h));
                }
                None => literal.extend_from_slice(&rest.as_bytes()[..open + 2 + close + 2]),
            }
            rest = &rest[open + 2 + close + 2..];
        }
        literal.extend_from_slice(rest.as_bytes());
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        Ok(Text { parts })
    }

    /// Whether any hole is in it (a text without one is sent as it is).
    pub fn has_holes(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Hole(_)))
    }

    /// The text with every hole replaced by `sample`: what a check of the request's shape reads.
    pub fn sample(&self, sample: &str) -> String {
        let mut out = Vec::new();
        for p in &self.parts {
            match p {
                Part::Literal(b) => out.extend_from_slice(b),
                Part::Hole(_) => out.extend_from_slice(sample.as_bytes()),
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}

fn hole(inside: &str, columns: Option<&[String]>) -> Result<Option<Hole>, String> {
    let mut words = inside.split_whitespace();
    let name = words.next().unwrap_or("");
    let builtin = match name {
        "seq" => Some(Hole::Seq),
        "uuid" => Some(Hole::Uuid),
        "now_ms" => Some(Hole::NowMs),
        "rand" => {
            let bad = || {
                format!("'{{{{{inside}}}}}': write {{{{rand LOW HIGH}}}} with whole numbers, e.g. {{{{rand 1 1000}}}}")
            };
            let lo: i64 = words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
            let hi: i64 = words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
            if lo > hi || words.next().is_some() {
                return Err(bad());
            }
            return Ok(Some(Hole::Rand(lo, hi)));
        }
        "words" => {
            let bad = || {
                format!(
                    "'{{{{{inside}}}}}': write {{{{words LOW HIGH}}}} with whole numbers from 0 to {MOST_WORDS}, e.g. \
                     {{{{words 900 1100}}}}"
                )
            };
            let lo: u64 = words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
            let hi: u64 = words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
            if lo > hi || hi > MOST_WORDS || words.next().is_some() {
                return Err(bad());
            }
            return Ok(Some(Hole::Words(lo, hi)));
        }
        _ => None,
    };
    if builtin.is_some() {
        if words.next().is_some() {
            return Err(format!("'{{{{{inside}}}}}': {{{{{name}}}}} takes no argument"));
        }
        return Ok(builtin);
    }
    let Some(columns) = columns else { return Ok(None) };
    // Columns are names; a first line that holds none (`--data /etc/shadow`) is not quoted back.
    let named = columns
        .iter()
        .all(|c| c.len() <= 64 && c.chars().all(|ch| ch.is_alphanumeric() || matches!(ch, '_' | '-' | '.' | ' ')));
    match columns.iter().position(|c| c == inside) {
        Some(i) => Ok(Some(Hole::Column(i))),
        None if named => Err(format!(
            "'{{{{{inside}}}}}' is neither a column of the data file ({}) nor a built-in (seq, uuid, rand LOW HIGH, words LOW HIGH, now_ms)",
            crate::base::secrets::excerpt(&columns.join(", "))
        )),
        None => Err(format!(
            "'{{{{{inside}}}}}' is not a built-in (seq, uuid, rand LOW HIGH, words LOW HIGH, now_ms), and the data file's first line \
             holds no column names: give a CSV with a header line or JSON lines"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_and_builtins_are_holes_between_literals() {
        let cols = vec!["id".to_string(), "name".to_string()];
        let t = Text::parse("/u/{{id}}?n={{ name }}&r={{rand 1 9}}&s={{seq}}", Some(&cols)).unwrap();
        assert_eq!(t.parts[1], Part::Hole(Hole::Column(0)));
        assert_eq!(t.parts[3], Part::Hole(Hole::Column(1)));
        assert_eq!(t.parts[5], Part::Hole(Hole::Rand(1, 9)));
        assert_eq!(t.parts[7], Part::Hole(Hole::Seq));
        assert_eq!(t.sample("x"), "/u/x?n=x&r=x&s=x");
        assert_eq!(Text::parse("{{words 2 5}}", None).unwrap().parts[0], Part::Hole(Hole::Words(2, 5)));
        for bad in ["{{words 5 2}}", "{{words 1}}", "{{words 0 2000000}}", "{{words -1 2}}"] {
            assert!(Text::parse(bad, None).unwrap_err().contains("{{words LOW HIGH}}"), "{bad}");
        }
    }

    #[test]
    fn unknown_names_are_errors_with_data_and_literal_without() {
        let cols = vec!["id".to_string()];
        let e = Text::parse("/{{nope}}", Some(&cols)).unwrap_err();
        assert!(e.contains("'{{nope}}'") && e.contains("(id)"), "{e}");
        let t = Text::parse("{{\"a\": {{uuid}}}}", None).unwrap();
        assert!(t.has_holes());
        assert_eq!(t.sample("U"), "{{\"a\": U}}");
        assert!(!Text::parse("{{not a hole}}", None).unwrap().has_holes());
        assert!(Text::parse("{{rand 9 1}}", None).is_err());
        assert!(Text::parse("{{seq 2}}", None).is_err());
    }
}
