//! The tuned side of the bench: a tuning job per shape through the `tune` library code into the bench database, topped up only to the trial budget, and the best trace it knows.

use super::BenchError;
use crate::commands::measure::{check_runners_accept, runner_target, runners, RunnerKind};
use crate::search::StrategyKind;
use crate::tune::confirm::ConfirmConfig;
use crate::tune::job::{self, LoopState, Observer};
use crate::tune::objective::Objective;
use crate::tune::task::Task;
use crate::tune::{setup, JobConfig, Setup};
use scaletune_codegen::target::Target;
use scaletune_database::{Database, JobStatus, NewJob};
use scaletune_measure::{ArtifactCache, Farm, LlvmBuilder, TimingProtocol};
use scaletune_space::trace::Trace;
use std::sync::Arc;
use std::time::Duration;
use tokio::runtime::Handle;
use tokio::sync::Notify;

/// What the database knows of one shape after tuning.
#[derive(Clone, Debug)]
pub struct Tuned {
    /// The best trace measured (by this or an earlier bench run; the empty
    /// trace when the default schedule was best), if any candidate passed.
    pub best: Option<Trace>,
    /// Candidates the database held for this shape before this run.
    pub known_before: usize,
    /// Trials this run measured (0 when the database already held the budget).
    pub trials_run: usize,
}

/// The tuner's answer for a task: its best measured trace, or the default
/// schedule (the empty trace) when that measured faster than every sample.
fn best_trace(task: &Task) -> Option<Trace> {
    match (task.best_scored(), task.baseline) {
        (Some(b), Some(base)) if base < b.objective => Some(Trace::default()),
        (Some(b), _) => Some((*b.sample.trace).clone()),
        (None, Some(_)) => Some(Trace::default()),
        (None, None) => None,
    }
}

/// One line per batch on stderr, so that stdout keeps only the bench's table.
struct Progress {
    label: String,
}

impl Observer for Progress {
    fn trial(&mut self, _: &[Task], _: &LoopState) {}

    fn batch(&mut self, _: &[Task], state: &LoopState, _: usize, measured: usize, elapsed: Duration) {
        eprintln!("  tune {}: {measured} trials in {:.1} s, {} done", self.label, elapsed.as_secs_f64(), state.trials);
    }
}

/// The job configuration of the bench for one shape (seed 1, evolutionary search).
pub fn job_config(reference: &str, target: &str, runner: RunnerKind, vls: &[u32], trials: usize) -> JobConfig {
    let builders = std::thread::available_parallelism().map_or(2, |n| n.get()).max(1);
    JobConfig {
        workloads: vec![(reference.to_string(), 1.0)],
        target: target.to_string(),
        trials,
        time_limit_s: None,
        seed: 1,
        vls: vls.to_vec(),
        objective: Objective::new(JobConfig::default_objective(runner)),
        runner,
        farm: None,
        strategy: StrategyKind::Evolutionary,
        batch: 2 * builders + 4,
        builders,
        protocol: TimingProtocol {
            warmup: 1,
            repeat: 5,
            min_repeat_ms: 10,
            threads: Some(1),
            ..TimingProtocol::default()
        },
        timeout_s: 60,
        confirm: ConfirmConfig::default(),
    }
}

/// Tunes `reference` on `target` with `runner` at `vls` until the database
/// holds `trials` candidates of it (a second bench run measures nothing new),
/// and returns the best trace known. Returns the target as the runner builds for it.
pub fn tune(
    db: &Database,
    reference: &str,
    target: &str,
    runner: RunnerKind,
    vls: &[u32],
    trials: usize,
    rt: &Handle,
) -> Result<(Tuned, Target), BenchError> {
    let tune_err = |e: anyhow::Error| BenchError::Tune {
        workload: reference.to_string(),
        message: crate::commands::error_text(&e),
    };
    let (target_def, runner, _) = runner_target(target, Some(runner), vls).map_err(tune_err)?;
    let probe_cfg = job_config(reference, target, runner, vls, trials);
    let mut s = setup(&probe_cfg, &target_def, db).map_err(tune_err)?;
    let known_before = s.tasks.first().map_or(0, |t| t.measured.len());
    let budget = trials.saturating_sub(known_before);
    if budget > 0 {
        let cfg = JobConfig { trials: budget, ..probe_cfg };
        let (_, trials_run) = run_job(db, &cfg, &target_def, &mut s, &format!("{reference} on {target}"), rt)?;
        let best = s.tasks.first().and_then(best_trace);
        return Ok((Tuned { best, known_before, trials_run }, target_def));
    }
    let best = s.tasks.first().and_then(best_trace);
    Ok((Tuned { best, known_before, trials_run: 0 }, target_def))
}

/// Runs `cfg` as a new, finished job in `db` on the tasks of `s` (from
/// [`setup`] with the same configuration); returns the job's id and the
/// trials it measured.
pub fn run_job(
    db: &Database,
    cfg: &JobConfig,
    target_def: &Target,
    s: &mut Setup,
    label: &str,
    rt: &Handle,
) -> Result<(i64, usize), BenchError> {
    let tune_err =
        |e: anyhow::Error| BenchError::Tune { workload: label.to_string(), message: crate::commands::error_text(&e) };
    let (runner_list, _) = runners(cfg.runner, &cfg.protocol, None, target_def, rt).map_err(tune_err)?;
    // A VL no runner accepts is refused before any job starts, not failed per candidate.
    check_runners_accept(&runner_list, cfg.runner, target_def, &cfg.vls).map_err(tune_err)?;
    let job_id = db.create_job(&NewJob {
        arguments: serde_json::to_string(cfg).map_err(|e| BenchError::Io(e.to_string()))?,
        seed: cfg.seed,
        strategy: cfg.strategy.name().to_string(),
    })?;
    let builder = LlvmBuilder::new()
        .with_seed(cfg.seed)
        .with_cache(ArtifactCache::new(ArtifactCache::default_dir()).map_err(|e| BenchError::Io(e.to_string()))?);
    crate::tune::stale::find_stale(s, &builder, cfg.builders);
    let farm = crate::commands::lock_machine(Farm::new(Arc::new(builder), cfg.builders, runner_list));
    let runner_label = cfg.runner_label();
    let lp = job::Loop::for_job(db, job_id, cfg, s.rows.clone(), &farm, &runner_label, Arc::new(Notify::new()));
    let training = std::mem::take(&mut s.training);
    let mut progress = Progress { label: label.to_string() };
    let finished = rt.block_on(lp.run(&mut s.tasks, training, LoopState::default(), &mut progress))?;
    db.finish_job(job_id, JobStatus::Finished, finished.reason.text())?;
    Ok((job_id, finished.state.trials))
}
