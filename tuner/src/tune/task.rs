//! A tuning task: one workload on one target, its design space, and what the job knows of its candidates.

use scaletune_codegen::target::Target;
use scaletune_space::design::{DesignSpace, Sample};
use scaletune_space::trace::Trace;
use scaletune_space::workload::Workload;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

/// How many of the best measured samples a task keeps as parents.
pub const ELITES: usize = 32;

/// A measured sample and its objective (lower is better).
#[derive(Clone, Debug)]
pub struct Scored {
    /// Objective value.
    pub objective: f64,
    /// The sample.
    pub sample: Sample,
    /// Its record in the database.
    pub record: i64,
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
    pub measured: HashSet<String>,
    /// The best measured samples, best first (at most [`ELITES`]).
    pub elites: Vec<Scored>,
    /// Trials this job ran for the task (failures included).
    pub trials: usize,
    /// Trials this job ran per status name.
    pub statuses: BTreeMap<String, usize>,
    /// (job trial index, best objective so far) after each of this task's trials.
    pub curve: Vec<(usize, f64)>,
    /// The unscheduled nest's objective, when measured (the speed-up baseline).
    pub baseline: Option<f64>,
    /// Samples that could not be drawn (an empty or unusable design space).
    pub draw_failures: usize,
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
            measured: HashSet::new(),
            elites: Vec::new(),
            trials: 0,
            statuses: BTreeMap::new(),
            curve: Vec::new(),
            baseline: None,
            draw_failures: 0,
        }
    }

    /// The best objective known (from this job or the database).
    pub fn best(&self) -> Option<f64> {
        self.elites.first().map(|s| s.objective)
    }

    /// The best sample known.
    pub fn best_scored(&self) -> Option<&Scored> {
        self.elites.first()
    }

    /// True if the trace was measured already.
    pub fn is_measured(&self, trace: &Trace) -> bool {
        self.measured.contains(&trace.to_string())
    }

    /// Records a measured sample (an objective only for `ok` candidates).
    pub fn observe(&mut self, sample: &Sample, objective: Option<f64>, record: i64) {
        self.measured.insert(sample.trace.to_string());
        if let Some(objective) = objective {
            let pos = self.elites.partition_point(|s| s.objective <= objective);
            if pos < ELITES {
                self.elites.insert(pos, Scored { objective, sample: sample.clone(), record });
                self.elites.truncate(ELITES);
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
        Some(Sample { space_trace: k, trace: trace.clone(), nest, rejected: 0 })
    }
}
