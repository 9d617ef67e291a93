//! The command line's inputs: workloads, targets and schedule files, and their errors; compiling goes through [`scaletune_codegen::pipeline`].

use scaletune_codegen::pipeline::{self, CompileError, Compiled, Options};
use scaletune_codegen::target::{Target, TargetError};
use scaletune_space::trace::{parse_trace, Trace, TraceError};
use scaletune_space::workload::{Workload, WorkloadError, WorkloadRef};
use std::path::Path;
use thiserror::Error;

/// A failure anywhere in the pipeline, naming the stage and the input.
#[derive(Debug, Error)]
pub enum PipelineError {
    /// The workload reference or file is bad.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    /// The target is unknown or malformed.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The schedule file cannot be read.
    #[error("cannot read schedule {file}: {error}")]
    ScheduleIo {
        /// File name.
        file: String,
        /// The I/O error (in the message, not a chained source: printed once).
        error: std::io::Error,
    },
    /// The schedule does not parse or does not apply.
    #[error("{file}: {error}")]
    Schedule {
        /// File name.
        file: String,
        /// What went wrong (in the message, not a chained source: printed once).
        error: TraceError,
    },
    /// A JSON schedule is malformed.
    #[error("{file}: bad JSON trace: {message}")]
    ScheduleJson {
        /// File name.
        file: String,
        /// Parser message.
        message: String,
    },
    /// Lowering or LLVM failed.
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// The workload's tensors need more memory than `--max-bytes` allows.
    #[error(
        "{workload}: its tensors need {needed} ({tensors}), more than the limit of {limit} \
         (--max-bytes; default a quarter of physical memory)"
    )]
    TooLarge {
        /// The workload reference.
        workload: String,
        /// Bytes of all tensors.
        needed: crate::limits::ByteSize,
        /// The largest tensors and their sizes.
        tensors: String,
        /// The bound in force.
        limit: crate::limits::ByteSize,
    },
}

/// A schedule and where it came from.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// The trace.
    pub trace: Trace,
    /// File name for messages.
    pub file: String,
}

impl Schedule {
    /// Reads a schedule file: trace text, or the JSON form if it starts with `{`.
    pub fn from_file(path: &Path) -> Result<Schedule, PipelineError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|source| PipelineError::ScheduleIo { file: file.clone(), error: source })?;
        Schedule::from_text(&text, &file)
    }

    /// Parses schedule text (or JSON).
    pub fn from_text(text: &str, file: &str) -> Result<Schedule, PipelineError> {
        let trace = if text.trim_start().starts_with('{') {
            Trace::from_json(text)
                .map_err(|e| PipelineError::ScheduleJson { file: file.to_string(), message: e.to_string() })?
        } else {
            parse_trace(text).map_err(|error| PipelineError::Schedule { file: file.to_string(), error })?
        };
        Ok(Schedule { trace, file: file.to_string() })
    }
}

/// Loads a workload reference (`NAME`, `NAME:P=V,...`, or a file).
pub fn load_workload(reference: &str) -> Result<Workload, PipelineError> {
    Ok(WorkloadRef::parse(reference)?.load()?)
}

/// Loads a workload that a command is about to run: refused before any
/// tensor is allocated when its tensors need more than the `--max-bytes`
/// bound ([`crate::limits::max_bytes`]).
pub fn load_workload_to_run(reference: &str) -> Result<Workload, PipelineError> {
    let w = load_workload(reference)?;
    check_bytes(&w, crate::limits::max_bytes())?;
    Ok(w)
}

/// Fails if the tensors of `w` need more than `limit` bytes.
pub fn check_bytes(w: &Workload, limit: u64) -> Result<(), PipelineError> {
    use crate::limits::ByteSize;
    let needed = w.tensor_bytes();
    if needed <= limit {
        return Ok(());
    }
    let mut by_size: Vec<_> = w.tensors.iter().collect();
    by_size.sort_by_key(|t| std::cmp::Reverse(t.bytes()));
    let tensors: Vec<String> = by_size.iter().take(3).map(|t| format!("{} {}", t.name, ByteSize(t.bytes()))).collect();
    Err(PipelineError::TooLarge {
        workload: w.reference(),
        needed: ByteSize(needed),
        tensors: tensors.join(", "),
        limit: ByteSize(limit),
    })
}

/// Applies the schedule to the workload's nest: a schedule that does not
/// apply (or goes beyond the limits) is bad input, reported before anything
/// is built or run.
pub fn check_schedule(w: &Workload, sched: Option<&Schedule>, target: &Target) -> Result<(), PipelineError> {
    let Some(s) = sched else { return Ok(()) };
    pipeline::schedule(w, Some(&s.trace), target, None).map_err(|e| match e {
        CompileError::Schedule(error) => PipelineError::Schedule { file: s.file.clone(), error },
        e => PipelineError::Compile(e),
    })?;
    Ok(())
}

/// Compiles through the one pipeline ([`scaletune_codegen::pipeline::compile`]),
/// naming the schedule file in errors.
pub fn compile(
    w: &Workload,
    target: &Target,
    sched: Option<&Schedule>,
    opts: &Options,
) -> Result<Compiled, PipelineError> {
    pipeline::compile(w, sched.map(|s| &s.trace), target, opts).map_err(|e| match (e, sched) {
        (CompileError::Schedule(error), Some(s)) => PipelineError::Schedule { file: s.file.clone(), error },
        (e, _) => PipelineError::Compile(e),
    })
}
