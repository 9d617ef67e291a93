//! Records: one measured candidate each, unique per (workload, target, trace, vector-length set, runner).

use crate::{Database, DbError};
use rusqlite::{OptionalExtension, Row};
use serde::{Deserialize, Serialize};

/// A record to insert.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NewRecord {
    /// The job that measured it (none for records made outside a job).
    pub job_id: Option<i64>,
    /// Workload row.
    pub workload_id: i64,
    /// Target row.
    pub target_id: i64,
    /// Trial index within its job.
    pub trial_idx: i64,
    /// The design-space trace it was drawn from (text; empty if none).
    pub space_trace: String,
    /// The concrete trace (text; empty for the unscheduled nest).
    pub trace: String,
    /// SHA-256 of `trace`.
    pub trace_hash: String,
    /// The runner kind (`native`, `qemu`, `remote`).
    pub runner: String,
    /// Vector lengths measured at, canonical (`128,256`).
    pub vl_set: String,
    /// Status name (`ok`, `build_error`, ...).
    pub status: String,
    /// Error message (empty when ok).
    pub message: String,
    /// Every metric of every vector length (JSON; opaque to the database).
    pub metrics: String,
    /// The objective, for ok candidates.
    pub objective: Option<f64>,
    /// What the objective measures (`time_s`, `est_cycles`, `instructions`).
    pub objective_kind: String,
    /// Seconds spent building.
    pub build_s: f64,
    /// Seconds spent running.
    pub run_s: f64,
    /// The kind of vector code the candidate compiled to (`NEON`, `SVE-VLS`,
    /// `SVE-VLA`, `RVV`, `RVV-VLS`, `AVX2`, `AVX-512`, `SSE`, `SME`, `scalar`);
    /// `None` for records of schema version 1.
    #[serde(default)]
    pub vector_kind: Option<String>,
    /// The cost model's predicted objective when the candidate was proposed
    /// (`None` when no model was trained, and for records of schema version 1).
    #[serde(default)]
    pub predicted: Option<f64>,
    /// The identity of the code measured (the SHA-256 of the candidate's
    /// kernel objects, `scaletune_measure::builder::code_identity`); `None`
    /// where it is not known: the build failed, or the record was written
    /// by schema version 3 or older. A measurement of other code for the
    /// same key supersedes this one ([`Database::insert_record`]).
    #[serde(default)]
    pub code: Option<String>,
}

/// A stored record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Record id.
    pub id: i64,
    /// Hash of its workload's definition.
    pub workload_hash: String,
    /// Hash of its target's definition.
    pub target_hash: String,
    /// Its target's name.
    pub target_name: String,
    /// Creation time (UTC, ISO 8601).
    pub created_at: String,
    /// Everything inserted.
    #[serde(flatten)]
    pub data: NewRecord,
    /// Later measurements of the same candidate ([`Database::remeasure`]), oldest first.
    #[serde(default)]
    pub remeasured: Vec<Remeasurement>,
    /// The median objective over the first measurement and every
    /// re-measurement that has one; `None` if never re-measured.
    #[serde(default)]
    pub confirmed: Option<f64>,
    /// Earlier measurements of the candidate, of code it no longer builds or
    /// made by no runner (kept when a later measurement took their place,
    /// [`Database::replace_record`]), oldest first.
    #[serde(default)]
    pub superseded: Vec<crate::supersede::Superseded>,
}

impl Record {
    /// The best estimate of the objective: the confirmed median when the
    /// record was re-measured, else the first measurement's.
    pub fn best_objective(&self) -> Option<f64> {
        self.confirmed.or(self.data.objective)
    }
}

/// One later measurement of a record's candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Remeasurement {
    /// The job that re-measured it.
    pub job_id: Option<i64>,
    /// Status name of the run.
    pub status: String,
    /// Every metric of every vector length (JSON; opaque to the database).
    pub metrics: String,
    /// The objective of this run, if it passed.
    pub objective: Option<f64>,
    /// When (UTC, ISO 8601).
    pub at: String,
}

impl std::ops::Deref for Record {
    type Target = NewRecord;
    fn deref(&self) -> &NewRecord {
        &self.data
    }
}

/// What makes a record unique.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordKey {
    /// Workload row.
    pub workload_id: i64,
    /// Target row.
    pub target_id: i64,
    /// SHA-256 of the trace text.
    pub trace_hash: String,
    /// Canonical vector-length set.
    pub vl_set: String,
    /// Runner kind.
    pub runner: String,
}

/// The outcome of an insert.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inserted {
    /// The record's id.
    pub id: i64,
    /// True if a record with the same key existed.
    pub existed: bool,
    /// What became of the measurement inserted.
    pub placed: Placed,
}

/// Where an inserted measurement went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placed {
    /// A new record.
    New,
    /// Nowhere: the record with its key keeps its measurement (an insert,
    /// or an import of the same code).
    Kept,
    /// It took the place of the record's measurement, which is kept in
    /// the record's [`Record::superseded`] history
    /// ([`Database::replace_record`], or an import of other code, newer).
    Replaced,
    /// Into the record's history: an import of other code than the
    /// record's, older than the record's measurement.
    History,
}

pub(crate) const RECORD_COLUMNS: &str = "r.id, w.hash, t.hash, t.name, r.created_at, r.job_id, r.workload_id, \
    r.target_id, r.trial_idx, r.space_trace, r.trace, r.trace_hash, r.runner, r.vl_set, r.status, r.message, \
    r.metrics, r.objective, r.objective_kind, r.build_s, r.run_s, r.vector_kind, r.predicted, r.remeasured, r.confirmed, r.code, r.superseded";

pub(crate) const RECORD_FROM: &str =
    "records r JOIN workloads w ON w.id = r.workload_id JOIN targets t ON t.id = r.target_id";

/// A record's re-measurements that do not parse (the reason names the record).
#[derive(Debug)]
pub(crate) struct UnreadableRuns(pub(crate) String);

impl std::fmt::Display for UnreadableRuns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UnreadableRuns {}

/// The error of reading records: a record with unreadable re-measurements
/// is a damaged file, named with the record, not a bare conversion error.
pub(crate) fn read_error(file: &std::path::Path, e: rusqlite::Error) -> DbError {
    match &e {
        rusqlite::Error::FromSqlConversionFailure(_, _, inner) if inner.is::<UnreadableRuns>() => {
            DbError::Corrupt { file: file.display().to_string(), reason: inner.to_string() }
        }
        _ => e.into(),
    }
}

pub(crate) fn record_from_row(r: &Row<'_>) -> rusqlite::Result<Record> {
    Ok(Record {
        id: r.get(0)?,
        workload_hash: r.get(1)?,
        target_hash: r.get(2)?,
        target_name: r.get(3)?,
        created_at: r.get(4)?,
        data: NewRecord {
            job_id: r.get(5)?,
            workload_id: r.get(6)?,
            target_id: r.get(7)?,
            trial_idx: r.get(8)?,
            space_trace: r.get(9)?,
            trace: r.get(10)?,
            trace_hash: r.get(11)?,
            runner: r.get(12)?,
            vl_set: r.get(13)?,
            status: r.get(14)?,
            message: r.get(15)?,
            metrics: r.get(16)?,
            objective: r.get(17)?,
            objective_kind: r.get(18)?,
            build_s: r.get(19)?,
            run_s: r.get(20)?,
            vector_kind: r.get(21)?,
            predicted: r.get(22)?,
            code: r.get(25)?,
        },
        remeasured: json_column(r, 23, "re-measurements")?,
        confirmed: r.get(24)?,
        superseded: json_column(r, 26, "superseded measurements")?,
    })
}

/// A JSON list column of a record (`NULL`: empty); one that does not parse
/// is an error naming the record and `what` the column holds.
fn json_column<T: serde::de::DeserializeOwned>(r: &Row<'_>, idx: usize, what: &str) -> rusqlite::Result<Vec<T>> {
    let text: Option<String> = r.get(idx)?;
    match text {
        None => Ok(Vec::new()),
        Some(t) => serde_json::from_str(&t).map_err(|e| {
            let id: i64 = r.get(0).unwrap_or(0);
            rusqlite::Error::FromSqlConversionFailure(
                idx,
                rusqlite::types::Type::Text,
                Box::new(UnreadableRuns(format!("record {id} has unreadable {what}: {e}"))),
            )
        }),
    }
}

/// The columns of a record's measurement (all but its key, its creation
/// time and its re-measurements) with their values in `rec`.
pub(crate) fn measurement_columns(rec: &NewRecord) -> [(&'static str, &dyn rusqlite::ToSql); 13] {
    [
        ("job_id", &rec.job_id),
        ("trial_idx", &rec.trial_idx),
        ("space_trace", &rec.space_trace),
        ("status", &rec.status),
        ("message", &rec.message),
        ("metrics", &rec.metrics),
        ("objective", &rec.objective),
        ("objective_kind", &rec.objective_kind),
        ("build_s", &rec.build_s),
        ("run_s", &rec.run_s),
        ("vector_kind", &rec.vector_kind),
        ("predicted", &rec.predicted),
        ("code", &rec.code),
    ]
}

/// The SQL value of a record's creation time: parameter `?{index}` when
/// given, else now.
pub(crate) fn created_value(created_at: Option<&str>, index: usize) -> String {
    match created_at {
        Some(_) => format!("?{index}"),
        None => crate::jobs::NOW.to_string(),
    }
}

/// Inserts `rec` (made at `created_at`, else now); a record with its key
/// is left as it is (`Placed::Kept`).
pub(crate) fn insert_in(
    tx: &rusqlite::Transaction<'_>,
    rec: &NewRecord,
    created_at: Option<&str>,
) -> Result<Inserted, DbError> {
    let key: [(&str, &dyn rusqlite::ToSql); 6] = [
        ("workload_id", &rec.workload_id),
        ("target_id", &rec.target_id),
        ("trace", &rec.trace),
        ("trace_hash", &rec.trace_hash),
        ("runner", &rec.runner),
        ("vl_set", &rec.vl_set),
    ];
    let columns: Vec<(&str, &dyn rusqlite::ToSql)> = key.into_iter().chain(measurement_columns(rec)).collect();
    let names: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
    let marks: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
    let sql = format!(
        "INSERT INTO records ({}, created_at) VALUES ({}, {}) \
         ON CONFLICT(workload_id, target_id, trace_hash, vl_set, runner) DO NOTHING",
        names.join(", "),
        marks.join(", "),
        created_value(created_at, columns.len() + 1)
    );
    let mut params: Vec<&dyn rusqlite::ToSql> = columns.iter().map(|(_, value)| *value).collect();
    if let Some(c) = &created_at {
        params.push(c);
    }
    let changed = tx.execute(&sql, params.as_slice())?;
    let id = tx.query_row(
        "SELECT id FROM records WHERE workload_id = ?1 AND target_id = ?2 AND trace_hash = ?3 AND vl_set = ?4 AND runner = ?5",
        (rec.workload_id, rec.target_id, &rec.trace_hash, &rec.vl_set, &rec.runner),
        |r| r.get(0),
    )?;
    let (existed, placed) = if changed == 1 { (false, Placed::New) } else { (true, Placed::Kept) };
    Ok(Inserted { id, existed, placed })
}

impl Database {
    /// Inserts a record and commits it at once. A record with the same key
    /// is kept as it is and its id returned (`existed`); to replace the
    /// measurement of a record whose code the candidate no longer builds,
    /// see [`Database::replace_record`].
    pub fn insert_record(&self, rec: &NewRecord) -> Result<Inserted, DbError> {
        self.write(|tx| insert_in(tx, rec, None))
    }

    /// The record with this key, if measured.
    pub fn lookup(&self, key: &RecordKey) -> Result<Option<Record>, DbError> {
        let sql = format!(
            "SELECT {RECORD_COLUMNS} FROM {RECORD_FROM} WHERE r.workload_id = ?1 AND r.target_id = ?2 \
             AND r.trace_hash = ?3 AND r.vl_set = ?4 AND r.runner = ?5"
        );
        self.conn()
            .query_row(
                &sql,
                (key.workload_id, key.target_id, &key.trace_hash, &key.vl_set, &key.runner),
                record_from_row,
            )
            .optional()
            .map_err(|e| read_error(self.path(), e))
    }

    /// A record by id.
    pub fn record(&self, id: i64) -> Result<Option<Record>, DbError> {
        let sql = format!("SELECT {RECORD_COLUMNS} FROM {RECORD_FROM} WHERE r.id = ?1");
        self.conn().query_row(&sql, [id], record_from_row).optional().map_err(|e| read_error(self.path(), e))
    }

    /// The definition text of a target row.
    pub fn target_definition(&self, id: i64) -> Result<Option<String>, DbError> {
        Ok(self.conn().query_row("SELECT definition FROM targets WHERE id = ?1", [id], |r| r.get(0)).optional()?)
    }

    /// The definition text of a workload row.
    pub fn workload_definition(&self, id: i64) -> Result<Option<String>, DbError> {
        Ok(self.conn().query_row("SELECT definition FROM workloads WHERE id = ?1", [id], |r| r.get(0)).optional()?)
    }
}
