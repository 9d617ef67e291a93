//! Runners: where built candidates execute. One trait, one file per runner.

use crate::harness::Harness;
use crate::result::VlMeasurement;
use async_trait::async_trait;
use scaletune_codegen::target::Target;
use std::sync::Arc;

pub mod native;
pub mod qemu;
pub mod remote;

/// A candidate ready to run: its linked harness (driver + kernel + inputs +
/// reference) and the content hash of its artifact.
#[derive(Debug)]
pub struct Built {
    /// Candidate id within its batch.
    pub candidate: u64,
    /// Content hash of the artifact.
    pub artifact: String,
    /// The linked executable with its inputs and reference.
    pub harness: Harness,
    /// Seconds the build took.
    pub build_s: f64,
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

    /// Runs a built candidate at each vector length. Failures are results.
    async fn run(&self, built: Arc<Built>, vl_bits: &[u32]) -> Vec<VlMeasurement>;

    /// Like [`Runner::run`], but tells a fault of the runner itself (an agent
    /// that disappeared mid-run) from the candidate's own results: on
    /// `Err`, the farm marks this runner down and gives the work to another
    /// runner that accepts it. Runners that cannot fail that way keep the default.
    async fn try_run(&self, built: Arc<Built>, vl_bits: &[u32]) -> Result<Vec<VlMeasurement>, RunnerFault> {
        Ok(self.run(built, vl_bits).await)
    }
}

/// A failure of a runner (not of the candidate it was running).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("runner {runner} failed: {message}")]
pub struct RunnerFault {
    /// The runner's name.
    pub runner: String,
    /// What happened.
    pub message: String,
}
