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

use super::task::Task;
use super::Setup;
use scaletune_measure::builder::BuildError;
use scaletune_measure::{Candidate, LlvmBuilder};
use scaletune_space::design::Sample;
use scaletune_space::trace::{parse_trace, Trace};
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
    /// Seconds the check took (a compile per record whose object the
    /// artifact cache does not hold).
    pub seconds: f64,
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
            let sample = if k.trace.is_empty() {
                None
            } else {
                let Ok(trace) = parse_trace(&k.trace) else { continue };
                let Some(sample) = task.restore(&k.space_trace, &trace) else { continue };
                Some(sample)
            };
            out.push(Check { task: ti, record: k.id, sample, code: k.code.clone(), status: k.status.clone() });
        }
    }
    out
}

/// The candidate of a check: its task's workload and target at the task's vector lengths.
fn candidate(task: &Task, trace: Trace) -> Candidate {
    Candidate::new(0, Arc::clone(&task.workload), Arc::clone(&task.target), trace).with_vl_bits(task.vls.clone())
}

/// Checks the records of `setup`'s tasks against the code `builder` builds
/// now, on `workers` threads, and queues the stale ones in their tasks
/// ([`Task::stale`]), out of the tasks' best and parents; a stale baseline
/// is measured again as the loop measures a missing one.
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
    let mut report = StaleReport { checked: checks.len(), stale: 0, seconds: start.elapsed().as_secs_f64() };
    for (check, result) in checks.into_iter().zip(results) {
        if result.into_inner().unwrap_or_else(|p| p.into_inner()) != Some(true) {
            continue;
        }
        let task = &mut setup.tasks[check.task];
        let text = check.sample.as_ref().map_or_else(String::new, |s| s.text().to_string());
        if task.stale_records.insert(text.clone(), check.record).is_some() {
            continue;
        }
        report.stale += 1;
        task.forget(check.record);
        match check.sample {
            Some(sample) => task.stale.push_back(sample),
            None => {
                task.baseline = None;
                task.measured.remove(&text);
            }
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

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
