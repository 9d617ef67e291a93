//! The reference semantics of a workload, with first-order error bounds.
//!
//! [`evaluate`] runs every statement with plain loops in f64 (integers
//! exactly) and carries, beside each value, a bound on how far a correct
//! kernel computing in the tensor's own precision may be from it: rounding of
//! every operation, propagation through functions, and any association order
//! of a reduction (`(n-1) * eps * sum|terms|`). [`compare`] checks a kernel's
//! output against it element by element.
//!
//! The evaluation is what a reader of the statement expects (every point of
//! every statement in order, the reductions sequential), made fast enough
//! for the shapes users tune (a 1024^3 matmul is a billion terms): each
//! access is compiled once per statement ([`plan`]), and the points of a
//! statement, which only read what earlier statements wrote, are shared out
//! among threads in contiguous runs, each point still reduced in order, so
//! the values, bounds and errors are those of the one-thread walk.

mod eval;
mod plan;
mod walk;

use crate::workload::{Role, Workload};
use crate::TensorData;
pub(crate) use eval::saturate;
use thiserror::Error;
use walk::run_statement;

/// Reference values and error bounds of one tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct RefTensor {
    /// Ideal values.
    pub values: Vec<f64>,
    /// Per-element bound on a correct kernel's deviation.
    pub errors: Vec<f64>,
}

/// Failure of the reference evaluation itself.
#[derive(Clone, Debug, Error, PartialEq)]
pub enum ReferenceError {
    /// Wrong number or shape of arguments.
    #[error("reference: {0}")]
    Args(String),
    /// An index could not be evaluated or was out of bounds.
    #[error("reference: statement `{stmt}`: {message}")]
    Index {
        /// Statement text.
        stmt: String,
        /// What happened.
        message: String,
    },
}

/// Evaluates the workload on `args` (in `arg_tensors` order) and returns the
/// reference contents of every tensor, indexed by `TensorId`.
pub fn evaluate(w: &Workload, args: &[TensorData]) -> Result<Vec<RefTensor>, ReferenceError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_THREADS);
    evaluate_in(w, args, Mode::Fast { threads, parallel_from: PARALLEL_TERMS })
}

/// [`evaluate`] in `mode`.
fn evaluate_in(w: &Workload, args: &[TensorData], mode: Mode) -> Result<Vec<RefTensor>, ReferenceError> {
    let arg_ids = w.arg_tensors();
    if args.len() != arg_ids.len() {
        return Err(ReferenceError::Args(format!("expected {} tensors, got {}", arg_ids.len(), args.len())));
    }
    let mut mem: Vec<RefTensor> =
        w.tensors.iter().map(|t| RefTensor { values: vec![f64::NAN; t.len()], errors: vec![0.0; t.len()] }).collect();
    for (id, data) in arg_ids.iter().zip(args) {
        let t = w.tensor(*id);
        if data.len() != t.len() || data.dtype() != t.dtype {
            return Err(ReferenceError::Args(format!(
                "tensor `{}` must be {} x {}, got {} x {}",
                t.name,
                t.len(),
                t.dtype,
                data.len(),
                data.dtype()
            )));
        }
        if t.role == Role::Input {
            let slot = &mut mem[id.index()];
            slot.values = (0..data.len()).map(|i| data.get(i)).collect();
        }
    }
    for s in &w.stmts {
        run_statement(w, s, &mut mem, mode)?;
    }
    Ok(mem)
}

/// Fewest terms (points times reduction length) worth sharing among threads.
const PARALLEL_TERMS: i64 = 1 << 18;

/// Most threads a statement is shared among.
const MAX_THREADS: usize = 16;

/// How [`run_statement`] evaluates.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// Compiled affine indices; a statement of at least `parallel_from`
    /// terms has its points shared among `threads` threads.
    Fast {
        /// Threads to share among.
        threads: usize,
        /// Fewest terms to share.
        parallel_from: i64,
    },
    /// Every index by the plain evaluator, on one thread (the tests' baseline).
    #[cfg(test)]
    Plain,
}

fn strides(shape: &[i64]) -> Vec<i64> {
    let mut st = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        st[d] = st[d + 1] * shape[d + 1];
    }
    st
}

/// The outcome of comparing one output tensor with the reference.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Tensor name.
    pub tensor: String,
    /// Largest absolute difference.
    pub max_abs_err: f64,
    /// Largest difference divided by its allowed bound (<= 1 passes).
    pub max_ratio: f64,
    /// The first element outside its bound: (flat index, got, expected, bound).
    pub first_mismatch: Option<(usize, f64, f64, f64)>,
    /// Number of elements outside their bound.
    pub mismatches: usize,
}

impl Comparison {
    /// True if every element is within its bound.
    pub fn passed(&self) -> bool {
        self.mismatches == 0
    }
}

/// Compares a kernel's output tensor with the reference.
pub fn compare(name: &str, got: &TensorData, reference: &RefTensor) -> Comparison {
    let mut c =
        Comparison { tensor: name.to_string(), max_abs_err: 0.0, max_ratio: 0.0, first_mismatch: None, mismatches: 0 };
    for i in 0..got.len().min(reference.values.len()) {
        let (g, r) = (got.get(i), reference.values[i]);
        let bound = 2.0 * reference.errors[i] + 1e-300;
        let ok = if r.is_nan() {
            g.is_nan()
        } else if r.is_infinite() {
            g == r
        } else {
            (g - r).abs() <= bound
        };
        let diff = if g.is_nan() || r.is_nan() {
            if ok {
                0.0
            } else {
                f64::INFINITY
            }
        } else {
            (g - r).abs()
        };
        if diff.is_finite() {
            c.max_abs_err = c.max_abs_err.max(diff);
        } else if !ok {
            c.max_abs_err = f64::INFINITY;
        }
        c.max_ratio = c.max_ratio.max(if ok && diff == 0.0 { 0.0 } else { diff / bound });
        if !ok {
            c.mismatches += 1;
            if c.first_mismatch.is_none() {
                c.first_mismatch = Some((i, g, r, bound));
            }
        }
    }
    if got.len() != reference.values.len() {
        c.mismatches += 1;
    }
    c
}

#[cfg(test)]
mod tests;
