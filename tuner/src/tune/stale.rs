//! Records measured on code their candidate no longer builds: found when a job starts, and measured again before anything new.
//!
//! A record's key names a candidate (its trace), and a later scaletune or
//! LLVM may build other code from the same trace. Each record keeps the
//! identity of the code it measured (the hash of its kernel objects,
//! [`scaletune_measure::builder::code_identity`]). When a job starts it
//! builds the objects of the records that decide where the search goes,
//! each task's best ([`super::task::ELITES`]), its unscheduled baseline and
//! the candidates that failed, and compares. With the artifact cache of
//! the same build this costs a cache look-up each; after an upgrade, one
//! compile each. A record whose code differs (or is not known: written by
//! a scaletune before records kept it) is taken out of the task's best and
//! measured again first; the new measurement takes the record's place and
//! the old one stays in the record's history
//! (`scaletune_database::Database::replace_record`). A failure of old code
//! (a crash or wrong result a codegen fix removed) thus no longer hides a
//! candidate, and a best of old code no longer leads the search or is
//! replayed at build time on a figure its code does not have.
//!
//! Records that no runner measured (status `unmeasured`: every agent of a
//! farm gone, runner faults; no fault of the candidate) are measured again
//! the same way, first, when a job starts: otherwise a candidate in flight
//! when an agent dropped out would never be measured by any job.

use super::task::Task;
use super::{Known, Setup};
use scaletune_measure::builder::BuildError;
use scaletune_measure::{Candidate, LlvmBuilder};
use scaletune_space::design::Sample;
use scaletune_space::trace::{parse_trace, Trace};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Statuses of records checked besides the best: the candidate's own failures.
pub const CHECKED_FAILURES: [&str; 4] = ["build_error", "run_error", "timeout", "wrong_result"];

/// What checking a job's records found.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StaleReport {
    /// Records checked.
    pub checked: usize,
    /// Records whose code is out of date (or not known), to measure again.
    pub stale: usize,
    /// Records no runner measured (`unmeasured`: every agent gone, runner
    /// faults), to measure again.
    pub unmeasured: usize,
    /// Seconds the check took (a compile per record whose object the
    /// artifact cache does not hold).
    pub seconds: f64,
}

/// The lines a job prints about what [`find_stale`] found: a slow check
/// (5 s or more), records of other code, records no runner measured;
/// nothing when there is nothing to say.
pub fn notes(report: &StaleReport) -> Vec<String> {
    let mut out = Vec::new();
    if report.seconds >= 5.0 {
        out.push(format!(
            "note: checking the code of {} best, failed and baseline records took {:.0} s (compiled anew where the \
             artifact cache held no object)",
            report.checked, report.seconds
        ));
    }
    if report.stale > 0 {
        out.push(format!(
            "note: {} of the {} best, failed and baseline records checked measured other code than this build \
             makes (or did not record their code): they are measured again first, their earlier measurements kept",
            report.stale, report.checked
        ));
    }
    if report.unmeasured > 0 {
        out.push(format!(
            "note: {} record(s) that no runner measured (status unmeasured) are measured again first (once more at \
             most)",
            report.unmeasured
        ));
    }
    out
}

/// True if a record that measured code `recorded` (`None`: not known)
/// with status `status` measured other code than its candidate builds
/// `now`: the codes differ, it built then and does not now, or its code is
/// not known (a build that failed then and fails now is the same verdict).
pub fn is_stale(recorded: Option<&str>, status: &str, now: &Result<String, BuildError>) -> bool {
    match (recorded, now) {
        (Some(code), Ok(current)) => code != current,
        (Some(_), Err(_)) => true,
        (None, Err(_)) => status != "build_error",
        (None, Ok(_)) => true,
    }
}

/// One record to check: its task, id, sample (`None`: the unscheduled
/// baseline), recorded code and status.
struct Check {
    task: usize,
    record: i64,
    sample: Option<Sample>,
    code: Option<String>,
    status: String,
}

/// The records of each task of `setup` to check: its best (best first),
/// then its failures and its baseline, in the order the database gave them.
fn checks(setup: &Setup) -> Vec<Check> {
    let mut out = Vec::new();
    for (ti, (task, known)) in setup.tasks.iter().zip(&setup.known).enumerate() {
        let of = |id: i64| known.iter().find(|k| k.id == id);
        for best in &task.elites {
            let Some(k) = of(best.record) else { continue };
            out.push(Check {
                task: ti,
                record: k.id,
                sample: Some(best.sample.clone()),
                code: k.code.clone(),
                status: k.status.clone(),
            });
        }
        for k in known.iter().filter(|k| k.trace.is_empty() || CHECKED_FAILURES.contains(&k.status.as_str())) {
            let Some(sample) = known_sample(task, k) else { continue };
            out.push(Check { task: ti, record: k.id, sample, code: k.code.clone(), status: k.status.clone() });
        }
    }
    out
}

/// The sample of a record the task was given: `Some(None)` for the
/// baseline, `None` if its trace no longer parses or restores.
fn known_sample(task: &Task, k: &Known) -> Option<Option<Sample>> {
    if k.trace.is_empty() {
        return Some(None);
    }
    let trace = parse_trace(&k.trace).ok()?;
    task.restore(&k.space_trace, &trace).map(Some)
}

/// The candidate of a check: its task's workload and target at the task's vector lengths.
fn candidate(task: &Task, trace: Trace) -> Candidate {
    Candidate::new(0, Arc::clone(&task.workload), Arc::clone(&task.target), trace).with_vl_bits(task.vls.clone())
}

/// Checks the records of `setup`'s tasks against the code `builder` builds
/// now, on `workers` threads, and queues the stale ones in their tasks
/// ([`Task::stale`]), out of the tasks' best and parents; a stale baseline
/// is measured again as the loop measures a missing one. Records that no
/// runner measured (`unmeasured`: measuring them again may succeed) are
/// queued too.
pub fn find_stale(setup: &mut Setup, builder: &LlvmBuilder, workers: usize) -> StaleReport {
    let start = std::time::Instant::now();
    let checks = checks(setup);
    let results: Vec<Mutex<Option<bool>>> = checks.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let tasks = &setup.tasks;
    std::thread::scope(|scope| {
        for _ in 0..workers.max(1).min(checks.len()) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(check) = checks.get(i) else { break };
                let task = &tasks[check.task];
                let trace = check.sample.as_ref().map_or_else(Trace::default, |s| (*s.trace).clone());
                let now = builder.code(&candidate(task, trace));
                let stale = is_stale(check.code.as_deref(), &check.status, &now);
                *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(stale);
            });
        }
    });
    let mut report =
        StaleReport { checked: checks.len(), stale: 0, unmeasured: 0, seconds: start.elapsed().as_secs_f64() };
    let mut stale = HashSet::new();
    for (check, result) in checks.into_iter().zip(results) {
        if result.into_inner().unwrap_or_else(|p| p.into_inner()) == Some(true)
            && measure_again(&mut setup.tasks[check.task], check.record, check.sample)
        {
            report.stale += 1;
            stale.insert(check.record);
        }
    }
    forget_training(setup, &stale);
    for (ti, check) in unmeasured(setup) {
        if measure_again(&mut setup.tasks[ti], check.0, check.1) {
            report.unmeasured += 1;
        }
    }
    report
}

/// Takes the cost-model training rows of `records` out of `setup`: their
/// figures are of code this build no longer makes, and their new
/// measurements train the model when they arrive.
fn forget_training(setup: &mut Setup, records: &HashSet<i64>) {
    let rows = std::mem::take(&mut setup.training);
    let ids = std::mem::take(&mut setup.training_records);
    for (row, id) in rows.into_iter().zip(ids) {
        if !records.contains(&id) {
            setup.training.push(row);
            setup.training_records.push(id);
        }
    }
}

/// The records of each task of `setup` that no runner measured (status
/// `unmeasured`, no fault of the candidate) and were not tried again
/// already on the same code (a run a runner can never make, such as one
/// QEMU itself aborts on, is tried twice, not by every job): their task
/// and (record, sample; `None` for the baseline).
fn unmeasured(setup: &Setup) -> Vec<(usize, (i64, Option<Sample>))> {
    let mut out = Vec::new();
    for (ti, (task, known)) in setup.tasks.iter().zip(&setup.known).enumerate() {
        for k in known.iter().filter(|k| k.status == "unmeasured" && !k.retried) {
            if let Some(sample) = known_sample(task, k) {
                out.push((ti, (k.id, sample)));
            }
        }
    }
    out
}

/// Queues `record` (its `sample`; `None`: the baseline) in `task` to be
/// measured again, its new measurement to take the record's place; out of
/// the task's best. False if it is queued already.
fn measure_again(task: &mut Task, record: i64, sample: Option<Sample>) -> bool {
    let text = sample.as_ref().map_or_else(String::new, |s| s.text().to_string());
    if task.stale_records.insert(text.clone(), record).is_some() {
        return false;
    }
    task.forget(record);
    match sample {
        Some(sample) => task.stale.push_back(sample),
        None => {
            task.baseline = None;
            task.baseline_record = None;
            task.measured.remove(&text);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::tuned::job_config;
    use crate::commands::measure::RunnerKind;
    use crate::tune::store::{target_definition, vl_set, workload_definition};
    use scaletune_codegen::target::Target;
    use scaletune_database::{Database, NewRecord};

    /// A database in `dir`, a native job on matmul 32x24x8, its target and
    /// its set-up before any record.
    struct Fixture {
        db: Database,
        cfg: crate::tune::JobConfig,
        target: Target,
        first: Setup,
        ids: (i64, i64),
    }

    fn fixture(dir: &std::path::Path) -> Fixture {
        let db = Database::open(&dir.join("t.db")).expect("db");
        let cfg = job_config("matmul:M=32,N=24,K=8", "host", RunnerKind::Native, &[], 8);
        let target = Target::load(&cfg.target).expect("target");
        let first = super::super::setup(&cfg, &target, &db).expect("setup");
        let ids = (
            db.upsert_workload(&workload_definition(&first.tasks[0].workload)).expect("workload").id,
            db.upsert_target(&target.name, &target_definition(&target)).expect("target").id,
        );
        Fixture { db, cfg, target, first, ids }
    }

    impl Fixture {
        /// A record of sample `s` of the task, with `status`, `metrics`, `objective` and `code`.
        fn record(&self, s: &Sample, status: &str, metrics: String, objective: Option<f64>, code: &str) -> NewRecord {
            let task = &self.first.tasks[0];
            NewRecord {
                job_id: None,
                workload_id: self.ids.0,
                target_id: self.ids.1,
                trial_idx: 0,
                space_trace: task.space.traces[s.space_trace].trace.to_string(),
                trace: s.text().to_string(),
                trace_hash: scaletune_database::hash_text(s.text()),
                runner: self.cfg.runner_label(),
                vl_set: vl_set(&task.vls),
                status: status.into(),
                message: if status == "ok" { String::new() } else { "every agent gone".into() },
                metrics,
                objective,
                objective_kind: self.cfg.objective.kind.name().into(),
                build_s: 0.0,
                run_s: 0.0,
                vector_kind: None,
                predicted: None,
                code: Some(code.into()),
            }
        }

        fn setup(&self) -> Setup {
            super::super::setup(&self.cfg, &self.target, &self.db).expect("setup")
        }
    }

    /// A record no runner measured is measured again once per code: not
    /// when its history holds an `unmeasured` run of the same code.
    #[test]
    fn a_record_no_runner_measured_is_measured_again_once_per_code() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = fixture(dir.path());
        let db = &f.db;
        let mut rng = scaletune_space::sample::task_rng(3, 0);
        let mut record = |code: &str| {
            let s = f.first.tasks[0].space.sample(&mut rng).expect("samples");
            f.record(&s, "unmeasured", "[]".into(), None, code)
        };
        let (fresh, twice, recompiled) = (record("a"), record("b"), record("c"));
        assert!(fresh.trace != twice.trace && twice.trace != recompiled.trace);
        let fresh_id = db.insert_record(&fresh).expect("inserts").id;
        // Tried again on the same code, and still no runner measured it.
        db.insert_record(&twice).expect("inserts");
        db.replace_record(&twice).expect("replaces");
        // Tried again, unmeasured, and then built other code.
        let recompiled_id = db.insert_record(&recompiled).expect("inserts").id;
        db.replace_record(&recompiled).expect("replaces");
        db.replace_record(&NewRecord { code: Some("d".into()), ..recompiled.clone() }).expect("replaces");
        let s = f.setup();
        let queued: Vec<i64> = unmeasured(&s).into_iter().map(|(_, (id, _))| id).collect();
        assert_eq!(queued, [fresh_id, recompiled_id]);
    }

    /// A record of other code leaves the cost model's training rows with
    /// the task's best: its figure is not one of the code this build makes.
    #[test]
    fn a_stale_record_trains_the_model_no_more() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = fixture(dir.path());
        let task = &f.first.tasks[0];
        let builder = LlvmBuilder::new();
        let mut rng = scaletune_space::sample::task_rng(5, 0);
        let mut record = |old_code: bool, seconds: f64| {
            let s = task.space.sample(&mut rng).expect("samples");
            let code = if old_code {
                "old-code".to_string()
            } else {
                builder.code(&candidate(task, (*s.trace).clone())).expect("builds")
            };
            let run = scaletune_measure::VlMeasurement {
                vl_bits: task.vls[0],
                status: scaletune_measure::Status::Ok,
                message: String::new(),
                max_abs_err: 0.0,
                timing: Some(scaletune_measure::Timing {
                    repeats_s: vec![seconds],
                    median_s: seconds,
                    spread: 0.0,
                    number: 1,
                    waited_s: Vec::new(),
                    discarded: 0,
                }),
                emulated: None,
                runner: "native".into(),
                built_for_vl: None,
                wall_s: seconds,
            };
            let metrics = serde_json::to_string(&[run]).expect("serializes");
            f.db.insert_record(&f.record(&s, "ok", metrics, Some(seconds), &code)).expect("inserts").id
        };
        let current = record(false, 2e-6);
        let old = record(true, 1e-6);
        let mut s = f.setup();
        assert_eq!(s.training_records, [current, old]);
        // Objectives in nanoseconds (the figure is recomputed from the runs).
        let ns = |s: &Setup| s.training.iter().map(|r| (r.objective * 1e9).round() as i64).collect::<Vec<_>>();
        assert_eq!(ns(&s), [2000, 1000]);
        let report = find_stale(&mut s, &builder, 2);
        assert_eq!((report.checked, report.stale), (2, 1), "{report:?}");
        assert_eq!(s.training_records, [current]);
        assert_eq!(ns(&s), [2000]);
        assert_eq!(s.tasks[0].elites.iter().map(|e| e.record).collect::<Vec<_>>(), [current]);
    }

    #[test]
    fn a_job_says_what_the_check_found_and_nothing_when_there_is_nothing() {
        let quiet = StaleReport { checked: 40, stale: 0, unmeasured: 0, seconds: 4.9 };
        assert!(notes(&quiet).is_empty());
        let all = StaleReport { checked: 40, stale: 3, unmeasured: 2, seconds: 12.4 };
        expect_test::expect![[r#"
            note: checking the code of 40 best, failed and baseline records took 12 s (compiled anew where the artifact cache held no object)
            note: 3 of the 40 best, failed and baseline records checked measured other code than this build makes (or did not record their code): they are measured again first, their earlier measurements kept
            note: 2 record(s) that no runner measured (status unmeasured) are measured again first (once more at most)"#]]
        .assert_eq(&notes(&all).join("\n"));
    }

    #[test]
    fn a_record_is_stale_when_its_candidate_builds_other_code_or_its_code_is_not_known() {
        let now: Result<String, BuildError> = Ok("abc".into());
        let fails: Result<String, BuildError> = Err(BuildError::Other("no".into()));
        assert!(!is_stale(Some("abc"), "ok", &now));
        assert!(is_stale(Some("old"), "ok", &now));
        assert!(is_stale(Some("abc"), "ok", &fails), "built then, not now");
        assert!(is_stale(None, "wrong_result", &now), "written before records kept their code");
        assert!(is_stale(None, "build_error", &now), "failed to build then, builds now");
        assert!(!is_stale(None, "build_error", &fails), "failed to build then and now");
        assert!(is_stale(None, "ok", &fails));
    }
}
