//! Templates in a gRPC message: with `--data` rows alone, each distinct filled JSON is encoded through the method's
//! input descriptor once, before the load, and every call sends its row's framed message as it is; with built-ins
//! (`{{seq}}`, `{{uuid}}`, `{{rand}}`, `{{now_ms}}`) every call's message differs, so the template fills the JSON
//! and it is encoded per call (checked for every row before the load).

use std::collections::HashMap;

use prost_reflect::MethodDescriptor;

use super::{Framing, call_body};
use crate::cli::args::RequestArgs;
use crate::error::CliError;
use crate::template::RowBodies;
use crate::template::data::{Row, Rows};
use crate::template::text::{Hole, Part, Text};

/// How a call's message is made: before the load for each distinct row, or per call where built-ins change it.
pub enum Messages {
    Rows(RowMessages),
    PerCall(PerCall),
}

/// The rows, and the framed message each one sends.
pub struct RowMessages {
    pub rows: Rows,
    pub bodies: RowBodies,
    /// Messages in each body (the same for every row).
    pub messages_per_call: u32,
}

/// A message per call: the JSON's built-ins (`{{seq}}` ...) and row values filled by the request template as the
/// load runs, and the filled JSON encoded through the method's descriptor then (checked for every row before).
pub struct PerCall {
    pub rows: Option<Rows>,
    /// The message's JSON with its holes, as the template fills it.
    pub json: String,
    pub encoder: super::per_call::CallEncoder,
    /// The message as the first call sends it (the built-ins at their first values), for the plan's request.
    pub first: Vec<u8>,
    pub messages_per_call: u32,
}

/// The messages of the calls when the JSON has holes (or there is a `--data` file); None for a fixed message. With
/// built-ins each row's JSON is checked before the load with their first values (and `{{rand}}`'s both ends).
pub fn prepare(
    a: &RequestArgs,
    segment: Option<super::super::segment::Segment>,
    method: &MethodDescriptor,
    json: &str,
    flag: &str,
) -> Result<Option<Messages>, CliError> {
    let rows = match &a.data {
        Some(path) => Some(super::super::data_rows(path, segment)?),
        None => None,
    };
    let columns = rows.as_ref().map(|r| r.columns.clone());
    let text = Text::parse(json, columns.as_deref()).map_err(|why| CliError::new(format!("{flag}: {why}")))?;
    let builtins = text.parts.iter().any(|p| matches!(p, Part::Hole(h) if !matches!(h, Hole::Column(_))));
    if !builtins && rows.is_none() {
        return Ok(None);
    }
    let framing = Framing::of(a);
    let data = a.data.as_deref().map(|p| p.display().to_string()).unwrap_or_default();
    // Each row read where it is (a vector of them took 40 bytes a row: 400 MB for 10 million).
    let count = rows.as_ref().map_or(1, Rows::len);
    let all_rows = (0..count).map(|i| rows.as_ref().map_or(Row::NONE, |r| r.row(i)));
    let ends: &[End] = if text.parts.iter().any(|p| matches!(p, Part::Hole(Hole::Rand(..)))) {
        &[End::Low, End::High]
    } else {
        &[End::Low]
    };
    let mut seen: HashMap<String, u32> = HashMap::new();
    let mut bodies = RowBodies::default();
    let mut per_call = None;
    let mut first = None;
    for (r, row) in all_rows.enumerate() {
        for &end in ends {
            let (filled, spans) = fill(&text, row, end);
            if let Some(&i) = seen.get(&filled) {
                bodies.of_row.push(i);
                continue;
            }
            let (body, n) = call_body(framing, method, &filled, flag).map_err(|refused| {
                // The hole whose value the JSON failed in or after: the last one that starts before the fault. A
                // fault before any hole is the template's own (an unknown field), whatever the row.
                let Some((_, hole)) = refused.at.and_then(|at| spans.iter().rfind(|(start, _)| *start <= at)) else {
                    return refused.error;
                };
                let why = refused.error.to_string().trim_end().to_string();
                match hole {
                    Filled::Column(c) => CliError::new(format!(
                        "--data '{data}' row {} column '{}': {why}; give a value of the field's type in that column",
                        r + 1,
                        rows.as_ref().map_or("", |rows| rows.columns[*c].as_str()),
                    )),
                    Filled::Builtin(name, value) => CliError::new(format!(
                        "{why}; {name} gives {value} there: put it where a value of its kind fits (in quotes,                          \"{name}\", for a string field)"
                    )),
                }
            })?;
            if *per_call.get_or_insert(n) != n {
                let row = if rows.is_some() { format!("--data '{data}' row {}", r + 1) } else { flag.to_string() };
                return Err(CliError::new(format!(
                    "{row}: {n} messages a call where the rows before give {}; a row's values must not change the \
                     message's shape",
                    per_call.unwrap_or(n)
                )));
            }
            first.get_or_insert_with(|| body.clone());
            if builtins {
                continue;
            }
            let i = bodies.bodies.len() as u32;
            bodies.bodies.push(body);
            seen.insert(filled, i);
            bodies.of_row.push(i);
        }
    }
    let messages_per_call = per_call.unwrap_or(1);
    if builtins {
        let encoder = super::per_call::CallEncoder::new(method.clone(), framing, messages_per_call, &text);
        let first = first.unwrap_or_default();
        return Ok(Some(Messages::PerCall(PerCall {
            rows,
            json: json.to_string(),
            encoder,
            first,
            messages_per_call,
        })));
    }
    let rows = rows.unwrap_or_default();
    Ok(Some(Messages::Rows(RowMessages { rows, bodies, messages_per_call })))
}

/// Which end of `{{rand LOW HIGH}}` a check before the load fills in.
#[derive(Clone, Copy)]
enum End {
    Low,
    High,
}

/// What went into a hole: a row's column, or a built-in (its name and the value it was checked with).
enum Filled {
    Column(usize),
    Builtin(&'static str, String),
}

/// The JSON with the row's values in its holes, each escaped as a JSON string's characters (a value goes in
/// quotes, `"{{name}}"`, or in a number's place, where it is the number's digits), the built-ins at the values
/// they are checked with, and where each value starts with what filled it.
fn fill(text: &Text, row: Row<'_>, end: End) -> (String, Vec<(usize, Filled)>) {
    let mut out = String::new();
    let mut spans = Vec::new();
    for part in &text.parts {
        match part {
            Part::Literal(bytes) => out.push_str(&String::from_utf8_lossy(bytes)),
            Part::Hole(Hole::Column(c)) => {
                spans.push((out.len(), Filled::Column(*c)));
                out.push_str(&crate::template::json_string_chars(&row[*c]));
            }
            Part::Hole(builtin) => {
                let (name, value) = match (builtin, end) {
                    (Hole::Seq, _) => ("{{seq}}", "1".to_string()),
                    (Hole::Uuid, _) => ("{{uuid}}", "00000000-0000-4000-8000-000000000000".to_string()),
                    (Hole::Rand(lo, _), End::Low) => ("{{rand}}", lo.to_string()),
                    (Hole::Rand(_, hi), End::High) => ("{{rand}}", hi.to_string()),
                    _ => ("{{now_ms}}", now_ms().to_string()),
                };
                spans.push((out.len(), Filled::Builtin(name, value.clone())));
                out.push_str(&value);
            }
        }
    }
    (out, spans)
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_escaped_as_json_string_characters() {
        let columns = vec!["name".to_string(), "n".to_string()];
        let text = Text::parse(r#"{"name":"{{name}}","times":{{n}}}"#, Some(&columns)).unwrap();
        let rows = Rows::new(vec!["a".into(), "b".into()], vec![vec!["say \"hi\"\n".into(), "7".into()]]);
        let (json, spans) = fill(&text, rows.row(0), End::Low);
        assert_eq!(json, r#"{"name":"say \"hi\"\n","times":7}"#);
        let starts: Vec<(usize, usize)> = spans
            .iter()
            .map(|(at, f)| match f {
                Filled::Column(c) => (*at, *c),
                Filled::Builtin(..) => panic!("no built-in here"),
            })
            .collect();
        assert_eq!(starts, [(9, 0), (31, 1)]);
    }
}
