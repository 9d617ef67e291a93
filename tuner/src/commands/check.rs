//! `scaletune check`: build the kernel, run it once at each vector length through the farm (check runner), and compare with the reference.

use crate::pipeline::{load_workload_to_run as load_workload, PipelineError, Schedule};
use anyhow::bail;
use scaletune_codegen::target::Target;
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

/// Builds the kernel and runs it at every requested vector length: builder,
/// farm, check runner, verdict, like every other command.
pub fn run(a: &CheckArgs, rt: &Handle) -> anyhow::Result<CheckOutcome> {
    let w = load_workload(a.workload)?;
    let t = Target::load(a.target).map_err(PipelineError::from)?;
    for vl in &a.vl_bits {
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
    let _ = writeln!(
        out,
        "{}",
        if passed { "all runs match the reference" } else { "some runs do NOT match the reference" }
    );
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
    if r.status != Status::Ok {
        let _ = write!(line, "\n            {}", r.message);
    }
    line.push('\n');
    line
}
