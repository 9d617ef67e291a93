//! The end of a timed job: each task's best candidates measured again in interleaved rounds, so the winner is not decided by one lucky or unlucky run on a busy machine.
//!
//! Every run is kept in its record (`Database::remeasure`); the record's
//! confirmed objective is the median over its first measurement and every
//! re-measurement, and it is what the database ranks the record by. Under
//! emulation the figures are deterministic, so nothing is re-measured.

use super::job::Loop;
use super::objective::ObjectiveKind;
use super::task::Task;
use scaletune_database::{DbError, NewRemeasurement};
use scaletune_measure::Candidate;
use scaletune_space::trace::Trace;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// How many candidates are confirmed, and how often.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfirmConfig {
    /// The best candidates of each task measured again (0: none).
    pub top: usize,
    /// Rounds; each measures every one of them once, in a rotated order.
    pub rounds: usize,
}

impl Default for ConfirmConfig {
    fn default() -> ConfirmConfig {
        ConfirmConfig { top: 4, rounds: 3 }
    }
}

/// What confirming one task found.
#[derive(Clone, Debug, PartialEq)]
pub struct Confirmed {
    /// The task.
    pub task: usize,
    /// Candidates re-measured.
    pub candidates: usize,
    /// Runs that passed, of all runs made.
    pub passed: usize,
    /// Runs made.
    pub runs: usize,
    /// The best objective before (first measurements), and after (confirmed).
    pub best_before: Option<f64>,
    /// The best confirmed objective.
    pub best_after: Option<f64>,
    /// True if the best candidate changed.
    pub winner_changed: bool,
}

/// The result of the confirmation: per task, or interrupted part way.
pub struct Confirmation {
    /// One entry per task confirmed.
    pub tasks: Vec<Confirmed>,
    /// True if Ctrl-C or SIGTERM stopped it (what arrived is kept).
    pub interrupted: bool,
}

/// The outcome of re-measuring a set of candidates.
struct Rounds {
    /// Confirmed objective per candidate (`None` if none of its runs here passed).
    confirmed: Vec<Option<f64>>,
    runs: usize,
    passed: usize,
    interrupted: bool,
}

impl Loop<'_> {
    /// Re-measures the best `cfg.top` candidates of every task `cfg.rounds`
    /// times and re-ranks each task's elites by their confirmed objectives.
    /// If the best is then a candidate not re-measured yet (it was behind
    /// the top ones at first), it is re-measured too, up to `cfg.top` more
    /// times, so the winner is always a confirmed one. Does nothing for
    /// emulated objectives.
    pub async fn confirm(&self, tasks: &mut [Task], cfg: ConfirmConfig) -> Result<Confirmation, DbError> {
        let mut out = Confirmation { tasks: Vec::new(), interrupted: false };
        if cfg.top == 0 || cfg.rounds == 0 || self.objective.kind != ObjectiveKind::Time {
            return Ok(out);
        }
        for (ti, task) in tasks.iter_mut().enumerate() {
            if task.elites.len() < 2 {
                continue;
            }
            let before = task.best_scored().map(|s| (s.record, s.objective));
            let mut done: Vec<i64> = Vec::new();
            let (mut runs, mut passed) = (0, 0);
            let mut next: Vec<(i64, Trace)> =
                task.elites.iter().take(cfg.top).map(|s| (s.record, s.sample.trace.clone())).collect();
            let mut extra = 0;
            while !next.is_empty() {
                let r = self.rounds(task, &next, cfg.rounds).await?;
                runs += r.runs;
                passed += r.passed;
                for ((record, _), c) in next.iter().zip(&r.confirmed) {
                    done.push(*record);
                    match (c, task.elites.iter().position(|s| s.record == *record)) {
                        (Some(c), Some(i)) => task.elites[i].objective = *c,
                        // Every run failed here (a flaky candidate): it
                        // cannot stay a winner. (Not if an interrupt came
                        // before its runs did.)
                        (None, Some(i)) if !r.interrupted => {
                            task.elites.remove(i);
                        }
                        _ => {}
                    }
                }
                task.elites.sort_by(|a, b| a.objective.total_cmp(&b.objective));
                if r.interrupted {
                    out.interrupted = true;
                    break;
                }
                next = match task.elites.first() {
                    Some(best) if !done.contains(&best.record) && extra < cfg.top => {
                        extra += 1;
                        vec![(best.record, best.sample.trace.clone())]
                    }
                    _ => Vec::new(),
                };
            }
            let after = task.best_scored().map(|s| (s.record, s.objective));
            out.tasks.push(Confirmed {
                task: ti,
                candidates: done.len(),
                passed,
                runs,
                best_before: before.map(|b| b.1),
                best_after: after.map(|a| a.1),
                winner_changed: before.map(|b| b.0) != after.map(|a| a.0),
            });
            if out.interrupted {
                break;
            }
        }
        Ok(out)
    }

    /// Measures `top` `rounds` times, each round in a rotated order, and
    /// adds every run to its record.
    async fn rounds(&self, task: &Task, top: &[(i64, Trace)], rounds: usize) -> Result<Rounds, DbError> {
        let mut out = Rounds { confirmed: vec![None; top.len()], runs: 0, passed: 0, interrupted: false };
        for round in 0..rounds {
            let candidates: Vec<Candidate> = (0..top.len())
                .map(|i| (i + round) % top.len())
                .map(|k| {
                    Candidate::new(k as u64, Arc::clone(&task.workload), Arc::clone(&task.target), top[k].1.clone())
                        .with_vl_bits(task.vls.clone())
                        .with_timeout(self.timeout)
                })
                .collect();
            let mut batch = self.farm.submit(candidates);
            loop {
                let m = tokio::select! {
                    m = batch.next() => m,
                    _ = self.interrupt.notified() => { out.interrupted = true; break }
                };
                let Some(m) = m else { break };
                let Some((record, _)) = top.get(m.candidate as usize) else { continue };
                let metrics = serde_json::to_string(&m.runs).unwrap_or_else(|_| "[]".into());
                let objective = self.objective.value(&m);
                let run =
                    NewRemeasurement { job_id: Some(self.job), status: m.status.name(), metrics: &metrics, objective };
                let confirmed = self.db.remeasure(*record, &run)?;
                if objective.is_some() {
                    out.confirmed[m.candidate as usize] = confirmed;
                }
                out.runs += 1;
                out.passed += usize::from(objective.is_some());
            }
            if out.interrupted {
                break;
            }
        }
        Ok(out)
    }
}
