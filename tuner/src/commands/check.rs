//! `scaletune check`: run a kernel at each vector length and compare with the reference.

use crate::pipeline::{compile, load_workload, PipelineError, Schedule};
use scaletune_codegen::pipeline::Options;
use scaletune_codegen::target::Target;
use scaletune_measure::{CheckRequest, Harness, RunStatus};
use std::fmt::Write;
use std::path::Path;
use std::time::Duration;

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

/// Compiles, links and runs the kernel at every requested vector length.
pub fn run(a: &CheckArgs) -> anyhow::Result<CheckOutcome> {
    let w = load_workload(a.workload)?;
    let t = Target::load(a.target).map_err(PipelineError::from)?;
    for vl in &a.vl_bits {
        t.vscale_for_vl(*vl).map_err(PipelineError::from)?;
    }
    let sched = a.schedule.map(Schedule::from_file).transpose()?;
    let c = compile(&w, &t, sched.as_ref(), &Options::default())?;
    let vls = if a.vl_bits.is_empty() { t.default_vl_bits.clone() } else { a.vl_bits.clone() };
    let req = CheckRequest {
        workload: &w,
        target: &t,
        object: &c.object,
        symbol: &c.symbol,
        vl_bits: vls.clone(),
        seed: a.seed,
        timeout: a.timeout,
        work_dir: None,
    };
    let harness = Harness::build(&req)?;
    let mut report = String::new();
    let sched_name = a.schedule.map(|p| p.display().to_string()).unwrap_or_else(|| "unscheduled".into());
    let _ = writeln!(report, "{} on {} ({}), schedule {}", w.reference(), t.name, t.vector_summary(), sched_name);
    let mut passed = true;
    for vl in vls {
        let r = harness.run(vl);
        let ok = r.status == RunStatus::Ok;
        passed &= ok;
        let how = if r.emulated {
            format!("emulated, {:.2} s under QEMU", r.wall_time.as_secs_f64())
        } else {
            format!("native, {:.3} s", r.wall_time.as_secs_f64())
        };
        let status = match r.status {
            RunStatus::Ok => "ok",
            RunStatus::WrongResult => "WRONG",
            RunStatus::RunError => "CRASH",
            RunStatus::Timeout => "TIMEOUT",
        };
        let mut line = format!("  VL {vl:>4}: {status:<7} max |error| {:<9.2e} ({how})", r.max_abs_err);
        if !ok {
            let _ = write!(line, "\n            {}", r.message);
        }
        let _ = writeln!(report, "{line}");
    }
    let _ = writeln!(
        report,
        "{}",
        if passed { "all runs match the reference" } else { "some runs do NOT match the reference" }
    );
    Ok(CheckOutcome { report, passed })
}
