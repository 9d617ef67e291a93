//! Search efficiency: how many trials each strategy needs to come within 5% of the best schedule any run found.
//!
//! Every run is a cold start: a fresh database per (strategy, seed), so no
//! run profits from another's records. A run's curve is the best objective
//! after each trial (its job history in trial order); the goal is 95% of the
//! best performance any run reached, i.e. an objective at most
//! `best / 0.95`, and a run's figure is the first trial at which its curve
//! gets there (none if it never does).

use super::tuned::{job_config, run_job};
use super::BenchError;
use crate::commands::measure::{runner_target, RunnerKind};
use crate::search::StrategyKind;
use crate::tune::confirm::ConfirmConfig;
use crate::tune::{setup, JobConfig};
use scaletune_database::Database;
use std::fmt::Write;
use std::path::Path;
use tokio::runtime::Handle;

/// The fraction of the best performance a run must reach.
pub const GOAL: f64 = 0.95;

/// One tuning run from a cold start.
#[derive(Clone, Debug)]
pub struct Run {
    /// The strategy.
    pub strategy: StrategyKind,
    /// The job seed.
    pub seed: u64,
    /// Best objective (lower is better) after each trial; `None` until a candidate passed.
    pub best_so_far: Vec<Option<f64>>,
}

impl Run {
    /// The best objective the run found.
    pub fn best(&self) -> Option<f64> {
        self.best_so_far.last().copied().flatten()
    }

    /// The first trial (1-based) whose best objective is at most `goal`.
    pub fn trials_to(&self, goal: f64) -> Option<usize> {
        self.best_so_far.iter().position(|b| b.is_some_and(|b| b <= goal)).map(|i| i + 1)
    }
}

/// The best-so-far curve of a sequence of trial objectives (`None`: failed).
pub fn curve(objectives: impl IntoIterator<Item = Option<f64>>) -> Vec<Option<f64>> {
    let mut best: Option<f64> = None;
    objectives
        .into_iter()
        .map(|o| {
            if let Some(o) = o.filter(|o| o.is_finite()) {
                best = Some(best.map_or(o, |b| b.min(o)));
            }
            best
        })
        .collect()
}

/// Runs `trials` trials of `reference` on `target` (native, one thread) for
/// each strategy and seed, each into its own database under `dir`.
pub fn run(
    reference: &str,
    target: &str,
    trials: usize,
    seeds: &[u64],
    strategies: &[StrategyKind],
    dir: &Path,
    rt: &Handle,
) -> Result<Vec<Run>, BenchError> {
    std::fs::create_dir_all(dir).map_err(|e| BenchError::Io(format!("creating {}: {e}", dir.display())))?;
    let tune_err = |e: anyhow::Error| BenchError::Tune {
        workload: reference.to_string(),
        message: crate::commands::error_text(&e),
    };
    let (target_def, runner, _) = runner_target(target, Some(RunnerKind::Native), &[]).map_err(tune_err)?;
    let mut runs = Vec::new();
    for &strategy in strategies {
        for &seed in seeds {
            let path = dir.join(format!("{}-{seed}.db", strategy.name()));
            if path.exists() {
                std::fs::remove_file(&path).map_err(|e| BenchError::Io(format!("removing {}: {e}", path.display())))?;
            }
            let db = Database::open(&path)?;
            // Only the trials count here: no re-measuring at the end.
            let confirm = ConfirmConfig { top: 0, ..ConfirmConfig::default() };
            let cfg = JobConfig { seed, strategy, confirm, ..job_config(reference, target, runner, &[], trials) };
            let mut s = setup(&cfg, &target_def, &db).map_err(tune_err)?;
            let label = format!("{reference} ({} seed {seed})", strategy.name());
            let (job, _) = run_job(&db, &cfg, &target_def, &mut s, &label, rt)?;
            let history = db.job_history(job)?;
            let objectives = history.iter().filter(|r| r.trial_idx >= 0).map(|r| r.objective);
            runs.push(Run { strategy, seed, best_so_far: curve(objectives) });
        }
    }
    Ok(runs)
}

/// The table of a set of runs: per run its best and trials to [`GOAL`] of
/// the overall best, then per strategy the median, and the ratio of
/// random's median to evolutionary's.
pub fn table(reference: &str, runs: &[Run], flops: Option<f64>) -> String {
    let mut out = String::new();
    let best = runs.iter().filter_map(Run::best).fold(f64::INFINITY, f64::min);
    if !best.is_finite() {
        return format!("search efficiency of {reference}: no run found a passing candidate\n");
    }
    let goal = best / GOAL;
    let shown = |t: f64| match flops {
        Some(f) => format!("{:.1} GFLOPS", f / t / 1e9),
        None => format!("{:.3} ms", t * 1e3),
    };
    let _ = writeln!(out, "search efficiency of {reference}: best of all runs {}; goal {}", shown(best), shown(goal));
    let _ = writeln!(out, "{:<14} {:>5} {:>8} {:>16} {:>14}", "strategy", "seed", "trials", "best", "trials to 95%");
    for r in runs {
        let reached = r.trials_to(goal).map_or("never".to_string(), |t| t.to_string());
        let b = r.best().map_or("-".to_string(), shown);
        let _ = writeln!(
            out,
            "{:<14} {:>5} {:>8} {:>16} {:>14}",
            r.strategy.name(),
            r.seed,
            r.best_so_far.len(),
            b,
            reached
        );
    }
    let median = |s: StrategyKind| -> Option<f64> {
        // A run that never reached the goal counts as one trial past its budget.
        let mut v: Vec<f64> = runs
            .iter()
            .filter(|r| r.strategy == s)
            .map(|r| r.trials_to(goal).unwrap_or(r.best_so_far.len() + 1) as f64)
            .collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(if v.len() % 2 == 1 { v[v.len() / 2] } else { (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0 })
    };
    let (r, e) = (median(StrategyKind::Random), median(StrategyKind::Evolutionary));
    for (name, m) in [("random", r), ("evolutionary", e)] {
        if let Some(m) = m {
            let _ = writeln!(out, "median trials to 95% ({name}): {m}");
        }
    }
    if let (Some(r), Some(e)) = (r, e) {
        let _ = writeln!(out, "random needs {:.2}x the trials of evolutionary", r / e);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(strategy: StrategyKind, objectives: &[Option<f64>]) -> Run {
        Run { strategy, seed: 1, best_so_far: curve(objectives.iter().copied()) }
    }

    #[test]
    fn curves_keep_the_best_and_skip_failures() {
        let c = curve([None, Some(3.0), Some(f64::NAN), Some(4.0), None, Some(1.0)]);
        assert_eq!(c, vec![None, Some(3.0), Some(3.0), Some(3.0), Some(3.0), Some(1.0)]);
    }

    #[test]
    fn trials_to_the_goal_count_from_one() {
        let r = run(StrategyKind::Random, &[Some(2.0), Some(1.2), Some(1.0)]);
        assert_eq!(r.trials_to(1.0 / GOAL), Some(3));
        assert_eq!(r.trials_to(1.3), Some(2));
        assert_eq!(r.trials_to(0.5), None);
    }

    #[test]
    fn the_table_compares_medians() {
        let runs = vec![
            run(StrategyKind::Random, &[Some(4.0), Some(2.0), Some(1.5), Some(1.0)]),
            run(StrategyKind::Evolutionary, &[Some(3.0), Some(1.0)]),
        ];
        let t = table("w", &runs, None);
        expect_test::expect![[r#"
            search efficiency of w: best of all runs 1000.000 ms; goal 1052.632 ms
            strategy        seed   trials             best  trials to 95%
            random             1        4      1000.000 ms              4
            evolutionary       1        2      1000.000 ms              2
            median trials to 95% (random): 4
            median trials to 95% (evolutionary): 2
            random needs 2.00x the trials of evolutionary
        "#]]
        .assert_eq(&t);
    }
}
