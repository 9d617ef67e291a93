//! The workload language: tensors, parameters and compute statements.
//!
//! A workload file (TOML) declares integer parameters with defaults, scalar
//! arguments, tensors and one or more compute statements such as
//! `C[i, j] += A[i, k] * B[k, j]`. [`WorkloadSpec`] is the parsed file;
//! [`WorkloadSpec::instantiate`] binds parameter values and produces a
//! [`Workload`] with concrete shapes and typed statements.

mod catalog;
mod coverage;
mod error;
mod flops;
mod print;
pub(crate) mod resolve;
mod spec;
pub(crate) mod stmt;

#[cfg(test)]
mod tests;

pub use catalog::{load, shipped_names, WorkloadRef};
pub use error::WorkloadError;
pub use print::{access_text, value_text, Names};
pub use spec::WorkloadSpec;

use crate::expr::Expr;
use crate::ids::TensorId;
use crate::DType;
use serde::{Deserialize, Serialize};

/// Whether the kernel reads, writes or owns a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Read by the kernel, passed by the caller.
    Input,
    /// Written by the kernel, passed by the caller.
    Output,
    /// Intermediate storage owned by the kernel.
    Temp,
}

/// A tensor with a concrete shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tensor {
    /// Name in the workload.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Row-major shape.
    pub shape: Vec<i64>,
    /// Input, output or temporary.
    pub role: Role,
    /// For index tensors: the half-open range every element lies in.
    pub range: Option<(i64, i64)>,
}

impl Tensor {
    /// Number of elements.
    pub fn len(&self) -> usize {
        // Instantiated workloads keep this below `limits::MAX_EXTENT`; a
        // hand-built or deserialized tensor saturates instead of wrapping.
        let n = self.shape.iter().fold(1i64, |acc, d| acc.saturating_mul((*d).max(0)));
        usize::try_from(n).unwrap_or(usize::MAX)
    }

    /// Size of the elements in bytes (saturating).
    pub fn bytes(&self) -> u64 {
        (self.len() as u64).saturating_mul(self.dtype.bytes() as u64)
    }

    /// True if the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A scalar argument of the kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScalarParam {
    /// Name in the workload.
    pub name: String,
    /// Element type (a float type).
    pub dtype: DType,
    /// The value the harness passes.
    pub value: f64,
}

/// Whether an axis indexes the result or is summed over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AxisKind {
    /// Appears on the left-hand side.
    Spatial,
    /// Appears only on the right-hand side.
    Reduce,
}

/// An iteration axis of a statement. Inside the statement, axis `n` is `VarId(n)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    /// Name as written in the statement.
    pub name: String,
    /// The axis ranges over `0..extent`.
    pub extent: i64,
    /// Spatial or reduction.
    pub kind: AxisKind,
}

/// A tensor element access `T[e0, e1, ...]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Access {
    /// The tensor.
    pub tensor: TensorId,
    /// One index expression per dimension.
    pub indices: Vec<Expr>,
}

/// How a statement combines its value with the left-hand side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UpdateOp {
    /// `=`.
    Assign,
    /// `+=`, starting from zero.
    Add,
    /// `max=`, starting from the lowest value.
    Max,
    /// `min=`, starting from the highest value.
    Min,
}

impl UpdateOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            UpdateOp::Assign => "=",
            UpdateOp::Add => "+=",
            UpdateOp::Max => "max=",
            UpdateOp::Min => "min=",
        }
    }

    /// The neutral element of a reduction in `dtype` (`None` for `=`).
    pub fn neutral(self, dtype: DType) -> Option<f64> {
        match self {
            UpdateOp::Assign => None,
            UpdateOp::Add => Some(0.0),
            UpdateOp::Max => Some(match dtype {
                DType::I8 => f64::from(i8::MIN),
                DType::I32 => f64::from(i32::MIN),
                _ => f64::NEG_INFINITY,
            }),
            UpdateOp::Min => Some(match dtype {
                DType::I8 => f64::from(i8::MAX),
                DType::I32 => f64::from(i32::MAX),
                _ => f64::INFINITY,
            }),
        }
    }
}

/// Binary arithmetic in compute statements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BinOp {
    /// `+`.
    Add,
    /// `-`.
    Sub,
    /// `*`.
    Mul,
    /// `/` (floats only).
    Div,
    /// `max(a, b)`.
    Max,
    /// `min(a, b)`.
    Min,
}

/// Unary functions in compute statements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnFn {
    /// `neg(x)` or `-x`.
    Neg,
    /// `abs(x)`.
    Abs,
    /// `sqrt(x)` (floats).
    Sqrt,
    /// `exp(x)` (floats).
    Exp,
    /// `cos(x)` (floats).
    Cos,
}

impl UnFn {
    /// The function name.
    pub fn name(self) -> &'static str {
        match self {
            UnFn::Neg => "neg",
            UnFn::Abs => "abs",
            UnFn::Sqrt => "sqrt",
            UnFn::Exp => "exp",
            UnFn::Cos => "cos",
        }
    }
}

/// A typed value expression (the right-hand side of a statement).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Value {
    /// A constant of the given type.
    Const(f64, DType),
    /// A scalar argument (index into [`Workload::scalars`]).
    Scalar(usize, DType),
    /// A tensor element.
    Read(Access, DType),
    /// Binary arithmetic on two values of the same type.
    Bin(BinOp, Box<Value>, Box<Value>),
    /// A unary function.
    Un(UnFn, Box<Value>),
    /// A conversion.
    Cast(DType, Box<Value>),
}

impl Value {
    /// The result type.
    pub fn dtype(&self) -> DType {
        match self {
            Value::Const(_, d) | Value::Scalar(_, d) | Value::Read(_, d) | Value::Cast(d, _) => *d,
            Value::Bin(_, a, _) | Value::Un(_, a) => a.dtype(),
        }
    }

    /// Every tensor access, in evaluation order.
    pub fn reads(&self) -> Vec<&Access> {
        let mut out = Vec::new();
        self.collect_reads(&mut out);
        out
    }

    fn collect_reads<'a>(&'a self, out: &mut Vec<&'a Access>) {
        match self {
            Value::Read(a, _) => out.push(a),
            Value::Bin(_, a, b) => {
                a.collect_reads(out);
                b.collect_reads(out);
            }
            Value::Un(_, a) | Value::Cast(_, a) => a.collect_reads(out),
            Value::Const(..) | Value::Scalar(..) => {}
        }
    }

    /// True if `pred` holds for an index expression of a read (the
    /// expressions [`Value::map_indices`] visits).
    pub fn any_index(&self, pred: &dyn Fn(&Expr) -> bool) -> bool {
        match self {
            Value::Read(a, _) => a.indices.iter().any(pred),
            Value::Bin(_, a, b) => a.any_index(pred) || b.any_index(pred),
            Value::Un(_, a) | Value::Cast(_, a) => a.any_index(pred),
            Value::Const(..) | Value::Scalar(..) => false,
        }
    }

    /// Applies `f` to every index expression (of reads, including indirect ones).
    pub fn map_indices(&self, f: &dyn Fn(&Expr) -> Expr) -> Value {
        match self {
            Value::Read(a, d) => {
                Value::Read(Access { tensor: a.tensor, indices: a.indices.iter().map(f).collect() }, *d)
            }
            Value::Bin(op, a, b) => Value::Bin(*op, Box::new(a.map_indices(f)), Box::new(b.map_indices(f))),
            Value::Un(u, a) => Value::Un(*u, Box::new(a.map_indices(f))),
            Value::Cast(d, a) => Value::Cast(*d, Box::new(a.map_indices(f))),
            Value::Const(..) | Value::Scalar(..) => self.clone(),
        }
    }

    /// Replaces reads of one tensor by another with transformed indices.
    pub fn map_reads(&self, f: &dyn Fn(&Access) -> Option<Access>) -> Value {
        match self {
            Value::Read(a, d) => Value::Read(f(a).unwrap_or_else(|| a.clone()), *d),
            Value::Bin(op, a, b) => Value::Bin(*op, Box::new(a.map_reads(f)), Box::new(b.map_reads(f))),
            Value::Un(u, a) => Value::Un(*u, Box::new(a.map_reads(f))),
            Value::Cast(d, a) => Value::Cast(*d, Box::new(a.map_reads(f))),
            Value::Const(..) | Value::Scalar(..) => self.clone(),
        }
    }
}

/// One compute statement with its axes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Statement {
    /// Block name: the left-hand tensor's name (suffixed `_1`, `_2` if written twice).
    pub name: String,
    /// Axes; `VarId(n)` in the expressions is `axes[n]`. Spatial axes first, in
    /// left-hand-side order.
    pub axes: Vec<Axis>,
    /// The element written.
    pub lhs: Access,
    /// How the value is combined.
    pub op: UpdateOp,
    /// The value.
    pub rhs: Value,
    /// The statement as written.
    pub text: String,
}

/// A workload with concrete parameter values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// Name (file stem).
    pub name: String,
    /// One-line description.
    pub description: String,
    /// Parameter values, in declaration order.
    pub params: Vec<(String, i64)>,
    /// Tensors, indexed by `TensorId`.
    pub tensors: Vec<Tensor>,
    /// Scalar arguments.
    pub scalars: Vec<ScalarParam>,
    /// Statements in execution order.
    pub stmts: Vec<Statement>,
}

impl Workload {
    /// The tensor with the given id.
    pub fn tensor(&self, t: TensorId) -> &Tensor {
        &self.tensors[t.index()]
    }

    /// Bytes of all tensors (inputs, outputs and temporaries) in their
    /// element types: what running the kernel once allocates at the least.
    pub fn tensor_bytes(&self) -> u64 {
        self.tensors.iter().fold(0u64, |acc, t| acc.saturating_add(t.bytes()))
    }

    /// Looks a tensor up by name.
    pub fn tensor_id(&self, name: &str) -> Option<TensorId> {
        self.tensors.iter().position(|t| t.name == name).map(|i| TensorId(i as u32))
    }

    /// The canonical reference string, e.g. `matmul:M=67,N=131,K=29`.
    pub fn reference(&self) -> String {
        let ps: Vec<String> = self.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if ps.is_empty() {
            self.name.clone()
        } else {
            format!("{}:{}", self.name, ps.join(","))
        }
    }

    /// The tensors passed as kernel arguments (inputs and outputs), in declaration order.
    pub fn arg_tensors(&self) -> Vec<TensorId> {
        (0..self.tensors.len() as u32).map(TensorId).filter(|t| self.tensor(*t).role != Role::Temp).collect()
    }
}
