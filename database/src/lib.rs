//! scaletune-database: the tuning database, one SQLite file of workloads, targets, jobs, measured records and baselines; the only user of rusqlite.
//!
//! Every measured candidate is a record, committed as soon as it arrives, and
//! unique per (workload, target, trace, vector-length set, runner): a
//! candidate measured once is never measured again, by any job or process,
//! unless it now builds other code than its record measured (each record
//! keeps the identity of its code; see the `supersede` module, which keeps
//! the earlier measurement in the record's history).
//! [`Database::open`] refuses, and leaves byte for byte untouched, a file
//! that is not SQLite, a corrupt one, another application's database, or one
//! written by a newer scaletune.
//!
//! Concurrency: WAL journal, a busy timeout, every write in an `IMMEDIATE`
//! transaction, and the switch to WAL at open (which SQLite's busy handler
//! does not cover) tried again while another process holds the lock, so
//! several processes tuning into one file, a new one included, wait for
//! each other instead of failing with "database is locked"; and the
//! inspection at open reads a file in use under its locks, from one
//! snapshot, so another process's checkpoint or creation of the file does
//! not look like damage; a file nobody has open is read without locks, and
//! a refusal from that read stands only if the file was at rest across it
//! (another process may have opened, written and closed the file under it).

mod baselines;
mod check;
mod defs;
mod error;
mod export;
mod jobs;
mod open;
mod queries;
mod records;
mod remeasure;
mod schema;
mod supersede;

pub use baselines::{Baseline, NewBaseline};
pub use check::CheckReport;
pub use defs::{TargetRow, WorkloadRow};
pub use error::DbError;
pub use export::ImportStats;
pub use jobs::{Job, JobStatus, NewJob};
pub use open::{default_path, has_sqlite_header, DB_ENV};
pub use queries::{RecordFilter, Stats, TaskCount};
pub use records::{Inserted, NewRecord, Placed, Record, RecordKey, Remeasurement};
pub use remeasure::{NewRemeasurement, DISQUALIFYING};
pub use schema::{APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION};
pub use supersede::Superseded;

use rusqlite::Connection;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// An open tuning database.
#[derive(Debug)]
pub struct Database {
    conn: Connection,
    path: PathBuf,
}

/// A workload or target row: its id and the hash of its definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefRef {
    /// Row id.
    pub id: i64,
    /// SHA-256 of the definition text (hex).
    pub hash: String,
}

/// SHA-256 of a text, in hex: the hash of workload and target definitions and of traces.
pub fn hash_text(text: &str) -> String {
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

impl Database {
    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stores a workload definition (once per distinct text).
    pub fn upsert_workload(&self, definition: &str) -> Result<DefRef, DbError> {
        let hash = hash_text(definition);
        self.write(|tx| {
            tx.execute(
                "INSERT INTO workloads (definition, hash) VALUES (?1, ?2) ON CONFLICT(hash) DO NOTHING",
                (definition, &hash),
            )?;
            let id = tx.query_row("SELECT id FROM workloads WHERE hash = ?1", [&hash], |r| r.get(0))?;
            Ok(DefRef { id, hash: hash.clone() })
        })
    }

    /// Stores a target definition (once per distinct text).
    pub fn upsert_target(&self, name: &str, definition: &str) -> Result<DefRef, DbError> {
        let hash = hash_text(definition);
        self.write(|tx| {
            tx.execute(
                "INSERT INTO targets (name, definition, hash) VALUES (?1, ?2, ?3) ON CONFLICT(hash) DO NOTHING",
                (name, definition, &hash),
            )?;
            let id = tx.query_row("SELECT id FROM targets WHERE hash = ?1", [&hash], |r| r.get(0))?;
            Ok(DefRef { id, hash: hash.clone() })
        })
    }

    /// Runs `f` in an `IMMEDIATE` transaction (the write lock taken at
    /// once, waiting up to the busy timeout) and commits it.
    pub(crate) fn write<T>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        let tx = rusqlite::Transaction::new_unchecked(&self.conn, rusqlite::TransactionBehavior::Immediate)?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    }

    /// The connection, for reads.
    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }
}
