//! The task scheduler: which task of a multi-workload job gets the next batch of trials.
//!
//! Round-robin until every task has a measured candidate (warm-up), then
//! the task whose next trials should cut the job's end-to-end objective
//! most: the sum over tasks of weight times best objective (a suite's
//! weights count how often the model runs each kernel, so that sum is the
//! time of one pass of the model). A task's score is its share of that sum
//! times its best's recent rate of improvement, i.e. the share of the
//! whole the task saved per trial lately: a kernel that takes 40 % of the
//! layer's time and improves 1 % per trial beats a layer norm at 0.3 %
//! improving 10 % per trial. A task that has not improved lately still gets
//! trials while it has had fewer than its share of the whole (so the
//! largest kernels are never left at their warm-up); a task far below 1 %
//! of the whole may get no trials past its warm-up, which is what the
//! whole's time asks for. Tasks whose design space is exhausted get no more. Every task of a job
//! has the same objective kind, so the weighted sum has one unit.

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

/// Each of `live`'s share of the job's end-to-end objective: weight times
/// the objective of what would ship ([`Task::shipped`]: the best candidate,
/// or the unscheduled nest where no candidate beat it), over the sum of
/// them; a task with neither has none. Where no task has either, the
/// shares of the weights.
pub fn objective_shares(live: &[&Task]) -> Vec<f64> {
    let weighted: Vec<f64> =
        live.iter().map(|t| t.shipped().filter(|b| b.is_finite() && *b > 0.0).map_or(0.0, |b| t.weight * b)).collect();
    let total: f64 = weighted.iter().sum();
    if total > 0.0 && total.is_finite() {
        return weighted.iter().map(|w| w / total).collect();
    }
    let weights: f64 = live.iter().map(|t| t.weight).sum::<f64>().max(f64::MIN_POSITIVE);
    live.iter().map(|t| t.weight / weights).collect()
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
    let shares = objective_shares(&live);
    let score = |(t, share): (&Task, f64)| {
        // Fewer trials than its share of the objective earns a bonus, so a flat task still progresses.
        let had = t.trials as f64 / total as f64;
        let gain = if share > 0.0 { share * improvement_rate(t) } else { 0.0 };
        gain + 0.05 * (share - had).max(0.0)
    };
    live.iter()
        .zip(shares)
        .map(|(t, share)| (t.idx, score((t, share))))
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
        .map(|(idx, _)| idx)
}

/// The size of the next batch of task `ti`: `batch`, or fewer when the
/// trials left (`remaining`) would not give every task still warming up
/// (no measured candidate, not exhausted) a batch of its own: then an equal
/// share of them, at least one. So a suite of eight kernels given 48
/// trials warms up all eight, six trials each, where batches of eight
/// would leave the last two with none.
pub fn batch_size(tasks: &[Task], exhausted: &[bool], ti: usize, batch: usize, remaining: usize) -> usize {
    let n = batch.min(remaining).max(1);
    if tasks[ti].best().is_some() {
        return n;
    }
    let warming = tasks.iter().filter(|t| !exhausted[t.idx] && t.best().is_none()).count().max(1);
    n.min(remaining / warming).max(1)
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
        let space = DesignSpace::from_traces(initial_nest(&w, &t), Vec::new());
        let mut task = Task::new(idx, Arc::new(w), Arc::new(t), weight, Vec::new(), space);
        task.curve = curve.iter().enumerate().map(|(i, &b)| (i, b)).collect();
        task.trials = curve.len();
        task
    }

    /// Gives the task a measured candidate (elites are what "measured" means).
    fn measured(t: &mut Task) {
        measured_at(t, 1.0);
    }

    /// Gives the task a measured candidate of objective `objective`.
    fn measured_at(t: &mut Task, objective: f64) {
        let sample = scaletune_space::design::Sample::new(0, Default::default(), t.space.nest.clone(), 0);
        t.observe(&sample, Some(objective), 1);
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
    fn a_small_budget_is_shared_so_every_task_warms_up() {
        let mut tasks: Vec<Task> = (0..8).map(|i| task(i, 1.0, &[])).collect();
        let live = [false; 8];
        assert_eq!(batch_size(&tasks, &live, 0, 8, 48), 6, "48 trials over 8 tasks warming up");
        assert_eq!(batch_size(&tasks, &live, 0, 8, 200), 8, "a budget that covers them keeps the batch");
        assert_eq!(batch_size(&tasks, &live, 0, 8, 5), 1, "fewer trials than tasks: one each while they last");
        assert_eq!(batch_size(&tasks, &live, 0, 8, 0), 1);
        let mut exhausted = [false; 8];
        exhausted[4..].iter_mut().for_each(|e| *e = true);
        assert_eq!(batch_size(&tasks, &exhausted, 0, 8, 24), 6, "exhausted tasks need no share");
        // Warmed-up tasks neither get a share nor have their batch cut.
        tasks[..4].iter_mut().for_each(measured);
        assert_eq!(batch_size(&tasks, &live, 5, 8, 24), 6);
        assert_eq!(batch_size(&tasks, &live, 0, 8, 24), 8);
        assert_eq!(batch_size(&tasks, &live, 0, 8, 3), 3, "never past the budget");
    }

    /// Rates count by the share of the end-to-end objective that improves:
    /// a kernel improving slowly beats a tiny one improving fast, and a
    /// large kernel left at its warm-up gets trials although it is flat.
    #[test]
    fn trials_go_where_the_weighted_objective_falls_fastest() {
        let mut big = task(0, 1.0, &[4.4, 4.3, 4.2, 4.0]);
        let mut tiny = task(1, 2.0, &[0.08, 0.06, 0.05, 0.04]);
        measured_at(&mut big, 4.0);
        measured_at(&mut tiny, 0.04);
        assert!(improvement_rate(&tiny) > 2.0 * improvement_rate(&big));
        assert_eq!(pick(&[big, tiny], &[false, false]), Some(0));
        // Flat, but 60 % of the whole after 8 of 200 trials.
        let mut flat = task(0, 1.0, &[3.0; 8]);
        let mut rest = task(1, 1.0, &[2.2, 2.1, 2.0, 2.0]);
        rest.trials = 192;
        measured_at(&mut flat, 3.0);
        measured_at(&mut rest, 2.0);
        assert_eq!(pick(&[flat, rest], &[false, false]), Some(0));
        let live_shares = |ts: &[Task]| objective_shares(&ts.iter().collect::<Vec<_>>());
        assert_eq!(live_shares(&[task(0, 1.0, &[]), task(1, 3.0, &[])]), vec![0.25, 0.75], "weights alone");
        let pair = |baseline: Option<f64>| {
            let (mut a, mut b) = (task(0, 1.0, &[3.0]), task(1, 2.0, &[1.0]));
            measured_at(&mut a, 3.0);
            measured_at(&mut b, 1.0);
            b.baseline = baseline;
            live_shares(&[a, b])
        };
        assert_eq!(pair(None), vec![0.6, 0.4]);
        assert_eq!(pair(Some(2.0)), vec![0.6, 0.4], "a slower unscheduled nest does not count");
        // What ships: the unscheduled nest where it beats the best candidate.
        assert_eq!(pair(Some(0.5)), vec![0.75, 0.25]);
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
