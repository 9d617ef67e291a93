//! Re-measurements: a record's candidate measured again, every run kept, and the median of all of them as the record's confirmed objective.

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

/// Writes a record's re-measurements and its confirmed objective; returns the latter.
pub(crate) fn store_runs(
    tx: &rusqlite::Transaction<'_>,
    id: i64,
    first: Option<f64>,
    runs: &[Remeasurement],
) -> Result<Option<f64>, DbError> {
    let confirmed = confirmed(first, runs);
    let json = serde_json::to_string(runs).unwrap_or_else(|_| "[]".into());
    tx.execute("UPDATE records SET remeasured = ?2, confirmed = ?3 WHERE id = ?1", (id, &json, confirmed))?;
    Ok(confirmed)
}

impl Database {
    /// Adds a re-measurement to record `id` and returns its new confirmed
    /// objective, in one transaction (the run is kept even when it failed).
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

    #[test]
    fn the_confirmed_objective_is_the_median_of_the_runs_that_passed() {
        assert_eq!(confirmed(None, &[]), None);
        assert_eq!(confirmed(Some(3.0), &[]), Some(3.0));
        assert_eq!(confirmed(Some(1.0), &[run(Some(5.0)), run(Some(4.0))]), Some(4.0));
        assert_eq!(confirmed(Some(1.0), &[run(None), run(Some(5.0)), run(Some(4.0)), run(Some(2.0))]), Some(3.0));
        assert_eq!(confirmed(None, &[run(None)]), None);
    }
}
