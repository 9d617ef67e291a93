//! scaletune-space: the workload language, the vscale loop-nest IR, schedule
//! primitives and traces.

pub mod caps;
pub mod data;
pub mod design;
pub mod dtype;
pub mod expr;
pub mod filetest;
#[cfg(feature = "fuzzing")]
pub mod fuzz;
pub mod ids;
pub mod ir;
pub mod kind;
pub mod limits;
pub mod mutators;
pub mod reference;
pub mod rules;
pub mod sample;
pub mod schedule;
pub mod text;
pub mod trace;
pub mod workload;

pub use caps::VectorCaps;
pub use data::TensorData;
pub use dtype::DType;
pub use expr::Expr;
pub use ids::{BlockId, LoopId, TensorId, VarId};
pub use kind::VectorKind;
