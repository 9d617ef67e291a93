//! Export and import as JSON lines: every record self-contained (its workload, target and job with it), for merging databases from several machines.

use crate::jobs::{job_from_row, Job, JOB_COLUMNS};
use crate::records::{insert_in, NewRecord, Placed, Record, Remeasurement};
use crate::remeasure::{load_runs, store_runs};
use crate::supersede::{merge_history, merge_import, Superseded};
use crate::{hash_text, Database, DbError};
use rusqlite::OptionalExtension;
use serde::{Deserialize, Serialize};
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::io::{BufRead, Write};

/// One exported record.
#[derive(Serialize, Deserialize)]
struct Line {
    workload: String,
    /// The workload's floating-point operations (absent in exports of schema version 1).
    #[serde(default)]
    workload_flops: Option<f64>,
    target_name: String,
    target: String,
    job: Option<Job>,
    created_at: String,
    record: NewRecord,
    /// The record's re-measurements (absent in exports of schema version 2
    /// and older). A run made by the record's own job keeps that job on
    /// import; the job of any other run is not carried across databases.
    #[serde(default)]
    remeasured: Vec<Remeasurement>,
    /// The record's earlier measurements of other code (absent in exports
    /// of schema version 3 and older). As with re-measurements, only the
    /// record's own job is carried across databases.
    #[serde(default)]
    superseded: Vec<Superseded>,
}

/// What an import did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportStats {
    /// Records added.
    pub inserted: usize,
    /// Records already present (same key and code, or code not known), skipped.
    pub duplicates: usize,
    /// Records present with a measurement of other code (the newer
    /// measurement is the record's, the older in its history), or that no
    /// runner measured (the imported measurement of the same code takes
    /// the record's place).
    pub other_code: usize,
}

impl Database {
    /// Writes every record as one JSON object per line, oldest first.
    pub fn export_jsonl(&self, out: &mut impl Write) -> Result<usize, DbError> {
        let io = |error| DbError::Io { file: "export".into(), error };
        let mut defs: HashMap<i64, (String, Option<f64>)> = HashMap::new();
        let mut targets: HashMap<i64, (String, String)> = HashMap::new();
        let mut jobs: HashMap<i64, Option<Job>> = HashMap::new();
        let records: Vec<Record> = self.all_records()?;
        for r in &records {
            if let Entry::Vacant(e) = defs.entry(r.workload_id) {
                let w = self.workload(r.workload_id)?;
                e.insert(w.map(|w| (w.definition, w.flops)).unwrap_or_default());
            }
            if let Entry::Vacant(e) = targets.entry(r.target_id) {
                let t = self.conn().query_row(
                    "SELECT name, definition FROM targets WHERE id = ?1",
                    [r.target_id],
                    |x| Ok((x.get(0)?, x.get(1)?)),
                )?;
                e.insert(t);
            }
            let job = match r.job_id {
                Some(j) => {
                    if let Entry::Vacant(e) = jobs.entry(j) {
                        let job = self
                            .conn()
                            .query_row(&format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?1"), [j], job_from_row)
                            .optional()?;
                        e.insert(job);
                    }
                    jobs[&j].clone()
                }
                None => None,
            };
            let (target_name, target) = targets[&r.target_id].clone();
            let line = Line {
                workload: defs[&r.workload_id].0.clone(),
                workload_flops: defs[&r.workload_id].1,
                target_name,
                target,
                job,
                created_at: r.created_at.clone(),
                record: r.data.clone(),
                remeasured: r.remeasured.clone(),
                superseded: r.superseded.clone(),
            };
            serde_json::to_writer(&mut *out, &line).map_err(|e| io(e.into()))?;
            out.write_all(b"\n").map_err(io)?;
        }
        Ok(records.len())
    }

    /// Imports what [`Database::export_jsonl`] wrote, in one transaction:
    /// every line or none. Records already present are skipped, unless
    /// they measured other code (both codes known and different): then the
    /// newer measurement is the record's and the older goes to its history.
    /// Jobs are matched by their arguments and start time.
    pub fn import_jsonl(&self, input: impl BufRead) -> Result<ImportStats, DbError> {
        let mut lines = Vec::new();
        for (i, line) in input.lines().enumerate() {
            let line = line.map_err(|e| DbError::Import { line: i + 1, message: e.to_string() })?;
            if line.trim().is_empty() {
                continue;
            }
            let parsed: Line =
                serde_json::from_str(&line).map_err(|e| DbError::Import { line: i + 1, message: e.to_string() })?;
            if hash_text(&parsed.record.trace) != parsed.record.trace_hash {
                return Err(DbError::Import { line: i + 1, message: "trace_hash is not the hash of trace".into() });
            }
            lines.push(parsed);
        }
        self.write(|tx| {
            let mut stats = ImportStats::default();
            let mut job_ids: HashMap<(String, String), i64> = HashMap::new();
            for l in &lines {
                let wh = hash_text(&l.workload);
                tx.execute("INSERT INTO workloads (definition, hash) VALUES (?1, ?2) ON CONFLICT(hash) DO NOTHING", (&l.workload, &wh))?;
                let workload_id: i64 = tx.query_row("SELECT id FROM workloads WHERE hash = ?1", [&wh], |r| r.get(0))?;
                if let Some(flops) = l.workload_flops {
                    tx.execute("UPDATE workloads SET flops = ?2 WHERE id = ?1 AND flops IS NULL", (workload_id, flops))?;
                }
                let th = hash_text(&l.target);
                tx.execute(
                    "INSERT INTO targets (name, definition, hash) VALUES (?1, ?2, ?3) ON CONFLICT(hash) DO NOTHING",
                    (&l.target_name, &l.target, &th),
                )?;
                let target_id: i64 = tx.query_row("SELECT id FROM targets WHERE hash = ?1", [&th], |r| r.get(0))?;
                let job_id = match &l.job {
                    None => None,
                    Some(j) => {
                        let key = (j.arguments.clone(), j.started_at.clone());
                        let id = match job_ids.get(&key) {
                            Some(id) => *id,
                            None => {
                                let found: Option<i64> = tx
                                    .query_row(
                                        "SELECT id FROM jobs WHERE arguments = ?1 AND started_at = ?2",
                                        (&j.arguments, &j.started_at),
                                        |r| r.get(0),
                                    )
                                    .optional()?;
                                let id = match found {
                                    Some(id) => id,
                                    None => {
                                        tx.execute(
                                            "INSERT INTO jobs (arguments, seed, strategy, status, started_at, ended_at, stop_reason, state) \
                                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                                            (
                                                &j.arguments,
                                                j.seed as i64,
                                                &j.strategy,
                                                j.status.name(),
                                                &j.started_at,
                                                &j.ended_at,
                                                &j.stop_reason,
                                                &j.state,
                                            ),
                                        )?;
                                        tx.last_insert_rowid()
                                    }
                                };
                                job_ids.insert(key, id);
                                id
                            }
                        };
                        Some(id)
                    }
                };
                let rec = NewRecord { job_id, workload_id, target_id, ..l.record.clone() };
                let ins = insert_in(tx, &rec, Some(&l.created_at))?;
                let own_job = |j: Option<i64>| if j.is_some() && j == l.record.job_id { job_id } else { None };
                let runs: Vec<Remeasurement> =
                    l.remeasured.iter().map(|r| Remeasurement { job_id: own_job(r.job_id), ..r.clone() }).collect();
                let placed = match ins.placed {
                    Placed::Kept => merge_import(tx, self.path(), ins.id, &rec, &l.created_at, &runs)?,
                    p => p,
                };
                if placed != Placed::History && !runs.is_empty() {
                    merge_remeasured(tx, self.path(), ins.id, &runs)?;
                }
                let history: Vec<Superseded> = l
                    .superseded
                    .iter()
                    .map(|h| Superseded {
                        data: NewRecord { job_id: own_job(h.job_id), workload_id, target_id, ..h.data.clone() },
                        ..h.clone()
                    })
                    .collect();
                merge_history(tx, self.path(), ins.id, &history)?;
                match placed {
                    Placed::New => stats.inserted += 1,
                    Placed::Kept => stats.duplicates += 1,
                    Placed::Replaced | Placed::History => stats.other_code += 1,
                }
            }
            Ok(stats)
        })
    }
}

/// Adds imported re-measurements to record `id`, skipping runs it already
/// has (same time, status, objective and metrics), and recomputes its
/// confirmed objective. Their jobs are already this database's (see
/// [`Database::import_jsonl`]).
fn merge_remeasured(
    tx: &rusqlite::Transaction<'_>,
    file: &std::path::Path,
    id: i64,
    runs: &[Remeasurement],
) -> Result<(), DbError> {
    let Some((first, mut have)) = load_runs(tx, file, id)? else { return Ok(()) };
    let before = have.len();
    for run in runs {
        let same = |h: &Remeasurement| {
            h.at == run.at && h.metrics == run.metrics && h.status == run.status && h.objective == run.objective
        };
        if have.iter().any(same) {
            continue;
        }
        have.push(run.clone());
    }
    if have.len() > before {
        have.sort_by(|a, b| a.at.cmp(&b.at));
        store_runs(tx, id, first, &have)?;
    }
    Ok(())
}
