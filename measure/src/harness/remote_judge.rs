//! Judging a run that happened elsewhere (on a remote agent) against this harness's reference.
//!
//! A remote agent runs the driver executable and sends back how the process
//! ended, what it printed and the bytes of its output file; the client holds
//! the reference, so it judges here with exactly the rules of a local run
//! (exit status and signal, the reported vector length on scalable targets,
//! guard-zone and unstable-output exits, every output element within its
//! bound).

use super::{Harness, RunCheck};
use crate::process::{Ending, RawRun};
use crate::result::Status;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How a driver process ended, as reported by whoever ran it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ProcessEnding {
    /// It exited with this status code.
    Exited {
        /// The exit status code.
        code: i32,
    },
    /// It was killed by this signal.
    Signaled {
        /// The signal number.
        signal: i32,
    },
    /// It ran past its timeout and was killed.
    TimedOut,
    /// It could not be started or waited for.
    Failed {
        /// Why.
        message: String,
    },
    /// Its run was cancelled and it was killed (the agent is stopping).
    Cancelled,
}

impl ProcessEnding {
    pub(crate) fn from_ending(e: &Ending) -> ProcessEnding {
        match e {
            Ending::Exited(code) => ProcessEnding::Exited { code: *code },
            Ending::Signaled(signal) => ProcessEnding::Signaled { signal: *signal },
            Ending::TimedOut => ProcessEnding::TimedOut,
            Ending::Failed(message) => ProcessEnding::Failed { message: message.clone() },
            Ending::Cancelled => ProcessEnding::Cancelled,
        }
    }

    fn to_ending(&self) -> Ending {
        match self {
            ProcessEnding::Exited { code } => Ending::Exited(*code),
            ProcessEnding::Signaled { signal } => Ending::Signaled(*signal),
            ProcessEnding::TimedOut => Ending::TimedOut,
            ProcessEnding::Failed { message } => Ending::Failed(message.clone()),
            ProcessEnding::Cancelled => Ending::Cancelled,
        }
    }
}

/// One run of this harness's executable that happened elsewhere.
#[derive(Clone, Debug)]
pub struct ExternalRun<'a> {
    /// The vector length that was requested, in bits.
    pub vl_bits: u32,
    /// How the process ended.
    pub ending: &'a ProcessEnding,
    /// Its standard output (carries the vector-length and timing reports).
    pub stdout: &'a str,
    /// Its standard error.
    pub stderr: &'a str,
    /// The bytes of its output file, if it wrote one.
    pub output: Option<&'a [u8]>,
    /// Wall time of the process.
    pub wall_time: Duration,
    /// The timeout the process ran with (named in a timeout's message).
    pub timeout: Duration,
}

impl Harness {
    /// The input file the executable reads (all argument tensors, little-endian),
    /// for runners that ship the executable elsewhere.
    pub fn input_file(&self) -> &Path {
        &self.input
    }

    /// Judges a run of this harness's executable (on its input file) that
    /// happened elsewhere; `place` says where, for messages (`on agent
    /// graviton3`). Never fails: like a local run, every outcome is a
    /// [`RunCheck`].
    pub fn judge_remote(&self, run: &ExternalRun, place: &str) -> RunCheck {
        let mut result = RunCheck {
            vl_bits: run.vl_bits,
            status: Status::RunError,
            comparisons: Vec::new(),
            max_abs_err: f64::NAN,
            message: String::new(),
            emulated: false,
            wall_time: run.wall_time,
        };
        let how = format!("{place} at VL {}", run.vl_bits);
        if let Err(e) = self.target.vscale_for_vl(run.vl_bits) {
            result.message = format!("{e} ({how})");
            return result;
        }
        let raw = RawRun {
            ending: run.ending.to_ending(),
            stdout: run.stdout.to_string(),
            stderr: run.stderr.to_string(),
            wall_time: run.wall_time,
        };
        // `judge` reads the outputs from a file: put the received bytes where a local run would have.
        let run_idx = self.n_runs.fetch_add(1, Ordering::Relaxed);
        let output = self.dir.path().join(format!("remote-out-{}-{run_idx}.bin", run.vl_bits));
        let _ = std::fs::remove_file(&output);
        if let Some(bytes) = run.output {
            if let Err(e) = std::fs::write(&output, bytes) {
                result.message = format!("cannot store the received outputs in {}: {e} ({how})", output.display());
                return result;
            }
        }
        self.judge(&raw, &output, &how, run.timeout, &mut result);
        let _ = std::fs::remove_file(&output);
        result
    }
}
