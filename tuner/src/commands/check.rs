//! `scaletune check`: build the kernel, run it once at each vector length through the farm (check runner), and compare with the reference.

use crate::pipeline::{load_workload_to_run as load_workload, PipelineError, Schedule};
use anyhow::bail;
use scaletune_codegen::target::Target;
use scaletune_measure::harness::JUDGED_BY_INTERPRETER;
use scaletune_measure::{Candidate, CheckRunner, Farm, LlvmBuilder, Runner, Status, VlMeasurement};
use scaletune_space::trace::Trace;
use std::fmt::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::runtime::Handle;

/// The outcome of `check`: the report lines and whether every run matched.
pub struct CheckOutcome {
    /// Human-readable report.
    pub report: String,
    /// True if every run matched the reference.
    pub passed: bool,
}

/// Options of `check`.
pub struct CheckArgs<'a> {
    /// Workload reference.
    pub workload: &'a str,
    /// Target name or file.
    pub target: &'a str,
    /// Schedule file, if any.
    pub schedule: Option<&'a Path>,
    /// Vector lengths in bits (empty: the target's defaults).
    pub vl_bits: Vec<u32>,
    /// Input seed.
    pub seed: u64,
    /// Per-run timeout.
    pub timeout: Duration,
}

/// The word `check` prints for a run's status.
pub fn status_word(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::WrongResult => "WRONG",
        Status::RunError => "CRASH",
        Status::Timeout => "TIMEOUT",
        Status::BuildError => "BUILD",
        Status::Unmeasured => "NOT RUN",
    }
}

/// The last line of `check`: every run matched; some did not; or none
/// that ran is wrong, but some could not be made (`unmeasured`: no runner,
/// an emulator defect), which says nothing about the kernel.
fn verdict_line(runs: &[VlMeasurement]) -> &'static str {
    if runs.iter().all(|r| r.status == Status::Ok) && !runs.is_empty() {
        "all runs match the reference"
    } else if runs.iter().all(|r| matches!(r.status, Status::Ok | Status::Unmeasured)) && !runs.is_empty() {
        "no run that was made is wrong, but some could not be made (NOT RUN above)"
    } else {
        "some runs do NOT match the reference"
    }
}

/// Builds the kernel and runs it at every requested vector length: builder,
/// farm, check runner, verdict, like every other command.
pub fn run(a: &CheckArgs, rt: &Handle) -> anyhow::Result<CheckOutcome> {
    let w = load_workload(a.workload)?;
    let t = Target::load(a.target).map_err(PipelineError::from)?;
    for (i, vl) in a.vl_bits.iter().enumerate() {
        if a.vl_bits[..i].contains(vl) {
            bail!("--vl lists {vl} twice");
        }
        t.vscale_for_vl(*vl).map_err(PipelineError::from)?;
    }
    let sched = a.schedule.map(Schedule::from_file).transpose()?;
    crate::pipeline::check_schedule(&w, sched.as_ref(), &t)?;
    let vls = if a.vl_bits.is_empty() { t.default_vl_bits.clone() } else { a.vl_bits.clone() };
    let trace = sched.map(|s| s.trace).unwrap_or_else(Trace::default);
    let candidate =
        Candidate::new(0, Arc::new(w.clone()), Arc::new(t.clone()), trace).with_vl_bits(vls).with_timeout(a.timeout);
    let runner: Arc<dyn Runner> = Arc::new(CheckRunner::new());
    let farm = super::lock_machine(Farm::new(Arc::new(LlvmBuilder::new().with_seed(a.seed)), 1, vec![runner]));
    let report = rt.block_on(farm.measure(vec![candidate]));
    let Some(m) = report.measurements.into_iter().next() else { bail!("the farm returned no measurement") };
    if m.status == Status::BuildError && m.runs.is_empty() {
        bail!("compile {} for {}: {}", w.reference(), t.name, m.message);
    }

    let mut out = String::new();
    let sched_name = a.schedule.map(|p| p.display().to_string()).unwrap_or_else(|| "unscheduled".into());
    let _ = writeln!(out, "{} on {} ({}), schedule {}", w.reference(), t.name, t.vector_summary(), sched_name);
    for r in &m.runs {
        out.push_str(&describe_run(r, t.is_native()));
    }
    let passed = m.status == Status::Ok;
    let _ = writeln!(out, "{}", verdict_line(&m.runs));
    Ok(CheckOutcome { report: out, passed })
}

/// One run's line (and its message when it failed).
fn describe_run(r: &VlMeasurement, native: bool) -> String {
    let how =
        if native { format!("native, {:.3} s", r.wall_s) } else { format!("emulated, {:.2} s under QEMU", r.wall_s) };
    let mut line =
        format!("  VL {:>4}: {:<7} max |error| {:<9.2e} ({how})", r.vl_bits, status_word(r.status), r.max_abs_err);
    if let Some(vl) = r.built_for_vl {
        let _ = write!(line, " (object built for VL {vl})");
    }
    // A run judged by the interpreter says so, and why, whatever its verdict.
    if r.status != Status::Ok || r.message.starts_with(JUDGED_BY_INTERPRETER) {
        let _ = write!(line, "\n            {}", r.message);
    }
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The verdict tells runs that could not be made from wrong ones.
    #[test]
    fn the_verdict_tells_unmade_runs_from_wrong_ones() {
        let run = |s| VlMeasurement::bare(128, s, "qemu", "");
        let lines: Vec<&str> = [
            vec![run(Status::Ok), run(Status::Ok)],
            vec![run(Status::Ok), run(Status::Unmeasured)],
            vec![run(Status::Unmeasured), run(Status::WrongResult)],
            vec![run(Status::RunError)],
            vec![],
        ]
        .iter()
        .map(|runs| verdict_line(runs))
        .collect();
        expect_test::expect![[r#"
            all runs match the reference
            no run that was made is wrong, but some could not be made (NOT RUN above)
            some runs do NOT match the reference
            some runs do NOT match the reference
            some runs do NOT match the reference"#]]
        .assert_eq(&lines.join("\n"));
    }

    /// A run's message shows when it failed, or when the interpreter gave
    /// its verdict; an ok run's other message does not.
    #[test]
    fn a_run_judged_by_the_interpreter_says_so() {
        let run = |s, message: &str| {
            let mut m = VlMeasurement::bare(256, s, "qemu", message);
            (m.max_abs_err, m.wall_s) = (0.0, 0.02);
            m
        };
        let judged = format!("{JUDGED_BY_INTERPRETER} this QEMU computes the 32-bit `smopa` wrong");
        let text: String = [
            run(Status::Ok, &judged),
            run(Status::Ok, "all 10 output elements within bounds"),
            run(Status::WrongResult, "tensor `C`: 1 of 10 elements wrong"),
        ]
        .iter()
        .map(|r| describe_run(r, false))
        .collect();
        // Each line between bars, so that its leading spaces are pinned too.
        let barred: Vec<String> = text.lines().map(|l| format!("|{l}|")).collect();
        expect_test::expect![[r#"
            |  VL  256: ok      max |error| 0.00e0    (emulated, 0.02 s under QEMU)|
            |            judged by the interpreter: this QEMU computes the 32-bit `smopa` wrong|
            |  VL  256: ok      max |error| 0.00e0    (emulated, 0.02 s under QEMU)|
            |  VL  256: WRONG   max |error| 0.00e0    (emulated, 0.02 s under QEMU)|
            |            tensor `C`: 1 of 10 elements wrong|"#]]
        .assert_eq(&barred.join("\n"));
    }
}
