//! The history: every result document kept in an embedded SQLite database (WAL, schema versioned by
//! `PRAGMA user_version`), with indexed columns (time, command, target, labels, headline figures) to find it again.
//!
//! A small API for the commands that read it (history, show, export, import, and later compare and report):
//! [`Db::open`], [`Db::insert`], [`Db::get`], [`Db::find`], [`Db::resolve`]. Secrets are scrubbed from every
//! document before it is written ([`scrub_secrets`]), whatever the document already redacted.

pub mod drnbench_import;
mod facts;
mod recorder;
mod schema;

pub use facts::workload_id;
use facts::{Facts, labels_of};
use schema::{MIGRATIONS, Migration};
pub use schema::{SCHEMA_V1, SCHEMA_VERSION};

pub use recorder::{Recorder, labels};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde_json::Value;

use crate::error::CliError;
use crate::inputs::result::ReadError;
use crate::result::ResultDocument;

/// How long a writer waits for another process's transaction before giving up (SQLITE_BUSY).
const BUSY_TIMEOUT: Duration = Duration::from_secs(15);

/// A path that exists must be a SQLite database file: a FIFO would block SQLite's open forever (SIGTERM ignored),
/// and /dev/zero, a directory or a text file is bad input, said so (exit 2), not a database error.
pub(super) fn check_file(path: &Path) -> Result<()> {
    let bad = |why: String| HistoryError::BadInput(format!("--db '{}': {why}", path.display()));
    let Ok(meta) = std::fs::metadata(path) else { return Ok(()) };
    if !meta.is_file() {
        let kind = crate::base::bounded::kind_of(&meta.file_type());
        return Err(bad(format!("{kind}, not a history database; give a file (--db FILE, or a new path)")));
    }
    let mut head = [0u8; 16];
    if meta.len() == 0 {
        return Ok(());
    }
    let read = std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head));
    match read {
        Ok(()) if &head == b"SQLite format 3\0" => Ok(()),
        Err(e) if e.kind() != std::io::ErrorKind::UnexpectedEof => Ok(()),
        _ => Err(bad("not a SQLite database (hakaru's history is one); give its file, or a new path".into())),
    }
}

/// What can go wrong with the history.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("history database '{path}': {source}")]
    Sqlite { path: String, source: rusqlite::Error },
    #[error("history database '{path}': {what}")]
    Io { path: String, what: String },
    #[error(
        "history database '{path}' has schema version {found}, newer than this hakaru knows ({known}): use a newer \
         hakaru, or another --db"
    )]
    TooNew { path: String, found: i64, known: i64 },
    #[error("no history at '{0}' yet: results are stored there as they are measured (or give another --db)")]
    Missing(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    BadInput(String),
}

impl HistoryError {
    /// Another process holds the lock SQLite needed (SQLITE_BUSY).
    fn is_busy(&self) -> bool {
        matches!(self, HistoryError::Sqlite { source, .. }
            if source.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy))
    }

    /// Bad input (an unknown ID, a bad reference or label) is exit code 2; a database that fails is 1.
    pub fn into_cli(self) -> CliError {
        match self {
            HistoryError::NotFound(_) | HistoryError::BadInput(_) | HistoryError::Missing(_) => {
                CliError::new(self.to_string())
            }
            HistoryError::TooNew { .. } => CliError::new(self.to_string()),
            _ => CliError::runtime(self.to_string()),
        }
    }
}

type Result<T> = std::result::Result<T, HistoryError>;

/// The database's path: `--db`, else `HAKARU_DB`, else `$XDG_DATA_HOME/hakaru/history.db`, else
/// `~/.local/share/hakaru/history.db`; None when none of them is known (no HOME).
pub fn database_path(flag: Option<&Path>) -> Option<PathBuf> {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    flag.map(Path::to_path_buf)
        .or_else(|| env("HAKARU_DB"))
        .or_else(|| env("XDG_DATA_HOME").filter(|p| p.is_absolute()).map(|d| d.join("hakaru/history.db")))
        .or_else(|| env("HOME").map(|h| h.join(".local/share/hakaru/history.db")))
}

/// `key=value` -> (key, value); a bare word `main` is the label `label=main`, so `label=main` finds it again.
pub fn parse_label(text: &str) -> std::result::Result<(String, String), String> {
    let (k, v) = text.split_once('=').unwrap_or(("label", text));
    let (k, v) = (k.trim(), v.trim());
    if k.is_empty() || v.is_empty() {
        return Err(format!("'{text}' is not a label: write key=value, e.g. branch=main"));
    }
    if k.chars().any(|c| c.is_whitespace() || c.is_control()) || v.chars().any(char::is_control) {
        return Err(format!("'{text}': a label's key has no spaces and neither part has control characters"));
    }
    Ok((k.to_string(), v.to_string()))
}

/// Replaces secrets in a document: a secret label, a script's arguments, every string (see
/// [`crate::base::secrets::scrub_document`]).
pub fn scrub_secrets(v: &mut Value) {
    crate::base::secrets::scrub_document(v);
}

/// A stored result as the listing shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub id: i64,
    /// RFC 3339, UTC: when the measurement began.
    pub time: String,
    pub command: String,
    pub target: String,
    pub labels: BTreeMap<String, String>,
    /// Successes per second: of the best step (the only step of a run), or with `--runs N` the runs' mean.
    pub ok_per_s: Option<f64>,
    /// The p99 latency of that step (of the runs' merged histogram), microseconds; None when the document has no
    /// percentiles (a drnbench CSV).
    pub p99_us: Option<u64>,
    /// `--runs N`: the runs completed, and the standard deviation of their ok/s (None below two).
    pub runs: Option<u64>,
    pub ok_per_s_sd: Option<f64>,
    /// `HTTP/1.1`, `HTTP/2`, `gRPC` ... ([`crate::result::protocol_label`]); empty for an imported drnbench CSV.
    pub protocol: String,
    /// `recorded` (measured by hakaru) or `imported`.
    pub source: String,
    /// Answers read as events (`--events`, `hakaru llm`): that step's time to first event's p99, microseconds, and
    /// its output tokens a second (a token stream's); None otherwise.
    pub ttft_p99_us: Option<u64>,
    pub tokens_per_s: Option<f64>,
    /// A token stream's time per output token's p99, microseconds, and with `--goodput` the share of its requests
    /// that met every objective, percent; None otherwise.
    pub tpot_p99_us: Option<u64>,
    pub goodput_percent: Option<f64>,
    /// The workload's identity ([`workload_id`]): results with the same one ran the same load on the same targets.
    pub workload: String,
}

/// Which results [`Db::find`] returns: every condition given must hold; newest first.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// A part of the target text.
    pub target: Option<String>,
    pub labels: Vec<(String, String)>,
    /// RFC 3339 time (or a prefix such as `2026-11-23`): results that began then or later.
    pub since: Option<String>,
    pub command: Option<String>,
    /// A workload identity ([`workload_id`]).
    pub workload: Option<String>,
    pub limit: Option<usize>,
}

/// An open history database.
pub struct Db {
    conn: Connection,
    path: PathBuf,
}

impl Db {
    /// Opens (creating it and its folder when needed) and migrates the database at `path`.
    pub fn open(path: &Path) -> Result<Db> {
        check_file(path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
            // The user's alone (0700): the history keeps every target and result.
            use std::os::unix::fs::DirBuilderExt as _;
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|e| HistoryError::Io {
                path: path.display().to_string(),
                what: format!("cannot create its folder: {e}"),
            })?;
        }
        // A new database file is made 0600 before SQLite opens it (SQLite would make it 0644 less the umask); its WAL
        // and shared-memory files take the database's mode.
        if !path.exists() {
            use std::os::unix::fs::OpenOptionsExt as _;
            let _ = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path);
        }
        // Two processes opening a new file at once: turning it to WAL takes a write lock from within the pragma's
        // read, and SQLite answers SQLITE_BUSY at once rather than wait (the busy timeout is not used, as waiting
        // could deadlock). So opening is tried again, a little later each time, for as long as the busy timeout (an
        // attempt's migration may wait up to that timeout itself, so at worst about twice it in all).
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        let mut pause = Duration::from_millis(2);
        loop {
            let conn = Connection::open(path).map_err(|e| sql_error(path, e))?;
            let mut db = Db { conn, path: path.to_path_buf() };
            match db.configure().and_then(|()| db.migrate()) {
                Err(err) if err.is_busy() && std::time::Instant::now() + pause < deadline => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                result => return result.map(|()| db),
            }
        }
    }

    /// Opens an existing database; a missing file is [`HistoryError::Missing`], not a new empty database.
    pub fn open_existing(path: &Path) -> Result<Db> {
        if !path.exists() {
            return Err(HistoryError::Missing(path.display().to_string()));
        }
        check_file(path)?;
        match Db::open(path) {
            Ok(db) => Ok(db),
            // A database only read (a read-only directory, a file of someone else's) is opened read-only: listing,
            // showing and comparing need no write.
            Err(writable) => Db::open_read_only(path).map_err(|_| writable),
        }
    }

    /// Opens an existing database read-only, as immutable (no WAL or shared-memory file is created beside it, so
    /// a read-only directory serves; a writer's last commits not yet checkpointed are not seen, and a writer
    /// checkpoints when it closes). Its schema must be this binary's: a read-only file cannot be migrated.
    fn open_read_only(path: &Path) -> Result<Db> {
        use rusqlite::OpenFlags;
        let uri = format!("file:{}?immutable=1", path.display());
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&uri, flags).map_err(|e| sql_error(path, e))?;
        let found: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(|e| sql_error(path, e))?;
        if found != SCHEMA_VERSION {
            return Err(HistoryError::Io {
                path: path.display().to_string(),
                what: format!(
                    "read-only, and of schema version {found} where this hakaru reads {SCHEMA_VERSION}; open it once \
                     where it can be written"
                ),
            });
        }
        Ok(Db { conn, path: path.to_path_buf() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, e: rusqlite::Error) -> HistoryError {
        sql_error(&self.path, e)
    }

    fn configure(&self) -> Result<()> {
        let e = |err| self.err(err);
        // The busy timeout first: setting WAL on a file another process is writing waits instead of failing.
        self.conn.busy_timeout(BUSY_TIMEOUT).map_err(e)?;
        // WAL: readers and the writer do not block each other, and a killed writer loses no committed result.
        let mode: String = self.conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).map_err(e)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(HistoryError::Io {
                path: self.path.display().to_string(),
                what: format!("the journal mode stays '{mode}', not WAL (a file system without shared memory?)"),
            });
        }
        // NORMAL in WAL: a crash of the process loses nothing committed; a power loss may lose the last commits.
        self.conn.pragma_update(None, "synchronous", "NORMAL").map_err(e)?;
        self.conn.pragma_update(None, "foreign_keys", true).map_err(e)?;
        Ok(())
    }

    /// Runs the missing schema steps in one transaction (taken before reading the version, so two processes
    /// opening a new file do not both migrate it).
    fn migrate(&mut self) -> Result<()> {
        let path = self.path.clone();
        let e = |err| sql_error(&path, err);
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(e)?;
        let found: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(e)?;
        if found > SCHEMA_VERSION {
            return Err(HistoryError::TooNew { path: path.display().to_string(), found, known: SCHEMA_VERSION });
        }
        for step in &MIGRATIONS[found.max(0) as usize..] {
            match step {
                Migration::Sql(sql) => tx.execute_batch(sql),
                Migration::Rust(f) => f(&tx),
            }
            .map_err(e)?;
        }
        if found < SCHEMA_VERSION {
            tx.pragma_update(None, "user_version", SCHEMA_VERSION).map_err(e)?;
        }
        tx.commit().map_err(e)
    }

    /// Stores a result document measured by hakaru (secrets scrubbed) with its own labels and `labels` (added to
    /// its `settings.labels` too); returns its ID.
    pub fn insert(&mut self, doc: &ResultDocument, labels: &BTreeMap<String, String>) -> Result<i64> {
        let mut json = serde_json::to_value(doc).map_err(|e| HistoryError::BadInput(e.to_string()))?;
        if let Some(settings) = json.get_mut("settings").and_then(Value::as_object_mut) {
            let own = settings.entry("labels").or_insert_with(|| Value::Object(Default::default()));
            if let Some(own) = own.as_object_mut() {
                own.extend(labels.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))));
            }
        }
        self.insert_json(json, "recorded")
    }

    /// Stores a result document given as JSON, labelled by its `settings.labels`; `source` is `recorded` or
    /// `imported`.
    pub fn insert_json(&mut self, mut doc: Value, source: &str) -> Result<i64> {
        scrub_secrets(&mut doc);
        let facts = Facts::of(&doc);
        let labels = labels_of(&doc);
        let text = serde_json::to_string(&doc).map_err(|e| HistoryError::BadInput(e.to_string()))?;
        let path = self.path.clone();
        let e = |err| sql_error(&path, err);
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(e)?;
        tx.execute(
            "INSERT INTO results
                 (time, command, target, document, source, hakaru_version, host, ok_per_s, p99_us, workload,
                  protocol, runs, ok_per_s_sd, ttft_p99_us, tokens_per_s, tpot_p99_us, goodput_percent)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
            params![
                facts.time,
                facts.command,
                facts.target,
                text,
                source,
                facts.hakaru_version,
                facts.host,
                facts.ok_per_s,
                facts.p99_us,
                facts.workload,
                facts.protocol,
                facts.runs,
                facts.ok_per_s_sd,
                facts.ttft_p99_us,
                facts.tokens_per_s,
                facts.tpot_p99_us,
                facts.goodput_percent
            ],
        )
        .map_err(e)?;
        let id = tx.last_insert_rowid();
        for (k, v) in &labels {
            tx.execute("INSERT INTO labels (result_id, key, value) VALUES (?1, ?2, ?3)", params![id, k, v])
                .map_err(e)?;
        }
        tx.commit().map_err(e)?;
        Ok(id)
    }

    /// The stored document of result `id`, as JSON; None when there is no such result.
    pub fn get(&self, id: i64) -> Result<Option<Value>> {
        let text: Option<String> = self
            .conn
            .query_row("SELECT document FROM results WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))?;
        text.map(|t| {
            serde_json::from_str(&t).map_err(|e| HistoryError::BadInput(format!("result #{id} does not parse: {e}")))
        })
        .transpose()
    }

    /// The stored document of result `id`, read as a result document.
    pub fn get_document(&self, id: i64) -> Result<ResultDocument> {
        self.resolve_document(&id.to_string()).map(|(_, doc)| doc)
    }

    /// [`Db::resolve`], read as a result document.
    pub fn resolve_document(&self, reference: &str) -> Result<(i64, ResultDocument)> {
        let (id, json) = self.resolve(reference)?;
        // Read as any result file is (`crate::inputs`): a document a later hakaru stored is refused by its schema.
        let doc = crate::inputs::result::document_from_value(json).map_err(|e| {
            HistoryError::BadInput(match e {
                ReadError::NotADocument(e) => {
                    format!("result #{id} is not a result document this hakaru can read: {e}")
                }
                e => format!("result #{id}: {e}"),
            })
        })?;
        Ok((id, doc))
    }

    fn not_found(&self, what: &str) -> HistoryError {
        HistoryError::NotFound(format!(
            "no result {what} in the history '{}': 'hakaru history' lists them",
            self.path.display()
        ))
    }

    /// The results that match `filter`, newest first.
    pub fn find(&self, filter: &Filter) -> Result<Vec<Row>> {
        let mut sql = String::from(
            "SELECT id, time, command, target, ok_per_s, p99_us, source, workload, protocol, runs, ok_per_s_sd,
                    ttft_p99_us, tokens_per_s, tpot_p99_us, goodput_percent
             FROM results WHERE 1 = 1",
        );
        let mut args: Vec<Box<dyn rusqlite::ToSql>> = Vec::new();
        let fields = [
            (&filter.target, " AND instr(target, ?) > 0"),
            (&filter.since, " AND time >= ?"),
            (&filter.workload, " AND workload = ?"),
            (&filter.command, " AND command = ?"),
        ];
        for (value, condition) in fields {
            if let Some(v) = value {
                sql.push_str(condition);
                args.push(Box::new(v.clone()));
            }
        }
        for (k, v) in &filter.labels {
            sql.push_str(
                " AND EXISTS (SELECT 1 FROM labels l WHERE l.result_id = results.id AND l.key = ? AND l.value = ?)",
            );
            args.push(Box::new(k.clone()));
            args.push(Box::new(v.clone()));
        }
        // Newest by the time measured, then by insertion (an import of old results keeps their time).
        sql.push_str(" ORDER BY time DESC, id DESC");
        if let Some(n) = filter.limit {
            sql.push_str(&format!(" LIMIT {n}"));
        }
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let refs: Vec<&dyn rusqlite::ToSql> = args.iter().map(|b| b.as_ref()).collect();
        let mut rows: Vec<Row> = stmt
            .query_map(refs.as_slice(), |r| {
                Ok(Row {
                    id: r.get(0)?,
                    time: r.get(1)?,
                    command: r.get(2)?,
                    target: r.get(3)?,
                    labels: BTreeMap::new(),
                    ok_per_s: r.get(4)?,
                    p99_us: r.get::<_, Option<i64>>(5)?.map(|v| v.max(0) as u64),
                    source: r.get(6)?,
                    workload: r.get(7)?,
                    protocol: r.get(8)?,
                    runs: r.get::<_, Option<i64>>(9)?.map(|v| v.max(0) as u64),
                    ok_per_s_sd: r.get(10)?,
                    ttft_p99_us: r.get::<_, Option<i64>>(11)?.map(|v| v.max(0) as u64),
                    tokens_per_s: r.get(12)?,
                    tpot_p99_us: r.get::<_, Option<i64>>(13)?.map(|v| v.max(0) as u64),
                    goodput_percent: r.get(14)?,
                })
            })
            .and_then(|it| it.collect::<rusqlite::Result<Vec<Row>>>())
            .map_err(|e| self.err(e))?;
        let mut labels =
            self.conn.prepare("SELECT key, value FROM labels WHERE result_id = ?1").map_err(|e| self.err(e))?;
        for row in &mut rows {
            row.labels = labels
                .query_map([row.id], |r| Ok((r.get(0)?, r.get(1)?)))
                .and_then(|it| it.collect())
                .map_err(|e| sql_error(&self.path, e))?;
        }
        Ok(rows)
    }

    /// A reference to a stored result: an ID (`42`, `#42`), `last`, or a label `key=value` (the newest result
    /// with that label). Returns its ID and document.
    pub fn resolve(&self, reference: &str) -> Result<(i64, Value)> {
        let r = reference.trim();
        let id = if let Ok(id) = r.trim_start_matches('#').parse::<i64>() {
            id
        } else if r == "last" || r == "latest" {
            let rows = self.find(&Filter { limit: Some(1), ..Filter::default() })?;
            rows.first().map(|row| row.id).ok_or_else(|| self.not_found("at all"))?
        } else if r.contains('=') {
            let label = parse_label(r).map_err(HistoryError::BadInput)?;
            let rows = self.find(&Filter { labels: vec![label], limit: Some(1), ..Filter::default() })?;
            rows.first().map(|row| row.id).ok_or_else(|| self.not_found(&format!("labelled {r}")))?
        } else {
            return Err(HistoryError::BadInput(format!(
                "'{reference}' is not a history reference: give an ID (42), 'last', or a label key=value"
            )));
        };
        let doc = self.get(id)?.ok_or_else(|| self.not_found(&format!("#{id}")))?;
        Ok((id, doc))
    }

    /// `PRAGMA integrity_check`: "ok" when the file is sound.
    pub fn integrity_check(&self) -> Result<String> {
        self.conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).map_err(|e| self.err(e))
    }

    /// The schema version of the open file.
    pub fn schema_version(&self) -> Result<i64> {
        self.conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(|e| self.err(e))
    }
}

fn sql_error(path: &Path, source: rusqlite::Error) -> HistoryError {
    HistoryError::Sqlite { path: path.display().to_string(), source }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(command: &str, target: &str, qps: f64, p99: u64, labels: Value) -> Value {
        json!({
            "schema": "hakaru.result/1",
            "provenance": {"started_at": "2026-11-23T20:00:00Z", "hakaru_version": "0.1.0", "hostname": "h",
                           "command_line": ["hakaru", "run", "-H", "Authorization: Bearer TOPSECRET"]},
            "settings": {"command": command, "targets": [target], "labels": labels},
            "steps": [{"throughput": {"ok_per_s": qps}, "latency": {"percentiles": {"p99": p99}}},
                      {"throughput": {"ok_per_s": qps / 2.0}, "latency": {"percentiles": {"p99": 1}}}],
        })
    }

    #[test]
    fn a_run_without_success_has_no_p99_and_a_capacity_row_is_the_capacity_found() {
        let mut none = doc("run", "http://127.0.0.1:1/", 0.0, 0, json!({}));
        none["steps"] = json!([{"throughput": {"ok_per_s": 0.0}, "latency": {"count": 0, "percentiles": {"p99": 0}}}]);
        let facts = Facts::of(&none);
        assert_eq!((facts.ok_per_s, facts.p99_us), (Some(0.0), None), "no success: p99 '-', not 0us");
        // 100/s passed (p99 2 ms), 200/s failed the objective with more successes per second (p99 90 ms).
        let step = |rate: f64, ok: f64, p99: u64| {
            json!({"load": {"rate": rate}, "throughput": {"ok_per_s": ok},
                   "latency": {"count": 10, "percentiles": {"p99": p99}}})
        };
        let mut capacity = doc("capacity", "http://127.0.0.1:1/", 0.0, 0, json!({}));
        capacity["steps"] = json!([step(100.0, 100.0, 2000), step(200.0, 150.0, 90_000)]);
        capacity["analysis"] = json!({"capacity": {"rate": 100.0, "first_failing_rate": 200.0}});
        let facts = Facts::of(&capacity);
        assert_eq!((facts.ok_per_s, facts.p99_us), (Some(100.0), Some(2000)));
        capacity["analysis"]["capacity"]["rate"] = Value::Null;
        let facts = Facts::of(&capacity);
        assert_eq!((facts.ok_per_s, facts.p99_us), (None, None), "no rate met the objective: nothing to show");
    }

    #[test]
    fn a_database_of_schema_4_gets_its_streamed_results_tpot_and_goodput() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.db");
        let mut streamed = doc("llm", "http://127.0.0.1:1/", 10.0, 5, json!({}));
        streamed["steps"][0]["events"] = json!({"first_event": {"percentiles": {"p99": 52_000}},
            "tokens": {"tokens_per_s": 90.0, "tpot": {"percentiles": {"p99": 11_000}}}, "goodput": {"percent": 97.5}});
        {
            let mut db = Db::open(&path).unwrap();
            db.insert_json(streamed, "recorded").unwrap();
            db.insert_json(doc("run", "http://127.0.0.1:1/", 10.0, 5, json!({})), "recorded").unwrap();
            // The file as schema 4 left it: no columns of the fifth.
            db.conn
                .execute_batch(
                    "ALTER TABLE results DROP COLUMN tpot_p99_us; ALTER TABLE results DROP COLUMN goodput_percent;
                     PRAGMA user_version = 4;",
                )
                .unwrap();
        }
        let db = Db::open(&path).unwrap();
        assert_eq!(db.schema_version().unwrap(), SCHEMA_VERSION);
        let rows = db.find(&Filter::default()).unwrap();
        let figures: Vec<_> = rows.iter().map(|r| (r.command.as_str(), r.tpot_p99_us, r.goodput_percent)).collect();
        assert_eq!(figures, [("run", None, None), ("llm", Some(11_000), Some(97.5))]);
    }

    #[test]
    fn labels_are_key_value_or_a_bare_word() {
        assert_eq!(parse_label("branch=main"), Ok(("branch".into(), "main".into())));
        assert_eq!(parse_label("main"), Ok(("label".into(), "main".into())));
        assert_eq!(parse_label("a=b=c"), Ok(("a".into(), "b=c".into())));
        assert!(parse_label("=x").is_err());
        assert!(parse_label("k=").is_err());
        assert!(parse_label("a b=c").is_err());
    }

    #[test]
    fn secrets_are_scrubbed_in_every_string_and_glued_flag() {
        let mut v = json!({
            "a": ["--header=Authorization: Bearer S1", "-HCookie: sid=S2", "redis://u:S3@127.0.0.1:6379"],
            "b": "failed on http://x:S4@127.0.0.1/ today", "c": "X-Plain: 1"
        });
        scrub_secrets(&mut v);
        let text = v.to_string();
        for s in ["S1", "S2", "S3", "S4"] {
            assert!(!text.contains(s), "{s} left in {text}");
        }
        assert!(text.contains("X-Plain: 1") && text.contains("--header=Authorization: <redacted>"), "{text}");
    }

    #[test]
    fn stored_documents_are_found_by_target_label_time_and_reference() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = Db::open(&dir.path().join("sub/h.db")).unwrap();
        assert_eq!(db.schema_version().unwrap(), SCHEMA_VERSION);
        let a = db.insert_json(doc("run", "http://127.0.0.1:1/", 100.0, 900, json!({"branch": "main"})), "recorded");
        let b = db.insert_json(doc("sweep", "http://127.0.0.1:2/", 50.0, 800, json!({"branch": "dev"})), "recorded");
        let (a, b) = (a.unwrap(), b.unwrap());
        let all = db.find(&Filter::default()).unwrap();
        assert_eq!(all.iter().map(|r| r.id).collect::<Vec<_>>(), vec![b, a]);
        assert_eq!(all[1].ok_per_s, Some(100.0));
        assert_eq!(all[1].p99_us, Some(900));
        assert_eq!(all[1].labels.get("branch").map(String::as_str), Some("main"));
        let by_target = db.find(&Filter { target: Some("127.0.0.1:2".into()), ..Filter::default() }).unwrap();
        assert_eq!(by_target.len(), 1);
        assert_eq!(by_target[0].id, b);
        let by_label =
            db.find(&Filter { labels: vec![("branch".into(), "main".into())], ..Filter::default() }).unwrap();
        assert_eq!(by_label.iter().map(|r| r.id).collect::<Vec<_>>(), vec![a]);
        assert!(db.find(&Filter { since: Some("2027".into()), ..Filter::default() }).unwrap().is_empty());
        assert_eq!(db.resolve("branch=main").unwrap().0, a);
        // Same settings but labels and seed: one workload; another target: another.
        let twin = doc("run", "http://127.0.0.1:1/", 90.0, 950, json!({"branch": "dev"}));
        let c = db.insert_json(twin, "recorded").unwrap();
        assert_eq!(all[1].workload, db.find(&Filter { limit: Some(1), ..Filter::default() }).unwrap()[0].workload);
        assert_ne!(all[0].workload, all[1].workload);
        let same = db.find(&Filter { workload: Some(all[1].workload.clone()), ..Filter::default() }).unwrap();
        let reordered = json!({"settings": {"targets": ["http://127.0.0.1:1/"], "labels": {}, "command": "run"}});
        assert_eq!(workload_id(&reordered), all[1].workload, "key order does not change the identity");
        assert_eq!(same.iter().map(|r| r.id).collect::<Vec<_>>(), vec![c, a]);
        assert_eq!(db.resolve(&format!("#{b}")).unwrap().0, b);
        assert_eq!(db.resolve("last").unwrap().0, c, "the newest: same time, stored last");
        assert!(matches!(db.resolve("branch=none"), Err(HistoryError::NotFound(_))));
        assert!(matches!(db.resolve("999"), Err(HistoryError::NotFound(_))));
        assert!(matches!(db.resolve("what"), Err(HistoryError::BadInput(_))));
        let stored = db.get(a).unwrap().unwrap().to_string();
        assert!(!stored.contains("TOPSECRET"), "{stored}");
    }

    #[test]
    fn a_document_is_stored_with_the_labels_given_and_read_back_typed() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = Db::open(&dir.path().join("h.db")).unwrap();
        let csv = "n_clients,total_n_requests,queries_per_second,min_elapsed_time,max_elapsed_time,\
                   average_elapsed_time,200\n1,10,1.0,0.001,0.002,0.0015,100.0\n";
        let doc = drnbench_import::from_drnbench_csv("r.csv", csv, "2026-11-23T00:00:00Z").unwrap();
        let labels: BTreeMap<String, String> = [("branch".to_string(), "x".to_string())].into();
        let id = db.insert(&doc, &labels).unwrap();
        let (found, back) = db.resolve_document("branch=x").unwrap();
        assert_eq!(found, id);
        assert_eq!(back.settings.labels, labels);
        assert_eq!(back.steps, doc.steps);
        assert_eq!(db.get_document(id).unwrap(), back);
        assert!(matches!(db.get_document(id + 1), Err(HistoryError::NotFound(_))));
    }

    #[test]
    fn a_first_schema_database_migrates_on_open_and_a_newer_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.db");
        let d = doc("run", "http://127.0.0.1:9/", 123.5, 4567, json!({"branch": "old"}));
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(SCHEMA_V1).unwrap();
            conn.pragma_update(None, "user_version", 1).unwrap();
            conn.execute(
                "INSERT INTO results (time, command, target, document) VALUES (?1, 'run', 'http://127.0.0.1:9/', ?2)",
                params!["2026-01-01T00:00:00Z", d.to_string()],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO results (time, command, target, document) VALUES ('2026-01-02T00:00:00Z', 'run', 't', 'not json')",
                [],
            )
            .unwrap();
        }
        let db = Db::open(&path).unwrap();
        assert_eq!(db.schema_version().unwrap(), SCHEMA_VERSION);
        let rows = db.find(&Filter { labels: vec![("branch".into(), "old".into())], ..Filter::default() }).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].ok_per_s, rows[0].p99_us, rows[0].source.as_str()), (Some(123.5), Some(4567), "recorded"));
        assert_eq!(rows[0].workload, workload_id(&d));
        assert_eq!(db.find(&Filter::default()).unwrap().len(), 2, "the unreadable row is kept");
        drop(db);
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1).unwrap();
        drop(conn);
        assert!(matches!(Db::open(&path), Err(HistoryError::TooNew { .. })));
    }
}
