//! The vector program: the target-independent output of lowering.
//!
//! A [`Program`] is one kernel function. Its body is a tree of structured
//! statements ([`Stmt`]) over typed virtual registers ([`Reg`]). Registers are
//! mutable (a register may be assigned more than once, e.g. an accumulator
//! updated in a loop); every register has one fixed [`Ty`].
//!
//! Vectors are either fixed (`<4 x f32>`) or scalable (`<vscale x 4 x f32>`);
//! the same program runs in the interpreter at any vscale and is emitted to
//! LLVM IR unchanged. Memory is a set of [`Buffer`]s addressed by element
//! index (never by byte); masked-off lanes never touch memory.

mod builder;
mod operands;
mod optimize;
mod print;
mod types;
mod verify;

pub use builder::Builder;
pub use operands::{walk, Operands};
pub use optimize::optimize;
pub use types::*;
pub use verify::{mopa_group, verify, VerifyError};
