//! `db check`: integrity, foreign keys, readable re-measurements, schema version and application id.

use crate::schema::{APPLICATION_ID, SCHEMA_VERSION};
use crate::{Database, DbError};
use std::fmt;

/// What a check found.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckReport {
    /// `PRAGMA integrity_check` lines (`["ok"]` when sound).
    pub integrity: Vec<String>,
    /// Rows whose foreign key points nowhere (`table rowid -> parent`).
    pub foreign_key_violations: Vec<String>,
    /// Records whose re-measurements do not parse.
    pub unreadable_runs: Vec<i64>,
    /// Records whose superseded measurements (their history) do not parse.
    pub unreadable_history: Vec<i64>,
    /// The file's schema version.
    pub schema_version: i64,
    /// The file's application id.
    pub application_id: i32,
}

impl CheckReport {
    /// True if nothing is wrong.
    pub fn ok(&self) -> bool {
        self.integrity == ["ok"]
            && self.foreign_key_violations.is_empty()
            && self.unreadable_runs.is_empty()
            && self.unreadable_history.is_empty()
            && self.schema_version == SCHEMA_VERSION
            && self.application_id == APPLICATION_ID
    }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "integrity: {}", self.integrity.join("; "))?;
        if self.foreign_key_violations.is_empty() {
            writeln!(f, "foreign keys: ok")?;
        } else {
            writeln!(
                f,
                "foreign keys: {} violations: {}",
                self.foreign_key_violations.len(),
                self.foreign_key_violations.join(", ")
            )?;
        }
        if self.unreadable_runs.is_empty() {
            writeln!(f, "re-measurements: ok")?;
        } else {
            let ids: Vec<String> = self.unreadable_runs.iter().map(i64::to_string).collect();
            writeln!(f, "re-measurements: unreadable in record(s) {}", ids.join(", "))?;
        }
        if self.unreadable_history.is_empty() {
            writeln!(f, "superseded measurements: ok")?;
        } else {
            let ids: Vec<String> = self.unreadable_history.iter().map(i64::to_string).collect();
            writeln!(f, "superseded measurements: unreadable in record(s) {}", ids.join(", "))?;
        }
        writeln!(f, "schema version: {} (this scaletune: {SCHEMA_VERSION})", self.schema_version)?;
        writeln!(f, "application id: {:#x}", self.application_id)?;
        write!(f, "verdict: {}", if self.ok() { "ok" } else { "PROBLEMS" })
    }
}

impl Database {
    /// Checks the database.
    pub fn check(&self) -> Result<CheckReport, DbError> {
        let conn = self.conn();
        let mut st = conn.prepare("PRAGMA integrity_check")?;
        let integrity = st.query_map([], |r| r.get::<_, String>(0))?.collect::<Result<Vec<_>, _>>()?;
        let mut st = conn.prepare("PRAGMA foreign_key_check")?;
        let foreign_key_violations = st
            .query_map([], |r| {
                Ok(format!(
                    "{} {} -> {}",
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<i64>>(1)?.unwrap_or(0),
                    r.get::<_, String>(2)?
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let unreadable_runs = unreadable::<crate::records::Remeasurement>(conn, "remeasured")?;
        let unreadable_history = unreadable::<crate::supersede::Superseded>(conn, "superseded")?;
        let schema_version = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        let application_id = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
        Ok(CheckReport {
            integrity,
            foreign_key_violations,
            unreadable_runs,
            unreadable_history,
            schema_version,
            application_id,
        })
    }
}

/// The records whose JSON list column `column` does not parse as a list of `T`.
fn unreadable<T: serde::de::DeserializeOwned>(conn: &rusqlite::Connection, column: &str) -> Result<Vec<i64>, DbError> {
    let mut st = conn.prepare(&format!("SELECT id, {column} FROM records WHERE {column} IS NOT NULL ORDER BY id"))?;
    let rows =
        st.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?.collect::<Result<Vec<_>, _>>()?;
    Ok(rows.into_iter().filter(|(_, text)| serde_json::from_str::<Vec<T>>(text).is_err()).map(|(id, _)| id).collect())
}
