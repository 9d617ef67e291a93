//! Queries: the best records of a workload on a target, a job's history, every candidate of a workload, training data and counts.

use crate::records::{read_error, record_from_row, Record, RECORD_COLUMNS, RECORD_FROM};
use crate::{Database, DbError};
use std::collections::BTreeMap;

/// Narrows [`Database::best_k`] to one runner and vector-length set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordFilter {
    /// Only this runner kind.
    pub runner: Option<String>,
    /// Only this vector-length set.
    pub vl_set: Option<String>,
    /// Only this objective kind.
    pub objective_kind: Option<String>,
}

/// Records of one (workload, target) and their statuses.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskCount {
    /// The workload's definition hash.
    pub workload_hash: String,
    /// The target's name.
    pub target: String,
    /// Records per status.
    pub statuses: BTreeMap<String, i64>,
    /// The best objective among ok records (per objective kind).
    pub best: BTreeMap<String, f64>,
}

/// What a database holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    /// Records in all.
    pub records: i64,
    /// Jobs per status.
    pub jobs: BTreeMap<String, i64>,
    /// Per (workload, target).
    pub tasks: Vec<TaskCount>,
    /// Records that built code but did not record which (written before
    /// schema version 4): a job measures their best, failed and baseline
    /// candidates once more.
    pub without_code: i64,
    /// Earlier measurements kept in records' histories (of other code, or
    /// `unmeasured`), each superseded by a later measurement of its record.
    pub superseded: i64,
}

impl Database {
    fn records_where(&self, clause: &str, params: &[&dyn rusqlite::ToSql]) -> Result<Vec<Record>, DbError> {
        let sql = format!("SELECT {RECORD_COLUMNS} FROM {RECORD_FROM} WHERE {clause}");
        let mut st = self.conn().prepare(&sql)?;
        let rows = st
            .query_map(params, record_from_row)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| read_error(self.path(), e))?;
        Ok(rows)
    }

    /// The `k` best ok records of a workload on a target (lowest objective
    /// first: the confirmed objective of re-measured records, see
    /// [`Record::best_objective`]).
    pub fn best_k(
        &self,
        workload_hash: &str,
        target_hash: &str,
        k: usize,
        filter: &RecordFilter,
    ) -> Result<Vec<Record>, DbError> {
        let clause = "w.hash = ?1 AND t.hash = ?2 AND r.status = 'ok' AND r.objective IS NOT NULL \
             AND (?3 IS NULL OR r.runner = ?3) AND (?4 IS NULL OR r.vl_set = ?4) AND (?5 IS NULL OR r.objective_kind = ?5) \
             ORDER BY COALESCE(r.confirmed, r.objective) ASC, r.id ASC LIMIT ?6";
        self.records_where(
            clause,
            &[&workload_hash, &target_hash, &filter.runner, &filter.vl_set, &filter.objective_kind, &(k as i64)],
        )
    }

    /// A job's records in trial order.
    pub fn job_history(&self, job: i64) -> Result<Vec<Record>, DbError> {
        self.records_where("r.job_id = ?1 ORDER BY r.trial_idx, r.id", &[&job])
    }

    /// Every record of a workload (all targets, runners and jobs), oldest first.
    pub fn workload_records(&self, workload_hash: &str) -> Result<Vec<Record>, DbError> {
        self.records_where("w.hash = ?1 ORDER BY r.id", &[&workload_hash])
    }

    /// The latest ok records of a target (all workloads), for training a cost model.
    pub fn records_for_target(&self, target_hash: &str, limit: usize) -> Result<Vec<Record>, DbError> {
        self.records_where(
            "t.hash = ?1 AND r.status = 'ok' AND r.objective IS NOT NULL ORDER BY r.id DESC LIMIT ?2",
            &[&target_hash, &(limit as i64)],
        )
    }

    /// The ok records of every target definition with this name (all
    /// workloads), oldest first: where build-time replay looks for records
    /// made under an older workload or target definition.
    pub fn ok_records_for_target_name(&self, target_name: &str) -> Result<Vec<Record>, DbError> {
        self.records_where("t.name = ?1 AND r.status = 'ok' AND r.objective IS NOT NULL ORDER BY r.id", &[&target_name])
    }

    /// Every record, oldest first.
    pub fn all_records(&self) -> Result<Vec<Record>, DbError> {
        self.records_where("1 ORDER BY r.id", &[])
    }

    /// Counts per job status and per (workload, target, status).
    pub fn stats(&self) -> Result<Stats, DbError> {
        let conn = self.conn();
        let records = conn.query_row("SELECT count(*) FROM records", [], |r| r.get(0))?;
        let without_code =
            conn.query_row("SELECT count(*) FROM records WHERE code IS NULL AND status != 'build_error'", [], |r| {
                r.get(0)
            })?;
        let superseded = conn.query_row(
            "SELECT COALESCE(sum(json_array_length(superseded)), 0) FROM records \
             WHERE superseded IS NOT NULL AND json_valid(superseded)",
            [],
            |r| r.get(0),
        )?;
        let mut jobs = BTreeMap::new();
        let mut st = conn.prepare("SELECT status, count(*) FROM jobs GROUP BY status ORDER BY status")?;
        for row in st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
            let (s, n) = row?;
            jobs.insert(s, n);
        }
        let mut tasks: Vec<TaskCount> = Vec::new();
        let mut st = conn.prepare(
            "SELECT w.hash, t.name, r.status, count(*), r.objective_kind, min(COALESCE(r.confirmed, r.objective)) FROM records r \
             JOIN workloads w ON w.id = r.workload_id JOIN targets t ON t.id = r.target_id \
             GROUP BY w.hash, t.hash, r.status, r.objective_kind ORDER BY min(r.id)",
        )?;
        let rows = st.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, Option<f64>>(5)?,
            ))
        })?;
        for row in rows {
            let (w, t, status, n, kind, best) = row?;
            let i = match tasks.iter().position(|c| c.workload_hash == w && c.target == t) {
                Some(i) => i,
                None => {
                    tasks.push(TaskCount {
                        workload_hash: w,
                        target: t,
                        statuses: BTreeMap::new(),
                        best: BTreeMap::new(),
                    });
                    tasks.len() - 1
                }
            };
            *tasks[i].statuses.entry(status.clone()).or_default() += n;
            if let (Some(b), true) = (best, status == "ok") {
                let e = tasks[i].best.entry(kind).or_insert(b);
                *e = e.min(b);
            }
        }
        Ok(Stats { records, jobs, tasks, without_code, superseded })
    }
}
