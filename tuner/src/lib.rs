//! scaletune: autotuner and schedule-space explorer for tensor kernels on
//! vector-length-agnostic hardware.
//!
//! The library half of the `scaletune` binary: the compile pipeline shared by
//! the commands (workload + target + schedule -> loop nest -> vector program
//! -> LLVM artifacts), tuning jobs (`tune`: tasks, the search loop, the
//! scheduler), search strategies (`search`), the learned cost model
//! (`cost_model`), build-time replay of the best records into libraries
//! (`build`), and the commands themselves.

pub mod alloc;
pub mod bench;
pub mod build;
pub mod commands;
pub mod cost_model;
pub mod explore;
pub mod limits;
pub mod pipeline;
pub mod search;
pub mod tune;
