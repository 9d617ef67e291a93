//! scaletune: autotuner and schedule-space explorer for tensor kernels on
//! vector-length-agnostic hardware.
//!
//! The library half of the `scaletune` binary: the compile pipeline shared by
//! the commands (workload + target + schedule -> loop nest -> vector program
//! -> LLVM artifacts), and the commands themselves.

pub mod commands;
pub mod explore;
pub mod pipeline;
