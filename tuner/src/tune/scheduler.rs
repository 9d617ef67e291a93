//! The task scheduler: which task of a multi-workload job gets the next batch of trials.
//!
//! Round-robin until every task has a measured candidate (warm-up), then
//! the task whose best objective improved fastest over its recent trials,
//! weighted by the task's weight; a task that has not improved lately still
//! gets trials in proportion to its weight and how few it has had, so none
//! starves. Tasks whose design space is exhausted get no more.

use super::task::Task;

/// Trials over which a task's improvement rate is measured.
pub const WINDOW: usize = 16;

/// Relative improvement of the task's best over its last [`WINDOW`] trials, per trial.
pub fn improvement_rate(task: &Task) -> f64 {
    let Some(&(_, now)) = task.curve.last() else { return f64::INFINITY };
    let back = task.curve.len().saturating_sub(WINDOW + 1);
    let (_, then) = task.curve[back];
    let trials = (task.curve.len() - 1 - back).max(1) as f64;
    if !(then.is_finite() && now.is_finite()) || now <= 0.0 {
        return 0.0;
    }
    ((then - now) / now).max(0.0) / trials
}

/// The index of the task that gets the next batch, or `None` when every task is exhausted.
pub fn pick(tasks: &[Task], exhausted: &[bool]) -> Option<usize> {
    let live: Vec<&Task> = tasks.iter().filter(|t| !exhausted[t.idx]).collect();
    // Warm-up: a task without a measured candidate first (fewest trials first).
    if let Some(t) = live.iter().filter(|t| t.best().is_none()).min_by_key(|t| (t.trials, t.idx)) {
        if t.trials < 2 * WINDOW {
            return Some(t.idx);
        }
    }
    let total: usize = live.iter().map(|t| t.trials).sum::<usize>().max(1);
    let score = |t: &Task| {
        // Share of trials below its weight's share earns a bonus, so a flat task still progresses.
        let weight_sum: f64 = live.iter().map(|t| t.weight).sum::<f64>().max(f64::MIN_POSITIVE);
        let share = t.weight / weight_sum;
        let had = t.trials as f64 / total as f64;
        t.weight * improvement_rate(t) + 0.05 * (share - had).max(0.0)
    };
    live.iter().max_by(|a, b| score(a).total_cmp(&score(b)).then(b.idx.cmp(&a.idx))).map(|t| t.idx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use scaletune_codegen::pipeline::initial_nest;
    use scaletune_codegen::target::Target;
    use scaletune_space::design::DesignSpace;
    use scaletune_space::workload::WorkloadRef;
    use std::sync::Arc;

    fn task(idx: usize, weight: f64, curve: &[f64]) -> Task {
        let w = WorkloadRef::parse("axpy:N=64").expect("ref").load().expect("loads");
        let t = Target::load("neon").expect("target");
        let space = DesignSpace { nest: initial_nest(&w, &t), traces: Vec::new() };
        let mut task = Task::new(idx, Arc::new(w), Arc::new(t), weight, Vec::new(), space);
        task.curve = curve.iter().enumerate().map(|(i, &b)| (i, b)).collect();
        task.trials = curve.len();
        task
    }

    /// Gives the task a measured candidate (elites are what "measured" means).
    fn measured(t: &mut Task) {
        let sample = scaletune_space::design::Sample::new(0, Default::default(), t.space.nest.clone(), 0);
        t.observe(&sample, Some(1.0), 1);
    }

    #[test]
    fn warm_up_goes_round_robin_then_to_the_fastest_improver() {
        let mut tasks = vec![task(0, 1.0, &[]), task(1, 1.0, &[])];
        assert_eq!(pick(&tasks, &[false, false]), Some(0));
        tasks[0].trials = 4;
        assert_eq!(pick(&tasks, &[false, false]), Some(1), "the task with fewer trials warms up next");
        // Improvement rates: task 0 flat, task 1 halving.
        tasks[0] = task(0, 1.0, &[1.0, 1.0, 1.0, 1.0]);
        tasks[1] = task(1, 1.0, &[8.0, 4.0, 2.0, 1.0]);
        assert!(improvement_rate(&tasks[1]) > improvement_rate(&tasks[0]));
        assert_eq!(improvement_rate(&tasks[0]), 0.0);
        tasks.iter_mut().for_each(measured);
        assert_eq!(pick(&tasks, &[false, false]), Some(1));
        assert_eq!(pick(&tasks, &[false, true]), Some(0), "an exhausted task gets nothing");
        assert_eq!(pick(&tasks, &[true, true]), None);
    }

    #[test]
    fn a_flat_task_with_few_trials_still_gets_its_share() {
        let mut flat = task(0, 1.0, &[1.0; 3]);
        let mut busy = task(1, 1.0, &[1.0; 40]);
        measured(&mut flat);
        measured(&mut busy);
        assert_eq!(pick(&[flat, busy], &[false, false]), Some(0));
    }
}
