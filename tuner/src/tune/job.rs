//! The tuning loop: pick a task, propose a batch, measure it through the farm, record every result as it arrives, learn, repeat until a limit.

use super::confirm::{ConfirmConfig, Confirmed};
use super::objective::Objective;
use super::scheduler;
use super::store::{self, RecordInput};
use super::task::Task;
use crate::cost_model::{CostModel, Row};
use crate::search::SearchStrategy;
use scaletune_database::{Database, DbError};
use scaletune_measure::{Candidate, Farm};
use scaletune_space::design::Sample;
use scaletune_space::sample::task_rng;
use scaletune_space::trace::Trace;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Why a job stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The trial budget is spent.
    Trials,
    /// The time limit passed.
    TimeLimit,
    /// No task's design space has anything new to measure.
    Exhausted,
    /// Ctrl-C or SIGTERM.
    Interrupted,
}

impl StopReason {
    /// The text stored with the job.
    pub fn text(self) -> &'static str {
        match self {
            StopReason::Trials => "trial budget reached",
            StopReason::TimeLimit => "time limit reached",
            StopReason::Exhausted => "design spaces exhausted",
            StopReason::Interrupted => "interrupted",
        }
    }
}

/// Where the loop is: saved with the job after every batch, so `--resume`
/// continues the same seed stream.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LoopState {
    /// Batches started so far (the next batch draws from stream `batches`).
    pub batches: u64,
    /// Trials recorded so far.
    pub trials: usize,
    /// The trial count at which the best candidates were last re-measured
    /// to the end (a resumed job with no new trials does not re-measure them again).
    #[serde(default)]
    pub confirmed_at: Option<usize>,
}

/// What the loop reports as it goes (progress bar or plain lines).
pub trait Observer {
    /// A trial's result was recorded.
    fn trial(&mut self, tasks: &[Task], state: &LoopState);
    /// A batch ended.
    fn batch(&mut self, tasks: &[Task], state: &LoopState, task: usize, measured: usize, elapsed: Duration);
}

/// The fixed parts of a running job.
pub struct Loop<'a> {
    /// The database records go to.
    pub db: &'a Database,
    /// The job's id.
    pub job: i64,
    /// Workload and target rows of each task.
    pub rows: Vec<(i64, i64)>,
    /// The farm.
    pub farm: &'a Farm,
    /// The runner kind's name (part of each record's key).
    pub runner: &'a str,
    /// What is minimized.
    pub objective: &'a Objective,
    /// The search strategy.
    pub strategy: Box<dyn SearchStrategy>,
    /// Job seed.
    pub seed: u64,
    /// Trial budget of the whole job.
    pub trials: usize,
    /// Wall-clock limit of this run of the job.
    pub time_limit: Option<Duration>,
    /// Candidates per batch.
    pub batch: usize,
    /// Per-run timeout of a candidate.
    pub timeout: Duration,
    /// Notified on Ctrl-C / SIGTERM.
    pub interrupt: Arc<Notify>,
    /// Re-measuring the best candidates once the trials are done.
    pub confirm: ConfirmConfig,
}

impl<'a> Loop<'a> {
    /// The loop of job `job` as `cfg` describes it (no time limit: set
    /// [`Loop::time_limit`] for one), recording under runner `runner`.
    pub fn for_job(
        db: &'a Database,
        job: i64,
        cfg: &'a super::JobConfig,
        rows: Vec<(i64, i64)>,
        farm: &'a Farm,
        runner: &'a str,
        interrupt: Arc<Notify>,
    ) -> Loop<'a> {
        Loop {
            db,
            job,
            rows,
            farm,
            runner,
            objective: &cfg.objective,
            strategy: cfg.strategy.build(cfg.objective.kind),
            seed: cfg.seed,
            trials: cfg.trials,
            time_limit: None,
            batch: cfg.batch,
            timeout: Duration::from_secs(cfg.timeout_s),
            interrupt,
            confirm: cfg.confirm,
        }
    }
}

/// The job's outcome.
pub struct Finished {
    /// Why it stopped.
    pub reason: StopReason,
    /// Where the loop ended.
    pub state: LoopState,
    /// The training rows seen (for the model's held-out figure).
    pub rows: Vec<Row>,
    /// What re-measuring the best candidates found (empty when it did not run).
    pub confirmed: Vec<Confirmed>,
}

impl Loop<'_> {
    /// Runs batches until a limit; every result is committed as it arrives.
    pub async fn run(
        mut self,
        tasks: &mut [Task],
        mut rows: Vec<Row>,
        mut state: LoopState,
        observer: &mut dyn Observer,
    ) -> Result<Finished, DbError> {
        let started = Instant::now();
        let mut exhausted = vec![false; tasks.len()];
        let mut model = CostModel::train(&rows, self.seed).ok().flatten();
        let reason = loop {
            if state.trials >= self.trials {
                break StopReason::Trials;
            }
            if self.time_limit.is_some_and(|l| started.elapsed() >= l) {
                break StopReason::TimeLimit;
            }
            let Some(ti) = scheduler::pick(tasks, &exhausted) else { break StopReason::Exhausted };
            let mut rng = task_rng(self.seed, state.batches);
            state.batches += 1;
            let n = scheduler::batch_size(tasks, &exhausted, ti, self.batch, self.trials - state.trials);
            if tasks[ti].elites.is_empty() {
                // What other shapes of its workload found so far.
                let found = super::task::sibling_donors(tasks, ti);
                tasks[ti].add_donors(found);
            }
            let mut samples: Vec<Sample> = Vec::new();
            if tasks[ti].baseline.is_none() && !tasks[ti].is_measured(&Trace::default()) {
                // The unscheduled nest: the baseline speed-ups are quoted against.
                samples.push(Sample::new(usize::MAX, Trace::default(), tasks[ti].space.nest.clone(), 0));
            }
            // Records of code this build no longer makes, measured again first.
            samples.extend(tasks[ti].take_stale(n.saturating_sub(samples.len())));
            let task = &tasks[ti];
            let want = n.saturating_sub(samples.len());
            if want > 0 {
                samples.extend(self.strategy.propose(task, model.as_ref(), want, &mut rng));
            }
            if samples.is_empty() {
                exhausted[ti] = true;
                continue;
            }
            let predicted = store::predicted_objectives(model.as_ref(), task, &rows, &samples);
            let mut candidates: Vec<Candidate> = samples
                .iter()
                .enumerate()
                .map(|(k, s)| {
                    Candidate::new(k as u64, Arc::clone(&task.workload), Arc::clone(&task.target), (*s.trace).clone())
                        .with_vl_bits(task.vls.clone())
                        .with_timeout(self.timeout)
                })
                .collect();
            // The best so far measured again (not a trial): the last candidate.
            let recheck = self.recheck(task);
            if let Some((_, trace)) = &recheck {
                candidates.push(
                    Candidate::new(
                        samples.len() as u64,
                        Arc::clone(&task.workload),
                        Arc::clone(&task.target),
                        trace.clone(),
                    )
                    .with_vl_bits(task.vls.clone())
                    .with_timeout(self.timeout),
                );
            }
            let batch_start = Instant::now();
            let mut batch = self.farm.submit(candidates);
            let mut measured = 0;
            let interrupted = loop {
                let m = tokio::select! {
                    m = batch.next() => m,
                    _ = self.interrupt.notified() => break true,
                };
                let Some(m) = m else { break false };
                if let Some((record, _)) = recheck.as_ref().filter(|_| m.candidate as usize == samples.len()) {
                    self.recheck_result(&mut tasks[ti], *record, &m)?;
                    continue;
                }
                let Some(sample) = samples.get(m.candidate as usize) else { continue };
                let (workload_id, target_id) = self.rows[ti];
                let task = &mut tasks[ti];
                let space_trace =
                    task.space.traces.get(sample.space_trace).map(|t| t.trace.to_string()).unwrap_or_default();
                let record = RecordInput {
                    job: self.job,
                    workload_id,
                    target_id,
                    trial_idx: state.trials as i64,
                    space_trace,
                    trace: sample.text().to_string(),
                    runner: self.runner,
                    vls: &task.vls,
                    measurement: &m,
                    objective: self.objective,
                    vector_kind: store::vector_kind(&task.workload, &sample.nest),
                    predicted: predicted.get(m.candidate as usize).copied().flatten(),
                }
                .into_record();
                let objective = record.objective;
                let inserted = if task.stale_records.remove(&**sample.text()).is_some() {
                    // Its record measured other code: this measurement takes its place.
                    self.db.replace_record(&record)?
                } else {
                    self.db.insert_record(&record)?
                };
                measured += 1;
                state.trials += 1;
                task.trials += 1;
                task.count_trial(inserted.id, m.status.name());
                task.contention.count(&m.runs);
                if sample.trace.insts.is_empty() {
                    task.measured.insert(String::new());
                    task.baseline = objective;
                    task.baseline_record = Some(inserted.id);
                } else {
                    task.observe(sample, objective, inserted.id);
                    if let Some(lowered) = task.lowered_one(sample) {
                        task.codes.insert(lowered.code);
                        if let Some(objective) = objective {
                            rows.push(Row { task: ti, features: lowered.features.to_vec(), objective });
                        }
                    }
                }
                let best = task.best().or(task.baseline).unwrap_or(f64::INFINITY);
                task.curve.push((state.trials, best));
                task.incumbents.push(task.best_scored().map(|s| s.record));
                observer.trial(tasks, &state);
            };
            if interrupted {
                // In-flight candidates are discarded whole; what arrived is committed.
                break StopReason::Interrupted;
            }
            self.db.update_job_state(self.job, &serde_json::to_string(&state).unwrap_or_default())?;
            observer.batch(tasks, &state, ti, measured, batch_start.elapsed());
            if measured == 0 {
                exhausted[ti] = true;
            }
            model = CostModel::train(&rows, self.seed).ok().flatten().or(model);
        };
        self.db.update_job_state(self.job, &serde_json::to_string(&state).unwrap_or_default())?;
        let mut reason = reason;
        let mut confirmed = Vec::new();
        if reason != StopReason::Interrupted && state.confirmed_at != Some(state.trials) {
            let c = self.confirm(tasks, self.confirm).await?;
            if c.interrupted {
                reason = StopReason::Interrupted;
            } else {
                state.confirmed_at = Some(state.trials);
                self.db.update_job_state(self.job, &serde_json::to_string(&state).unwrap_or_default())?;
            }
            confirmed = c.tasks;
        }
        Ok(Finished { reason, state, rows, confirmed })
    }
}
