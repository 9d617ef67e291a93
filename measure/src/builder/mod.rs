//! Builders: turn candidates (workload + target + trace) into linked harnesses ready to run.
//!
//! A [`Builder`] does the blocking work for one candidate; [`LlvmBuilder`] is
//! the real one (schedule replay, lowering, LLVM with its own context per
//! call, linking with the generated driver), with an on-disk, content-addressed
//! [`ArtifactCache`] of kernel objects and linked executables. [`BuilderPool`] runs a builder for many
//! candidates on tokio's blocking pool with a fixed number of workers. Every
//! failure, including a panic, is a [`BuildError`] — which a farm turns into
//! `Measurement::build_error` — never an aborted batch.

mod cache;
mod code;
mod llvm;
mod pool;
mod prebuilt;

pub use cache::{artifact_key, artifact_key_at_vl, executable_key, ArtifactCache, BUILD_ID};
pub use code::{code_identity, object_code};
pub use llvm::{BuildStats, LlvmBuilder};
pub(crate) use pool::{BuildHook, BuildPhase};
pub use pool::{BuildOutcome, BuilderPool};
pub use prebuilt::Prebuilt;

use crate::candidate::Candidate;
use crate::harness::HarnessError;
use crate::runner::Built;
use scaletune_codegen::llvm::LlvmError;
use scaletune_codegen::lower::LowerError;
use scaletune_codegen::pipeline::CompileError;
use scaletune_space::trace::TraceError;
use thiserror::Error;

/// Turns one candidate into a [`Built`] harness. Called on a blocking thread;
/// may take seconds. Besides [`LlvmBuilder`], [`Prebuilt`] hands out
/// harnesses built beforehand; others exist in tests (hand-written kernels)
/// and could compile elsewhere.
pub trait Builder: Send + Sync {
    /// Builds the candidate. A failure is an `Err`, never a panic (a panic is
    /// caught by the pool and reported as [`BuildError::Panic`] anyway).
    fn build(&self, candidate: &Candidate) -> Result<Built, BuildError>;

    /// Everything the candidate needs to run at all its vector lengths: one
    /// [`VlBuild`] per object, each with the vector lengths it runs at. The
    /// default is one [`Builder::build`] for all of them; [`LlvmBuilder`]
    /// compiles a fixed-length scalable kind once per vector length.
    fn build_all(&self, candidate: &Candidate) -> Vec<VlBuild> {
        vec![VlBuild { vl_bits: candidate.vls(), result: self.build(candidate) }]
    }
}

/// One object of a candidate and the vector lengths it runs at.
#[derive(Debug)]
pub struct VlBuild {
    /// The vector lengths this build runs at.
    pub vl_bits: Vec<u32>,
    /// The built harness, or why there is none.
    pub result: Result<Built, BuildError>,
}

/// Why a candidate could not be built.
#[derive(Debug, Error)]
pub enum BuildError {
    /// The trace does not apply to the workload's loop nest.
    #[error("schedule: {0}")]
    Schedule(TraceError),
    /// Lowering the scheduled nest to the vector program failed.
    #[error("lowering: {0}")]
    Lower(LowerError),
    /// LLVM failed.
    #[error("LLVM: {0}")]
    Llvm(LlvmError),
    /// Building the driver or linking it with the kernel failed.
    #[error("link: {0}")]
    Link(HarnessError),
    /// Some stage panicked (caught with `catch_unwind`).
    #[error("{stage} panicked: {message}")]
    Panic {
        /// What was running.
        stage: String,
        /// The panic message.
        message: String,
    },
    /// Any other failure (custom builders).
    #[error("{0}")]
    Other(String),
}

// The stage errors are part of the message, not chained sources, so a
// printer that walks the chain shows each once.
macro_rules! from_stage {
    ($($variant:ident($ty:ty)),*) => {$(
        impl From<$ty> for BuildError {
            fn from(e: $ty) -> BuildError {
                BuildError::$variant(e)
            }
        }
    )*};
}
from_stage!(Schedule(TraceError), Lower(LowerError), Llvm(LlvmError), Link(HarnessError));

impl From<CompileError> for BuildError {
    fn from(e: CompileError) -> BuildError {
        match e {
            CompileError::Schedule(e) => BuildError::Schedule(e),
            CompileError::Lower(e) => BuildError::Lower(e),
            CompileError::Llvm(e) => BuildError::Llvm(e),
            e @ CompileError::BadVectorLength { .. } => BuildError::Other(e.to_string()),
        }
    }
}

/// The message of a caught panic payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}
