//! The end of a timed job: each task's best candidates (and its unscheduled nest, where that ranks among them) measured again in interleaved rounds, so the winner is not decided by one lucky or unlucky run on a busy machine.
//!
//! Every run is kept in its record (`Database::remeasure`); the record's
//! confirmed objective is the median over its first measurement and every
//! re-measurement, and it is what the database ranks the record by. A
//! candidate whose re-run crashes, hangs or computes a wrong result leaves
//! the winners (the database marks its record with that failure). Under
//! emulation the figures are deterministic, so nothing is re-measured.

use super::job::Loop;
use super::objective::ObjectiveKind;
use super::task::{Scored, Task};
use scaletune_database::{DbError, NewRemeasurement, DISQUALIFYING};
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
    /// During the search, each batch also measures the task's current best
    /// candidate again until it has this many runs (0 or 1: never), so a
    /// lucky first run does not keep the lead, nor steer the mutations, for
    /// long. Not a trial; timed objectives only.
    #[serde(default = "default_best_runs")]
    pub best_runs: usize,
}

fn default_best_runs() -> usize {
    3
}

impl Default for ConfirmConfig {
    fn default() -> ConfirmConfig {
        ConfirmConfig { top: 4, rounds: 3, best_runs: default_best_runs() }
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
    /// Per candidate: the status of its first run here that crashed, hung
    /// or computed a wrong result (the database has disqualified its record).
    failed: Vec<Option<&'static str>>,
    runs: usize,
    passed: usize,
    interrupted: bool,
}

/// The unscheduled nest's record, if `task` has one that passed and whose
/// objective would rank it among the best `top` candidates: it is then
/// confirmed with them, since `scaletune build` ships it where no schedule
/// beats it (a nest slower than all of them is not measured again).
fn contending_baseline(task: &Task, top: usize) -> Option<i64> {
    let (record, baseline) = (task.baseline_record?, task.baseline?);
    let contends = match task.elites.get(top.checked_sub(1)?) {
        Some(last) => baseline < last.objective,
        None => true,
    };
    contends.then_some(record)
}

impl Loop<'_> {
    /// The candidate a batch of `task` measures again besides its trials:
    /// the best so far, while it has fewer than `best_runs` runs (timed
    /// objectives only). Returns its record and trace.
    pub(super) fn recheck(&self, task: &Task) -> Option<(i64, Trace)> {
        if self.objective.kind != ObjectiveKind::Time {
            return None;
        }
        let best = task.best_scored()?;
        (best.runs < self.confirm.best_runs).then(|| (best.record, (*best.sample.trace).clone()))
    }

    /// Keeps a re-check's run in its record and re-ranks the task: by the
    /// record's new median, or without the candidate if it crashed, hung or
    /// computed a wrong result this time.
    pub(super) fn recheck_result(
        &self,
        task: &mut Task,
        record: i64,
        m: &scaletune_measure::Measurement,
    ) -> Result<(), DbError> {
        let metrics = serde_json::to_string(&m.runs).unwrap_or_else(|_| "[]".into());
        let objective = self.objective.value(m);
        let run = NewRemeasurement { job_id: Some(self.job), status: m.status.name(), metrics: &metrics, objective };
        let confirmed = self.db.remeasure(record, &run)?;
        if DISQUALIFYING.contains(&m.status.name()) {
            task.disqualified(record, m.status.name());
            task.forget(record);
            return Ok(());
        }
        if let Some(best) = task.elites.iter().find(|s| s.record == record) {
            let (objective, runs) = (confirmed.unwrap_or(best.objective), best.runs + 1);
            task.remeasured(record, objective, runs);
        }
        Ok(())
    }

    /// Re-measures the best `cfg.top` candidates of every task `cfg.rounds`
    /// times, with the unscheduled nest where it ranks among them, and
    /// re-ranks each task's elites (and its baseline) by their confirmed
    /// objectives.
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
            let mut next: Vec<(i64, Trace)> =
                task.elites.iter().take(cfg.top).map(|s| (s.record, (*s.sample.trace).clone())).collect();
            if let Some(record) = contending_baseline(task, cfg.top) {
                next.push((record, Trace::default()));
            }
            if next.len() < 2 {
                continue;
            }
            let before = task.best_scored().map(|s| (s.record, s.objective));
            let mut done: Vec<i64> = Vec::new();
            let (mut runs, mut passed) = (0, 0);
            let mut extra = 0;
            while !next.is_empty() {
                let r = self.rounds(task, &next, cfg.rounds).await?;
                runs += r.runs;
                passed += r.passed;
                for (((record, _), c), &failed) in next.iter().zip(&r.confirmed).zip(&r.failed) {
                    done.push(*record);
                    if let Some(status) = failed {
                        task.disqualified(*record, status);
                    }
                    if task.baseline_record == Some(*record) {
                        // The unscheduled nest: its median is what a schedule must beat
                        // now; if a run of it failed, nothing is quoted against it.
                        match (c, failed) {
                            (_, Some(_)) => task.baseline = None,
                            (Some(c), None) => task.baseline = Some(*c),
                            (None, None) => {}
                        }
                        continue;
                    }
                    match (c, task.elites.iter().position(|s| s.record == *record)) {
                        // A candidate that passed once and then misbehaved is no winner.
                        (_, Some(_)) if failed.is_some() => task.forget(*record),
                        (Some(c), Some(i)) => task.elites[i].objective = *c,
                        // Every run failed here (a flaky candidate): it
                        // cannot stay a winner. (Not if an interrupt came
                        // before its runs did.)
                        (None, Some(_)) if !r.interrupted => task.forget(*record),
                        _ => {}
                    }
                }
                task.elites.sort_by(Scored::rank);
                if r.interrupted {
                    out.interrupted = true;
                    break;
                }
                next = match task.elites.first() {
                    Some(best) if !done.contains(&best.record) && extra < cfg.top => {
                        extra += 1;
                        vec![(best.record, (*best.sample.trace).clone())]
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
        let mut out = Rounds {
            confirmed: vec![None; top.len()],
            failed: vec![None; top.len()],
            runs: 0,
            passed: 0,
            interrupted: false,
        };
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
                let k = m.candidate as usize;
                if out.failed[k].is_none() && DISQUALIFYING.contains(&m.status.name()) {
                    out.failed[k] = Some(m.status.name());
                }
                if objective.is_some() {
                    out.confirmed[k] = confirmed;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::tuned::job_config;
    use crate::commands::measure::{runner_target, RunnerKind};
    use crate::tune::job::{LoopState, Observer};
    use crate::tune::setup;
    use crate::tune::store;
    use async_trait::async_trait;
    use scaletune_codegen::target::Target;
    use scaletune_database::{hash_text, Database, NewJob, RecordFilter};
    use scaletune_measure::runner::{Built, Runner};
    use scaletune_measure::{Farm, LlvmBuilder, Status, Timing, VlMeasurement};
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    use std::time::Duration;
    use tokio::sync::Notify;

    /// Times nothing: the `trials` first runs take 1 ms + 0.1 ms per
    /// candidate index; afterwards (the re-measurements) every run of the
    /// artifact first re-measured as candidate 0 (the best) fails with
    /// `failure`, and the others take their first time again. With
    /// `interrupt`, the first re-measurement also notifies it.
    struct Scripted {
        trials: usize,
        failure: Status,
        runs: AtomicUsize,
        first: Mutex<HashMap<String, f64>>,
        cursed: Mutex<Option<String>>,
        interrupt: Option<Arc<Notify>>,
    }

    fn timed(vl: u32, seconds: f64) -> VlMeasurement {
        let mut m = VlMeasurement::unmeasured(vl, "scripted", String::new());
        m.status = Status::Ok;
        m.timing = Some(Timing::from_repeats(vec![seconds], 1));
        m
    }

    #[async_trait]
    impl Runner for Scripted {
        fn name(&self) -> String {
            "scripted".into()
        }
        fn accepts(&self, target: &Target, _vl_bits: u32) -> bool {
            target.is_native()
        }
        async fn run(&self, built: Arc<Built>, vl_bits: &[u32]) -> Vec<VlMeasurement> {
            let n = self.runs.fetch_add(1, Ordering::SeqCst);
            let vl = vl_bits.first().copied().unwrap_or(256);
            if n < self.trials {
                let t = 1e-3 + 1e-4 * built.candidate as f64;
                let t = *self.first.lock().expect("lock").entry(built.artifact.clone()).or_insert(t);
                return vec![timed(vl, t)];
            }
            if let Some(i) = &self.interrupt {
                i.notify_one();
            }
            let mut cursed = self.cursed.lock().expect("lock");
            if cursed.is_none() && built.candidate == 0 {
                *cursed = Some(built.artifact.clone());
            }
            if cursed.as_deref() == Some(built.artifact.as_str()) {
                let mut m = VlMeasurement::unmeasured(vl, "scripted", "scripted failure");
                m.status = self.failure;
                return vec![m];
            }
            let t = self.first.lock().expect("lock").get(&built.artifact).copied();
            vec![timed(vl, t.expect("re-measures only what it measured"))]
        }
    }

    struct Quiet;
    impl Observer for Quiet {
        fn trial(&mut self, _: &[Task], _: &LoopState) {}
        fn batch(&mut self, _: &[Task], _: &LoopState, _: usize, _: usize, _: Duration) {}
    }

    /// What a scripted job left behind.
    struct Ran {
        _dir: tempfile::TempDir,
        db: Database,
        finished: crate::tune::job::Finished,
        tasks: Vec<Task>,
    }

    /// A job of `trials` trials in batches of `batch` of a small matmul on
    /// host through `runner`, with `confirm`.
    fn run(
        runner: Arc<dyn Runner>,
        trials: usize,
        batch: usize,
        confirm: ConfirmConfig,
        interrupt: Arc<Notify>,
    ) -> Ran {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Database::open(&dir.path().join("t.db")).expect("opens");
        let reference = "matmul:M=16,N=16,K=8";
        let (target, kind, _) = runner_target("host", Some(RunnerKind::Native), &[]).expect("host");
        let mut cfg = job_config(reference, "host", kind, &[], trials);
        cfg.batch = batch;
        cfg.confirm = confirm;
        let mut s = setup(&cfg, &target, &db).expect("setup");
        let job_id =
            db.create_job(&NewJob { arguments: "{}".into(), seed: cfg.seed, strategy: "random".into() }).expect("job");
        let farm = Farm::new(Arc::new(LlvmBuilder::new()), 2, vec![runner]);
        let label = cfg.runner_label();
        let lp = Loop::for_job(&db, job_id, &cfg, s.rows.clone(), &farm, &label, interrupt);
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let training = std::mem::take(&mut s.training);
        let finished = rt.block_on(lp.run(&mut s.tasks, training, LoopState::default(), &mut Quiet)).expect("runs");
        Ran { _dir: dir, db, finished, tasks: s.tasks }
    }

    /// As `db best`: the trace of the best record with a schedule (the unscheduled nest is the baseline).
    fn db_best(db: &Database, task: &Task) -> String {
        let (wh, th) = (
            hash_text(&store::workload_definition(&task.workload)),
            hash_text(&store::target_definition(&task.target)),
        );
        db.best_k(&wh, &th, 10, &RecordFilter::default())
            .expect("best")
            .into_iter()
            .find(|r| !r.trace.is_empty())
            .map(|r| r.trace.clone())
            .unwrap_or_default()
    }

    /// A 6-trial job in one batch, then re-measuring its best 2 twice;
    /// returns the database, the job's outcome and the trace `db best` would give.
    fn job(
        runner: Scripted,
        interrupt: Arc<Notify>,
    ) -> (tempfile::TempDir, Database, crate::tune::job::Finished, String) {
        let ran = run(Arc::new(runner), 6, 6, ConfirmConfig { top: 2, rounds: 2, best_runs: 0 }, interrupt);
        let best = db_best(&ran.db, &ran.tasks[0]);
        assert_eq!(ran.tasks[0].statuses, statuses_of_trials(&ran.db), "the summary counts what the database holds");
        (ran._dir, ran.db, ran.finished, best)
    }

    /// The job's trial records per status, as the database has them now.
    fn statuses_of_trials(db: &Database) -> std::collections::BTreeMap<String, usize> {
        let mut n = std::collections::BTreeMap::new();
        for (status, _, _) in trials(db) {
            *n.entry(status).or_default() += 1;
        }
        n
    }

    fn scripted(failure: Status, interrupt: Option<Arc<Notify>>) -> Scripted {
        Scripted {
            trials: 6,
            failure,
            runs: AtomicUsize::new(0),
            first: Mutex::new(HashMap::new()),
            cursed: Mutex::new(None),
            interrupt,
        }
    }

    /// The records of the job's trials by trial index: (status, objective, re-run statuses).
    fn trials(db: &Database) -> Vec<(String, Option<f64>, Vec<String>)> {
        let mut v: Vec<_> = db.all_records().expect("records").into_iter().filter(|r| r.trial_idx >= 0).collect();
        v.sort_by_key(|r| r.trial_idx);
        v.into_iter()
            .map(|r| (r.status.clone(), r.objective, r.remeasured.iter().map(|m| m.status.clone()).collect()))
            .collect()
    }

    #[test]
    fn a_winner_whose_re_run_computes_garbage_is_dropped_and_the_runner_up_confirmed() {
        let (_dir, db, finished, best) = job(scripted(Status::WrongResult, None), Arc::new(Notify::new()));
        let c = &finished.confirmed[0];
        let t = trials(&db);
        // The best two re-measured twice each; the best failed both runs and left
        // the winners, and the runner-up, confirmed at its first time, won. (Two
        // samples with the same object code share the script, hence the counts
        // in terms of the failed records.)
        let failed: Vec<_> = t.iter().filter(|r| r.0 == "wrong_result").collect();
        assert!(!failed.is_empty(), "{t:?}");
        for f in &failed {
            assert_eq!(f.2, ["wrong_result", "wrong_result"], "every run is kept");
            assert!(f.1.is_some(), "the first measurement is kept");
        }
        assert!(c.winner_changed);
        assert_eq!(c.runs, 2 * c.candidates);
        assert_eq!(c.passed, c.runs - 2 * failed.len());
        assert_eq!(c.best_before, failed.iter().filter_map(|f| f.1).reduce(f64::min));
        // `db best` no longer offers it: the record it gives was re-measured and passed.
        let winner = db.all_records().expect("records").into_iter().find(|r| r.trace == best).expect("winner");
        assert_eq!(winner.status, "ok");
        assert!(winner.remeasured.iter().all(|m| m.status == "ok") && !winner.remeasured.is_empty());
        assert_eq!((c.best_after, winner.confirmed), (winner.objective, winner.objective));
        assert!(c.best_after > c.best_before);
    }

    #[test]
    fn an_interrupt_during_re_measurement_drops_no_winner() {
        let interrupt = Arc::new(Notify::new());
        let runner = scripted(Status::Unmeasured, Some(Arc::clone(&interrupt)));
        let (_dir, db, finished, best) = job(runner, interrupt);
        assert_eq!(finished.reason, crate::tune::job::StopReason::Interrupted);
        // Nothing was confirmed, and the fastest first measurement is still the best record.
        assert!(finished.confirmed.iter().all(|c| !c.winner_changed), "{:?}", finished.confirmed);
        assert!(trials(&db).iter().all(|r| r.0 == "ok"));
        let first_best = db
            .all_records()
            .expect("records")
            .into_iter()
            .filter(|r| r.trial_idx >= 0 && !r.trace.is_empty())
            .min_by(|a, b| a.objective.unwrap_or(f64::MAX).total_cmp(&b.objective.unwrap_or(f64::MAX)))
            .expect("records");
        assert_eq!(best, first_best.trace);
        assert_eq!(finished.state.confirmed_at, None, "a resumed job re-measures");
    }

    /// The unscheduled nest (the first batch's candidate 0) first runs in
    /// `baseline_first` seconds and then in 50 ms; every other object runs
    /// in 1 ms + 0.1 ms per object seen before it, every time.
    struct LuckyBaseline {
        baseline_first: f64,
        /// If set, every later run of the nest fails with this status.
        later: Option<Status>,
        baseline: Mutex<Option<String>>,
        times: Mutex<HashMap<String, f64>>,
    }

    #[async_trait]
    impl Runner for LuckyBaseline {
        fn name(&self) -> String {
            "lucky-baseline".into()
        }
        fn accepts(&self, target: &Target, _vl_bits: u32) -> bool {
            target.is_native()
        }
        async fn run(&self, built: Arc<Built>, vl_bits: &[u32]) -> Vec<VlMeasurement> {
            let vl = vl_bits.first().copied().unwrap_or(256);
            let mut baseline = self.baseline.lock().expect("lock");
            if baseline.is_none() && built.candidate == 0 {
                *baseline = Some(built.artifact.clone());
                return vec![timed(vl, self.baseline_first)];
            }
            if baseline.as_deref() == Some(built.artifact.as_str()) {
                if let Some(status) = self.later {
                    let mut m = VlMeasurement::unmeasured(vl, "lucky-baseline", "scripted failure");
                    m.status = status;
                    return vec![m];
                }
                return vec![timed(vl, 50e-3)];
            }
            let mut times = self.times.lock().expect("lock");
            let seen = times.len();
            vec![timed(vl, *times.entry(built.artifact.clone()).or_insert(1e-3 + 1e-4 * seen as f64))]
        }
    }

    /// True if `x` is `want` up to rounding.
    fn near(x: Option<f64>, want: f64) -> bool {
        x.is_some_and(|x| (x - want).abs() <= 1e-9 * want)
    }

    fn lucky_baseline(baseline_first: f64, later: Option<Status>) -> Ran {
        let runner =
            LuckyBaseline { baseline_first, later, baseline: Mutex::new(None), times: Mutex::new(HashMap::new()) };
        run(Arc::new(runner), 6, 6, ConfirmConfig { top: 2, rounds: 2, best_runs: 0 }, Arc::new(Notify::new()))
    }

    /// The database's record of the unscheduled nest.
    fn baseline_record(db: &Database) -> scaletune_database::Record {
        db.all_records().expect("records").into_iter().find(|r| r.trace.is_empty()).expect("a baseline record")
    }

    #[test]
    fn an_unscheduled_nest_whose_first_run_was_lucky_is_confirmed_with_the_best_and_loses() {
        let ran = lucky_baseline(0.5e-3, None);
        let task = &ran.tasks[0];
        let base = baseline_record(&ran.db);
        // It ranked first, so it was re-measured with the best two: every run kept.
        assert!(near(base.objective, 0.5e-3), "{:?}", base.objective);
        assert_eq!(base.remeasured.iter().map(|m| m.status.as_str()).collect::<Vec<_>>(), ["ok", "ok"]);
        assert!(near(base.confirmed, 50e-3), "the median of 0.5, 50 and 50 ms: {:?}", base.confirmed);
        assert_eq!((task.baseline_record, task.baseline), (Some(base.id), base.confirmed));
        assert_eq!(ran.finished.confirmed[0].candidates, 3);
        // What `build` ships and `db best` gives is the best schedule, not the nest.
        let best = task.best_scored().expect("a best schedule");
        assert!(best.objective < 2e-3, "{}", best.objective);
        assert_eq!(task.shipped(), Some(best.objective));
        let (wh, th) = (
            hash_text(&store::workload_definition(&task.workload)),
            hash_text(&store::target_definition(&task.target)),
        );
        let first = ran.db.best_k(&wh, &th, 1, &RecordFilter::default()).expect("best").remove(0);
        assert_eq!((first.id, first.confirmed), (best.record, Some(best.objective)));
        // A job resuming from the database knows the nest's median.
        let (target, kind, _) = runner_target("host", Some(RunnerKind::Native), &[]).expect("host");
        let again = setup(&job_config("matmul:M=16,N=16,K=8", "host", kind, &[], 6), &target, &ran.db).expect("setup");
        assert_eq!((again.tasks[0].baseline_record, again.tasks[0].baseline), (Some(base.id), base.confirmed));
    }

    #[test]
    fn an_unscheduled_nest_whose_re_runs_compute_garbage_is_no_longer_quoted_or_shipped() {
        let ran = lucky_baseline(0.5e-3, Some(Status::WrongResult));
        let base = baseline_record(&ran.db);
        assert_eq!(base.status, "wrong_result", "the database disqualified it");
        assert_eq!(base.remeasured.iter().map(|m| m.status.as_str()).collect::<Vec<_>>(), ["wrong_result"; 2]);
        let task = &ran.tasks[0];
        assert_eq!(task.baseline, None, "no speed-up is quoted against it");
        let best = task.best_scored().expect("a best schedule");
        assert_eq!(task.shipped(), Some(best.objective));
        assert_eq!(task.statuses.get("wrong_result"), Some(&1), "{:?}", task.statuses);
    }

    #[test]
    fn an_unscheduled_nest_slower_than_the_best_is_not_measured_again() {
        let ran = lucky_baseline(10e-3, None);
        let base = baseline_record(&ran.db);
        assert!(base.remeasured.is_empty(), "{:?}", base.remeasured);
        assert!(near(base.objective, 10e-3) && base.confirmed.is_none(), "{:?} {:?}", base.objective, base.confirmed);
        assert_eq!(ran.tasks[0].baseline, base.objective);
        assert_eq!(ran.finished.confirmed[0].candidates, 2);
    }

    /// The first run of each object takes 1 ms + 0.1 ms per object seen
    /// before it; any later run of it takes 5 ms.
    #[derive(Default)]
    struct LuckyFirst {
        first: Mutex<HashMap<String, f64>>,
    }

    #[async_trait]
    impl Runner for LuckyFirst {
        fn name(&self) -> String {
            "lucky-first".into()
        }
        fn accepts(&self, target: &Target, _vl_bits: u32) -> bool {
            target.is_native()
        }
        async fn run(&self, built: Arc<Built>, vl_bits: &[u32]) -> Vec<VlMeasurement> {
            let vl = vl_bits.first().copied().unwrap_or(256);
            let mut first = self.first.lock().expect("lock");
            if first.contains_key(&built.artifact) {
                return vec![timed(vl, 5e-3)];
            }
            let t = 1e-3 + 1e-4 * first.len() as f64;
            // Every third first run kept a repeat that waited half its time for the CPU.
            let disturbed = first.len().is_multiple_of(3);
            first.insert(built.artifact.clone(), t);
            let mut m = timed(vl, t);
            if disturbed {
                m.timing = m.timing.map(|x| x.with_waits(vec![t / 2.0], 1));
            }
            vec![m]
        }
    }

    #[test]
    fn the_best_so_far_is_measured_again_during_the_search_and_a_lucky_first_run_loses_the_lead() {
        let confirm = ConfirmConfig { top: 0, rounds: 0, best_runs: 2 };
        let ran = run(Arc::new(LuckyFirst::default()), 8, 4, confirm, Arc::new(Notify::new()));
        let task = &ran.tasks[0];
        let records = ran.db.all_records().expect("records");
        // The first batch's best was measured again in the second batch (not a trial) ...
        let rechecked: Vec<_> = records.iter().filter(|r| !r.remeasured.is_empty()).collect();
        assert_eq!(rechecked.len(), 1, "one candidate re-checked");
        let lucky = rechecked[0];
        assert_eq!(lucky.trial_idx, task.incumbents.iter().position(Option::is_some).map_or(-1, |i| i as i64));
        assert_eq!(lucky.remeasured.iter().map(|m| m.status.as_str()).collect::<Vec<_>>(), ["ok"]);
        assert_eq!(records.iter().filter(|r| r.trial_idx >= 0).count(), 8, "re-checks are not trials");
        // ... its median now ranks it, behind a candidate that never ran slow.
        let median = lucky.confirmed.expect("confirmed");
        assert!((median - (lucky.objective.expect("first") + 5e-3) / 2.0).abs() < 1e-12);
        let best = task.best_scored().expect("best");
        assert_ne!(best.record, lucky.id);
        assert!(best.objective < median);
        assert_eq!(task.elites.iter().find(|s| s.record == lucky.id).map(|s| (s.runs, s.objective)), Some((2, median)));
        // The job's answer after each trial: the lucky one until its re-check.
        assert_eq!(task.incumbents.len(), 8);
        assert_eq!(task.incumbents[3], Some(lucky.id));
        // A resumed job knows the runs from the database.
        let cfg = {
            let (_, kind, _) = runner_target("host", Some(RunnerKind::Native), &[]).expect("host");
            job_config("matmul:M=16,N=16,K=8", "host", kind, &[], 8)
        };
        let (target, _, _) = runner_target("host", Some(RunnerKind::Native), &[]).expect("host");
        let again = setup(&cfg, &target, &ran.db).expect("setup");
        let restored = again.tasks[0].elites.iter().find(|s| s.record == lucky.id).expect("an elite");
        assert_eq!((restored.runs, restored.objective), (2, median));
    }

    #[test]
    fn a_resumed_job_rebuilds_the_curve_and_answers_of_its_earlier_trials() {
        // No re-checks: every trial counts with its first measurement, as it did live.
        let confirm = ConfirmConfig { top: 0, rounds: 0, best_runs: 0 };
        let ran = run(Arc::new(LuckyFirst::default()), 8, 4, confirm, Arc::new(Notify::new()));
        let live = &ran.tasks[0];
        assert_eq!(live.curve.len(), 8);
        let (target, kind, _) = runner_target("host", Some(RunnerKind::Native), &[]).expect("host");
        let cfg = job_config("matmul:M=16,N=16,K=8", "host", kind, &[], 8);
        let mut again = setup(&cfg, &target, &ran.db).expect("setup");
        assert!(again.tasks[0].curve.is_empty(), "a new job starts with no curve");
        crate::tune::count_earlier_trials(&mut again, &ran.db, 1).expect("counts");
        let resumed = &again.tasks[0];
        assert_eq!(resumed.curve, live.curve);
        assert_eq!(resumed.incumbents, live.incumbents);
        assert_eq!(resumed.trials, 8);
        // What other tasks did to the timings, from the records.
        assert!(live.contention.disturbed_trials > 0, "{:?}", live.contention);
        assert_eq!(resumed.contention, live.contention);
    }

    #[test]
    fn a_job_stored_before_re_checks_existed_resumes_with_the_default() {
        let old: ConfirmConfig = serde_json::from_str(r#"{"top":4,"rounds":3}"#).expect("parses");
        assert_eq!(old, ConfirmConfig::default());
        let off: ConfirmConfig = serde_json::from_str(r#"{"top":0,"rounds":3,"best_runs":0}"#).expect("parses");
        assert_eq!(off.best_runs, 0);
    }
}
