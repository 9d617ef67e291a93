//! Re-measurements: a record's candidate measured again, every run kept, and the median of all of them as the record's confirmed objective.
//!
//! A candidate that passed its first run but crashes, hangs or computes a
//! wrong result when run again is not a candidate to ship: the first such
//! re-run turns the record's status into that failure (its message says
//! so), which takes it out of every query for the best records. Runs that
//! fail for no fault of the candidate (`unmeasured`, `build_error`) do not.

use crate::records::Remeasurement;
use crate::{Database, DbError};
use rusqlite::OptionalExtension;

/// A re-measurement to add to a record.
#[derive(Clone, Debug, PartialEq)]
pub struct NewRemeasurement<'a> {
    /// The job that re-measured it.
    pub job_id: Option<i64>,
    /// Status name of the run.
    pub status: &'a str,
    /// Every metric of every vector length (JSON).
    pub metrics: &'a str,
    /// The run's objective, if it passed.
    pub objective: Option<f64>,
}

/// The median of `xs` (the mean of the middle two for an even count).
fn median(mut xs: Vec<f64>) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    Some(if n % 2 == 1 { xs[n / 2] } else { (xs[n / 2 - 1] + xs[n / 2]) / 2.0 })
}

/// The confirmed objective of a record: the median over its first
/// objective and every re-measurement's (runs without one are left out).
pub(crate) fn confirmed(first: Option<f64>, runs: &[Remeasurement]) -> Option<f64> {
    median(first.into_iter().chain(runs.iter().filter_map(|r| r.objective)).collect())
}

/// Statuses of a re-run that disqualify a record: the candidate's own run misbehaved.
pub const DISQUALIFYING: [&str; 3] = ["run_error", "timeout", "wrong_result"];

/// The status and message a record gets from its re-runs: `None` while
/// none of them is [`DISQUALIFYING`], else the first such status and a message.
pub(crate) fn disqualified(runs: &[Remeasurement]) -> Option<(String, String)> {
    let failed: Vec<&Remeasurement> = runs.iter().filter(|r| DISQUALIFYING.contains(&r.status.as_str())).collect();
    let first = failed.first()?;
    Some((
        first.status.clone(),
        format!(
            "passed its first run, then failed {} of {} re-measurements (the first with {})",
            failed.len(),
            runs.len(),
            first.status
        ),
    ))
}

/// A record's first objective and its re-measurements.
pub(crate) type Runs = (Option<f64>, Vec<Remeasurement>);

/// A record's first objective and its re-measurements, read inside `tx`
/// (`None` if there is no such record). Unreadable runs are an error
/// naming the record, not an empty list (that would lose them on the next write).
pub(crate) fn load_runs(
    tx: &rusqlite::Transaction<'_>,
    file: &std::path::Path,
    id: i64,
) -> Result<Option<Runs>, DbError> {
    let row: Option<(Option<f64>, Option<String>)> = tx
        .query_row("SELECT objective, remeasured FROM records WHERE id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((first, text)) = row else { return Ok(None) };
    let runs = match text {
        Some(t) => serde_json::from_str(&t).map_err(|e| DbError::Corrupt {
            file: file.display().to_string(),
            reason: format!("record {id} has unreadable re-measurements: {e}"),
        })?,
        None => Vec::new(),
    };
    Ok(Some((first, runs)))
}

/// Writes a record's re-measurements and its confirmed objective, and
/// disqualifies a passing record whose re-runs include a [`DISQUALIFYING`]
/// failure; returns the confirmed objective (`None` once disqualified).
pub(crate) fn store_runs(
    tx: &rusqlite::Transaction<'_>,
    id: i64,
    first: Option<f64>,
    runs: &[Remeasurement],
) -> Result<Option<f64>, DbError> {
    let confirmed = confirmed(first, runs);
    let json = serde_json::to_string(runs).unwrap_or_else(|_| "[]".into());
    tx.execute("UPDATE records SET remeasured = ?2, confirmed = ?3 WHERE id = ?1", (id, &json, confirmed))?;
    if let Some((status, message)) = disqualified(runs) {
        tx.execute(
            "UPDATE records SET status = ?2, message = ?3 WHERE id = ?1 AND status = 'ok'",
            (id, &status, &message),
        )?;
        return Ok(None);
    }
    Ok(confirmed)
}

impl Database {
    /// Adds a re-measurement to record `id` and returns its new confirmed
    /// objective, in one transaction (the run is kept even when it failed;
    /// `None` once a [`DISQUALIFYING`] run has disqualified the record).
    pub fn remeasure(&self, id: i64, run: &NewRemeasurement<'_>) -> Result<Option<f64>, DbError> {
        self.write(|tx| {
            let (first, mut runs) = load_runs(tx, self.path(), id)?.ok_or(DbError::NoRecord(id))?;
            let at: String = tx.query_row(&format!("SELECT {}", crate::jobs::NOW), [], |r| r.get(0))?;
            runs.push(Remeasurement {
                job_id: run.job_id,
                status: run.status.to_string(),
                metrics: run.metrics.to_string(),
                objective: run.objective,
                at,
            });
            store_runs(tx, id, first, &runs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(objective: Option<f64>) -> Remeasurement {
        Remeasurement { job_id: None, status: "ok".into(), metrics: "[]".into(), objective, at: String::new() }
    }

    fn failed(status: &str) -> Remeasurement {
        Remeasurement { status: status.into(), ..run(None) }
    }

    #[test]
    fn only_the_candidates_own_failures_disqualify_it() {
        assert_eq!(disqualified(&[run(Some(1.0)), failed("unmeasured"), failed("build_error")]), None);
        let (status, message) =
            disqualified(&[run(Some(1.0)), failed("wrong_result"), failed("timeout")]).expect("disqualified");
        assert_eq!(status, "wrong_result");
        assert_eq!(message, "passed its first run, then failed 2 of 3 re-measurements (the first with wrong_result)");
    }

    #[test]
    fn the_confirmed_objective_is_the_median_of_the_runs_that_passed() {
        assert_eq!(confirmed(None, &[]), None);
        assert_eq!(confirmed(Some(3.0), &[]), Some(3.0));
        assert_eq!(confirmed(Some(1.0), &[run(Some(5.0)), run(Some(4.0))]), Some(4.0));
        assert_eq!(confirmed(Some(1.0), &[run(None), run(Some(5.0)), run(Some(4.0)), run(Some(2.0))]), Some(3.0));
        assert_eq!(confirmed(None, &[run(None)]), None);
    }
}
