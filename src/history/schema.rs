//! The history database's schema steps: each step takes a database one `user_version` further, filling new
//! columns from the stored documents.

use rusqlite::params;
use serde_json::Value;

use super::facts::{Facts, labels_of};

/// The schema steps, in order: step N (1-based) takes a database from `user_version` N-1 to N. A released step is
/// never edited; a change is a new step.
pub(super) const MIGRATIONS: [Migration; 5] = [
    Migration::Sql(SCHEMA_V1),
    Migration::Rust(migrate_to_v2),
    Migration::Rust(migrate_to_v3),
    Migration::Rust(migrate_to_v4),
    Migration::Rust(migrate_to_v5),
];

/// The schema version this binary writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The first schema: the document and the columns to list it by.
pub const SCHEMA_V1: &str = "
CREATE TABLE results (
    id INTEGER PRIMARY KEY,
    time TEXT NOT NULL,
    command TEXT NOT NULL,
    target TEXT NOT NULL,
    document TEXT NOT NULL
);
CREATE INDEX results_time ON results(time);
";

/// The second schema: labels in their own table, and the figures the listing shows without parsing documents.
const SCHEMA_V2: &str = "
ALTER TABLE results ADD COLUMN source TEXT NOT NULL DEFAULT 'recorded';
ALTER TABLE results ADD COLUMN hakaru_version TEXT NOT NULL DEFAULT '';
ALTER TABLE results ADD COLUMN host TEXT NOT NULL DEFAULT '';
ALTER TABLE results ADD COLUMN ok_per_s REAL;
ALTER TABLE results ADD COLUMN p99_us INTEGER;
ALTER TABLE results ADD COLUMN workload TEXT NOT NULL DEFAULT '';
CREATE INDEX results_workload ON results(workload);
CREATE INDEX results_command ON results(command);
CREATE INDEX results_target ON results(target);
CREATE TABLE labels (
    result_id INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (result_id, key)
);
CREATE INDEX labels_key_value ON labels(key, value);
";

pub(super) enum Migration {
    Sql(&'static str),
    Rust(fn(&rusqlite::Transaction) -> rusqlite::Result<()>),
}

/// Every stored document with its ID, for a migration that reads them again. A document that does not parse keeps
/// its row (still listed and shown as stored), without figures.
fn stored_documents(tx: &rusqlite::Transaction) -> rusqlite::Result<Vec<(i64, Value)>> {
    let rows: Vec<(i64, String)> = {
        let mut stmt = tx.prepare("SELECT id, document FROM results")?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?
    };
    Ok(rows.into_iter().filter_map(|(id, text)| Some((id, serde_json::from_str(&text).ok()?))).collect())
}

/// v1 -> v2: the new tables, then the new columns and labels filled from each stored document.
fn migrate_to_v2(tx: &rusqlite::Transaction) -> rusqlite::Result<()> {
    tx.execute_batch(SCHEMA_V2)?;
    for (id, doc) in stored_documents(tx)? {
        let facts = Facts::of(&doc);
        tx.execute(
            "UPDATE results SET hakaru_version = ?1, host = ?2, ok_per_s = ?3, p99_us = ?4, workload = ?5 WHERE id = ?6",
            params![facts.hakaru_version, facts.host, facts.ok_per_s, facts.p99_us, facts.workload, id],
        )?;
        for (k, v) in labels_of(&doc) {
            tx.execute("INSERT OR REPLACE INTO labels (result_id, key, value) VALUES (?1, ?2, ?3)", params![id, k, v])?;
        }
    }
    Ok(())
}

/// The third schema: a result's protocol, and for `--runs N` the count of runs and their ok/s's spread.
const SCHEMA_V3: &str = "
ALTER TABLE results ADD COLUMN protocol TEXT NOT NULL DEFAULT '';
ALTER TABLE results ADD COLUMN runs INTEGER;
ALTER TABLE results ADD COLUMN ok_per_s_sd REAL;
";

/// v2 -> v3: the new columns, and every row's figures again from its document: a `--runs N` result was listed by
/// its best run (issue 49), now by the runs' mean ok/s and their merged p99, as its text and `compare` give them.
fn migrate_to_v3(tx: &rusqlite::Transaction) -> rusqlite::Result<()> {
    tx.execute_batch(SCHEMA_V3)?;
    for (id, doc) in stored_documents(tx)? {
        let f = Facts::of(&doc);
        tx.execute(
            "UPDATE results SET ok_per_s = ?1, p99_us = ?2, protocol = ?3, runs = ?4, ok_per_s_sd = ?5 WHERE id = ?6",
            params![f.ok_per_s, f.p99_us, f.protocol, f.runs, f.ok_per_s_sd, id],
        )?;
    }
    Ok(())
}

/// The fourth schema: a streamed result's time to first token (its p99) and output tokens a second.
const SCHEMA_V4: &str = "
ALTER TABLE results ADD COLUMN ttft_p99_us INTEGER;
ALTER TABLE results ADD COLUMN tokens_per_s REAL;
";

/// v3 -> v4: the new columns, filled from each stored document that streamed.
fn migrate_to_v4(tx: &rusqlite::Transaction) -> rusqlite::Result<()> {
    tx.execute_batch(SCHEMA_V4)?;
    refill(tx, "instr(document, '\"events\"') > 0", |id, f| {
        tx.execute(
            "UPDATE results SET ttft_p99_us = ?1, tokens_per_s = ?2 WHERE id = ?3",
            params![f.ttft_p99_us, f.tokens_per_s, id],
        )
    })
}

/// Reads again, one at a time, the stored documents `which` (an SQL condition) picks, and hands each one's facts to
/// `update`: only the documents that can have the new figures are read, and each alone (a large history is not
/// held in memory). A document that does not parse keeps its row, without the figures.
fn refill(
    tx: &rusqlite::Transaction,
    which: &str,
    mut update: impl FnMut(i64, &Facts) -> rusqlite::Result<usize>,
) -> rusqlite::Result<()> {
    let ids: Vec<i64> = {
        let mut stmt = tx.prepare(&format!("SELECT id FROM results WHERE {which}"))?;
        stmt.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?
    };
    for id in ids {
        let text: String = tx.query_row("SELECT document FROM results WHERE id = ?1", [id], |r| r.get(0))?;
        let Ok(doc) = serde_json::from_str::<Value>(&text) else { continue };
        update(id, &Facts::of(&doc))?;
    }
    Ok(())
}

/// The fifth schema: a token stream's time per output token (its p99) and its goodput (the share of requests that
/// met every `--goodput` objective).
const SCHEMA_V5: &str = "
ALTER TABLE results ADD COLUMN tpot_p99_us INTEGER;
ALTER TABLE results ADD COLUMN goodput_percent REAL;
";

/// v4 -> v5: the new columns, filled from each stored document that streamed (those with a ttft p99).
fn migrate_to_v5(tx: &rusqlite::Transaction) -> rusqlite::Result<()> {
    tx.execute_batch(SCHEMA_V5)?;
    refill(tx, "ttft_p99_us IS NOT NULL", |id, f| {
        tx.execute(
            "UPDATE results SET tpot_p99_us = ?1, goodput_percent = ?2 WHERE id = ?3",
            params![f.tpot_p99_us, f.goodput_percent, id],
        )
    })
}
