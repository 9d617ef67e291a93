//! Tuning jobs: their arguments, status, resumable state and why they stopped.

use crate::{Database, DbError};
use rusqlite::{OptionalExtension, Row};
use serde::{Deserialize, Serialize};

/// Where a job is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Running (or killed without a chance to say so).
    Running,
    /// Reached its limit.
    Finished,
    /// Stopped by Ctrl-C or SIGTERM; resumable.
    Interrupted,
    /// Stopped by an error.
    Failed,
}

impl JobStatus {
    /// The stored name.
    pub fn name(self) -> &'static str {
        match self {
            JobStatus::Running => "running",
            JobStatus::Finished => "finished",
            JobStatus::Interrupted => "interrupted",
            JobStatus::Failed => "failed",
        }
    }

    fn parse(s: &str) -> JobStatus {
        match s {
            "finished" => JobStatus::Finished,
            "interrupted" => JobStatus::Interrupted,
            "failed" => JobStatus::Failed,
            _ => JobStatus::Running,
        }
    }
}

/// A job to create.
#[derive(Clone, Debug, PartialEq)]
pub struct NewJob {
    /// The job's arguments (JSON, the tuner's own format).
    pub arguments: String,
    /// Job seed.
    pub seed: u64,
    /// Search strategy name.
    pub strategy: String,
}

/// A stored job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// Job id.
    pub id: i64,
    /// Arguments (JSON).
    pub arguments: String,
    /// Seed.
    pub seed: u64,
    /// Strategy name.
    pub strategy: String,
    /// Status.
    pub status: JobStatus,
    /// Start time (UTC, ISO 8601).
    pub started_at: String,
    /// End time, once ended.
    pub ended_at: Option<String>,
    /// Why it stopped.
    pub stop_reason: Option<String>,
    /// The tuner's resumable state (JSON), if saved.
    pub state: Option<String>,
}

pub(crate) const JOB_COLUMNS: &str = "id, arguments, seed, strategy, status, started_at, ended_at, stop_reason, state";

pub(crate) fn job_from_row(r: &Row<'_>) -> rusqlite::Result<Job> {
    let status: String = r.get(4)?;
    Ok(Job {
        id: r.get(0)?,
        arguments: r.get(1)?,
        seed: r.get::<_, i64>(2)? as u64,
        strategy: r.get(3)?,
        status: JobStatus::parse(&status),
        started_at: r.get(5)?,
        ended_at: r.get(6)?,
        stop_reason: r.get(7)?,
        state: r.get(8)?,
    })
}

/// The current time as SQLite writes it (UTC, ISO 8601 with milliseconds).
pub(crate) const NOW: &str = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

impl Database {
    /// Creates a running job.
    pub fn create_job(&self, job: &NewJob) -> Result<i64, DbError> {
        self.write(|tx| {
            tx.execute(
                &format!("INSERT INTO jobs (arguments, seed, strategy, status, started_at) VALUES (?1, ?2, ?3, 'running', {NOW})"),
                (&job.arguments, job.seed as i64, &job.strategy),
            )?;
            Ok(tx.last_insert_rowid())
        })
    }

    /// Saves the tuner's resumable state of a job.
    pub fn update_job_state(&self, job: i64, state: &str) -> Result<(), DbError> {
        self.write(|tx| {
            if tx.execute("UPDATE jobs SET state = ?2 WHERE id = ?1", (job, state))? == 0 {
                return Err(DbError::NoJob(job));
            }
            Ok(())
        })
    }

    /// Replaces a job's arguments (a resumed job given a larger trial budget).
    pub fn set_job_arguments(&self, job: i64, arguments: &str) -> Result<(), DbError> {
        self.write(|tx| {
            if tx.execute("UPDATE jobs SET arguments = ?2 WHERE id = ?1", (job, arguments))? == 0 {
                return Err(DbError::NoJob(job));
            }
            Ok(())
        })
    }

    /// Ends a job.
    pub fn finish_job(&self, job: i64, status: JobStatus, stop_reason: &str) -> Result<(), DbError> {
        self.write(|tx| {
            let sql = format!("UPDATE jobs SET status = ?2, stop_reason = ?3, ended_at = {NOW} WHERE id = ?1");
            if tx.execute(&sql, (job, status.name(), stop_reason))? == 0 {
                return Err(DbError::NoJob(job));
            }
            Ok(())
        })
    }

    /// Marks a stopped job as running again (`--resume`).
    pub fn reopen_job(&self, job: i64) -> Result<(), DbError> {
        self.write(|tx| {
            let sql = "UPDATE jobs SET status = 'running', ended_at = NULL, stop_reason = NULL WHERE id = ?1";
            if tx.execute(sql, [job])? == 0 {
                return Err(DbError::NoJob(job));
            }
            Ok(())
        })
    }

    /// A job by id.
    pub fn job(&self, id: i64) -> Result<Option<Job>, DbError> {
        Ok(self
            .conn()
            .query_row(&format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?1"), [id], job_from_row)
            .optional()?)
    }

    /// Every job, oldest first.
    pub fn jobs(&self) -> Result<Vec<Job>, DbError> {
        let mut st = self.conn().prepare(&format!("SELECT {JOB_COLUMNS} FROM jobs ORDER BY id"))?;
        let rows = st.query_map([], job_from_row)?.collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }
}
