//! Tuning jobs: tasks (workload x target), the loop that searches and measures them, and what a job stores and reports.
//!
//! ```text
//! JobConfig ──setup──▶ tasks (design space + what the database knows) ──job::Loop──▶ records (committed one by one)
//!                                                         ▲ scheduler picks a task, strategy proposes, farm measures, model learns
//! ```

pub mod confirm;
pub mod job;
pub mod objective;
pub mod scheduler;
pub mod stale;
pub mod store;
pub mod suite;
pub mod summary;
pub mod task;

use crate::commands::measure::RunnerKind;
use crate::cost_model::{self, Row};
use crate::pipeline::load_workload_to_run as load_workload;
use crate::search::StrategyKind;
use objective::{Objective, ObjectiveKind};
use scaletune_codegen::pipeline::initial_nest;
use scaletune_codegen::target::Target;
use scaletune_database::{Database, DbError, RecordFilter};
use scaletune_measure::{Measurement, TimingProtocol, VlMeasurement};
use scaletune_space::design::{DesignSpace, SpaceOptions};
use scaletune_space::trace::{parse_trace, Trace};
use scaletune_space::workload::Workload;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use task::Task;

/// Everything that defines a job; stored with it, so `--resume` runs the same job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobConfig {
    /// Workload references with their weights.
    pub workloads: Vec<(String, f64)>,
    /// Target name or file.
    pub target: String,
    /// Trial budget of the whole job.
    pub trials: usize,
    /// Wall-clock limit of one run of the job, in seconds.
    pub time_limit_s: Option<f64>,
    /// Job seed.
    pub seed: u64,
    /// Vector lengths (empty: the target's defaults).
    pub vls: Vec<u32>,
    /// What is minimized, and how vector lengths combine.
    pub objective: Objective,
    /// Where candidates run.
    pub runner: RunnerKind,
    /// Farm file of remote agents.
    pub farm: Option<PathBuf>,
    /// Search strategy.
    pub strategy: StrategyKind,
    /// Candidates per batch.
    pub batch: usize,
    /// Build workers.
    pub builders: usize,
    /// Timing protocol of the native and remote runners.
    pub protocol: TimingProtocol,
    /// Per-run timeout in seconds.
    pub timeout_s: u64,
    /// Re-measuring the best candidates at the end (timed jobs only).
    #[serde(default)]
    pub confirm: confirm::ConfirmConfig,
}

impl JobConfig {
    /// The runner as recorded in each record's key: the runner kind, plus
    /// the thread count when it is fixed (`native-1t`), since a parallel
    /// schedule timed on one thread is a different measurement. QEMU runs
    /// always use one thread.
    pub fn runner_label(&self) -> String {
        match self.protocol.threads {
            Some(n) if self.runner != RunnerKind::Qemu => format!("{}-{n}t", self.runner.name()),
            _ => self.runner.name().to_string(),
        }
    }

    /// The space options of this job's tasks: no parallel loops when every
    /// candidate runs on one thread (`--threads 1`, or QEMU), since their
    /// chunk counts could not change a measurement.
    pub fn space_options(&self) -> SpaceOptions {
        let one_thread = self.runner == RunnerKind::Qemu || self.protocol.threads == Some(1);
        SpaceOptions { parallel: !one_thread }
    }

    /// The default objective of a runner: time on real machines, estimated cycles under QEMU.
    pub fn default_objective(runner: RunnerKind) -> ObjectiveKind {
        match runner {
            RunnerKind::Qemu => ObjectiveKind::Cycles,
            RunnerKind::Native | RunnerKind::Remote => ObjectiveKind::Time,
        }
    }
}

/// The tasks of a job with their database rows, and the training rows the database already holds.
pub struct Setup {
    /// One task per workload.
    pub tasks: Vec<Task>,
    /// (workload row, target row) per task.
    pub rows: Vec<(i64, i64)>,
    /// Cost-model training rows from earlier measurements.
    pub training: Vec<Row>,
    /// The record of each of [`Setup::training`]'s rows, in the same order:
    /// a record measured again ([`stale::find_stale`]) takes its row out.
    pub training_records: Vec<i64>,
    /// Per task, the records it was given, oldest first: what resuming a
    /// job needs to rebuild the task's curve ([`count_earlier_trials`]).
    pub known: Vec<Vec<Known>>,
}

/// A record [`setup`] gave a task (the baseline, or a sample it observed).
#[derive(Clone, Debug, PartialEq)]
pub struct Known {
    /// The record.
    pub id: i64,
    /// The job that measured it.
    pub job: Option<i64>,
    /// Its trial index in that job (negative: not a trial).
    pub trial_idx: i64,
    /// Its objective as the task ranks it (`None`: it failed).
    pub objective: Option<f64>,
    /// Its trace text (empty: the unscheduled baseline).
    pub trace: String,
    /// Its design-space trace text.
    pub space_trace: String,
    /// Its status name.
    pub status: String,
    /// The identity of the code it measured (`None`: not known).
    pub code: Option<String>,
    /// True for a record no runner measured that was measured again
    /// already, also without a result, on the same code (its history holds
    /// that earlier `unmeasured` run): it is not tried a third time.
    pub retried: bool,
}

/// Builds the tasks of `cfg` for `target` and loads what `db` knows of
/// them (measured traces, the best candidates, training rows): records of
/// the same workload, target, runner and vector lengths, by any job.
pub fn setup(cfg: &JobConfig, target: &Target, db: &Database) -> anyhow::Result<Setup> {
    let target = Arc::new(target.clone());
    let target_row = db.upsert_target(&target.name, &store::target_definition(&target))?;
    let mut tasks = Vec::new();
    let mut rows = Vec::new();
    let mut training = Vec::new();
    let mut training_records = Vec::new();
    let mut known_all = Vec::new();
    for (idx, (reference, weight)) in cfg.workloads.iter().enumerate() {
        let w = load_workload(reference)?;
        let nest = initial_nest(&w, &target);
        let space = DesignSpace::generate_with(&nest, cfg.space_options());
        let vls = if cfg.vls.is_empty() { target.default_vl_bits.clone() } else { cfg.vls.clone() };
        let workload_row = db.upsert_workload(&store::workload_definition(&w))?;
        if let Some(flops) = w.flops() {
            db.set_workload_flops(workload_row.id, flops)?;
        }
        let mut task = Task::new(idx, Arc::new(w), Arc::clone(&target), *weight, vls, space);
        let vl_set = store::vl_set(&task.vls);
        let mut known = Vec::new();
        for rec in db.workload_records(&workload_row.hash)? {
            if rec.target_hash != target_row.hash || rec.runner != cfg.runner_label() || rec.vl_set != vl_set {
                continue;
            }
            task.measured.insert(rec.trace.clone());
            let runs: Vec<VlMeasurement> = serde_json::from_str(&rec.metrics).unwrap_or_default();
            let objective = if rec.status != "ok" {
                None
            } else if rec.confirmed.is_some() && rec.objective_kind == cfg.objective.kind.name() {
                // Re-measured: the median of every run is the better estimate.
                rec.confirmed
            } else {
                cfg.objective.value(&Measurement::from_runs(0, String::new(), 0.0, runs))
            };
            let seen = Known {
                id: rec.id,
                job: rec.job_id,
                trial_idx: rec.trial_idx,
                objective,
                trace: rec.trace.clone(),
                space_trace: rec.space_trace.clone(),
                status: rec.status.clone(),
                code: rec.code.clone(),
                retried: rec.superseded.iter().any(|h| h.status == "unmeasured" && h.code == rec.code),
            };
            if rec.trace.is_empty() {
                if objective.is_some() || task.baseline.is_none() {
                    task.baseline = objective;
                    task.baseline_record = Some(rec.id);
                }
                known.push(seen);
                continue;
            }
            let Ok(trace) = parse_trace(&rec.trace) else { continue };
            let Some(sample) = task.restore(&rec.space_trace, &trace) else { continue };
            task.observe(&sample, objective, rec.id);
            known.push(seen);
            if let (Some(o), false) = (objective, rec.remeasured.is_empty()) {
                task.remeasured(rec.id, o, 1 + rec.remeasured.len());
            }
            if let Some(lowered) = cost_model::sample_lowered(&task, &sample) {
                task.codes.insert(lowered.code);
                if let Some(objective) = objective {
                    training.push(Row { task: idx, features: lowered.features.to_vec(), objective });
                    training_records.push(rec.id);
                }
            }
        }
        if task.elites.is_empty() {
            let filter = RecordFilter {
                runner: Some(cfg.runner_label()),
                vl_set: Some(vl_set.clone()),
                objective_kind: Some(cfg.objective.kind.name().to_string()),
            };
            task.add_donors(database_donors(db, &task.workload, &workload_row.hash, &target_row.hash, &filter)?);
        }
        rows.push((workload_row.id, target_row.id));
        tasks.push(task);
        known_all.push(known);
    }
    Ok(Setup { tasks, rows, training, training_records, known: known_all })
}

/// The best schedules the database has of other workloads of the name of
/// `w` (of hash `hash`) on the target of hash `target_hash`, measured as
/// `filter` says (the job's runner, VL set and objective), the best
/// [`task::DONORS_PER_SHAPE`] of each, the best of each first: donors for
/// a task with no record of its own ([`Task::donors`]). Records whose
/// workload definition this build does not read are passed over.
fn database_donors(
    db: &Database,
    w: &Workload,
    hash: &str,
    target_hash: &str,
    filter: &RecordFilter,
) -> Result<Vec<Arc<Trace>>, DbError> {
    let mut per_shape: Vec<Vec<Arc<Trace>>> = Vec::new();
    for row in db.workloads()? {
        let same_name = serde_json::from_str::<Workload>(&row.definition).is_ok_and(|other| other.name == w.name);
        if row.hash == hash || !same_name {
            continue;
        }
        let best = db.best_k(&row.hash, target_hash, task::DONORS_PER_SHAPE, filter)?;
        per_shape.push(
            best.iter()
                .filter(|r| !r.trace.is_empty())
                .filter_map(|r| parse_trace(&r.trace).ok())
                .map(Arc::new)
                .collect(),
        );
    }
    Ok((0..task::DONORS_PER_SHAPE)
        .flat_map(|rank| per_shape.iter().filter_map(move |s| s.get(rank).cloned()))
        .collect())
}

/// Counts the trials job `job` ran before it was interrupted into the
/// tasks of `setup` (a resumed job's summary then covers the whole job):
/// each trial record under its status now. Each task's curve and
/// incumbents are rebuilt for those trials, so the task scheduler's
/// improvement rates and the job's answer after each trial span the whole
/// job: the job is taken to have started from the records older than its
/// first trial's (records other jobs wrote while it ran were not its to
/// see), and each record counts with the objective the task now ranks it
/// by (a record re-checked during the search, by its median from the start).
pub fn count_earlier_trials(setup: &mut Setup, db: &Database, job: i64) -> Result<(), scaletune_database::DbError> {
    for rec in db.job_history(job)? {
        if rec.trial_idx < 0 {
            continue;
        }
        let Some(i) = setup.rows.iter().position(|r| *r == (rec.workload_id, rec.target_id)) else { continue };
        let task = &mut setup.tasks[i];
        task.trials += 1;
        task.count_trial(rec.id, &rec.status);
        if let Ok(runs) = serde_json::from_str::<Vec<scaletune_measure::VlMeasurement>>(&rec.data.metrics) {
            task.contention.count(&runs);
        }
    }
    for (task, known) in setup.tasks.iter_mut().zip(&setup.known) {
        let (curve, incumbents) = earlier_curve(known, job);
        task.curve = curve;
        task.incumbents = incumbents;
    }
    Ok(())
}

/// The curve (job trial count, best objective so far) and incumbents
/// after each of job `job`'s trials among `known`, as the job saw them: it
/// started from the records older than its first trial's, and ranked them
/// as the task does ([`task::rank_order`]).
fn earlier_curve(known: &[Known], job: i64) -> (Vec<(usize, f64)>, Vec<Option<i64>>) {
    let mut mine: Vec<&Known> = known.iter().filter(|k| k.job == Some(job) && k.trial_idx >= 0).collect();
    mine.sort_by_key(|k| (k.trial_idx, k.id));
    let Some(first) = mine.iter().map(|k| k.id).min() else { return (Vec::new(), Vec::new()) };
    let mut best: Option<&Known> = None;
    let mut baseline: Option<f64> = None;
    let older = known.iter().filter(|k| k.job != Some(job) && k.id < first);
    let (mut curve, mut incumbents) = (Vec::new(), Vec::new());
    for (k, trial) in older.map(|k| (k, None)).chain(mine.into_iter().map(|k| (k, Some(k.trial_idx)))) {
        if k.trace.is_empty() {
            // As `setup` and the loop do: a record keeps the baseline it
            // found, a trial of the job replaces it.
            baseline = if trial.is_some() { k.objective } else { k.objective.or(baseline) };
        } else if let Some(o) = k.objective {
            let ahead = |b: &Known| {
                let bo = b.objective.unwrap_or(f64::INFINITY);
                task::rank_order(bo, o, || (b.trace.clone(), k.trace.clone())).is_le()
            };
            if !best.is_some_and(ahead) {
                best = Some(k);
            }
        }
        if let Some(t) = trial {
            let now = best.and_then(|b| b.objective).or(baseline).unwrap_or(f64::INFINITY);
            curve.push((t as usize + 1, now));
            incumbents.push(best.map(|b| b.id));
        }
    }
    (curve, incumbents)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::tuned::job_config;
    use scaletune_space::trace::Inst;

    fn known(id: i64, job: i64, trial_idx: i64, objective: Option<f64>, trace: &str) -> Known {
        Known {
            id,
            job: Some(job),
            trial_idx,
            objective,
            trace: trace.into(),
            space_trace: String::new(),
            status: if objective.is_some() { "ok" } else { "run_error" }.into(),
            code: None,
            retried: false,
        }
    }

    #[test]
    fn the_earlier_curve_starts_from_older_records_only_and_ranks_ties_by_trace() {
        let known = [
            // Job 1: the baseline, and a trial that failed.
            known(1, 1, 0, Some(5.0), ""),
            known(2, 1, 1, None, "y"),
            // Job 2 (resumed), trials 2.. (job-wide indices are per job, from 0).
            known(3, 2, 0, Some(4.0), ""),
            known(4, 2, 1, None, "a"),
            // Another job's record written while job 2 ran: not job 2's to see.
            known(5, 3, 0, Some(0.5), "b"),
            known(6, 2, 2, Some(2.0), "m"),
            known(7, 2, 3, Some(2.0), "c"),
            known(8, 2, 4, Some(2.0), "z"),
        ];
        let (curve, incumbents) = earlier_curve(&known, 2);
        // Until a schedule passes, the baseline: the job's own replaces the older one.
        assert_eq!(curve, [(1, 4.0), (2, 4.0), (3, 2.0), (4, 2.0), (5, 2.0)]);
        // Equal objectives: the smaller trace text leads, as in `Task::observe`.
        assert_eq!(incumbents, [None, None, Some(6), Some(7), Some(7)]);
        // A job with no trials has no curve.
        assert_eq!(earlier_curve(&known, 9), (Vec::new(), Vec::new()));
    }

    /// Whether any design-space trace of the job's one task runs a loop in parallel.
    fn searches_parallel_loops(cfg: &JobConfig) -> bool {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Database::open(&dir.path().join("t.db")).expect("db");
        let target = Target::load(&cfg.target).expect("target");
        let s = setup(cfg, &target, &db).expect("setup");
        assert!(!s.tasks[0].space.traces.is_empty());
        s.tasks[0].space.traces.iter().any(|t| t.trace.insts.iter().any(|i| matches!(i, Inst::Parallel { .. })))
    }

    #[test]
    fn jobs_whose_candidates_run_on_one_thread_search_no_parallel_loops() {
        let mut cfg = job_config("matmul:M=64,N=64,K=64", "host", RunnerKind::Native, &[], 8);
        assert_eq!(cfg.protocol.threads, Some(1));
        assert!(!searches_parallel_loops(&cfg));
        cfg.protocol.threads = None;
        assert!(searches_parallel_loops(&cfg));
        cfg.protocol.threads = Some(2);
        assert!(searches_parallel_loops(&cfg));
        cfg.runner = RunnerKind::Qemu;
        cfg.target = "neoverse-v1".into();
        assert!(!searches_parallel_loops(&cfg), "emulated runs use one thread");
    }
}
