//! The vector-program interpreter: runs a [`Program`] at any vscale; the test
//! oracle of scaletune.
//!
//! Semantics follow `vprog::types` exactly and the interpreter is strict: it
//! reports what compiled code would silently get wrong or leave undefined.
//!
//! - Floats are rounded to their dtype after every operation (correctly, to
//!   nearest even, also for f16 and bf16); `Fma` rounds once. Integers wrap to their width (i8, i32,
//!   and 64 bits for the index type).
//! - `FloorDiv`/`FloorMod` round toward negative infinity; a zero divisor is
//!   [`InterpError::DivisionByZero`], `MIN / -1` is
//!   [`InterpError::DivisionOverflow`]. Shifts by a negative amount or by the
//!   width or more are [`InterpError::ShiftOutOfRange`].
//! - Float `Min`/`Max` (and their reductions) ignore a NaN operand like
//!   `llvm.minnum`/`maxnum`. Comparisons `Lt`, `Le`, `Eq` are ordered (false
//!   on NaN); `Ne` is true on NaN.
//! - `Cast` float to int truncates toward zero and saturates (NaN gives 0).
//! - Every memory access of an active lane is bounds-checked; masked-off lanes
//!   of loads and gathers read nothing and yield 0, masked-off lanes of stores
//!   and scatters write nothing; scatter lanes write in lane order.
//! - Local buffers start uninitialized: reading an element before it is
//!   written is [`InterpError::UninitRead`]. Parameter tensors are assumed
//!   initialized. Writing a `read_only` buffer is [`InterpError::ReadOnlyWrite`].
//! - Reading a register before any assignment is [`InterpError::Unassigned`].
//!   A loop evaluates `start` and `end` once on entry, assigns its variable
//!   before each iteration and leaves it unassigned after the loop.
//! - `ActiveLaneMask` compares `base + i < bound` as signed integers without
//!   overflow. `Reduce(Add)` sums in lane order. `Extract` of a lane outside
//!   the vector is [`InterpError::LaneOutOfRange`].
//!
//! The program is type-checked with [`vprog::verify`]
//! first. On an error, parameter tensors keep whatever was written before it.

mod exec;
mod memory;
mod ops;
mod regs;
mod value;
mod za;

use crate::vprog::{self, Program, Reg, VerifyError};
use scaletune_space::TensorData;
use thiserror::Error;

/// Why a run failed.
#[derive(Debug, Error, PartialEq)]
pub enum InterpError {
    /// The program is ill-typed.
    #[error(transparent)]
    Verify(#[from] VerifyError),
    /// The program is malformed in a way the type checker does not cover
    /// (parameter list, constants, vectors of zero or more than 2^20 lanes,
    /// negative or huge local buffer lengths).
    #[error("invalid program: {0}")]
    InvalidProgram(String),
    /// Wrong number, kind, dtype or length of arguments.
    #[error("argument mismatch: {0}")]
    ArgMismatch(String),
    /// vscale must be at least 1.
    #[error("vscale must be at least 1, got {0}")]
    InvalidVscale(u32),
    /// An active lane or scalar access outside a buffer.
    #[error("out-of-bounds access to `{buffer}` at element {index} (length {len})")]
    OutOfBounds {
        /// Buffer name.
        buffer: String,
        /// Element index accessed.
        index: i64,
        /// Buffer length in elements.
        len: usize,
    },
    /// A read of a local-buffer element that was never written.
    #[error("read of uninitialized element {index} of local buffer `{buffer}`")]
    UninitRead {
        /// Buffer name.
        buffer: String,
        /// Element index read.
        index: usize,
    },
    /// A write to a buffer marked read-only.
    #[error("write to read-only buffer `{buffer}` at element {index}")]
    ReadOnlyWrite {
        /// Buffer name.
        buffer: String,
        /// Element index written.
        index: usize,
    },
    /// Integer `FloorDiv`/`FloorMod` by zero.
    #[error("integer division by zero")]
    DivisionByZero,
    /// Integer `FloorDiv`/`FloorMod` of the smallest value by -1.
    #[error("integer division overflow: {dividend} by -1")]
    DivisionOverflow {
        /// The dividend (the smallest value of its type).
        dividend: i64,
    },
    /// `Shl`/`Shr` by a negative amount or by at least the width.
    #[error("shift by {amount} out of range for {bits}-bit integers")]
    ShiftOutOfRange {
        /// Shift amount.
        amount: i64,
        /// Integer width.
        bits: u32,
    },
    /// `Extract` of a lane outside the vector.
    #[error("lane {lane} out of range for a vector of {lanes} lanes")]
    LaneOutOfRange {
        /// Lane asked for.
        lane: i64,
        /// Lanes of the vector.
        lanes: usize,
    },
    /// A register read before any assignment.
    #[error("register {0} read before any assignment")]
    Unassigned(Reg),
    /// The run executed more than `InterpOptions::max_steps` steps.
    #[error("step limit of {limit} exceeded")]
    StepLimit {
        /// The limit.
        limit: u64,
    },
    /// An inconsistency inside the interpreter (a bug here, not in the program).
    #[error("internal interpreter error: {0}")]
    Internal(String),
}

/// One kernel argument.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    /// The elements of a tensor parameter; read and written in place.
    Tensor(TensorData),
    /// A scalar parameter (rounded to a float dtype; must be an exact
    /// in-range integer for an integer dtype).
    Scalar(f64),
}

impl ArgValue {
    /// The tensor, if this is a tensor argument.
    pub fn as_tensor(&self) -> Option<&TensorData> {
        match self {
            ArgValue::Tensor(t) => Some(t),
            ArgValue::Scalar(_) => None,
        }
    }
}

/// How to run a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InterpOptions {
    /// The runtime value of vscale (at least 1).
    pub vscale: u32,
    /// Stop with [`InterpError::StepLimit`] after this many steps (statements
    /// executed plus loop iterations); `None` for no limit.
    pub max_steps: Option<u64>,
}

impl InterpOptions {
    /// Options for a run at `vscale` without a step limit.
    pub fn new(vscale: u32) -> InterpOptions {
        InterpOptions { vscale, max_steps: None }
    }

    /// The same options with a step limit.
    pub fn with_max_steps(self, max_steps: u64) -> InterpOptions {
        InterpOptions { max_steps: Some(max_steps), ..self }
    }
}

impl Default for InterpOptions {
    fn default() -> Self {
        InterpOptions::new(1)
    }
}

/// Counters of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InterpStats {
    /// Operations executed (assignments and stores).
    pub ops: u64,
    /// Of those, operations on vectors (vector results, stores, reductions, extracts).
    pub vector_ops: u64,
    /// Load operations (scalar loads, vector loads, gathers).
    pub loads: u64,
    /// Store operations (scalar stores, vector stores, scatters).
    pub stores: u64,
    /// Elements read from memory (active lanes only).
    pub elements_loaded: u64,
    /// Elements written to memory (active lanes only).
    pub elements_stored: u64,
    /// Loop iterations executed.
    pub loop_iterations: u64,
    /// Steps: statements executed plus loop iterations.
    pub steps: u64,
}

/// Runs `prog` on `args` (in `prog.params` order) at `opts.vscale`.
///
/// Tensor arguments are read and written in place; each must have the dtype
/// and length of its buffer.
pub fn run(prog: &Program, args: &mut [ArgValue], opts: &InterpOptions) -> Result<InterpStats, InterpError> {
    if opts.vscale == 0 {
        return Err(InterpError::InvalidVscale(opts.vscale));
    }
    vprog::verify(prog)?;
    let mut machine = exec::Machine::new(prog, args, opts)?;
    machine.body(&prog.body)?;
    Ok(machine.into_stats())
}
