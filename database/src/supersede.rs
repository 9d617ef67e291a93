//! Measurements of other code: a record whose candidate now builds other code than it measured is measured again, and its earlier measurement kept in the record's history.
//!
//! A record's key (workload, target, trace, vector lengths, runner) names a
//! candidate, not its code: a new scaletune or LLVM may compile the same
//! trace to other instructions. Each record keeps the identity of the code
//! it measured ([`crate::NewRecord::code`]); a tuning job that finds a
//! record's code out of date measures the candidate again and
//! [`Database::replace_record`] puts that measurement in the record's
//! place. Nothing is dropped: the earlier measurement, with its
//! re-measurements, goes to the record's [`crate::Record::superseded`] list.
//! Imports merge by the same rule: of two measurements of other code under
//! one key, the newer is the record's, the older its history.

use crate::records::{
    created_value, insert_in, measurement_columns, read_error, record_from_row, Inserted, NewRecord, Placed, Record,
    Remeasurement, RECORD_COLUMNS, RECORD_FROM,
};
use crate::remeasure::confirmed;
use crate::{Database, DbError};
use serde::{Deserialize, Serialize};

/// An earlier measurement of a record's candidate: of other code than the
/// record's, or one no runner made. Its record's fields as they were (the
/// key's fields included, so the JSON of an entry reads as a record's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Superseded {
    /// When it was made (UTC, ISO 8601).
    pub created_at: String,
    /// The measurement (its job `None` when not known in this database).
    #[serde(flatten)]
    pub data: NewRecord,
    /// Its re-measurements.
    #[serde(default)]
    pub remeasured: Vec<Remeasurement>,
    /// The median objective over it and its re-measurements, if re-measured.
    #[serde(default)]
    pub confirmed: Option<f64>,
}

impl std::ops::Deref for Superseded {
    type Target = NewRecord;
    fn deref(&self) -> &NewRecord {
        &self.data
    }
}

impl Superseded {
    /// True for the same measurement (an entry imported twice).
    fn same(&self, other: &Superseded) -> bool {
        self.created_at == other.created_at
            && self.code == other.code
            && self.status == other.status
            && self.metrics == other.metrics
    }
}

/// Record `id`'s measurement as a history entry, with its re-measurements.
fn current(tx: &rusqlite::Transaction<'_>, file: &std::path::Path, id: i64) -> Result<Superseded, DbError> {
    let sql = format!("SELECT {RECORD_COLUMNS} FROM {RECORD_FROM} WHERE r.id = ?1");
    let r: Record = tx.query_row(&sql, [id], record_from_row).map_err(|e| read_error(file, e))?;
    Ok(Superseded { created_at: r.created_at, data: r.data, remeasured: r.remeasured, confirmed: r.confirmed })
}

/// Record `id`'s history; an unreadable one is an error naming the record
/// (an empty list would lose it on the next write).
fn load_history(tx: &rusqlite::Transaction<'_>, file: &std::path::Path, id: i64) -> Result<Vec<Superseded>, DbError> {
    let text: Option<String> = tx.query_row("SELECT superseded FROM records WHERE id = ?1", [id], |r| r.get(0))?;
    match text {
        None => Ok(Vec::new()),
        Some(t) => serde_json::from_str(&t).map_err(|e| DbError::Corrupt {
            file: file.display().to_string(),
            reason: format!("record {id} has unreadable superseded measurements: {e}"),
        }),
    }
}

/// Adds `entries` to record `id`'s history, oldest first, each measurement once.
fn add_history(
    tx: &rusqlite::Transaction<'_>,
    file: &std::path::Path,
    id: i64,
    entries: impl IntoIterator<Item = Superseded>,
) -> Result<(), DbError> {
    let mut history = load_history(tx, file, id)?;
    let before = history.len();
    for e in entries {
        if !history.iter().any(|h| h.same(&e)) {
            history.push(e);
        }
    }
    if history.len() > before {
        history.sort_by(|a, b| a.created_at.cmp(&b.created_at));
        let json = serde_json::to_string(&history).unwrap_or_else(|_| "[]".into());
        tx.execute("UPDATE records SET superseded = ?2 WHERE id = ?1", (id, &json))?;
    }
    Ok(())
}

/// Moves record `id`'s measurement to its history and writes `rec`'s in
/// its place (made at `created_at`, else now), with no re-measurements.
fn replace_in(
    tx: &rusqlite::Transaction<'_>,
    file: &std::path::Path,
    id: i64,
    rec: &NewRecord,
    created_at: Option<&str>,
) -> Result<(), DbError> {
    let old = current(tx, file, id)?;
    add_history(tx, file, id, [old])?;
    let columns = measurement_columns(rec);
    let sets: Vec<String> = columns.iter().enumerate().map(|(i, (name, _))| format!("{name} = ?{}", i + 2)).collect();
    let sql = format!(
        "UPDATE records SET {}, remeasured = NULL, confirmed = NULL, created_at = {} WHERE id = ?1",
        sets.join(", "),
        created_value(created_at, columns.len() + 2)
    );
    let mut params: Vec<&dyn rusqlite::ToSql> = vec![&id];
    params.extend(columns.iter().map(|(_, value)| *value));
    if let Some(c) = &created_at {
        params.push(c);
    }
    tx.execute(&sql, params.as_slice())?;
    Ok(())
}

/// An imported measurement `rec` (made at `created_at`, with re-measurements
/// `runs`) whose key is record `id`'s already: kept out if it measured the
/// same code or its code is not known, unless the record is `unmeasured`
/// and it is not (then it takes the record's place, as with
/// [`Database::replace_record`]); else the newer of the two is the
/// record's and the older goes to its history.
pub(crate) fn merge_import(
    tx: &rusqlite::Transaction<'_>,
    file: &std::path::Path,
    id: i64,
    rec: &NewRecord,
    created_at: &str,
    runs: &[Remeasurement],
) -> Result<Placed, DbError> {
    let (code, at, status): (Option<String>, String, String) =
        tx.query_row("SELECT code, created_at, status FROM records WHERE id = ?1", [id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?;
    if rec.code.is_none() || rec.code == code {
        if status == "unmeasured" && rec.status != "unmeasured" {
            replace_in(tx, file, id, rec, Some(created_at))?;
            return Ok(Placed::Replaced);
        }
        return Ok(Placed::Kept);
    }
    if created_at >= at.as_str() {
        replace_in(tx, file, id, rec, Some(created_at))?;
        return Ok(Placed::Replaced);
    }
    let entry = Superseded {
        created_at: created_at.to_string(),
        data: rec.clone(),
        remeasured: runs.to_vec(),
        confirmed: confirmed(rec.objective, runs),
    };
    add_history(tx, file, id, [entry])?;
    Ok(Placed::History)
}

/// Adds an imported record's history to record `id`'s.
pub(crate) fn merge_history(
    tx: &rusqlite::Transaction<'_>,
    file: &std::path::Path,
    id: i64,
    entries: &[Superseded],
) -> Result<(), DbError> {
    if entries.is_empty() {
        return Ok(());
    }
    add_history(tx, file, id, entries.iter().cloned())
}

impl Database {
    /// Inserts a record, or, where its key is measured already, puts `rec`'s
    /// measurement in the record's place and keeps the record's earlier one
    /// (with its re-measurements) in its history ([`Placed::Replaced`]).
    /// For a candidate whose record measured code it no longer builds, or
    /// that no runner measured. A record that holds a measurement of
    /// `rec`'s code already (another process measured it again first)
    /// keeps it ([`Placed::Kept`]), unless that was `unmeasured`.
    pub fn replace_record(&self, rec: &NewRecord) -> Result<Inserted, DbError> {
        self.write(|tx| {
            let ins = insert_in(tx, rec, None)?;
            if !ins.existed {
                return Ok(ins);
            }
            let (code, status): (Option<String>, String) =
                tx.query_row("SELECT code, status FROM records WHERE id = ?1", [ins.id], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?;
            if rec.code.is_some() && code == rec.code && status != "unmeasured" {
                return Ok(ins);
            }
            replace_in(tx, self.path(), ins.id, rec, None)?;
            Ok(Inserted { placed: Placed::Replaced, ..ins })
        })
    }
}
