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

/// The summary table and each task's best trace.
pub fn summary(tasks: &[Task], kind: ObjectiveKind, tau: Option<f64>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{:<40} {:>28} {:>8} {:>9} {:>7}  failures", "task", "best", "GFLOPS", "speed-up", "trials");
    for t in tasks {
        let best = t.best();
        let best_s = best.map_or_else(|| "-".to_string(), |b| format_objective(kind, b));
        let gf = best.and_then(|b| gflops(t, kind, b)).map_or_else(|| "-".into(), |g| format!("{g:.2}"));
        let speedup = match (best, t.baseline) {
            (Some(b), Some(base)) => format!("{:.2}x", base / b),
            _ => "-".into(),
        };
        let failures: Vec<String> =
            t.statuses.iter().filter(|(s, _)| s.as_str() != "ok").map(|(s, n)| format!("{s} {n}")).collect();
        let _ = writeln!(
            out,
            "{:<40} {:>28} {:>8} {:>9} {:>7}  {}",
            t.workload.reference(),
            best_s,
            gf,
            speedup,
            t.trials,
            if failures.is_empty() { "none".to_string() } else { failures.join(", ") }
        );
    }
    let _ = match tau {
        Some(tau) => writeln!(out, "cost model: Kendall tau {tau:.2} on held-out candidates"),
        None => writeln!(out, "cost model: too few measured candidates to hold some out"),
    };
    for t in tasks {
        if let Some(s) = t.best_scored() {
            let _ = writeln!(
                out,
                "\nbest schedule of {} (record {}):\n{}",
                t.workload.reference(),
                s.record,
                s.sample.trace
            );
        }
    }
    out
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
}
