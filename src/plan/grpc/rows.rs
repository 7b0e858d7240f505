//! `--data` rows in a gRPC message: the `{{column}}` holes of the JSON filled with each row's values, and each
//! distinct filled JSON encoded through the method's input descriptor once, before the load; every call then sends
//! its row's framed message as it is (no JSON or protobuf work per call).

use std::collections::HashMap;

use prost_reflect::MethodDescriptor;

use super::call_body;
use crate::cli::args::RequestArgs;
use crate::error::UsageError;
use crate::template::RowBodies;
use crate::template::data::Rows;
use crate::template::text::{Hole, Part, Text};

/// The rows, and the framed message each one sends.
pub struct RowMessages {
    pub rows: Rows,
    pub bodies: RowBodies,
    /// Messages in each body (the same for every row).
    pub messages_per_call: u32,
}

/// The message of each `--data` row, when there is a `--data` file; a built-in (`{{seq}}` ...) in the message is
/// refused, as it would be a message per call.
pub fn prepare(
    a: &RequestArgs,
    segment: Option<super::super::segment::Segment>,
    method: &MethodDescriptor,
    json: &str,
    flag: &str,
) -> Result<Option<RowMessages>, UsageError> {
    let rows = match &a.data {
        Some(path) => Some(super::super::data_rows(path, segment)?),
        None => None,
    };
    let columns = rows.as_ref().map(|r| r.columns.clone());
    let text = Text::parse(json, columns.as_deref()).map_err(|why| UsageError::new(format!("{flag}: {why}")))?;
    if let Some(builtin) = text.parts.iter().find_map(|p| match p {
        Part::Hole(h) if !matches!(h, Hole::Column(_)) => Some(h),
        _ => None,
    }) {
        let name = match builtin {
            Hole::Seq => "{{seq}}",
            Hole::Uuid => "{{uuid}}",
            Hole::Rand(..) => "{{rand LOW HIGH}}",
            _ => "{{now_ms}}",
        };
        return Err(UsageError::new(format!(
            "{flag}: {name} in a gRPC message: not supported, each message is encoded once per --data row before \
             the load; give the values as a column of a --data file"
        )));
    }
    let Some(rows) = rows else { return Ok(None) };
    let data = a.data.as_deref().map(|p| p.display().to_string()).unwrap_or_default();
    let mut seen: HashMap<String, u32> = HashMap::new();
    let mut bodies = RowBodies::default();
    let mut per_call = None;
    for (r, row) in rows.rows.iter().enumerate() {
        let (filled, spans) = fill(&text, row);
        if let Some(&i) = seen.get(&filled) {
            bodies.of_row.push(i);
            continue;
        }
        let (body, n) = call_body(a, method, &filled, flag).map_err(|refused| {
            // The column whose value the JSON failed in or after: the last hole that starts before the fault. A
            // fault before any hole is the template's own (an unknown field), whatever the row.
            let Some(column) = refused.at.and_then(|at| spans.iter().rfind(|(start, _)| *start <= at)) else {
                return refused.error;
            };
            UsageError::new(format!(
                "--data '{data}' row {} column '{}': {}; give a value of the field's type in that column",
                r + 1,
                rows.columns[column.1],
                refused.error.to_string().trim_end()
            ))
        })?;
        if *per_call.get_or_insert(n) != n {
            return Err(UsageError::new(format!(
                "--data '{data}' row {}: {n} messages a call where the rows before give {}; a row's values must not \
                 change the message's shape",
                r + 1,
                per_call.unwrap_or(n)
            )));
        }
        let i = bodies.bodies.len() as u32;
        bodies.bodies.push(body);
        seen.insert(filled, i);
        bodies.of_row.push(i);
    }
    Ok(Some(RowMessages { rows, bodies, messages_per_call: per_call.unwrap_or(1) }))
}

/// The JSON with the row's values in its holes, each escaped as a JSON string's characters (a value goes in
/// quotes, `"{{name}}"`, or in a number's place, where it is the number's digits), and where each value starts
/// with its column.
fn fill(text: &Text, row: &[String]) -> (String, Vec<(usize, usize)>) {
    let mut out = String::new();
    let mut spans = Vec::new();
    for part in &text.parts {
        match part {
            Part::Literal(bytes) => out.push_str(&String::from_utf8_lossy(bytes)),
            Part::Hole(Hole::Column(c)) => {
                spans.push((out.len(), *c));
                let quoted = serde_json::Value::String(row[*c].clone()).to_string();
                out.push_str(&quoted[1..quoted.len() - 1]);
            }
            Part::Hole(_) => {}
        }
    }
    (out, spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_escaped_as_json_string_characters() {
        let columns = vec!["name".to_string(), "n".to_string()];
        let text = Text::parse(r#"{"name":"{{name}}","times":{{n}}}"#, Some(&columns)).unwrap();
        let (json, spans) = fill(&text, &["say \"hi\"\n".to_string(), "7".to_string()]);
        assert_eq!(json, r#"{"name":"say \"hi\"\n","times":7}"#);
        assert_eq!(spans, [(9, 0), (31, 1)]);
    }
}
