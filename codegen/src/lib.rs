//! scaletune-codegen: lowering of scheduled loop nests to the vector program,
//! the vector-program interpreter, targets and LLVM emission, and the one
//! compile pipeline that chains them ([`pipeline::compile`]).

pub mod interp;
pub mod llvm;
pub mod lower;
pub mod pipeline;
pub mod target;
pub mod tools;
pub mod vprog;
