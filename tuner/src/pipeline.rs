//! The compile pipeline: workload, target and schedule to a linked artifact.

use scaletune_codegen::llvm::{self, Artifacts, CompileOptions, LlvmError};
use scaletune_codegen::lower::{lower, LowerError};
use scaletune_codegen::target::{Target, TargetError};
use scaletune_codegen::vprog::Program;
use scaletune_space::ir::Nest;
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
    #[error("cannot read schedule {file}: {source}")]
    ScheduleIo {
        /// File name.
        file: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The schedule does not parse or does not apply.
    #[error("{file}: {source}")]
    Schedule {
        /// File name.
        file: String,
        /// What went wrong.
        source: TraceError,
    },
    /// A JSON schedule is malformed.
    #[error("{file}: bad JSON trace: {message}")]
    ScheduleJson {
        /// File name.
        file: String,
        /// Parser message.
        message: String,
    },
    /// Lowering failed.
    #[error(transparent)]
    Lower(#[from] LowerError),
    /// LLVM failed.
    #[error(transparent)]
    Llvm(#[from] LlvmError),
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
        let text =
            std::fs::read_to_string(path).map_err(|source| PipelineError::ScheduleIo { file: file.clone(), source })?;
        Schedule::from_text(&text, &file)
    }

    /// Parses schedule text (or JSON).
    pub fn from_text(text: &str, file: &str) -> Result<Schedule, PipelineError> {
        let trace = if text.trim_start().starts_with('{') {
            Trace::from_json(text)
                .map_err(|e| PipelineError::ScheduleJson { file: file.to_string(), message: e.to_string() })?
        } else {
            parse_trace(text).map_err(|source| PipelineError::Schedule { file: file.to_string(), source })?
        };
        Ok(Schedule { trace, file: file.to_string() })
    }
}

/// Everything produced for one (workload, target, schedule).
#[derive(Debug)]
pub struct Compiled {
    /// The workload.
    pub workload: Workload,
    /// The scheduled loop nest.
    pub nest: Nest,
    /// The lowered vector program.
    pub program: Program,
    /// LLVM outputs.
    pub artifacts: Artifacts,
    /// The kernel's symbol name.
    pub symbol: String,
}

/// Loads a workload reference (`NAME`, `NAME:P=V,...`, or a file).
pub fn load_workload(reference: &str) -> Result<Workload, PipelineError> {
    Ok(WorkloadRef::parse(reference)?.load()?)
}

/// The kernel symbol for a workload: `scaletune_<name>` with non-identifier characters replaced.
pub fn symbol_for(w: &Workload) -> String {
    let clean: String = w.name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    format!("scaletune_{clean}")
}

/// Builds the loop nest of `w` for `target` and applies the schedule, if any.
pub fn schedule(w: &Workload, target: &Target, sched: Option<&Schedule>) -> Result<Nest, PipelineError> {
    let mut nest = Nest::from_workload(w, target.caps.clone()).with_kinds(target.vector_kinds());
    if let Some(s) = sched {
        s.trace.apply(&mut nest).map_err(|source| PipelineError::Schedule { file: s.file.clone(), source })?;
    }
    Ok(nest)
}

/// Schedules, lowers and compiles.
pub fn compile(w: &Workload, target: &Target, sched: Option<&Schedule>) -> Result<Compiled, PipelineError> {
    let nest = schedule(w, target, sched)?;
    let symbol = symbol_for(w);
    let program = lower(&nest, &symbol)?;
    // The schedule may have chosen another vector kind (e.g. NEON on an SVE target).
    let artifacts = llvm::compile(&program, &target.with_caps(&nest.caps), &CompileOptions::default())?;
    Ok(Compiled { workload: w.clone(), nest, program, artifacts, symbol })
}
