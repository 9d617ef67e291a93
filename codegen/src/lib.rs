//! scaletune-codegen: lowering of scheduled loop nests to the vector program,
//! the vector-program interpreter, targets and LLVM emission.

pub mod interp;
pub mod llvm;
pub mod lower;
pub mod target;
pub mod vprog;
