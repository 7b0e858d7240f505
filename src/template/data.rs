//! A data file's rows (`--data`): CSV with a header line of column names, or JSON lines (one object a line, its
//! keys the columns). Read whole before the run, within the body files' cap.

use std::path::Path;

/// The most rows a data file may hold.
pub const MOST_ROWS: usize = 10_000_000;

/// Column names and rows of values, each row as long as the names.
#[derive(Clone, Debug, Default)]
pub struct Rows {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Rows {
    /// Reads `path`: JSON lines when its name ends in `.jsonl` or `.ndjson` or its first byte is `{`, else CSV.
    /// The error names the line and says the fix, without the flag (the caller puts it first).
    pub fn load(path: &Path) -> Result<Rows, String> {
        let text = crate::bounded::read_text(path, crate::bounded::BODY)?;
        let name = path.to_string_lossy();
        let json = name.ends_with(".jsonl") || name.ends_with(".ndjson") || text.trim_start().starts_with('{');
        let rows = if json { Self::json_lines(&text)? } else { Self::csv(&text)? };
        if rows.rows.is_empty() {
            return Err("no rows: give a header line of column names and at least one row".into());
        }
        Ok(rows)
    }

    /// Keeps agent `index` of `count`'s share (`--segment`): every `count`-th row from the `index`-th, so the
    /// agents of a scaled-out run together send each row once under `unique`, and never the same row at once.
    pub fn keep_share(&mut self, index: usize, count: usize) -> Result<(), String> {
        let all = self.rows.len();
        self.rows = std::mem::take(&mut self.rows).into_iter().skip(index).step_by(count.max(1)).collect();
        if self.rows.is_empty() {
            return Err(format!("{all} rows leave none for agent {index} of {count}; give at least {count} rows"));
        }
        Ok(())
    }

    fn csv(text: &str) -> Result<Rows, String> {
        let mut r = csv::ReaderBuilder::new().has_headers(true).from_reader(text.as_bytes());
        let columns: Vec<String> =
            r.headers().map_err(|e| format!("line 1: {e}"))?.iter().map(|c| c.trim().to_string()).collect();
        check_columns(&columns)?;
        let mut rows = Vec::new();
        for (i, record) in r.records().enumerate() {
            let record = record.map_err(|e| match e.position() {
                Some(p) => format!("line {}: {e}; every row needs {} values", p.line(), columns.len()),
                None => format!("row {}: {e}", i + 1),
            })?;
            rows.push(record.iter().map(String::from).collect());
            if rows.len() > MOST_ROWS {
                return Err(format!("more than {MOST_ROWS} rows; split the file"));
            }
        }
        Ok(Rows { columns, rows })
    }

    fn json_lines(text: &str) -> Result<Rows, String> {
        let mut columns: Vec<String> = Vec::new();
        let mut rows = Vec::new();
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let at = |why: String| format!("line {}: {why}", i + 1);
            let value: serde_json::Value =
                serde_json::from_str(line).map_err(|e| at(format!("not JSON ({e}); write one object a line")))?;
            let serde_json::Value::Object(object) = value else {
                return Err(at("not an object; write one object a line, {\"id\": 1}".into()));
            };
            if columns.is_empty() {
                columns = object.keys().cloned().collect();
                check_columns(&columns).map_err(at)?;
            }
            rows.push(
                columns
                    .iter()
                    .map(|c| match object.get(c) {
                        None | Some(serde_json::Value::Null) => String::new(),
                        Some(serde_json::Value::String(s)) => s.clone(),
                        Some(other) => other.to_string(),
                    })
                    .collect(),
            );
            if rows.len() > MOST_ROWS {
                return Err(format!("more than {MOST_ROWS} rows; split the file"));
            }
        }
        Ok(Rows { columns, rows })
    }
}

fn check_columns(columns: &[String]) -> Result<(), String> {
    if columns.is_empty() || columns.iter().any(String::is_empty) {
        return Err("a column without a name; the first line names every column, e.g. id,name".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        (dir, p)
    }

    #[test]
    fn csv_and_json_lines_give_columns_and_rows() {
        let (_d, p) = file("a.csv", "id,name\n1,\"a, b\"\n2,c\n");
        let r = Rows::load(&p).unwrap();
        assert_eq!(r.columns, ["id", "name"]);
        assert_eq!(r.rows, [vec!["1", "a, b"], vec!["2", "c"]]);
        let (_d, p) = file("a.jsonl", "{\"id\": 1, \"name\": \"x\"}\n\n{\"id\": 2}\n");
        let r = Rows::load(&p).unwrap();
        assert_eq!(r.columns, ["id", "name"]);
        assert_eq!(r.rows, [vec!["1", "x"], vec!["2", ""]]);
    }

    #[test]
    fn agents_share_the_rows_without_overlap() {
        let rows = |n: usize| Rows { columns: vec!["id".into()], rows: (0..n).map(|i| vec![i.to_string()]).collect() };
        let mut shares: Vec<String> = Vec::new();
        for i in 0..3 {
            let mut r = rows(7);
            r.keep_share(i, 3).unwrap();
            shares.extend(r.rows.into_iter().flatten());
        }
        shares.sort_by_key(|s| s.parse::<u32>().unwrap());
        assert_eq!(shares, (0..7).map(|i| i.to_string()).collect::<Vec<_>>());
        assert!(rows(2).keep_share(2, 3).unwrap_err().contains("none for agent 2 of 3"));
    }

    #[test]
    fn bad_rows_name_their_line() {
        let (_d, p) = file("a.csv", "id,name\n1,a\n2\n");
        assert!(Rows::load(&p).unwrap_err().starts_with("line 3:"));
        let (_d, p) = file("a.jsonl", "{\"id\": 1}\n[1]\n");
        assert!(Rows::load(&p).unwrap_err().starts_with("line 2: not an object"));
        let (_d, p) = file("a.csv", "id\n");
        assert!(Rows::load(&p).unwrap_err().starts_with("no rows"));
    }
}
