//! scaletune-codegen: lowering of scheduled loop nests to the vector program,
//! the vector-program interpreter, targets and LLVM emission.

pub mod llvm;
pub mod target;
pub mod vprog;
