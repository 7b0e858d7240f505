//! drnbench-request-response's CSV (drnbench's own, or `hakaru sweep -o`): six fixed columns (clients, requests,
//! queries per second, min, max and mean time in seconds), then one column per status holding its percentage of
//! the row's requests. The one parser of it; `compare`, `report` and `history import` build their models from its
//! rows.

use std::collections::BTreeMap;

use crate::export::drnbench::DRNBENCH_COLUMNS;

/// One row of drnbench's CSV.
#[derive(Clone, Debug, PartialEq)]
pub struct DrnbenchRow {
    pub clients: usize,
    pub requests: u64,
    /// Requests per second, as drnbench divides: by the duration asked for.
    pub qps: f64,
    /// Seconds, as drnbench writes them; empty cells (no request timed) are None.
    pub min_s: Option<f64>,
    pub max_s: Option<f64>,
    pub mean_s: Option<f64>,
    /// Status (as the header names it, `0` for a timeout) -> percent of the row's requests.
    pub status_percent: BTreeMap<String, f64>,
}

impl DrnbenchRow {
    /// The percent of the requests answered with a success (status 200-399), as compare and the report count.
    pub fn ok_percent(&self) -> f64 {
        self.status_percent.iter().filter(|(code, _)| is_success(code)).map(|(_, p)| p).sum()
    }
}

/// A status column of 200-399.
fn is_success(code: &str) -> bool {
    code.parse::<u16>().is_ok_and(|c| (200..400).contains(&c))
}

/// Why a text is not drnbench's CSV; lines count from 1 (the header), columns from 0. Each command words these
/// itself; the wording here is for the rest.
/// The most rows a drnbench CSV may have: a row is a step of a sweep (one client count), and each becomes a step
/// of a result document (about 12 kB in memory), so this many keep a file's reading within tens of MiB. drnbench's
/// sweeps have tens of rows; a 15 MB file of 200,000 took 2.4 GB and minutes to import.
pub const MAX_ROWS: usize = 1000;
/// The most status columns: one per HTTP status code (and 0 for timeouts), each kept in every row.
pub const MAX_STATUSES: usize = 600;

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CsvError {
    /// The header does not read as CSV.
    #[error("line 1: cannot read the CSV header: {0}")]
    Header(String),
    /// The header does not start with drnbench's six columns; the header as found.
    // Not quoted: a file that is not drnbench's may be anything (`import /etc/shadow`).
    #[error("line 1: the header is not drnbench's ({})", DRNBENCH_COLUMNS.join(","))]
    NotDrnbench(Vec<String>),
    /// A row does not read as CSV.
    #[error("line {line}: {error}")]
    Row { line: usize, error: String },
    /// Said without its line (`line` is the first row past the cap), as each command places it itself.
    #[error(
        "more than {MAX_ROWS} rows, the most a drnbench CSV may have (a row is one client count of a sweep); split \
         the file"
    )]
    TooManyRows { line: usize },
    /// On line 1, said without it.
    #[error("{0} status columns, more than the {MAX_STATUSES} a drnbench CSV may have (one per status code)")]
    TooManyStatuses(usize),
    /// A cell that should hold a number.
    #[error("line {line} column {} ({name}): '{cell}' is not a number", column + 1)]
    NotANumber { line: usize, column: usize, name: String, cell: String },
    /// A client or request count that is negative or has a fraction.
    #[error("line {line} column {} ({name}): '{cell}' is not a whole number", column + 1)]
    NotWhole { line: usize, column: usize, name: String, cell: String },
}

/// Reads drnbench's CSV. Header names are trimmed; empty cells are 0 for the counts, the rate and a status, and
/// None for the times.
pub fn parse(text: &str) -> Result<Vec<DrnbenchRow>, CsvError> {
    let mut reader = ::csv::ReaderBuilder::new().has_headers(true).from_reader(text.as_bytes());
    let header: Vec<String> =
        reader.headers().map_err(|e| CsvError::Header(e.to_string()))?.iter().map(|h| h.trim().to_string()).collect();
    if header.len() < DRNBENCH_COLUMNS.len() || header[..DRNBENCH_COLUMNS.len()] != DRNBENCH_COLUMNS {
        return Err(CsvError::NotDrnbench(header));
    }
    if header.len() - DRNBENCH_COLUMNS.len() > MAX_STATUSES {
        return Err(CsvError::TooManyStatuses(header.len() - DRNBENCH_COLUMNS.len()));
    }
    let mut rows = Vec::new();
    for (i, record) in reader.records().enumerate() {
        let line = i + 2;
        // Counted as read, so a file of a million rows costs no more than one of a thousand.
        if i == MAX_ROWS {
            return Err(CsvError::TooManyRows { line });
        }
        let record = record.map_err(|e| CsvError::Row { line, error: e.to_string() })?;
        let cell = |column: usize| record.get(column).unwrap_or("").trim();
        let at = |column: usize| (line, column, header[column].clone(), cell(column).to_string());
        let number = |column: usize| -> Result<Option<f64>, CsvError> {
            let t = cell(column);
            if t.is_empty() {
                return Ok(None);
            }
            t.parse::<f64>().map(Some).map_err(|_| {
                let (line, column, name, cell) = at(column);
                CsvError::NotANumber { line, column, name, cell }
            })
        };
        let whole = |column: usize| -> Result<u64, CsvError> {
            let v = number(column)?.unwrap_or(0.0);
            if v < 0.0 || v.fract() != 0.0 {
                let (line, column, name, cell) = at(column);
                return Err(CsvError::NotWhole { line, column, name, cell });
            }
            Ok(v as u64)
        };
        let mut status_percent = BTreeMap::new();
        for (column, code) in header.iter().enumerate().skip(DRNBENCH_COLUMNS.len()) {
            status_percent.insert(code.clone(), number(column)?.unwrap_or(0.0));
        }
        rows.push(DrnbenchRow {
            clients: whole(0)? as usize,
            requests: whole(1)?,
            qps: number(2)?.unwrap_or(0.0),
            min_s: number(3)?,
            max_s: number(4)?,
            mean_s: number(5)?,
            status_percent,
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = "n_clients,total_n_requests,queries_per_second,min_elapsed_time,max_elapsed_time,\
average_elapsed_time,0,200\n1,996,33.2,0.001773766,0.238031643,0.019765581680722916,0,100.0\n\
2,1800,60.0,,,,1.0,99.0\n";

    #[test]
    fn rows_read_with_their_statuses_and_empty_times_as_none() {
        let rows = parse(CSV).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].clients, rows[0].requests, rows[0].qps), (1, 996, 33.2));
        assert_eq!(rows[0].mean_s, Some(0.019765581680722916));
        assert_eq!((rows[1].min_s, rows[1].mean_s), (None, None));
        assert_eq!(rows[1].status_percent.get("0"), Some(&1.0));
        assert_eq!(rows[1].ok_percent(), 99.0);
    }

    #[test]
    fn what_does_not_read_is_placed_by_line_and_column() {
        assert_eq!(parse("a,b\n1,2\n"), Err(CsvError::NotDrnbench(vec!["a".into(), "b".into()])));
        let e = parse(&CSV.replace("33.2", "fast")).unwrap_err();
        let want = CsvError::NotANumber { line: 2, column: 2, name: "queries_per_second".into(), cell: "fast".into() };
        assert_eq!(e, want);
        let e = parse(&CSV.replace("\n2,1800", "\n2.5,1800")).unwrap_err();
        assert!(matches!(e, CsvError::NotWhole { line: 3, column: 0, .. }), "{e:?}");
    }
}
