//! A data file's rows (`--data`): CSV with a header line of column names, or JSON lines (one object a line, its
//! keys the columns). Read whole before the run, within the body files' cap.

use std::path::Path;

/// The most rows a data file may hold.
pub const MOST_ROWS: usize = 10_000_000;

/// The most columns a data file may name: a request's holes name columns one by one, and 2 million of them took
/// 481 MB for a 21 MB file.
pub const MOST_COLUMNS: usize = 10_000;

/// Column names and rows of values, each row as long as the names. The values are one text and where each ends,
/// not a `String` each: 10 million rows of one short column took 1.67 GB as `Vec<Vec<String>>` (24 bytes a row's
/// vector, 24 a value's string and an allocation each), and take their bytes and 4 more a value so.
#[derive(Clone, Debug, Default)]
pub struct Rows {
    pub columns: Vec<String>,
    /// Every value of every row, one after another.
    text: String,
    /// Where each value ends in `text`: row i's are `ends[i * width .. (i + 1) * width]`.
    ends: Vec<u32>,
    /// The most values a file of its size can hold (a value costs at least its separator's byte), 0 unbounded:
    /// JSON lines of `{}` give a value of every column from 3 bytes.
    most_values: usize,
}

/// One row's values, by column.
#[derive(Clone, Copy, Debug)]
pub struct Row<'a> {
    text: &'a str,
    /// Where the row's first value starts.
    start: u32,
    ends: &'a [u32],
}

impl<'a> Row<'a> {
    /// The row of a request without a data file: no value.
    pub const NONE: Row<'static> = Row { text: "", start: 0, ends: &[] };

    /// The value in `column`, None past the row's end.
    pub fn get(&self, column: usize) -> Option<&'a str> {
        let end = *self.ends.get(column)?;
        let start = if column == 0 { self.start } else { self.ends[column - 1] };
        Some(&self.text[start as usize..end as usize])
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

impl std::ops::Index<usize> for Row<'_> {
    type Output = str;

    fn index(&self, column: usize) -> &str {
        self.get(column).expect("a column of the row")
    }
}

impl Rows {
    /// Rows of `values` (each as long as `columns`).
    pub fn new(columns: Vec<String>, values: Vec<Vec<String>>) -> Rows {
        let mut rows = Rows { columns, ..Rows::default() };
        for row in values {
            rows.push(row.iter().map(String::as_str)).expect("a row's values within 4 GiB");
        }
        rows
    }

    /// How many rows.
    pub fn len(&self) -> usize {
        self.ends.len().checked_div(self.columns.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Row `i` (below [`len`](Self::len)).
    pub fn row(&self, i: usize) -> Row<'_> {
        let w = self.columns.len();
        let ends = &self.ends[i * w..(i + 1) * w];
        let start = if i == 0 { 0 } else { self.ends[i * w - 1] };
        Row { text: &self.text, start, ends }
    }

    /// The rows in order.
    pub fn iter(&self) -> impl Iterator<Item = Row<'_>> {
        (0..self.len()).map(|i| self.row(i))
    }

    /// Room for the values of a file of `text`, a row a line: grown by doubling, the offsets of 10 million rows
    /// would briefly take three times their 40 MB.
    fn reserve(&mut self, text: &str) {
        let lines = text.bytes().filter(|&b| b == b'\n').count() + 1;
        self.most_values = text.len() + self.columns.len();
        // Blank lines are lines but no rows: never more room than the file can fill.
        self.ends.reserve((lines.min(MOST_ROWS + 1) * self.columns.len()).min(self.most_values));
        self.text.reserve(text.len());
    }

    /// Adds a row (as many values as columns), refused past 4 GiB of values (the file's cap keeps far below).
    fn push<'v>(&mut self, values: impl Iterator<Item = &'v str>) -> Result<(), String> {
        for v in values {
            self.text.push_str(v);
            let end = u32::try_from(self.text.len()).map_err(|_| "more than 4 GiB of values; split the file")?;
            self.ends.push(end);
            if self.most_values > 0 && self.ends.len() > self.most_values {
                return Err(format!(
                    "more values than the file has bytes ({}): rows that leave out most columns; give each row \
                     the columns the request uses",
                    self.most_values
                ));
            }
        }
        if self.len() > MOST_ROWS {
            return Err(format!("more than {MOST_ROWS} rows; split the file"));
        }
        Ok(())
    }

    /// Reads `path`: JSON lines when its name ends in `.jsonl` or `.ndjson` or its first byte is `{`, else CSV.
    /// The error names the line and says the fix, without the flag (the caller puts it first).
    pub fn load(path: &Path) -> Result<Rows, String> {
        let text = crate::base::bounded::read_text(path, crate::base::bounded::BODY)?;
        let name = path.to_string_lossy();
        let json = name.ends_with(".jsonl") || name.ends_with(".ndjson") || text.trim_start().starts_with('{');
        let mut rows = if json { Self::json_lines(&text)? } else { Self::csv(&text)? };
        rows.ends.shrink_to_fit();
        rows.text.shrink_to_fit();
        if rows.is_empty() {
            return Err("no rows: give a header line of column names and at least one row".into());
        }
        Ok(rows)
    }

    /// Keeps agent `index` of `count`'s share (`--segment`): every `count`-th row from the `index`-th, so the
    /// agents of a scaled-out run together send each row once under `unique`, and never the same row at once.
    pub fn keep_share(&mut self, index: usize, count: usize) -> Result<(), String> {
        let all = self.len();
        let mut kept = Rows { columns: self.columns.clone(), ..Rows::default() };
        for i in (index..all).step_by(count.max(1)) {
            let row = self.row(i);
            kept.push((0..row.len()).map(|c| &row[c]))?;
        }
        if kept.is_empty() {
            return Err(format!("{all} rows leave none for agent {index} of {count}; give at least {count} rows"));
        }
        *self = kept;
        Ok(())
    }

    fn csv(text: &str) -> Result<Rows, String> {
        let mut r = csv::ReaderBuilder::new().has_headers(true).from_reader(text.as_bytes());
        let header = r.headers().map_err(|e| format!("line 1: {e}"))?;
        check_width(header.len())?;
        let columns: Vec<String> = header.iter().map(|c| c.trim().to_string()).collect();
        check_columns(&columns)?;
        let mut rows = Rows { columns, ..Rows::default() };
        rows.reserve(text);
        let mut record = csv::StringRecord::new();
        for i in 0.. {
            let more = r.read_record(&mut record).map_err(|e| match e.position() {
                Some(p) => format!("line {}: {e}; every row needs {} values", p.line(), rows.columns.len()),
                None => format!("row {}: {e}", i + 1),
            })?;
            if !more {
                break;
            }
            rows.push(record.iter())?;
        }
        Ok(rows)
    }

    fn json_lines(text: &str) -> Result<Rows, String> {
        let mut rows = Rows::default();
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let at = |why: String| format!("line {}: {why}", i + 1);
            // A long line's keys are counted before it is parsed into values (2 million took 481 MB).
            if line.len() > 64 << 10 {
                keys_within(line).map_err(at)?;
            }
            let value: serde_json::Value =
                serde_json::from_str(line).map_err(|e| at(format!("not JSON ({e}); write one object a line")))?;
            let serde_json::Value::Object(object) = value else {
                return Err(at("not an object; write one object a line, {\"id\": 1}".into()));
            };
            if rows.columns.is_empty() {
                rows.columns = object.keys().cloned().collect();
                check_columns(&rows.columns).map_err(at)?;
                rows.reserve(text);
            }
            let values: Vec<std::borrow::Cow<'_, str>> = rows
                .columns
                .iter()
                .map(|c| match object.get(c) {
                    None | Some(serde_json::Value::Null) => "".into(),
                    Some(serde_json::Value::String(s)) => s.as_str().into(),
                    Some(other) => other.to_string().into(),
                })
                .collect();
            rows.push(values.iter().map(|v| v.as_ref()))?;
        }
        Ok(rows)
    }
}

/// A data file's width within [`MOST_COLUMNS`].
fn check_width(n: usize) -> Result<(), String> {
    match n > MOST_COLUMNS {
        true => Err(format!("{n} columns, more than {MOST_COLUMNS}; give only the columns the request uses")),
        false => Ok(()),
    }
}

/// A JSON line's object has at most [`MOST_COLUMNS`] keys: counted without keeping a key or a value.
fn keys_within(line: &str) -> Result<(), String> {
    use serde::de::{Deserializer as _, IgnoredAny, MapAccess, Visitor};
    struct Keys;
    impl<'de> Visitor<'de> for Keys {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
            let mut n = 0;
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
                n += 1;
                if n > MOST_COLUMNS {
                    return Err(serde::de::Error::custom(format!("more than {MOST_COLUMNS} keys")));
                }
            }
            Ok(())
        }
    }
    match serde_json::Deserializer::from_str(line).deserialize_map(Keys) {
        Err(e) if e.to_string().starts_with("more than") => {
            Err(format!("more than {MOST_COLUMNS} columns; give only the columns the request uses"))
        }
        // Anything else the parse below says in its own words.
        _ => Ok(()),
    }
}

fn check_columns(columns: &[String]) -> Result<(), String> {
    if columns.is_empty() || columns.iter().any(String::is_empty) {
        return Err("a column without a name; the first line names every column, e.g. id,name".into());
    }
    check_width(columns.len())?;
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

    fn values(r: &Rows) -> Vec<Vec<String>> {
        r.iter().map(|row| (0..row.len()).map(|c| row[c].to_string()).collect()).collect()
    }

    #[test]
    fn csv_and_json_lines_give_columns_and_rows() {
        let (_d, p) = file("a.csv", "id,name\n1,\"a, b\"\n2,c\n");
        let r = Rows::load(&p).unwrap();
        assert_eq!(r.columns, ["id", "name"]);
        assert_eq!(values(&r), [vec!["1", "a, b"], vec!["2", "c"]]);
        let (_d, p) = file("a.jsonl", "{\"id\": 1, \"name\": \"x\"}\n\n{\"id\": 2}\n");
        let r = Rows::load(&p).unwrap();
        assert_eq!(r.columns, ["id", "name"]);
        assert_eq!(values(&r), [vec!["1", "x"], vec!["2", ""]]);
    }

    #[test]
    fn agents_share_the_rows_without_overlap() {
        let rows = |n: usize| Rows::new(vec!["id".into()], (0..n).map(|i| vec![i.to_string()]).collect());
        let mut shares: Vec<String> = Vec::new();
        for i in 0..3 {
            let mut r = rows(7);
            r.keep_share(i, 3).unwrap();
            shares.extend(values(&r).into_iter().flatten());
        }
        shares.sort_by_key(|s| s.parse::<u32>().unwrap());
        assert_eq!(shares, (0..7).map(|i| i.to_string()).collect::<Vec<_>>());
        assert!(rows(2).keep_share(2, 3).unwrap_err().contains("none for agent 2 of 3"));
    }

    #[test]
    fn blank_lines_or_empty_objects_cannot_make_a_small_file_take_gigabytes() {
        let names: Vec<String> = (0..10_000).map(|i| format!("c{i}")).collect();
        let (_d, p) =
            file("a.csv", &format!("{}\n{}\n{}", names.join(","), vec!["1"; 10_000].join(","), "\n".repeat(100_000)));
        assert_eq!(Rows::load(&p).unwrap().len(), 1, "blank lines are no rows, and reserve no room");
        let first = format!("{{{}}}", names.iter().map(|n| format!("\"{n}\":1")).collect::<Vec<_>>().join(","));
        let (_d, p) = file("a.jsonl", &format!("{first}\n{}", "{}\n".repeat(50_000)));
        assert!(Rows::load(&p).unwrap_err().contains("more values than the file has bytes"));
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
