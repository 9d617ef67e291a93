//! Workload and target rows as the reports read them: definitions, names and floating-point operation counts.

use crate::{Database, DbError};
use rusqlite::OptionalExtension;

/// A stored workload.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadRow {
    /// Row id.
    pub id: i64,
    /// The definition text (the tuner's canonical JSON).
    pub definition: String,
    /// SHA-256 of the definition.
    pub hash: String,
    /// Floating-point operations of one call, when known (`None` for rows of schema version 1).
    pub flops: Option<f64>,
}

/// A stored target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetRow {
    /// Row id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// SHA-256 of the definition.
    pub hash: String,
}

impl Database {
    /// Records the floating-point operations of one call of a workload.
    pub fn set_workload_flops(&self, id: i64, flops: f64) -> Result<(), DbError> {
        self.write(|tx| {
            tx.execute("UPDATE workloads SET flops = ?2 WHERE id = ?1", (id, flops))?;
            Ok(())
        })
    }

    /// A workload row by id.
    pub fn workload(&self, id: i64) -> Result<Option<WorkloadRow>, DbError> {
        Ok(self
            .conn()
            .query_row("SELECT id, definition, hash, flops FROM workloads WHERE id = ?1", [id], |r| {
                Ok(WorkloadRow { id: r.get(0)?, definition: r.get(1)?, hash: r.get(2)?, flops: r.get(3)? })
            })
            .optional()?)
    }

    /// Every workload row, by id.
    pub fn workloads(&self) -> Result<Vec<WorkloadRow>, DbError> {
        let mut st = self.conn().prepare("SELECT id, definition, hash, flops FROM workloads ORDER BY id")?;
        let rows = st
            .query_map([], |r| {
                Ok(WorkloadRow { id: r.get(0)?, definition: r.get(1)?, hash: r.get(2)?, flops: r.get(3)? })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Every target row, by id.
    pub fn targets(&self) -> Result<Vec<TargetRow>, DbError> {
        let mut st = self.conn().prepare("SELECT id, name, hash FROM targets ORDER BY id")?;
        let rows = st
            .query_map([], |r| Ok(TargetRow { id: r.get(0)?, name: r.get(1)?, hash: r.get(2)? }))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }
}
