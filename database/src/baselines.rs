//! Baselines: reference implementations and fixed schedules measured beside the tuned candidates (`openblas`, `clang-naive`, `default-schedule`, `fma-peak`), one per (workload, target, name, runner, vector-length set).

use crate::{Database, DbError};
use serde::{Deserialize, Serialize};

/// A baseline to store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NewBaseline {
    /// Workload row.
    pub workload_id: i64,
    /// Target row.
    pub target_id: i64,
    /// What was measured (`openblas`, `clang-naive`, `default-schedule`, `fma-peak`, ...).
    pub name: String,
    /// The runner kind (`native`, `qemu`, `remote`).
    pub runner: String,
    /// Vector lengths measured at, canonical (`128,256`).
    pub vl_set: String,
    /// Its objective, if it ran.
    pub objective: Option<f64>,
    /// What the objective measures (`time_s`, `est_cycles`, `instructions`).
    pub objective_kind: String,
    /// Every metric (JSON; opaque to the database).
    pub metrics: String,
}

/// A stored baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// Row id.
    pub id: i64,
    /// When it was (last) stored (UTC, ISO 8601).
    pub created_at: String,
    /// Everything stored.
    #[serde(flatten)]
    pub data: NewBaseline,
}

impl std::ops::Deref for Baseline {
    type Target = NewBaseline;
    fn deref(&self) -> &NewBaseline {
        &self.data
    }
}

impl Database {
    /// Stores a baseline, replacing the one with the same (workload, target,
    /// name, runner, vector-length set): a baseline is re-measured, not
    /// accumulated. Returns its row id.
    pub fn insert_baseline(&self, b: &NewBaseline) -> Result<i64, DbError> {
        self.write(|tx| {
            tx.execute(
                &format!(
                    "INSERT INTO baselines (workload_id, target_id, name, runner, vl_set, objective, objective_kind, \
                     metrics, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, {}) \
                     ON CONFLICT(workload_id, target_id, name, runner, vl_set) DO UPDATE SET \
                     objective = excluded.objective, objective_kind = excluded.objective_kind, \
                     metrics = excluded.metrics, created_at = excluded.created_at",
                    crate::jobs::NOW
                ),
                (
                    b.workload_id,
                    b.target_id,
                    &b.name,
                    &b.runner,
                    &b.vl_set,
                    b.objective,
                    &b.objective_kind,
                    &b.metrics,
                ),
            )?;
            let id = tx.query_row(
                "SELECT id FROM baselines WHERE workload_id = ?1 AND target_id = ?2 AND name = ?3 AND runner = ?4 AND vl_set = ?5",
                (b.workload_id, b.target_id, &b.name, &b.runner, &b.vl_set),
                |r| r.get(0),
            )?;
            Ok(id)
        })
    }

    /// The baselines of a workload on a target (every name, runner and
    /// vector-length set), ordered by name, runner and vector-length set.
    pub fn baselines(&self, workload_id: i64, target_id: i64) -> Result<Vec<Baseline>, DbError> {
        let mut st = self.conn().prepare(
            "SELECT id, created_at, workload_id, target_id, name, runner, vl_set, objective, objective_kind, metrics \
             FROM baselines WHERE workload_id = ?1 AND target_id = ?2 ORDER BY name, runner, vl_set",
        )?;
        let rows = st
            .query_map([workload_id, target_id], |r| {
                Ok(Baseline {
                    id: r.get(0)?,
                    created_at: r.get(1)?,
                    data: NewBaseline {
                        workload_id: r.get(2)?,
                        target_id: r.get(3)?,
                        name: r.get(4)?,
                        runner: r.get(5)?,
                        vl_set: r.get(6)?,
                        objective: r.get(7)?,
                        objective_kind: r.get(8)?,
                        metrics: r.get(9)?,
                    },
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }
}
