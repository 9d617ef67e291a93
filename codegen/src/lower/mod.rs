//! Lowering of scheduled loop nests to the vector program.

pub mod math;
