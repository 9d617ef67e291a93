//! scaletune-space: the workload language, the vscale loop-nest IR, schedule
//! primitives and traces.

pub mod dtype;

pub use dtype::DType;
pub mod caps;
pub use caps::VectorCaps;
pub mod data;
pub use data::TensorData;
