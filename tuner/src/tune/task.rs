//! A tuning task: one workload on one target, its design space, and what the job knows of its candidates.

use crate::cost_model::{FeatureCache, Lowered};
use crate::search::Texts;
use scaletune_codegen::target::Target;
use scaletune_space::design::{DesignSpace, Sample};
use scaletune_space::trace::Trace;
use scaletune_space::workload::Workload;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// How many of the best measured samples a task keeps as parents.
pub const ELITES: usize = 32;

/// How many of the best measured samples of each lineage (design-space
/// trace and vector kind, [`lineage`]) are parents besides the elites (see
/// [`Task::parents`]).
pub const FAMILY_PARENTS: usize = 2;

/// The share by which a task's best must improve for the search to count
/// it as progress ([`Task::stalled_trials`]). A best that creeps by
/// hundredths of a percent, one unroll factor or row tile after another
/// (as under QEMU, where every figure is exact), is stalled: on matmul
/// 127x255x63 (seed 4) such steps of 0.03 % kept the local search around
/// a length-agnostic kernel (136.7 k cycles) from trial 17 to 75 before
/// it looked at the fixed-length kernel of peeled tails (116.5 k). Under
/// timing noise a step that small is no evidence either.
pub const MIN_PROGRESS: f64 = 0.01;

/// A measured sample and its objective (lower is better).
#[derive(Clone, Debug)]
pub struct Scored {
    /// Objective value.
    pub objective: f64,
    /// The sample.
    pub sample: Sample,
    /// Its record in the database.
    pub record: i64,
    /// How often it was measured (the first run and every re-measurement).
    pub runs: usize,
}

/// How measured candidates rank (the elites, each design-space trace's
/// best, a resumed job's answers): by objective, equal objectives
/// (frequent with emulated cycles) by trace text, so a ranking does not
/// depend on the order in which measurements arrived. `texts` gives the two
/// trace texts, asked only for a tie.
pub fn rank_order(a: f64, b: f64, texts: impl FnOnce() -> (String, String)) -> std::cmp::Ordering {
    a.total_cmp(&b).then_with(|| {
        let (x, y) = texts();
        x.cmp(&y)
    })
}

impl Scored {
    /// [`rank_order`] of two scored samples.
    pub fn rank(a: &Scored, b: &Scored) -> std::cmp::Ordering {
        rank_order(a.objective, b.objective, || (a.sample.text().to_string(), b.sample.text().to_string()))
    }
}

/// One workload on one target.
#[derive(Debug)]
pub struct Task {
    /// Position in the job's task list.
    pub idx: usize,
    /// The workload (concrete shapes).
    pub workload: Arc<Workload>,
    /// The target candidates are built for.
    pub target: Arc<Target>,
    /// Share of the trials the scheduler aims to give this task.
    pub weight: f64,
    /// Vector lengths every candidate is measured at (empty: the target's defaults).
    pub vls: Vec<u32>,
    /// The design space.
    pub space: DesignSpace,
    /// Trace texts measured already (by any job): never proposed again.
    pub measured: Texts,
    /// Digests of the code of the measured candidates (by any job,
    /// failures included; [`crate::cost_model::Lowered::code`]): a
    /// candidate with one of them would build code measured already, and
    /// the evolutionary search does not propose it.
    pub codes: rustc_hash::FxHashSet<u64>,
    /// The best measured samples, best first (at most [`ELITES`]).
    pub elites: Vec<Scored>,
    /// Per lineage ([`lineage`]), its best measured samples, best first
    /// (at most [`FAMILY_PARENTS`]).
    pub family_best: BTreeMap<(usize, usize), Vec<Scored>>,
    /// Per design-space trace, how many of its samples were measured (by
    /// this job or found in the database; failures included).
    pub family_tries: BTreeMap<usize, usize>,
    /// Trials this job ran for the task (failures included).
    pub trials: usize,
    /// Trials this job ran per status name: the status of each trial's
    /// record now (a trial that passed and was disqualified by a later run
    /// counts under that run's status, as the database has it).
    pub statuses: BTreeMap<String, usize>,
    /// This job's trial records counted `ok` in `statuses`.
    ok_records: HashSet<i64>,
    /// (job trial index, best objective so far) after each of this task's trials.
    pub curve: Vec<(usize, f64)>,
    /// The best candidate's record after each of this task's trials (`None`
    /// until one passed): what the job would answer if stopped there.
    pub incumbents: Vec<Option<i64>>,
    /// The unscheduled nest's objective, when measured (the speed-up baseline).
    pub baseline: Option<f64>,
    /// The unscheduled nest's record, when measured: the end of a timed job
    /// measures it again with the best candidates when it ranks among them
    /// ([`super::confirm`]), so a lucky first run of it does not stand
    /// against their medians.
    pub baseline_record: Option<i64>,
    /// Samples that could not be drawn (an empty or unusable design space).
    pub draw_failures: usize,
    /// How often this job's trials were timed while other tasks held their CPU.
    pub contention: Contention,
    /// The samples the search lowered for this task, kept from one
    /// proposal to the next ([`FeatureCache`]; see [`Task::lowered`]).
    pub lowered_cache: Mutex<FeatureCache>,
    /// Decided traces of the best schedules of other shapes of this
    /// workload on this target (the database's other workloads of the same
    /// name, this job's other tasks), the best of each shape first: the
    /// evolutionary search's first proposal adopts them
    /// ([`scaletune_space::design::DesignSpace::adopt`]), so a new shape
    /// starts from what its siblings found.
    pub donors: Vec<Arc<Trace>>,
    /// Samples of records whose candidate builds other code now than the
    /// record measured, or that no runner measured ([`super::stale`]), in
    /// the order to measure them: the loop measures them before anything new.
    pub stale: std::collections::VecDeque<Sample>,
    /// The records of [`Task::stale`] by trace text, until measured again:
    /// each new measurement takes its record's place
    /// (`scaletune_database::Database::replace_record`).
    pub stale_records: std::collections::HashMap<String, i64>,
}

/// Trials timed while other tasks held their CPU ([`scaletune_measure::Timing::waited_s`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Contention {
    /// Trials with a repeat the driver timed again.
    pub retimed_trials: usize,
    /// Repeats timed again, over all trials.
    pub retimed_repeats: u64,
    /// Trials that kept a disturbed repeat (the driver ran out of retries):
    /// their times may be too slow.
    pub disturbed_trials: usize,
}

impl Contention {
    /// Counts one trial's runs (one per vector length).
    pub fn count(&mut self, runs: &[scaletune_measure::VlMeasurement]) {
        let timings: Vec<&scaletune_measure::Timing> = runs.iter().filter_map(|r| r.timing.as_ref()).collect();
        let retimed: u64 = timings.iter().map(|t| u64::from(t.discarded)).sum();
        self.retimed_repeats += retimed;
        self.retimed_trials += usize::from(retimed > 0);
        self.disturbed_trials += usize::from(timings.iter().any(|t| t.disturbed()));
    }
}

impl Task {
    /// A task with no measurements yet.
    pub fn new(
        idx: usize,
        workload: Arc<Workload>,
        target: Arc<Target>,
        weight: f64,
        vls: Vec<u32>,
        space: DesignSpace,
    ) -> Task {
        Task {
            idx,
            workload,
            target,
            weight,
            vls,
            space,
            measured: Texts::default(),
            codes: rustc_hash::FxHashSet::default(),
            elites: Vec::new(),
            family_best: BTreeMap::new(),
            family_tries: BTreeMap::new(),
            trials: 0,
            statuses: BTreeMap::new(),
            ok_records: HashSet::new(),
            curve: Vec::new(),
            incumbents: Vec::new(),
            baseline: None,
            baseline_record: None,
            draw_failures: 0,
            contention: Contention::default(),
            lowered_cache: Mutex::new(FeatureCache::default()),
            donors: Vec::new(),
            stale: std::collections::VecDeque::new(),
            stale_records: std::collections::HashMap::new(),
        }
    }

    /// The task's cache of lowered samples, held for one proposal or one
    /// look-up (a poisoned lock is taken over: the cache holds no
    /// half-made entries, every insert is of a finished lowering).
    pub fn lowered(&self) -> MutexGuard<'_, FeatureCache> {
        self.lowered_cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `sample` lowered ([`crate::cost_model::sample_lowered`]), from the
    /// task's cache when the search lowered it already.
    pub fn lowered_one(&self, sample: &Sample) -> Option<Lowered> {
        self.lowered().lowered(self, std::slice::from_ref(sample)).pop().flatten()
    }

    /// The best objective known (from this job or the database).
    pub fn best(&self) -> Option<f64> {
        self.elites.first().map(|s| s.objective)
    }

    /// The objective of what `scaletune build` would ship for this task:
    /// the best candidate's, or the unscheduled nest's where no candidate
    /// beat it (or none was measured).
    pub fn shipped(&self) -> Option<f64> {
        match (self.best(), self.baseline) {
            (Some(b), Some(base)) => Some(b.min(base)),
            (b, base) => b.or(base),
        }
    }

    /// The best sample known.
    pub fn best_scored(&self) -> Option<&Scored> {
        self.elites.first()
    }

    /// The parents of mutation: the elites, best first, then the best
    /// [`FAMILY_PARENTS`] samples of every lineage (design-space trace and
    /// vector kind, [`lineage`]) that are not elites (best first). The
    /// elites alone can all come from one design-space trace, or one vector
    /// kind, that looked best early; mutating the others' best too keeps
    /// the search from settling there while the cost model has seen little
    /// of the rest.
    pub fn parents(&self) -> Vec<Sample> {
        let mut out: Vec<Sample> = self.elites.iter().map(|s| s.sample.clone()).collect();
        let mut others: Vec<&Scored> =
            self.family_best.values().flatten().filter(|f| !self.elites.iter().any(|e| e.record == f.record)).collect();
        others.sort_by(|a, b| a.objective.total_cmp(&b.objective).then(a.record.cmp(&b.record)));
        out.extend(others.into_iter().map(|s| s.sample.clone()));
        out
    }

    /// This job's trials for the task since the last one after which the
    /// best was better, by more than [`MIN_PROGRESS`], than after the
    /// improvement before (0 before any trial, and right after an
    /// improvement; counted from the first trial if none improved). A re-measurement that makes the
    /// best's figure worse is no improvement, and the next ones are
    /// measured from that worse figure.
    pub fn stalled_trials(&self) -> usize {
        let Some(&(_, first)) = self.curve.first() else { return 0 };
        let (mut anchor, mut improved) = (first, 0);
        for (k, &(_, best)) in self.curve.iter().enumerate().skip(1) {
            if best < anchor * (1.0 - MIN_PROGRESS) {
                (anchor, improved) = (best, k);
            } else if best > anchor {
                anchor = best;
            }
        }
        self.curve.len() - 1 - improved
    }

    /// The best of every lineage other than the best candidate's, best
    /// first (ties by record).
    pub fn rivals(&self) -> Vec<&Scored> {
        let leader = self.elites.first().map(|s| lineage(&s.sample));
        let mut out: Vec<&Scored> =
            self.family_best.iter().filter(|(k, _)| Some(**k) != leader).filter_map(|(_, v)| v.first()).collect();
        out.sort_by(|a, b| a.objective.total_cmp(&b.objective).then(a.record.cmp(&b.record)));
        out
    }

    /// Drops a record from the elites and the parents (a candidate that
    /// failed when measured again).
    pub fn forget(&mut self, record: i64) {
        self.elites.retain(|s| s.record != record);
        for family in self.family_best.values_mut() {
            family.retain(|s| s.record != record);
        }
    }

    /// Counts a trial of this job under `status`, its record's status.
    pub fn count_trial(&mut self, record: i64, status: &str) {
        *self.statuses.entry(status.to_string()).or_default() += 1;
        if status == "ok" {
            self.ok_records.insert(record);
        }
    }

    /// A later run disqualified `record` with `status`: if it is a trial of
    /// this job counted `ok`, it now counts under `status` (the first
    /// disqualifying status, as in the database).
    pub fn disqualified(&mut self, record: i64, status: &str) {
        if !self.ok_records.remove(&record) {
            return;
        }
        if let Some(ok) = self.statuses.get_mut("ok") {
            *ok -= 1;
            if *ok == 0 {
                self.statuses.remove("ok");
            }
        }
        *self.statuses.entry(status.to_string()).or_default() += 1;
    }

    /// A record measured again: `runs` runs in all, `objective` their
    /// median. The elites and parents are re-ranked.
    pub fn remeasured(&mut self, record: i64, objective: f64, runs: usize) {
        let lists = std::iter::once(&mut self.elites).chain(self.family_best.values_mut());
        for list in lists {
            for s in list.iter_mut().filter(|s| s.record == record) {
                s.objective = objective;
                s.runs = runs;
            }
            list.sort_by(Scored::rank);
        }
    }

    /// The design-space traces, those with the fewest measured samples
    /// first; ties in the order of `tiebreak` (one key per trace).
    pub fn least_tried(&self, tiebreak: &[u64]) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.space.traces.len()).collect();
        order
            .sort_by_key(|&k| (self.family_tries.get(&k).copied().unwrap_or(0), tiebreak.get(k).copied().unwrap_or(0)));
        order
    }

    /// Up to `n` samples of [`Task::stale`], in order, to measure again.
    pub fn take_stale(&mut self, n: usize) -> Vec<Sample> {
        let n = n.min(self.stale.len());
        self.stale.drain(..n).collect()
    }

    /// True if the trace was measured already.
    pub fn is_measured(&self, trace: &Trace) -> bool {
        self.measured.contains(&trace.to_string())
    }

    /// Records a measured sample (an objective only for `ok` candidates).
    /// Candidates of equal objectives (frequent with emulated cycles) rank
    /// by trace text, so the elites do not depend on the order in which
    /// the farm returned the measurements.
    pub fn observe(&mut self, sample: &Sample, objective: Option<f64>, record: i64) {
        let text = sample.text().to_string();
        if sample.space_trace < self.space.traces.len() {
            *self.family_tries.entry(sample.space_trace).or_default() += 1;
        }
        if let Some(objective) = objective {
            let ahead =
                |s: &Scored| rank_order(s.objective, objective, || (s.sample.text().to_string(), text.clone())).is_le();
            let scored = Scored { objective, sample: sample.clone(), record, runs: 1 };
            let family = self.family_best.entry(lineage(sample)).or_default();
            let pos = family.partition_point(ahead);
            if pos < FAMILY_PARENTS {
                family.insert(pos, scored.clone());
                family.truncate(FAMILY_PARENTS);
            }
            let pos = self.elites.partition_point(ahead);
            if pos < ELITES {
                self.elites.insert(pos, scored);
                self.elites.truncate(ELITES);
            }
        }
        self.measured.insert(text);
    }

    /// Adds `traces` to [`Task::donors`], after those already there,
    /// leaving out any that is one already.
    pub fn add_donors(&mut self, traces: Vec<Arc<Trace>>) {
        for t in traces {
            if !self.donors.iter().any(|d| **d == *t) {
                self.donors.push(t);
            }
        }
    }

    /// The sample a measured trace of this task's space came from:
    /// `space_trace` is the design-space trace's text. `None` if the space no
    /// longer has that trace or the trace no longer applies.
    pub fn restore(&self, space_trace: &str, trace: &Trace) -> Option<Sample> {
        let k = self.space.traces.iter().position(|t| t.trace.to_string() == space_trace)?;
        let mut nest = self.space.nest.clone();
        trace.apply(&mut nest).ok()?;
        Some(Sample::new(k, trace.clone(), nest, 0))
    }
}

/// How many of another shape's best schedules a task adopts from
/// ([`Task::donors`]).
pub const DONORS_PER_SHAPE: usize = 2;

/// The best [`DONORS_PER_SHAPE`] schedules of each task of `tasks` other
/// than task `idx` whose workload has its workload's name, the best of
/// each first (donors for task `idx`, [`Task::donors`]).
pub fn sibling_donors(tasks: &[Task], idx: usize) -> Vec<Arc<Trace>> {
    let name = &tasks[idx].workload.name;
    let siblings: Vec<&Task> = tasks.iter().filter(|o| o.idx != idx && o.workload.name == *name).collect();
    (0..DONORS_PER_SHAPE)
        .flat_map(|rank| siblings.iter().filter_map(move |o| o.elites.get(rank)))
        .map(|best| Arc::clone(&best.sample.trace))
        .collect()
}

/// A sample's lineage: its design-space trace and the vector kind its
/// schedule chose (the kind's index in its nest's kinds, `usize::MAX` if
/// none). A schedule of one kind is rarely one mutation away from the best
/// of another: on neoverse-v1, an `sve` micro-kernel wants another column
/// tail than a NEON one of the same tiles (a scalar tail of 31 columns at
/// VL 512 costs more than the vectors save).
pub fn lineage(sample: &Sample) -> (usize, usize) {
    let kind = sample.nest.kinds.iter().position(|(_, caps)| *caps == sample.nest.caps).unwrap_or(usize::MAX);
    (sample.space_trace, kind)
}

/// A task of `reference` on `host` with its default design space, for tests.
#[cfg(test)]
pub(crate) fn test_task(reference: &str) -> Task {
    use scaletune_codegen::pipeline::initial_nest;
    let w = Arc::new(scaletune_space::workload::load(reference).expect("workload"));
    let t = Arc::new(Target::load("host").expect("target"));
    let space = DesignSpace::generate(&initial_nest(&w, &t));
    Task::new(0, w, t, 1.0, Vec::new(), space)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> Task {
        test_task("matmul:M=8,N=8,K=8")
    }

    /// A sample of design-space trace `family` (the trace itself does not matter here).
    fn sample(task: &Task, family: usize) -> Sample {
        Sample::new(family, Trace::default(), task.space.nest.clone(), 0)
    }

    fn families(parents: &[Sample]) -> Vec<usize> {
        parents.iter().map(|s| s.space_trace).collect()
    }

    #[test]
    fn the_parents_are_the_elites_then_the_best_of_each_other_design_space_trace() {
        let mut t = task();
        for i in 0..ELITES {
            let s = sample(&t, 0);
            t.observe(&s, Some(1.0 + i as f64), i as i64);
        }
        for (k, objective) in [100.0, 102.0, 101.0].into_iter().enumerate() {
            let s = sample(&t, 1);
            t.observe(&s, Some(objective), 100 + k as i64);
        }
        let p = t.parents();
        assert_eq!(p.len(), ELITES + FAMILY_PARENTS);
        assert_eq!(families(&p[ELITES..]), [1, 1]);
        assert_eq!(t.family_best[&lineage(&sample(&t, 1))].iter().map(|s| s.record).collect::<Vec<_>>(), [100, 102]);
        // A fast sample of the second trace becomes an elite, and is not a parent twice.
        let s = sample(&t, 1);
        t.observe(&s, Some(0.5), 200);
        let p = t.parents();
        assert_eq!(p.len(), ELITES + 1);
        assert_eq!((p[0].space_trace, p[ELITES].space_trace), (1, 1));
        // A candidate that failed when measured again is no parent at all.
        t.forget(200);
        assert_eq!(t.elites.len(), ELITES - 1);
        assert_eq!(t.family_best[&lineage(&sample(&t, 1))].iter().map(|s| s.record).collect::<Vec<_>>(), [100]);
        assert_eq!(families(&t.parents()[ELITES - 1..]), [1]);
    }

    #[test]
    fn a_task_counts_the_trials_since_its_best_improved_and_ranks_the_other_lineages() {
        let mut t = task();
        assert_eq!(t.stalled_trials(), 0, "no trial yet");
        // Each step: the bests after the next trials, and the trials since
        // the last progress then.
        let steps: [(&[f64], usize, &str); 7] = [
            (&[9.0, 5.0, 5.0, 5.0], 2, "two trials without a better best"),
            (&[4.0], 0, "an improvement resets it"),
            (&[4.0, 4.2, 4.2], 3, "the best re-measured slower is no improvement"),
            (&[4.18], 4, "0.5 % better than the figure before is no progress"),
            (&[4.1], 0, "2.4 % better than the re-measured figure is"),
            (&[4.08, 4.07, 4.06], 3, "steps of a quarter of a percent are no progress"),
            (&[4.05], 0, "until together they come to 1.2 % below the last progress"),
        ];
        for (bests, stalled, why) in steps {
            for &best in bests {
                t.curve.push((t.curve.len() + 1, best));
            }
            assert_eq!(t.stalled_trials(), stalled, "{why}: {:?}", t.curve);
        }
        // Lineage 0 leads; 2 (best 3.0) ranks before 1 (best 7.0).
        for (record, (family, objective)) in [(0, 1.0), (1, 8.0), (1, 7.0), (2, 3.0), (0, 2.0)].into_iter().enumerate()
        {
            t.observe(&sample(&t, family), Some(objective), record as i64);
        }
        let rivals: Vec<(usize, f64)> = t.rivals().iter().map(|s| (s.sample.space_trace, s.objective)).collect();
        assert_eq!(rivals, [(2, 3.0), (1, 7.0)], "each other lineage's best, the leader's left out");
    }

    #[test]
    fn the_least_tried_design_space_traces_come_first_and_failures_count_as_tries() {
        let mut t = task();
        let n = t.space.traces.len();
        assert!(n >= 3, "{n} design-space traces");
        for r in 0..3 {
            let s = sample(&t, 0);
            t.observe(&s, Some(1.0), r);
        }
        let s = sample(&t, 1);
        t.observe(&s, None, 10);
        // The unscheduled baseline belongs to no design-space trace.
        let s = sample(&t, usize::MAX);
        t.observe(&s, Some(5.0), 11);
        assert_eq!(t.family_tries.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>(), [(0, 3), (1, 1)]);
        // Ties (the untried traces) go by the keys: here the later trace first.
        let keys: Vec<u64> = (0..n as u64).rev().collect();
        let order = t.least_tried(&keys);
        let untried: Vec<usize> = (2..n).rev().collect();
        assert_eq!(order[..n - 2], untried[..]);
        assert_eq!(order[n - 2..], [1, 0]);
    }

    #[test]
    fn a_re_measured_candidate_tying_another_ranks_by_trace_text_as_when_observed() {
        let mut rng = scaletune_space::sample::task_rng(4, 0);
        let mut t = task();
        let mut drawn: Vec<Sample> = (0..3).map(|_| t.space.sample(&mut rng).expect("draws")).collect();
        // Record 0 has the largest trace text, record 2 the smallest.
        drawn.sort_by_key(|s| std::cmp::Reverse(s.trace.to_string()));
        let texts: Vec<String> = drawn.iter().map(|s| s.trace.to_string()).collect();
        assert!(texts[2] < texts[0]);
        for (r, (s, o)) in drawn.iter().zip([1.0, 2.0, 3.0]).enumerate() {
            t.observe(s, Some(o), r as i64);
        }
        // Record 2 re-measured at record 0's objective: the tie goes by
        // trace text, which puts it ahead of record 0.
        t.remeasured(2, 1.0, 2);
        let order: Vec<i64> = t.elites.iter().map(|s| s.record).collect();
        assert_eq!(order, [2, 0, 1]);
        // The order a task gets when it observes those objectives directly, in either order.
        for sequence in [[0, 2, 1], [2, 0, 1]] {
            let mut direct = task();
            for r in sequence {
                direct.observe(&drawn[r], Some(if r == 1 { 2.0 } else { 1.0 }), r as i64);
            }
            assert_eq!(direct.elites.iter().map(|s| s.record).collect::<Vec<_>>(), order);
        }
    }

    #[test]
    fn a_trial_disqualified_later_counts_under_its_failure_once() {
        let mut t = test_task("matmul:M=16,N=16,K=8");
        t.count_trial(1, "ok");
        t.count_trial(2, "ok");
        t.count_trial(3, "build_error");
        let counts = |t: &Task| t.statuses.iter().map(|(s, n)| format!("{s} {n}")).collect::<Vec<_>>();
        assert_eq!(counts(&t), ["build_error 1", "ok 2"]);
        t.disqualified(2, "wrong_result");
        assert_eq!(counts(&t), ["build_error 1", "ok 1", "wrong_result 1"]);
        // A second failing run, a record that was not ok, and one of another job change nothing.
        t.disqualified(2, "timeout");
        t.disqualified(3, "timeout");
        t.disqualified(99, "timeout");
        assert_eq!(counts(&t), ["build_error 1", "ok 1", "wrong_result 1"]);
        t.disqualified(1, "run_error");
        assert_eq!(counts(&t), ["build_error 1", "run_error 1", "wrong_result 1"]);
    }

    #[test]
    fn equal_objectives_rank_the_same_whatever_order_they_arrive_in() {
        let t = test_task("matmul:M=16,N=16,K=8");
        let mut rng = scaletune_space::sample::task_rng(4, 0);
        let samples: Vec<Sample> = (0..8).map(|_| t.space.sample(&mut rng).expect("samples")).collect();
        let ranked = |order: &[usize]| {
            let mut t = test_task("matmul:M=16,N=16,K=8");
            for &i in order {
                t.observe(&samples[i], Some(if i % 3 == 0 { 1.0 } else { 2.0 }), i as i64);
            }
            let families: Vec<Vec<i64>> =
                t.family_best.values().map(|f| f.iter().map(|s| s.record).collect()).collect();
            (t.elites.iter().map(|s| s.record).collect::<Vec<_>>(), families)
        };
        let forward = ranked(&[0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(forward, ranked(&[7, 6, 5, 4, 3, 2, 1, 0]));
        assert_eq!(forward, ranked(&[3, 0, 6, 1, 7, 2, 5, 4]));
        assert_eq!(forward.0.len(), 8);
    }

    /// The parents hold the best of every vector kind of a design-space
    /// trace, however many elites another kind of the same trace has.
    #[test]
    fn every_vector_kind_of_a_design_space_trace_has_its_best_among_the_parents() {
        use scaletune_codegen::pipeline::initial_nest;
        let w = Arc::new(scaletune_space::workload::load("matmul:M=32,N=40,K=8").expect("workload"));
        let target = Arc::new(Target::load("neoverse-v1").expect("target"));
        let space = DesignSpace::generate(&initial_nest(&w, &target));
        let mut t = Task::new(0, w, target, 1.0, vec![128, 256], space);
        let mut rng = scaletune_space::sample::task_rng(2, 0);
        let first = t.space.sample_trace(0, &mut rng).expect("draws");
        let mut record = 0;
        while t.elites.len() < ELITES {
            let s = t.space.sample_trace(0, &mut rng).expect("draws");
            if lineage(&s) == lineage(&first) {
                t.observe(&s, Some(1.0 + record as f64), record);
                record += 1;
            }
        }
        let other = std::iter::repeat_with(|| t.space.sample_trace(0, &mut rng).expect("draws"))
            .take(200)
            .find(|s| lineage(s).1 != lineage(&first).1)
            .expect("another vector kind in 200 draws");
        t.observe(&other, Some(1000.0), 1000);
        assert_eq!(t.elites.len(), ELITES, "not an elite: slower than all of them");
        let parents = t.parents();
        assert_eq!(parents.len(), ELITES + 1);
        assert_eq!(parents[ELITES].text(), other.text(), "the best of the other kind");
    }
}
