//! Measurement results: a failed build or run is data, never an error.

use serde::{Deserialize, Serialize};

/// How a candidate (or one run of it) ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Built, ran, and every output matched the reference.
    Ok,
    /// Scheduling, lowering, LLVM or linking failed.
    BuildError,
    /// The run crashed (signal), exited non-zero, wrote outside its outputs,
    /// or ran at the wrong vector length.
    RunError,
    /// The candidate's own run exceeded its timeout (queueing time excluded).
    Timeout,
    /// The run completed but an output is outside its error bound.
    WrongResult,
    /// Built, but not measured, for no fault of its own: no runner that
    /// accepts it was left (every agent gone), none accepted it at all, its
    /// runs kept meeting runner faults, or a runner misbehaved. The message
    /// says why; measuring it again later may succeed.
    Unmeasured,
}

impl Status {
    /// The status keyword stored in the database and printed by the CLI.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::BuildError => "build_error",
            Status::RunError => "run_error",
            Status::Timeout => "timeout",
            Status::WrongResult => "wrong_result",
            Status::Unmeasured => "unmeasured",
        }
    }

    /// True for the candidate's own failures (build error, crash, timeout,
    /// wrong result); false for `ok` and `unmeasured`.
    pub fn is_candidate_failure(self) -> bool {
        !matches!(self, Status::Ok | Status::Unmeasured)
    }
}

/// Real time of the kernel, from the timing protocol.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// Seconds per kernel call, one entry per repeat (each repeat averages `number` calls).
    pub repeats_s: Vec<f64>,
    /// Median of `repeats_s`.
    pub median_s: f64,
    /// Spread: (max - min) / median over the repeats.
    pub spread: f64,
    /// Kernel calls per repeat actually used (after `min_repeat_ms` scaling).
    pub number: u32,
    /// Seconds per call that each repeat's threads spent runnable but
    /// waiting for a CPU another task held (their run-queue delay), one
    /// entry per entry of `repeats_s`; empty where the system does not
    /// report it (not Linux) or the driver predates it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waited_s: Vec<f64>,
    /// Repeats the driver timed again because their threads waited for a
    /// CPU longer than [`MAX_WAIT_SHARE`] of them (at most as many as
    /// `repeats_s` holds; after that, disturbed repeats are kept).
    #[serde(default)]
    pub discarded: u32,
}

/// The share of a repeat its threads may spend waiting for a CPU before the
/// driver counts it as disturbed by other tasks and times it again (the
/// driver's `SCALETUNE_DRV_MAX_WAIT_PERMILLE`). An idle machine's own
/// housekeeping stays far below it (a few hundredths of a per cent);
/// a build sharing the core takes a third to a half of it.
pub const MAX_WAIT_SHARE: f64 = 0.02;

impl Timing {
    /// Summarizes repeats (seconds per call).
    pub fn from_repeats(repeats_s: Vec<f64>, number: u32) -> Timing {
        let median_s = crate::stats::median(repeats_s.clone()).unwrap_or(f64::NAN);
        let (lo, hi) = repeats_s.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        let spread = if repeats_s.is_empty() || median_s <= 0.0 { f64::NAN } else { (hi - lo) / median_s };
        Timing { repeats_s, median_s, spread, number, waited_s: Vec::new(), discarded: 0 }
    }

    /// The same timing with each repeat's wait for a CPU (`waited_s`, as
    /// many as the repeats) and the number of repeats timed again.
    pub fn with_waits(self, waited_s: Vec<f64>, discarded: u32) -> Timing {
        Timing { waited_s, discarded, ..self }
    }

    /// The largest share of a kept repeat its threads spent waiting for a
    /// CPU; `None` where waits are not reported.
    pub fn worst_wait_share(&self) -> Option<f64> {
        if self.waited_s.is_empty() {
            return None;
        }
        let shares = self.waited_s.iter().zip(&self.repeats_s).map(|(&w, &r)| if r > 0.0 { w / r } else { 0.0 });
        Some(shares.fold(0.0, f64::max))
    }

    /// True if a kept repeat was disturbed: other tasks held its CPU for
    /// more than [`MAX_WAIT_SHARE`] of it (the driver ran out of retries).
    pub fn disturbed(&self) -> bool {
        self.worst_wait_share().is_some_and(|s| s > MAX_WAIT_SHARE)
    }
}

/// Metrics of a run under QEMU user mode. Wall time under emulation says
/// nothing about real performance and is kept only as `emulation_wall_s`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Emulated {
    /// Dynamic instructions executed in the kernel's code (one call, on one
    /// thread): its function and the outlined bodies of its parallel loops;
    /// the thread pool and functions the kernel calls are not counted.
    pub instructions: u64,
    /// Sum over the kernel's executed blocks of executions x llvm-mca cycles
    /// per execution for the target's CPU model (see
    /// [`crate::emulation::estimate`]), if a model exists and accepts every
    /// executed block.
    pub est_cycles: Option<f64>,
    /// Why `est_cycles` is `None` (no model, an instruction llvm-mca cannot
    /// model, ...), or, when SME instructions were priced from the target's
    /// throughput table instead of llvm-mca, how many cycles that gave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub est_cycles_note: Option<String>,
    /// Instructions executed by the whole emulated process (driver, libc,
    /// loader and kernel), for scale.
    #[serde(default)]
    pub process_instructions: u64,
    /// Wall time of the emulated process (emulation time, not kernel time).
    pub emulation_wall_s: f64,
}

/// The outcome of one candidate at one vector length.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VlMeasurement {
    /// Vector length in bits.
    pub vl_bits: u32,
    /// How it ended.
    pub status: Status,
    /// The first mismatching element, the signal, stderr, ... (empty when ok).
    pub message: String,
    /// Largest absolute output error (NaN if nothing was compared; JSON
    /// has no NaN, so it is written as `null` and read back as NaN).
    #[serde(deserialize_with = "nan_if_null")]
    pub max_abs_err: f64,
    /// Real timing (native and remote runners).
    pub timing: Option<Timing>,
    /// Emulated metrics (QEMU runner).
    pub emulated: Option<Emulated>,
    /// The runner (or agent) that measured it.
    pub runner: String,
    /// The vector length the object that ran was built for (fixed-length
    /// scalable code, compiled once per vector length); `None` for code
    /// valid at every vector length, or when nothing ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built_for_vl: Option<u32>,
    /// Wall time of the run's process in seconds (under QEMU: emulation
    /// time, not kernel time); 0 when nothing ran or the runner does not say.
    #[serde(default)]
    pub wall_s: f64,
}

/// A number, or NaN for `null` (how serde_json writes NaN).
fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

impl VlMeasurement {
    /// A run that ended with `status` and `message`, without figures.
    pub fn bare(vl_bits: u32, status: Status, runner: &str, message: impl Into<String>) -> VlMeasurement {
        VlMeasurement {
            vl_bits,
            status,
            message: message.into(),
            max_abs_err: f64::NAN,
            timing: None,
            emulated: None,
            runner: runner.to_string(),
            built_for_vl: None,
            wall_s: 0.0,
        }
    }

    /// A `run_error` of this vector length.
    pub fn run_error(vl_bits: u32, runner: &str, message: impl Into<String>) -> VlMeasurement {
        VlMeasurement::bare(vl_bits, Status::RunError, runner, message)
    }

    /// A vector length that was not measured, and why.
    pub fn unmeasured(vl_bits: u32, runner: &str, reason: impl Into<String>) -> VlMeasurement {
        VlMeasurement::bare(vl_bits, Status::Unmeasured, runner, reason)
    }
}

/// The outcome of one candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Candidate id within its batch.
    pub candidate: u64,
    /// Overall status: the first non-ok status of the runs, or the build's.
    pub status: Status,
    /// Why the build failed (empty otherwise).
    pub message: String,
    /// Content hash of the artifact (empty if the build failed).
    pub artifact: String,
    /// The identity of the code measured ([`crate::builder::code_identity`]
    /// of the candidate's objects); empty if unknown (the build failed, or
    /// the harness was built from a hand-written kernel).
    #[serde(default)]
    pub code: String,
    /// Seconds spent building (scheduling, lowering, LLVM, linking).
    pub build_s: f64,
    /// One entry per requested vector length.
    pub runs: Vec<VlMeasurement>,
}

impl Measurement {
    /// A build failure.
    pub fn build_error(candidate: u64, message: impl Into<String>, build_s: f64) -> Measurement {
        Measurement {
            candidate,
            status: Status::BuildError,
            message: message.into(),
            artifact: String::new(),
            code: String::new(),
            build_s,
            runs: Vec::new(),
        }
    }

    /// Derives the overall status from the runs: the first of the
    /// candidate's own failures, else `unmeasured` if some run was not
    /// measured, else `ok`.
    pub fn from_runs(candidate: u64, artifact: String, build_s: f64, runs: Vec<VlMeasurement>) -> Measurement {
        let first = runs
            .iter()
            .find(|r| r.status.is_candidate_failure())
            .or_else(|| runs.iter().find(|r| r.status != Status::Ok));
        let status = first.map_or(Status::Ok, |r| r.status);
        let message = first.map(|r| r.message.clone()).unwrap_or_default();
        Measurement { candidate, status, message, artifact, code: String::new(), build_s, runs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_compared_nothing_reads_back_from_json() {
        let mut m = VlMeasurement::bare(256, Status::Ok, "r", "");
        m.timing = Some(Timing::from_repeats(vec![1e-3, 2e-3], 1));
        let json = serde_json::to_string(&m).expect("writes");
        assert!(json.contains(r#""max_abs_err":null"#), "{json}");
        let back: VlMeasurement = serde_json::from_str(&json).expect("reads");
        assert!(back.max_abs_err.is_nan());
        assert_eq!((&back.timing, back.status), (&m.timing, m.status));
        let m = VlMeasurement { max_abs_err: 0.25, ..m };
        assert_eq!(
            serde_json::from_str::<VlMeasurement>(&serde_json::to_string(&m).expect("writes")).expect("reads"),
            m
        );
    }

    #[test]
    fn a_candidates_own_failure_outranks_an_unmeasured_run() {
        let ok = VlMeasurement::bare(128, Status::Ok, "r", "");
        let gone = VlMeasurement::unmeasured(256, "farm", "no runner left");
        let crash = VlMeasurement::run_error(512, "r", "SIGSEGV");
        let m = Measurement::from_runs(0, String::new(), 0.0, vec![ok.clone(), gone.clone(), crash]);
        assert_eq!((m.status, m.message.as_str()), (Status::RunError, "SIGSEGV"));
        let m = Measurement::from_runs(0, String::new(), 0.0, vec![ok.clone(), gone]);
        assert_eq!((m.status, m.message.as_str()), (Status::Unmeasured, "no runner left"));
        assert_eq!(Measurement::from_runs(0, String::new(), 0.0, vec![ok]).status, Status::Ok);
        assert_eq!(Status::Unmeasured.name(), "unmeasured");
        assert!(!Status::Unmeasured.is_candidate_failure() && Status::Timeout.is_candidate_failure());
        let json = serde_json::to_string(&Status::Unmeasured).expect("json");
        assert_eq!(json, "\"unmeasured\"");
    }
}
