//! Runners: where built candidates execute. One trait, one file per runner.

use crate::harness::Harness;
use crate::result::VlMeasurement;
use async_trait::async_trait;
use scaletune_codegen::target::Target;
use std::sync::Arc;

pub mod check;
pub mod exec;
pub mod health;
pub mod native;
pub mod qemu;
pub mod remote;

/// A candidate ready to run: its linked harness (driver + kernel + inputs +
/// reference) and the content hash of its artifact. A candidate with a
/// fixed-length scalable kind measured at several vector lengths has one
/// `Built` per vector length (see [`crate::builder::Builder::build_all`]).
#[derive(Debug)]
pub struct Built {
    /// Candidate id within its batch.
    pub candidate: u64,
    /// Content hash of the artifact.
    pub artifact: String,
    /// The identity of the kernel object's code
    /// ([`crate::builder::object_code`]); empty where the builder does not
    /// know it (harnesses built from hand-written kernels).
    pub code: String,
    /// The linked executable with its inputs and reference.
    pub harness: Harness,
    /// Seconds the build took.
    pub build_s: f64,
    /// The vector length the kernel object is only valid at (fixed-length
    /// scalable code); `None` for code valid at every vector length.
    pub built_for_vl: Option<u32>,
}

impl Built {
    /// A harness valid at every vector length of its target.
    pub fn new(candidate: u64, artifact: String, harness: Harness, build_s: f64) -> Built {
        Built { candidate, artifact, code: String::new(), harness, build_s, built_for_vl: None }
    }
}

/// Something that can execute built candidates.
#[async_trait]
pub trait Runner: Send + Sync {
    /// A name for results and logs (`native`, `qemu`, `agent@host:port`).
    fn name(&self) -> String;

    /// True if this runner can execute code for `target` at `vl_bits`.
    fn accepts(&self, target: &Target, vl_bits: u32) -> bool;

    /// How many candidates this runner may execute at once.
    fn slots(&self) -> usize {
        1
    }

    /// True if this runner's figures are wall-clock times taken on this
    /// machine, which builds running at the same time would slow down: a
    /// [`Farm`](crate::farm::Farm) builds nothing while such a run executes.
    fn times_this_machine(&self) -> bool {
        false
    }

    /// True if this runner's runs execute on this machine (natively, under
    /// QEMU, or as checks), not on a remote one: with a machine lock
    /// ([`Farm::with_machine_lock`](crate::farm::Farm::with_machine_lock)),
    /// untimed runs here keep out of other processes' timed runs like builds.
    fn runs_on_this_machine(&self) -> bool {
        true
    }

    /// Runs a built candidate at each vector length. Failures are results.
    async fn run(&self, built: Arc<Built>, vl_bits: &[u32]) -> Vec<VlMeasurement>;

    /// Like [`Runner::run`], but tells a fault of the runner itself (an agent
    /// that disappeared mid-run, or had no free slot) from the candidate's
    /// own results: on `Err`, the farm gives the work to another
    /// runner that accepts it and deals with this one by the fault's
    /// [`FaultKind`] (see [`health`]). Runners that cannot fail that way keep
    /// the default.
    async fn try_run(&self, built: Arc<Built>, vl_bits: &[u32]) -> Result<Vec<VlMeasurement>, RunnerFault> {
        Ok(self.run(built, vl_bits).await)
    }

    /// Asks a runner that reported an [`FaultKind::Unreachable`] fault
    /// whether it is back (a remote agent answers `GET /info` with what it
    /// said at connect time). Runners that cannot fault keep the default (`Ok`).
    async fn probe(&self) -> Result<(), RunnerFault> {
        Ok(())
    }
}

/// What kind of failure of a runner a [`RunnerFault`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// The runner could not be reached or misbehaved (connection refused or
    /// reset, a deadline passed, a truncated answer, a 5xx answer): it is
    /// re-probed, with backoff, before it is taken out for good.
    Unreachable,
    /// The runner is alive but had no free slot in time (503, 429): it gets
    /// no new work for a while, then more.
    Busy,
    /// The runner refuses this client for good (its token, API version or
    /// target changed): it is taken out at once.
    Refused,
}

impl FaultKind {
    /// A lower-case word for messages.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Unreachable => "unreachable",
            FaultKind::Busy => "busy",
            FaultKind::Refused => "refused",
        }
    }
}

/// A failure of a runner (not of the candidate it was running).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("runner {runner} failed: {message}")]
pub struct RunnerFault {
    /// The runner's name.
    pub runner: String,
    /// How the farm should treat the runner.
    pub kind: FaultKind,
    /// What happened.
    pub message: String,
}

impl RunnerFault {
    /// A fault of `kind`.
    pub fn new(runner: impl Into<String>, kind: FaultKind, message: impl Into<String>) -> RunnerFault {
        RunnerFault { runner: runner.into(), kind, message: message.into() }
    }

    /// A runner that could not be reached or misbehaved.
    pub fn unreachable(runner: impl Into<String>, message: impl Into<String>) -> RunnerFault {
        RunnerFault::new(runner, FaultKind::Unreachable, message)
    }

    /// A live runner without a free slot.
    pub fn busy(runner: impl Into<String>, message: impl Into<String>) -> RunnerFault {
        RunnerFault::new(runner, FaultKind::Busy, message)
    }

    /// A runner that refuses this client for good.
    pub fn refused(runner: impl Into<String>, message: impl Into<String>) -> RunnerFault {
        RunnerFault::new(runner, FaultKind::Refused, message)
    }
}
