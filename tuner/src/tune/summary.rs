//! The end-of-job summary: per task the best objective, GFLOPS, speed-up over the unscheduled nest, trials and failures, and the best trace.

use super::objective::ObjectiveKind;
use super::task::Task;
use crate::commands::measure::format_seconds;
use std::fmt::Write;

/// An objective value with its unit (emulated figures say so).
pub fn format_objective(kind: ObjectiveKind, x: f64) -> String {
    match kind {
        ObjectiveKind::Time => format_seconds(x),
        ObjectiveKind::Cycles => format!("{} est. cycles (emulated)", si(x)),
        ObjectiveKind::Instructions => format!("{} instructions (emulated)", si(x)),
    }
}

/// A count with a k/M/G suffix.
pub fn si(x: f64) -> String {
    match x {
        x if x >= 1e9 => format!("{:.2} G", x / 1e9),
        x if x >= 1e6 => format!("{:.2} M", x / 1e6),
        x if x >= 1e3 => format!("{:.1} k", x / 1e3),
        x => format!("{x:.0}"),
    }
}

/// GFLOPS of a task's objective, where it is a time and the workload's FLOPs are known.
pub fn gflops(task: &Task, kind: ObjectiveKind, objective: f64) -> Option<f64> {
    (kind == ObjectiveKind::Time).then_some(())?;
    Some(task.workload.flops()? / objective / 1e9)
}

/// The summary table and each task's best trace. The task and best
/// columns are at least 40 and 28 characters wide, and wider when a task's
/// reference or best objective is longer, so the columns stay aligned.
pub fn summary(tasks: &[Task], kind: ObjectiveKind, tau: Option<f64>) -> String {
    let mut out = String::new();
    let rows: Vec<[String; 6]> = tasks
        .iter()
        .map(|t| {
            // What would ship: the unscheduled nest where no candidate beat it.
            let best = if t.best().is_some() { t.shipped() } else { None };
            let best_s = best.map_or_else(|| "-".to_string(), |b| format_objective(kind, b));
            let gf = best.and_then(|b| gflops(t, kind, b)).map_or_else(|| "-".into(), |g| format!("{g:.2}"));
            let speedup = match (best, t.baseline) {
                (Some(b), Some(base)) => format!("{:.2}x", base / b),
                _ => "-".into(),
            };
            let failures: Vec<String> =
                t.statuses.iter().filter(|(s, _)| s.as_str() != "ok").map(|(s, n)| format!("{s} {n}")).collect();
            let failures = if failures.is_empty() { "none".to_string() } else { failures.join(", ") };
            [t.workload.reference(), best_s, gf, speedup, t.trials.to_string(), failures]
        })
        .collect();
    let width = |col: usize, least: usize| rows.iter().map(|r| r[col].chars().count()).fold(least, usize::max);
    let (wt, wb) = (width(0, 40), width(1, 28));
    let _ =
        writeln!(out, "{:<wt$} {:>wb$} {:>8} {:>9} {:>7}  failures", "task", "best", "GFLOPS", "speed-up", "trials");
    for [task, best, gf, speedup, trials, failures] in &rows {
        let _ = writeln!(out, "{task:<wt$} {best:>wb$} {gf:>8} {speedup:>9} {trials:>7}  {failures}");
    }
    if let Some(line) = end_to_end_line(tasks, kind) {
        let _ = writeln!(out, "{line}");
    }
    for t in tasks {
        if let Some(base) = t.baseline.filter(|&b| t.best().is_none_or(|best| b < best)) {
            let _ = writeln!(
                out,
                "{}: no candidate beat the unscheduled nest ({}); `db best` and `scaletune build` take the unscheduled nest",
                t.workload.reference(),
                format_objective(kind, base)
            );
        }
    }
    for t in tasks {
        let c = t.contention;
        if c.retimed_trials > 0 || c.disturbed_trials > 0 {
            let _ = writeln!(out, "{}", contention_line(&t.workload.reference(), c));
        }
    }
    let _ = match tau {
        Some(tau) => writeln!(out, "cost model: Kendall tau {tau:.2} on held-out candidates"),
        None => writeln!(out, "cost model: too few measured candidates to hold some out"),
    };
    for t in tasks {
        if let Some(s) = t.best_scored() {
            let nest_won = t.baseline.is_some_and(|b| b < s.objective);
            let title = if nest_won { "best candidate (slower than the unscheduled nest)" } else { "best schedule" };
            let _ = writeln!(out, "\n{title} of {} (record {}):\n{}", t.workload.reference(), s.record, s.sample.trace);
        }
    }
    out
}

/// For a job of several tasks: the sum over them of weight times the
/// objective of what `scaletune build` would ship (the best candidate, or
/// the unscheduled nest where no candidate beat it), which the task
/// scheduler minimizes (with a suite's weights, one pass of the model), and
/// the same sum for the unscheduled nests. `None` for one task, or when a
/// task has neither a measured candidate nor a measured unscheduled nest.
fn end_to_end_line(tasks: &[Task], kind: ObjectiveKind) -> Option<String> {
    if tasks.len() < 2 {
        return None;
    }
    let mut shipped = 0.0;
    let mut unscheduled = Some(0.0);
    for t in tasks {
        shipped += t.weight * t.shipped()?;
        unscheduled = unscheduled.zip(t.baseline).map(|(sum, base)| sum + t.weight * base);
    }
    let mut line = format!("all {} tasks, weight x best summed: {}", tasks.len(), format_objective(kind, shipped));
    if let Some(u) = unscheduled.filter(|u| *u > 0.0) {
        let _ = write!(line, " ({:.2}x the unscheduled nests' {})", u / shipped, format_objective(kind, u));
    }
    Some(line)
}

/// What other tasks on the runners' CPUs did to one task's timings.
fn contention_line(task: &str, c: super::task::Contention) -> String {
    let mut line = format!(
        "{task}: other tasks held the CPU during {} repeat{} of {} trial{}, timed again",
        c.retimed_repeats,
        if c.retimed_repeats == 1 { "" } else { "s" },
        c.retimed_trials,
        if c.retimed_trials == 1 { "" } else { "s" },
    );
    if c.disturbed_trials > 0 {
        let _ = write!(
            line,
            "; {} trial{} kept disturbed repeats (out of retries: their times may be too slow; is the machine busy?)",
            c.disturbed_trials,
            if c.disturbed_trials == 1 { "" } else { "s" }
        );
    }
    line
}

/// One line per task whose best candidates were re-measured at the end
/// of the job: how many, how many runs passed, and the best before and after.
pub fn confirmation(tasks: &[Task], kind: ObjectiveKind, confirmed: &[super::confirm::Confirmed]) -> String {
    let mut out = String::new();
    for c in confirmed {
        let Some(t) = tasks.get(c.task) else { continue };
        let fmt = |x: Option<f64>| x.map_or_else(|| "-".to_string(), |x| format_objective(kind, x));
        let _ = writeln!(
            out,
            "re-measured the best {} of {}: {}/{} runs passed; best {} (first measured {}){}",
            c.candidates,
            t.workload.reference(),
            c.passed,
            c.runs,
            fmt(c.best_after),
            fmt(c.best_before),
            if c.winner_changed { "; another candidate won" } else { "" }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_carry_their_unit() {
        assert_eq!(format_objective(ObjectiveKind::Time, 2.5e-3), "2.500 ms");
        assert_eq!(format_objective(ObjectiveKind::Cycles, 1.5e6), "1.50 M est. cycles (emulated)");
        assert_eq!(format_objective(ObjectiveKind::Instructions, 999.0), "999 instructions (emulated)");
    }

    #[test]
    fn contended_timings_are_counted_and_told() {
        use scaletune_measure::{Status, Timing, VlMeasurement};
        let run = |discarded: u32, waited: f64| {
            let mut m = VlMeasurement::bare(256, Status::Ok, "native", "");
            m.timing = Some(Timing::from_repeats(vec![1.0, 1.0], 1).with_waits(vec![0.0, waited], discarded));
            m
        };
        let mut c = super::super::task::Contention::default();
        c.count(&[run(0, 0.0)]);
        assert_eq!(c, Default::default(), "a quiet trial");
        c.count(&[run(1, 0.01), run(0, 0.0)]);
        c.count(&[run(2, 0.5)]);
        assert_eq!((c.retimed_trials, c.retimed_repeats, c.disturbed_trials), (2, 3, 1));
        expect_test::expect![[r#"matmul:M=8,N=8,K=8: other tasks held the CPU during 3 repeats of 2 trials, timed again; 1 trial kept disturbed repeats (out of retries: their times may be too slow; is the machine busy?)"#]]
            .assert_eq(&contention_line("matmul:M=8,N=8,K=8", c));
        let once = super::super::task::Contention { retimed_trials: 1, retimed_repeats: 1, disturbed_trials: 0 };
        expect_test::expect![[r#"matmul: other tasks held the CPU during 1 repeat of 1 trial, timed again"#]]
            .assert_eq(&contention_line("matmul", once));
    }

    /// A task reference longer than the task column widens it, and the
    /// rows stay aligned under the header; the tasks' weighted sum follows,
    /// taking the unscheduled nest of a task where it beat every candidate,
    /// which that task's line says; the trace of each best follows.
    #[test]
    fn long_task_references_widen_the_table_and_an_unbeaten_baseline_is_told() {
        use rand::SeedableRng;
        let mut tasks = Vec::new();
        for (i, reference) in
            ["matmul:M=8,N=8,K=8", "depthwise_conv2d_nhwc:N=1,H=20,WI=20,C=32,KH=3,KW=3,S=1"].iter().enumerate()
        {
            let mut t = crate::tune::task::test_task(reference);
            let s = t.space.sample(&mut rand_chacha::ChaCha8Rng::seed_from_u64(1)).expect("a sample");
            t.observe(&s, Some(2.5e-6 * (i + 1) as f64), 7 + i as i64);
            t.trials = 3 + i;
            // The first task's unscheduled nest is faster than its best candidate.
            t.baseline = Some([1e-6, 1e-5][i]);
            // The second counts twice in the weighted sum.
            t.weight = (i + 1) as f64;
            tasks.push(t);
        }
        let text = summary(&tasks, ObjectiveKind::Time, Some(0.5));
        let table: Vec<&str> = text.lines().take(6).collect();
        expect_test::expect![[r#"
            task                                                                            best   GFLOPS  speed-up  trials  failures
            matmul:M=8,N=8,K=8                                                          1.000 us     1.02     1.00x       3  none
            depthwise_conv2d_nhwc:N=1,H=20,WI=20,C=32,KH=3,KW=3,S=1                     5.000 us    37.32     2.00x       4  none
            all 2 tasks, weight x best summed: 11.000 us (1.91x the unscheduled nests' 21.000 us)
            matmul:M=8,N=8,K=8: no candidate beat the unscheduled nest (1.000 us); `db best` and `scaletune build` take the unscheduled nest
            cost model: Kendall tau 0.50 on held-out candidates"#]]
        .assert_eq(&table.join("\n"));
        assert!(text.contains("best schedule of depthwise_conv2d_nhwc:N=1,H=20,WI=20,C=32,KH=3,KW=3,S=1 (record 8):"));
    }
}
