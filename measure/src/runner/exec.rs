//! Executing a harness's driver: what runners do. The harness prepares the run and judges it; this runs the process (with its timeout) in between.

use crate::harness::{CheckRequest, Harness, HarnessError, RunCheck, RunOptions, RunOutput};
use crate::process::run_with_timeout;

/// Runs `harness`'s driver once at `vl_bits` with `opts` (extra QEMU and
/// driver arguments, a timeout, environment) and returns the harness's
/// verdict and what the run printed. Never fails: a vector length the
/// target cannot run at, a process that cannot start, a crash, a timeout or
/// wrong outputs are all in the [`RunCheck`].
pub fn run_with(harness: &Harness, vl_bits: u32, opts: &RunOptions) -> (RunCheck, RunOutput) {
    match harness.prepare(vl_bits, opts) {
        Err(refused) => (refused, RunOutput::default()),
        Ok(prepared) => {
            let (command, timeout, pending) = prepared.split();
            let raw = run_with_timeout(command, timeout);
            harness.judge_run(&pending, &raw)
        }
    }
}

/// [`run_with`] with no extra arguments: one checked run.
pub fn run_once(harness: &Harness, vl_bits: u32) -> RunCheck {
    run_with(harness, vl_bits, &RunOptions::default()).0
}

/// Builds the harness of `req` once and runs it at every requested vector
/// length (the target's defaults if none are given), in order.
pub fn check(req: &CheckRequest) -> Result<Vec<RunCheck>, HarnessError> {
    let harness = Harness::build(req)?;
    Ok(harness.vl_bits().iter().map(|&vl| run_once(&harness, vl)).collect())
}
